"""verification.compare never passes vacuously, and a Tolerance holds only a usable number."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pycudnn.verification import Tolerance, compare

TOL = Tolerance(1e-3, False, (("test", 1e-3),))
EXACT = Tolerance(0.0, True, ())


@pytest.mark.parametrize("fill", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("tol", [TOL, EXACT], ids=["rtol", "exact"])
def test_a_reference_non_finite_everywhere_never_passes(fill: float, tol: Tolerance) -> None:
    ref = np.full((2, 3), fill)
    for got in (np.zeros((2, 3)), np.full((2, 3), 12345.0), ref.copy()):
        check = compare("y", got, ref, tol)
        assert not check.passed, (fill, got)
        assert check.compared == 0
        assert "NOT VERIFIED" in check.describe() and "NaN/Inf everywhere" in check.describe()


def test_where_the_reference_is_special_got_must_match_it() -> None:
    ref = np.array([1.0, 2.0, np.nan, np.inf, -np.inf])
    same = compare("y", ref.copy(), ref, TOL)
    assert same.passed and same.compared == 2 and same.special_mismatches == 0
    for i, wrong in [(2, 0.0), (3, -np.inf), (4, 7.0), (3, np.nan)]:
        got = ref.copy()
        got[i] = wrong
        check = compare("y", got, ref, TOL)
        assert not check.passed and check.special_mismatches == 1, (i, wrong)
        assert "differ where the reference is NaN/Inf" in check.describe()
    # The finite part is still measured as before.
    got = ref.copy()
    got[1] = 2.5
    assert not compare("y", got, ref, TOL).passed


def test_a_finite_comparison_is_unchanged() -> None:
    ref = np.linspace(-1, 1, 10)
    assert compare("y", ref + 1e-5, ref, TOL).passed
    assert not compare("y", ref + 1e-2, ref, TOL).passed
    assert compare("y", ref.astype(np.float16), ref, Tolerance(1e-3, False, ())).passed
    check = compare("y", np.where(ref > 0, np.nan, ref), ref, TOL)
    assert not check.passed and check.nonfinite == 5


@pytest.mark.parametrize(
    ("rtol", "error"),
    [
        (math.nan, ValueError),
        (math.inf, ValueError),
        (-1e-3, ValueError),
        (10**400, ValueError),
        (np.float64("nan"), ValueError),
        (True, TypeError),
        ("1e-3", TypeError),
        (None, TypeError),
        (1j, TypeError),
    ],
)
def test_tolerance_refuses_values_that_cannot_bound_an_error(rtol: object, error: type) -> None:
    with pytest.raises(error, match=r"Tolerance\.rtol"):
        Tolerance(rtol, False, ())  # type: ignore[arg-type]


def test_tolerance_terms_and_exact_are_checked_too() -> None:
    with pytest.raises(ValueError, match=r"Tolerance.terms\[1\]"):
        Tolerance(1e-3, False, (("a", 1e-3), ("b", math.nan)))
    with pytest.raises(TypeError, match=r"Tolerance.terms\[0\] must be a \(name, value\) pair"):
        Tolerance(1e-3, False, ((1e-3,),))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Tolerance\.exact must be a bool"):
        Tolerance(1e-3, "no", ())  # type: ignore[arg-type]
    t = Tolerance(1, False, [("a", 1)])  # type: ignore[arg-type]
    assert t.rtol == 1.0 and isinstance(t.rtol, float) and t.terms == (("a", 1.0),)
    assert Tolerance(0, False, ()).rtol == 0.0  # zero: only an exact match passes


def test_compare_takes_only_a_tolerance() -> None:
    with pytest.raises(TypeError, match=r"'y': tolerance must be a verification\.Tolerance"):
        compare("y", np.zeros(2), np.zeros(2), 1e-3)  # type: ignore[arg-type]


@pytest.mark.parametrize("rtol", [1.0, 1.002, 3.0])
def test_a_tolerance_an_all_zero_output_meets_verifies_nothing(rtol: float) -> None:
    """max |got - ref| / max |ref| is exactly 1 for an all-zero output: at a tolerance of 1 or
    more, what an engine that never wrote its output leaves would pass."""
    ref = np.linspace(-1, 1, 10)
    tol = Tolerance(rtol, False, (("fp8 e5m2 output", rtol),))
    for got in (np.zeros(10), ref / 2, ref.copy()):
        check = compare("o", got, ref, tol)
        assert not check.passed and not check.wrong and check.verdict == "unverified"
        assert "NOT VERIFIED" in check.describe() and "all-zero output" in check.describe()
    # Below 1 the same zeros are wrong, and the reference itself passes.
    tight = Tolerance(0.99, False, ())
    assert compare("o", np.zeros(10), ref, tight).verdict == "fail"
    assert compare("o", ref.copy(), ref, tight).verdict == "pass"
    # Non-finite output is wrong whatever the tolerance.
    assert compare("o", np.full(10, np.nan), ref, tol).verdict == "fail"


def test_a_plan_with_an_unverifiable_output_is_skipped_not_passed() -> None:
    """The plan's verdict: one output shown wrong fails it; otherwise one output that cannot be
    checked makes it "skipped", saying which and why; it never passes."""
    from pycudnn.verification import VerifyResult

    ref = np.linspace(-1, 1, 10)
    loose, tight = Tolerance(1.002, False, ()), Tolerance(0.25, False, ())

    def result(*checks: object) -> VerifyResult:
        r = VerifyResult("fp8", 7, {}, (), "NumPy (float64)", 0)
        r.outputs.extend(checks)  # type: ignore[arg-type]
        return r.finish()

    ok = compare("stats", ref.copy(), ref, tight)
    zeros_o = compare("o", np.zeros(10), ref, loose)
    skipped = result(ok, zeros_o)
    assert skipped.status == "skipped" and not skipped.passed
    assert "output 'o' (float64) not verified" in skipped.error
    assert "SKIPPED" in skipped.describe()
    failed = result(compare("stats", -ref, ref, tight), zeros_o)
    assert failed.status == "fail" and "WRONG" in failed.describe()
    assert result(ok).status == "pass"
