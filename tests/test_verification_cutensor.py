"""pycutensor.verification on the CPU tier: the standard cases obey cuTENSOR's tables, the NumPy
references agree with independent computations (loops, transposes), the tolerances follow the
data and compute types, and the command line lists the cases (and needs a GPU to run them)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from _nvbind.comparison import compare
from _nvbind.dtypes import as_numpy_dtype
from pycutensor.checks import check_operation
from pycutensor.tensor import TensorSpec
from pycutensor.verification import OpSpec, cases, make_operands, reference, tolerance

E = {"m": 3, "n": 4, "k": 5, "b": 2}


@pytest.mark.parametrize("spec", cases(), ids=lambda s: s.name)
def test_every_case_obeys_cutensors_tables(spec: OpSpec) -> None:
    specs = [
        TensorSpec.create(spec.shape(i)[::-1], dtype=as_numpy_dtype(dt))
        for i, dt in enumerate(spec.dtypes)
    ]
    # NumPy arrays are row-major: the array functions describe mode i of the array as the last
    # one in cuTENSOR's column-major order, which is what the reversed extents and modes say.
    check_operation(
        spec.kind,
        specs,
        [m[::-1] for m in spec.modes],
        unary=spec.unary,
        binary=spec.binary,
        compute_type=spec.compute_type,
    )
    ops = make_operands(spec)
    assert [o.shape for o in ops] == [spec.shape(i) for i in range(len(spec.modes))]
    out = reference(spec, ops)
    assert out.shape == spec.shape(len(spec.modes) - 1) and np.isfinite(out).all()


def _loops_contract(a: np.ndarray, b: np.ndarray, modes: tuple[str, str, str], ext: dict) -> Any:
    ma, mb, mc = modes
    out = np.zeros([ext[m] for m in mc], dtype=np.result_type(a, b, np.float64))
    summed = sorted((set(ma) | set(mb)) - set(mc))
    for oi in itertools.product(*(range(ext[m]) for m in mc)):
        fixed = dict(zip(mc, oi, strict=True))
        acc = 0
        for si in itertools.product(*(range(ext[m]) for m in summed)):
            idx = {**fixed, **dict(zip(summed, si, strict=True))}
            acc += a[tuple(idx[m] for m in ma)] * b[tuple(idx[m] for m in mb)]
        out[oi] = acc
    return out


def test_contraction_with_alpha_beta_and_conj_matches_loops() -> None:
    spec = OpSpec("t", "contraction", ("bmk", "knb", "nbm"), E, ("complex64",) * 3,
                  unary=("conj", "identity"), scalars={"alpha": 0.5, "beta": -2.0})  # fmt: skip
    a, b, c = make_operands(spec, seed=1)
    got = reference(spec, [a, b, c])
    want = 0.5 * _loops_contract(np.conj(a), b, ("bmk", "knb", "nbm"), E) - 2.0 * c
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("op", ["add", "mul", "max", "min"])
def test_reduction_matches_loops(op: str) -> None:
    spec = OpSpec("r", "reduction", ("mkn", "nm"), E, ("float32",) * 2, unary=("abs", "identity"),
                  binary=(op,), scalars={"alpha": 2.0, "beta": 1.0})  # fmt: skip
    a, c = make_operands(spec, seed=2)
    got = reference(spec, [a, c])
    fn = {"add": sum, "mul": math.prod, "max": max, "min": min}[op]
    for n, m in itertools.product(range(4), range(3)):
        items = [abs(float(a[m, k, n])) for k in range(5)]
        assert got[n, m] == pytest.approx(2.0 * fn(items) + float(c[n, m]), rel=1e-9)


def test_elementwise_binary_and_trinary_broadcast_like_cutensor() -> None:
    spec = OpSpec("e", "elementwise_binary", ("n", "mn"), E, ("float32",) * 2,
                  unary=("neg", "relu"), binary=("max",), scalars={"alpha": 3.0, "gamma": 0.5})  # fmt: skip
    a, c = make_operands(spec, seed=3)
    got = reference(spec, [a, c])
    for m, n in itertools.product(range(3), range(4)):
        want = max(3.0 * -float(a[n]), 0.5 * max(float(c[m, n]), 0.0))
        assert got[m, n] == pytest.approx(want)
    tri = OpSpec("t", "elementwise_trinary", ("mn", "m", "nm"), E, ("float32",) * 3,
                 unary=("identity", "identity", "sqrt"), binary=("add", "mul"),
                 scalars={"alpha": 1.0, "beta": 2.0, "gamma": 1.0})  # fmt: skip
    a, b, c = make_operands(tri, seed=4)
    assert c.min() > 0  # in sqrt's domain
    got = reference(tri, [a, b, c])
    for n, m in itertools.product(range(4), range(3)):
        want = (float(a[m, n]) + 2.0 * float(b[m])) * math.sqrt(float(c[n, m]))
        assert got[n, m] == pytest.approx(want)


def test_permutation_is_a_scaled_transpose() -> None:
    spec = OpSpec("p", "permutation", ("mkn", "nmk"), E, ("float16", "float32"),
                  scalars={"alpha": -1.5})  # fmt: skip
    a, b = make_operands(spec)
    np.testing.assert_array_equal(
        reference(spec, [a, b]), -1.5 * a.astype(np.float64).transpose(2, 0, 1)
    )


def test_tolerances_follow_data_and_compute_types() -> None:
    by_name = {c.name: c for c in cases()}
    assert tolerance(by_name["tf32-fp32"]).rtol > 10 * tolerance(by_name["gemm-float32"]).rtol
    assert tolerance(by_name["gemm-float64"]).rtol < 1e-12
    fp16 = by_name["gemm-float16"]
    ops = make_operands(fp16)
    ref = reference(fp16, ops)
    assert compare("d", ref.astype(np.float16), ref, tolerance(fp16)).passed
    garbage = ref.astype(np.float16)
    garbage[0, 0] = np.float16(np.nan)
    assert not compare("d", garbage, ref, tolerance(fp16)).passed
    wrong = (ref * 1.1).astype(np.float16)
    assert not compare("d", wrong, ref, tolerance(fp16)).passed


def test_cli_lists_cases_and_needs_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    from _nvbind.cuda import driver_status
    from pycutensor.cli import main

    assert main(["verify", "--list", "--quick"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(cases(quick=True))
    if driver_status().usable:
        pytest.skip("a GPU is usable here (tests/test_verify_gpu.py covers it)")
    assert main(["verify", "--quick"]) == 3  # could not run: no GPU
    assert "none is usable here" in capsys.readouterr().err


def test_a_verify_where_nothing_was_supported_has_not_passed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every run "not supported" (cuTENSOR refused each algorithm) exited 0 with "all right".
    The GPU check and the run itself are stood in for; the verdict is the real one."""
    from pycutensor import verification
    from pycutensor.cli import main

    monkeypatch.setattr(
        verification, "select_verify_cases", lambda args, all_cases, *a, **k: list(all_cases)
    )
    refused = {"algorithm": "default", "status": "not supported", "error": "NOT_SUPPORTED"}
    monkeypatch.setattr(
        verification, "verify_case", lambda spec, seed=0: [{"case": spec.name, **refused}]
    )
    assert main(["verify", "--quick", "--no-progress"]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "(0 compared)" in last and "NOTHING COMPARED" in last


@pytest.mark.parametrize(
    ("result", "rtol", "status"),
    [("right", 1e-3, "pass"), ("zeros", 1e-3, "fail"), ("zeros", 1.0, "not verified")],
)
def test_a_row_is_not_verified_when_its_tolerance_cannot_tell(
    monkeypatch: pytest.MonkeyPatch, result: str, rtol: float, status: str
) -> None:
    """verify_case's rows: a tolerance of 1 or more passes an all-zero result, so such a row is
    "not verified" with the reason, never "pass" (the GPU's execution stood in for by NumPy)."""
    from types import SimpleNamespace

    from _nvbind.comparison import Tolerance
    from pycutensor import verification

    spec = next(s for s in cases() if s.kind == "permutation")
    ref = reference(spec, make_operands(spec))
    got = ref.copy() if result == "right" else np.zeros_like(ref)
    monkeypatch.setattr(verification, "tolerance", lambda s: Tolerance(rtol, False, ()))
    monkeypatch.setattr(verification, "_execute", lambda s, operands, preference: got)
    gpu = SimpleNamespace(compute_capability=(9, 0))
    monkeypatch.setattr(
        verification, "require_cuda_core", lambda: SimpleNamespace(Device=lambda: gpu)
    )
    rows = verification.verify_case(spec)
    assert rows and {r["status"] for r in rows} == {status}
    if status == "not verified":
        assert all("all-zero output would pass" in r["error"] for r in rows)


def test_the_verify_report_names_the_library_and_device_it_ran_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report gave errors and seconds per algorithm with neither the cuTENSOR version nor the
    GPU and driver: a saved report could not say what it was measured on."""
    import json

    import pycutensor
    from _nvbind.report import devices_report
    from pycutensor import verification
    from pycutensor.cli import main

    monkeypatch.setattr(
        verification, "select_verify_cases", lambda args, all_cases, *a, **k: list(all_cases)[:1]
    )
    row = {"algorithm": "default", "status": "pass", "max_rel_error": 0.0, "tolerance": 1e-3}
    monkeypatch.setattr(
        verification, "verify_case", lambda spec, seed=0: [{"case": spec.name, **row}]
    )
    assert main(["verify", "--quick", "--no-progress", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report.get("cutensor") == ".".join(map(str, pycutensor.version_tuple()))
    expected = devices_report()
    assert {k: report.get(k) for k in expected} == expected
