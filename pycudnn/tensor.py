"""Legacy cuDNN descriptors: tensors, filters, convolutions, pooling, activations, reductions.

Each class owns one C descriptor (a :class:`~pycudnn._shared.resource.CResource`): ``close()``,
``with`` and garbage collection destroy it once. Arguments are checked in Python before C is
called, with messages that name the argument and the rule; what the library reports back is read
back from it (``dims``, ``strides``, ``size_in_bytes``...).

Dims are always given in logical order (``N, C, [D,] H, W``; ``K, C, [T,] R, S`` for filters). A
layout is given either as explicit strides (in elements) or as a format string of
:mod:`pycudnn.layout` (``"NCHW"``, ``"NHWC"``, ``"CHWN"``, ``"NCDHW"``, ``"NC/32HW32"``...).

cuDNN 9 deprecates every descriptor here except :class:`TensorDescriptor` (the graph API replaces
them); they still work, and the first use of each emits one ``DeprecationWarning`` per process.

:func:`check_operand` is the validation every pycudnn operation applies to its array arguments.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _bindings as _b
from . import layout
from ._lib import LIB, check
from ._shared.arrays import ArrayView, as_array_view
from ._shared.dtypes import as_numpy_dtype, dtype_name
from ._shared.resource import CResource

__all__ = [
    "ActivationDescriptor",
    "ConvolutionDescriptor",
    "FilterDescriptor",
    "OpTensorDescriptor",
    "PoolingDescriptor",
    "ReduceTensorDescriptor",
    "TensorCoreWarning",
    "TensorDescriptor",
    "check_operand",
    "legacy_data_type",
]

_log = logging.getLogger("pycudnn")

_INT_MAX = 2**31 - 1  # dims, strides, pads are C ints in the legacy API
_MIN_RANK, _MAX_RANK = 3, 8  # "a number of dimensions from 3 to 8" (cuDNN core concepts)
_TENSOR_CORE_ALIGNMENT = 16  # "aligned to 128-bit boundaries" (Tensor Core guidelines)


class TensorCoreWarning(UserWarning):
    """Tensor-op math was requested where cuDNN's Tensor Core guidelines say it cannot pay off."""


# -- small helpers ---------------------------------------------------------------------------


def call(name: str, *args: Any) -> None:
    """Call C function ``name`` and raise for its status; a closed argument raises ClosedError."""
    for arg in args:
        if isinstance(arg, CResource):
            arg._check_open()
    check(LIB.function(name)(*args), name)


