"""The legacy backward operations against NumPy (GPU tier, ``-m gpu``; written, not yet run on a GPU).

References are derived here from the definitions, in float64 from inputs already rounded to the
tested dtype: the data gradient is the transposed convolution (each output's gradient scattered
back through the filter), the filter gradient the correlation of ``x`` with ``dy``, the bias
gradient the sum of ``dy`` over N and the spatial dims; activation, softmax and pooling gradients
from their derivatives. ``test_references_are_the_adjoints_of_the_forward`` checks the convolution
references against the forward reference on the CPU tier.

Tolerances follow ``test_ops_gpu.py``: convolution gradients against ``eps * (the same sum over
absolute values)``, element-wise results with dtype-aware rtol/atol.

NCHW float16 weight gradients get their own test: on an H100 with cuDNN 9.19 the graph API's engine
70 returned wrong numbers for them (``pycudnn/known_bad.py``), and whether the legacy
``cudnnConvolutionBackwardFilter`` can reach the same kernels is what a GPU run of this file says.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_ops_gpu import (
    BF16,
    EPS,
    FLOAT_TYPES,
    FMA_EPS,
    assert_close,
    assert_within_bound,
    conv_ref,
    dev,
    pool_ref,
    rand,
    sigmoid,
    skip_if_unsupported,
    softmax_ref,
)

from pycudnn import layout, ops
from pycudnn.tensor import ConvolutionDescriptor

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# -- convolution gradient references (float64) --------------------------------------------------


def _windows(
    w_spatial: tuple[int, ...],
    out_spatial: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
) -> Any:
    """For each filter offset, the slices of the padded input it meets (as in ``conv_ref``)."""
    for offs in itertools.product(*(range(e) for e in w_spatial)):
        yield (
            offs,
            tuple(
                slice(o * d, o * d + s * (m - 1) + 1, s)
                for o, d, s, m in zip(offs, dilations, strides, out_spatial, strict=True)
            ),
        )


def dgrad_ref(  # noqa: PLR0917 - mirrors ConvolutionDescriptor's fields
    dy: np.ndarray,
    w: np.ndarray,
    x_shape: tuple[int, ...],
    pads: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int = 1,
) -> np.ndarray:
    """dx: every output's gradient scattered back through the filter (the transposed conv)."""
    dy, w = np.asarray(dy, np.float64), np.asarray(w, np.float64)
    kout, cg = w.shape[:2]
    kg = kout // groups
    dxp = np.zeros((*x_shape[:2], *(e + 2 * p for e, p in zip(x_shape[2:], pads, strict=True))))
    for offs, window in _windows(w.shape[2:], dy.shape[2:], strides, dilations):
        for g in range(groups):
            wg = w[(slice(g * kg, (g + 1) * kg), slice(None), *offs)]
            # One window's slices hit distinct positions, so += through the view adds each once.
            dxp[(slice(None), slice(g * cg, (g + 1) * cg), *window)] += np.einsum(
                "nk...,kc->nc...", dy[:, g * kg : (g + 1) * kg], wg
            )
    return dxp[
        (
            slice(None),
            slice(None),
            *(slice(p, p + e) for p, e in zip(pads, x_shape[2:], strict=True)),
        )
    ]


