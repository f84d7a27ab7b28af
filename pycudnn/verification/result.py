"""What a verification found: :class:`VerifyResult` and :func:`compare`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from .tolerance import Tolerance

__all__ = ["OutputCheck", "VerifyResult", "compare"]


@dataclasses.dataclass(frozen=True)
class OutputCheck:
    """One output tensor compared with its reference."""

    name: str
    dtype: str
    max_abs_error: float  # max |got - ref| (inf when got has NaN/Inf where ref is finite)
    max_rel_error: float  # max_abs_error / max |ref|
    tolerance: Tolerance
    nonfinite: int  # elements that are NaN/Inf in got but finite in ref
    mismatches: int  # elements beyond the tolerance (exact outputs: elements that differ)
    #: Elements where the reference is NaN or +-Inf and ``got`` is not the same special value.
    special_mismatches: int = 0
    #: Elements compared against a finite reference value; 0 means nothing was measured.
    compared: int = -1

    @property
    def passed(self) -> bool:
        if self.nonfinite or self.special_mismatches:
            return False
        if self.compared == 0:
            return False  # a reference non-finite everywhere: nothing was verified
        if self.tolerance.exact:
            return self.mismatches == 0
        return self.max_rel_error <= self.tolerance.rtol

    def describe(self) -> str:
        verdict = "ok" if self.passed else "WRONG"
        extra = f", {self.nonfinite} non-finite" if self.nonfinite else ""
        if self.special_mismatches:
            extra += f", {self.special_mismatches} differ where the reference is NaN/Inf"
        if self.compared == 0:
            verdict = "NOT VERIFIED"
            extra += ", the reference is NaN/Inf everywhere: nothing to compare"
        return (
            f"'{self.name}' ({self.dtype}): {verdict}, max abs {self.max_abs_error:.3g}, "
            f"rel {self.max_rel_error:.3g} (tolerance {self.tolerance.describe()}){extra}"
        )


def compare(name: str, got: Any, ref: np.ndarray, tolerance: Tolerance) -> OutputCheck:
    """Compare ``got`` (any dtype, the reference's shape) with the float64 ``ref``.

    NaN or Inf in ``got`` where the reference is finite is a failure whatever the tolerance: an
    engine that leaves its output unwritten, or overflows, is wrong. Where the reference itself is
    not finite (the inputs are generated so that it never is), ``got`` must hold the same special
    value (NaN for NaN, the same infinity for an infinity), and a reference with no finite element
    at all never passes: the errors measured over no elements would be 0, a vacuous pass.
    """
    if not isinstance(tolerance, Tolerance):
        raise TypeError(
            f"'{name}': tolerance must be a verification.Tolerance, not {type(tolerance).__name__}"
        )
    g = np.asarray(got)
    dtype = g.dtype.name
    g = g.astype(np.float64)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        raise ValueError(f"'{name}': result shape {g.shape} differs from the reference {r.shape}")
    finite = np.isfinite(r)
    compared = int(np.count_nonzero(finite))
    special = ~finite
    same_special = (np.isnan(r) & np.isnan(g)) | (np.isinf(r) & (g == r))
    special_mismatches = int(np.count_nonzero(special & ~same_special))
    bad = finite & ~np.isfinite(g)
    nonfinite = int(np.count_nonzero(bad))
    measured = finite & ~bad
    diff = np.abs(g[measured] - r[measured])  # inf - inf elsewhere would warn
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(r[finite]).max()) if finite.any() else 0.0
    max_rel = max_abs / scale if scale > 0 else max_abs
    if nonfinite:
        max_abs = max_rel = float("inf")
    if tolerance.exact:
        mismatches = int(np.count_nonzero(g[finite] != r[finite])) + nonfinite
    else:
        limit = tolerance.rtol * (scale if scale > 0 else 1.0)
        mismatches = int(np.count_nonzero(diff > limit)) + nonfinite
    mismatches += special_mismatches
    return OutputCheck(
        name,
        dtype,
        max_abs,
        max_rel,
        tolerance,
        nonfinite,
        mismatches,
        special_mismatches,
        compared,
    )


@dataclasses.dataclass
class VerifyResult:
    """The verdict on one plan: its engine, the reference, each output's errors and tolerance.

    ``status`` is ``"pass"``, ``"fail"`` (an output beyond its tolerance, or non-finite),
    ``"error"`` (the plan could not be executed: ``error`` says why) or ``"skipped"`` (no
    reference could be computed: ``error`` says why). ``passed`` is True only for ``"pass"``.
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
        self.status = "pass" if all(o.passed for o in self.outputs) else "fail"
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