_call = call


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_deprecated_once(what: str, instead: str, *, stacklevel: int = 3) -> None:
    """One ``DeprecationWarning`` per ``what`` per process (cuDNN 9 deprecates the legacy API)."""
    if what in _warned:
        return
    with _warned_lock:
        if what in _warned:
            return
        _warned.add(what)
    warnings.warn(
        f"{what} uses API that cuDNN 9 deprecates; it still works, but new code should use "
        f"{instead}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def _int(value: Any, name: str, *, minimum: int | None = None, maximum: int = _INT_MAX) -> int:
    # bool is an int subclass: refuse it so that True is never read as an extent of 1.
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if v > maximum:
        raise ValueError(f"{name} = {v} exceeds the largest value cuDNN accepts ({maximum})")
    return v


def _ints(values: Any, name: str, *, minimum: int | None = None) -> tuple[int, ...]:
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(
                f"{name} must be one-dimensional, got an array of shape {values.shape}"
            )
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    return tuple(_int(v, f"{name}[{i}]", minimum=minimum) for i, v in enumerate(values))


def _real(value: Any, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        v = float(value)
    except OverflowError:  # an int beyond the double range: say which argument, as for inf
        raise ValueError(f"{name} must be finite, got {value!r}, beyond the double range") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def _c_ints(values: Sequence[int]) -> Any:
    return (ctypes.c_int * max(len(values), 1))(*values)


def _choice(value: Any, name: str, table: dict[str, int]) -> int:
    """Map a lower-case name (or an int already in the table's values) to the C enumerator."""
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_")
        if key in table:
            return table[key]
    elif (
        isinstance(value, (int, np.integer))
        and not isinstance(value, bool)
        and int(value) in table.values()
    ):
        return int(value)
    raise ValueError(f"{name}={value!r} is not one of {', '.join(repr(k) for k in table)}")


def _name_of(value: int, table: dict[str, int]) -> str:
    for k, v in table.items():
        if v == value:
            return k
    return str(value)


# -- data types ------------------------------------------------------------------------------

# What cudnnSetTensorNdDescriptor accepts. Probed on cuDNN 9.28: INT64, BOOLEAN, the FP8, FP4
# and INT4 types, UINT32 and the complex types all return CUDNN_STATUS_BAD_PARAM there (the graph
# API's backend tensors take them).
_LEGACY_TYPE_NAMES: dict[str, str] = {
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "float16": "HALF",
    "bfloat16": "BFLOAT16",
    "int8": "INT8",
    "uint8": "UINT8",
    "int32": "INT32",
}
# The deprecated vectorised types of the NCHW_VECT_C format, keyed by (element type, vector count).
_VECTOR_TYPES: dict[tuple[str, int], str] = {
    ("int8", 4): "INT8x4",
    ("uint8", 4): "UINT8x4",
    ("int8", 32): "INT8x32",
}
_VECTOR_DTYPE_STRINGS: dict[str, tuple[str, int]] = {
    "int8x4": ("int8", 4),
    "uint8x4": ("uint8", 4),
    "int8x32": ("int8", 32),
}


def _data_type_value(name: str) -> int:
    return int(getattr(_b, f"CUDNN_DATA_{name}"))


def legacy_data_type(dtype: Any, *, name: str = "dtype") -> tuple[np.dtype, int]:
    """``(numpy dtype, cudnnDataType_t)`` for a dtype the legacy descriptors accept.

    Raises TypeError for anything else, naming what cuDNN's legacy API accepts.
    """
    dt = as_numpy_dtype(dtype, name=name)
    key = dtype_name(dt)
    cudnn_name = _LEGACY_TYPE_NAMES.get(key)
    if cudnn_name is None:
        accepted = ", ".join(_LEGACY_TYPE_NAMES)
        raise TypeError(
            f"{name}={key}: cuDNN's legacy tensor descriptors (cudnnSetTensorNdDescriptor) reject "
            f"this type with CUDNN_STATUS_BAD_PARAM; they accept {accepted} (and int8x4, uint8x4, "
            "int8x32 in the NC/xHWx formats). Use the graph API for int64, bool, fp8 and the "
            "other narrow types."
        )
    return dt, _data_type_value(cudnn_name)


def _compute_type(value: Any, name: str, allowed: tuple[str, ...]) -> int:
    dt = as_numpy_dtype(value, name=name)
    key = dtype_name(dt)
    if key not in allowed:
        raise TypeError(f"{name}={key} is not a compute type here; use one of {', '.join(allowed)}")
    return _data_type_value(_LEGACY_TYPE_NAMES[key])


def _dtype_of_value(value: int) -> np.dtype:
    for key, cudnn_name in _LEGACY_TYPE_NAMES.items():
        if _data_type_value(cudnn_name) == value:
            return as_numpy_dtype(key)
    for (key, _count), cudnn_name in _VECTOR_TYPES.items():
        if _data_type_value(cudnn_name) == value:
            return as_numpy_dtype(key)
    raise ValueError(f"cuDNN reported an unexpected cudnnDataType_t {value}")


# -- tensor descriptor -----------------------------------------------------------------------


def _check_dims(dims: Any, name: str = "dims", what: str = "TensorDescriptor") -> tuple[int, ...]:
    d = _ints(dims, name)
    if not _MIN_RANK <= len(d) <= _MAX_RANK:
        raise ValueError(
            f"{what} takes {_MIN_RANK} to {_MAX_RANK} dims (cuDNN's rule: \"a number of dimensions "
            f'from 3 to 8"), got {len(d)}: {d}. Add leading dims of extent 1 for fewer.'
        )
    for i, n in enumerate(d):
        if n < 1:
            raise ValueError(f"{name}[{i}] = {n}: every extent must be positive (>= 1)")
    return d


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
        if st < 0:
            raise ValueError(
                f"strides[{i}] = {st}: negative strides are not supported by cuDNN routines "
                '("cuDNN routines do not support tensors with negative strides")'
            )
        if st == 0 and n > 1:
            raise ValueError(
                f"strides[{i}] = 0 with dims[{i}] = {n}: cuDNN allows a zero stride only for an "
                "extent-1 dim (broadcast by repeating data is not expressible)"
            )
    return s


class TensorDescriptor(CResource):
    """A legacy N-d tensor descriptor (``cudnnTensorDescriptor_t``).

    ``TensorDescriptor(dims, strides=None, dtype=np.float32, fmt=None, *, output=False)``

    * ``dims``: 3 to 8 positive extents in logical order.
    * ``strides``: in elements, non-negative; or ``fmt``, a layout format (strides from
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

    _kind = "cuDNN tensor descriptor"

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
        vector: int | None = None
        elem: str | None = None
        if isinstance(dtype, str) and dtype.strip().lower() in _VECTOR_DTYPE_STRINGS:
            elem, vector = _VECTOR_DTYPE_STRINGS[dtype.strip().lower()]
            if fmt is None:
                fmt = f"NC/{vector}HW{vector}" if len(d) == 4 else f"NC/{vector}DHW{vector}"
        f = layout.parse_format(fmt) if fmt is not None else None
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
    def _create(self) -> int:
        out = ctypes.c_void_p()
        _call("cudnnCreateTensorDescriptor", ctypes.byref(out))
        return int(out.value or 0)

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
        ptr = self._create()
        try:
            tensor_format = _EX_FORMATS.get(f.name) if f is not None else None
            if tensor_format is not None and len(d) in (4, 5):
                # cuDNN computes the strides itself; they are read back below.
                _call(
                    "cudnnSetTensorNdDescriptorEx",
                    ptr,
                    tensor_format,
                    cudnn_type,
                    len(d),
                    _c_ints(d),
                )
            else:
                _call("cudnnSetTensorNdDescriptor", ptr, cudnn_type, len(d), _c_ints(d), _c_ints(s))
        except BaseException:
            _destroy_tensor(ptr)
            raise
        super().__init__(ptr, _destroy_tensor)
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
        ptr = self._create()
        try:
            _call(
                "cudnnSetTensorNdDescriptorEx",
                ptr,
                _b.CUDNN_TENSOR_NCHW_VECT_C,
                cudnn_type,
                len(d),
                _c_ints(d),
            )
        except BaseException:
            _destroy_tensor(ptr)
            raise
        super().__init__(ptr, _destroy_tensor)
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
        _call(
            "cudnnGetTensorNdDescriptor",
            self,
            _MAX_RANK,
            ctypes.byref(dt),
            ctypes.byref(nb),
            dims,
            strides,
        )
        n = nb.value
        return tuple(dims[:n]), tuple(strides[:n]), dt.value

    # -- read-back properties ------------------------------------------------------------
    @property
    def dims(self) -> tuple[int, ...]:
        """Extents in logical order, as cuDNN reports them (``cudnnGetTensorNdDescriptor``)."""
        return self._read_back()[0]

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements, as cuDNN reports them (whole vectors for NC/xHWx formats)."""
        return self._read_back()[1]

    @property
    def nbdims(self) -> int:
        self._check_open()
        return len(self._dims)

    @property
    def dtype(self) -> np.dtype:
        """The element type (int8 / uint8 for the vectorised types)."""
        dt = _dtype_of_value(self._read_back()[2])
        return dt

    @property
    def cudnn_data_type(self) -> Any:
        """The ``cudnnDataType_t`` member (``INT8x32`` etc. for vectorised layouts)."""
        return _b.cudnnDataType_t(self._read_back()[2])

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
        size = ctypes.c_size_t()
        _call("cudnnGetTensorSizeInBytes", self, ctypes.byref(size))
        return int(size.value)

    @property
    def array_shape(self) -> tuple[int, ...]:
        """Shape of the array that holds this tensor: ``dims``, or ``[N, C/x, H, W, x]``."""
        self._check_open()
        if self._vector:
            return layout.vectorized_dims_strides(self._dims, self._fmt or "")[0]
        return self._dims

    @property
    def array_strides(self) -> tuple[int, ...]:
        """Strides (elements) of the array that holds this tensor (packed for NC/xHWx)."""
        self._check_open()
        if self._vector:
            return layout.vectorized_dims_strides(self._dims, self._fmt or "")[1]
        return self._strides

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

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.TensorDescriptor closed>"
        extra = f" fmt={self._fmt}" if self._fmt else ""
        return (
            f"<pycudnn.TensorDescriptor dims={self._dims} strides={self._strides} "
            f"dtype={self._dtype_text()}{extra}>"
        )


def _destroy_tensor(ptr: int) -> None:
    LIB.function("cudnnDestroyTensorDescriptor")(ptr)


# Formats cudnnSetTensorNdDescriptorEx computes strides for (4-D and 5-D).
_EX_FORMATS: dict[str, int] = {
    "NCHW": int(_b.CUDNN_TENSOR_NCHW),
    "NCDHW": int(_b.CUDNN_TENSOR_NCHW),
    "NHWC": int(_b.CUDNN_TENSOR_NHWC),
    "NDHWC": int(_b.CUDNN_TENSOR_NHWC),
}


# -- filter descriptor -----------------------------------------------------------------------

_FILTER_FORMATS: dict[str, int] = {
    "nchw": int(_b.CUDNN_TENSOR_NCHW),
    "kcrs": int(_b.CUDNN_TENSOR_NCHW),
    "ncdhw": int(_b.CUDNN_TENSOR_NCHW),
    "nhwc": int(_b.CUDNN_TENSOR_NHWC),
    "krsc": int(_b.CUDNN_TENSOR_NHWC),
    "ndhwc": int(_b.CUDNN_TENSOR_NHWC),
}


def _packed_in(dims: tuple[int, ...], perm: Sequence[int]) -> tuple[int, ...]:
    strides = [0] * len(dims)
    step = 1
    for axis in reversed(perm):
        strides[axis] = step
        step *= dims[axis]
    return tuple(strides)


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
        return _packed_in(self._dims, tuple(perm))

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


# -- convolution descriptor ------------------------------------------------------------------

_CONV_MODES = {
    "cross_correlation": int(_b.CUDNN_CROSS_CORRELATION),
    "convolution": int(_b.CUDNN_CONVOLUTION),
}
_MATH_TYPES = {
    "default": int(_b.CUDNN_DEFAULT_MATH),
    "tensor_op": int(_b.CUDNN_TENSOR_OP_MATH),
    "tensor_op_allow_conversion": int(_b.CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION),
    "fma": int(_b.CUDNN_FMA_MATH),
}
_TENSOR_OP_MATH = {_MATH_TYPES["tensor_op"], _MATH_TYPES["tensor_op_allow_conversion"]}
_CONV_COMPUTE_TYPES = ("float32", "float64", "float16", "bfloat16", "int32")


class ConvolutionDescriptor(CResource):
    """A legacy convolution descriptor (``cudnnConvolutionDescriptor_t``), deprecated in cuDNN 9.

    ``ConvolutionDescriptor(pads, strides=None, dilations=None, *, mode="cross_correlation",
    compute_type=np.float32, math_type="default", groups=1)`` over
    ``cudnnSetConvolutionNdDescriptor``, ``cudnnSetConvolutionMathType`` and
    ``cudnnSetConvolutionGroupCount``. One pad, stride and dilation per spatial dim (1 to 6);
    strides and dilations default to 1. ``mode="cross_correlation"`` is what deep-learning
    frameworks call convolution. ``math_type`` is one of ``"default"``, ``"tensor_op"``,
    ``"tensor_op_allow_conversion"``, ``"fma"`` (``cudnnMathType_t``).
    """

    _kind = "cuDNN convolution descriptor"

    def __init__(
        self,
        pads: Sequence[int],
        strides: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        *,
        mode: str = "cross_correlation",
        compute_type: Any = np.float32,
        math_type: str = "default",
        groups: int = 1,
    ) -> None:
        warn_deprecated_once("pycudnn.ConvolutionDescriptor", "the graph API (pycudnn.Graph)")
        p = _ints(pads, "pads", minimum=0)
        if not 1 <= len(p) <= _MAX_RANK - 2:
            raise ValueError(
                f"pads has {len(p)} entries: give one per spatial dim (1 to {_MAX_RANK - 2})"
            )
        s = _ints(strides, "strides", minimum=1) if strides is not None else (1,) * len(p)
        dl = _ints(dilations, "dilations", minimum=1) if dilations is not None else (1,) * len(p)
        for name, values in (("strides", s), ("dilations", dl)):
            if len(values) != len(p):
                raise ValueError(f"{name} has {len(values)} entries but pads has {len(p)}")
        conv_mode = _choice(mode, "mode", _CONV_MODES)
        ctype = _compute_type(compute_type, "compute_type", _CONV_COMPUTE_TYPES)
        math = _choice(math_type, "math_type", _MATH_TYPES)
        g = _int(groups, "groups", minimum=1)
        out = ctypes.c_void_p()
        _call("cudnnCreateConvolutionDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call(
                "cudnnSetConvolutionNdDescriptor",
                ptr,
                len(p),
                _c_ints(p),
                _c_ints(s),
                _c_ints(dl),
                conv_mode,
                ctype,
            )
            _call("cudnnSetConvolutionMathType", ptr, math)
            _call("cudnnSetConvolutionGroupCount", ptr, g)
        except BaseException:
            _destroy_conv(ptr)
            raise
        super().__init__(ptr, _destroy_conv)
        self._spatial = len(p)
        self._key = (p, s, dl, conv_mode, ctype, math, g)

    def _read_back(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int, int]:
        n = ctypes.c_int()
        p, s, d = (ctypes.c_int * 6)(), (ctypes.c_int * 6)(), (ctypes.c_int * 6)()
        mode, ctype = ctypes.c_int(), ctypes.c_int()
        _call(
            "cudnnGetConvolutionNdDescriptor",
            self,
            6,
            ctypes.byref(n),
            p,
            s,
            d,
            ctypes.byref(mode),
            ctypes.byref(ctype),
        )
        k = n.value
        return tuple(p[:k]), tuple(s[:k]), tuple(d[:k]), mode.value, ctype.value

    @property
    def spatial_dims(self) -> int:
        self._check_open()
        return self._spatial

    @property
    def pads(self) -> tuple[int, ...]:
        return self._read_back()[0]

    @property
    def strides(self) -> tuple[int, ...]:
        return self._read_back()[1]

    @property
    def dilations(self) -> tuple[int, ...]:
        return self._read_back()[2]

    @property
    def mode(self) -> str:
        return _name_of(self._read_back()[3], _CONV_MODES)

    @property
    def compute_type(self) -> np.dtype:
        return _dtype_of_value(self._read_back()[4])

    @property
    def math_type(self) -> str:
        """``cudnnGetConvolutionMathType`` as a name (``"default"``, ``"tensor_op"``, ...)."""
        out = ctypes.c_int()
        _call("cudnnGetConvolutionMathType", self, ctypes.byref(out))
        return _name_of(out.value, _MATH_TYPES)

    @property
    def groups(self) -> int:
        """``cudnnGetConvolutionGroupCount``."""
        out = ctypes.c_int()
        _call("cudnnGetConvolutionGroupCount", self, ctypes.byref(out))
        return int(out.value)

    @property
    def uses_tensor_ops(self) -> bool:
        self._check_open()
        return self._key[5] in _TENSOR_OP_MATH

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def _check_operands(self, x_desc: TensorDescriptor, w_desc: FilterDescriptor) -> None:
        if not isinstance(x_desc, TensorDescriptor):
            raise TypeError(f"x_desc must be a TensorDescriptor, got {type(x_desc).__name__}")
        if not isinstance(w_desc, FilterDescriptor):
            raise TypeError(f"w_desc must be a FilterDescriptor, got {type(w_desc).__name__}")
        self._check_open()
        x_desc._check_open()
        w_desc._check_open()
        xd, wd = x_desc._dims, w_desc._dims
        if len(xd) != self._spatial + 2 or len(wd) != self._spatial + 2:
            raise ValueError(
                f"a convolution with {self._spatial} spatial dims needs {self._spatial + 2}-D x and "
                f"w, got x dims {xd} and w dims {wd}"
            )
        pads, _strides, dils, _mode, _ct, _math, groups = self._key
        if xd[1] != wd[1] * groups:
            raise ValueError(
                f"x has C = {xd[1]} channels but w expects {wd[1]} per group x {groups} groups "
                f"= {wd[1] * groups}"
            )
        if wd[0] % groups:
            raise ValueError(
                f"w has K = {wd[0]} output channels, not a multiple of groups = {groups}"
            )
        for i in range(self._spatial):
            _check_padded_extent(xd[2 + i], pads[i], i)
            extent = dils[i] * (wd[2 + i] - 1) + 1
            if extent > xd[2 + i] + 2 * pads[i]:
                raise ValueError(
                    f"spatial dim {i}: the dilated filter spans {extent} but the padded input has "
                    f"only {xd[2 + i] + 2 * pads[i]} (x extent {xd[2 + i]}, pad {pads[i]})"
                )

    def output_dims(self, x_desc: TensorDescriptor, w_desc: FilterDescriptor) -> tuple[int, ...]:
        """Dims of the output tensor (``cudnnGetConvolutionNdForwardOutputDim``).

        With tensor-op math requested, also checks the Tensor Core guidelines that concern the
        layouts (see :meth:`tensor_core_issues`) and emits a :class:`TensorCoreWarning`.
        """
        dims = self._output_dims(x_desc, w_desc)
        if self.uses_tensor_ops:
            self.warn_tensor_cores(x_desc, w_desc, stacklevel=2)
        return dims

    def _output_dims(self, x_desc: TensorDescriptor, w_desc: FilterDescriptor) -> tuple[int, ...]:
        self._check_operands(x_desc, w_desc)
        n = len(x_desc._dims)
        out = (ctypes.c_int * n)()
        _call("cudnnGetConvolutionNdForwardOutputDim", self, x_desc, w_desc, n, out)
        return tuple(out)

    def tensor_core_issues(
        self,
        x_desc: TensorDescriptor,
        w_desc: FilterDescriptor,
        pointers: Sequence[tuple[str, int]] = (),
    ) -> list[str]:
        """The Tensor Core guidelines of cuDNN's core concepts that this convolution breaks.

        The guidelines: inputs and filters in NHWC; channels and batch size multiples of 8; every
        buffer (named ``pointers``) aligned to 128 bits. cuDNN then falls back to non-Tensor-Core
        kernels ("scalar paths ... legitimate fallbacks"), so these cost speed, not correctness.
        """
        self._check_operands(x_desc, w_desc)
        issues = []
        xd, xs = x_desc._dims, x_desc._strides
        perm = channels_last_perm(len(xd))
        if x_desc._vector is None and xs != _packed_in(xd, perm):
            issues.append(f"x is not packed channels-last (NHWC); its strides are {xs}")
        if not w_desc._channels_last:
            issues.append("w is not in NHWC (KRSC) format")
        groups = self._key[6]
        for what, value in (
            ("the batch size N", xd[0]),
            ("the input channels per group C", w_desc._dims[1]),
            ("the output channels K", w_desc._dims[0] // groups),
        ):
            if value % 8:
                issues.append(f"{what} = {value} is not a multiple of 8")
        for name, ptr in pointers:
            if ptr % _TENSOR_CORE_ALIGNMENT:
                issues.append(f"{name} at 0x{ptr:x} is not aligned to 128 bits (16 bytes)")
        return issues

    def warn_tensor_cores(
        self,
        x_desc: TensorDescriptor,
        w_desc: FilterDescriptor,
        pointers: Sequence[tuple[str, int]] = (),
        *,
        stacklevel: int = 1,
    ) -> list[str]:
        """Emit one :class:`TensorCoreWarning` listing :meth:`tensor_core_issues`, if any.

        ``stacklevel`` counts from the caller of this method (1: the warning names the caller).
        """
        issues = self.tensor_core_issues(x_desc, w_desc, pointers)
        if issues:
            warnings.warn(
                f"math_type={_name_of(self._key[5], _MATH_TYPES)!r} asks for Tensor Cores, but "
                + "; ".join(issues)
                + " (cuDNN's Tensor Core guidelines); cuDNN may fall back to slower kernels",
                TensorCoreWarning,
                stacklevel=stacklevel + 1,
            )
        return issues

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.ConvolutionDescriptor closed>"
        p, s, d, mode, ctype, math_type, g = self._key
        return (
            f"<pycudnn.ConvolutionDescriptor pads={p} strides={s} dilations={d} "
            f"mode={_name_of(mode, _CONV_MODES)} compute={dtype_name(_dtype_of_value(ctype))} "
            f"math={_name_of(math_type, _MATH_TYPES)} groups={g}>"
        )


def _check_padded_extent(extent: int, pad: int, i: int) -> None:
    # cuDNN computes extent + 2 * pad in a C int: beyond 2**31 - 1 it overflows and
    # cudnnGet*NdForwardOutputDim returns CUDNN_STATUS_BAD_PARAM with no error text.
    if extent + 2 * pad > _INT_MAX:
        raise ValueError(
            f"spatial dim {i}: x extent {extent} plus twice the pad {pad} is {extent + 2 * pad}, "
            f"beyond the 32-bit range of cuDNN's legacy API ({_INT_MAX})"
        )


def _destroy_conv(ptr: int) -> None:
    LIB.function("cudnnDestroyConvolutionDescriptor")(ptr)


# -- pooling, activation, op-tensor, reduce-tensor -------------------------------------------

_POOLING_MODES = {
    "max": int(_b.CUDNN_POOLING_MAX),
    "avg": int(_b.CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING),
    "avg_include_padding": int(_b.CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING),
    "avg_exclude_padding": int(_b.CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING),
    "max_deterministic": int(_b.CUDNN_POOLING_MAX_DETERMINISTIC),
}


def _nan_opt(propagate: Any, name: str = "nan_propagation") -> int:
    if not isinstance(propagate, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(propagate).__name__}")
    return int(_b.CUDNN_PROPAGATE_NAN if propagate else _b.CUDNN_NOT_PROPAGATE_NAN)


class PoolingDescriptor(CResource):
    """A legacy pooling descriptor (``cudnnSetPoolingNdDescriptor``), deprecated in cuDNN 9.

    ``mode``: ``"max"``, ``"avg"`` (= ``"avg_include_padding"``), ``"avg_exclude_padding"``,
    ``"max_deterministic"``. ``window`` has one extent per spatial dim; ``pads`` default to 0 and
    must be smaller than the window; ``strides`` default to the window.
    """

    _kind = "cuDNN pooling descriptor"

    def __init__(
        self,
        mode: str = "max",
        window: Sequence[int] = (2, 2),
        pads: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        *,
        nan_propagation: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.PoolingDescriptor", "the graph API (pycudnn.Graph)")
        m = _choice(mode, "mode", _POOLING_MODES)
        w = _ints(window, "window", minimum=1)
        if not 1 <= len(w) <= _MAX_RANK - 2:
            raise ValueError(f"window has {len(w)} entries: give one per spatial dim (1 to 6)")
        p = _ints(pads, "pads", minimum=0) if pads is not None else (0,) * len(w)
        s = _ints(strides, "strides", minimum=1) if strides is not None else w
        for name, values in (("pads", p), ("strides", s)):
            if len(values) != len(w):
                raise ValueError(f"{name} has {len(values)} entries but window has {len(w)}")
        for i, (pi, wi) in enumerate(zip(p, w, strict=True)):
            if pi >= wi:
                raise ValueError(
                    f"pads[{i}] = {pi} must be smaller than window[{i}] = {wi}: a window lying "
                    "entirely in the padding has nothing to pool"
                )
        nan = _nan_opt(nan_propagation)
        out = ctypes.c_void_p()
        _call("cudnnCreatePoolingDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call(
                "cudnnSetPoolingNdDescriptor",
                ptr,
                m,
                nan,
                len(w),
                _c_ints(w),
                _c_ints(p),
                _c_ints(s),
            )
        except BaseException:
            _destroy_pooling(ptr)
            raise
        super().__init__(ptr, _destroy_pooling)
        self._key = (m, nan, w, p, s)

    def _read_back(self) -> tuple[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        mode, nan, n = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        w, p, s = (ctypes.c_int * 6)(), (ctypes.c_int * 6)(), (ctypes.c_int * 6)()
        _call(
            "cudnnGetPoolingNdDescriptor",
            self,
            6,
            ctypes.byref(mode),
            ctypes.byref(nan),
            ctypes.byref(n),
            w,
            p,
            s,
        )
        k = n.value
        return mode.value, nan.value, tuple(w[:k]), tuple(p[:k]), tuple(s[:k])

    @property
    def mode(self) -> str:
        value = self._read_back()[0]
        return (
            "avg_include_padding"
            if value == _POOLING_MODES["avg"]
            else _name_of(value, _POOLING_MODES)
        )

    @property
    def window(self) -> tuple[int, ...]:
        return self._read_back()[2]

    @property
    def pads(self) -> tuple[int, ...]:
        return self._read_back()[3]

    @property
    def strides(self) -> tuple[int, ...]:
        return self._read_back()[4]

    @property
    def spatial_dims(self) -> int:
        self._check_open()
        return len(self._key[2])

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def output_dims(self, x_desc: TensorDescriptor) -> tuple[int, ...]:
        """Dims of the pooled tensor (``cudnnGetPoolingNdForwardOutputDim``)."""
        if not isinstance(x_desc, TensorDescriptor):
            raise TypeError(f"x_desc must be a TensorDescriptor, got {type(x_desc).__name__}")
        self._check_open()
        x_desc._check_open()
        xd = x_desc._dims
        k = len(self._key[2])
        if len(xd) != k + 2:
            raise ValueError(f"a {k}-D pooling window needs a {k + 2}-D x, got dims {xd}")
        for i in range(k):
            _check_padded_extent(xd[2 + i], self._key[3][i], i)
            if self._key[2][i] > xd[2 + i] + 2 * self._key[3][i]:
                raise ValueError(
                    f"window[{i}] = {self._key[2][i]} exceeds the padded input extent "
                    f"{xd[2 + i] + 2 * self._key[3][i]}"
                )
        out = (ctypes.c_int * len(xd))()
        _call("cudnnGetPoolingNdForwardOutputDim", self, x_desc, len(xd), out)
        return tuple(out)

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.PoolingDescriptor closed>"
        m, _nan, w, p, s = self._key
        return f"<pycudnn.PoolingDescriptor {_name_of(m, _POOLING_MODES)} window={w} pads={p} strides={s}>"


def _destroy_pooling(ptr: int) -> None:
    LIB.function("cudnnDestroyPoolingDescriptor")(ptr)


_ACTIVATION_MODES = {
    "sigmoid": int(_b.CUDNN_ACTIVATION_SIGMOID),
    "relu": int(_b.CUDNN_ACTIVATION_RELU),
    "tanh": int(_b.CUDNN_ACTIVATION_TANH),
    "clipped_relu": int(_b.CUDNN_ACTIVATION_CLIPPED_RELU),
    "elu": int(_b.CUDNN_ACTIVATION_ELU),
    "identity": int(_b.CUDNN_ACTIVATION_IDENTITY),
    "swish": int(_b.CUDNN_ACTIVATION_SWISH),
}


class ActivationDescriptor(CResource):
    """A legacy activation descriptor (``cudnnSetActivationDescriptor``), deprecated in cuDNN 9.

    ``mode``: ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"clipped_relu"`` (``coef`` is the ceiling,
    > 0), ``"elu"`` (``coef`` is alpha), ``"swish"`` (``swish_beta``, set with
    ``cudnnSetActivationDescriptorSwishBeta``), ``"identity"``.
    """

    _kind = "cuDNN activation descriptor"

    def __init__(
        self,
        mode: str = "relu",
        coef: float = 0.0,
        *,
        swish_beta: float = 1.0,
        nan_propagation: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.ActivationDescriptor", "the graph API (pycudnn.Graph)")
        m = _choice(mode, "mode", _ACTIVATION_MODES)
        c = _real(coef, "coef")
        if m == _ACTIVATION_MODES["clipped_relu"] and c <= 0:
            raise ValueError(f"clipped_relu needs coef (the ceiling) > 0, got {c}")
        beta = _real(swish_beta, "swish_beta")
        nan = _nan_opt(nan_propagation)
        out = ctypes.c_void_p()
        _call("cudnnCreateActivationDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call("cudnnSetActivationDescriptor", ptr, m, nan, c)
            if m == _ACTIVATION_MODES["swish"]:
                _call("cudnnSetActivationDescriptorSwishBeta", ptr, beta)
        except BaseException:
            _destroy_activation(ptr)
            raise
        super().__init__(ptr, _destroy_activation)
        self._key = (m, nan, c, beta if m == _ACTIVATION_MODES["swish"] else None)

    @property
    def mode(self) -> str:
        """``cudnnGetActivationDescriptor``'s mode as a name."""
        return _name_of(self._read_back()[0], _ACTIVATION_MODES)

    @property
    def coef(self) -> float:
        return self._read_back()[2]

    @property
    def swish_beta(self) -> float:
        """``cudnnGetActivationDescriptorSwishBeta``."""
        out = ctypes.c_double()
        _call("cudnnGetActivationDescriptorSwishBeta", self, ctypes.byref(out))
        return float(out.value)

    def _read_back(self) -> tuple[int, int, float]:
        mode, nan, coef = ctypes.c_int(), ctypes.c_int(), ctypes.c_double()
        _call(
            "cudnnGetActivationDescriptor",
            self,
            ctypes.byref(mode),
            ctypes.byref(nan),
            ctypes.byref(coef),
        )
        return mode.value, nan.value, float(coef.value)

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.ActivationDescriptor closed>"
        return f"<pycudnn.ActivationDescriptor {_name_of(self._key[0], _ACTIVATION_MODES)} coef={self._key[2]}>"


def _destroy_activation(ptr: int) -> None:
    LIB.function("cudnnDestroyActivationDescriptor")(ptr)


_OP_TENSOR_OPS = {
    "add": int(_b.CUDNN_OP_TENSOR_ADD),
    "mul": int(_b.CUDNN_OP_TENSOR_MUL),
    "min": int(_b.CUDNN_OP_TENSOR_MIN),
    "max": int(_b.CUDNN_OP_TENSOR_MAX),
    "sqrt": int(_b.CUDNN_OP_TENSOR_SQRT),
    "not": int(_b.CUDNN_OP_TENSOR_NOT),
}
_FLOAT_COMPUTE_TYPES = ("float32", "float64")


class OpTensorDescriptor(CResource):
    """A legacy element-wise operation descriptor (``cudnnSetOpTensorDescriptor``), deprecated.

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"sqrt"``, ``"not"`` (the last two are
    unary). ``compute_type``: float32 (for float, half and bfloat16 data) or float64.
    """

    _kind = "cuDNN op-tensor descriptor"

    def __init__(
        self, op: str = "add", compute_type: Any = np.float32, *, nan_propagation: bool = False
    ) -> None:
        warn_deprecated_once("pycudnn.OpTensorDescriptor", "the graph API (pycudnn.Graph)")
        o = _choice(op, "op", _OP_TENSOR_OPS)
        ctype = _compute_type(compute_type, "compute_type", _FLOAT_COMPUTE_TYPES)
        nan = _nan_opt(nan_propagation)
        out = ctypes.c_void_p()
        _call("cudnnCreateOpTensorDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call("cudnnSetOpTensorDescriptor", ptr, o, ctype, nan)
        except BaseException:
            _destroy_op_tensor(ptr)
            raise
        super().__init__(ptr, _destroy_op_tensor)
        self._key = (o, ctype, nan)

    def _read_back(self) -> tuple[int, int, int]:
        op, ctype, nan = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        _call(
            "cudnnGetOpTensorDescriptor",
            self,
            ctypes.byref(op),
            ctypes.byref(ctype),
            ctypes.byref(nan),
        )
        return op.value, ctype.value, nan.value

    @property
    def op(self) -> str:
        return _name_of(self._read_back()[0], _OP_TENSOR_OPS)

    @property
    def compute_type(self) -> np.dtype:
        return _dtype_of_value(self._read_back()[1])

    @property
    def is_unary(self) -> bool:
        self._check_open()
        return self._key[0] in (_OP_TENSOR_OPS["sqrt"], _OP_TENSOR_OPS["not"])

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.OpTensorDescriptor closed>"
        return f"<pycudnn.OpTensorDescriptor {_name_of(self._key[0], _OP_TENSOR_OPS)}>"


def _destroy_op_tensor(ptr: int) -> None:
    LIB.function("cudnnDestroyOpTensorDescriptor")(ptr)


_REDUCE_OPS = {
    "add": int(_b.CUDNN_REDUCE_TENSOR_ADD),
    "mul": int(_b.CUDNN_REDUCE_TENSOR_MUL),
    "min": int(_b.CUDNN_REDUCE_TENSOR_MIN),
    "max": int(_b.CUDNN_REDUCE_TENSOR_MAX),
    "amax": int(_b.CUDNN_REDUCE_TENSOR_AMAX),
    "avg": int(_b.CUDNN_REDUCE_TENSOR_AVG),
    "norm1": int(_b.CUDNN_REDUCE_TENSOR_NORM1),
    "norm2": int(_b.CUDNN_REDUCE_TENSOR_NORM2),
    "mul_no_zeros": int(_b.CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS),
}
_INDEXED_REDUCE_OPS = {_REDUCE_OPS["min"], _REDUCE_OPS["max"], _REDUCE_OPS["amax"]}


class ReduceTensorDescriptor(CResource):
    """A legacy reduction descriptor (``cudnnSetReduceTensorDescriptor``), deprecated in cuDNN 9.

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"amax"``, ``"avg"``, ``"norm1"``,
    ``"norm2"``, ``"mul_no_zeros"``. ``indices=True`` (min, max and amax only) also returns the
    flattened index of the selected element, as 32-bit unsigned integers (the only index type
    cuDNN fully supports).
    """

    _kind = "cuDNN reduce-tensor descriptor"

    def __init__(
        self,
        op: str = "add",
        compute_type: Any = np.float32,
        *,
        nan_propagation: bool = False,
        indices: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.ReduceTensorDescriptor", "the graph API (pycudnn.Graph)")
        o = _choice(op, "op", _REDUCE_OPS)
        ctype = _compute_type(compute_type, "compute_type", _FLOAT_COMPUTE_TYPES)
        nan = _nan_opt(nan_propagation)
        if not isinstance(indices, (bool, np.bool_)):
            raise TypeError(f"indices must be a bool, got {type(indices).__name__}")
        if indices and o not in _INDEXED_REDUCE_OPS:
            raise ValueError(f"indices=True needs op 'min', 'max' or 'amax', not {op!r}")
        ind = int(
            _b.CUDNN_REDUCE_TENSOR_FLATTENED_INDICES
            if indices
            else _b.CUDNN_REDUCE_TENSOR_NO_INDICES
        )
        out = ctypes.c_void_p()
        _call("cudnnCreateReduceTensorDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call(
                "cudnnSetReduceTensorDescriptor",
                ptr,
                o,
                ctype,
                nan,
                ind,
                int(_b.CUDNN_32BIT_INDICES),
            )
        except BaseException:
            _destroy_reduce(ptr)
            raise
        super().__init__(ptr, _destroy_reduce)
        self._key = (o, ctype, nan, ind)

    def _read_back(self) -> tuple[int, int, int, int, int]:
        vals = [ctypes.c_int() for _ in range(5)]
        _call("cudnnGetReduceTensorDescriptor", self, *(ctypes.byref(v) for v in vals))
        return tuple(v.value for v in vals)  # type: ignore[return-value]

    @property
    def op(self) -> str:
        return _name_of(self._read_back()[0], _REDUCE_OPS)

    @property
    def compute_type(self) -> np.dtype:
        return _dtype_of_value(self._read_back()[1])

    @property
    def indices(self) -> bool:
        return self._read_back()[3] == int(_b.CUDNN_REDUCE_TENSOR_FLATTENED_INDICES)

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.ReduceTensorDescriptor closed>"
        return f"<pycudnn.ReduceTensorDescriptor {_name_of(self._key[0], _REDUCE_OPS)} indices={bool(self._key[3])}>"


def _destroy_reduce(ptr: int) -> None:
    LIB.function("cudnnDestroyReduceTensorDescriptor")(ptr)


# -- operand validation ----------------------------------------------------------------------


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
    draws a :class:`TensorCoreWarning`. Returns the :class:`~pycudnn._shared.arrays.ArrayView`
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
            want_shape, want_strides, want_dtype = desc._dims, desc.strides, desc._dtype
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