def wgrad_ref(  # noqa: PLR0917 - mirrors ConvolutionDescriptor's fields
    x: np.ndarray,
    dy: np.ndarray,
    w_shape: tuple[int, ...],
    pads: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int = 1,
) -> np.ndarray:
    """dw: for each filter offset, the correlation of the input it meets with dy."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    xp = np.pad(x, [(0, 0), (0, 0), *((p, p) for p in pads)])
    kout, cg = w_shape[:2]
    kg = kout // groups
    dw = np.zeros(w_shape)
    for offs, window in _windows(w_shape[2:], dy.shape[2:], strides, dilations):
        patch = xp[(slice(None), slice(None), *window)]
        for g in range(groups):
            dyg = dy[:, g * kg : (g + 1) * kg].reshape(dy.shape[0], kg, -1)
            xg = patch[:, g * cg : (g + 1) * cg].reshape(x.shape[0], cg, -1)
            dw[(slice(g * kg, (g + 1) * kg), slice(None), *offs)] = np.einsum(
                "nkp,ncp->kc", dyg, xg
            )
    return dw


def test_references_are_the_adjoints_of_the_forward() -> None:
    # <conv(x, w), dy> = <x, dgrad(dy, w)> = <w, wgrad(x, dy)>: the three references agree.
    rng = np.random.default_rng(0)
    for pads, strides, dilations, groups in [
        ((1, 2), (2, 1), (1, 2), 1),
        ((0, 1), (2, 2), (1, 1), 2),
        ((1, 0, 1), (1, 1, 2), (1, 1, 1), 1),
    ]:
        k = len(pads)
        x = rng.standard_normal((2, 4, *(7 + i for i in range(k))))
        w = rng.standard_normal((6, 4 // groups, *([3] * k)))
        y = conv_ref(x, w, pads, strides, dilations, groups)
        dy = rng.standard_normal(y.shape)
        inner = float(np.sum(y * dy))
        dx = dgrad_ref(dy, w, x.shape, pads, strides, dilations, groups)
        dw = wgrad_ref(x, dy, w.shape, pads, strides, dilations, groups)
        assert np.isclose(float(np.sum(x * dx)), inner, rtol=1e-10)
        assert np.isclose(float(np.sum(w * dw)), inner, rtol=1e-10)


# -- convolution gradients ------------------------------------------------------------------------

PADS, STRIDES, DILATIONS = (1, 2), (2, 1), (1, 2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_backward_data_matches_numpy(gpu_device: int, dtype: np.dtype, fmt: str) -> None:
    x_shape = (2, 8, 9, 11)
    w = rand((16, 8, 3, 3), dtype, 2)
    dy_shape = conv_ref(np.zeros(x_shape), w, PADS, STRIDES, DILATIONS).shape
    dy = rand(dy_shape, dtype, 3)
    conv = ConvolutionDescriptor(PADS, STRIDES, DILATIONS)
    dx = ops.convolution_backward_data(dev(w, fmt), dev(dy, fmt), conv, x_shape=x_shape)
    assert dx.shape == x_shape and dx.dtype == dtype
    if fmt == "NHWC":  # an allocated dx follows dy's memory order
        assert dx.strides == layout.packed_strides(x_shape, "NHWC")
    ref = dgrad_ref(dy, w, x_shape, PADS, STRIDES, DILATIONS)
    bound = dgrad_ref(np.abs(dy), np.abs(w), x_shape, PADS, STRIDES, DILATIONS)
    assert_within_bound(dx.to_numpy(), ref, bound, EPS[np.dtype(dtype)])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_backward_filter_matches_numpy(gpu_device: int, dtype: np.dtype, fmt: str) -> None:
    x = rand((2, 8, 9, 11), dtype, 4)
    w_shape = (16, 8, 3, 3)
    dy = rand(conv_ref(x, np.zeros(w_shape), PADS, STRIDES, DILATIONS).shape, dtype, 5)
    conv = ConvolutionDescriptor(PADS, STRIDES, DILATIONS)
    dw = ops.convolution_backward_filter(dev(x, fmt), dev(dy, fmt), conv, w_shape=w_shape)
    assert dw.shape == w_shape and dw.dtype == dtype
    assert dw.strides == layout.packed_strides(w_shape, fmt)  # KRSC for channels-last x
    ref = wgrad_ref(x, dy, w_shape, PADS, STRIDES, DILATIONS)
    bound = wgrad_ref(np.abs(x), np.abs(dy), w_shape, PADS, STRIDES, DILATIONS)
    assert_within_bound(dw.to_numpy(), ref, bound, EPS[np.dtype(dtype)])


WGRAD_ALGOS = ["heuristic", "find", "algo_0", "algo_1", "algo_3", "fft", "fft_tiling"]
WGRAD_ALGOS += ["winograd_nonfused"]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16], ids=str)
@pytest.mark.parametrize(
    ("channels", "pad", "stride"), [(8, 0, 1), (8, 1, 1), (16, 1, 1), (16, 1, 2), (64, 0, 2)]
)
@pytest.mark.parametrize("algo", WGRAD_ALGOS)
def test_nchw_16_bit_weight_gradients_where_graph_engine_70_was_wrong(  # noqa: PLR0917
    gpu_device: int, dtype: np.dtype, channels: int, pad: int, stride: int, algo: str
) -> None:
    # The configurations of the known-bad entry (C=8 and C=16 wrong there; C=64 stride 2 pad 0
    # right), through every legacy algorithm. An algorithm cuDNN refuses is a skip; a wrong
    # answer is a failure, and would call for a known-bad note on the legacy path too.
    x = rand((2, channels, 10, 10), dtype, 6)
    w_shape = (16, channels, 3, 3)
    pads, strides = (pad, pad), (stride, stride)
    dy = rand(conv_ref(x, np.zeros(w_shape), pads, strides, (1, 1)).shape, dtype, 7)
    conv = ConvolutionDescriptor(pads, strides)
    dw = skip_if_unsupported(
        lambda: ops.convolution_backward_filter(dev(x), dev(dy), conv, w_shape=w_shape, algo=algo),
        f"{dtype} NCHW weight gradients with {algo}",
    )
    got = dw.to_numpy().astype(np.float64)
    assert np.all(np.isfinite(got)), "non-finite weight gradients"
    ref = wgrad_ref(x, dy, w_shape, pads, strides, (1, 1))
    bound = wgrad_ref(np.abs(x), np.abs(dy), w_shape, pads, strides, (1, 1))
    assert_within_bound(got, ref, bound, EPS[np.dtype(dtype)])


@pytest.mark.gpu
def test_grouped_and_3d_gradients_with_fma_math(gpu_device: int) -> None:
    x = rand((2, 6, 8, 8), np.float32, 8)
    w = rand((4, 3, 3, 3), np.float32, 9)
    conv = ConvolutionDescriptor((1, 1), groups=2, math_type="fma")
    dy = rand(conv_ref(x, w, (1, 1), (1, 1), (1, 1), 2).shape, np.float32, 10)
    dx = ops.convolution_backward_data(dev(w), dev(dy), conv, x_shape=x.shape)
    dw = ops.convolution_backward_filter(dev(x), dev(dy), conv, w_shape=w.shape)
    one = (1, 1)
    assert_within_bound(
        dx.to_numpy(),
        dgrad_ref(dy, w, x.shape, one, one, one, 2),
        dgrad_ref(np.abs(dy), np.abs(w), x.shape, one, one, one, 2),
        FMA_EPS,
    )
    assert_within_bound(
        dw.to_numpy(),
        wgrad_ref(x, dy, w.shape, one, one, one, 2),
        wgrad_ref(np.abs(x), np.abs(dy), w.shape, one, one, one, 2),
        FMA_EPS,
    )
    x3 = rand((1, 3, 5, 6, 7), np.float32, 11)
    w3 = rand((2, 3, 3, 3, 3), np.float32, 12)
    p3, s3, d3 = (1, 0, 1), (1, 1, 2), (1, 1, 1)
    conv3 = ConvolutionDescriptor(p3, s3, math_type="fma")
    dy3 = rand(conv_ref(x3, w3, p3, s3, d3).shape, np.float32, 13)
    dx3 = ops.convolution_backward_data(dev(w3), dev(dy3), conv3, x_shape=x3.shape)
    assert_within_bound(
        dx3.to_numpy(),
        dgrad_ref(dy3, w3, x3.shape, p3, s3, d3),
        dgrad_ref(np.abs(dy3), np.abs(w3), x3.shape, p3, s3, d3),
        FMA_EPS,
    )


@pytest.mark.gpu
@pytest.mark.parametrize("algo", [None, "find", "algo_0", "algo_1"])
def test_gradients_blend_alpha_beta(gpu_device: int, algo: Any) -> None:
    # "find" with beta != 0 times the candidates on scratch memory: dx0 must survive it.
    x_shape = (1, 3, 6, 6)
    w = rand((2, 3, 3, 3), np.float32, 14)
    dy = rand((1, 2, 4, 4), np.float32, 15)
    dx0 = rand(x_shape, np.float32, 16)
    dx = dev(dx0)
    conv = ConvolutionDescriptor((0, 0), math_type="fma")
    zero, one = (0, 0), (1, 1)
    out = ops.convolution_backward_data(
        dev(w), dev(dy), conv, dx=dx, alpha=2.0, beta=0.5, algo=algo
    )
    assert out is dx
    ref = 2.0 * dgrad_ref(dy, w, x_shape, zero, one, one) + 0.5 * dx0
    bound = 2.0 * dgrad_ref(np.abs(dy), np.abs(w), x_shape, zero, one, one) + 0.5 * np.abs(dx0)
    assert_within_bound(dx.to_numpy(), ref, bound, FMA_EPS)
    x = rand(x_shape, np.float32, 17)
    dw0 = rand(w.shape, np.float32, 18)
    dw = dev(dw0)
    ops.convolution_backward_filter(dev(x), dev(dy), conv, dw=dw, alpha=-1.0, beta=1.0, algo=algo)
    ref_w = -wgrad_ref(x, dy, w.shape, zero, one, one) + dw0
    bound_w = wgrad_ref(np.abs(x), np.abs(dy), w.shape, zero, one, one) + np.abs(dw0)
    assert_within_bound(dw.to_numpy(), ref_w, bound_w, FMA_EPS)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_backward_bias_sums_over_n_and_space(gpu_device: int, dtype: np.dtype, fmt: str) -> None:
    dy = rand((4, 6, 5, 7), dtype, 19)
    want = dy.astype(np.float64).sum(axis=(0, 2, 3), keepdims=True)
    db = ops.convolution_backward_bias(dev(dy, fmt))
    assert db.shape == (1, 6, 1, 1)
    assert_close(db.to_numpy(), want, dtype, float(np.abs(dy).sum(axis=(0, 2, 3)).max()))
    db0 = rand((1, 6, 1, 1), dtype, 20)
    given = dev(db0)
    ops.convolution_backward_bias(dev(dy, fmt), db=given, alpha=0.5, beta=2.0)
    assert_close(given.to_numpy(), 0.5 * want + 2.0 * db0.astype(np.float64), dtype, 40.0)


# -- activation, softmax, pooling ---------------------------------------------------------------

# (mode, options, forward, derivative from x and y)
ACTIVATIONS: list[tuple[str, dict[str, float], Callable[..., np.ndarray], Callable[..., Any]]] = [
    ("relu", {}, lambda x: np.maximum(x, 0.0), lambda x, y: (x > 0).astype(float)),
    ("sigmoid", {}, sigmoid, lambda x, y: y * (1.0 - y)),
    ("tanh", {}, np.tanh, lambda x, y: 1.0 - y * y),
    (
        "clipped_relu",
        {"coef": 1.5},
        lambda x: np.clip(x, 0.0, 1.5),
        lambda x, y: ((x > 0) & (x < 1.5)).astype(float),
    ),
    (
        "elu",
        {"coef": 0.7},
        lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)),
        lambda x, y: np.where(x > 0, 1.0, 0.7 * np.exp(x)),
    ),
    (
        "swish",
        {"swish_beta": 1.3},
        lambda x: x * sigmoid(1.3 * x),
        lambda x, y: sigmoid(1.3 * x) * (1.0 + 1.3 * x * (1.0 - sigmoid(1.3 * x))),
    ),
    ("identity", {}, lambda x: x, lambda x, y: np.ones_like(x)),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    ("mode", "kwargs", "forward", "derivative"), ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS]
)
def test_activation_backward_matches_numpy(  # noqa: PLR0917 - pytest parameters
    gpu_device: int,
    dtype: np.dtype,
    fmt: str,
    mode: str,
    kwargs: dict[str, float],
    forward: Callable[..., np.ndarray],
    derivative: Callable[..., Any],
) -> None:
    x = rand((2, 3, 4, 5), dtype, 30, -3.0, 3.0)
    # Keep x off the kinks (0 and the clip), where the derivative has no single value.
    x = np.where((np.abs(x) < 0.05) | (np.abs(x - 1.5) < 0.05), dtype.type(0.5), x).astype(dtype)
    y = forward(x.astype(np.float64)).astype(dtype)  # what the forward would have stored
    dy = rand(x.shape, dtype, 31)
    want = dy.astype(np.float64) * derivative(x.astype(np.float64), y.astype(np.float64))
    dx = ops.activation_backward(dev(y, fmt), dev(dy, fmt), dev(x, fmt), mode, **kwargs)
    assert dx.strides == layout.packed_strides(x.shape, fmt)  # x's layout
    assert_close(dx.to_numpy(), want, dtype, 4.0)
    dx0 = rand(x.shape, dtype, 32)
    given = dev(dx0, fmt)
    ops.activation_backward(
        dev(y, fmt), dev(dy, fmt), dev(x, fmt), mode, dx=given, alpha=2.0, beta=-1.0, **kwargs
    )
    assert_close(given.to_numpy(), 2.0 * want - dx0.astype(np.float64), dtype, 8.0)


def softmax_backward_ref(y: np.ndarray, dy: np.ndarray, algorithm: str, mode: str) -> np.ndarray:
    axes = (1,) if mode == "channel" else tuple(range(1, y.ndim))
    if algorithm == "log":  # y = log softmax(x): dx = dy - softmax(x) * sum(dy)
        return dy - np.exp(y) * dy.sum(axis=axes, keepdims=True)
    return y * (dy - (dy * y).sum(axis=axes, keepdims=True))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    ("algorithm", "mode"),
    list(itertools.product(["accurate", "fast", "log"], ["channel", "instance"])),
)
def test_softmax_backward_matches_numpy(
    gpu_device: int, dtype: np.dtype, fmt: str, algorithm: str, mode: str
) -> None:
    x = rand((2, 7, 3, 4), dtype, 40, -4.0, 4.0)
    y = softmax_ref(x.astype(np.float64), algorithm, mode).astype(dtype)
    dy = rand(x.shape, dtype, 41)
    want = softmax_backward_ref(y.astype(np.float64), dy.astype(np.float64), algorithm, mode)
    dx = ops.softmax_backward(dev(y, fmt), dev(dy, fmt), algorithm=algorithm, mode=mode)
    assert_close(dx.to_numpy(), want, dtype, 10.0)


def pool_backward_ref(  # noqa: PLR0917 - mirrors pool_ref
    x: np.ndarray,
    dy: np.ndarray,
    mode: str,
    window: tuple[int, ...],
    pads: tuple[int, ...],
    strides: tuple[int, ...],
) -> np.ndarray:
    """Each output's gradient to its window's maximum (max) or shared over its window (avg)."""
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    spec = [(0, 0), (0, 0), *((p, p) for p in pads)]
    xp = np.pad(x, spec, constant_values=-np.inf)
    y = pool_ref(x, "max", window, pads, strides)
    valid = np.pad(np.ones(x.shape), spec)
    count = np.zeros(dy.shape)
    for _, sl in _windows(window, dy.shape[2:], strides, (1,) * len(window)):
        count += valid[(slice(None), slice(None), *sl)]
    divisor = {"avg_include_padding": float(np.prod(window)), "avg_exclude_padding": count}
    dxp = np.zeros(xp.shape)
    for _, sl in _windows(window, dy.shape[2:], strides, (1,) * len(window)):
        at = (slice(None), slice(None), *sl)
        if mode == "max":  # the inputs are distinct, so each window has one maximum
            dxp[at] += dy * (xp[at] == y)
        else:
            dxp[at] += dy / divisor[mode]
    return dxp[
        (
            slice(None),
            slice(None),
            *(slice(p, p + e) for p, e in zip(pads, x.shape[2:], strict=True)),
        )
    ]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mode", ["max", "avg_include_padding", "avg_exclude_padding"])
def test_pooling_backward_matches_numpy(
    gpu_device: int, dtype: np.dtype, fmt: str, mode: str
) -> None:
    shape = (2, 3, 9, 8)
    # Distinct values (exact in float16 too): max pooling's gradient has one home per window.
    x = (np.random.default_rng(50).permutation(int(np.prod(shape))) / 128.0 - 1.5).astype(dtype)
    x = x.reshape(shape)
    window, pads, strides = (3, 3), (1, 1), (2, 2)
    y = pool_ref(x, mode, window, pads, strides).astype(dtype)
    dy = rand(y.shape, dtype, 51)
    dx = skip_if_unsupported(
        lambda: ops.pooling_backward(
            dev(y, fmt),
            dev(dy, fmt),
            dev(x, fmt),
            mode=mode,
            window=window,
            pads=pads,
            strides=strides,
        ),
        f"{fmt} pooling backward",  # older cuDNN references listed a W stride of 1 as required
    )
    assert dx.strides == layout.packed_strides(shape, fmt)
    assert_close(dx.to_numpy(), pool_backward_ref(x, dy, mode, window, pads, strides), dtype, 4.0)


def _numeric_vjp(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, dy: np.ndarray) -> Any:
    """d/dx of sum(f(x) * dy), by central differences (float64)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1e-6
        grad[i] = float(np.sum((f(x + e) - f(x - e)) * dy)) / 2e-6
    return grad


