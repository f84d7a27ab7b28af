"""Planning targets, known-bad engines and equivalent descriptions, on CPU with real cuDNN.

With the H100 properties captured on 2026-11-24 (``tests/data/deviceprops``), cuDNN builds real
execution plans for sm_90 without a GPU. These tests check what the first H100 run found wrong or
missing, wherever a CPU can see it: plans that are really for the target's SM version, engine 70
(wrong NCHW 16-bit weight gradients on cuDNN 9.19) never returned, elementwise graphs on NCHW
tensors and rank-4 matmuls planned through equivalent descriptions, and errors that say what works.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn import known_bad
from pycudnn.graph import Graph
from pycudnn.opgraph import rewrites
from pycudnn.plan import GraphNotSupportedError, Plan, PlanCache

# Whether deviceless planning for the H100 builds engine 70 for fp16 weight gradients with an fp32
# output. Measured: 9.28 does (NCHW and NHWC); 9.10.2 and 9.12.0 only for NHWC (their engine 70
# refuses an NCHW dy: "dy_layout == TensorNHWC ..."); 9.19.0 for neither ("No GPC available at:
# cga_count == 0" in setup_grid_sm90), though on the H100 itself 9.19 found engine 70 alone.
DEVICELESS_ENGINE_70 = pycudnn.version_tuple() >= (9, 28)


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def conv_graph(fmt: str = "NHWC") -> Graph:
    g = Graph("conv")
    x = g.tensor([1, 32, 16, 16], fmt=fmt, dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt=fmt, dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1)
    return g


def wgrad_graph(fmt: str, dtype: str, out: str) -> Graph:
    g = Graph("wgrad")
    x = g.tensor([2, 8, 9, 9], fmt=fmt, dtype=dtype, name="x")
    dy = g.tensor([2, 16, 5, 5], fmt=fmt, dtype=dtype, name="dy")
    g.conv_wgrad(x, dy, padding=1, stride=2, dw_dims=[16, 8, 3, 3], out_dtype=out)
    return g


def add_graph(fmt: str, b_dims: list[int], a_dims: tuple[int, ...] = (2, 8, 5, 6)) -> Graph:
    g = Graph("add")
    a = g.tensor(list(a_dims), fmt=fmt, dtype="float32", name="a")
    b = g.tensor(b_dims, fmt=fmt, dtype="float32", name="b")
    g.add(a, b)
    return g


def sm_of(plan: Plan) -> int:
    return int(json.loads(plan.to_json())["engine"]["smVersion"])


# -- targets -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make", [conv_graph, lambda: add_graph("NHWC", [1, 8, 1, 1])], ids=["conv", "add"]
)
def test_plans_for_device_properties_are_for_that_sm_version(make: Any, props: Any) -> None:
    """The first H100 run's plans were for smVersion 0 (no handle, no DEVICEPROP): never again."""
    plan = make().build(device_properties=props, cache=False)
    assert sm_of(plan) == props["deviceVer"] == 900
    for p in make().build_all(device_properties=props, limit=3):
        assert sm_of(p) == 900


def test_without_gpu_or_properties_nothing_is_planned_for_an_unknown_device(libcuda: None) -> None:
    from _nvbind.cuda import driver_status

    if driver_status().usable:
        pytest.skip("a GPU is usable here: the default target is that GPU")
    with pytest.raises(GraphNotSupportedError, match="no GPU is usable"):
        conv_graph().build(cache=False)


def test_each_target_has_its_own_descriptor_set(props: Any) -> None:
    g = conv_graph()
    unbound = g.finalize(None)
    assert g.finalize(None) is unbound  # built once per target
    plan = g.build(device_properties=props, cache=False)
    assert plan.config is not None
    # a rewrite variant is another description, so another set
    other = g._descriptors_for(None, "test", {})["graph"]
    assert other is not unbound
    assert len(g._descriptor_sets) == 2
    g.close()
    assert not g.is_finalized
    assert plan.workspace_size >= 0  # the plan keeps what it needs alive


@pytest.mark.parametrize("bad", [object(), 0, "device 0"])
def test_finalize_takes_a_handle_none_or_the_current_gpu(bad: Any, libcuda: None) -> None:
    with pytest.raises(TypeError, match=r"handle must be a pycudnn\.Handle"):
        conv_graph().finalize(bad)


# -- known-bad engines ---------------------------------------------------------------------------


