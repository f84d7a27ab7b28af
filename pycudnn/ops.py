"""Legacy (pre-graph) cuDNN operations as Python functions over arrays.

Each function takes arrays (``DeviceArray``, or any array with DLPack or
``__cuda_array_interface__``: CuPy, PyTorch, JAX, Numba), builds the legacy descriptors from their
shapes, strides and dtypes, checks everything in Python first (see
:func:`pycudnn.tensor.check_operand`), and runs the cuDNN call on ``handle`` (default: the calling
thread's handle for the operands' device, :func:`pycudnn.get_handle`) and ``stream`` (default: the
stream set on the handle; a stream given here stays set on the handle).

Results follow cuDNN's blending rule ``y = alpha * op(x) + beta * y``. When ``y`` is not given a
``DeviceArray`` is allocated in the memory order of the input (so NHWC in, NHWC out) and ``beta``
must be 0. The scalars are passed as host ``float`` for float, half and bfloat16 data and as
``double`` for double data, as cuDNN requires.

cuDNN 9 deprecates most of these functions in favour of the graph API (:class:`pycudnn.Graph`);
they still work, and each emits one ``DeprecationWarning`` per process on first use.
:func:`softmax_forward` is not deprecated.
"""

from __future__ import annotations

import collections
import ctypes
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _bindings as _b
from ._shared.arrays import ArrayView, as_array_view
from ._shared.cuda import gpu_available
from ._shared.device_array import DeviceArray
from ._shared.dtypes import dtype_name
from ._shared.memory import allocate, stream_object, workspace
from ._shared.smoke import SkipCheck
from .errors import error_from_status
from .handle import Handle, get_handle
from .tensor import (
    ActivationDescriptor,
    ConvolutionDescriptor,
    FilterDescriptor,
    OpTensorDescriptor,
    PoolingDescriptor,
    ReduceTensorDescriptor,
    TensorDescriptor,
    _choice,
    _ints,
    _real,
    channels_last_perm,
    check_operand,
    warn_deprecated_once,
)
from .tensor import call as _call

__all__ = [
    "activation_forward",
    "add_tensor",
    "convolution_forward",
    "op_tensor",
    "pooling_forward",
    "reduce_tensor",
    "smoke_checks",
    "softmax_forward",
    "transform_tensor",
]

_GRAPH = "the graph API (pycudnn.Graph)"
_KDL_CUDA, _KDL_CPU = 2, 1


# -- handle, stream, device ------------------------------------------------------------------


def _device_of(obj: Any, name: str) -> int:
    """Device ordinal of an array argument, found cheaply; host memory is refused."""
    view_method = getattr(obj, "_array_view", None)
    if view_method is not None:
        device = int(view_method().device_id)
    elif isinstance(obj, np.ndarray):
        device = -1
    elif hasattr(obj, "__dlpack_device__"):
        kind, ordinal = obj.__dlpack_device__()
        if kind == _KDL_CUDA:
            device = int(ordinal)
        elif kind == _KDL_CPU:
            device = -1
        else:  # pinned or managed memory: usable from the current device
            device = int(as_array_view(obj, name=name, stream_ptr=None).device_id)
    else:
        device = int(as_array_view(obj, name=name, stream_ptr=None).device_id)
    if device < 0:
        raise ValueError(
            f"{name} is host memory; copy it to the GPU first, e.g. with "
            f"pycudnn.DeviceArray.from_numpy({name})"
        )
    return device


def _resolve(handle: Handle | None, stream: Any, first: Any, name: str) -> tuple[Handle, int]:
    """The handle to run on (made current) and the stream it runs on."""
    if handle is None:
        handle = get_handle(_device_of(first, name))
    elif not isinstance(handle, Handle):
        raise TypeError(f"handle must be a pycudnn.Handle or None, not {type(handle).__name__}")
    handle.make_current()
    stream_ptr = handle.use_stream(stream) if stream is not None else handle.stream_ptr
    return handle, stream_ptr


def _operand(
    obj: Any,
    name: str,
    handle: Handle,
    stream_ptr: int,
    *,
    output: bool = False,
    tensor_op: bool = False,
) -> ArrayView:
    if obj is None:
        raise TypeError(f"{name} is required")
    return check_operand(
        obj,
        None,
        name,
        device_id=handle.device_id,
        stream_ptr=stream_ptr,
        output=output,
        tensor_op=tensor_op,
    )


