"""A saved plan loads for a graph only if it computes that graph, and its tensors are then bound
to the graph tensors of the same role (CPU tier: deviceless plans for the committed H100
properties, cuDNN 9.28's serializer).

A loaded plan binds graph tensors by unique id (``plan.uids`` from the graph's tensors; the variant
pack hands tensor ``uid``'s array to the plan's tensor ``uid``), so a correct mapping means: each
uid the plan's JSON puts in a role is the graph tensor of that role. The pairs below are graphs
that compute different things but look alike (operands swapped in non-commutative operations,
inputs of one shape swapped, another mode, repeated subexpressions paired the other way, an SDPA
mask or bias that cuDNN's JSON leaves out): the plan of one is refused for the other. The
relabellings that compute the same (other tensor names, a commutative operation's operands in the
order cuDNN writes them) load, and every graph tensor lands on the plan tensor of its role and
shape. Damaged plan JSON (a tensor listed twice) is refused with a ValueError naming it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import pytest
from plan_kinds import resealed

import pycudnn
from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph
from pycudnn.plan import Plan, PlanVersionError
from pycudnn.plan.serialization import subgraphs_digest

pytestmark = pytest.mark.usefixtures("libcuda")
NOT_THIS_GRAPH = "does not compute graph"
DIMS = [1, 8, 16, 16]
Build = Callable[[Graph], None]


def _graph(build: Build) -> Graph:
    g = Graph("g")
    build(g)
    return g


@functools.cache
def _saved(build: Build, props: DeviceProperties) -> str:
    with _graph(build).build(device_properties=props, cache=False) as plan:
        return plan.to_json()


def _load(text: str, build: Build, props: DeviceProperties) -> Plan:
    return Plan.from_json(text, graph=_graph(build), device_properties=props)


def _t(g: Graph, name: str, dims: list[int] = DIMS, dtype: str = "float16") -> Any:
    return g.tensor(dims, fmt="NHWC" if len(dims) == 4 else None, dtype=dtype, name=name)


def _out(t: Any) -> None:
    t.set_output(True, dtype="float16")


def _binary(mode: str, first: str, second: str, bcast: str = "") -> Build:
    """``mode(first, second)`` of inputs a, b (created in that order; ``bcast`` names the one of
    dims [1, 8, 1, 1])."""

    def build(g: Graph) -> None:
        ts = {n: _t(g, n, [1, 8, 1, 1] if n == bcast else DIMS) for n in "ab"}
        _out(g.pointwise(mode, ts[first], ts[second]))

    return build


def _check_mapping(plan: Plan, data: dict[str, Any]) -> None:
    """Every graph tensor is bound (by uid) to the plan tensor of its dims, strides and kind, and
    every role of every plan node names the graph tensor the graph's operation has there."""
    graph = plan.graph
    assert graph is not None
    tensors = {int(t["name"]): t for t in data["operationGraph"]["tensors"]}
    for t in graph.tensors:
        j = tensors[t.uid]
        assert (list(t.dims), bool(t.is_virtual)) == (j["dim"], j["isVirtual"]), t.name
        if not t.is_virtual:
            assert j["stride"] == list(t.strides), t.name
    assert set(plan.uids) == {t.uid for t in graph.tensors if not t.is_virtual}
    for i, uid in enumerate(plan.uids):
        assert plan._slots[i].tensor is not None and plan._slots[i].tensor.uid == uid


def _roles(data: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {k: v for k, v in n.items() if k in ("X", "B", "T", "Y", "A", "matA", "matB", "matC")}
        for n in data["operationGraph"]["nodes"]
    ]


# -- operands swapped, modes changed ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sub", "pow", "cmp_lt", "add"])
def test_swapped_operands_of_same_shape_are_refused(
    mode: str, h100_props: DeviceProperties
) -> None:
    # a, b of one shape: mode(b, a) binds the same uids to the other roles (for a commutative
    # mode it computes the same, but cuDNN writes the operands as given: refused, not wrong)
    text = _saved(_binary(mode, "a", "b"), h100_props)
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH}.*role '[XB]'"):
        _load(text, _binary(mode, "b", "a"), h100_props)
    with _load(text, _binary(mode, "a", "b"), h100_props) as plan:
        _check_mapping(plan, json.loads(text))