def test_engine_70_is_never_returned_for_nchw_16bit_wgrad(props: Any) -> None:
    """Deviceless planning reproduces the H100's situation: with an fp32 output engine 70 is the
    only engine, and it is excluded with the reason and what works instead."""
    with pytest.raises(GraphNotSupportedError) as info:
        wgrad_graph("NCHW", "float16", "float32").build(device_properties=props, cache=False)
    text = str(info.value)
    assert "engine 70" in text and "known to give wrong results" in text
    assert "what would work" in text and "NHWC" in text
    if DEVICELESS_ENGINE_70:
        assert info.value.report.known_bad[0].engine_id == 70
    else:
        # measured on 9.10.2, 9.12.0 and 9.19.0: deviceless planning offers no engine at all, so
        # nothing was excluded; the error still says what would work and why engine 70 would not
        assert not info.value.report.known_bad
    # with a 16-bit output other engines exist, and none of the plans is engine 70
    plans = wgrad_graph("NCHW", "bfloat16", "bfloat16").build_all(device_properties=props)
    assert plans and all(p.engine_id != 70 for p in plans)
    removed = [e.engine_id for e in plans[0].report.known_bad]  # type: ignore[union-attr]
    assert (70 in removed) == DEVICELESS_ENGINE_70


def test_the_exclusion_is_scoped_and_can_be_lifted(props: Any) -> None:
    fp32 = wgrad_graph("NCHW", "float32", "float32").build(device_properties=props, cache=False)
    assert fp32.report is not None and not fp32.report.known_bad
    nhwc = wgrad_graph("NHWC", "float16", "float32")
    lifted = wgrad_graph("NCHW", "float16", "float32")
    if pycudnn.version_tuple()[:2] == (9, 19):
        # measured: 9.19 builds engine 70 on the H100 itself but not deviceless ("No GPC
        # available at: cga_count == 0", setup_grid_sm90), whatever the layout
        with pytest.raises(GraphNotSupportedError, match="No GPC available"):
            nhwc.build(device_properties=props, cache=False)
    else:
        # NHWC: right in every measured case, not excluded (9.10 and 9.12 build it deviceless)
        built = nhwc.build(device_properties=props, cache=False)
        assert built.engine_id == 70 and not built.report.known_bad  # type: ignore[union-attr]
    if DEVICELESS_ENGINE_70:
        plan = lifted.build(device_properties=props, cache=False, allow_known_bad=True)
        assert plan.engine_id == 70
    else:
        # measured: 9.10 and 9.12's engine 70 takes no NCHW dy ("dy_layout == TensorNHWC ...");
        # 9.19 cannot set up its sm_90 grid deviceless: lifting the exclusion finds nothing
        with pytest.raises(GraphNotSupportedError, match="no engine supports graph 'wgrad'"):
            lifted.build(device_properties=props, cache=False, allow_known_bad=True)


