"""Comparing a result with a float64 reference: unit roundoffs, :class:`Tolerance`, :func:`compare`.

What both packages' verifications share (``pycudnn.verification`` for plans, ``pycutensor``'s for
contractions and reductions); how a tolerance is built for one operation is each package's own.
The error measure is norm-wise: ``max |got - ref| / max |ref|`` over an output.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

__all__ = [
    "APPROX",
    "SAFETY",
    "TF32",
    "OutputCheck",
    "Tolerance",
    "compare",
    "is_float",
    "unit_roundoff",
]

#: The factor a tolerance's terms are multiplied by: it covers the constant factors of the
#: estimates and leaves garbage (errors near 1, NaN, 1e37) orders of magnitude above it.
SAFETY = 4.0
#: Unit roundoff of TF32 (10 explicit mantissa bits), which tensor cores use for fp32 operands.
TF32 = 2.0**-11
#: Relative error allowed for a GPU's approximate transcendental functions.
APPROX = 2.0**-11


def is_float(dtype: Any) -> bool:
    """A floating-point type, ml_dtypes' ones included (bfloat16's NumPy kind is "V", not "f")."""
    dt: np.dtype = np.dtype(dtype)
    return dt.kind == "f" or dt.name.startswith(("bfloat", "float"))


_BITS = {  # explicit mantissa bits of the floating-point types
    "float64": 52,
    "float32": 23,
    "float16": 10,
    "bfloat16": 7,
    "float8_e4m3fn": 3,
    "float8_e5m2": 2,
    "float8_e8m0fnu": 0,
    "float4_e2m1fn": 1,
}


def _finite_non_negative(value: Any, name: str) -> float:
    """``value`` as a float; a TypeError or ValueError naming ``name`` unless it is a real,
    finite, non-negative number (bools are not numbers here)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        f = float(value)
    except (OverflowError, TypeError):  # 10**400; a complex NumPy scalar
        raise ValueError(f"{name} must be a finite number, got {value!r:.60}") from None
    if not math.isfinite(f) or f < 0:
        raise ValueError(f"{name} must be finite and at least 0, got {f!r}")
    return f


def unit_roundoff(dtype: Any) -> float:
    """``2**-(mantissa bits + 1)`` for a floating-point type; 0 for integers and booleans."""
    dt = np.dtype(dtype)
    if dt.kind in "biu":
        return 0.0
    bits = _BITS.get(dt.name)
    if bits is None:
        raise ValueError(f"no unit roundoff known for {dt.name}")
    return 2.0 ** -(bits + 1)


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """The tolerance on ``max |got - ref| / max |ref|`` for one output, and how it was made."""

    rtol: float
    exact: bool
    terms: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        # A NaN rtol makes every `error <= rtol` False but every `error > limit` False too (an
        # output "failed" with no element beyond the tolerance), an infinite or 10**400 one passes
        # anything (or raises OverflowError deep in compare), a negative one fails everything:
        # refused here, naming the field, so no comparison is made with one.
        object.__setattr__(self, "rtol", _finite_non_negative(self.rtol, "Tolerance.rtol"))
        if not isinstance(self.exact, (bool, np.bool_)):
            raise TypeError(f"Tolerance.exact must be a bool, got {type(self.exact).__name__}")
        object.__setattr__(self, "exact", bool(self.exact))
        try:
            terms = tuple(self.terms)
        except TypeError:
            raise TypeError(
                f"Tolerance.terms must be (name, value) pairs, got {type(self.terms).__name__}"
            ) from None
        checked = []
        for i, term in enumerate(terms):
            if (
                not isinstance(term, (tuple, list))
                or len(term) != 2
                or not isinstance(term[0], str)
            ):
                raise TypeError(f"Tolerance.terms[{i}] must be a (name, value) pair, got {term!r}")
            checked.append((term[0], _finite_non_negative(term[1], f"Tolerance.terms[{i}]")))
        object.__setattr__(self, "terms", tuple(checked))

    def describe(self) -> str:
        if self.exact:
            return "exact (integer or boolean output)"
        parts = " + ".join(f"{name} {value:.2g}" for name, value in self.terms if value)
        return f"{self.rtol:.3g} = {SAFETY:g} x ({parts or '0'})"


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
    def unverifiable(self) -> str:
        """Why this comparison cannot tell a right output from a wrong one; "" when it can.

        A reference with no finite element leaves nothing to measure. A tolerance of 1 or more
        cannot fail an all-zero output (its error is exactly ``max |ref|``), nor one of half the
        reference's size: such a check passes what an engine that never wrote its output
        leaves, so it verifies nothing (an fp8 e5m2 attention output, whose two mantissa bits
        give it a tolerance of about 1, is the case that occurs).
        """
        if self.compared == 0:
            return "the reference is NaN/Inf everywhere: nothing to compare"
        if not self.tolerance.exact and self.tolerance.rtol >= 1.0:
            return (
                f"its tolerance {self.tolerance.rtol:.3g} is not below 1, so an all-zero output "
                "would pass: the comparison cannot tell a right result from a wrong one"
            )
        return ""

    @property
    def wrong(self) -> bool:
        """Shown to be wrong: non-finite where the reference is finite, a special value
        (NaN/Inf) not matched, or an error beyond a tolerance that can tell. Nothing is shown
        against a reference with no finite element (the inputs are made so that it has some)."""
        if self.compared == 0:
            return False
        if self.nonfinite or self.special_mismatches:
            return True
        if self.unverifiable:
            return False
        if self.tolerance.exact:
            return self.mismatches != 0
        return self.max_rel_error > self.tolerance.rtol

    @property
    def verdict(self) -> str:
        """``"pass"``, ``"fail"`` (:attr:`wrong`) or ``"unverified"`` (:attr:`unverifiable`)."""
        if self.wrong:
            return "fail"
        return "unverified" if self.unverifiable else "pass"

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def describe(self) -> str:
        verdict = {"pass": "ok", "fail": "WRONG", "unverified": "NOT VERIFIED"}[self.verdict]
        extra = f", {self.nonfinite} non-finite" if self.nonfinite else ""
        if self.special_mismatches:
            extra += f", {self.special_mismatches} differ where the reference is NaN/Inf"
        if self.unverifiable and not self.wrong:
            extra += f", {self.unverifiable}"
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
