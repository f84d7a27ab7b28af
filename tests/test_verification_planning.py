"""``verify=True`` in planning and ``Plan.verify``, as far as a CPU can see them: what is refused
before anything runs, the cache keys of verified plans, and what the planning report says. The
runs themselves are in ``tests/test_verify_gpu.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn.plan import PlanningReport
from pycudnn.plan.building import _cache_key
from pycudnn.plan.targets import _target
from pycudnn.verification import VerifyResult, compare, evaluate, make_inputs, tolerance_for
from pycudnn.verification.suite import conv_graph


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def graph() -> pycudnn.Graph:
    return conv_graph("fprop", "NHWC", "float16", "float16", "3x3")


@pytest.mark.parametrize("how", ["build", "build_all"])
def test_verify_needs_a_gpu_and_is_refused_before_planning(how: str, props: Any) -> None:
    from _nvbind.cuda import driver_status

    g = graph()
    with pytest.raises(TypeError, match="verify must be a bool"):
        getattr(g, how)(device_properties=props, verify="yes")
    if driver_status().usable:
        pytest.skip("a GPU is usable here (tests/test_verify_gpu.py covers it)")
    with pytest.raises(RuntimeError, match="none is usable here"):
        getattr(g, how)(device_properties=props, verify=True)
    # The same graph plans without verify (nothing was spoiled by the refusal).
    assert getattr(g, how)(device_properties=props) is not None


def test_a_wrong_first_candidate_is_closed_and_the_next_right_one_returned(
    props: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planning logic of verify=True with real H100 plans; executing them needs a GPU, so
    the verdicts here are stand-ins (the first candidate wrong, the rest right)."""
    from pycudnn.plan import verifying

    seen: list[Any] = []

    def verdict(plan: Any, seed: int = 0) -> VerifyResult:
        seen.append((plan.engine_id, dict(plan.knobs)))
        r = VerifyResult("g", plan.engine_id, plan.knobs, (), "stand-in", seed)
        r.status = "fail" if len(seen) == 1 else "pass"
        return r

    monkeypatch.setattr(verifying, "_gpu_reason", lambda: "")
    monkeypatch.setattr(verifying, "verify_plan", verdict)
    first = graph().build(device_properties=props, cache=False)
    plan = graph().build(device_properties=props, cache=False, verify=True)
    assert seen[0] == (first.engine_id, first.knobs)
    assert (plan.engine_id, plan.knobs) != (first.engine_id, first.knobs)
    assert plan.verification.passed and plan.report is not None
    assert [r.status for r in plan.report.verification] == ["fail", "pass"]
    assert "verification: " in plan.report.describe()
    seen.clear()
    kept = graph().build_all(device_properties=props, verify=True, limit=4)
    assert len(seen) == 4 and len(kept) == 3
    assert all(p.verification.passed for p in kept)
    # A hit in the plan cache for a new graph of the same structure: the verdict is the plan's.
    cache = pycudnn.PlanCache()
    checked = graph().build(device_properties=props, cache=cache, verify=True)
    hit = graph().build(device_properties=props, cache=cache, verify=True)
    assert cache.stats["memory_hits"] == 1 and hit.graph is not checked.graph
    assert hit.verification is checked.verification and hit.verification.passed


def test_verified_plans_have_their_own_cache_keys(props: Any) -> None:
    g = graph()
    target = _target(props, None)
    options = {"heuristics": ("a", "fallback")}
    plain = _cache_key(g, target, options, autotuned=False)
    assert _cache_key(g, target, options, autotuned=False, verified=False) == plain
    assert _cache_key(g, target, options, autotuned=False, verified=True) != plain
    assert _cache_key(g, target, options, autotuned=True, verified=True) not in {
        plain,
        _cache_key(g, target, options, autotuned=False, verified=True),
    }


def test_plan_verify_needs_a_gpu_and_starts_unverified(props: Any) -> None:
    from _nvbind.cuda import driver_status

    plan = graph().build(device_properties=props, cache=False)
    assert plan.verification is None
    if driver_status().usable:
        pytest.skip("a GPU is usable here (tests/test_verify_gpu.py covers it)")
    with pytest.raises(RuntimeError, match="none is usable here"):
        plan.verify()
    assert plan.verification is None


def test_the_planning_report_lists_wrong_engines() -> None:
    g = graph()
    g.signature()
    (y,) = g.outputs
    ref = evaluate(g, make_inputs(g))[y.uid]
    wrong = VerifyResult(g.name, 70, {}, ("TENSOR_CORE",), "NumPy (float64)", 0)
    wrong.outputs.append(compare(y.name, ref * 3, ref, tolerance_for(y, ["TENSOR_CORE"])))
    right = VerifyResult(g.name, 1, {}, (), "NumPy (float64)", 0)
    right.outputs.append(compare(y.name, ref.astype(np.float16), ref, tolerance_for(y)))
    report = PlanningReport(verification=[wrong.finish(), right.finish()])
    text = report.describe()
    assert "verification: " in text and "engine 70" in text and "WRONG" in text
    assert "engine 1:" not in text  # right ones are not listed as problems
