"""Incremental autotuning across calls and the plan-cache requirement, without a GPU: the pure
Python bookkeeping that decides when the functions on arrays plan again, and when a handle has no
plan cache to tune in.

The GPU side (contract() really re-planning, autotune() refusing a handle without a cache) is in
test_cutensor_tuning_gpu.py.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from itertools import count as counter

import pytest

from _nvbind.cuda import driver_status
from pycutensor._capture import capture_state, jit_planning_refusal, tuning_refusal
from pycutensor.handle import plan_cache_unavailable
from pycutensor.plan import IncrementalTuning, PlanPreference, tuning_count


def test_tuning_plans_again_for_each_candidate_then_keeps_the_winner() -> None:
    # incremental_count=3: plan 0 (made with the entry) is candidate 1; calls 2 and 3 plan
    # candidates 2 and 3; call 4 plans once more and gets cuTENSOR's winner; then no more plans.
    made = counter(1)
    tuning = IncrementalTuning(3, 0)
    got = [tuning.next_plan(lambda: next(made)) for _ in range(6)]
    assert got == [1, 2, 3, 3, 3, 3]
    assert tuning.finished and tuning.plans_made == 4 and tuning.plan == 3


def test_tuning_with_one_candidate_plans_once_more() -> None:
    tuning = IncrementalTuning(1, "first")
    assert not tuning.finished
    assert tuning.next_plan(lambda: "winner") == "winner"
    assert tuning.finished
    assert tuning.next_plan(lambda: pytest.fail("planned after tuning finished")) == "winner"


def test_a_failed_plan_is_not_counted() -> None:
    tuning = IncrementalTuning(2, "p0")

    def fail() -> str:
        raise RuntimeError("cutensorCreatePlan failed")

    with pytest.raises(RuntimeError):
        tuning.next_plan(fail)
    assert tuning.plans_made == 1 and tuning.plan == "p0"


def test_threads_make_exactly_count_plans_and_keep_the_last_made() -> None:
    # Plans are made under the tuning's lock: however threads interleave, count more plans are
    # made and the plan kept is the last one made (the winner), not an earlier candidate.
    count = 5
    tuning = IncrementalTuning(count, 0)
    made: list[int] = []
    numbers = counter(1)

    def make() -> int:
        n = next(numbers)
        time.sleep(0.001)  # cutensorCreatePlan releases the GIL: let other threads run meanwhile
        made.append(n)
        return n

    def worker() -> None:
        for _ in range(50):
            tuning.next_plan(make)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert made == list(range(1, count + 1))
    assert tuning.plan == count and tuning.finished


@pytest.mark.parametrize("bad", [0, -1])
def test_tuning_count_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="incremental_count must be between 1"):
        IncrementalTuning(bad, None)


def test_tuning_count_is_the_preferences_when_given() -> None:
    assert tuning_count(PlanPreference(autotune="incremental", incremental_count=7), None) == 7


def test_tuning_count_without_one_needs_cutensors_default() -> None:
    # No guessing (autotune() used to assume 4 while cuTENSOR used its own default).
    with pytest.raises(ValueError, match="incremental_count is not set"):
        tuning_count(PlanPreference(autotune="incremental"), None)


@pytest.mark.parametrize(
    ("variable", "capacity", "expected"),
    [
        (None, 64, None),
        ("0", 64, None),
        ("", 64, None),
        ("1", 64, "CUTENSOR_DISABLE_PLAN_CACHE=1 was set when the handle was created"),
        (" 1\n", 64, "CUTENSOR_DISABLE_PLAN_CACHE=1"),
        (None, 0, "resized to 0 entries"),
        ("1", 0, "CUTENSOR_DISABLE_PLAN_CACHE=1"),
    ],
)
def test_plan_cache_unavailable(variable: str | None, capacity: int, expected: str | None) -> None:
    reason = plan_cache_unavailable(variable, capacity)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


# -- CUDA graph capture: the decisions (the driver query is exercised by the GPU tests) ----------
@pytest.mark.parametrize("state", ["none", "unknown", "active", "invalidated"])
def test_jit_planning_is_allowed_unless_a_blocking_stream_captures(state: str) -> None:
    # "active" cannot come from the legacy stream; only "implicit" (a blocking stream of the
    # context is capturing) makes cutensorCreatePlan's JIT work part of the capture.
    assert jit_planning_refusal(state, jit=True) is None


def test_jit_planning_during_a_blocking_capture_is_refused_with_the_workarounds() -> None:
    message = jit_planning_refusal("implicit", jit=True)
    assert message is not None
    for part in ("must not be captured", "Plan before the capture", "non-blocking", "jit='none'"):
        assert part in message


def test_planning_without_jit_may_be_captured() -> None:
    assert jit_planning_refusal("implicit", jit=False) is None


@pytest.mark.parametrize(("state", "refused"), [("none", False), ("unknown", False),
                                                ("active", True), ("invalidated", True),
                                                ("implicit", True)])  # fmt: skip
def test_tuning_is_refused_on_a_capturing_stream(state: str, refused: bool) -> None:
    assert (tuning_refusal(state, 2, 4) is not None) is refused


def test_tuning_refusal_says_how_many_calls_are_left() -> None:
    message = tuning_refusal("active", 2, 4)
    assert message is not None
    assert "2 of 5 plans made" in message and "call it 3 more times" in message
    assert "call it 1 more time " in (tuning_refusal("active", 4, 4) or "")


def test_capture_state_without_a_context_is_unknown() -> None:
    if driver_status().usable:
        pytest.skip("a GPU is usable here: the GPU tests check the real states")
    if importlib.util.find_spec("cuda.bindings") is None:
        pytest.skip("cuda.bindings is not installed")
    assert capture_state(None) == "unknown"
    assert capture_state(0) == "unknown"