# -- per-thread descriptor caches (descriptor work stays off repeated calls) -------------------

_local = threading.local()
_CACHE_SIZE = 64


def _cached(kind: str, key: Any, make: Callable[[], Any]) -> Any:
    cache: collections.OrderedDict[Any, Any] | None = getattr(_local, kind, None)
    if cache is None:
        cache = collections.OrderedDict()
        setattr(_local, kind, cache)
    desc = cache.get(key)
    if desc is not None and not desc.closed:
        cache.move_to_end(key)
        return desc
    desc = make()
    cache[key] = desc
    if len(cache) > _CACHE_SIZE:
        # Safe to close: the calls that used it have returned, and cuDNN copies what a kernel
        # needs at launch.
        cache.popitem(last=False)[1].close()
    return desc


def _tensor_desc(
    view: ArrayView, name: str, shape: tuple[int, ...] | None = None
) -> TensorDescriptor:
    dims = view.shape if shape is None else shape
    # Strides of extent-1 dims address nothing; exporters fill them with anything (even 0 or -1).
    strides = tuple(s if n > 1 or s >= 1 else 1 for n, s in zip(dims, view.strides, strict=True))
    key = (dims, strides, view.dtype)
    try:
        return _cached("tensors", key, lambda: TensorDescriptor(dims, strides, view.dtype))
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _scalar_type(dtype: np.dtype) -> type[ctypes.c_float] | type[ctypes.c_double]:
    # cuDNN's scaling parameters: double for double data, float for everything else.
    return ctypes.c_double if dtype == np.float64 else ctypes.c_float


def _scalars(dtype: np.dtype, **values: Any) -> list[Any]:
    ct = _scalar_type(dtype)
    return [ct(_real(v, k)) for k, v in values.items()]


def _memory_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """Dims sorted outermost first by stride (ties keep logical order, so NCHW with C = 1 stays
    NCHW)."""
    del shape  # extent-1 dims keep the strides their exporter gave them
    return tuple(sorted(range(len(strides)), key=lambda i: (-strides[i], i)))


def _strides_like(like: ArrayView, shape: tuple[int, ...]) -> tuple[int, ...]:
    order = (
        _memory_order(like.shape, like.strides)
        if len(like.shape) == len(shape)
        else range(len(shape))
    )
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(tuple(order)):
        strides[axis] = step
        step *= shape[axis]
    return tuple(strides)


def _output(
    y: Any,
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    *,
    like: ArrayView,
    handle: Handle,
    stream_ptr: int,
    beta: Any,
) -> tuple[Any, ArrayView]:
    """The output array (allocated when ``y`` is None) and its checked view."""
    if y is None:
        if _real(beta, "beta") != 0.0:
            raise ValueError(
                f"beta = {beta} blends into the existing {name}, so {name} must be given "
                "(a freshly allocated output holds no values)"
            )
        y = DeviceArray.empty(
            shape,
            dtype,
            device=handle.device_id,
            stream=stream_ptr or None,
            strides=_strides_like(like, shape),
        )
    yv = _operand(y, name, handle, stream_ptr, output=True)
    if yv.shape != shape:
        raise ValueError(f"{name} has shape {yv.shape}, expected {shape}")
    if yv.dtype != dtype:
        raise TypeError(f"{name} has dtype {dtype_name(yv.dtype)}, expected {dtype_name(dtype)}")
    return y, yv


def _same_dtype(views: Sequence[tuple[str, ArrayView]]) -> np.dtype:
    first_name, first = views[0]
    for name, v in views[1:]:
        if v.dtype != first.dtype:
            raise TypeError(
                f"{name} has dtype {dtype_name(v.dtype)} but {first_name} has "
                f"{dtype_name(first.dtype)}; they must match"
            )
    return first.dtype


def _check_broadcast(small: ArrayView, big: ArrayView, small_name: str, big_name: str) -> None:
    if len(small.shape) != len(big.shape) or any(
        s not in (1, b) for s, b in zip(small.shape, big.shape, strict=True)
    ):
        raise ValueError(
            f"{small_name} has shape {small.shape}; each of its dims must be 1 or equal to "
            f"{big_name}'s {big.shape} (same number of dims)"
        )


# -- convolution -----------------------------------------------------------------------------

