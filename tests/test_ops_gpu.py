"""Legacy operations (pycudnn.ops).

CPU tier: argument validation that happens before any GPU work. GPU tier (``-m gpu``): every
operation against NumPy references computed here in float64, in float32 and float16 (bfloat16
where cuDNN's legacy API supports it), NCHW and NHWC.

Tolerances: convolutions are checked against ``eps * sum(|x| * |w|)`` per output (the classic
bound for a dot product), with ``eps`` covering TF32 (cuDNN may use it for float32 on Ampere and
later), float16 and bfloat16 output rounding; element-wise results use dtype-aware rtol/atol.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pycudnn
from _nvbind.arrays import ArrayView
from _nvbind.cuda import driver_status
from pycudnn import DeviceArray, layout, ops
from pycudnn.tensor import ConvolutionDescriptor, TensorCoreWarning
from pycudnn.tensor import _common as tensor_common

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_TYPES = [np.dtype(np.float32), np.dtype(np.float16)]
EPS = {
    np.dtype(np.float32): 4e-3,
    np.dtype(np.float16): 1e-2,
    BF16: 3e-2,
    np.dtype(np.float64): 1e-10,
}
RTOL = {
    np.dtype(np.float32): 1e-4,
    np.dtype(np.float16): 1e-2,
    BF16: 3e-2,
    np.dtype(np.float64): 1e-10,
}
ATOL = {
    np.dtype(np.float32): 1e-5,
    np.dtype(np.float16): 2e-3,
    BF16: 2e-2,
    np.dtype(np.float64): 1e-12,
}
# float32 without TF32 (math_type="fma"): heuristics may pick Winograd or FFT kernels, a little
# less exact than a plain dot product.
FMA_EPS = 1e-4


# -- CPU tier: validation before any GPU work ---------------------------------------------------

HOST = np.zeros((2, 3, 4, 4), np.float32)
CALLS: list[tuple[str, Callable[..., Any]]] = [
    ("convolution_forward", lambda x: ops.convolution_forward(x, x)),
    ("add_tensor", lambda x: ops.add_tensor(x, x)),
    ("activation_forward", lambda x: ops.activation_forward(x)),
    ("softmax_forward", lambda x: ops.softmax_forward(x)),
    ("pooling_forward", lambda x: ops.pooling_forward(x)),
    ("transform_tensor", lambda x: ops.transform_tensor(x, "NHWC")),
    ("op_tensor", lambda x: ops.op_tensor(x, x)),
    ("reduce_tensor", lambda x: ops.reduce_tensor(x)),
    (
        "convolution_backward_data",
        lambda a: ops.convolution_backward_data(a, a, x_shape=HOST.shape),
    ),
    ("convolution_backward_filter", lambda a: ops.convolution_backward_filter(a, a, w_shape=(1,))),
    ("convolution_backward_bias", lambda a: ops.convolution_backward_bias(a)),
    ("activation_backward", lambda a: ops.activation_backward(a, a, a)),
    ("softmax_backward", lambda a: ops.softmax_backward(a, a)),
    ("pooling_backward", lambda a: ops.pooling_backward(a, a, a)),
]


@pytest.mark.parametrize(("name", "call"), CALLS)
def test_host_memory_is_refused_before_cudnn(name: str, call: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match=r"host memory.*DeviceArray\.from_numpy"):
        call(HOST)


@pytest.mark.parametrize(("name", "call"), CALLS)
def test_non_arrays_are_type_errors(name: str, call: Callable[..., Any]) -> None:
    with pytest.raises(TypeError):
        call(42)


def test_bad_handles_and_options_are_refused_first() -> None:
    with pytest.raises(TypeError, match="Handle"):
        ops.softmax_forward(HOST, handle="handle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="algorithm"):
        ops.softmax_forward(HOST, algorithm="fastest")
    with pytest.raises(ValueError, match="mode"):
        ops.softmax_forward(HOST, mode="spatial")
    with pytest.raises(ValueError, match="mode"):
        ops.activation_forward(HOST, "gelu")
    with pytest.raises(ValueError, match="smaller than window"):
        ops.pooling_forward(HOST, window=(2, 2), pads=(2, 2))
    with pytest.raises(ValueError):
        ops.pooling_forward(HOST, mode="median")


def test_without_a_gpu_device_arrays_reach_cudnns_not_initialized_error() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a usable GPU")
    fake = ArrayView(0x10000, (2, 3, 4, 4), (48, 16, 4, 1), np.dtype(np.float32), 0, False, None)
    with pytest.raises(pycudnn.CudnnNotInitializedError, match="cudaGetDeviceCount"):
        ops.activation_forward(fake)


# -- NumPy references (float64) ------------------------------------------------------------------


def conv_ref(  # noqa: PLR0917 - mirrors ConvolutionDescriptor's fields
    x: np.ndarray,
    w: np.ndarray,
    pads: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int = 1,
    mode: str = "cross_correlation",
) -> np.ndarray:
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    k = len(pads)
    if mode == "convolution":  # true convolution flips the filter
        w = w[(slice(None), slice(None), *([slice(None, None, -1)] * k))]
    xp = np.pad(x, [(0, 0), (0, 0), *((p, p) for p in pads)])
    n = x.shape[0]
    kout, cg = w.shape[:2]
    kg = kout // groups
    out_sp = [
        (xp.shape[2 + i] - (dilations[i] * (w.shape[2 + i] - 1) + 1)) // strides[i] + 1
        for i in range(k)
    ]
    out = np.zeros((n, kout, *out_sp))
    for offs in itertools.product(*(range(e) for e in w.shape[2:])):
        window = tuple(
            slice(o * d, o * d + s * (m - 1) + 1, s)
            for o, d, s, m in zip(offs, dilations, strides, out_sp, strict=True)
        )
        patch = xp[(slice(None), slice(None), *window)]
        for g in range(groups):
            wg = w[(slice(g * kg, (g + 1) * kg), slice(None), *offs)]
            out[:, g * kg : (g + 1) * kg] += np.einsum(
                "nc...,kc->nk...", patch[:, g * cg : (g + 1) * cg], wg
            )
    return out


def assert_within_bound(got: Any, ref: np.ndarray, bound: np.ndarray, eps: float) -> None:
    err = np.abs(np.asarray(got, np.float64) - ref)
    limit = eps * bound + 1e-6
    worst = np.unravel_index(np.argmax(err - limit), err.shape)
    assert np.all(err <= limit), f"error {err[worst]:.3g} > {limit[worst]:.3g} at {worst}"


def assert_close(got: Any, ref: np.ndarray, dtype: np.dtype, scale: float = 1.0) -> None:
    dt = np.dtype(dtype)
    np.testing.assert_allclose(
        np.asarray(got, np.float64), ref, rtol=RTOL[dt], atol=ATOL[dt] * max(scale, 1.0)
    )


def rand(
    shape: tuple[int, ...], dtype: Any, seed: int = 0, low: float = -2.0, high: float = 2.0
) -> np.ndarray:
    """Random values already rounded to ``dtype``: references start from exactly these."""
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, shape).astype(dtype)


def dev(a: np.ndarray, fmt: str | None = None) -> DeviceArray:
    """``a`` on the GPU in layout ``fmt`` (default: C order)."""
    if fmt is None:
        return DeviceArray.from_numpy(a)
    d = DeviceArray.empty(a.shape, a.dtype, fmt=fmt)
    d.copy_from_numpy(a)
    return d


def skip_if_unsupported(call: Callable[[], Any], what: str) -> Any:
    """Run ``call``; a configuration cuDNN reports NOT_SUPPORTED on this GPU is a skip naming it.

    Only NOT_SUPPORTED: a BAD_PARAM means the binding passed cuDNN something wrong, which is a
    failure, not a property of the GPU.
    """
    try:
        return call()
    except pycudnn.CudnnNotSupportedError as exc:
        pytest.skip(f"cuDNN does not support {what} here: {exc}")


# -- convolution -----------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [*FLOAT_TYPES, BF16], ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_convolution_matches_numpy(gpu_device: int, dtype: np.dtype, fmt: str) -> None:
    x = rand((2, 8, 9, 11), dtype, 1)
    w = rand((16, 8, 3, 3), dtype, 2)
    pads, strides, dilations = (1, 2), (2, 1), (1, 2)
    conv = ConvolutionDescriptor(pads, strides, dilations)

    def run() -> DeviceArray:
        return ops.convolution_forward(dev(x, fmt), dev(w, fmt), conv)

    # float32 and float16 convolutions run on every GPU cuDNN 9 supports; bfloat16 needs
    # compute capability 8.0, so only there may cuDNN's refusal be a skip.
    y = skip_if_unsupported(run, f"{dtype} {fmt} convolution") if dtype == BF16 else run()
    ref = conv_ref(x, w, pads, strides, dilations)
    assert y.shape == ref.shape and y.dtype == dtype
    if fmt == "NHWC":  # the output follows the input's memory order
        assert y.strides == layout.packed_strides(y.shape, "NHWC")
    bound = conv_ref(
        np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), pads, strides, dilations
    )
    assert_within_bound(y.to_numpy().astype(np.float64), ref, bound, EPS[np.dtype(dtype)])


@pytest.mark.gpu
@pytest.mark.parametrize("algo", [None, "heuristic", "find", "implicit_gemm", 0])
def test_convolution_algorithm_choices(gpu_device: int, algo: Any) -> None:
    x = rand((2, 4, 10, 10), np.float32, 3)
    w = rand((6, 4, 3, 3), np.float32, 4)
    conv = ConvolutionDescriptor((1, 1), math_type="fma")  # no TF32: float32 accuracy
    y = ops.convolution_forward(dev(x), dev(w), conv, algo=algo)
    ref = conv_ref(x, w, (1, 1), (1, 1), (1, 1))
    bound = conv_ref(np.abs(x), np.abs(w), (1, 1), (1, 1), (1, 1))
    assert_within_bound(y.to_numpy(), ref, bound, FMA_EPS)
    with pytest.raises(ValueError, match="algo"):
        ops.convolution_forward(dev(x), dev(w), conv, algo="fastest")


@pytest.mark.gpu
def test_grouped_true_and_3d_convolutions(gpu_device: int) -> None:
    x = rand((2, 6, 8, 8), np.float32, 5)
    w = rand((4, 3, 3, 3), np.float32, 6)
    conv = ConvolutionDescriptor((1, 1), groups=2, mode="convolution", math_type="fma")
    y = ops.convolution_forward(dev(x), dev(w), conv)
    ref = conv_ref(x, w, (1, 1), (1, 1), (1, 1), groups=2, mode="convolution")
    bound = conv_ref(np.abs(x), np.abs(w), (1, 1), (1, 1), (1, 1), groups=2)
    assert_within_bound(y.to_numpy(), ref, bound, FMA_EPS)
    x3 = rand((1, 3, 5, 6, 7), np.float32, 7)
    w3 = rand((2, 3, 3, 3, 3), np.float32, 8)
    conv3 = ConvolutionDescriptor((1, 0, 1), (1, 1, 2), math_type="fma")
    y3 = ops.convolution_forward(dev(x3), dev(w3), conv3)
    ref3 = conv_ref(x3, w3, (1, 0, 1), (1, 1, 2), (1, 1, 1))
    assert_within_bound(
        y3.to_numpy(),
        ref3,
        conv_ref(np.abs(x3), np.abs(w3), (1, 0, 1), (1, 1, 2), (1, 1, 1)),
        FMA_EPS,
    )
    # No descriptor: no padding, unit strides.
    y0 = ops.convolution_forward(dev(x), dev(rand((5, 6, 3, 3), np.float32, 9)))
    assert y0.shape == (2, 5, 6, 6)


@pytest.mark.gpu
@pytest.mark.parametrize("algo", [None, "find"])
def test_convolution_alpha_beta_blend_into_y(gpu_device: int, algo: Any) -> None:
    x = rand((1, 3, 6, 6), np.float32, 10)
    w = rand((2, 3, 3, 3), np.float32, 11)
    y0 = rand((1, 2, 4, 4), np.float32, 12)
    y = dev(y0)
    conv = ConvolutionDescriptor((0, 0), math_type="fma")
    out = ops.convolution_forward(dev(x), dev(w), conv, y=y, alpha=2.0, beta=0.5, algo=algo)
    assert out is y
    ref = 2.0 * conv_ref(x, w, (0, 0), (1, 1), (1, 1)) + 0.5 * y0
    bound = 2.0 * conv_ref(np.abs(x), np.abs(w), (0, 0), (1, 1), (1, 1)) + 0.5 * np.abs(y0)
    assert_within_bound(y.to_numpy(), ref, bound, FMA_EPS)
    with pytest.raises(ValueError, match="beta"):
        ops.convolution_forward(dev(x), dev(w), conv, beta=1.0)


@pytest.mark.gpu
def test_tensor_op_math_on_bad_layouts_warns_when_executing(gpu_device: int) -> None:
    x = rand((2, 3, 8, 8), np.float16, 13)
    w = rand((4, 3, 3, 3), np.float16, 14)
    conv = ConvolutionDescriptor((1, 1), math_type="tensor_op")
    with pytest.warns(TensorCoreWarning, match="NHWC") as record:
        ops.convolution_forward(dev(x), dev(w), conv)
    assert record[0].filename == __file__


@pytest.mark.gpu
def test_convolution_argument_errors(gpu_device: int) -> None:
    x = dev(rand((1, 3, 6, 6), np.float32))
    w = dev(rand((2, 3, 3, 3), np.float32))
    with pytest.raises(TypeError, match="dtype"):
        ops.convolution_forward(x, dev(rand((2, 3, 3, 3), np.float16)))
    w_strided = DeviceArray.from_numpy(rand((2, 3, 3, 6), np.float32)[..., ::2])
    with pytest.raises(ValueError, match="packed"):
        ops.convolution_forward(x, w_strided)
    with pytest.raises(ValueError, match="channels"):
        ops.convolution_forward(x, dev(rand((2, 4, 3, 3), np.float32)))
    with pytest.raises(ValueError, match="shape"):
        ops.convolution_forward(x, w, y=dev(rand((1, 2, 5, 5), np.float32)))
    with pytest.raises(TypeError, match="ConvolutionDescriptor"):
        ops.convolution_forward(x, w, "conv")  # type: ignore[arg-type]


# -- element-wise operations -------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_add_tensor_broadcasts_a_bias(gpu_device: int, dtype: np.dtype, fmt: str) -> None:
    c0 = rand((2, 5, 3, 4), dtype, 20)
    bias = rand((1, 5, 1, 1), dtype, 21)
    c = dev(c0, fmt)
    assert ops.add_tensor(dev(bias), c, alpha=1.5, beta=0.5) is c
    assert_close(
        c.to_numpy(), 1.5 * bias.astype(np.float64) + 0.5 * c0.astype(np.float64), dtype, 4
    )
    with pytest.raises(ValueError, match="1 or equal"):
        ops.add_tensor(dev(rand((1, 4, 1, 1), dtype)), c)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS: list[tuple[str, dict[str, float], Callable[[np.ndarray], np.ndarray]]] = [
    ("relu", {}, lambda x: np.maximum(x, 0.0)),
    ("sigmoid", {}, sigmoid),
    ("tanh", {}, np.tanh),
    ("clipped_relu", {"coef": 1.5}, lambda x: np.clip(x, 0.0, 1.5)),
    ("elu", {"coef": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    ("elu", {}, lambda x: np.where(x > 0, x, np.expm1(x))),  # alpha 1.0 by default, not a ReLU
    ("swish", {"swish_beta": 1.3}, lambda x: x * sigmoid(1.3 * x)),
    ("identity", {}, lambda x: x),
]


# the ELU without coef runs as "elu-default"
_ACTIVATION_IDS = ["elu-default" if (a[0], a[1]) == ("elu", {}) else a[0] for a in ACTIVATIONS]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize(("mode", "kwargs", "ref"), ACTIVATIONS, ids=_ACTIVATION_IDS)
def test_activations_match_numpy(
    gpu_device: int,
    dtype: np.dtype,
    mode: str,
    kwargs: dict[str, float],
    ref: Callable[[np.ndarray], np.ndarray],
) -> None:
    x = rand((2, 3, 4, 5), dtype, 30, -3.0, 3.0)
    want = ref(x.astype(np.float64))
    y = ops.activation_forward(dev(x), mode, **kwargs)
    assert_close(y.to_numpy(), want, dtype)
    y_nhwc = ops.activation_forward(dev(x, "NHWC"), mode, **kwargs)
    assert y_nhwc.strides == layout.packed_strides(x.shape, "NHWC")
    assert_close(y_nhwc.to_numpy(), want, dtype)
    # alpha/beta blending, in place
    z0 = rand(x.shape, dtype, 31)
    z = dev(z0)
    ops.activation_forward(dev(x), mode, y=z, alpha=2.0, beta=-1.0, **kwargs)
    assert_close(z.to_numpy(), 2.0 * want - z0.astype(np.float64), dtype, 4)
    inplace = dev(x)
    assert ops.activation_forward(inplace, mode, y=inplace, **kwargs) is inplace
    assert_close(inplace.to_numpy(), want, dtype)


SOFTMAX_CASES = list(itertools.product(["accurate", "fast", "log"], ["channel", "instance"]))


def softmax_ref(x: np.ndarray, algorithm: str, mode: str) -> np.ndarray:
    axes = (1,) if mode == "channel" else tuple(range(1, x.ndim))
    shifted = x - x.max(axis=axes, keepdims=True)
    log_z = np.log(np.exp(shifted).sum(axis=axes, keepdims=True))
    return shifted - log_z if algorithm == "log" else np.exp(shifted - log_z)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize(("algorithm", "mode"), SOFTMAX_CASES)
def test_softmax_matches_numpy(
    gpu_device: int, dtype: np.dtype, fmt: str, algorithm: str, mode: str
) -> None:
    x = rand((2, 7, 3, 4), dtype, 40, -4.0, 4.0)
    want = softmax_ref(x.astype(np.float64), algorithm, mode)
    y = ops.softmax_forward(dev(x, fmt), algorithm=algorithm, mode=mode)
    assert_close(y.to_numpy(), want, dtype, 10.0 if algorithm == "log" else 1.0)


@pytest.mark.gpu
def test_softmax_is_not_deprecated(gpu_device: int) -> None:
    x = dev(rand((1, 3, 2, 2), np.float32))
    tensor_common._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ops.softmax_forward(x)
        ops.activation_forward(x)
        ops.activation_forward(x)
    ops_deprecations = [
        str(w.message)
        for w in caught
        if issubclass(w.category, DeprecationWarning) and "pycudnn.ops." in str(w.message)
    ]
    assert len(ops_deprecations) == 1 and "activation_forward" in ops_deprecations[0]


def pool_ref(
    x: np.ndarray,
    mode: str,
    window: tuple[int, ...],
    pads: tuple[int, ...],
    strides: tuple[int, ...],
) -> np.ndarray:
    x = x.astype(np.float64)
    k = len(window)
    spec = [(0, 0), (0, 0), *((p, p) for p in pads)]
    xp = np.pad(x, spec, constant_values=-np.inf if mode == "max" else 0.0)
    valid = np.pad(np.ones(x.shape), spec)
    out_sp = [(x.shape[2 + i] + 2 * pads[i] - window[i]) // strides[i] + 1 for i in range(k)]
    acc = np.full((*x.shape[:2], *out_sp), -np.inf if mode == "max" else 0.0)
    count = np.zeros_like(acc)
    for offs in itertools.product(*(range(w) for w in window)):
        sl = (
            slice(None),
            slice(None),
            *(
                slice(o, o + s * (m - 1) + 1, s)
                for o, s, m in zip(offs, strides, out_sp, strict=True)
            ),
        )
        acc = np.maximum(acc, xp[sl]) if mode == "max" else acc + xp[sl]
        count += valid[sl]
    if mode == "max":
        return acc
    if mode == "avg_include_padding":
        return acc / np.prod(window)
    return acc / count


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mode", ["max", "avg_include_padding", "avg_exclude_padding"])
def test_pooling_matches_numpy(gpu_device: int, dtype: np.dtype, fmt: str, mode: str) -> None:
    x = rand((2, 3, 9, 8), dtype, 50)
    window, pads, strides = (3, 3), (1, 1), (2, 2)
    y = ops.pooling_forward(dev(x, fmt), mode=mode, window=window, pads=pads, strides=strides)
    want = pool_ref(x, mode, window, pads, strides)
    assert y.shape == want.shape
    assert_close(y.to_numpy(), want, dtype)
    y2 = ops.pooling_forward(dev(x), mode="avg", window=(2, 2))  # "avg" includes padding
    assert_close(y2.to_numpy(), pool_ref(x, "avg_include_padding", (2, 2), (0, 0), (2, 2)), dtype)


# -- layout transforms ---------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [*FLOAT_TYPES, np.dtype(np.int8)], ids=str)
@pytest.mark.parametrize(("src", "dst"), [("NCHW", "NHWC"), ("NHWC", "NCHW"), ("NCHW", "CHWN")])
def test_transform_tensor_reorders_memory(
    gpu_device: int, dtype: np.dtype, src: str, dst: str
) -> None:
    x = rand((2, 3, 4, 5), np.float32, 60, -50, 50).astype(dtype)
    y = skip_if_unsupported(
        lambda: ops.transform_tensor(dev(x, src), dst), f"{dtype} {src} -> {dst}"
    )
    assert y.strides == layout.packed_strides(x.shape, dst)
    np.testing.assert_array_equal(y.to_numpy(), x)
    memory = DeviceArray(y.buffer, (x.size,), dtype).to_numpy()
    np.testing.assert_array_equal(memory, layout.to_format(x, dst))


@pytest.mark.gpu
def test_transform_tensor_alpha_beta_and_given_y(gpu_device: int) -> None:
    x = rand((2, 3, 4, 5), np.float32, 61)
    y0 = rand((2, 3, 4, 5), np.float32, 62)
    y = dev(y0, "NHWC")
    assert ops.transform_tensor(dev(x), y=y, alpha=3.0, beta=0.25) is y
    assert_close(y.to_numpy(), 3.0 * x.astype(np.float64) + 0.25 * y0, np.dtype(np.float32), 4)
    with pytest.raises(ValueError, match="either"):
        ops.transform_tensor(dev(x), "NHWC", y=y)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["NC/32HW32", "NC/4HW4"])
def test_transform_into_and_out_of_vectorised_int8(gpu_device: int, fmt: str) -> None:
    # NC/32HW32 failed on an H100 (cuDNN 9.19) while it was described with the INT8x32 type:
    # "isTensorSameDims(srcDesc, destDesc) == false". Both widths now travel as split-C strided
    # tensors; no skip: a refusal is a failure.
    x = np.random.default_rng(63).integers(-100, 100, (2, 64, 3, 5)).astype(np.int8)
    packed = ops.transform_tensor(dev(x), fmt)
    view_shape, _ = layout.vectorized_dims_strides(x.shape, fmt)
    assert packed.shape == view_shape and packed.dtype == np.int8
    np.testing.assert_array_equal(packed.to_numpy().ravel(), layout.to_format(x, fmt))
    back = ops.transform_tensor(packed, "NCHW", x_fmt=fmt)
    np.testing.assert_array_equal(back.to_numpy(), x)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("src", "fmt", "dtype"),
    [
        ("NHWC", "NC/32HW32", np.int8),
        ("NCHW", "NC/8HW8", np.float32),
        ("NHWC", "NC/4HW4", np.float16),
    ],
)
def test_transform_any_layout_and_type_into_a_vectorised_one(
    gpu_device: int, src: str, fmt: str, dtype: type
) -> None:
    x = np.random.default_rng(64).integers(-50, 50, (2, 64, 3, 5)).astype(dtype)  # 2x + 1 fits
    packed = ops.transform_tensor(dev(x, src), fmt, alpha=2.0)
    np.testing.assert_array_equal(packed.to_numpy().ravel(), layout.to_format(2 * x, fmt))
    y = dev(np.ones_like(x), "NHWC")
    ops.transform_tensor(packed, y=y, x_fmt=fmt, beta=1.0)
    np.testing.assert_array_equal(y.to_numpy(), 2 * x + 1)


# -- op-tensor and reductions --------------------------------------------------------------------

BINARY = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_op_tensor(gpu_device: int, dtype: np.dtype, op: str) -> None:
    a = rand((2, 4, 3, 3), dtype, 70)
    b = rand((1, 4, 1, 3), dtype, 71)
    c0 = rand((2, 4, 3, 3), dtype, 72)
    a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c0))
    got = ops.op_tensor(dev(a), dev(b), op, alpha1=1.5, alpha2=-0.5)
    assert_close(got.to_numpy(), BINARY[op](1.5 * a64, -0.5 * b64), dtype, 4)
    c = dev(c0, "NHWC")
    ops.op_tensor(dev(a), dev(b), op, c=c, beta=2.0)
    assert_close(c.to_numpy(), BINARY[op](a64, b64) + 2.0 * c64, dtype, 8)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
def test_unary_op_tensor(gpu_device: int, dtype: np.dtype) -> None:
    a = rand((2, 3, 4, 4), dtype, 73, 0.0, 9.0)
    assert_close(ops.op_tensor(dev(a), op="sqrt").to_numpy(), np.sqrt(a.astype(np.float64)), dtype)
    # On 0/1 inputs every reading of "not" (logical not, 1 - x) agrees.
    bits = np.random.default_rng(74).integers(0, 2, (2, 3, 4, 4)).astype(dtype)
    assert_close(
        ops.op_tensor(dev(bits), op="not").to_numpy(), 1.0 - bits.astype(np.float64), dtype
    )


@pytest.mark.gpu
def test_op_tensor_argument_rules(gpu_device: int) -> None:
    a = dev(rand((2, 3, 4, 4), np.float32))
    b = dev(rand((2, 3, 4, 4), np.float32, 1))
    with pytest.raises(ValueError, match="in-place"):
        ops.op_tensor(a, b, "add", c=b)
    assert ops.op_tensor(a, b, "add", c=a) is a  # c may be a
    with pytest.raises(TypeError, match="binary"):
        ops.op_tensor(a, None, "mul")
    with pytest.raises(ValueError, match="unary"):
        ops.op_tensor(a, b, "sqrt")
    with pytest.raises(ValueError, match="1 or equal"):
        ops.op_tensor(a, dev(rand((2, 3, 4, 2), np.float32)), "add")
    with pytest.raises(TypeError, match="dtype"):
        ops.op_tensor(a, dev(rand((2, 3, 4, 4), np.float16)), "add")


REDUCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "add": lambda x, ax: x.sum(axis=ax, keepdims=True),
    "mul": lambda x, ax: x.prod(axis=ax, keepdims=True),
    "min": lambda x, ax: x.min(axis=ax, keepdims=True),
    "max": lambda x, ax: x.max(axis=ax, keepdims=True),
    "amax": lambda x, ax: np.abs(x).max(axis=ax, keepdims=True),
    "avg": lambda x, ax: x.mean(axis=ax, keepdims=True),
    "norm1": lambda x, ax: np.abs(x).sum(axis=ax, keepdims=True),
    "norm2": lambda x, ax: np.sqrt((x * x).sum(axis=ax, keepdims=True)),
    "mul_no_zeros": lambda x, ax: np.where(x == 0, 1.0, x).prod(axis=ax, keepdims=True),
}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=str)
@pytest.mark.parametrize("axes", [(2, 3), (1,), (0, 1, 2, 3)])
@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reductions_match_numpy(
    gpu_device: int, dtype: np.dtype, axes: tuple[int, ...], op: str
) -> None:
    # Values near 1 keep the products representable in float16.
    x = rand((2, 3, 4, 5), dtype, 80, 0.8, 1.2) * np.where(
        rand((2, 3, 4, 5), np.float32, 81) > 0, 1, -1
    ).astype(dtype)
    if op == "mul_no_zeros":
        x[0, 0, 0, :2] = 0
    want = REDUCTIONS[op](x.astype(np.float64), axes)
    c = ops.reduce_tensor(dev(x), op=op, axes=axes)
    assert c.shape == want.shape
    assert_close(c.to_numpy(), want, dtype, float(np.abs(want).max()))


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("op", "pick"),
    [
        ("max", np.argmax),
        ("min", np.argmin),
        ("amax", lambda v, axis: np.argmax(np.abs(v), axis=axis)),
    ],
)
def test_reduction_indices(gpu_device: int, op: str, pick: Callable[..., np.ndarray]) -> None:
    x = rand((2, 6, 3, 4), np.float32, 82)
    c, idx = ops.reduce_tensor(dev(x), op=op, axes=1, indices=True)
    assert idx.dtype == np.uint32 and idx.shape == c.shape == (2, 1, 3, 4)
    np.testing.assert_array_equal(idx.to_numpy()[:, 0], pick(x, axis=1))
    # Two reduced dims: indices count within the reduced block, flattened row-major.
    _, idx2 = ops.reduce_tensor(dev(x), op=op, axes=(2, 3), indices=True)
    np.testing.assert_array_equal(idx2.to_numpy()[..., 0, 0], pick(x.reshape(2, 6, 12), axis=2))
    with pytest.raises(ValueError, match="indices"):
        ops.reduce_tensor(dev(x), op="add", indices=True)


@pytest.mark.gpu
def test_reduction_output_given_and_axis_errors(gpu_device: int) -> None:
    x = rand((2, 3, 4, 5), np.float32, 83)
    c = dev(np.zeros((1, 3, 1, 1), np.float32))
    assert ops.reduce_tensor(dev(x), c=c) is c  # reduced dims from c's shape
    assert_close(
        c.to_numpy(),
        x.astype(np.float64).sum(axis=(0, 2, 3), keepdims=True),
        np.dtype(np.float32),
        10,
    )
    with pytest.raises(ValueError, match="outside"):
        ops.reduce_tensor(dev(x), axes=(4,))
    with pytest.raises(ValueError, match="shape"):
        ops.reduce_tensor(dev(x), axes=(1,), c=c)


# -- interop and argument errors on the GPU -----------------------------------------------------


@pytest.mark.gpu
def test_cupy_and_torch_arrays_and_streams(gpu_device: int) -> None:
    x = rand((2, 3, 4, 5), np.float32, 90)
    want = np.maximum(x, 0)
    cp = pytest.importorskip("cupy")
    y = ops.activation_forward(cp.asarray(x), "relu")
    assert isinstance(y, DeviceArray)
    np.testing.assert_array_equal(y.to_numpy(), want)
    out = cp.empty_like(cp.asarray(x))
    assert ops.activation_forward(cp.asarray(x), "relu", y=out) is out
    np.testing.assert_array_equal(cp.asnumpy(out), want)
    torch = pytest.importorskip("torch")
    stream = torch.cuda.Stream()
    handle = pycudnn.get_handle(gpu_device)
    try:
        with torch.cuda.stream(stream):
            t = torch.from_numpy(x).cuda()
            ty = torch.empty_like(t)
        ops.activation_forward(t, "relu", y=ty, stream=stream)
        assert handle.stream == stream.cuda_stream
        stream.synchronize()
        np.testing.assert_array_equal(ty.cpu().numpy(), want)
    finally:
        handle.stream = None


@pytest.mark.gpu
def test_operand_errors_on_the_gpu(gpu_device: int) -> None:
    x = dev(rand((2, 3, 4, 4), np.float32))
    handle = pycudnn.get_handle(gpu_device)
    other = ArrayView(x.ptr, x.shape, x.strides, x.dtype, gpu_device + 1, False, x)
    with pytest.raises(ValueError, match="device"):
        ops.activation_forward(other, handle=handle)
    buf = DeviceArray.empty((96,), np.float32).buffer
    overlapping = DeviceArray(buf, (2, 3, 4, 4), np.float32, strides=(1, 1, 1, 1))
    with pytest.raises(ValueError, match="overlap"):
        ops.activation_forward(x, y=overlapping)
    misaligned = DeviceArray(buf, (2, 3, 2, 2), np.float32, offset=2)
    with pytest.raises(ValueError, match="aligned"):
        ops.activation_forward(misaligned)
    readonly = DeviceArray(buf, (2, 3, 4, 4), np.float32, readonly=True)
    with pytest.raises(ValueError, match="read-only"):
        ops.activation_forward(x, y=readonly)
    with pytest.raises(TypeError, match="dtype"):
        ops.activation_forward(x, y=dev(rand((2, 3, 4, 4), np.float16)))
    with pytest.raises(ValueError, match="shape"):
        ops.activation_forward(x, y=dev(rand((2, 3, 4, 5), np.float32)))
    with pytest.raises(ValueError, match="beta"):
        ops.activation_forward(x, beta=1.0)
    with pytest.raises(TypeError, match="alpha"):
        ops.activation_forward(x, alpha="2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="negative"):
        mirrored = ArrayView(x.ptr + 12, (1, 1, 1, 4), (4, 4, 4, -1), x.dtype, gpu_device, False, x)
        ops.activation_forward(mirrored)
    with pytest.raises(ValueError, match="3 to 8"):
        ops.activation_forward(dev(rand((4, 5), np.float32)))
    closed = dev(rand((2, 3, 4, 4), np.float32))
    closed.close()
    with pytest.raises(pycudnn.ClosedError):
        ops.activation_forward(closed)
    h = pycudnn.Handle(gpu_device)
    h.close()
    with pytest.raises(pycudnn.ClosedError):
        ops.activation_forward(x, handle=h)


@pytest.mark.gpu
def test_smoke_checks_pass_on_a_gpu(gpu_device: int) -> None:
    for name, check in ops.smoke_checks():
        result = check()
        assert result["max_error"] < 1e-3, name