def test_user_entries_come_from_the_environment(
    props: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry for the engine deviceless planning returns first: that plan is not returned, and
    the report says why."""
    first = conv_graph().build(device_properties=props, cache=False)
    table = {
        "schema": 1,
        "entries": [
            {
                "engine_id": first.engine_id,
                "operation": "conv_fprop",
                "layouts": ["NHWC"],
                "input_dtypes": ["float16"],
                "cudnn_min": "9.0",
                "seen_wrong_in": ["a test"],
                "advice": "try something else",
            }
        ],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(table))
    monkeypatch.setenv(known_bad.ENV_VAR, str(path))
    try:
        plan = conv_graph().build(device_properties=props, cache=False)
    except GraphNotSupportedError as exc:
        assert "try something else" in str(exc)
    else:
        assert plan.engine_id != first.engine_id
        assert plan.report is not None and plan.report.known_bad[0].source == str(path)
        assert f"engine {first.engine_id}" in plan.report.describe()
    # an entry for another cuDNN version range does not apply
    table["entries"][0]["cudnn_max"] = "9.0.1"
    path2 = tmp_path / "old.json"
    path2.write_text(json.dumps(table))
    monkeypatch.setenv(known_bad.ENV_VAR, str(path2))
    assert conv_graph().build(device_properties=props, cache=False).engine_id == first.engine_id


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        ({"schema": 2}, "schema"),
        ({"entries": {}}, "entries"),
        ({"entries": [{"engine_id": -1, "operation": "conv_fprop"}]}, "engine_id"),
        ({"entries": [{"engine_id": 1, "operation": "conv"}]}, "operation"),
        ({"entries": [{"engine_id": 1, "operation": "matmul", "cudnn_min": "nine"}]}, "cudnn_min"),
        ({"entries": [{"engine_id": 1, "operation": "matmul", "layouts": "NCHW"}]}, "layouts"),
    ],
)
def test_a_malformed_table_names_the_problem(edit: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        known_bad.load_table(text=json.dumps({"schema": 1, "entries": [], **edit}))


def test_the_shipped_table_loads() -> None:
    entries = known_bad.table()
    assert any(e.engine_id == 70 and e.operation == "conv_wgrad" for e in entries)
    assert all(e.advice and e.found and e.seen_wrong_in for e in entries)


# -- equivalent descriptions -----------------------------------------------------------------------


def _strided(buf: np.ndarray, dims: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    item = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf, dims, [s * item for s in strides])


def _packed_strides(dims: list[int], fmt: str) -> tuple[int, ...]:
    return tuple(pycudnn.layout.packed_strides(dims, fmt))


CASES = [
    ("NCHW", [2, 8, 5, 6], (2, 8, 5, 6)),
    ("NCHW", [1, 8, 1, 1], (2, 8, 5, 6)),
    ("NCHW", [1, 1, 1, 1], (2, 8, 5, 6)),
    ("NCHW", [1, 1, 1, 6], (2, 8, 5, 6)),
    ("NCHW", [2, 1, 5, 6], (2, 8, 5, 6)),
    ("NHWC", [1, 8, 1, 1], (2, 8, 5, 6)),
    ("NCDHW", [1, 4, 1, 1, 1], (2, 4, 3, 5, 6)),
]


@pytest.mark.parametrize(("fmt", "b_dims", "a_dims"), CASES)
def test_rank3_views_address_the_same_elements(
    fmt: str, b_dims: list[int], a_dims: tuple[int, ...]
) -> None:
    """Independent of cuDNN: computing a + b through the folded views (NumPy broadcasting on the
    rank-3 dims and strides) writes exactly what a + b on the graph's own views writes."""
    g = add_graph(fmt, b_dims, a_dims)
    variants = rewrites.variants(g)
    if not variants:
        pytest.skip("no fold needed or possible for this case")
    views = variants[0].views
    a, b, y = g["a"], g["b"], g.outputs[0]
    rng = np.random.default_rng(7)
    bufs = {t.uid: rng.standard_normal(int(np.prod(t.dims))) for t in (a, b)}
    bufs[y.uid] = np.zeros(int(np.prod(y.dims)))
    want = bufs[y.uid].copy()
    _strided(want, y.dims, y.strides)[...] = _strided(bufs[a.uid], a.dims, a.strides) + _strided(
        bufs[b.uid], b.dims, b.strides
    )
    got = bufs[y.uid]
    _strided(got, *views[y.uid])[...] = _strided(bufs[a.uid], *views[a.uid]) + _strided(
        bufs[b.uid], *views[b.uid]
    )
    for t in (a, b, y):
        assert len(views[t.uid][0]) == 3
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("b_dims", [[2, 8, 5, 6], [1, 8, 1, 1], [1, 1, 1, 1]])
def test_nchw_elementwise_graphs_are_planned_through_a_rank3_view(
    b_dims: list[int], props: Any
) -> None:
    """cuDNN has no engine for these as described (NOT_SUPPORTED_LAYOUT, also on the H100); the
    rank-3 view of the same memory is planned, and the report says so."""
    plan = add_graph("NCHW", b_dims).build(device_properties=props, cache=False)
    assert plan.rewrite and "rank-3" in plan.rewrite
    assert plan.report is not None and any("planned the" in r for r in plan.report.rewrites)
    data = json.loads(plan.to_json())
    assert all(len(t["dim"]) == 3 for t in data["operationGraph"]["tensors"])
    assert sm_of(plan) == 900


def test_channels_last_elementwise_graphs_are_planned_as_described(props: Any) -> None:
    plan = add_graph("NHWC", [1, 8, 1, 1]).build(device_properties=props, cache=False)
    assert plan.rewrite == ""


def test_a_cache_hit_for_another_graph_object_says_what_cudnn_was_shown(props: Any) -> None:
    """A memory hit for a new graph of the same structure shares the execution plan; the rewrite
    cuDNN planned and the planning report are the plan's too (they were lost on such hits)."""
    cache = PlanCache()
    first = add_graph("NCHW", [1, 8, 1, 1]).build(device_properties=props, cache=cache)
    again = add_graph("NCHW", [1, 8, 1, 1]).build(device_properties=props, cache=cache)
    assert cache.stats["memory_hits"] == 1 and again is not first
    assert first.rewrite and "rank-3" in first.rewrite
    assert again.rewrite == first.rewrite and "rank-3" in again.describe()
    assert again.report is first.report


def test_a_plan_for_a_rewritten_graph_reloads_for_that_graph(props: Any, tmp_path: Path) -> None:
    g = add_graph("NCHW", [1, 8, 1, 1])
    plan = g.build(device_properties=props, cache=False)
    path = tmp_path / "add.json"
    plan.save(path)
    again = Plan.load(path, graph=add_graph("NCHW", [1, 8, 1, 1]), device_properties=props)
    assert again.rewrite == plan.rewrite
    with pytest.raises(ValueError, match="built for another graph"):
        Plan.load(path, graph=add_graph("NCHW", [2, 8, 5, 6]), device_properties=props)


@pytest.mark.parametrize("mode", ["add", "mul", "max", "cmp_eq"])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])  # as described, and through the rank-3 view
def test_a_plan_with_a_broadcast_first_operand_reloads_for_its_own_graph(
    mode: str, fmt: str, props: Any
) -> None:
    """cuDNN writes a commutative pointwise node whose X is broadcast with its operands swapped
    (X the full tensor): such a plan was refused for the very graph it was built for (and a
    plan-cache directory rebuilt it every time). The operands of a subtraction stay ordered."""

    def graph(op: str, first: str) -> Graph:
        g = Graph("pw")
        x = g.tensor([2, 8, 5, 6], fmt=fmt, dtype="float32", name="x")
        b = g.tensor([1, 8, 1, 1], fmt=fmt, dtype="float32", name="b")
        g.pointwise(op, b, x) if first == "b" else g.pointwise(op, x, b)
        return g

    g = graph(mode, "b")
    plan = g.build(device_properties=props, cache=False)
    text = plan.to_json()
    node = json.loads(text)["operationGraph"]["nodes"][0]
    assert (node["X"], node["B"]) == (str(g["x"].uid), str(g["b"].uid))  # cuDNN's own order
    again = Plan.from_json(text, graph=graph(mode, "b"), device_properties=props)
    assert again.rewrite == plan.rewrite and ("rank-3" in plan.rewrite) == (fmt == "NCHW")
    sub = graph("sub", "b").build(device_properties=props, cache=False).to_json()
    with pytest.raises(ValueError, match="does not compute graph"):
        Plan.from_json(sub, graph=graph("sub", "x"), device_properties=props)