_FWD_ALGOS = {
    name.lower(): int(v)
    for name, v in _b.cudnnConvolutionFwdAlgo_t.__members__.items()
    if name != "COUNT"
}
_algo_cache: dict[tuple[Any, ...], int] = {}
_algo_lock = threading.Lock()


def _default_compute(dtype: np.dtype) -> Any:
    if dtype == np.float64:
        return np.float64
    if dtype in (np.int8, np.uint8):
        return np.int32
    return np.float32


def _filter_format(wv: ArrayView) -> str:
    n = len(wv.shape)

    def packed(perm: Sequence[int]) -> tuple[int, ...]:
        strides = [0] * n
        step = 1
        for axis in reversed(tuple(perm)):
            strides[axis] = step
            step *= wv.shape[axis]
        return tuple(strides)

    def matches(expected: tuple[int, ...]) -> bool:
        return all(d == 1 or a == b for d, a, b in zip(wv.shape, wv.strides, expected, strict=True))

    if matches(packed(range(n))):
        return "NCHW"
    if matches(packed(channels_last_perm(n))):
        return "NHWC"
    raise ValueError(
        f"w has strides {wv.strides}: filters must be packed KCRS (NCHW) or KRSC (NHWC, channels "
        "last), the only filter layouts cuDNN has"
    )


def _perf_results(n: int) -> Any:
    return (_b.cudnnConvolutionFwdAlgoPerf_t * max(n, 1))()


def _max_algo_count(handle: Handle) -> int:
    count = ctypes.c_int()
    _call("cudnnGetConvolutionForwardAlgorithmMaxCount", handle, ctypes.byref(count))
    return max(int(count.value), 1)


def _first_usable(perf: Any, returned: int, function: str) -> int:
    for i in range(returned):
        if perf[i].status == 0:
            return int(perf[i].algo)
    raise error_from_status(
        int(_b.CUDNN_STATUS_NOT_SUPPORTED),
        function,
        f"none of the {returned} forward convolution algorithms supports this configuration",
    )


def _pick_algorithm(
    algo: Any,
    handle: Handle,
    descs: tuple[TensorDescriptor, FilterDescriptor, ConvolutionDescriptor, TensorDescriptor],
    pointers: tuple[int, int, int],
    stream_ptr: int,
) -> int:
    if algo is not None and not isinstance(algo, str):
        return _choice(algo, "algo", _FWD_ALGOS)
    mode = "heuristic" if algo is None else algo.strip().lower()
    if mode not in ("heuristic", "find"):
        return _choice(algo, "algo", {**_FWD_ALGOS, "heuristic": -1, "find": -2})
    x_desc, w_desc, conv_desc, y_desc = descs
    key = (mode, handle.device_id, x_desc.key(), w_desc.key(), conv_desc.key(), y_desc.key())
    cached = _algo_cache.get(key)
    if cached is not None:
        return cached
    n = _max_algo_count(handle)
    perf = _perf_results(n)
    returned = ctypes.c_int()
    _call(
        "cudnnGetConvolutionForwardAlgorithm_v7",
        handle,
        x_desc,
        w_desc,
        conv_desc,
        y_desc,
        n,
        ctypes.byref(returned),
        perf,
    )
    if mode == "heuristic":
        choice = _first_usable(perf, returned.value, "cudnnGetConvolutionForwardAlgorithm_v7")
    else:
        # Time the candidates on the GPU with a workspace as large as the largest one needs.
        ws_size = max(
            (int(perf[i].memory) for i in range(returned.value) if perf[i].status == 0), default=0
        )
        ws = workspace(ws_size, device=handle.device_id, stream=stream_ptr or None)
        found = _perf_results(n)
        got = ctypes.c_int()
        x_ptr, w_ptr, y_ptr = pointers
        _call(
            "cudnnFindConvolutionForwardAlgorithmEx",
            handle,
            x_desc,
            x_ptr,
            w_desc,
            w_ptr,
            conv_desc,
            y_desc,
            y_ptr,
            n,
            ctypes.byref(got),
            found,
            ws or None,
            ws_size,
        )
        choice = _first_usable(found, got.value, "cudnnFindConvolutionForwardAlgorithmEx")
    with _algo_lock:
        _algo_cache[key] = choice
    return choice