@pytest.mark.parametrize("mode", ["sub", "div"])
def test_a_broadcast_operand_of_an_ordered_mode_is_never_commuted(
    mode: str, h100_props: DeviceProperties
) -> None:
    text = _saved(_binary(mode, "b", "a", bcast="b"), h100_props)
    with pytest.raises(ValueError, match=NOT_THIS_GRAPH):
        _load(text, _binary(mode, "a", "b", bcast="b"), h100_props)


@pytest.mark.parametrize("mode", ["add", "max"])
def test_a_commuted_broadcast_operand_loads_bound_to_its_role(
    mode: str, h100_props: DeviceProperties
) -> None:
    # cuDNN writes mode(bcast, full) as mode(full, bcast): either graph order loads, and each
    # input lands on the plan tensor of its own dims (a on [1, 8, 16, 16], b on [1, 8, 1, 1])
    for saved, loaded in (("ba", "ab"), ("ab", "ba")):
        text = _saved(_binary(mode, *saved, bcast="b"), h100_props)
        data = json.loads(text)
        (node,) = _roles(data)
        assert (node["X"], node["B"]) == ("1", "2")  # as cuDNN writes it: X the full one
        with _load(text, _binary(mode, *loaded, bcast="b"), h100_props) as plan:
            _check_mapping(plan, data)
            g = plan.graph
            assert g is not None
            assert plan._slots[plan._slot_index("a")].dims == tuple(DIMS)
            assert plan._slots[plan._slot_index("b")].dims == (1, 8, 1, 1)


@pytest.mark.parametrize(("saved", "loaded"), [("sub", "div"), ("cmp_lt", "cmp_gt"),
                                               ("add", "sub"), ("max", "min")])  # fmt: skip
def test_another_mode_of_the_same_arity_is_refused(
    saved: str, loaded: str, h100_props: DeviceProperties
) -> None:
    text = _saved(_binary(saved, "a", "b"), h100_props)
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH}.*'pointwiseMode'"):
        _load(text, _binary(loaded, "a", "b"), h100_props)


def _bn_finalize(training: bool) -> Build:
    def build(g: Graph) -> None:
        t = [
            g.tensor([1, 32, 1, 1], dtype="float32", name=n) for n in ("s", "q", "c", "b", "m", "v")
        ]
        g.batchnorm_finalize(*t[:4], epsilon=1e-5, accum_count=64, prev_running_mean=t[4],
                             prev_running_var=t[5], momentum=0.1, training=training)  # fmt: skip

    return build


@pytest.mark.parametrize("training", [True, False], ids=["training", "inference"])
def test_a_batchnorm_finalize_plan_of_the_other_phase_is_refused(
    training: bool, h100_props: DeviceProperties
) -> None:
    """cuDNN writes the phase as the node's "mode"; it was compared with nothing (the graph's is
    its stats mode), and a training plan loaded for an inference graph and the reverse."""
    text = _saved(_bn_finalize(training), h100_props)
    _load(text, _bn_finalize(training), h100_props).close()
    with pytest.raises(ValueError, match=NOT_THIS_GRAPH):
        _load(text, _bn_finalize(not training), h100_props)


def _select(first: str, second: str) -> Build:
    def build(g: Graph) -> None:
        ts = {n: _t(g, n) for n in "abc"}
        _out(g.binary_select(ts[first], ts[second], g.pointwise("cmp_gt", ts["c"], ts["a"])))

    return build


def test_binary_select_with_its_choices_swapped_is_refused(h100_props: DeviceProperties) -> None:
    text = _saved(_select("a", "b"), h100_props)
    with pytest.raises(ValueError, match=NOT_THIS_GRAPH):
        _load(text, _select("b", "a"), h100_props)
    with _load(text, _select("a", "b"), h100_props) as plan:
        _check_mapping(plan, json.loads(text))


def _matmul(swap: bool) -> Build:
    def build(g: Graph) -> None:
        a, b = (g.tensor([1, 64, 64], dtype="float16", name=n) for n in "ab")
        g.matmul(*((b, a) if swap else (a, b)))

    return build


def test_matmul_with_its_square_operands_swapped_is_refused(h100_props: DeviceProperties) -> None:
    text = _saved(_matmul(False), h100_props)
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH}.*role 'mat[AB]'"):
        _load(text, _matmul(True), h100_props)


