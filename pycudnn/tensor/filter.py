"""The legacy convolution filter descriptor (``cudnnFilterDescriptor_t``), KCRS or KRSC packed."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _bindings as _b
from .._lib import LIB
from .._shared.dtypes import dtype_name
from .._shared.resource import CResource
from .._shared.strides import packed_strides_in_order
from ._common import (
    _MAX_RANK,
    _c_ints,
    _call,
    _dtype_of_value,
    legacy_data_type,
    warn_deprecated_once,
)
from .descriptor import _check_dims

_FILTER_FORMATS: dict[str, int] = {
    "nchw": int(_b.CUDNN_TENSOR_NCHW),
    "kcrs": int(_b.CUDNN_TENSOR_NCHW),
    "ncdhw": int(_b.CUDNN_TENSOR_NCHW),
    "nhwc": int(_b.CUDNN_TENSOR_NHWC),
    "krsc": int(_b.CUDNN_TENSOR_NHWC),
    "ndhwc": int(_b.CUDNN_TENSOR_NHWC),
}


# Legacy tensor types that filters refuse (see FilterDescriptor).
_NO_FILTER_TYPES = frozenset({"int32"})


def channels_last_perm(ndim: int) -> tuple[int, ...]:
    """Memory order of a channels-last layout: ``(0, 2, ..., ndim-1, 1)`` (NHWC, NDHWC, KRSC)."""
    return (0, *range(2, ndim), 1)


class FilterDescriptor(CResource):
    """A legacy convolution filter descriptor (``cudnnFilterDescriptor_t``), deprecated in cuDNN 9.

    ``FilterDescriptor(dims, dtype=np.float32, fmt="NCHW")`` over ``cudnnSetFilterNdDescriptor``:
    ``dims`` are ``K, C, [T,] R, S`` (output channels, input channels per group, spatial extents),
    3 to 8 of them; ``fmt`` is ``"NCHW"`` (packed KCRS) or ``"NHWC"`` (packed KRSC, channels last),
    the only filter layouts cuDNN has.
    """

    _kind = "cuDNN filter descriptor"

    def __init__(self, dims: Sequence[int], dtype: Any = np.float32, fmt: str = "NCHW") -> None:
        warn_deprecated_once("pycudnn.FilterDescriptor", "the graph API (pycudnn.Graph)")
        d = _check_dims(dims, "dims", "FilterDescriptor")
        if not isinstance(fmt, str):
            raise TypeError(f"fmt must be a str ('NCHW' or 'NHWC'), got {type(fmt).__name__}")
        tensor_format = _FILTER_FORMATS.get(fmt.strip().lower())
        if tensor_format is None:
            raise ValueError(
                f"fmt={fmt!r}: filters are packed either NCHW (KCRS) or NHWC (KRSC, channels last)"
            )
        dt, cudnn_type = legacy_data_type(dtype)
        if dtype_name(dt) in _NO_FILTER_TYPES:
            # cudnnSetFilterNdDescriptor answers a bare CUDNN_STATUS_BAD_PARAM with no error text
            # for these (probed on cuDNN 9.19 and 9.28, both filter formats), so say why here.
            raise TypeError(
                f"dtype={dtype_name(dt)}: cuDNN's filter descriptors (cudnnSetFilterNdDescriptor) "
                "take float32, float64, float16, bfloat16, int8 and uint8 weights, not "
                f"{dtype_name(dt)} (int32 is an accumulator type: the output's, never a filter's)"
            )
        if math.prod(d) * dt.itemsize >= 2**63:
            # cuDNN accepts such dims, and cudnnGetFilterSizeInBytes then wraps around (a filter
            # of 2**64 bytes reports 0).
            raise ValueError(
                f"a filter of dims {d} and dtype {dtype_name(dt)} spans "
                f"{math.prod(d) * dt.itemsize} bytes, more memory than exists"
            )
        out = ctypes.c_void_p()
        _call("cudnnCreateFilterDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call("cudnnSetFilterNdDescriptor", ptr, cudnn_type, tensor_format, len(d), _c_ints(d))
        except BaseException:
            _destroy_filter(ptr)
            raise
        super().__init__(ptr, _destroy_filter)
        self._dtype = dt
        self._cudnn_type = cudnn_type
        self._channels_last = tensor_format == int(_b.CUDNN_TENSOR_NHWC)
        self._dims = d

    def _read_back(self) -> tuple[tuple[int, ...], int, int]:
        dt, fm, nb = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        dims = (ctypes.c_int * _MAX_RANK)()
        _call(
            "cudnnGetFilterNdDescriptor",
            self,
            _MAX_RANK,
            ctypes.byref(dt),
            ctypes.byref(fm),
            ctypes.byref(nb),
            dims,
        )
        return tuple(dims[: nb.value]), dt.value, fm.value

    @property
    def dims(self) -> tuple[int, ...]:
        """``K, C, [T,] R, S`` as cuDNN reports them (``cudnnGetFilterNdDescriptor``)."""
        return self._read_back()[0]

    @property
    def dtype(self) -> np.dtype:
        return _dtype_of_value(self._read_back()[1])

    @property
    def fmt(self) -> str:
        """``"NCHW"`` or ``"NHWC"`` as cuDNN reports it."""
        return "NHWC" if self._read_back()[2] == int(_b.CUDNN_TENSOR_NHWC) else "NCHW"

    @property
    def nbdims(self) -> int:
        self._check_open()
        return len(self._dims)

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides of the packed filter in logical ``K, C, R, S`` order."""
        self._check_open()
        perm = (
            channels_last_perm(len(self._dims)) if self._channels_last else range(len(self._dims))
        )
        return packed_strides_in_order(self._dims, tuple(perm))

    @property
    def size_in_bytes(self) -> int:
        """``cudnnGetFilterSizeInBytes``."""
        size = ctypes.c_size_t()
        _call("cudnnGetFilterSizeInBytes", self, ctypes.byref(size))
        return int(size.value)

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return (self._dims, self._channels_last, self._cudnn_type)

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.FilterDescriptor closed>"
        fmt = "NHWC" if self._channels_last else "NCHW"
        return f"<pycudnn.FilterDescriptor dims={self._dims} dtype={dtype_name(self._dtype)} fmt={fmt}>"


def _destroy_filter(ptr: int) -> None:
    LIB.function("cudnnDestroyFilterDescriptor")(ptr)
