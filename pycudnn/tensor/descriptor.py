"""The legacy N-d tensor descriptor (``cudnnTensorDescriptor_t``), strided or vectorised (NC/xHWx)."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from _nvbind.dtypes import as_numpy_dtype, dtype_name

from .. import _bindings as _b
from .. import layout
from .._dims import checked_dims
from ._common import (
    _INT_MAX,
    _MAX_RANK,
    _MIN_RANK,
    _VECTOR_TYPES,
    LegacyDescriptor,
    _c_ints,
    _data_type_value,
    _dtype_of_value,
    _int,
    _ints,
    _log,
    _vector_format_name,
    _vector_request,
    legacy_data_type,
    read_back,
)


def _check_dims(dims: Any, name: str = "dims", what: str = "TensorDescriptor") -> tuple[int, ...]:
    d = _ints(dims, name)
    return checked_dims(
        d,
        "{name}[{i}] = {extent}: every extent must be positive (>= 1)",
        ranks=(_MIN_RANK, _MAX_RANK),
        rank_text="{what} takes {low} to {high} dims (cuDNN's rule: \"a number of dimensions from "
        '3 to 8"), got {rank}: {d}. Add leading dims of extent 1 for fewer.',
        what=what,
        name=name,
        d=d,
    )


def _too_large_text(what: str, span: int, unit: str) -> str:
    # Probed on cuDNN 9.28: cudnnSetTensorNdDescriptor(Ex) returns CUDNN_STATUS_NOT_SUPPORTED when
    # a tensor spans 2**31 or more elements (counted with strides; whole vectors for NC/xHWx), and
    # the reason ("exceeds the maximum supported ... enable large tensor support") only reaches
    # cuDNN's log, not cudnnGetLastErrorString.
    return (
        f"{what} span {span} {unit}; cuDNN's legacy tensor descriptors address at most "
        f"2**31 - 1 = {_INT_MAX} (32-bit indexing). Split the tensor, or use the graph API "
        "(pycudnn.Graph), whose tensors take 64-bit dims and strides"
    )


def _check_strides(strides: Any, dims: tuple[int, ...]) -> tuple[int, ...]:
    s = _ints(strides, "strides")
    if len(s) != len(dims):
        raise ValueError(f"strides has {len(s)} entries but dims has {len(dims)}; they must match")
    for i, (st, n) in enumerate(zip(s, dims, strict=True)):
        # Negative strides are kept: cudnnSetTensorNdDescriptor takes them (probed on cuDNN 9.28,
        # and cudnnGetTensorSizeInBytes then counts |stride|); only routines refuse them, and
        # pycudnn.ops refuses such arrays before calling one. The C int must still hold them.
        if st < -_INT_MAX - 1:
            raise ValueError(
                f"strides[{i}] = {st} is below the smallest stride a C int holds ({-_INT_MAX - 1})"
            )
        if st == 0 and n > 1:
            raise ValueError(
                f"strides[{i}] = 0 with dims[{i}] = {n}: cuDNN allows a zero stride only for an "
                "extent-1 dim (broadcast by repeating data is not expressible)"
            )
    return s


class TensorDescriptor(LegacyDescriptor, c_kind="Tensor"):
    """A legacy N-d tensor descriptor (``cudnnTensorDescriptor_t``).

    ``TensorDescriptor(dims, strides=None, dtype=np.float32, fmt=None, *, output=False)``

    * ``dims``: 3 to 8 positive extents in logical order.
    * ``strides``: in elements, possibly negative (the descriptor format takes them, cuDNN's
      routines and :mod:`pycudnn.ops` do not; ``size_in_bytes`` is then the span, with element 0
      inside it, see :func:`pycudnn.layout.min_buffer_size`); or ``fmt``, a layout format (strides from
      :func:`pycudnn.layout.packed_strides`); or neither (packed row-major). Both may be given when
      they agree.
    * ``dtype``: float32, float64, float16, bfloat16, int8, uint8, int32 (NumPy or ml_dtypes types
      or strings such as ``"bf16"``); ``"int8x4"``, ``"uint8x4"``, ``"int8x32"`` select the
      vectorised types of the ``NC/4HW4`` / ``NC/32HW32`` formats, as does ``fmt="NC/32HW32"``
      with int8.
    * ``output=True`` refuses an overlapping layout (cuDNN outputs may not overlap).

    Formats that ``cudnnTensorFormat_t`` knows (NCHW, NHWC and their 5-D forms) are set with
    ``cudnnSetTensorNdDescriptorEx`` so that cuDNN computes the strides; other layouts with
    ``cudnnSetTensorNdDescriptor``. Vectorised formats use ``cudnnSetTensorNdDescriptorEx`` with
    ``CUDNN_TENSOR_NCHW_VECT_C``; their ``strides`` as cuDNN reports them count whole vectors, and
    ``array_shape`` / ``array_strides`` describe the packed ``[N, C/x, H, W, x]`` array that holds
    the data.
    """

    def __init__(
        self,
        dims: Sequence[int],
        strides: Sequence[int] | None = None,
        dtype: Any = np.float32,
        fmt: str | None = None,
        *,
        output: bool = False,
    ) -> None:
        d = _check_dims(dims)
        if not isinstance(output, (bool, np.bool_)):  # output="no" would read as True
            raise TypeError(f"output must be a bool, got {type(output).__name__} {output!r}")
        vector, elem = _vector_request(dtype)
        if vector is not None and fmt is None:
            fmt = _vector_format_name(len(d), vector)
        f = layout.parse_format(fmt) if fmt is not None else None
        if f is not None and f.vector == 1 and vector is None:
            # Seed 002: NC/1HW1 "is the same as NCHW format"; cuDNN has no vector type of 1.
            f = layout.parse_format(f.logical)
        if f is not None and f.is_vectorized:
            self._init_vectorized(d, strides, dtype, f, vector, elem)
        else:
            if vector is not None:
                raise ValueError(
                    f"dtype={dtype!r} is a vectorised type; it needs fmt NC/{vector}HW{vector} "
                    f"(or NC/{vector}DHW{vector}), not {fmt!r}"
                )
            dt, cudnn_type = legacy_data_type(dtype)
            self._init_strided(d, strides, dt, cudnn_type, f)
        if output:
            self.check_output()

    # -- construction --------------------------------------------------------------------
    def _init_strided(
        self,
        d: tuple[int, ...],
        strides: Sequence[int] | None,
        dt: np.dtype,
        cudnn_type: int,
        f: layout.Format | None,
    ) -> None:
        packed = layout.packed_strides(d, f) if f is not None else None
        if strides is not None:
            s = _check_strides(strides, d)
            if packed is not None and s != packed:
                raise ValueError(
                    f"strides {s} disagree with fmt {f.name!r} (packed strides {packed}); give "  # type: ignore[union-attr]
                    "one or the other"
                )
        else:
            s = packed if packed is not None else layout.packed_strides(d, "ABCDEFGH"[: len(d)])
        for i, st in enumerate(s):
            _int(st, f"strides[{i}]")
        span = layout.min_buffer_size(d, s)
        if span > _INT_MAX:
            # cuDNN 9 refuses this with CUDNN_STATUS_NOT_SUPPORTED and no error text (the reason
            # only reaches its log), so say it here.
            raise ValueError(_too_large_text(f"dims {d} with strides {s}", span, "elements"))
        tensor_format = _EX_FORMATS.get(f.name) if f is not None else None
        if tensor_format is not None and len(d) in (4, 5):
            # cuDNN computes the strides itself; they are read back below.
            self._make(
                ("cudnnSetTensorNdDescriptorEx", tensor_format, cudnn_type, len(d), _c_ints(d))
            )
        else:
            self._make(("cudnnSetTensorNdDescriptor", cudnn_type, len(d), _c_ints(d), _c_ints(s)))
        self._dtype = dt
        self._cudnn_type = cudnn_type
        self._vector: int | None = None
        self._fmt = f.name if f is not None else None
        self._dims, self._strides, _ = self._read_back()
        if self._strides != s:  # cannot happen unless cuDNN changed its NCHW/NHWC rules
            _log.warning("cuDNN chose strides %s for %s where %s was expected", self._strides, f, s)
        self._size = layout.min_buffer_size(self._dims, self._strides) * dt.itemsize

    def _init_vectorized(  # noqa: PLR0917 - private, called once
        self,
        d: tuple[int, ...],
        strides: Sequence[int] | None,
        dtype: Any,
        f: layout.Format,
        vector: int | None,
        elem: str | None,
    ) -> None:
        if strides is not None:
            raise ValueError(
                f"fmt {f.name!r} is a vectorised layout; its strides follow from the format, do not "
                "pass strides"
            )
        if vector is not None and vector != f.vector:
            raise ValueError(
                f"dtype {dtype!r} has vectors of {vector}, fmt {f.name!r} of {f.vector}"
            )
        if len(d) != f.rank:
            raise ValueError(f"fmt {f.name!r} needs {f.rank} dims ({f.logical}), got {len(d)}: {d}")
        if elem is None:
            elem = dtype_name(as_numpy_dtype(dtype))
        cudnn_name = _VECTOR_TYPES.get((elem, int(f.vector or 0)))
        if cudnn_name is None:
            raise TypeError(
                f"fmt {f.name!r} with dtype {elem}: cuDNN's vectorised layouts exist only for "
                "int8 (NC/4HW4 as INT8x4, NC/32HW32 as INT8x32) and uint8 (NC/4HW4 as UINT8x4)"
            )
        if d[1] % int(f.vector or 1):
            raise ValueError(
                f"fmt {f.name!r} needs C (dims[1]) to be a multiple of {f.vector}, got C = {d[1]}"
            )
        vectors = math.prod(d) // int(f.vector or 1)
        if vectors > _INT_MAX:  # cuDNN counts the span in vectors here; see _too_large_text
            raise ValueError(_too_large_text(f"dims {d} in {f.name}", vectors, "vectors"))
        cudnn_type = _data_type_value(cudnn_name)
        self._make(
            (
                "cudnnSetTensorNdDescriptorEx",
                _b.CUDNN_TENSOR_NCHW_VECT_C,
                cudnn_type,
                len(d),
                _c_ints(d),
            )
        )
        self._dtype = as_numpy_dtype(elem)
        self._cudnn_type = cudnn_type
        self._vector = int(f.vector or 0)
        self._fmt = f.name
        self._dims, self._strides, _ = self._read_back()
        # Computed here, not asked from cuDNN: cudnnGetTensorSizeInBytes is only right for the
        # INT8x4/INT8x32 types (plain INT8 in NCHW_VECT_C reports a quarter of the size).
        self._size = math.prod(d) * self._dtype.itemsize

    def _read_back(self) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        dt, nb = ctypes.c_int(), ctypes.c_int()
        dims, strides = (ctypes.c_int * _MAX_RANK)(), (ctypes.c_int * _MAX_RANK)()
        self._query("cudnnGetTensorNdDescriptor", _MAX_RANK, dt, nb, dims, strides)
        n = nb.value
        return tuple(dims[:n]), tuple(strides[:n]), dt.value

    # -- read-back properties ------------------------------------------------------------
    dims = read_back[tuple[int, ...]](
        0, """Extents in logical order, as cuDNN reports them (``cudnnGetTensorNdDescriptor``)."""
    )
    strides = read_back[tuple[int, ...]](
        1, """Strides in elements, as cuDNN reports them (whole vectors for NC/xHWx formats)."""
    )

    @property
    def nbdims(self) -> int:
        """Number of dimensions (``cudnnGetTensorNdDescriptor``'s nbDims)."""
        self._check_open()
        return len(self._dims)

    dtype = read_back[np.dtype](
        2, """The element type (int8 / uint8 for the vectorised types).""", convert=_dtype_of_value
    )
    cudnn_data_type = read_back[Any](
        2,
        """The ``cudnnDataType_t`` member (``INT8x32`` etc. for vectorised layouts).""",
        convert=_b.cudnnDataType_t,
    )

    @property
    def vector_count(self) -> int:
        """4 or 32 for the ``NC/xHWx`` layouts, else 1."""
        self._check_open()
        return self._vector or 1

    @property
    def fmt(self) -> str | None:
        """The format string the descriptor was made with (None for explicit strides)."""
        self._check_open()  # like every other property of a closed descriptor
        return self._fmt

    @property
    def size_in_bytes(self) -> int:
        """Bytes an array of this layout spans, computed from dims and strides.

        For plain types this equals ``cudnnGetTensorSizeInBytes`` (see :attr:`cudnn_size_in_bytes`);
        for the vectorised layouts it is computed here because cuDNN misreports some of them.
        """
        self._check_open()
        return self._size

    @property
    def cudnn_size_in_bytes(self) -> int:
        """What ``cudnnGetTensorSizeInBytes`` reports."""
        return int(self._query_value("cudnnGetTensorSizeInBytes", ctypes.c_size_t))

    def _array(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        self._check_open()
        if self._vector:
            return layout.vectorized_dims_strides(self._dims, self._fmt or "")
        return self._dims, self._strides

    array_shape = read_back[tuple[int, ...]](
        0,
        """Shape of the array that holds this tensor: ``dims``, or ``[N, C/x, H, W, x]``.""",
        source="_array",
    )
    array_strides = read_back[tuple[int, ...]](
        1,
        """Strides (elements) of the array that holds this tensor (packed for NC/xHWx).""",
        source="_array",
    )

    @property
    def is_overlapping(self) -> bool:
        """True if some address is reached twice (:func:`pycudnn.layout.is_overlapping`)."""
        self._check_open()
        return bool(self._vector is None and layout.is_overlapping(self._dims, self._strides))

    def check_output(self) -> None:
        """Raise ValueError if this layout may not be an output (it overlaps)."""
        if self.is_overlapping:
            raise ValueError(
                f'an output tensor may not overlap (cuDNN: "dimensions of the output tensors '
                f'cannot overlap"), but dims {self._dims} with strides {self._strides} reach some '
                "address twice"
            )

    def _dtype_text(self) -> str:
        if self._vector:
            return str(_b.cudnnDataType_t(self._cudnn_type).name).lower()
        return dtype_name(self._dtype)

    def key(self) -> tuple[Any, ...]:
        """A hashable value identifying this layout (for caches keyed by value)."""
        self._check_open()
        return (self._dims, self._strides, self._cudnn_type)

    def _describe(self) -> str:
        extra = f" fmt={self._fmt}" if self._fmt else ""
        return f"dims={self._dims} strides={self._strides} dtype={self._dtype_text()}{extra}"


# Formats cudnnSetTensorNdDescriptorEx computes strides for (4-D and 5-D).
_EX_FORMATS: dict[str, int] = {
    "NCHW": int(_b.CUDNN_TENSOR_NCHW),
    "NCDHW": int(_b.CUDNN_TENSOR_NCHW),
    "NHWC": int(_b.CUDNN_TENSOR_NHWC),
    "NDHWC": int(_b.CUDNN_TENSOR_NHWC),
}