# -- relabelled, reordered, repeated ----------------------------------------------------------


def test_other_names_load_and_bind_by_role(h100_props: DeviceProperties) -> None:
    def named(x: str, y: str) -> Build:
        def build(g: Graph) -> None:
            _out(g.sub(_t(g, x), _t(g, y)))

        return build

    text = _saved(named("a", "b"), h100_props)
    with _load(text, named("minuend", "subtrahend"), h100_props) as plan:
        _check_mapping(plan, json.loads(text))
        (node,) = _roles(json.loads(text))
        assert plan.uids[plan._slot_index("minuend")] == int(node["X"])
        assert plan.uids[plan._slot_index("subtrahend")] == int(node["B"])


def test_tensors_created_in_another_order_are_refused(h100_props: DeviceProperties) -> None:
    # b - a with b created first computes a - b of the first graph's uids swapped: refused (the
    # plan binds by uid; a relabelling of the uids is another graph to it, never a wrong binding)
    def build(order: str) -> Build:
        def b(g: Graph) -> None:
            ts = {n: _t(g, n) for n in order}
            _out(g.sub(ts["a"], ts["b"]))

        return b

    with pytest.raises(ValueError, match=NOT_THIS_GRAPH):
        _load(_saved(build("ab"), h100_props), build("ba"), h100_props)


def _repeated(first: str, second: str, mode: str = "div") -> Build:
    """mode(sub(first), sub(second)) over inputs a, b, c, d: two identical subexpressions."""

    def build(g: Graph) -> None:
        ts = {n: _t(g, n) for n in "abcd"}
        x = g.sub(ts[first[0]], ts[first[1]])
        y = g.sub(ts[second[0]], ts[second[1]])
        _out(g.pointwise(mode, x, y))

    return build


@pytest.mark.parametrize(
    ("saved", "loaded"),
    [
        (_repeated("ab", "cd"), _repeated("ab", "dc")),  # one copy's operands swapped
        (_repeated("ab", "cd"), _repeated("cd", "ab")),  # the copies in the other order
        (_repeated("ab", "cd"), _repeated("ba", "dc")),  # both copies' operands swapped
        (_repeated("ab", "cd", "mul"), _repeated("cd", "ab", "mul")),  # other intermediates
    ],
    ids=["one-copy", "copies-swapped", "both-copies", "commutative-outer"],
)
def test_repeated_subexpressions_are_not_paired_the_wrong_way(
    saved: Build, loaded: Build, h100_props: DeviceProperties
) -> None:
    text = _saved(saved, h100_props)
    with pytest.raises(ValueError, match=NOT_THIS_GRAPH):
        _load(text, loaded, h100_props)
    with _load(text, saved, h100_props) as plan:
        _check_mapping(plan, json.loads(text))


def _add_then_sub(add_order: str, sub_first: str) -> Build:
    def build(g: Graph) -> None:
        a, b, c = _t(g, "a"), _t(g, "b", [1, 8, 1, 1]), _t(g, "c")
        ts = {"a": a, "b": b}
        s = g.add(ts[add_order[0]], ts[add_order[1]])
        _out(g.sub(s, c) if sub_first == "s" else g.sub(c, s))

    return build


def test_a_commuted_add_feeding_a_sub_loads_but_the_sub_stays_ordered(
    h100_props: DeviceProperties,
) -> None:
    text = _saved(_add_then_sub("ab", "s"), h100_props)
    with _load(text, _add_then_sub("ba", "s"), h100_props) as plan:
        _check_mapping(plan, json.loads(text))
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH}.*operation 1"):
        _load(text, _add_then_sub("ab", "c"), h100_props)


# -- values, types, strides, operations ---------------------------------------------------------


def _scaled(value: float, dtype: str = "float32") -> Build:
    def build(g: Graph) -> None:
        _out(g.mul(_t(g, "a"), g.scalar(value, dtype=dtype, name="s")))

    return build


def test_a_by_value_scalar_is_the_graphs_and_its_type_the_plans(
    h100_props: DeviceProperties,
) -> None:
    text = _saved(_scaled(2.0), h100_props)
    with _load(text, _scaled(3.0), h100_props) as plan:  # the value is passed at execute
        assert float(plan._slots[plan._slot_index("s")].scalar[0]) == 3.0
    with pytest.raises(ValueError, match="tensor 2 \\('s'\\) has dataType"):
        _load(text, _scaled(2.0, "float16"), h100_props)


