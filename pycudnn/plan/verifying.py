"""``verify=True`` when planning: plans are executed on seeded inputs and checked before use.

:func:`pycudnn.plan.build` (``verify=True``) returns the first plan, in heuristic order, whose
results agree with the reference (:mod:`pycudnn.verification`); ``build_all`` keeps the plans that
agree; ``autotune`` times only those, and its table shows the others as wrong. Every verdict is
kept in the planning report (``report.verification``), and a wrong plan is closed, never returned.
Verification executes plans, so it needs a GPU: without one, ``verify=True`` is refused before
anything is planned. Plans built for ``device_properties`` are verified on the GPU present (they
execute there when it is the GPU the properties describe; elsewhere they fail to execute, and are
reported and dropped as such).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from _nvbind.cuda import driver_status

from .. import verification
from .execution import Plan
from .report import PlanningReport

if TYPE_CHECKING:  # pragma: no cover
    from ..verification.result import VerifyResult

__all__ = ["check_verify", "verified", "verify_row"]

_log = logging.getLogger("pycudnn")


def _gpu_reason() -> str:
    """Why no GPU can execute plans here ("" when one can)."""
    st = driver_status()
    return "" if st.usable else st.reason or "no usable GPU"


def check_verify(verify: Any) -> bool:
    """The ``verify=`` option, checked: a bool, and a GPU to execute the plans on."""
    if not isinstance(verify, bool):
        raise TypeError(f"verify must be a bool, not {verify!r}")
    reason = _gpu_reason() if verify else ""
    if reason:
        raise RuntimeError(
            f"verify=True executes the plans on a GPU, and none is usable here: {reason}; build "
            "without verify= (deviceless plans too) and call plan.verify() on the target GPU"
        )
    return verify


def verify_plan(plan: Plan, *, seed: int = 0) -> VerifyResult:
    """:func:`pycudnn.verification.run.verify_plan` of one plan."""
    return verification.verify_plan(plan, seed=seed)


def _record(report: PlanningReport | None, plan: Plan, result: VerifyResult) -> None:
    plan.verification = result
    if report is not None:
        report.verification.append(result)
    if result.status == "fail":
        _log.warning("engine %s gives wrong results: %s", plan.engine_id, result.describe())
    elif not result.passed:
        _log.warning("engine %s not verified: %s", plan.engine_id, result.describe())


def verified(
    plans: Sequence[Plan], report: PlanningReport, *, first: bool, seed: int = 0
) -> list[Plan]:
    """The plans whose results agree with the reference, in order (only the first of them when
    ``first``); the others, and those left unchecked after the first, are closed."""
    kept: list[Plan] = []
    for plan in plans:
        if first and kept:
            plan.close()
            continue
        result = verify_plan(plan, seed=seed)
        _record(report, plan, result)
        if result.passed:
            kept.append(plan)
        else:
            plan.close()
    return kept


def verify_row(plan: Plan, report: PlanningReport | None, seed: int = 0) -> str:
    """For autotuning: "" when ``plan`` agrees with the reference, else why not (for its row)."""
    result = verify_plan(plan, seed=seed)
    _record(report, plan, result)
    if result.passed:
        return ""
    if result.status in ("error", "skipped"):
        return f"not verified ({result.status}: {result.error})"
    return (
        f"WRONG against {result.reference}: relative error {result.max_rel_error:.3g} > "
        f"tolerance {result.tolerance:.3g}"
    )