def test_rank4_matmul_batch_dims_are_folded(props: Any) -> None:
    g = Graph("mm")
    a = g.tensor([3, 2, 40, 24], dtype="float16", name="a")
    b = g.tensor([3, 2, 24, 32], dtype="float16", name="b")
    g.matmul(a, b)
    plan = g.build(device_properties=props, cache=False)
    assert "folded" in plan.rewrite
    dims = {
        int(t["name"]): t["dim"] for t in json.loads(plan.to_json())["operationGraph"]["tensors"]
    }
    assert dims[a.uid] == [6, 40, 24] and dims[b.uid] == [6, 24, 32]


def test_a_broadcast_across_two_batch_dims_says_what_would_work(props: Any) -> None:
    g = Graph("mm")
    a = g.tensor([3, 1, 40, 24], dtype="float16", name="a")
    b = g.tensor([1, 2, 24, 32], dtype="float16", name="b")
    g.matmul(a, b)
    assert rewrites.variants(g) == []
    with pytest.raises(GraphNotSupportedError) as info:
        g.build(device_properties=props, cache=False)
    assert "rank-3 operands" in str(info.value) and "loop over one" in str(info.value)


def test_a_scaled_pointwise_input_says_to_multiply_by_a_scalar(props: Any) -> None:
    # No engine takes a pointwise alpha other than 1 (measured on 9.19 and 9.28); the same sum
    # with the scales as by-value scalar multiplies plans, and the error says so.
    g = Graph("scaled_add")
    a = g.tensor([1, 8, 16], dtype="float32", name="a")
    b = g.tensor([1, 8, 16], dtype="float32", name="b")
    g.add(a, b, alpha1=2.0, alpha2=-0.5, name="sum")
    with pytest.raises(GraphNotSupportedError) as info:
        g.build(device_properties=props, cache=False)
    assert "alpha1/alpha2 of 1 only" in str(info.value) and "'sum'" in str(info.value)
    h = Graph("scaled_add_by_scalars")
    a = h.tensor([1, 8, 16], dtype="float32", name="a")
    b = h.tensor([1, 8, 16], dtype="float32", name="b")
    two = h.tensor([1, 1, 1], dtype="float32", by_value=2.0)
    half = h.tensor([1, 1, 1], dtype="float32", by_value=-0.5)
    h.add(h.mul(a, two), h.mul(b, half))
    assert sm_of(h.build(device_properties=props, cache=False)) == 900


