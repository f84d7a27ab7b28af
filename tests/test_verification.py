"""Verification of plans on the CPU tier: inputs, tolerance rules, comparisons, known-bad entries,
the suite and the command line, with real plans built for the committed H100 properties.

What needs a kernel launch (executing a plan) is in ``tests/test_verify_gpu.py``. Here, numerical
behaviour of GPUs is emulated where the tolerance rules must accept or refuse it: TF32 operands
(tensor cores with fp32 data), fp16 accumulation (``REDUCED_PRECISION_REDUCTION``), and the
garbage cuDNN 9.19's engine 70 returned on an H100.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pycudnn
from pycudnn.graph import Graph
from pycudnn.opgraph import attention_common as attention_module
from pycudnn.plan import GraphNotSupportedError, Plan
from pycudnn.verification import (
    DEFAULT_MAX_REFERENCE_COST,
    VerifyResult,
    compare,
    entry_for,
    evaluate,
    make_inputs,
    reference_cost,
    tolerance_for,
    unit_roundoff,
    verify_plan,
    write_entries,
)
from pycudnn.verification import reference as ref_mod
from pycudnn.verification.run import known_bad_note, reference_candidates, uses_numpy
from pycudnn.verification.suite import cases, conv_graph
from pycudnn.verification.tolerance import TF32


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def conv(dtype: str = "float32", out: str | None = None, fmt: str = "NHWC") -> tuple[Graph, Any]:
    g = Graph("conv")
    x = g.tensor([2, 16, 8, 8], fmt=fmt, dtype=dtype, name="x")
    w = g.tensor([16, 16, 3, 3], fmt=fmt, dtype=dtype, name="w")
    y = g.conv_fprop(x, w, padding=1, out_dtype=out)
    g.signature()
    return g, y


# -- inputs -----------------------------------------------------------------------------------


def test_inputs_have_the_described_layout_dtype_and_exact_values() -> None:
    g, _ = conv("float16")
    ins = make_inputs(g, seed=3)
    for t in g.inputs:
        a = ins[t.uid]
        assert a.shape == t.dims and a.dtype == np.float16
        assert tuple(s // a.itemsize for s in a.strides) == t.strides  # NHWC in memory
        assert np.isfinite(a).all()
    again = make_inputs(g, seed=3)
    other = make_inputs(g, seed=4)
    assert all(np.array_equal(ins[k], again[k]) for k in ins)
    assert not all(np.array_equal(ins[k], other[k]) for k in ins)


def test_inputs_are_scaled_by_the_reduction_length_and_kept_in_their_domain() -> None:
    g = Graph("scaled")
    x = g.tensor([1, 64, 5, 5], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([8, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    p = g.tensor([1, 8, 5, 5], fmt="NHWC", dtype="float32", name="p")
    g.log(p)
    g.conv_fprop(x, w, padding=1)
    ins = make_inputs(g)
    k = 64 * 9
    for t in (x, w):
        assert np.abs(ins[t.uid].astype(np.float64)).max() <= k**-0.25
    assert ins[p.uid].min() >= 0.5 and ins[p.uid].max() <= 2.0
    # The reference of such inputs stays near 1: nothing near fp16's range.
    out = evaluate(g, ins)
    assert max(np.abs(v).max() for v in out.values()) < 10


# -- tolerance rules ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_unit_roundoff_is_half_the_machine_epsilon(dtype: str) -> None:
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    eps = float(ml_dtypes.finfo(dt).eps)
    assert unit_roundoff(dt) == eps / 2
    assert unit_roundoff(np.int32) == 0.0


def _tf32(a: np.ndarray, *, truncate: bool = False) -> np.ndarray:
    """fp32 values as tensor cores read them: 10 mantissa bits (rounded, or truncated)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    if not truncate:
        bits = bits + np.uint32(0x1000)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