def convolution_forward(
    x: Any,
    w: Any,
    conv_desc: ConvolutionDescriptor | None = None,
    *,
    y: Any = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    algo: str | int | None = None,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``y = alpha * conv(x, w) + beta * y`` (``cudnnConvolutionForward``; deprecated in cuDNN 9).

    ``x`` is ``N, C, [D,] H, W`` in any positive-stride layout; ``w`` is ``K, C/groups, [T,] R, S``
    packed KCRS or KRSC (NHWC); ``conv_desc`` defaults to no padding, unit strides and
    dilations (``mode="cross_correlation"``, what frameworks call convolution). ``algo``: None or
    ``"heuristic"`` (``cudnnGetConvolutionForwardAlgorithm_v7``), ``"find"`` (times the candidates
    with ``cudnnFindConvolutionForwardAlgorithmEx``; the choice is cached per shape), or an
    algorithm name (``"implicit_gemm"``, ``"winograd"``, ...) or ``cudnnConvolutionFwdAlgo_t``
    value. The workspace comes from :func:`pycudnn._shared.memory.workspace`. With tensor-op math
    in ``conv_desc``, layouts and pointers that break cuDNN's Tensor Core guidelines draw a
    :class:`~pycudnn.tensor.TensorCoreWarning`. Returns ``y``.
    """
    warn_deprecated_once("pycudnn.ops.convolution_forward (cudnnConvolutionForward)", _GRAPH)
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    wv = _operand(w, "w", h, sp)
    dtype = _same_dtype([("x", xv), ("w", wv)])
    if conv_desc is None:
        spatial = len(xv.shape) - 2
        if spatial < 1:
            raise ValueError(
                f"x must have at least 3 dims (N, C, spatial...), got shape {xv.shape}"
            )
        conv_desc = _cached(
            "convs",
            (spatial, np.dtype(_default_compute(dtype))),
            lambda: ConvolutionDescriptor((0,) * spatial, compute_type=_default_compute(dtype)),
        )
    elif not isinstance(conv_desc, ConvolutionDescriptor):
        raise TypeError(
            f"conv_desc must be a ConvolutionDescriptor, not {type(conv_desc).__name__}"
        )
    assert conv_desc is not None
    x_desc = _tensor_desc(xv, "x")
    fmt = _filter_format(wv)
    w_desc = _cached(
        "filters", (wv.shape, fmt, dtype), lambda: FilterDescriptor(wv.shape, dtype, fmt)
    )
    y_dims = conv_desc._output_dims(x_desc, w_desc)
    y, yv = _output(y, "y", y_dims, dtype, like=xv, handle=h, stream_ptr=sp, beta=beta)
    y_desc = _tensor_desc(yv, "y")
    a, b = _scalars(dtype, alpha=alpha, beta=beta)
    descs = (x_desc, w_desc, conv_desc, y_desc)
    find_y = yv.ptr
    scratch = None
    if isinstance(algo, str) and algo.strip().lower() == "find" and float(b.value) != 0.0:
        # FindEx overwrites y while timing; keep the values beta blends in.
        scratch = DeviceArray.empty(
            yv.shape, dtype, device=h.device_id, stream=sp or None, strides=yv.strides
        )
        find_y = scratch.ptr
    try:
        chosen = _pick_algorithm(algo, h, descs, (xv.ptr, wv.ptr, find_y), sp)
    finally:
        if scratch is not None:
            scratch.close()
    ws_size = ctypes.c_size_t()
    _call(
        "cudnnGetConvolutionForwardWorkspaceSize",
        h,
        x_desc,
        w_desc,
        conv_desc,
        y_desc,
        chosen,
        ctypes.byref(ws_size),
    )
    ws = workspace(int(ws_size.value), device=h.device_id, stream=sp or None)
    if conv_desc.uses_tensor_ops:
        pointers = [("x", xv.ptr), ("w", wv.ptr), ("y", yv.ptr)]
        if ws:
            pointers.append(("workspace", ws))
        conv_desc.warn_tensor_cores(x_desc, w_desc, pointers, stacklevel=2)
    _call(
        "cudnnConvolutionForward",
        h,
        ctypes.byref(a),
        x_desc,
        xv.ptr,
        w_desc,
        wv.ptr,
        conv_desc,
        chosen,
        ws or None,
        int(ws_size.value),
        ctypes.byref(b),
        y_desc,
        yv.ptr,
    )
    return y


def _transform(  # noqa: PLR0917 - the C API's argument order
    h: Handle,
    alpha: Any,
    x_desc: TensorDescriptor,
    xv: ArrayView,
    beta: Any,
    y_desc: TensorDescriptor,
    yv: ArrayView,
) -> None:
    """``y = alpha*x + beta*y``, converting layouts (``cudnnTransformTensor``).

    ``alpha`` and ``beta`` are the ctypes scalars from :func:`_scalars`.
    """
    _call(
        "cudnnTransformTensor",
        h,
        ctypes.byref(alpha),
        x_desc,
        xv.ptr,
        ctypes.byref(beta),
        y_desc,
        yv.ptr,
    )


# -- element-wise and reductions --------------------------------------------------------------


def add_tensor(
    a: Any,
    c: Any,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``c = alpha * a + beta * c`` in place, ``a`` broadcast over ``c`` (``cudnnAddTensor``).

    Each dim of ``a`` is 1 or equal to ``c``'s (the bias-add of a ``1, C, 1, 1`` tensor, say).
    Deprecated in cuDNN 9. Returns ``c``.
    """
    warn_deprecated_once("pycudnn.ops.add_tensor (cudnnAddTensor)", _GRAPH)
    h, sp = _resolve(handle, stream, c, "c")
    av = _operand(a, "a", h, sp)
    cv = _operand(c, "c", h, sp, output=True)
    dtype = _same_dtype([("c", cv), ("a", av)])
    _check_broadcast(av, cv, "a", "c")
    al, be = _scalars(dtype, alpha=alpha, beta=beta)
    a_desc, c_desc = _tensor_desc(av, "a"), _tensor_desc(cv, "c")
    _call("cudnnAddTensor", h, ctypes.byref(al), a_desc, av.ptr, ctypes.byref(be), c_desc, cv.ptr)
    return c


def activation_forward(
    x: Any,
    mode: str = "relu",
    *,
    y: Any = None,
    coef: float = 0.0,
    swish_beta: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``y = alpha * act(x) + beta * y`` (``cudnnActivationForward``; deprecated in cuDNN 9).

    ``mode``: ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"clipped_relu"`` (``coef``: ceiling),
    ``"elu"`` (``coef``: alpha), ``"swish"`` (``x * sigmoid(swish_beta * x)``), ``"identity"``.
    ``y`` may be ``x`` (in place). cuDNN documents ``CUDNN_ACTIVATION_IDENTITY`` as not working
    with ``cudnnActivationForward``, so ``"identity"`` runs as ``cudnnTransformTensor``
    (``cudnnScaleTensor`` in place). Returns ``y``.
    """
    warn_deprecated_once("pycudnn.ops.activation_forward (cudnnActivationForward)", _GRAPH)
    act = _cached(
        "activations",
        (str(mode), _real(coef, "coef"), _real(swish_beta, "swish_beta")),
        lambda: ActivationDescriptor(mode, coef, swish_beta=swish_beta),
    )
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    y, yv = _output(y, "y", xv.shape, xv.dtype, like=xv, handle=h, stream_ptr=sp, beta=beta)
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    x_desc, y_desc = _tensor_desc(xv, "x"), _tensor_desc(yv, "y")
    if act.key()[0] != int(_b.CUDNN_ACTIVATION_IDENTITY):
        _call(
            "cudnnActivationForward",
            h,
            act,
            ctypes.byref(al),
            x_desc,
            xv.ptr,
            ctypes.byref(be),
            y_desc,
            yv.ptr,
        )
    elif yv.ptr == xv.ptr and yv.size:
        if x_desc is not y_desc:
            raise ValueError("in place, y must have x's layout")
        scale = _scalar_type(xv.dtype)(float(al.value) + float(be.value))
        _call("cudnnScaleTensor", h, y_desc, yv.ptr, ctypes.byref(scale))
    else:
        _transform(h, al, x_desc, xv, be, y_desc, yv)
    return y


_SOFTMAX_ALGOS = {
    "fast": int(_b.CUDNN_SOFTMAX_FAST),
    "accurate": int(_b.CUDNN_SOFTMAX_ACCURATE),
    "log": int(_b.CUDNN_SOFTMAX_LOG),
}
_SOFTMAX_MODES = {
    "instance": int(_b.CUDNN_SOFTMAX_MODE_INSTANCE),
    "channel": int(_b.CUDNN_SOFTMAX_MODE_CHANNEL),
}


def softmax_forward(
    x: Any,
    *,
    algorithm: str = "accurate",
    mode: str = "channel",
    y: Any = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``y = alpha * softmax(x) + beta * y`` (``cudnnSoftmaxForward``, current in cuDNN 9).

    ``algorithm``: ``"accurate"`` (subtracts the maximum first), ``"fast"`` (does not), ``"log"``
    (log-softmax). ``mode``: ``"channel"`` (over C, for each N and spatial position) or
    ``"instance"`` (over C, H, W together, for each N). Returns ``y``.
    """
    algo = _choice(algorithm, "algorithm", _SOFTMAX_ALGOS)
    m = _choice(mode, "mode", _SOFTMAX_MODES)
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    y, yv = _output(y, "y", xv.shape, xv.dtype, like=xv, handle=h, stream_ptr=sp, beta=beta)
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    _call(
        "cudnnSoftmaxForward",
        h,
        algo,
        m,
        ctypes.byref(al),
        _tensor_desc(xv, "x"),
        xv.ptr,
        ctypes.byref(be),
        _tensor_desc(yv, "y"),
        yv.ptr,
    )
    return y


def pooling_forward(
    x: Any,
    *,
    mode: str = "max",
    window: Sequence[int] = (2, 2),
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    nan_propagation: bool = False,
    y: Any = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``y = alpha * pool(x) + beta * y`` (``cudnnPoolingForward``; deprecated in cuDNN 9).

    ``mode``: ``"max"``, ``"avg"`` / ``"avg_include_padding"`` (padding counts as zeros in the
    average), ``"avg_exclude_padding"``, ``"max_deterministic"``. One ``window`` extent per
    spatial dim of ``x``; ``pads`` default to 0, ``strides`` to the window. Returns ``y``.
    """
    warn_deprecated_once("pycudnn.ops.pooling_forward (cudnnPoolingForward)", _GRAPH)
    w = _ints(window, "window")
    p = _ints(pads, "pads") if pads is not None else None
    s = _ints(strides, "strides") if strides is not None else None
    pool = _cached(
        "pooling",
        (str(mode), w, p, s, bool(nan_propagation)),
        lambda: PoolingDescriptor(mode, w, p, s, nan_propagation=nan_propagation),
    )
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    x_desc = _tensor_desc(xv, "x")
    y_dims = pool.output_dims(x_desc)
    y, yv = _output(y, "y", y_dims, xv.dtype, like=xv, handle=h, stream_ptr=sp, beta=beta)
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    _call(
        "cudnnPoolingForward",
        h,
        pool,
        ctypes.byref(al),
        x_desc,
        xv.ptr,
        ctypes.byref(be),
        _tensor_desc(yv, "y"),
        yv.ptr,
    )
    return y


def transform_tensor(
    x: Any,
    fmt: str | None = None,
    *,
    y: Any = None,
    x_fmt: str | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """Copy ``x`` into another layout on the GPU (``cudnnTransformTensor``; deprecated in cuDNN 9).

    ``fmt`` is the layout of the result (``"NHWC"``, ``"NCHW"``, ``"CHWN"``, ``"NC/32HW32"``,
    ...), or give ``y`` in any layout with ``x``'s shape. ``x_fmt`` names a vectorised layout of
    ``x`` (an int8 array ``[N, C/x, H, W, x]``). For ``NC/4HW4`` / ``NC/32HW32`` the result is the
    packed ``[N, C/x, H, W, x]`` int8 array of :func:`pycudnn.layout.vectorized_dims_strides`,
    described to cuDNN with the INT8x4 / INT8x32 types. Which conversions into and out of the
    vectorised types a GPU supports is cuDNN's call: unsupported ones raise the
    :class:`~pycudnn.CudnnError` cuDNN reports. Returns ``y``.
    """
    warn_deprecated_once("pycudnn.ops.transform_tensor (cudnnTransformTensor)", _GRAPH)
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    x_desc = _vector_desc(xv, x_fmt, "x") if x_fmt is not None else _tensor_desc(xv, "x")
    dims = x_desc._dims
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    vector_fmt = _vectorized_name(fmt) if fmt is not None else None
    if vector_fmt is not None:
        y_desc = _cached(
            "vector_tensors",
            (dims, xv.dtype, vector_fmt),
            lambda: TensorDescriptor(dims, dtype=xv.dtype, fmt=vector_fmt),
        )
        y, yv = _output(
            y, "y", y_desc.array_shape, xv.dtype, like=xv, handle=h, stream_ptr=sp, beta=beta
        )
        check_operand(y, y_desc, "y", device_id=h.device_id, stream_ptr=sp, output=True)
    else:
        if y is None:
            if _real(beta, "beta") != 0.0:
                raise ValueError("beta != 0 blends into the existing y, so y must be given")
            y = DeviceArray.empty(
                dims,
                xv.dtype,
                device=h.device_id,
                stream=sp or None,
                fmt=fmt or "ABCDEFGH"[: len(dims)],
            )
        elif fmt is not None:
            raise ValueError("give either fmt (a new array in that layout) or y, not both")
        yv = _operand(y, "y", h, sp, output=True)
        if yv.shape != dims or yv.dtype != xv.dtype:
            raise ValueError(
                f"y has shape {yv.shape} and dtype {dtype_name(yv.dtype)}; expected {dims} and "
                f"{dtype_name(xv.dtype)}"
            )
        y_desc = _tensor_desc(yv, "y")
    _transform(h, al, x_desc, xv, be, y_desc, yv)
    return y


def _vectorized_name(fmt: str) -> str | None:
    """The canonical name of ``fmt`` if it is a vectorised format (NC/xHWx), else None."""
    from . import layout

    f = layout.parse_format(fmt)
    return f.name if f.is_vectorized else None


def _vector_desc(view: ArrayView, fmt: str, name: str) -> TensorDescriptor:
    from . import layout

    f = layout.parse_format(fmt)
    if not f.is_vectorized:
        raise ValueError(f"{name}_fmt={fmt!r} is not a vectorised format (NC/4HW4, NC/32HW32)")
    if len(view.shape) != f.rank + 1 or view.shape[-1] != f.vector:
        raise ValueError(
            f"{name} in {f.name} is the packed array [N, C/{f.vector}, {', '.join(f.logical[2:])}, "
            f"{f.vector}], got shape {view.shape}"
        )
    dims = (view.shape[0], view.shape[1] * int(f.vector or 1), *view.shape[2:-1])
    desc = _cached(
        "vector_tensors",
        (dims, view.dtype, f.name),
        lambda: TensorDescriptor(dims, dtype=view.dtype, fmt=f.name),
    )
    if view.strides != desc.array_strides:
        raise ValueError(
            f"{name} must be packed (strides {desc.array_strides}), got {view.strides}"
        )
    return desc


def op_tensor(
    a: Any,
    b: Any = None,
    op: str = "add",
    *,
    c: Any = None,
    alpha1: float = 1.0,
    alpha2: float = 1.0,
    beta: float = 0.0,
    nan_propagation: bool = False,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``c = op(alpha1 * a, alpha2 * b) + beta * c`` (``cudnnOpTensor``; deprecated in cuDNN 9).

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"`` (binary: ``b`` required, each of its dims
    1 or equal to ``a``'s) or ``"sqrt"``, ``"not"`` (unary: ``b`` must be None). cuDNN's rule
    for in-place use: ``c`` may be ``a``, and may be ``b`` only if it is ``a`` too. Computes in
    float64 for float64 data, else float32. Returns ``c``.
    """
    warn_deprecated_once("pycudnn.ops.op_tensor (cudnnOpTensor)", _GRAPH)
    h, sp = _resolve(handle, stream, a, "a")
    av = _operand(a, "a", h, sp)
    dtype = av.dtype
    compute = np.float64 if dtype == np.float64 else np.float32
    desc = _cached(
        "op_tensors",
        (str(op), compute, bool(nan_propagation)),
        lambda: OpTensorDescriptor(op, compute, nan_propagation=nan_propagation),
    )
    if desc.is_unary:
        if b is not None:
            raise ValueError(f"op={op!r} is unary; b must be None")
        bv = av
    else:
        if b is None:
            raise TypeError(f"op={op!r} is binary; b is required")
        bv = _operand(b, "b", h, sp)
        _same_dtype([("a", av), ("b", bv)])
        _check_broadcast(bv, av, "b", "a")
    c, cv = _output(c, "c", av.shape, dtype, like=av, handle=h, stream_ptr=sp, beta=beta)
    if bv is not av and cv.ptr == bv.ptr and cv.ptr != av.ptr and cv.size:
        raise ValueError("c may be b only if it is a as well (cudnnOpTensor's in-place rule)")
    a1, a2, be = _scalars(dtype, alpha1=alpha1, alpha2=alpha2, beta=beta)
    a_desc = _tensor_desc(av, "a")
    _call(
        "cudnnOpTensor",
        h,
        desc,
        ctypes.byref(a1),
        a_desc,
        av.ptr,
        ctypes.byref(a2),
        a_desc if bv is av else _tensor_desc(bv, "b"),
        bv.ptr,
        ctypes.byref(be),
        _tensor_desc(cv, "c"),
        cv.ptr,
    )
    return c


def reduce_tensor(
    a: Any,
    *,
    op: str = "add",
    axes: Sequence[int] | int | None = None,
    c: Any = None,
    indices: bool = False,
    alpha: float = 1.0,
    beta: float = 0.0,
    nan_propagation: bool = False,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``c = alpha * reduce(a) + beta * c`` (``cudnnReduceTensor``; deprecated in cuDNN 9).

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"amax"`` (max of absolute values),
    ``"avg"``, ``"norm1"``, ``"norm2"``, ``"mul_no_zeros"``. The reduced dims are ``axes``, or
    those where ``c`` has extent 1, or all. ``c`` keeps ``a``'s number of dims, with 1 in the
    reduced ones. With ``indices=True`` (min, max, amax) returns ``(c, indices)``: a uint32
    DeviceArray shaped like ``c`` holding, for each output, the index of the selected element
    within its reduced block, flattened in row-major order. The workspace comes from
    :func:`pycudnn._shared.memory.workspace`. Returns ``c`` (or ``(c, indices)``).
    """
    warn_deprecated_once("pycudnn.ops.reduce_tensor (cudnnReduceTensor)", _GRAPH)
    h, sp = _resolve(handle, stream, a, "a")
    av = _operand(a, "a", h, sp)
    n = len(av.shape)
    reduced: set[int] | None = None
    if axes is not None:
        axes_t = _ints((axes,) if isinstance(axes, (int, np.integer)) else axes, "axes")
        reduced = set()
        for ax in axes_t:
            if not -n <= ax < n:
                raise ValueError(f"axes contains {ax}, outside the {n} dims of a")
            reduced.add(ax % n)
    if c is not None and reduced is None:
        cv0 = as_array_view(c, name="c", stream_ptr=None)
        _check_broadcast(cv0, av, "c", "a")
        reduced = {i for i in range(n) if cv0.shape[i] == 1 and av.shape[i] != 1} or set(range(n))
    if reduced is None:
        reduced = set(range(n))
    c_shape = tuple(1 if i in reduced else d for i, d in enumerate(av.shape))
    dtype = av.dtype
    compute = np.float64 if dtype == np.float64 else np.float32
    desc = _cached(
        "reductions",
        (str(op), compute, bool(nan_propagation), bool(indices)),
        lambda: ReduceTensorDescriptor(
            op, compute, nan_propagation=nan_propagation, indices=indices
        ),
    )
    c, cv = _output(c, "c", c_shape, dtype, like=av, handle=h, stream_ptr=sp, beta=beta)
    a_desc, c_desc = _tensor_desc(av, "a"), _tensor_desc(cv, "c")
    size = ctypes.c_size_t()
    _call("cudnnGetReductionWorkspaceSize", h, desc, a_desc, c_desc, ctypes.byref(size))
    ws_size = int(size.value)
    ws = workspace(ws_size, device=h.device_id, stream=sp or None)
    idx_array = None
    idx_ptr, idx_size = None, 0
    if indices:
        _call("cudnnGetReductionIndicesSize", h, desc, a_desc, c_desc, ctypes.byref(size))
        idx_size = max(int(size.value), int(np.prod(c_shape)) * 4)
        s = stream_object(sp or None, h.device)
        buf = allocate(idx_size, device=h.device_id, stream=s)
        idx_array = DeviceArray(buf, c_shape, np.uint32, stream=s)
        idx_ptr = idx_array.ptr
    al, be = _scalars(dtype, alpha=alpha, beta=beta)
    _call(
        "cudnnReduceTensor",
        h,
        desc,
        idx_ptr,
        idx_size,
        ws or None,
        ws_size,
        ctypes.byref(al),
        a_desc,
        av.ptr,
        ctypes.byref(be),
        c_desc,
        cv.ptr,
    )
    return (c, idx_array) if indices else c


# -- smoke checks ------------------------------------------------------------------------------


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
