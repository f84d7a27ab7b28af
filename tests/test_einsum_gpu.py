"""GPU tier: ``pycutensor.einsum`` values against ``numpy.einsum`` (``pytest -m gpu``).

The CPU tier (``test_einsum_plan.py``) proves the decomposition with NumPy kernels; here the same
generated expressions (traces, diagonals, ellipses, size-1 broadcasting, mixed dtypes, every
``optimize``) run on cuTENSOR. References are NumPy's in float64/complex128, compared with a
tolerance scaled by the magnitude of the terms summed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_einsum_plan import problems

import pycutensor

pytestmark = pytest.mark.gpu

# By the itemsize of the result's real component (complex64 computes in float32).
TOLERANCE = {2: 4e-3, 4: 2e-5, 8: 1e-12}


def tolerance(dtype: Any) -> float:
    d = np.dtype(dtype)
    return TOLERANCE[d.itemsize // 2 if d.kind == "c" else d.itemsize]


def device(host: np.ndarray, strides: tuple[int, ...] | None = None) -> Any:
    from _nvbind.device_array import DeviceArray

    if strides is None:
        return DeviceArray.from_numpy(np.ascontiguousarray(host))
    d = DeviceArray.empty(host.shape, host.dtype, strides=strides)
    d.copy_from_numpy(host)
    return d


def wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def check(subscripts: Any, arrays: list[np.ndarray], got: np.ndarray, *sublists: Any) -> None:
    if sublists:  # the sublist form: operands interleaved with their sublists
        args: list[Any] = []
        for a, sub in zip(arrays, sublists, strict=False):
            args += [a, sub]
        args += list(sublists[len(arrays) :])
        want = np.einsum(*args)
        ref = np.einsum(*[wide(x) if isinstance(x, np.ndarray) else x for x in args])
        bound = np.einsum(*[abs(wide(x)) if isinstance(x, np.ndarray) else x for x in args])
    else:
        want = np.einsum(subscripts, *arrays)
        ref = np.einsum(subscripts, *(wide(a) for a in arrays))
        bound = np.einsum(subscripts, *(abs(wide(a)) for a in arrays))
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = tolerance(want.dtype)
    assert np.all(abs(wide(got) - ref) <= tol * (bound + 1e-30)), (subscripts, got, ref)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_generated_expressions_match_numpy(
    gpu_device: int, problem: tuple[str, list[np.ndarray], Any]
) -> None:
    subscripts, arrays, optimize = problem
    try:
        np.einsum(subscripts, *arrays)
    except ValueError:
        return  # refused alike: the CPU tier checks that
    if optimize == "path-of-numpy":
        optimize = np.einsum_path(subscripts, *arrays, optimize="greedy")[0]
    got = pycutensor.einsum(subscripts, *(device(a) for a in arrays), optimize=optimize)
    check(subscripts, arrays, got.to_numpy())


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ii->i", [(17, 17)]),
        ("ii", [(17, 17)]),
        ("iij->ji", [(5, 5, 7)]),
        ("ijij->ij", [(3, 4, 3, 4)]),
        ("i...i->...", [(4, 2, 3, 4)]),
        ("ij,kkj->ik", [(6, 5), (4, 4, 5)]),
        ("ii,jj->ij", [(3, 3), (4, 4)]),
        ("ii,ii->", [(9, 9), (9, 9)]),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_traces_and_diagonals(
    gpu_device: int, subscripts: str, shapes: list[tuple[int, ...]], dtype: Any
) -> None:
    rng = np.random.default_rng(7)
    arrays = [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]
    got = pycutensor.einsum(subscripts, *(device(a) for a in arrays))
    check(subscripts, arrays, got.to_numpy())


def test_diagonal_of_a_strided_operand(gpu_device: int) -> None:
    # a Fortran-ordered operand: the diagonal view's stride is the sum of its strides
    rng = np.random.default_rng(8)
    a = rng.uniform(-1, 1, (6, 6, 3))
    d = device(a, strides=(1, 6, 36))
    got = pycutensor.einsum("iij->ij", d)
    check("iij->ij", [a], got.to_numpy())


def test_mixed_dtypes_promote_as_numpy(gpu_device: int) -> None:
    rng = np.random.default_rng(9)
    a = rng.uniform(-1, 1, (8, 5)).astype(np.float16)
    b = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    c = rng.uniform(-1, 1, (4, 3)).astype(np.float64)
    got = pycutensor.einsum("ij,jk,kl->il", device(a), device(b), device(c))
    check("ij,jk,kl->il", [a, b, c], got.to_numpy())
    z = (rng.uniform(-1, 1, (5, 4)) + 1j).astype(np.complex64)
    w = (rng.uniform(-1, 1, (4,)) - 1j).astype(np.complex128)
    got = pycutensor.einsum("ij,j->i", device(z), device(w))
    check("ij,j->i", [z, w], got.to_numpy())


def test_sublist_form_and_explicit_paths(gpu_device: int) -> None:
    rng = np.random.default_rng(10)
    a, b, c = (rng.uniform(-1, 1, s) for s in [(4, 5), (5, 6), (6, 3)])
    got = pycutensor.einsum(device(a), [0, 1], device(b), [1, 2], device(c), [2, 3], [0, 3])
    check(None, [a, b, c], got.to_numpy(), [0, 1], [1, 2], [2, 3], [0, 3])
    path = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")[0]
    for optimize in (False, True, "optimal", path, [(0, 1, 2)]):
        got = pycutensor.einsum("ij,jk,kl->il", device(a), device(b), device(c), optimize=optimize)
        check("ij,jk,kl->il", [a, b, c], got.to_numpy())


def test_out_alpha_beta_with_a_trace(gpu_device: int) -> None:
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (4, 6, 6))
    c = rng.uniform(-1, 1, (4,))
    out = device(c)
    got = pycutensor.einsum("bii->b", device(a), out=out, alpha=2.0, beta=-0.5)
    assert got is out
    want = 2.0 * np.einsum("bii->b", a) - 0.5 * c
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-12, atol=1e-12)


def test_torch_output_takes_the_result_dtype(gpu_device: int) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    dev = f"cuda:{gpu_device}"
    a = torch.rand((5, 5), device=dev, dtype=torch.float16)
    b = torch.rand((5,), device=dev, dtype=torch.float32)
    got = pycutensor.einsum("ii,i->i", a, b)
    assert got.dtype == torch.float32
    torch.cuda.synchronize()
    ah, bh = a.cpu().numpy(), b.cpu().numpy()
    check("ii,i->i", [ah, bh], got.cpu().numpy())


@pytest.mark.parametrize(
    ("subscripts", "shapes", "dtype", "kwargs"),
    [
        ("ij,jk->ik", [(6, 5), (5, 4)], np.float32, {"out_dtype": np.float64}),
        ("ij->ji", [(6, 5)], np.float16, {"out_dtype": np.float64}),  # two widenings, reordered
        ("bii->b", [(3, 4, 4)], np.complex64, {"out_dtype": np.complex128}),
        ("ij,jk->ik", [(6, 5), (5, 4)], np.float32, {"dtype": np.float64}),
        ("ij->ji", [(6, 5)], np.float16, {"dtype": np.float32}),
    ],
)
def test_dtype_and_wider_out(
    gpu_device: int,
    subscripts: str,
    shapes: list[tuple[int, ...]],
    dtype: Any,
    kwargs: dict[str, Any],
) -> None:
    rng = np.random.default_rng(12)
    arrays = [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]
    if np.dtype(dtype).kind == "c":
        arrays = [(a + 1j * a[::-1]).astype(dtype) for a in arrays]
    devs = [device(a) for a in arrays]
    out_dtype = kwargs.get("out_dtype")
    if out_dtype is not None:
        shape = np.einsum(subscripts, *arrays).shape
        out = device(np.zeros(shape, out_dtype))
        got = pycutensor.einsum(subscripts, *devs, out=out, alpha=2.0)
        assert got is out
        want = 2.0 * np.einsum(subscripts, *(wide(a) for a in arrays))
        bound = 2.0 * np.einsum(subscripts, *(abs(wide(a)) for a in arrays))
        tol = tolerance(dtype)  # computed in the operands' type
    else:
        got = pycutensor.einsum(subscripts, *devs, dtype=kwargs["dtype"])
        out_dtype = kwargs["dtype"]
        want = np.einsum(subscripts, *(wide(a) for a in arrays))
        bound = np.einsum(subscripts, *(abs(wide(a)) for a in arrays))
        tol = tolerance(out_dtype)
    host = got.to_numpy()
    assert host.dtype == np.dtype(out_dtype)
    assert np.all(abs(wide(host) - want) <= tol * (bound + 1e-30))
