"""The legacy convolution filter descriptor (``cudnnFilterDescriptor_t``), KCRS or KRSC packed."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from _nvbind.dtypes import as_numpy_dtype, dtype_name
from _nvbind.strides import packed_strides_in_order

from .. import _bindings as _b
from .. import layout
from ._common import (
    _MAX_RANK,
    _VECTOR_TYPES,
    LegacyDescriptor,
    _c_ints,
    _data_type_value,
    _dtype_of_value,
    _vector_format_name,
    _vector_request,
    legacy_data_type,
    read_back,
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


class FilterDescriptor(LegacyDescriptor, c_kind="Filter"):
    """A legacy convolution filter descriptor (``cudnnFilterDescriptor_t``), deprecated in cuDNN 9.

    ``FilterDescriptor(dims, dtype=np.float32, fmt=None)`` over ``cudnnSetFilterNdDescriptor``:
    ``dims`` are ``K, C, [T,] R, S`` (output channels, input channels per group, spatial extents),
    3 to 8 of them, always in logical order. ``fmt`` is ``"NCHW"`` (packed KCRS, the default) or
    ``"NHWC"`` (packed KRSC, channels last), or a vectorised layout, ``"NC/4HW4"`` or
    ``"NC/32HW32"`` (``"NC/4DHW4"``, ``"NC/32DHW32"`` for 5-D): ``CUDNN_TENSOR_NCHW_VECT_C`` with
    the vector type ``INT8x4`` / ``UINT8x4`` (int8 or uint8 weights) or ``INT8x32`` (int8). The
    dtype strings ``"int8x4"``, ``"uint8x4"`` and ``"int8x32"`` select those types and imply the
    format. A vectorised filter is the packed ``[K, C/x, R, S, x]`` array (:attr:`array_shape`).
    """

    def __init__(
        self, dims: Sequence[int], dtype: Any = np.float32, fmt: str | None = None
    ) -> None:
        warn_deprecated_once("pycudnn.FilterDescriptor", "the graph API (pycudnn.Graph)")
        d = _check_dims(dims, "dims", "FilterDescriptor")
        if fmt is not None and not isinstance(fmt, str):
            raise TypeError(
                f"fmt must be a str ('NCHW', 'NHWC', 'NC/4HW4' or 'NC/32HW32'), got "
                f"{type(fmt).__name__}"
            )
        vector, elem = _vector_request(dtype)
        tensor_format = _FILTER_FORMATS.get(fmt.strip().lower()) if fmt is not None else None
        if tensor_format is not None and vector is not None:
            raise ValueError(
                f"dtype={dtype!r} is a vectorised type; it needs fmt NC/{vector}HW{vector} (or "
                f"NC/{vector}DHW{vector}), not {fmt!r}"
            )
        if tensor_format is None and (fmt is not None or vector is not None):
            vector = _vectorized_format(d, fmt, dtype, vector)
        if vector is not None:
            dt = as_numpy_dtype(elem if elem is not None else dtype)
            cudnn_type = _vector_type(dt, vector, dtype, d)
            tensor_format = int(_b.CUDNN_TENSOR_NCHW_VECT_C)
        else:
            tensor_format = int(_b.CUDNN_TENSOR_NCHW) if tensor_format is None else tensor_format
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
        self._make(("cudnnSetFilterNdDescriptor", cudnn_type, tensor_format, len(d), _c_ints(d)))
        self._dtype = dt
        self._cudnn_type = cudnn_type
        self._channels_last = tensor_format == int(_b.CUDNN_TENSOR_NHWC)
        self._vector = vector
        self._dims = d

    def _read_back(self) -> tuple[tuple[int, ...], int, int]:
        dt, fm, nb = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        dims = (ctypes.c_int * _MAX_RANK)()
        self._query("cudnnGetFilterNdDescriptor", _MAX_RANK, dt, fm, nb, dims)
        return tuple(dims[: nb.value]), dt.value, fm.value

    dims = read_back[tuple[int, ...]](
        0, """``K, C, [T,] R, S`` as cuDNN reports them (``cudnnGetFilterNdDescriptor``)."""
    )
    dtype = read_back[np.dtype](
        1, """The element dtype (``cudnnGetFilterNdDescriptor``).""", convert=_dtype_of_value
    )

    @property
    def fmt(self) -> str:
        """``"NCHW"``, ``"NHWC"`` or ``"NC/xHWx"`` from the format cuDNN reports
        (``cudnnGetFilterNdDescriptor``; ``NCHW_VECT_C`` with the vector width of the type)."""
        tensor_format = self._read_back()[2]
        if tensor_format == int(_b.CUDNN_TENSOR_NCHW_VECT_C):
            return _vector_format_name(len(self._dims), int(self._vector or 0))
        return "NHWC" if tensor_format == int(_b.CUDNN_TENSOR_NHWC) else "NCHW"

    @property
    def vector_count(self) -> int:
        """4 or 32 for the vectorised ``NC/xHWx`` filters, else 1."""
        self._check_open()
        return self._vector or 1

    @property
    def nbdims(self) -> int:
        """Number of dimensions (4 or 5)."""
        self._check_open()
        return len(self._dims)

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides of the packed filter in logical ``K, C, R, S`` order: in elements, or for a
        vectorised filter in whole vectors (as :attr:`TensorDescriptor.strides` counts them)."""
        self._check_open()
        if self._vector:
            d = self._dims
            return packed_strides_in_order((d[0], d[1] // self._vector, *d[2:]), range(len(d)))
        perm = (
            channels_last_perm(len(self._dims)) if self._channels_last else range(len(self._dims))
        )
        return packed_strides_in_order(self._dims, tuple(perm))

    def _array(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        self._check_open()
        if self._vector:
            return layout.vectorized_dims_strides(self._dims, self.fmt)
        return self._dims, self.strides

    array_shape = read_back[tuple[int, ...]](
        0,
        """Shape of the array that holds the filter: ``dims``, or ``[K, C/x, R, S, x]``.""",
        source="_array",
    )
    array_strides = read_back[tuple[int, ...]](
        1,
        """Element strides of the array that holds the filter (packed ``[K, C/x, R, S, x]`` for
        vectorised filters).""",
        source="_array",
    )

    @property
    def size_in_bytes(self) -> int:
        """``cudnnGetFilterSizeInBytes``."""
        return int(self._query_value("cudnnGetFilterSizeInBytes", ctypes.c_size_t))

    def key(self) -> tuple[Any, ...]:
        """A hashable tuple of dims, layout and data type."""
        self._check_open()
        # The cuDNN type already tells vectorised filters apart (INT8x4, INT8x32).
        return (self._dims, self._channels_last, self._cudnn_type)

    def _describe(self) -> str:
        if self._vector:
            fmt = _vector_format_name(len(self._dims), self._vector)
            dt = str(_b.cudnnDataType_t(self._cudnn_type).name).lower()
        else:
            fmt = "NHWC" if self._channels_last else "NCHW"
            dt = dtype_name(self._dtype)
        return f"dims={self._dims} dtype={dt} fmt={fmt}"


def _vectorized_format(
    d: tuple[int, ...], fmt: str | None, dtype: Any, vector: int | None
) -> int | None:
    """The vector width ``fmt`` (or a vectorised ``dtype``) asks for; None for NC/1HW1 (NCHW)."""
    f: layout.Format | None = None
    if fmt is None:
        f = layout.parse_format(_vector_format_name(len(d), int(vector or 0)))
    else:
        try:
            f = layout.parse_format(fmt)
        except ValueError:
            pass
        if f is None or not f.is_vectorized:
            raise ValueError(
                f"fmt={fmt!r}: filters are packed NCHW (KCRS), NHWC (KRSC, channels last), or "
                "vectorised NC/4HW4 / NC/32HW32 (NC/4DHW4 / NC/32DHW32 for 5-D)"
            )
    if f.vector == 1 and vector is None:
        return None  # seed 002: NC/1HW1 "is the same as NCHW format"
    if vector is not None and vector != f.vector:
        raise ValueError(f"dtype {dtype!r} has vectors of {vector}, fmt {f.name!r} of {f.vector}")
    if len(d) != f.rank:
        raise ValueError(f"fmt {f.name!r} needs {f.rank} dims ({f.logical}), got {len(d)}: {d}")
    x = int(f.vector or 0)
    if d[1] % x:
        # cudnnSetFilterNdDescriptor does not refuse this: it rounds C down to a multiple of the
        # vector width (64 x 48 x 3 x 3 in INT8x32 reads back as 64 x 32 x 3 x 3; cuDNN 9.28).
        raise ValueError(
            f"fmt {f.name!r} needs C (dims[1]) to be a multiple of {x}, got C = {d[1]}"
        )
    return x


def _vector_type(dt: np.dtype, vector: int, dtype: Any, d: tuple[int, ...]) -> int:
    cudnn_name = _VECTOR_TYPES.get((dtype_name(dt), vector))
    if cudnn_name is None:
        raise TypeError(
            f"dtype={dtype_name(dt)} in {_vector_format_name(len(d), vector)}: cuDNN's vectorised "
            "filters exist only for int8 (NC/4HW4 as INT8x4, NC/32HW32 as INT8x32) and uint8 "
            "(NC/4HW4 as UINT8x4)"
        )
    return _data_type_value(cudnn_name)
