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
def test_verify_refuses_deviceless_targets_before_planning(how: str, props: Any) -> None:
    g = graph()
    with pytest.raises(ValueError, match="deviceless"):
        getattr(g, how)(device_properties=props, verify=True)
    with pytest.raises(TypeError, match="verify must be a bool"):
        getattr(g, how)(device_properties=props, verify="yes")
    # The same graph plans without verify (nothing was spoiled by the refusal).
    assert getattr(g, how)(device_properties=props) is not None


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
    from pycudnn._shared.cuda import driver_status

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
