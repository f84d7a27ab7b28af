"""INT8x32 (NC/32HW32) convolutions on a GPU, compared with NumPy.

Integer convolution is exact, so the reference is an int64 cross-correlation computed here with
NumPy, and the inputs are small enough that no output leaves the int8 range (cuDNN's int8 output
would otherwise be rounded and saturated, which the check would then have to model).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import pycudnn
from pycudnn import DeviceArray, layout
from pycudnn.graph import Graph

pytestmark = pytest.mark.gpu


def cross_correlation(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Exact 2-D cross-correlation of x [N, C, H, W] with w [K, C, R, S], unit stride (int64)."""
    x, w = x.astype(np.int64), w.astype(np.int64)
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    r, s = w.shape[2:]
    out_h, out_w = xp.shape[2] - r + 1, xp.shape[3] - s + 1
    out = np.zeros((x.shape[0], w.shape[0], out_h, out_w), np.int64)
    for i, j in itertools.product(range(r), range(s)):
        out += np.einsum("nchw,kc->nkhw", xp[:, :, i : i + out_h, j : j + out_w], w[:, :, i, j])
    return out


def small_int8(rng: np.random.Generator, shape: tuple[int, ...], nonzero: float) -> np.ndarray:
    """Values in {-1, 0, 1}, ``nonzero`` of them non-zero, so that sums stay small."""
    signs = rng.choice(np.array([-1, 1], np.int8), size=shape)
    return np.where(rng.random(shape) < nonzero, signs, 0).astype(np.int8)


def test_int8x32_graph_conv_matches_numpy() -> None:
    n, c, k, hw, pad = 2, 64, 64, 8, 1
    g = Graph("int8x32")
    x = g.tensor((n, c, hw, hw), fmt="NC/32HW32", dtype="int8", name="x")
    w = g.tensor((k, c, 3, 3), fmt="NC/32HW32", dtype="int8", name="w")
    y = g.conv_fprop(x, w, padding=pad)
    plan = g.build(cache=False)
    rng = np.random.default_rng(7)
    xh, wh = small_int8(rng, x.dims, 0.5), small_int8(rng, w.dims, 0.1)
    ref = cross_correlation(xh, wh, pad)
    assert np.abs(ref).max() <= 127, "the inputs must keep the result inside int8"
    assert np.count_nonzero(ref) > ref.size // 2, "a mostly-zero result would check little"
    # The arrays are the packed [N, C/32, H, W, 32] views (layout.to_format lays them out).
    xd = DeviceArray.from_numpy(layout.to_format(xh, "NC/32HW32").reshape(x.array_shape))
    wd = DeviceArray.from_numpy(layout.to_format(wh, "NC/32HW32").reshape(w.array_shape))
    yd = DeviceArray.empty(y.array_shape, np.int8)
    plan.execute({x: xd, w: wd, y: yd})
    got = layout.from_format(yd.to_numpy(), y.dims, "NC/32HW32")
    np.testing.assert_array_equal(got, ref.astype(np.int8))


def test_int8x32_legacy_conv_matches_numpy() -> None:
    n, c, k, hw, pad = 2, 64, 32, 8, 1
    rng = np.random.default_rng(11)
    xh, wh = small_int8(rng, (n, c, hw, hw), 0.5), small_int8(rng, (k, c, 3, 3), 0.1)
    ref = cross_correlation(xh, wh, pad)
    assert np.abs(ref).max() <= 127
    x_view, _ = layout.vectorized_dims_strides(xh.shape, "NC/32HW32")
    w_view, _ = layout.vectorized_dims_strides(wh.shape, "NC/32HW32")
    xd = DeviceArray.from_numpy(layout.to_format(xh, "NC/32HW32").reshape(x_view))
    wd = DeviceArray.from_numpy(layout.to_format(wh, "NC/32HW32").reshape(w_view))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        conv = pycudnn.ConvolutionDescriptor((pad, pad), compute_type=np.int32)
        yd = pycudnn.ops.convolution_forward(xd, wd, conv, fmt="NC/32HW32")
    assert yd.shape == (n, k // 32, hw, hw, 32)
    got = layout.from_format(yd.to_numpy(), (n, k, hw, hw), "NC/32HW32")
    np.testing.assert_array_equal(got, ref.astype(np.int8))