def _sub(b_dtype: str = "float16", b_fmt: str | None = "NHWC", relu: bool = False) -> Build:
    def build(g: Graph) -> None:
        b = g.tensor(DIMS, fmt=b_fmt, dtype=b_dtype, name="b")
        y = g.sub(_t(g, "a"), b)
        _out(g.relu(y) if relu else y)

    return build


@pytest.mark.parametrize(
    ("loaded", "named"),
    [
        (_sub(b_dtype="float32"), "has dataType"),
        (_sub(b_fmt=None), "strides"),
        (_sub(relu=True), "the plan has 3 tensors but the graph has 4"),
    ],
    ids=["dtype", "strides", "extra-operation"],
)
def test_another_type_layout_or_operation_is_refused(
    loaded: Build, named: str, h100_props: DeviceProperties
) -> None:
    with pytest.raises(ValueError, match=named):
        _load(_saved(_sub(), h100_props), loaded, h100_props)
    with pytest.raises(ValueError, match="the plan has 4 tensors but the graph has 3"):
        _load(_saved(_sub(relu=True), h100_props), _sub(), h100_props)


# -- SDPA: the score subgraph cuDNN's JSON leaves out -------------------------------------------


def _has_subgraph(build: Build) -> bool:
    """Whether the loaded cuDNN lowers this SDPA to its unified operation with a score subgraph
    (cuDNN 9.21 and newer for masks and bias), which plan files record as pycudnnSubgraphs."""
    return subgraphs_digest(_graph(build)) is not None


def _needs_subgraph(build: Build) -> None:
    if not _has_subgraph(build):
        loaded = ".".join(map(str, pycudnn.version_tuple()))
        pytest.skip(
            f"cuDNN {loaded} lowers this SDPA to the composite graph, whose mask and bias cuDNN's "
            "JSON lists (compared node by node, as test_an_attention_plan_for_another_bias_or_"
            "mask_is_refused shows there): no score subgraph to record"
        )


def _attention(backward: bool, bias: list[int] | None = None, dtype: str = "bfloat16",
               **masks: Any) -> Build:  # fmt: skip
    def build(g: Graph) -> None:
        names = "qkvoO" if backward else "qkv"
        ins = [g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in names]
        kw: dict[str, Any] = dict(masks)
        if bias is not None:
            kw["bias"] = g.tensor(bias, dtype=dtype, name="bias")
        if backward:
            g.sdpa_backward(*ins, stats=g.tensor([2, 4, 128, 1], name="stats"), **kw)
        else:
            g.sdpa(*ins, **kw)

    return build


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize(
    ("saved", "loaded"),
    [
        ({"bias": [1, 1, 128, 128]}, {"bias": [2, 4, 128, 128]}),  # reads past the smaller one
        ({"bias": [2, 4, 128, 128]}, {"bias": [1, 4, 128, 128]}),
        ({"bias": [1, 1, 128, 128]}, {"bias": [1, 1, 128, 128], "dtype": "float16"}),
        ({"diagonal_band_left_bound": 16}, {"diagonal_band_right_bound": 16}),
    ],
    ids=["bias-dims", "bias-broadcast", "bias-dtype", "band-side"],
)
def test_an_attention_plan_for_another_bias_or_mask_is_refused(
    backward: bool, saved: dict[str, Any], loaded: dict[str, Any], h100_props: DeviceProperties
) -> None:
    # cuDNN's JSON of an SDPA backward has no subgraph at all (the mask and bias are in the
    # kernel's parameters), and no JSON lists the bias where the graph's tensors are compared:
    # these loaded for each other, and computed with the plan's bias layout or mask
    text = _saved(_attention(backward, **saved), h100_props)
    if not _has_subgraph(_attention(backward, **saved)):
        # lowered to the composite graph (older cuDNN): the mask and bias are graph operations
        # and tensors cuDNN's JSON lists, refused by the tensor and node comparisons
        why = "(built for another graph|does not compute graph)"
    elif not backward and "diagonal_band_left_bound" in saved:
        # a forward's JSON lists its band-mask subgraph: the node comparison refuses it first
        why = f"{NOT_THIS_GRAPH}.*matches no node of the plan"
    else:
        why = f"{NOT_THIS_GRAPH}.*its SDPA score subgraph"
    with pytest.raises(ValueError, match=why):
        _load(text, _attention(backward, **loaded), h100_props)
    _load(text, _attention(backward, **saved), h100_props).close()


