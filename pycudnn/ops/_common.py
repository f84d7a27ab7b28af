"""What every legacy operation shares: handle, stream and device resolution, operand checks,
per-thread descriptor caches, cuDNN's scaling scalars, output allocation, the transform call.
"""

from __future__ import annotations

import collections
import ctypes
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np

from _nvbind.arrays import ArrayView, as_array_view
from _nvbind.device_array import DeviceArray
from _nvbind.dlpack import _KDL_CPU, _KDL_CUDA, dlpack_device
from _nvbind.dtypes import dtype_name
from _nvbind.strides import packed_strides_in_order

from ..handle import Handle, get_handle
from ..tensor import (
    TensorDescriptor,
    check_operand,
)
from ..tensor._common import _real
from ..tensor._common import call as _call

_GRAPH = "the graph API (pycudnn.Graph)"


class _Descriptor(Protocol):
    """What :func:`_cached` keeps: a legacy descriptor it can test and close."""

    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...


_T = TypeVar("_T", bound=_Descriptor)


# -- handle, stream, device ------------------------------------------------------------------


def _device_of(obj: Any, name: str) -> int:
    """Device ordinal of an array argument, found cheaply; host memory is refused."""
    view_method = getattr(obj, "_array_view", None)
    if view_method is not None:
        device = int(view_method().device_id)
    elif isinstance(obj, np.ndarray):
        device = -1
    elif hasattr(obj, "__dlpack_device__"):
        kind, ordinal = dlpack_device(obj, name)  # checked: a producer's junk names the argument
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


def _resolve(handle: Handle | None, stream: Any, first: Any, name: str) -> _Launch:
    """The handle to run on (made current) and the stream it runs on."""
    if handle is None:
        handle = get_handle(_device_of(first, name))
    elif not isinstance(handle, Handle):
        raise TypeError(f"handle must be a pycudnn.Handle or None, not {type(handle).__name__}")
    handle.make_current()
    stream_ptr = handle.use_stream(stream) if stream is not None else handle.stream_ptr
    return _Launch(handle, stream_ptr)


# -- per-thread descriptor caches (descriptor work stays off repeated calls) -------------------

_local = threading.local()
_CACHE_SIZE = 64


def _cached(kind: str, key: Any, make: Callable[[], _T]) -> _T:
    cache: collections.OrderedDict[Any, _T] | None = getattr(_local, kind, None)
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
    return _desc_for(view.shape if shape is None else shape, view.strides, view.dtype, name)


def _desc_for(
    dims: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype, name: str
) -> TensorDescriptor:
    """The cached plain descriptor of ``dims``/``strides``/``dtype``; errors name ``name``."""
    # Strides of extent-1 dims address nothing; exporters fill them with anything (even 0 or -1).
    strides = tuple(s if n > 1 or s >= 1 else 1 for n, s in zip(dims, strides, strict=True))
    key = (dims, strides, dtype)
    try:
        return _cached("tensors", key, lambda: TensorDescriptor(dims, strides, dtype))
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _scalar_type(dtype: np.dtype) -> type[ctypes.c_float] | type[ctypes.c_double]:
    # cuDNN's scaling parameters: double for double data, float for everything else.
    return ctypes.c_double if dtype == np.float64 else ctypes.c_float


def _scalars(dtype: np.dtype, **values: Any) -> list[Any]:
    ct = _scalar_type(dtype)
    out = []
    for k, v in values.items():
        c = ct(_real(v, k))
        if math.isinf(c.value):  # finite as a double, past a float's range (1e39): inf in C
            raise ValueError(f"{k} = {v} does not fit the C float cuDNN takes it as")
        out.append(c)
    return out


def _memory_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """Dims sorted outermost first by stride. A packed extent-1 dim has the stride of the dim just
    outside it, so on a tie a dim of extent above 1 goes outside one of extent 1 (NHWC with C = 1
    stays NHWC, NCHW with C = 1 stays NCHW); other ties keep logical order."""
    return tuple(sorted(range(len(strides)), key=lambda i: (-strides[i], shape[i] == 1, i)))


def _strides_like(like: ArrayView, shape: tuple[int, ...]) -> tuple[int, ...]:
    order = (
        _memory_order(like.shape, like.strides)
        if len(like.shape) == len(shape)
        else range(len(shape))
    )
    return packed_strides_in_order(shape, order)


def _same_dtype(views: Sequence[tuple[str, ArrayView]]) -> np.dtype:
    first_name, first = views[0]
    for name, v in views[1:]:
        if v.dtype != first.dtype:
            raise TypeError(
                f"{name} has dtype {dtype_name(v.dtype)} but {first_name} has "
                f"{dtype_name(first.dtype)}; they must match"
            )
    return first.dtype


def _own_strides(view: ArrayView) -> tuple[int, ...]:
    """``view``'s strides, those of extent-1 dims made 1 (they address nothing; exporters fill
    them with anything), as an output allocated to match it gets them."""
    return tuple(s if n > 1 or s >= 1 else 1 for n, s in zip(view.shape, view.strides, strict=True))


