"""Copies between a :class:`~pycudnn.DeviceArray` and NumPy, through a host staging buffer.

The device span of a strided array (from its lowest to its highest element) is copied in one
``cuMemcpyAsync`` through ``cuda.core``; the elements are then picked out of (or placed into) the
staging buffer with the array's own strides. Gaps between elements belong to someone else, so a
write to a non-dense array first reads the span back and keeps them.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .array_checks import _device_or_raise
from .cuda import require_cuda_core
from .dtypes import dtype_name
from .memory import stream_object
from .strides import element_extent, overlapping

__all__ = ["copy_from_numpy", "to_numpy"]


class DeviceArray(Protocol):
    """What a copy reads of a :class:`~pycudnn.DeviceArray`; named here so that this module,
    which ``device_array`` imports, never imports it back."""

    @property
    def ptr(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def device_id(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def _stream(self) -> Any: ...
    @property
    def _buffer(self) -> Any: ...
    def _view_on(self, stream_ptr: int) -> Any: ...


def _span(arr: DeviceArray) -> tuple[int, int]:
    """``(address of the lowest element, bytes spanned)``."""
    lo, span = element_extent(arr.shape, arr.strides)
    return arr.ptr + lo * arr.itemsize, span * arr.itemsize


def _copy_stream(arr: DeviceArray, stream: Any) -> tuple[Any, Any]:
    dev = _device_or_raise(arr.device_id, "DeviceArray host transfer")
    if stream is None:
        return dev, arr._stream or dev.default_stream
    s = stream_object(stream, dev)
    # another stream than the allocation's waits for it first, as every other use of the array
    # does: the pool may have handed it memory that work queued there still uses
    arr._view_on(int(s.handle))
    return dev, s


def _staged_view(arr: DeviceArray, staging: np.ndarray, base: int) -> np.ndarray:
    """``arr``'s elements inside ``staging``, a host copy of its span from ``base``.

    Built with the ndarray constructor, not ``as_strided``: that goes through the array
    interface, whose typestr cannot name fp8 (``'<f1'``) or bf16 (raw bytes).
    """
    view: np.ndarray = np.ndarray(
        arr.shape,
        dtype=arr.dtype,
        buffer=staging,
        offset=arr.ptr - base,
        strides=tuple(st * arr.itemsize for st in arr.strides),
    )
    return view


def to_numpy(arr: DeviceArray, stream: Any = None) -> np.ndarray:
    """``DeviceArray.to_numpy``: a new C-contiguous NumPy array (waits for the copy)."""
    arr.ptr  # noqa: B018 - ClosedError for a closed array
    host = np.empty(arr.shape, dtype=arr.dtype)
    base, nbytes = _span(arr)
    if not nbytes:
        return host
    dev, s = _copy_stream(arr, stream)
    staging = np.empty(nbytes // arr.itemsize, dtype=arr.dtype)
    _copy(
        dev,
        s,
        dst=_host_buffer(staging.ctypes.data, nbytes, staging),
        src=_device_buffer(base, nbytes, arr),
    )
    s.sync()
    host[...] = _staged_view(arr, staging, base)
    return host


def copy_from_numpy(arr: DeviceArray, array: Any, stream: Any = None) -> None:
    """``DeviceArray.copy_from_numpy``: overwrite ``arr`` with ``array`` (waits)."""
    arr.ptr  # noqa: B018 - ClosedError for a closed array
    a = np.asarray(array)
    if a.shape != arr.shape:
        raise ValueError(f"array has shape {a.shape}, this DeviceArray {arr.shape}")
    if a.dtype != arr.dtype:
        raise TypeError(
            f"array has dtype {dtype_name(a.dtype)}, this DeviceArray {dtype_name(arr.dtype)}; "
            "convert it first (array.astype(...))"
        )
    if arr.readonly:
        raise ValueError("this DeviceArray is read-only")
    if overlapping(arr.shape, arr.strides):  # (False for fewer than two elements)
        # several indices share one element (a broadcast view): as NumPy, no writes through it
        raise ValueError(
            "this DeviceArray's strides reach some elements twice; it cannot be written"
        )
    base, nbytes = _span(arr)
    if not nbytes:
        return
    dev, s = _copy_stream(arr, stream)
    staging = np.empty(nbytes // arr.itemsize, dtype=arr.dtype)
    device_span = _device_buffer(base, nbytes, arr)
    if nbytes != arr.nbytes:  # gaps between elements belong to someone else: keep them
        _copy(dev, s, dst=_host_buffer(staging.ctypes.data, nbytes, staging), src=device_span)
        s.sync()
    _staged_view(arr, staging, base)[...] = a
    _copy(dev, s, dst=device_span, src=_host_buffer(staging.ctypes.data, nbytes, staging))
    s.sync()


def _host_buffer(ptr: int, nbytes: int, owner: Any) -> Any:

    return require_cuda_core().Buffer.from_handle(ptr, nbytes, owner=owner)


def _device_buffer(ptr: int, nbytes: int, owner: DeviceArray) -> Any:
    buf = owner._buffer
    if buf is not None and int(buf.handle) == ptr and int(buf.size) == nbytes:
        return buf
    return _host_buffer(ptr, nbytes, owner)  # a non-owning Buffer over device memory


def _copy(device: Any, stream: Any, *, dst: Any, src: Any) -> None:
    # cuMemcpyAsync through cuda.core; the driver infers the direction from the pointers (unified
    # addressing). Pageable host memory makes it return only when the host side is done.
    device.set_current()
    dst.copy_from(src, stream=stream)
