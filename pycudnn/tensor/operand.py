"""Operand validation: what every pycudnn operation checks about an array before cuDNN sees it."""

from __future__ import annotations

import warnings
from typing import Any

from _nvbind.arrays import ArrayView, as_array_view
from _nvbind.dtypes import dtype_name

from .. import layout
from ._common import (
    _TENSOR_CORE_ALIGNMENT,
    TensorCoreWarning,
)
from .descriptor import TensorDescriptor
from .filter import FilterDescriptor


def check_operand(
    obj: Any,
    desc: TensorDescriptor | FilterDescriptor | None,
    name: str,
    *,
    device_id: int,
    stream_ptr: int | None,
    output: bool = False,
    tensor_op: bool = False,
) -> ArrayView:
    """Describe array ``obj`` and check it can be passed to cuDNN as ``desc`` on ``device_id``.

    Checks, before any C call: the memory is on the GPU (host memory is refused), on the handle's
    device; when ``desc`` is given, dtype, shape and strides match it (strides of extent-1 dims
    are free); no negative strides; the pointer is aligned to the element size; for outputs, the
    array is writable and does not overlap. With ``tensor_op`` a pointer below 16-byte alignment
    draws a :class:`TensorCoreWarning`. Returns the :class:`~_nvbind.arrays.ArrayView`
    (which keeps ``obj`` alive). ``stream_ptr`` is the stream the operation runs on; DLPack and
    CUDA-array-interface producers are synchronised with it.
    """
    view = as_array_view(obj, name=name, stream_ptr=stream_ptr)
    if view.itemsize == 0:  # the alignment and size checks below divide by it
        raise TypeError(f"{name} has an element type of no size ({view.dtype})")
    if view.device_id < 0:
        raise ValueError(
            f"{name} is host memory; copy it to the GPU first, e.g. with "
            f"pycudnn.DeviceArray.from_numpy({name})"
        )
    if view.device_id != device_id:
        raise ValueError(
            f"{name} is on device {view.device_id} but the cuDNN handle is bound to device "
            f"{device_id}; pass arrays and a handle of the same device"
        )
    if desc is not None:
        want_shape: tuple[int, ...]
        want_strides: tuple[int, ...]
        if isinstance(desc, TensorDescriptor):
            desc._check_open()
            want_shape, want_strides, want_dtype = desc.array_shape, desc.array_strides, desc._dtype
        elif isinstance(desc, FilterDescriptor):
            desc._check_open()
            # array_shape / array_strides: a vectorised filter is the packed [K, C/x, R, S, x]
            # array, as a vectorised tensor is (its dims and strides count whole vectors).
            want_shape, want_strides, want_dtype = desc.array_shape, desc.array_strides, desc._dtype
        else:
            raise TypeError(
                f"desc must be a TensorDescriptor or FilterDescriptor, not {type(desc).__name__}"
            )
        if view.dtype != want_dtype:
            raise TypeError(
                f"{name} has dtype {dtype_name(view.dtype)}, expected {dtype_name(want_dtype)}"
            )
        if view.shape != want_shape:
            raise ValueError(f"{name} has shape {view.shape}, expected {want_shape}")
        mismatched = [
            i
            for i, (n, a, b) in enumerate(zip(view.shape, view.strides, want_strides, strict=True))
            if n > 1 and a != b
        ]
        if mismatched:
            raise ValueError(
                f"{name} has strides {view.strides} (elements), but its descriptor says "
                f"{want_strides} (dims {list(mismatched)} differ)"
            )
    for i, st in enumerate(view.strides):
        if st < 0 and view.shape[i] > 1:
            raise ValueError(
                f"{name} has a negative stride ({view.strides}); cuDNN routines do not support "
                "negative strides: make a copy with positive strides first"
            )
    if view.size > 0 and view.ptr == 0:
        raise ValueError(f"{name} has a NULL data pointer")
    if view.ptr % view.itemsize:
        raise ValueError(
            f"{name} at 0x{view.ptr:x} is not aligned to its element size ({view.itemsize} bytes)"
        )
    if tensor_op and view.ptr % _TENSOR_CORE_ALIGNMENT:
        warnings.warn(
            f"{name} at 0x{view.ptr:x} is not aligned to 128 bits (16 bytes), which Tensor Core "
            "kernels need (cuDNN's Tensor Core guidelines); cuDNN may fall back to slower kernels",
            TensorCoreWarning,
            stacklevel=3,
        )
    if output:
        if view.readonly:
            raise ValueError(f"{name} is read-only but is written as an output")
        if view.size > 1 and layout.is_overlapping(view.shape, view.strides):
            raise ValueError(
                f"{name} is an output but its layout (shape {view.shape}, strides {view.strides}) "
                "overlaps itself; cuDNN outputs may not overlap"
            )
    return view