def test_element_wise_references_are_the_derivatives() -> None:
    # The references above, checked against finite differences of the forward references.
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, (1, 3, 4, 4))
    x = np.where((np.abs(x) < 0.05) | (np.abs(x - 1.5) < 0.05), 0.5, x)
    dy = rng.standard_normal(x.shape)
    for mode, _, forward, derivative in ACTIVATIONS:
        want = _numeric_vjp(forward, x, dy)
        np.testing.assert_allclose(dy * derivative(x, forward(x)), want, atol=1e-6, err_msg=mode)
    for algorithm, mode in itertools.product(["accurate", "log"], ["channel", "instance"]):
        y = softmax_ref(x, algorithm, mode)
        want = _numeric_vjp(lambda v: softmax_ref(v, algorithm, mode), x, dy)  # noqa: B023
        got = softmax_backward_ref(y, dy, algorithm, mode)
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=f"{algorithm} {mode}")
    xs = (rng.permutation(2 * 9 * 8) / 16.0).reshape(1, 2, 9, 8)  # distinct: one max per window
    for mode in ("max", "avg_include_padding", "avg_exclude_padding"):
        args = ((3, 3), (1, 1), (2, 2))
        y = pool_ref(xs, mode, *args)
        dys = rng.standard_normal(y.shape)
        want = _numeric_vjp(lambda v: pool_ref(v, mode, *args), xs, dys)  # noqa: B023
        np.testing.assert_allclose(pool_backward_ref(xs, dys, mode, *args), want, atol=1e-6)
