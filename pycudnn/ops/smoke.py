"""Checks for ``python -m pycudnn smoke``: a legacy convolution and a softmax against NumPy."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from _nvbind.cuda import gpu_available
from _nvbind.device_array import DeviceArray
from _nvbind.smoke import SkipCheck

from ..tensor import (
    ConvolutionDescriptor,
)
from .activation import softmax_forward
from .convolution import convolution_forward


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
    want = _conv_reference(x, w, 1)
    err = float(np.max(np.abs(got - want)))
    if not np.allclose(got, want, rtol=1e-3, atol=1e-3):
        raise AssertionError(f"convolution differs from NumPy by up to {err:.3g}")
    return {
        "summary": f"3x3 convolution, NCHW float32 {x.shape} -> {got.shape}: max |error| {err:.2g}",
        "max_error": err,
    }


def _smoke_softmax() -> dict[str, Any]:
    _require_gpu()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 10, 3, 3)).astype(np.float32) * 4
    got = softmax_forward(DeviceArray.from_numpy(x)).to_numpy()
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    err = float(np.max(np.abs(got - want)))
    if not np.allclose(got, want, rtol=1e-4, atol=1e-6):
        raise AssertionError(f"softmax differs from NumPy by up to {err:.3g}")
    return {
        "summary": f"channel softmax, float32 {x.shape}: max |error| {err:.2g}",
        "max_error": err,
    }


def smoke_checks() -> list[tuple[str, Callable[[], Any]]]:
    """Checks for ``python -m pycudnn smoke``: a legacy convolution and a softmax against NumPy."""
    return [
        ("legacy convolution (NCHW float32)", _smoke_convolution),
        ("softmax", _smoke_softmax),
    ]