def test_compare_and_select_plans_for_the_h100(props: Any) -> None:
    """cuDNN 9.19 had no engine for this on an H100 (the GPU test accepts its error there);
    deviceless, for the same GPU's properties, every version of the matrix plans it (measured:
    9.10.2, 9.12.0, 9.19.0 and 9.28)."""
    g = Graph("select")
    a = g.tensor([2, 8, 4, 4], dtype="float32", name="a")
    b = g.tensor([2, 8, 4, 4], dtype="float32", name="b")
    g.binary_select(g.pointwise("cmp_gt", a, b, out_dtype="bool"), a, b)
    assert sm_of(g.build(device_properties=props, cache=False)) == 900


def _entry_for(engine_id: int) -> dict[str, Any]:
    return {
        "engine_id": engine_id,
        "operation": "conv_fprop",
        "layouts": ["NHWC"],
        "input_dtypes": ["float16"],
        "cudnn_min": "9.0",
        "seen_wrong_in": ["a test"],
    }


def test_a_saved_plan_of_a_known_bad_engine_is_refused_on_load(
    props: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planning and build_engine refused a known-bad engine, but a plan file of it (saved before
    the entry was added, or built with allow_known_bad=True) loaded without a word."""
    saved = conv_graph().build(device_properties=props, cache=False)
    text = saved.to_json()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema": 1, "entries": [_entry_for(saved.engine_id)]}))
    monkeypatch.setenv(known_bad.ENV_VAR, str(path))
    with pytest.raises(ValueError, match=f"engine {saved.engine_id}, which is known to give"):
        Plan.from_json(text, graph=conv_graph(), device_properties=props)
    with pytest.raises(ValueError, match="known to give wrong results"):
        conv_graph().load_plan(text, device_properties=props)
    with pytest.raises(TypeError, match="allow_known_bad must be a bool"):
        Plan.from_json(text, graph=conv_graph(), device_properties=props, allow_known_bad="yes")  # type: ignore[arg-type]
    loaded = Plan.from_json(text, graph=conv_graph(), device_properties=props, allow_known_bad=True)
    assert loaded.engine_id == saved.engine_id
    # without a graph nothing says which entries apply: loaded as before
    assert Plan.from_json(text, device_properties=props).engine_id == saved.engine_id


def test_an_entry_added_to_the_users_table_applies_to_the_next_build(
    props: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's table was read once per process (cached by its path): an entry added to it,
    as verify --write-known-bad adds one, was ignored until the process restarted."""
    first = conv_graph().build(device_properties=props, cache=False).engine_id
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"schema": 1, "entries": []}))
    monkeypatch.setenv(known_bad.ENV_VAR, str(path))
    assert conv_graph().build(device_properties=props, cache=False).engine_id == first
    path.write_text(json.dumps({"schema": 1, "entries": [_entry_for(first)]}))
    try:
        again = conv_graph().build(device_properties=props, cache=False).engine_id
    except GraphNotSupportedError:
        return  # the only engine: refused, which is the entry applying
    assert again != first


def test_an_index_along_an_axis_is_never_planned_through_a_view(props: Any) -> None:
    """GEN_INDEX counts along a dim of the graph as described; the rank-3 view of an NCHW
    elementwise graph (and the batch-folded view of a rank-4 matmul) kept its axis, so cuDNN
    counted along another dim (0..119 instead of H's 0..3). Such graphs are planned as described
    or not at all."""
    g = Graph("gi")
    x = g.tensor([2, 3, 4, 5], dtype="float32", name="x")
    g.add(x, g.pointwise("gen_index", x, axis=2)).set_output(True, dtype="float32")
    assert rewrites.variants(g) == []
    try:
        plan = g.build(device_properties=props, cache=False)
    except GraphNotSupportedError:
        return
    assert plan.rewrite == ""