def _same_layout(a: ArrayView, b: ArrayView, a_name: str, b_name: str, function: str) -> None:
    """``a`` and ``b`` have the same shape and strides (extent-1 dims aside): ``function``'s rule."""
    if a.shape != b.shape:
        raise ValueError(
            f"{a_name} has shape {a.shape} but {b_name} has {b.shape}; they must match"
        )
    differ = [i for i, n in enumerate(a.shape) if n > 1 and a.strides[i] != b.strides[i]]
    if differ:
        raise ValueError(
            f"{a_name} has strides {a.strides} but {b_name} has {b.strides} (dims {differ} "
            f"differ); {function} needs them laid out alike"
        )


def check_apart(
    out: ArrayView,
    out_name: str,
    inputs: Sequence[tuple[str, ArrayView]],
    *,
    in_place: Sequence[str] = (),
) -> None:
    """Refuse an output whose memory meets an input's: cuDNN reads its inputs while it writes
    the output (and ``algo="find"`` times candidates into the output first), so an overlap
    computes from values already overwritten. An input named in ``in_place`` may be the output
    exactly (the same address, shape, strides and dtype): the routines cuDNN documents as
    working in place."""
    if not out.size:
        return
    lo, hi = out.byte_range()
    for name, v in inputs:
        if not v.size:
            continue
        a, b = v.byte_range()
        if a < hi and lo < b:
            same = (v.ptr, v.shape, v.strides, v.dtype) == (out.ptr, out.shape, out.strides,
                                                           out.dtype)  # fmt: skip
            if same and name in in_place:
                continue
            allowed = f" (it may be {name} itself, laid out alike)" if name in in_place else ""
            raise ValueError(
                f"{out_name} overlaps {name} in memory: cuDNN reads {name} while it writes "
                f"{out_name}; give a separate {out_name}{allowed}"
            )


class _Launch(NamedTuple):
    """Where one legacy call runs (from :func:`_resolve`): the handle and the stream; its
    arrays are checked, and outputs allocated, for that device and stream."""

    handle: Handle
    stream_ptr: int

    def operand(
        self, obj: Any, name: str, *, output: bool = False, tensor_op: bool = False
    ) -> ArrayView:
        if obj is None:
            raise TypeError(f"{name} is required")
        return check_operand(
            obj,
            None,
            name,
            device_id=self.handle.device_id,
            stream_ptr=self.stream_ptr,
            output=output,
            tensor_op=tensor_op,
        )

    def output(
        self,
        y: Any,
        name: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        *,
        like: ArrayView,
        beta: Any,
        strides: tuple[int, ...] | None = None,
        inputs: Sequence[tuple[str, ArrayView]] = (),
        in_place: Sequence[str] = (),
    ) -> tuple[Any, ArrayView]:
        """The output array (allocated when ``y`` is None) and its checked view, apart from
        ``inputs`` in memory (:func:`check_apart`; ``in_place``: those it may be exactly).

        An allocated output is packed in ``like``'s memory order, or has ``strides`` where given
        (the backward routines whose ``dx`` must have ``x``'s strides).
        """
        if y is None:
            if _real(beta, "beta") != 0.0:
                raise ValueError(
                    f"beta = {beta} blends into the existing {name}, so {name} must be given "
                    "(a freshly allocated output holds no values)"
                )
            y = DeviceArray.empty(
                shape,
                dtype,
                device=self.handle.device_id,
                stream=self.stream_ptr or None,
                strides=_strides_like(like, shape) if strides is None else strides,
            )
        yv = self.operand(y, name, output=True)
        if yv.shape != shape:
            raise ValueError(f"{name} has shape {yv.shape}, expected {shape}")
        if yv.dtype != dtype:
            raise TypeError(
                f"{name} has dtype {dtype_name(yv.dtype)}, expected {dtype_name(dtype)}"
            )
        check_apart(yv, name, inputs, in_place=in_place)
        return y, yv

    def gradient_like(
        self,
        dx: Any,
        xv: ArrayView,
        dtype: np.dtype,
        *,
        beta: Any,
        function: str,
        inputs: Sequence[tuple[str, ArrayView]] = (),
        in_place: Sequence[str] = (),
    ) -> tuple[Any, ArrayView]:
        """``dx`` (allocated when None) with ``x``'s shape and strides, as ``function`` (an
        activation or pooling backward) requires of the gradient of its input; apart from
        ``inputs`` as :meth:`output` keeps it."""
        dx, dxv = self.output(dx, "dx", xv.shape, dtype, like=xv, beta=beta,
                              strides=_own_strides(xv), inputs=inputs, in_place=in_place)  # fmt: skip
        _same_layout(dxv, xv, "dx", "x", function)
        return dx, dxv


def _check_broadcast(small: ArrayView, big: ArrayView, small_name: str, big_name: str) -> None:
    if len(small.shape) != len(big.shape) or any(
        s not in (1, b) for s, b in zip(small.shape, big.shape, strict=True)
    ):
        raise ValueError(
            f"{small_name} has shape {small.shape}; each of its dims must be 1 or equal to "
            f"{big_name}'s {big.shape} (same number of dims)"
        )


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
