"""Checks run by ``python -m pycutensor smoke``: real cuTENSOR work, or a plain account of what could not run.

Without a GPU the library, its version and compute descriptors, einsum parsing and the validation
tables are still checked; the contraction, elementwise operation and reduction report that they
need a GPU. With one, they run the user guide's 4-mode contraction
``C[m,u,n,v] = A[m,h,k,n] B[u,k,v,h]``, an elementwise operation and a reduction, and compare with
NumPy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from _nvbind.cuda import driver_status
from _nvbind.device_array import DeviceArray
from _nvbind.libinfo import library_check
from _nvbind.smoke import Check, CheckList, SkipCheck

from ._einsum import einsum, parse_einsum
from .handle import Handle, synchronize_stream
from .operations import (
    CONTRACTION_TYPES,
    ELEMENTWISE_BINARY_TYPES,
    PERMUTATION_TYPES,
    REDUCTION_TYPES,
    check_operation,
    elementwise_binary,
    reduce,
)
from .tensor import TensorSpec

__all__ = ["checks"]

# The checks, in the order they run (each added where it is defined).
_CHECKS = CheckList()


@_CHECKS.add("library")
def _library() -> dict[str, Any]:
    return library_check("pycutensor", "cutensor")


@_CHECKS.add("compute descriptors")
def _compute_descriptors() -> str:
    from . import _bindings
    from ._lib import LIB, compute_descriptor

    # Only the descriptors the loaded cuTENSOR has (the newer ones are refused, dated).
    names = [
        s.removeprefix("CUTENSOR_COMPUTE_DESC_")
        for s in _bindings.COMPUTE_DESCRIPTOR_SYMBOLS
        if not LIB.lacks(_bindings.COMPUTE_DESCRIPTOR_SINCE.get(s))
    ]
    ptrs = {n: compute_descriptor(n) for n in names}
    if len(set(ptrs.values())) != len(ptrs):
        raise AssertionError(f"compute descriptors are not distinct: {ptrs}")
    return f"{len(ptrs)} compute descriptors readable: {', '.join(names)}"


_EXPRESSIONS = (
    ("mhkn,ukvh->munv", [(4, 3, 2, 5), (6, 2, 7, 3)]),
    ("...ij,...jk", [(7, 2, 3), (3, 4)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ba", [(2, 3)]),
    ("ij->", [(2, 3)]),
)


@_CHECKS.add("einsum parsing")
def _einsum_parsing() -> str:

    kinds = []
    for subscripts, shapes in _EXPRESSIONS:
        spec = parse_einsum(subscripts, *shapes)
        expected = np.einsum(subscripts, *(np.zeros(s) for s in shapes)).shape
        if spec.output_shape != expected:
            raise AssertionError(
                f"{subscripts}: parsed output shape {spec.output_shape}, NumPy gives {expected}"
            )
        kinds.append(f"{subscripts} ({spec.kind})")
    if parse_einsum("ii->i", (3, 3)).output_shape != (3,):  # a diagonal, as in NumPy
        raise AssertionError("a repeated label within one operand is not parsed as a diagonal")
    return f"{len(kinds)} expressions agree with NumPy's output shapes: {'; '.join(kinds)}"


@_CHECKS.add("validation tables")
def _validation_tables() -> str:

    half = TensorSpec.create((8, 8), dtype=np.float16)
    try:
        check_operation("contraction", [half] * 3, ["ik", "kj", "ij"], compute_type="16F")
    except ValueError as exc:
        if "32F" not in str(exc):
            raise AssertionError(f"the refusal does not quote the table: {exc}") from None
    else:
        raise AssertionError("a float16 contraction with 16F compute was not refused")
    single = TensorSpec.create((8, 8), dtype=np.float32)
    *_, compute = check_operation("contraction", [single] * 3, ["ik", "kj", "ij"])
    if compute != "32F":
        raise AssertionError(f"default compute type for float32 is {compute}, expected 32F")
    rows = {
        "contraction": len(CONTRACTION_TYPES),
        "elementwise binary": len(ELEMENTWISE_BINARY_TYPES),
        "permutation": len(PERMUTATION_TYPES),
        "reduction": len(REDUCTION_TYPES),
    }
    listed = ", ".join(f"{n} {k}" for k, n in rows.items())
    return f"type tables loaded ({listed} combinations); unsupported ones refused in Python"


def _need_gpu(what: str) -> None:
    st = driver_status()
    if not st.usable:
        raise SkipCheck(f"{what} needs a GPU: {st.reason}", needs_gpu=True)


@_CHECKS.add("handle")
def _handle() -> str:
    _need_gpu("cutensorCreate")

    with Handle() as handle:
        return f"cutensorCreate on device {handle.device_id}"


def _tolerance(dtype: Any) -> float:
    return {"float16": 2e-2, "float32": 1e-4, "float64": 1e-10}.get(np.dtype(dtype).name, 1e-4)


def _max_relative_error(got: np.ndarray, want: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def _timed(run: Callable[[], Any], sync: Callable[[], None]) -> float:
    run()  # plans (and caches) on the first call
    sync()
    start = time.perf_counter()
    repeats = 5
    for _ in range(repeats):
        run()
    sync()
    return (time.perf_counter() - start) / repeats


def _measured(
    what: str, run: Callable[[], Any], out: DeviceArray, want: np.ndarray, flops: float = 0.0
) -> dict[str, Any]:
    """Time ``run`` (which writes ``out``) and compare ``out`` with NumPy's ``want``."""
    seconds = _timed(run, lambda: synchronize_stream(0))
    err = _max_relative_error(out.to_numpy(), want)
    if not err <= _tolerance(out.dtype):  # NaN (a NaN in the result) is no pass
        raise AssertionError(f"max relative error {err:.2e} against NumPy")
    rate = f" ({flops / seconds / 1e9:.1f} GFLOP/s)" if flops else ""
    return {
        "summary": f"{what}: max relative error {err:.1e}, {seconds * 1e6:.0f} us per call{rate}",
        "max_relative_error": err,
        "seconds": seconds,
    }


