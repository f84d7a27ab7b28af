"""The bookkeeping of cuTENSOR's incremental autotuning (``autotune="incremental"``): how many
kernel candidates a preference tries (read back from cuTENSOR when not given), the refusal on a
handle without a plan cache, and :class:`IncrementalTuning`, which tells a caller that keeps one
plan per problem when to plan again. :func:`pycutensor.plan.autotune` runs a whole tuning with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from _nvbind.ffi import UnsupportedByLibraryError
from _nvbind.forksafe import fork_safe_lock

from . import _bindings
from .handle import Handle
from .preference import PlanPreference, PlanPreferenceObject, int_option

__all__ = ["IncrementalTuning", "require_plan_cache", "tuning_count"]

_P = TypeVar("_P")


class IncrementalTuning(Generic[_P]):
    """Where the incremental autotuning of one problem stands, across calls.

    With ``autotune="incremental"`` each ``cutensorCreatePlan`` for the same operation and
    preference makes a plan with the next kernel candidate, whose execute cuTENSOR times in its
    plan cache; after ``count`` candidates the next plan created is the fastest one, from the
    cache. So a caller that keeps one plan per problem (the functions on arrays) must plan again
    on each of the ``count`` calls after the first, then keep the plan: :meth:`next_plan` does
    that bookkeeping. ``plan`` is the first plan, made (and about to be executed) by the caller.

    Thread-safe: plans are made under a lock, so that the plan kept in the end is the last one
    made (the winner), whatever order threads finish in. Pure Python: ``make`` creates the plan.
    """

    __slots__ = ("__weakref__", "_lock", "count", "plan", "plans_made")

    def __init__(self, count: int, plan: _P) -> None:
        self.count = int_option(count, "incremental_count", 1)
        self.plan = plan
        self.plans_made = 1
        self._lock = fork_safe_lock(self, "_lock")  # made once per problem, never per call

    @property
    def finished(self) -> bool:
        """True once ``count`` candidates were planned and the winner after them."""
        return self.plans_made > self.count

    def next_plan(self, make: Callable[[], _P]) -> _P:
        """The plan to execute now: a new one from ``make`` while tuning is unfinished (it becomes
        :attr:`plan`), else the plan kept."""
        with self._lock:
            if self.plans_made > self.count:
                return self.plan
            plan = make()
            self.plans_made += 1
            self.plan = plan  # the previous plan goes when its last user drops it
            return plan


def tuning_count(preference: PlanPreference, preference_object: PlanPreferenceObject | None) -> int:
    """How many kernel candidates incremental autotuning with ``preference`` tries.

    ``incremental_count`` when given; otherwise cuTENSOR's default, read back from the C object
    (``cutensorPlanPreferenceGetAttribute(CUTENSOR_PLAN_PREFERENCE_INCREMENTAL_COUNT)``, cuTENSOR
    2.4 or newer): guessing it would stop tuning early, or plan the winner too late.
    """
    if preference.incremental_count is not None:
        return int(preference.incremental_count)
    if preference_object is None:
        raise ValueError(
            "incremental_count is not set and there is no preference object to read cuTENSOR's "
            "default from"
        )
    try:
        count = preference_object.get(int(_bindings.CUTENSOR_PLAN_PREFERENCE_INCREMENTAL_COUNT))
    except UnsupportedByLibraryError as exc:
        raise ValueError(
            "set PlanPreference(incremental_count=...): this cuTENSOR cannot report its default "
            f"count (cutensorPlanPreferenceGetAttribute needs cuTENSOR 2.4): {exc}"
        ) from exc
    return max(int(count), 1)


def require_plan_cache(handle: Handle, what: str) -> None:
    """Refuse incremental autotuning on a handle without a plan cache: cuTENSOR would hand out
    untuned candidates (nothing to learn the timings in) that would pass for tuned plans."""
    reason = handle.plan_cache_unavailable
    if reason is not None:
        raise ValueError(
            f"{what} needs cuTENSOR's plan cache (it keeps the candidates' timings and the winning "
            f"kernel), but this handle has none: {reason}"
        )
