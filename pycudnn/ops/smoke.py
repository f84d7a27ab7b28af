"""Checks for ``python -m pycudnn smoke``: a legacy convolution and a softmax against NumPy."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from _nvbind.cuda import gpu_available
from _nvbind.device_array import DeviceArray
from _nvbind.smoke import Check, CheckList, SkipCheck

from ..tensor import (
    ConvolutionDescriptor,
)
from .activation import softmax_forward
from .convolution import convolution_forward

# The checks, in the order they run (each added where it is defined).
_CHECKS = CheckList()


def _require_gpu() -> None:
    usable, reason = gpu_available()
    if not usable:
        raise SkipCheck(f"needs a CUDA GPU: {reason}", needs_gpu=True)


def _conv_reference(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Cross-correlation with unit stride, in float64 (for the smoke check only)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k, _, r, s = w.shape
    n, _, hp, wp = xp.shape
    out = np.zeros((n, k, hp - r + 1, wp - s + 1))
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i : i + out.shape[2], j : j + out.shape[3]]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j].astype(np.float64))
    return out


def _compared(
    name: str, what: str, got: np.ndarray, want: np.ndarray, *, tolerance: tuple[float, float]
) -> dict[str, Any]:
    """The check's record once ``got`` is within ``tolerance`` (rtol, atol) of NumPy's ``want``."""
    err = float(np.max(np.abs(got - want)))
    rtol, atol = tolerance
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise AssertionError(f"{name} differs from NumPy by up to {err:.3g}")
    return {"summary": f"{what}: max |error| {err:.2g}", "max_error": err}


@_CHECKS.add("legacy convolution (NCHW float32)")
def _smoke_convolution() -> dict[str, Any]:
    _require_gpu()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        conv = ConvolutionDescriptor((1, 1))
        y = convolution_forward(DeviceArray.from_numpy(x), DeviceArray.from_numpy(w), conv)
    got = y.to_numpy()
    what = f"3x3 convolution, NCHW float32 {x.shape} -> {got.shape}"
    return _compared("convolution", what, got, _conv_reference(x, w, 1), tolerance=(1e-3, 1e-3))


@_CHECKS.add("softmax")
def _smoke_softmax() -> dict[str, Any]:
    _require_gpu()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 10, 3, 3)).astype(np.float32) * 4
    got = softmax_forward(DeviceArray.from_numpy(x)).to_numpy()
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    what = f"channel softmax, float32 {x.shape}"
    return _compared("softmax", what, got, want, tolerance=(1e-4, 1e-6))


def smoke_checks() -> list[tuple[str, Check]]:
    """Checks for ``python -m pycudnn smoke``: a legacy convolution and a softmax against NumPy."""
    return _CHECKS.items()