@pytest.mark.parametrize("truncate", [False, True], ids=["rn", "rz"])
def test_tf32_results_pass_on_tensor_core_engines_and_not_on_plain_fp32(
    truncate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first sweep marked TF32 plans wrong with an fp32 tolerance; the rules know better."""
    g, y = conv("float32")
    x, w = (t for t in g.inputs)
    ins = make_inputs(g)
    ref = evaluate(g, ins)[y.uid]
    a = {"pre_padding": (1, 1), "post_padding": (1, 1), "stride": (1, 1), "dilation": (1, 1)}
    got = ref_mod.conv_fprop(
        _tf32(ins[x.uid], truncate=truncate).astype(np.float64),
        _tf32(ins[w.uid], truncate=truncate).astype(np.float64),
        a,
    ).astype(np.float32)
    tc = compare("y", got, ref, tolerance_for(y, ["TENSOR_CORE"]))
    assert tc.passed, tc.describe()
    assert 1e-5 < tc.max_rel_error < 4e-3  # about 1e-3: right for TF32
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    assert compare("y", got, ref, tolerance_for(y, [])).passed  # TF32 is cuDNN's default
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")  # ... unless forbidden: then it is wrong
    plain = compare("y", got, ref, tolerance_for(y, []))
    assert not plain.passed


def test_fp16_outputs_are_judged_by_fp16_rounding() -> None:
    g, y = conv("float16", "float16")
    ins = make_inputs(g)
    ref = evaluate(g, ins)[y.uid]
    assert compare("y", ref.astype(np.float16), ref, tolerance_for(y)).passed
    # One element off by 1% is more than fp16 rounding.
    bad = ref.astype(np.float16)
    bad[0, 0, 0, 0] += np.float16(0.01 * np.abs(ref).max() + 0.01)
    assert not compare("y", bad, ref, tolerance_for(y)).passed


def test_reduced_precision_accumulation_grows_with_the_reduction_length() -> None:
    g = Graph("wgrad")
    x = g.tensor([8, 4, 16, 16], fmt="NHWC", dtype="float16", name="x")
    dy = g.tensor([8, 4, 16, 16], fmt="NHWC", dtype="float16", name="dy")
    dw = g.conv_wgrad(x, dy, dw_dims=[4, 4, 1, 1], out_dtype="float16")
    g.signature()
    ins = make_inputs(g)
    ref = evaluate(g, ins)[dw.uid]
    # fp16 accumulation, one term at a time (the worst order) over N*H*W = 2048 products.
    xs = ins[x.uid].astype(np.float64).transpose(1, 0, 2, 3).reshape(4, -1)
    ds = ins[dy.uid].astype(np.float64).transpose(1, 0, 2, 3).reshape(4, -1)
    got = np.zeros((4, 4, 1, 1), dtype=np.float16)
    for k in range(4):
        for c in range(4):
            got[k, c] = np.cumsum((ds[k] * xs[c]).astype(np.float16), dtype=np.float16)[-1]
    rp = tolerance_for(dw, ["REDUCED_PRECISION_REDUCTION"])
    assert compare("dw", got, ref, rp).passed
    assert not compare("dw", got, ref, tolerance_for(dw)).passed
    short = Graph("short")
    xs_ = short.tensor([1, 4, 2, 2], fmt="NHWC", dtype="float16", name="x")
    dys = short.tensor([1, 4, 2, 2], fmt="NHWC", dtype="float16", name="dy")
    dws = short.conv_wgrad(xs_, dys, dw_dims=[4, 4, 1, 1], out_dtype="float16")
    short.signature()
    assert tolerance_for(dws, ["REDUCED_PRECISION_REDUCTION"]).rtol < rp.rtol


@pytest.mark.parametrize("kind", ["rel 1.1", "nan", "1e37", "unwritten"])
def test_engine_70_garbage_fails_every_tolerance(kind: str) -> None:
    """What engine 70 returned on the H100 (relative error 1.1-1.6, NaN, 1e37)."""
    g, y = conv("float16", "float32", fmt="NCHW")
    ref = evaluate(g, make_inputs(g))[y.uid]
    got = ref.astype(np.float32)
    if kind == "rel 1.1":
        got = got + 1.1 * np.abs(ref).max() * np.sign(np.sin(np.arange(got.size))).reshape(
            got.shape
        )
    elif kind == "nan":
        got[1, 3, 2, 2] = np.nan
    elif kind == "1e37":
        got[0, 0, 0, 0] = 1e37
    else:
        got[-1, -1] = np.nan  # a slice the engine never wrote
    for notes in ([], ["TENSOR_CORE"], ["TENSOR_CORE", "REDUCED_PRECISION_REDUCTION"]):
        check = compare("y", got, ref, tolerance_for(y, notes))
        assert not check.passed, check.describe()


def test_integer_outputs_of_integer_inputs_are_exact() -> None:
    g = Graph("cmp")
    a = g.tensor([1, 4, 4], dtype="int32", name="a")
    b = g.tensor([1, 4, 4], dtype="int32", name="b")
    c = g.pointwise("CMP_GT", a, b, out_dtype="bool")
    g.signature()
    tol = tolerance_for(c)
    assert tol.exact
    ins = make_inputs(g)
    ref = evaluate(g, ins)[c.uid]
    assert compare("c", ref.astype(bool), ref, tol).passed
    flipped = ref.astype(bool)
    flipped[0, 0, 0] = not flipped[0, 0, 0]
    check = compare("c", flipped, ref, tol)
    assert not check.passed and check.mismatches == 1


def test_a_result_reports_errors_tolerance_reference_and_verdict() -> None:
    g, y = conv("float16", "float16")
    ref = evaluate(g, make_inputs(g))[y.uid]
    r = VerifyResult("conv", 70, {"K": 1}, ("TENSOR_CORE",), "NumPy (float64)", 0)
    r.outputs.append(compare("y", ref * 2, ref, tolerance_for(y, ["TENSOR_CORE"])))
    r.finish()
    assert r.status == "fail" and not r.passed
    assert r.max_rel_error == pytest.approx(1.0)
    d = r.to_dict()
    assert d["engine_id"] == 70 and d["reference"] == "NumPy (float64)" and not d["passed"]
    assert d["tolerance"] == r.outputs[0].tolerance.rtol > 0
    json.dumps(d)
    assert "WRONG" in r.describe()


# -- real plans for the H100 (deviceless) -------------------------------------------------------


def test_engine_70_is_the_only_plan_for_nchw_fp16_wgrad_and_the_table_names_it(props: Any) -> None:
    g = conv_graph("wgrad", "NCHW", "float16", "float32", "strided")
    assert "engine 70" in known_bad_note(g, 70)
    nhwc = conv_graph("wgrad", "NHWC", "float16", "float32", "strided")
    assert known_bad_note(nhwc, 70) == ""
    if pycudnn.version_tuple() < (9, 28):
        # measured on 9.10.2, 9.12.0 and 9.19.0: deviceless planning finds no engine for it at
        # all (the H100 itself found engine 70 alone with 9.19); the refusal still names engine 70
        # and what would work
        with pytest.raises(GraphNotSupportedError, match="no engine supports") as info:
            g.build_all(device_properties=props, allow_known_bad=True)
        assert "engine 70" in str(info.value) and "what would work" in str(info.value)
        return
    plans = g.build_all(device_properties=props, allow_known_bad=True)
    assert [p.engine_id for p in plans] == [70]
    # Its tolerance is the tensor-core rule (fp16 operands read exactly, fp32 accumulation).
    (dw,) = g.outputs
    tol = tolerance_for(dw, plans[0].numerical_notes)
    assert "TENSOR_CORE" in plans[0].numerical_notes and tol.rtol < 1e-3
    with pytest.raises(GraphNotSupportedError, match="known to give wrong results"):
        conv_graph("wgrad", "NCHW", "float16", "float32", "strided").build_all(
            device_properties=props
        )


def test_tolerances_follow_the_notes_of_real_fp32_plans(
    props: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = conv_graph("fprop", "NHWC", "float32", "float32", "3x3")
    plans = g.build_all(device_properties=props, limit=12)
    (y,) = g.outputs
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    assert all(tolerance_for(y, p.numerical_notes).rtol >= 4 * 2 * TF32 for p in plans)
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    tols = {
        ("TENSOR_CORE" in p.numerical_notes): tolerance_for(y, p.numerical_notes) for p in plans
    }
    assert set(tols) == {True, False}, "expected TF32 and plain fp32 engines among the plans"
    assert tols[True].rtol >= 4 * 2 * TF32  # the note says tensor cores: TF32 whatever the switch
    assert tols[False].rtol < 1e-4


def test_the_reference_is_numpy_for_small_graphs_else_the_plainest_other_engine(
    props: Any,
) -> None:
    g = conv_graph("fprop", "NHWC", "float32", "float32", "3x3")
    assert uses_numpy(g) and not uses_numpy(g, max_reference_cost=reference_cost(g) - 1)
    plans = g.build_all(device_properties=props, limit=12)
    tested = next(p for p in plans if "TENSOR_CORE" in p.numerical_notes)
    ranked = reference_candidates(plans, tested.engine_id)
    assert ranked and all(p.engine_id != tested.engine_id for p in ranked)
    assert "TENSOR_CORE" not in ranked[0].numerical_notes  # exact fp32 math, not TF32
    assert {p.engine_id for p in ranked} == {p.engine_id for p in plans} - {tested.engine_id}


def test_a_wrong_engine_becomes_a_table_entry_that_planning_applies(
    props: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = conv_graph("fprop", "NHWC", "float16", "float16", "3x3")
    first = g.build_all(device_properties=props, limit=1)[0]
    engine = first.engine_id
    (y,) = g.outputs
    ref = evaluate(g, make_inputs(g))[y.uid]
    result = VerifyResult(g.name, engine, first.knobs, first.numerical_notes, "NumPy (float64)", 0)
    result.outputs.append(compare("y", np.full_like(ref, np.nan), ref, tolerance_for(y)))
    entry = entry_for(result.finish(), g, cudnn_version=pycudnn.version(), device="test")
    assert entry["engine_id"] == engine and entry["operation"] == "conv_fprop"
    assert entry["layouts"] == ["NHWC"] and entry["input_dtypes"] == ["float16"]
    table = tmp_path / "bad.json"
    assert write_entries(table, [entry]) == 1
    assert write_entries(table, [entry]) == 0  # not repeated
    monkeypatch.setenv("PYCUDNN_KNOWN_BAD_ENGINES", str(table))
    again = conv_graph("fprop", "NHWC", "float16", "float16", "3x3")
    plans = again.build_all(device_properties=props)
    assert engine not in {p.engine_id for p in plans}
    assert any(e.engine_id == engine and e.source == str(table) for e in plans[0].report.known_bad)
    with pytest.raises(ValueError, match="only a failed verification"):
        entry_for(VerifyResult("g", 1, {}, (), "", 0), g, cudnn_version=91900)


def test_a_known_bad_entry_covers_the_rewrite_cudnn_is_shown(
    props: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reduction ``[4, 6, 32] -> [1, 1, 32]`` has no engine as described and is planned as the
    channels-last ``[24, 32, 1, 1] -> [1, 32, 1, 1]``: an entry for that engine on NHWC
    reductions (what cuDNN runs) must keep it out, through planning, by hand and from a file."""
    from pycudnn.plan import build_engine

    def graph() -> Graph:
        g = Graph("rank3-reduction")
        g.reduction(g.tensor([4, 6, 32], dtype="float32", name="x"), op="add", out_dims=[1, 1, 32])
        return g

    plan = graph().build(device_properties=props, cache=False)
    assert "channels-last" in plan.rewrite
    saved = plan.to_json()
    entry = {"engine_id": plan.engine_id, "operation": "reduction", "layouts": ["NHWC"],
             "input_dtypes": ["float32"], "found": "a test"}  # fmt: skip
    table = tmp_path / "bad.json"
    table.write_text(json.dumps({"schema": 1, "entries": [entry]}))
    monkeypatch.setenv("PYCUDNN_KNOWN_BAD_ENGINES", str(table))
    with pytest.raises(GraphNotSupportedError) as info:
        graph().build(device_properties=props, cache=False)
    assert {e.engine_id for e in info.value.report.known_bad} == {plan.engine_id}
    with pytest.raises(ValueError, match="known to give wrong results"):
        build_engine(graph(), plan.engine_id, device_properties=props)
    with pytest.raises(ValueError, match="known to give wrong results"):
        Plan.from_json(saved, graph=graph(), device_properties=props)


def test_verify_needs_a_gpu_and_a_graph(props: Any) -> None:
    from _nvbind.cuda import driver_status

    g, _ = conv("float16", "float16")
    plan = g.build(device_properties=props, cache=False)
    loaded = Plan.from_json(plan.to_json(), device_properties=props)
    with pytest.raises(ValueError, match="without its graph"):
        verify_plan(loaded)
    if driver_status().usable:
        pytest.skip("a GPU is usable here (tests/test_verify_gpu.py covers it)")
    with pytest.raises(RuntimeError, match="none is usable here"):
        verify_plan(plan)


# -- the suite and the command line --------------------------------------------------------------


def test_the_suite_covers_the_families_and_every_case_has_a_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    all_cases = cases()
    names = [c.name for c in all_cases]
    assert len(names) == len(set(names))
    families = {c.family for c in all_cases}
    assert {"conv_fprop", "conv_dgrad", "conv_wgrad", "matmul", "fusion", "pointwise",
            "reduction"} <= families  # fmt: skip
    quick = {c.name for c in cases(quick=True)}
    for dt, out in (("fp16", "fp16"), ("fp16", "fp32"), ("bf16", "bf16"), ("bf16", "fp32")):
        assert f"conv_wgrad-strided-NCHW-{dt}-{out}" in quick
    assert {c.family for c in cases(quick=True)} == families
    for c in all_cases:
        try:
            g = c.build()
        except pycudnn.UnsupportedByLibraryError as exc:
            # an attention case on an older cuDNN (the version matrix): `verify` reports it as
            # unsupported; its NumPy reference is still checked below, on a graph built as the
            # newest cuDNN would (the graph never reaches cuDNN here)
            assert c.family == "attention" and "needs cuDNN" in str(exc), (c.name, exc)
            with monkeypatch.context() as m:
                m.setattr(attention_module, "_loaded_version", lambda: 92800)
                g = c.build()
        g.signature()
        assert reference_cost(g) <= DEFAULT_MAX_REFERENCE_COST
        out = evaluate(g, make_inputs(g))
        assert all(np.isfinite(v).all() for v in out.values()), c.name


def test_cli_lists_the_suite_and_refuses_to_verify_without_a_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from _nvbind.cuda import driver_status
    from pycudnn.cli import main

    assert main(["verify", "--list", "--quick"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == len(cases(quick=True))
    assert main(["verify", "--list", "--filter", "matmul"]) == 0
    assert all("matmul" in line for line in capsys.readouterr().out.splitlines())
    if driver_status().usable:
        pytest.skip("a GPU is usable here (tests/test_verify_gpu.py covers it)")
    assert main(["verify", "--quick"]) == 3  # could not run: no GPU
    assert "none is usable here" in capsys.readouterr().err


def test_the_command_table_shows_wrong_engines_exclusions_and_missing_plans() -> None:
    from pycudnn.verification.cli import _line

    g, y = conv("float16", "float32", fmt="NCHW")
    ref = evaluate(g, make_inputs(g))[y.uid]
    rows = []
    for engine, got in ((1, ref.astype(np.float32)), (70, np.full_like(ref, np.nan))):
        r = VerifyResult(g.name, engine, {}, (), "NumPy (float64)", 0)
        r.outputs.append(compare("y", got, ref, tolerance_for(y)))
        rows.append(r.finish().to_dict())
    case = {"name": "conv", "status": "wrong", "plans": rows, "excluded": ["engine 70 for x"]}
    text = _line(json.loads(json.dumps(case)))  # what --json prints reads back the same
    assert "1 ok" in text and "WRONG: engine 70 rel inf" in text
    assert "excluded as known bad: engine 70 for x" in text
    none = {"name": "wgrad", "status": "no plan", "error": "no engine", "plans": [], "excluded": []}
    assert "NO PLAN: no engine" in _line(none)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_outputs_start_as_nan_in_every_float_type(dtype: str) -> None:
    """bfloat16's NumPy kind is "V": a check on kind "f" alone would prefill it with 1, and an
    engine that never writes an element would go unseen."""
    from pycudnn.verification.run import prefilled_output

    _, y = conv("float16", dtype, fmt="NHWC")
    host = prefilled_output(y)
    assert host.shape == y.dims and np.isnan(host.astype(np.float64)).all()
    assert tuple(s // host.itemsize for s in host.strides) == y.strides


def test_bfloat16_intermediates_count_in_the_tolerance() -> None:
    g = Graph("bf16", intermediate_dtype="bfloat16")
    x = g.tensor([1, 8, 4, 4], fmt="NHWC", dtype="bfloat16", name="x")
    w = g.tensor([8, 8, 1, 1], fmt="NHWC", dtype="bfloat16", name="w")
    y = g.relu(g.conv_fprop(x, w), out_dtype="float32")
    g.signature()
    names = [name for name, _ in tolerance_for(y).terms]
    assert any("stored as bfloat16" in n for n in names), names


def test_a_verify_that_compared_nothing_has_not_passed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a GPU no engine runs: every graph is "no plan". That exited 0 with "all right",
    as it would on a GPU cuDNN has no engines for, and a CI job went green. Only the command's
    up-front GPU check is stood in for; the suite and its verdict are the real ones."""
    from pycudnn.cli import main
    from pycudnn.verification import cli as verify_cli

    monkeypatch.setattr(verify_cli, "select_verify_cases", lambda args, *a, **k: cases(True))
    assert main(["verify", "--quick", "--no-progress"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "0 plan runs" in last and "NOTHING COMPARED" in last and "all right" not in last
    assert main(["verify", "--quick", "--no-progress", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False and report["checked"] == 0
    assert report["graphs_without_plan"] == len(report["cases"])


@pytest.mark.parametrize("fault", ["unwritten", "element 0 everywhere", "last element"])
def test_a_batch_sliced_reference_catches_faults_past_batch_element_0(
    fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph too costly for the host reference is checked on some of its batch elements: an
    engine that writes only element 0, or computes every element from element 0's inputs, or
    gets the last element wrong must still fail."""
    import types

    from pycudnn.verification import run

    g = Graph("conv")
    x = g.tensor([4, 8, 6, 6], fmt="NHWC", dtype="float32", name="x")
    w = g.tensor([8, 8, 3, 3], fmt="NHWC", dtype="float32", name="w")
    g.conv_fprop(x, w, padding=1)
    g.signature()
    (y,) = g.outputs
    ref = evaluate(g, make_inputs(g))[y.uid]
    got = ref.astype(np.float32)
    if fault == "unwritten":
        got[1:] = np.nan  # left as the plan found it
    elif fault == "element 0 everywhere":
        got[1:] = got[:1]
    else:
        got[-1] *= -1
    plan = types.SimpleNamespace(graph=g, engine_id=1, knobs={}, numerical_notes=(),
                                 behavior_notes=(), device_id=0, close=lambda: None)  # fmt: skip
    monkeypatch.setattr(run, "driver_status", lambda: types.SimpleNamespace(usable=True))
    monkeypatch.setattr(run, "_execute", lambda *a: {y.uid: got})
    cost = reference_cost(g)
    two = verify_plan(plan, max_reference_cost=cost // 2)  # two batch elements of 4 fit
    assert two.status == "fail", two.describe()
    assert two.reference == "NumPy (float64) on batch elements 0 and 3 of 4"
    one = verify_plan(plan, max_reference_cost=cost // 4)  # one element fits
    assert one.status == "fail", one.describe()
    assert one.reference == "NumPy (float64) on batch element 3 of 4"
    monkeypatch.setattr(run, "_execute", lambda *a: {y.uid: ref.astype(np.float32)})
    assert verify_plan(plan, max_reference_cost=cost // 4).passed


def test_unwritten_elements_are_judged_only_where_the_reference_is_finite() -> None:
    """The elements a sliced reference leaves out must be finite when the compared ones are;
    an output that may legitimately be Inf (its compared reference has one) is judged by the
    compared elements alone, never failed for an Inf elsewhere."""
    from _nvbind.comparison import Tolerance, compare
    from pycudnn.verification.run import _unwritten

    tol = Tolerance(1e-6, False, ())
    finite = np.array([[1.0, 2.0], [5.0, 6.0]])
    got = np.array([[1.0, 2.0], [np.nan, 4.0], [5.0, 6.0]])  # element 1 left unwritten
    check = _unwritten(compare("y", got[[0, 2]], finite, tol), got, finite, (0, 2))
    assert not check.passed and check.nonfinite == 1
    with_inf = np.array([[np.inf, 2.0], [5.0, 6.0]])
    got = np.array([[np.inf, 2.0], [np.inf, 4.0], [5.0, 6.0]])
    check = _unwritten(compare("y", got[[0, 2]], with_inf, tol), got, with_inf, (0, 2))
    assert check.passed, check


def test_a_reference_that_fails_is_not_a_skip() -> None:
    """Only the reference's documented gaps skip a run; a KeyError from a bug in it used to be
    caught as "skipped" and counted with the rest."""
    from pycudnn.verification.common import MissingValuesError, NoReferenceError

    assert issubclass(MissingValuesError, NoReferenceError)
    assert issubclass(MissingValuesError, KeyError)  # as these errors were before
    assert str(MissingValuesError("no values for input tensor 'x'")) == (
        "no values for input tensor 'x'"
    )


def test_write_known_bad_is_checked_before_the_suite_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table that cannot be written failed only after the whole suite (minutes on a GPU),
    with a traceback naming a temporary file, and the report was lost."""
    from pycudnn.cli import main
    from pycudnn.verification import cli as verify_cli

    ran: list[Any] = []
    monkeypatch.setattr(verify_cli, "select_verify_cases", lambda args, *a, **k: cases(True))
    monkeypatch.setattr(verify_cli, "run_suite", lambda **kw: ran.append(kw))
    for target, why in (
        (tmp_path, "is a directory"),
        (tmp_path / "no" / "t.json", "does not exist"),
    ):
        assert main(["verify", "--quick", "--write-known-bad", str(target)]) == 2
        assert why in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["verify", "--quick", "--write-known-bad", str(bad), "--json"]) == 2
    assert "does not parse" in json.loads(capsys.readouterr().out)["error"]
    assert not ran


def test_a_wrong_engine_with_no_operation_to_blame_is_noted_not_a_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from pycudnn.verification import cli as verify_cli

    sdpa = next(c for c in cases() if c.family == "attention")
    failed = VerifyResult(sdpa.name, 7, {}, (), "stand-in", 0)
    failed.status = "fail"
    report = {"cudnn": 92800, "cases": [{"name": sdpa.name, "_results": [failed]}]}
    said = verify_cli._write_known_bad(str(tmp_path / "kb.json"), report)
    assert said == f"added 0 known-bad entries to {tmp_path / 'kb.json'}"
    assert f"not entered: engine 7 of {sdpa.name}" in capsys.readouterr().err


def test_the_verify_report_names_the_device_it_ran_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report gave errors and seconds per engine with the cuDNN version but no GPU or driver:
    a saved report could not say what it was measured on."""
    from _nvbind.report import devices_report
    from pycudnn.cli import main
    from pycudnn.verification import cli as verify_cli

    monkeypatch.setattr(verify_cli, "select_verify_cases", lambda args, *a, **k: cases(True)[:1])
    main(["verify", "--quick", "--no-progress", "--json"])
    report = json.loads(capsys.readouterr().out)
    expected = devices_report()
    assert {k: report.get(k) for k in expected} == expected
