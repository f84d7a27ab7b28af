"""What a verification found: :class:`VerifyResult` and :func:`compare`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from _nvbind.comparison import OutputCheck, compare

__all__ = ["OutputCheck", "VerifyResult", "compare"]


@dataclasses.dataclass
class VerifyResult:
    """The verdict on one plan: its engine, the reference, each output's errors and tolerance.

    ``status`` is ``"pass"``, ``"fail"`` (an output beyond its tolerance, or non-finite),
    ``"error"`` (the plan could not be executed: ``error`` says why) or ``"skipped"`` (no
    reference could be computed, or an output cannot be verified against it, as an fp8 e5m2
    output whose tolerance an all-zero result would meet: ``error`` says why). ``passed`` is
    True only for ``"pass"``.
    """

    graph: str
    engine_id: int | None
    knobs: Mapping[str, int]
    notes: tuple[str, ...]
    reference: str
    seed: int
    outputs: list[OutputCheck] = dataclasses.field(default_factory=list)
    status: str = "pass"
    error: str = ""
    known_bad: str = ""  # the known-bad table entry that covers this engine, if any
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def worst(self) -> OutputCheck | None:
        """The output furthest beyond (or closest to) its tolerance."""

        def ratio(o: OutputCheck) -> float:
            if o.tolerance.exact or o.tolerance.rtol == 0:
                return float("inf") if o.mismatches else 0.0
            return o.max_rel_error / o.tolerance.rtol

        return max(self.outputs, key=ratio, default=None)

    @property
    def max_abs_error(self) -> float:
        """``max |got - ref|`` of :attr:`worst`."""
        return self.worst.max_abs_error if self.worst is not None else 0.0

    @property
    def max_rel_error(self) -> float:
        """The relative error of :attr:`worst`."""
        return self.worst.max_rel_error if self.worst is not None else 0.0

    @property
    def tolerance(self) -> float:
        """The relative tolerance of :attr:`worst` (0 for an exact output)."""
        return self.worst.tolerance.rtol if self.worst is not None else 0.0

    def finish(self) -> VerifyResult:
        """Set ``status`` from the output checks (unless an error was recorded)."""
        if self.status in ("error", "skipped"):
            return self
        if any(o.wrong for o in self.outputs):
            self.status = "fail"
        elif any(o.unverifiable for o in self.outputs):
            self.status = "skipped"
            self.error = "; ".join(
                f"output '{o.name}' ({o.dtype}) not verified: {o.unverifiable}"
                for o in self.outputs
                if o.unverifiable
            )
        else:
            self.status = "pass"
        return self

    def describe(self) -> str:
        knobs = ",".join(f"{k}={v}" for k, v in self.knobs.items())
        head = f"{self.graph}: engine {self.engine_id}" + (f" ({knobs})" if knobs else "")
        if self.status in ("error", "skipped"):
            return f"{head}: {self.status.upper()}: {self.error}"
        verdict = "pass" if self.passed else "WRONG"
        lines = [f"{head}: {verdict} against {self.reference} (seed {self.seed})"]
        lines += [f"  {o.describe()}" for o in self.outputs]
        if self.known_bad:
            lines.append(f"  known bad: {self.known_bad}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | str:
            return x if np.isfinite(x) else str(x)

        return {
            "graph": self.graph,
            "engine_id": self.engine_id,
            "knobs": dict(self.knobs),
            "notes": list(self.notes),
            "status": self.status,
            "passed": self.passed,
            "reference": self.reference,
            "seed": self.seed,
            "max_abs_error": num(self.max_abs_error),
            "max_rel_error": num(self.max_rel_error),
            "tolerance": self.tolerance,
            "error": self.error,
            "known_bad": self.known_bad,
            "seconds": round(self.seconds, 4),
            "outputs": [
                {
                    "name": o.name,
                    "dtype": o.dtype,
                    "max_abs_error": num(o.max_abs_error),
                    "max_rel_error": num(o.max_rel_error),
                    "tolerance": o.tolerance.rtol,
                    "exact": o.tolerance.exact,
                    "tolerance_terms": [list(t) for t in o.tolerance.terms],
                    "nonfinite": o.nonfinite,
                    "mismatches": o.mismatches,
                    "special_mismatches": o.special_mismatches,
                    "compared": o.compared,
                    "passed": o.passed,
                }
                for o in self.outputs
            ],
        }
