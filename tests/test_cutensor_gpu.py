"""GPU tier: cuTENSOR operations, plans and einsum against NumPy (``pytest -m gpu``).

Every test here runs real kernels; without a GPU they are skipped with the driver's reason.
References are computed by NumPy in float64/complex128 and compared with a tolerance scaled by
the magnitude of the terms summed (``einsum`` of the absolute values), so the bound holds for any
contraction length.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycutensor
from pycutensor import operations
from pycutensor.errors import ClosedError, CutensorNotSupportedError
from pycutensor.operations import (
    Contraction,
    ContractionTrinary,
    ElementwiseBinary,
    ElementwiseTrinary,
    Permutation,
    Reduction,
)
from pycutensor.plan import Plan, PlanPreference, autotune
from pycutensor.tensor import TensorDescriptor

pytestmark = pytest.mark.gpu

# Relative tolerances per (dtype, compute type): unit roundoff of the arithmetic, with room.
TOLERANCE = {
    "float16": 4e-3,
    "bfloat16": 3e-2,
    "float32": 2e-5,
    "float64": 1e-12,
    "complex64": 2e-5,
    "complex128": 1e-12,
}
# A compute type bounds the precision of the arithmetic (e.g. double data with 32F compute).
COMPUTE_TOLERANCE = {"TF32": 4e-3, "16BF": 3e-2, "16F": 4e-3, "3XTF32": 2e-5, "32F": 2e-5}


def tolerance(dtype: Any, compute: str | None = None) -> float:
    tol = TOLERANCE[np.dtype(dtype).name]
    if compute in COMPUTE_TOLERANCE:
        tol = max(tol, COMPUTE_TOLERANCE[compute])
    return tol


def random(
    shape: tuple[int, ...], dtype: Any, rng: np.random.Generator, low: float = -1.0
) -> np.ndarray:
    x = rng.uniform(low, 1.0, size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(low, 1.0, size=shape)
    return x.astype(dtype)


def device(host: np.ndarray, strides: tuple[int, ...] | None = None) -> Any:
    from _nvbind.device_array import DeviceArray

    if strides is None:
        return DeviceArray.from_numpy(np.ascontiguousarray(host))
    d = DeviceArray.empty(host.shape, host.dtype, strides=strides)
    d.copy_from_numpy(host)
    return d


def wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def assert_close(got: np.ndarray, want: np.ndarray, bound: np.ndarray, tol: float) -> None:
    """``|got - want| <= tol * (bound + max|want|)`` elementwise, bound = |terms| summed."""
    err = np.abs(wide(got) - want)
    limit = tol * (np.abs(bound) + np.max(np.abs(want), initial=0.0)) + 1e-30
    worst = float(np.max(err / limit, initial=0.0))
    assert worst <= 1.0, f"error exceeds the tolerance by {worst:.2f}x (tol {tol:g})"


def padded_strides(shape: tuple[int, ...], order: list[int], pad: list[int]) -> tuple[int, ...]:
    """Element strides laying the dims out in ``order`` (fastest first), each padded by ``pad``."""
    strides = [0] * len(shape)
    acc = 1
    for dim in order:
        strides[dim] = acc
        acc *= shape[dim] + pad[dim]
    return tuple(strides)


# -- handle and plan cache ------------------------------------------------------------------------------
def test_handle_binds_the_current_device(gpu_device: int) -> None:
    from _nvbind.cuda import driver_status

    with pycutensor.Handle(gpu_device) as handle:
        assert handle.device_id == gpu_device
        assert handle.plan_cache_size == 64
        # the driver's answer for this ordinal, asked independently of the handle
        expected = tuple(driver_status().devices[gpu_device]["compute_capability"])
        assert handle.compute_capability == expected
    assert handle.closed
    assert pycutensor.get_handle(gpu_device) is pycutensor.get_handle(gpu_device)


def _gemm(handle: pycutensor.Handle, m: int, n: int, k: int, dtype: Any = np.float32) -> Plan:
    a = TensorDescriptor(handle, (m, k), dtype=dtype)
    b = TensorDescriptor(handle, (k, n), dtype=dtype)
    c = TensorDescriptor(handle, (m, n), dtype=dtype)
    return Contraction(a, "mk", b, "kn", c, "mn").plan()


def test_plan_cache_file_round_trip(gpu_device: int, tmp_path: Path) -> None:
    import os

    if os.environ.get("CUTENSOR_DISABLE_PLAN_CACHE"):
        pytest.skip("CUTENSOR_DISABLE_PLAN_CACHE is set: there is no plan cache to write")
    path = tmp_path / "plans.bin"
    with pycutensor.Handle(gpu_device) as writer:
        plans = [_gemm(writer, 64 + 16 * i, 32, 48) for i in range(3)]  # three cache entries
        writer.write_plan_cache(path)
        for p in plans:
            p.close()
    assert path.stat().st_size > 0
    with pycutensor.Handle(gpu_device) as reader:
        assert reader.read_plan_cache(path) >= 3
    with pycutensor.Handle(gpu_device) as small:
        small.resize_plan_cache(1)  # fewer entries than the file: resized, then read again
        read = small.read_plan_cache(path)
        assert read >= 3
        assert small.plan_cache_size >= read
    with pycutensor.Handle(gpu_device) as other:
        with pytest.raises(FileNotFoundError):
            other.read_plan_cache(tmp_path / "missing.bin")
        with pytest.raises(ValueError, match="between 0"):
            other.resize_plan_cache(-1)


def test_kernel_cache_file_round_trip(gpu_device: int, tmp_path: Path) -> None:
    path = tmp_path / "kernels.bin"
    with pycutensor.Handle(gpu_device) as handle:
        try:
            handle.write_kernel_cache(path)
        except CutensorNotSupportedError as exc:
            pytest.skip(f"cuTENSOR reports JIT kernel caches unsupported here: {exc}")
        assert path.exists()
        handle.read_kernel_cache(path)


def test_jit_plan_computes_the_same(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    if handle.compute_capability < (8, 0):
        pytest.skip("just-in-time compilation needs compute capability 8.0")
    rng = np.random.default_rng(5)
    a, b = random((8, 6, 4), np.float32, rng), random((4, 6, 5), np.float32, rng)
    da, db = device(a), device(b)
    dc = device(np.zeros((8, 5), np.float32))
    op = Contraction(TensorDescriptor.from_array(handle, da), "mhk",
                     TensorDescriptor.from_array(handle, db), "khn",
                     TensorDescriptor.from_array(handle, dc), "mn")  # fmt: skip
    try:
        plan = op.plan(PlanPreference(jit=True))
    except CutensorNotSupportedError as exc:
        pytest.skip(f"cuTENSOR could not JIT-compile here: {exc}")
    plan.execute(da, db, dc)
    want = np.einsum("mhk,khn->mn", wide(a), wide(b))
    assert_close(dc.to_numpy(), want, np.einsum("mhk,khn->mn", abs(wide(a)), abs(wide(b))),
                 tolerance(np.float32))  # fmt: skip


# -- contractions ----------------------------------------------------------------------------------------
def test_guide_contraction(gpu_device: int) -> None:
    # The user guide's C[m,u,n,v] = A[m,h,k,n] B[u,k,v,h], through the object API.
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(0)
    ext = {"m": 24, "u": 20, "n": 16, "v": 12, "h": 8, "k": 10}
    a = random(tuple(ext[c] for c in "mhkn"), np.float32, rng)
    b = random(tuple(ext[c] for c in "ukvh"), np.float32, rng)
    c = random(tuple(ext[c] for c in "munv"), np.float32, rng)
    da, db, dc = device(a), device(b), device(c)
    op = Contraction(TensorDescriptor.from_array(handle, da), "mhkn",
                     TensorDescriptor.from_array(handle, db), "ukvh",
                     TensorDescriptor.from_array(handle, dc), "munv")  # fmt: skip
    assert op.scalar_type == np.float32 and op.compute_type == "32F"
    assert op.flops > 0
    estimate = op.estimate_workspace()
    assert (
        op.estimate_workspace(workspace="min") <= estimate <= op.estimate_workspace(workspace="max")
    )
    plan = op.plan()
    assert plan.required_workspace <= plan.workspace_limit == estimate
    plan.execute(da, db, dc, alpha=1.5, beta=-0.5)
    want = 1.5 * np.einsum("mhkn,ukvh->munv", wide(a), wide(b)) - 0.5 * wide(c)
    bound = 1.5 * np.einsum("mhkn,ukvh->munv", abs(wide(a)), abs(wide(b))) + 0.5 * abs(wide(c))
    assert_close(dc.to_numpy(), want, bound, tolerance(np.float32))
    # the same plan, new data: only pointers change
    a2 = random(a.shape, np.float32, rng)
    da2, dout = device(a2), device(np.zeros_like(c))
    plan.execute(da2, db, dout, dout)
    assert_close(dout.to_numpy(), np.einsum("mhkn,ukvh->munv", wide(a2), wide(b)),
                 np.einsum("mhkn,ukvh->munv", abs(wide(a2)), abs(wide(b))), tolerance(np.float32))  # fmt: skip


def test_launch_takes_every_scalar_after_an_accumulating_execute(gpu_device: int) -> None:
    # A plan keeps its scalars in one host buffer across calls: after execute(beta=1.0), a launch
    # that left beta out would compute alpha A B + C. It is refused, and with both it is exact.
    from cuda.core import Device

    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(3)
    a, b = random((8, 6), np.float32, rng), random((6, 10), np.float32, rng)
    c = random((8, 10), np.float32, rng)
    da, db, dc = device(a), device(b), device(c)
    op = Contraction(TensorDescriptor.from_array(handle, da), "ik",
                     TensorDescriptor.from_array(handle, db), "kj",
                     TensorDescriptor.from_array(handle, dc), "ij")  # fmt: skip
    stream = Device(gpu_device).create_stream()
    with op, op.plan(workspace=0) as plan:
        plan.execute(da, db, dc, alpha=1.0, beta=1.0)
        out = device(np.full((8, 10), 7.0, np.float32))
        ptrs = [da.ptr, db.ptr, out.ptr, out.ptr]
        with pytest.raises(TypeError, match="launch takes the scalars alpha, beta, got 1"):
            plan.launch(ptrs, [2.0], int(stream.handle))
        with pytest.raises(TypeError, match="launch_unchecked takes the scalars alpha, beta"):
            plan.launch_unchecked(ptrs, [2.0], int(stream.handle), 0, 0)
        plan.launch(ptrs, [2.0, 0.0], int(stream.handle))
        stream.sync()
        got = out.to_numpy()
    stream.close()
    want = 2.0 * wide(a) @ wide(b)
    assert_close(got, want, 2.0 * abs(wide(a)) @ abs(wide(b)), tolerance(np.float32))


@pytest.mark.parametrize(
    ("dtype", "compute"),
    [
        (np.float32, None), (np.float32, "TF32"), (np.float32, "3XTF32"), (np.float32, "16BF"),
        (np.float64, None), (np.float64, "32F"), (np.complex64, None), (np.complex128, None),
        (np.float16, None), (ml_dtypes.bfloat16, None),
    ],
)  # fmt: skip
def test_contraction_dtypes_and_compute_types(
    gpu_device: int, dtype: Any, compute: str | None
) -> None:
    rng = np.random.default_rng(1)
    a, b = random((16, 12, 8), dtype, rng), random((12, 10, 8), dtype, rng)
    c = np.zeros((16, 10, 8), dtype)
    da, db, dc = device(a), device(b), device(c)
    operations.contract(da, "ikb", db, "kjb", dc, "ijb", compute_type=compute)
    want = np.einsum("ikb,kjb->ijb", wide(a), wide(b))
    bound = np.einsum("ikb,kjb->ijb", abs(wide(a)), abs(wide(b)))
    assert_close(dc.to_numpy(), want, bound, tolerance(dtype, compute))


def test_scalar_types_follow_the_guide(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    for dtype, scalar in [(np.float16, np.float32), (ml_dtypes.bfloat16, np.float32),
                          (np.float32, np.float32), (np.float64, np.float64),
                          (np.complex64, np.complex64), (np.complex128, np.complex128)]:  # fmt: skip
        d = TensorDescriptor(handle, (4, 4), dtype=dtype)
        assert Contraction(d, "ik", d, "kj", d, "ij").scalar_type == scalar, dtype
        assert Permutation(d, "ij", d, "ji").scalar_type == scalar, dtype


@st.composite
def contraction_problems(draw: st.DrawFn) -> dict[str, Any]:
    labels = "abcdef"
    n = draw(st.integers(2, 6))
    roles = ["ab", "a", "b", "ac", "bc", "abc"]  # contracted (in A, B, or both), free, batch
    role = {x: draw(st.sampled_from(roles)) for x in labels[:n]}
    for required in "abc":  # every tensor gets at least one mode
        if not any(required in r for r in role.values()):
            role[labels[0]] += required
    modes = {t: draw(st.permutations([x for x in labels[:n] if t in role[x]])) for t in "abc"}
    extent = {x: draw(st.integers(1, 5)) for x in labels[:n]}
    dtype = draw(st.sampled_from([np.float32, np.float64, np.complex64, np.float16]))
    layouts = {}
    for t in "abc":
        rank = len(modes[t])
        order = draw(st.permutations(list(range(rank))))
        pad = [draw(st.integers(0, 2)) for _ in range(rank)]
        layouts[t] = (order, pad)
    alpha = draw(st.sampled_from([1.0, 0.5, -2.0]))
    beta = draw(st.sampled_from([0.0, 1.0, -0.75]))
    return {"modes": modes, "extent": extent, "dtype": dtype, "layouts": layouts, "alpha": alpha,
            "beta": beta}  # fmt: skip


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(contraction_problems())
def test_random_contractions_match_numpy(gpu_device: int, problem: dict[str, Any]) -> None:
    rng = np.random.default_rng(2)
    modes, extent, dtype = problem["modes"], problem["extent"], problem["dtype"]
    hosts, devs = {}, {}
    for t in "abc":
        shape = tuple(extent[x] for x in modes[t])
        hosts[t] = random(shape, dtype, rng)
        order, pad = problem["layouts"][t]
        devs[t] = device(hosts[t], padded_strides(shape, order, pad))
    alpha, beta = problem["alpha"], problem["beta"]
    operations.contract(devs["a"], modes["a"], devs["b"], modes["b"], devs["c"], modes["c"],
                        alpha=alpha, beta=beta)  # fmt: skip
    subs = f"{''.join(modes['a'])},{''.join(modes['b'])}->{''.join(modes['c'])}"
    a, b, c = (wide(hosts[t]) for t in "abc")
    want = alpha * np.einsum(subs, a, b) + beta * c
    bound = abs(alpha) * np.einsum(subs, abs(a), abs(b)) + abs(beta) * abs(c)
    assert_close(devs["c"].to_numpy(), want, bound, tolerance(dtype))


def test_column_major_default_equals_explicit_c_order(gpu_device: int) -> None:
    # Reference §13.1: a descriptor with NULL (default) strides is column-major; the same data in
    # C order described with its real strides must give the same result.
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(3)
    a, b = random((6, 5), np.float64, rng), random((5, 4), np.float64, rng)
    fa, fb = device(a, (1, 6)), device(b, (1, 5))  # column-major copies
    ca, cb = device(a), device(b)
    fc, cc = device(np.zeros((6, 4)), (1, 6)), device(np.zeros((6, 4)))
    cm = Contraction(TensorDescriptor(handle, (6, 5), dtype=np.float64), "ik",
                     TensorDescriptor(handle, (5, 4), dtype=np.float64), "kj",
                     TensorDescriptor(handle, (6, 4), dtype=np.float64), "ij")  # fmt: skip
    cm.plan().execute(fa, fb, fc)
    operations.contract(ca, "ik", cb, "kj", cc, "ij")
    # Bounded by the summed |terms| rather than a bare rtol: an entry of a @ b may cancel to
    # nearly zero, where any rounding is a large relative error.
    bound = abs(a) @ abs(b)
    assert_close(fc.to_numpy(), a @ b, bound, tolerance(np.float64))
    assert_close(cc.to_numpy(), a @ b, bound, tolerance(np.float64))


def test_trinary_contraction(gpu_device: int) -> None:
    rng = np.random.default_rng(4)
    a, b, c = (
        random((6, 5), np.float64, rng),
        random((5, 7), np.float64, rng),
        random((7, 4), np.float64, rng),
    )
    d = random((6, 4), np.float64, rng)
    da, db, dc, dd = device(a), device(b), device(c), device(d)
    operations.contract_trinary(da, "ik", db, "kl", dc, "lj", dd, "ij", alpha=2.0, beta=0.5)
    want = 2.0 * np.einsum("ik,kl,lj->ij", a, b, c) + 0.5 * d
    bound = 2.0 * np.einsum("ik,kl,lj->ij", abs(a), abs(b), abs(c)) + 0.5 * abs(d)
    assert_close(dd.to_numpy(), want, bound, tolerance(np.float64))
    handle = pycutensor.get_handle(gpu_device)
    descs = [TensorDescriptor.from_array(handle, x) for x in (da, db, dc, dd)]
    op = ContractionTrinary(descs[0], "ik", descs[1], "kl", descs[2], "lj", descs[3], "ij")
    out = device(np.zeros_like(d))
    op.plan().execute(da, db, dc, dd, out, alpha=1.0, beta=0.0)
    assert_close(out.to_numpy(), np.einsum("ik,kl,lj->ij", a, b, c),
                 np.einsum("ik,kl,lj->ij", abs(a), abs(b), abs(c)), tolerance(np.float64))  # fmt: skip


# -- elementwise, permutation, reduction ------------------------------------------------------------
UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "abs": np.abs,
    "neg": np.negative,
    "exp": np.exp,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "sqrt": lambda x: np.sqrt(np.abs(x)),  # applied to |x| data below
    "floor": np.floor,
}
BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
}  # fmt: skip


@pytest.mark.parametrize("op_a", sorted(UNARY))
@pytest.mark.parametrize("op_ac", sorted(BINARY))
def test_elementwise_binary(gpu_device: int, op_a: str, op_ac: str) -> None:
    rng = np.random.default_rng(6)
    a = random((5, 4, 3), np.float32, rng)
    if op_a == "sqrt":
        a = np.abs(a)
    c = random((3, 5, 4), np.float32, rng)
    da, dc, dd = device(a), device(c), device(np.zeros_like(c))
    operations.elementwise_binary(da, "abc", dc, "cab", out=dd, alpha=1.25, gamma=-0.5,
                                  op_a=op_a, op_ac=op_ac)  # fmt: skip
    a_perm = np.transpose(wide(a), (2, 0, 1))
    want = BINARY[op_ac](1.25 * UNARY[op_a](a_perm), -0.5 * wide(c))
    assert_close(dd.to_numpy(), want, np.zeros_like(want), 1e-5)


def test_elementwise_binary_broadcasts_a_missing_mode(gpu_device: int) -> None:
    rng = np.random.default_rng(7)
    a, c = random((4,), np.float64, rng), random((4, 3), np.float64, rng)
    da, dc = device(a), device(c)
    operations.elementwise_binary(da, "i", dc, "ij", op_ac="mul")  # in place into c
    np.testing.assert_allclose(dc.to_numpy(), a[:, None] * c, rtol=1e-14)


def test_elementwise_trinary(gpu_device: int) -> None:
    rng = np.random.default_rng(8)
    a, b, c = (
        random((4, 5), np.float64, rng),
        random((5, 4), np.float64, rng),
        random((4, 5), np.float64, rng),
    )
    da, db, dc, dd = device(a), device(b), device(c), device(np.zeros_like(c))
    operations.elementwise_trinary(da, "ij", db, "ji", dc, "ij", out=dd, alpha=2.0, beta=-1.0,
                                   gamma=0.5, op_ab="add", op_abc="mul")  # fmt: skip
    np.testing.assert_allclose(dd.to_numpy(), (2.0 * a - b.T) * (0.5 * c), rtol=1e-13)
    handle = pycutensor.get_handle(gpu_device)
    op = ElementwiseTrinary(TensorDescriptor.from_array(handle, da), "ij",
                            TensorDescriptor.from_array(handle, db), "ji",
                            TensorDescriptor.from_array(handle, dc), "ij", op_abc="max")  # fmt: skip
    op.plan().execute(da, db, dc, dd)
    np.testing.assert_allclose(dd.to_numpy(), np.maximum(a + b.T, c), rtol=1e-13)


@pytest.mark.parametrize(
    ("src", "dst", "compute"),
    [(np.float32, np.float32, None), (np.float16, np.float32, None), (np.float32, np.float16, None),
     (np.float64, np.float32, None), (np.complex64, np.complex128, None), (np.float16, np.float16, "16F")],
)  # fmt: skip
def test_permutation_and_conversion(
    gpu_device: int, src: Any, dst: Any, compute: str | None
) -> None:
    rng = np.random.default_rng(9)
    a = random((3, 4, 5, 2), src, rng)
    da, db = device(a), device(np.zeros((5, 2, 3, 4), dst))
    operations.permute(da, "abcd", db, "cdab", alpha=2.0, compute_type=compute)
    want = 2.0 * np.transpose(wide(a), (2, 3, 0, 1))
    tol = max(tolerance(src), tolerance(dst), tolerance(dst, compute))
    assert_close(db.to_numpy(), want, np.zeros_like(want), tol)


def test_permutation_object_api_with_conj(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(10)
    a = random((4, 6), np.complex128, rng)
    da, db = device(a), device(np.zeros((6, 4), np.complex128))
    op = Permutation(TensorDescriptor.from_array(handle, da), "ij",
                     TensorDescriptor.from_array(handle, db), "ji", op_a="conj")  # fmt: skip
    assert op.scalar_type == np.complex128
    plan = op.plan()
    assert plan.required_workspace == 0 and plan.workspace_limit == 0
    plan.execute(da, db, alpha=1j)
    np.testing.assert_allclose(db.to_numpy(), 1j * np.conj(a).T, rtol=1e-14)


@pytest.mark.parametrize("op_reduce", ["add", "max", "min", "mul"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_reduction(gpu_device: int, op_reduce: str, dtype: Any) -> None:
    rng = np.random.default_rng(11)
    a = random((6, 5, 4), dtype, rng)
    if op_reduce == "mul":
        a = (1.0 + 0.1 * a).astype(dtype)  # keep products near 1
    c = random((4, 6), dtype, rng)
    da, dc = device(a), device(c)
    operations.reduce(da, "ikj", dc, "ji", alpha=0.5, beta=2.0, op_reduce=op_reduce)
    reducers: dict[str, Any] = {"add": np.sum, "max": np.max, "min": np.min, "mul": np.prod}
    reduce_fn = reducers[op_reduce]
    reduced = reduce_fn(wide(a), axis=1).T
    want = 0.5 * reduced + 2.0 * wide(c)
    bound = 0.5 * (np.sum(abs(wide(a)), axis=1).T if op_reduce == "add" else abs(reduced))
    assert_close(dc.to_numpy(), want, bound + 2.0 * abs(wide(c)), tolerance(dtype))


def test_reduction_object_api_full_reduction(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(12)
    a = random((7, 9), np.float64, rng)
    da, dc = device(a), device(np.zeros((1,), np.float64))
    # a scalar result: C has no modes (its extent-1 mode is left out by the functions; here the
    # descriptor is built by hand with zero modes and the array is a one-element vector)
    op = Reduction(
        TensorDescriptor.from_array(handle, da),
        "ij",
        TensorDescriptor(handle, (), dtype=np.float64),
        "",
    )
    plan = op.plan()
    plan.execute(da, dc.ptr, dc.ptr, alpha=1.0, beta=0.0)
    assert_close(dc.to_numpy(), np.array([a.sum()]), np.array([abs(a).sum()]), tolerance(a.dtype))


# -- the user guide's NaN rule ------------------------------------------------------------------------
def test_zero_beta_ignores_nan_in_c(gpu_device: int) -> None:
    rng = np.random.default_rng(13)
    a, b = random((8, 6), np.float32, rng), random((6, 5), np.float32, rng)
    c = np.full((8, 5), np.nan, np.float32)
    da, db, dc = device(a), device(b), device(c)
    operations.contract(da, "ik", db, "kj", dc, "ij", alpha=1.0, beta=0.0)
    got = dc.to_numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, wide(a) @ wide(b), rtol=1e-5, atol=1e-5)


def test_zero_alpha_ignores_nan_in_a_and_b(gpu_device: int) -> None:
    rng = np.random.default_rng(14)
    a = np.full((8, 6), np.nan, np.float32)
    b = random((6, 5), np.float32, rng)
    c = random((8, 5), np.float32, rng)
    da, db, dc = device(a), device(b), device(c)
    operations.contract(da, "ik", db, "kj", dc, "ij", alpha=0.0, beta=2.0)
    np.testing.assert_allclose(dc.to_numpy(), 2.0 * c, rtol=1e-6)
    # permutation: "If alpha is zero, A is not read"
    out = device(np.ones((6, 8), np.float32))
    operations.permute(da, "ij", out, "ji", alpha=0.0)
    np.testing.assert_array_equal(out.to_numpy(), np.zeros((6, 8), np.float32))


def test_zero_gamma_ignores_nan_in_c_elementwise(gpu_device: int) -> None:
    rng = np.random.default_rng(15)
    a = random((4, 5), np.float64, rng)
    c = np.full((4, 5), np.nan)
    da, dc, dd = device(a), device(c), device(np.zeros((4, 5)))
    operations.elementwise_binary(da, "ij", dc, "ij", out=dd, alpha=3.0, gamma=0.0)
    np.testing.assert_allclose(dd.to_numpy(), 3.0 * a, rtol=1e-14)


def test_nan_in_a_tensor_propagates(gpu_device: int) -> None:
    rng = np.random.default_rng(16)
    a, b = random((4, 3), np.float64, rng), random((3, 5), np.float64, rng)
    a[2, 1] = np.nan
    da, db, dc = device(a), device(b), device(np.zeros((4, 5)))
    operations.contract(da, "ik", db, "kj", dc, "ij")
    got = dc.to_numpy()
    assert np.isnan(got[2]).all()  # the row that sums over the NaN
    assert np.isfinite(np.delete(got, 2, axis=0)).all()


# -- autotuning, plans, safety --------------------------------------------------------------------------
def test_incremental_autotuning(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(17)
    a, b = random((64, 48, 8), np.float32, rng), random((48, 32, 8), np.float32, rng)
    da, db, dc = device(a), device(b), device(np.zeros((64, 32, 8), np.float32))
    op = Contraction(TensorDescriptor.from_array(handle, da), "mkb",
                     TensorDescriptor.from_array(handle, db), "knb",
                     TensorDescriptor.from_array(handle, dc), "mnb")  # fmt: skip
    pref = PlanPreference(autotune="incremental", incremental_count=3, cache_mode="pedantic")
    start = time.perf_counter()
    plan, times = autotune(op, da, db, dc, preference=pref)
    wall = time.perf_counter() - start
    assert len(times) == 4 and all(t > 0 for t in times)
    # GPU time between events around each execute: never more than the whole call took
    assert sum(times) < wall
    want = np.einsum("mkb,knb->mnb", wide(a), wide(b))
    bound = np.einsum("mkb,knb->mnb", abs(wide(a)), abs(wide(b)))
    assert_close(dc.to_numpy(), want, bound, tolerance(np.float32))
    out = device(np.zeros((64, 32, 8), np.float32))
    plan.execute(da, db, out, out)
    assert_close(out.to_numpy(), want, bound, tolerance(np.float32))


def test_plan_refuses_a_less_aligned_pointer(gpu_device: int) -> None:
    from _nvbind.device_array import DeviceArray

    handle = pycutensor.get_handle(gpu_device)
    a = device(np.ones((8, 8), np.float32))
    b, c = device(np.ones((8, 8), np.float32)), device(np.zeros((8, 8), np.float32))
    plan = Contraction(TensorDescriptor.from_array(handle, a), "ik",
                       TensorDescriptor.from_array(handle, b), "kj",
                       TensorDescriptor.from_array(handle, c), "ij").plan()  # fmt: skip
    assert plan.operation.operands[0].spec.alignment == 256
    big = DeviceArray.empty((80,), np.float32)
    shifted = DeviceArray(big.buffer, (8, 8), np.float32, offset=4)  # 4-byte aligned
    with pytest.raises(ValueError, match="aligned"):
        plan.execute(shifted, b, c)
    # the functions plan again for the alignment they see, and compute correctly
    shifted.copy_from_numpy(np.full((8, 8), 2.0, np.float32))
    operations.contract(shifted, "ik", b, "kj", c, "ij")
    np.testing.assert_allclose(c.to_numpy(), np.full((8, 8), 16.0), rtol=1e-6)


def test_plan_checks_layout_device_and_overlap(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    a, b = device(np.ones((4, 4), np.float32)), device(np.ones((4, 4), np.float32))
    c = device(np.zeros((4, 4), np.float32))
    plan = Contraction(TensorDescriptor.from_array(handle, a), "ik",
                       TensorDescriptor.from_array(handle, b), "kj",
                       TensorDescriptor.from_array(handle, c), "ij").plan()  # fmt: skip
    with pytest.raises(ValueError, match="described for shape"):
        plan.execute(device(np.ones((4, 5), np.float32)), b, c)
    with pytest.raises(TypeError, match="dtype"):
        plan.execute(device(np.ones((4, 4), np.float64)), b, c)
    with pytest.raises(ValueError, match="host memory"):
        plan.execute(np.ones((4, 4), np.float32), b, c)
    with pytest.raises(ValueError, match="overlaps the output"):
        plan.execute(a, b, c, a)
    with pytest.raises(TypeError, match="takes the arrays A, B, C, D"):
        plan.execute(a)
    with pytest.raises(TypeError, match="takes the scalars alpha, beta"):
        plan.execute(a, b, c, gamma=2.0)
    with pytest.raises(ValueError, match="real scalars"):
        plan.execute(a, b, c, alpha=1j)


def test_closed_objects_never_reach_c(gpu_device: int) -> None:
    handle = pycutensor.Handle(gpu_device)
    a = device(np.ones((4, 4), np.float32))
    c = device(np.zeros((4, 4), np.float32))
    desc = TensorDescriptor.from_array(handle, a)
    plan = Contraction(desc, "ik", desc, "kj", desc, "ij").plan()
    plan.close()
    plan.close()  # idempotent
    with pytest.raises(ClosedError):
        plan.execute(a, a, c)
    plan2 = Contraction(desc, "ik", desc, "kj", desc, "ij").plan()
    handle.close()
    with pytest.raises(ClosedError):
        plan2.execute(a, a, c)
    with pytest.raises(ClosedError):
        TensorDescriptor(handle, (2,))


def test_two_devices_are_not_mixed(gpu_device: int) -> None:
    from _nvbind.cuda import driver_status
    from _nvbind.device_array import DeviceArray

    if driver_status().device_count < 2:
        pytest.skip("needs two GPUs")
    a = DeviceArray.from_numpy(np.ones((4, 4), np.float32), device=0)
    b = DeviceArray.from_numpy(np.ones((4, 4), np.float32), device=1)
    with pytest.raises(ValueError, match="is on device 1"):
        pycutensor.einsum("ij,jk->ik", a, b)


# -- einsum ----------------------------------------------------------------------------------------------
def _einsum_check(subscripts: str, *hosts: np.ndarray, **kwargs: Any) -> Any:
    devs = [device(h) for h in hosts]
    got = pycutensor.einsum(subscripts, *devs, **kwargs)
    want = np.einsum(subscripts, *(wide(h) for h in hosts))
    bound = np.einsum(subscripts, *(abs(wide(h)) for h in hosts))
    assert_close(got.to_numpy(), want, bound, tolerance(hosts[0].dtype, kwargs.get("compute_type")))
    return got


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ij,jk->ik", [(33, 17), (17, 9)]),
        ("ij,jk", [(8, 7), (7, 6)]),
        ("mhkn,ukvh->munv", [(6, 5, 4, 3), (7, 4, 2, 5)]),
        ("ijk->kji", [(4, 5, 6)]),  # permutation
        ("ijk->ik", [(4, 5, 6)]),  # reduction
        ("ijk->", [(4, 5, 6)]),  # full reduction
        ("ij,ij->ij", [(5, 6), (5, 6)]),  # elementwise product
        ("ij,j->ij", [(5, 6), (6,)]),  # elementwise with broadcast
        ("i,j->ij", [(5,), (6,)]),  # outer product
        ("ij,jk,kl->il", [(5, 6), (6, 7), (7, 3)]),  # pairwise along a path
        ("abc,cd,de,ea->b", [(3, 4, 5), (5, 6), (6, 2), (2, 3)]),
        ("...ij,...jk->...ik", [(3, 1, 4, 5), (2, 5, 6)]),  # ellipsis + size-1 broadcasting
        ("ij,ij->ij", [(5, 1), (5, 6)]),
        ("bi,bj->bij", [(4, 3), (4, 5)]),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_einsum_matches_numpy(
    gpu_device: int, subscripts: str, shapes: list[tuple[int, ...]], dtype: Any
) -> None:
    rng = np.random.default_rng(18)
    _einsum_check(subscripts, *(random(s, dtype, rng) for s in shapes))


@pytest.mark.parametrize(("dtype", "compute"), [(np.float16, None), (ml_dtypes.bfloat16, None),
                                               (np.float32, "TF32"), (np.float32, "3XTF32")])  # fmt: skip
def test_einsum_low_precision(gpu_device: int, dtype: Any, compute: str | None) -> None:
    rng = np.random.default_rng(19)
    _einsum_check("bik,bkj->bij", random((3, 16, 24), dtype, rng), random((3, 24, 8), dtype, rng),
                  compute_type=compute)  # fmt: skip


def test_einsum_alpha_beta_and_out(gpu_device: int) -> None:
    rng = np.random.default_rng(20)
    a, b, c = (
        random((6, 5), np.float64, rng),
        random((5, 4), np.float64, rng),
        random((6, 4), np.float64, rng),
    )
    for subs, ops_, want in [
        ("ik,kj->ij", (a, b), 2.0 * (a @ b) - 1.0 * c),  # contraction
        ("ij->ij", (c * 3,), 2.0 * 3 * c - 1.0 * c),  # permutation with beta: elementwise
        ("ij,ij->ij", (c, c), 2.0 * c * c - 1.0 * c),  # product with beta: contraction
    ]:
        out = device(c)
        got = pycutensor.einsum(subs, *(device(x) for x in ops_), out=out, alpha=2.0, beta=-1.0)
        assert got is out
        np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-12, atol=1e-12)
    out = device(np.zeros(6))
    pycutensor.einsum("ij->i", device(a), out=out, alpha=0.5)
    # atol: a row sum may cancel to nearly zero
    np.testing.assert_allclose(out.to_numpy(), 0.5 * a.sum(axis=1), rtol=1e-13, atol=1e-13)


def test_einsum_repeated_calls_use_the_cache(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(21)
    shapes = [(12, 10), (10, 8), (8, 6)]
    hosts = [random(s, np.float32, rng) for s in shapes]
    _einsum_check("ij,jk,kl->il", *hosts)
    entries = len(handle._operations)
    for _ in range(3):
        hosts = [random(s, np.float32, rng) for s in shapes]  # new data, same layout
        _einsum_check("ij,jk,kl->il", *hosts)
    assert len(handle._operations) == entries


def test_einsum_on_a_stream(gpu_device: int) -> None:
    from cuda.core import Device

    rng = np.random.default_rng(22)
    a, b = random((16, 8), np.float32, rng), random((8, 4), np.float32, rng)
    stream = Device(gpu_device).create_stream()
    try:
        da, db = device(a), device(b)
        out = device(np.zeros((16, 4), np.float32))
        pycutensor.einsum("ij,jk->ik", da, db, out=out, stream=stream)
        stream.sync()
        np.testing.assert_allclose(out.to_numpy(), a @ b, rtol=1e-5, atol=1e-6)
    finally:
        stream.close()


def test_einsum_refuses_overlap_and_returns_empty_outputs(gpu_device: int) -> None:
    a = device(np.ones((4, 4), np.float32))
    with pytest.raises(ValueError, match="overlaps operand 0"):
        pycutensor.einsum("ij->ji", a, out=a)
    # an empty output needs no cuTENSOR call (cuTENSOR has no empty tensors)
    empty = pycutensor.einsum("ij,jk->ik", device(np.ones((0, 3), np.float32)),
                              device(np.ones((3, 5), np.float32)))  # fmt: skip
    assert empty.shape == (0, 5)


def test_einsum_with_cupy(gpu_device: int) -> None:
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(23)
    a, b = random((7, 5, 3), np.float32, rng), random((3, 5, 4), np.float32, rng)
    got = pycutensor.einsum("ikl,lkj->ij", cp.asarray(a), cp.asarray(b))
    assert isinstance(got, cp.ndarray)
    want = np.einsum("ikl,lkj->ij", wide(a), wide(b))
    bound = np.einsum("ikl,lkj->ij", abs(wide(a)), abs(wide(b)))
    assert_close(cp.asnumpy(got), want, bound, tolerance(np.float32))
    # a transposed (non-contiguous) CuPy view keeps its strides
    at = cp.asarray(random((5, 7), np.float64, rng))
    got = pycutensor.einsum("ji->ij", at.T)
    np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(at))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_einsum_with_torch(gpu_device: int, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    gen = torch.Generator(device=f"cuda:{gpu_device}").manual_seed(0)
    tdtype = getattr(torch, dtype)
    a = torch.rand((4, 16, 24), generator=gen, device=f"cuda:{gpu_device}", dtype=tdtype)
    b = torch.rand((4, 24, 8), generator=gen, device=f"cuda:{gpu_device}", dtype=tdtype)
    got = pycutensor.einsum("bik,bkj->bij", a, b)
    assert isinstance(got, torch.Tensor) and got.dtype == tdtype
    torch.cuda.synchronize()
    ah, bh = a.double().cpu().numpy(), b.double().cpu().numpy()
    want = np.einsum("bik,bkj->bij", ah, bh)
    assert_close(
        got.double().cpu().numpy(),
        want,
        want,
        tolerance(np.dtype(getattr(ml_dtypes, dtype, dtype))),
    )
    # a permuted view goes in with its real strides
    got = pycutensor.einsum("ij->ji", a[0].t())
    torch.cuda.synchronize()
    assert torch.equal(got, a[0])


def test_functions_match_the_object_api(gpu_device: int) -> None:
    # contract() and Contraction+Plan are two routes to the same C calls
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(24)
    a, b = random((9, 7), np.float64, rng), random((7, 5), np.float64, rng)
    da, db = device(a), device(b)
    c1, c2 = device(np.zeros((9, 5))), device(np.zeros((9, 5)))
    operations.contract(da, "ik", db, "kj", c1, "ij")
    Contraction(TensorDescriptor.from_array(handle, da), "ik",
                TensorDescriptor.from_array(handle, db), "kj",
                TensorDescriptor.from_array(handle, c2), "ij").plan().execute(da, db, c2)  # fmt: skip
    np.testing.assert_array_equal(c1.to_numpy(), c2.to_numpy())
    assert_close(c1.to_numpy(), a @ b, abs(a) @ abs(b), tolerance(np.float64))


def test_elementwise_binary_object_api_in_place(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    rng = np.random.default_rng(25)
    a, c = random((6, 3), np.float32, rng), random((3, 6), np.float32, rng)
    da, dc = device(a), device(c)
    op = ElementwiseBinary(TensorDescriptor.from_array(handle, da), "ij",
                           TensorDescriptor.from_array(handle, dc), "ji", op_ac="max")  # fmt: skip
    op.plan().execute(da, dc)  # D omitted: written into C
    np.testing.assert_allclose(dc.to_numpy(), np.maximum(a.T, c), rtol=1e-6)