def test_an_attention_plan_for_another_window_value_loads(h100_props: DeviceProperties) -> None:
    # the window's bound is a by-value scalar passed at execute: the graph's value is used
    text = _saved(_attention(True, sliding_window=32), h100_props)
    g = _graph(_attention(True, sliding_window=16))
    with Plan.from_json(text, graph=g, device_properties=h100_props) as plan:
        bound = g["sdpa_backward0.left_bound"]
        assert bound.value == 16
        assert float(plan._slots[plan._slot_index(bound)].scalar[0]) == 16


def test_the_subgraph_record_survives_a_load_without_the_graph(
    h100_props: DeviceProperties,
) -> None:
    build = _attention(True, bias=[1, 1, 128, 128], causal=True)
    _needs_subgraph(build)
    text = _saved(build, h100_props)
    with Plan.from_json(text, device_properties=h100_props) as plan:
        again = plan.to_json()  # re-saved by a process that never had the graph
    _load(again, build, h100_props).close()
    with pytest.raises(ValueError, match="SDPA score subgraph"):
        _load(again, _attention(True, bias=[1, 4, 128, 128], causal=True), h100_props)


def test_a_plan_saved_without_the_subgraph_record_is_replanned(
    h100_props: DeviceProperties,
) -> None:
    build = _attention(True, bias=[1, 1, 128, 128])
    _needs_subgraph(build)
    data = json.loads(_saved(build, h100_props))
    del data["pycudnnSubgraphs"]  # as pycudnn wrote it before the record
    with pytest.raises(PlanVersionError, match="re-plan"):
        _load(json.dumps(resealed(data)), build, h100_props)
    data = json.loads(_saved(_sub(), h100_props))
    assert "pycudnnSubgraphs" not in data  # a graph without one has no record
    data["pycudnnSubgraphs"] = json.loads(_saved(build, h100_props))["pycudnnSubgraphs"]
    with pytest.raises(ValueError, match="SDPA score subgraph"):
        _load(json.dumps(resealed(data)), _sub(), h100_props)


# -- damaged JSON ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "key", "value"),
    [(True, "stride", [2048, 256, 16, 1]), (True, "dataType", "CUDNN_DATA_FLOAT"),
     (False, "name", None)],
    ids=["strides-before", "dtype-before", "same-after"],
)  # fmt: skip
def test_a_tensor_listed_twice_is_refused(
    first: bool, key: str, value: Any, h100_props: DeviceProperties
) -> None:
    # the loader compared one copy with the graph (the last) while cuDNN may read the other: a
    # copy of other strides or data type listed first loaded for the graph
    data = json.loads(_saved(_sub(), h100_props))
    tensors = data["operationGraph"]["tensors"]
    copy = dict(tensors[1])
    if value is not None:
        copy[key] = value
    tensors.insert(0 if first else len(tensors), copy)
    with pytest.raises(ValueError, match=r"tensors\[\d\].name must not name a tensor listed"):
        _load(json.dumps(resealed(data)), _sub(), h100_props)


def test_a_tensor_of_the_graph_listed_again_in_a_subgraph_is_refused(
    h100_props: DeviceProperties,
) -> None:
    # cuDNN's subgraphs (an SDPA's score graph) list only their own tensors and name the outer
    # ones; a copy of an outer tensor (other strides) listed inside was loaded unnoticed.
    data = json.loads(_saved(_attention(False, bias=[1, 1, 128, 128], causal=True), h100_props))
    og = data["operationGraph"]
    nested = [v for n in og["nodes"] for v in n.values() if isinstance(v, dict) and "tensors" in v]
    if not nested:
        pytest.skip(f"cuDNN {pycudnn.version()} saves this SDPA without a subgraph")
    copy = {**og["tensors"][0], "stride": [1, 1, 1, 1]}
    nested[0]["tensors"].append(copy)
    with pytest.raises(ValueError, match=r"subgraph.tensors\[\d\].name must not name a tensor"):
        _load(json.dumps(resealed(data)), _attention(False, bias=[1, 1, 128, 128], causal=True),
              h100_props)  # fmt: skip