@_CHECKS.add("contraction")
def _contraction() -> dict[str, Any]:
    _need_gpu("the contraction")

    # The user guide's example: C[m,u,n,v] = A[m,h,k,n] B[u,k,v,h] (smaller extents, so that
    # NumPy's reference stays quick).
    rng = np.random.default_rng(0)
    ext = {"m": 48, "u": 40, "n": 32, "v": 24, "h": 16, "k": 20}
    a = rng.standard_normal([ext[c] for c in "mhkn"]).astype(np.float32)
    b = rng.standard_normal([ext[c] for c in "ukvh"]).astype(np.float32)
    want = np.einsum("mhkn,ukvh->munv", a.astype(np.float64), b.astype(np.float64))
    da, db = DeviceArray.from_numpy(a), DeviceArray.from_numpy(b)
    dc = DeviceArray.empty(want.shape, np.float32)
    return _measured(
        "C[m,u,n,v] = A[m,h,k,n] B[u,k,v,h], float32",
        lambda: einsum("mhkn,ukvh->munv", da, db, out=dc, compute_type="32F"),
        dc,
        want,
        flops=2.0 * float(np.prod([ext[c] for c in "munvhk"])),
    )


@_CHECKS.add("elementwise")
def _elementwise() -> dict[str, Any]:
    _need_gpu("the elementwise operation")

    # D[c,b,a] = 2.2 A[a,b,c] + 1.3 C[c,b,a], as in the cutensorCreateElementwiseBinary docs.
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 32, 16)).astype(np.float32)
    c = rng.standard_normal((16, 32, 64)).astype(np.float32)
    want = 2.2 * np.transpose(a, (2, 1, 0)).astype(np.float64) + 1.3 * c
    da, dc = DeviceArray.from_numpy(a), DeviceArray.from_numpy(c)
    dd = DeviceArray.empty(c.shape, np.float32)
    return _measured(
        "D[c,b,a] = 2.2 A[a,b,c] + 1.3 C[c,b,a], float32",
        lambda: elementwise_binary(da, "abc", dc, "cba", out=dd, alpha=2.2, gamma=1.3),
        dd,
        want,
    )


@_CHECKS.add("reduction")
def _reduction() -> dict[str, Any]:
    _need_gpu("the reduction")

    rng = np.random.default_rng(2)
    a = rng.standard_normal((96, 64, 80)).astype(np.float64)
    want = a.sum(axis=1)
    da = DeviceArray.from_numpy(a)
    dc = DeviceArray.zeros(want.shape, np.float64)
    return _measured(
        "C[i,j] = sum_k A[i,k,j], float64", lambda: reduce(da, "ikj", dc, "ij"), dc, want
    )


def checks() -> list[tuple[str, Check]]:
    """The smoke checks in the order they run."""
    return _CHECKS.items()
