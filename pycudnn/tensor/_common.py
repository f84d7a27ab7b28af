"""Shared pieces of the legacy descriptors: argument checks, C calls, data types, deprecation,
and :class:`LegacyDescriptor`, the base that creates, sets, reads back and names each of them.

Every descriptor module of :mod:`pycudnn.tensor` builds on these.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import math
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar, overload

import numpy as np

from _nvbind.dtypes import VECTOR_DTYPE_STRINGS, VECTOR_TYPES, as_numpy_dtype, dtype_name
from _nvbind.forksafe import fork_safe_lock
from _nvbind.resource import CResource
from _nvbind.shutdown import InterpreterExitingError, library_call

from .. import _bindings as _b
from .._lib import LIB, check

_log = logging.getLogger("pycudnn")

_INT_MAX = 2**31 - 1  # dims, strides, pads are C ints in the legacy API
_MIN_RANK, _MAX_RANK = 3, 8  # "a number of dimensions from 3 to 8" (cuDNN core concepts)
_TENSOR_CORE_ALIGNMENT = 16  # "aligned to 128-bit boundaries" (Tensor Core guidelines)


class TensorCoreWarning(UserWarning):
    """Tensor-op math was requested where cuDNN's Tensor Core guidelines say it cannot pay off."""


# -- small helpers ---------------------------------------------------------------------------


@functools.cache
def _guard(name: str) -> library_call:
    return library_call(name)


def call(name: str, *args: Any) -> None:
    """Call C function ``name`` and raise for its status; a closed argument raises ClosedError.

    Inside a :class:`~_nvbind.shutdown.library_call`, as the backend's calls are: a fork waits
    for it, and it is refused while the interpreter unloads the library."""
    for arg in args:
        if isinstance(arg, CResource):
            arg._check_open()
    check(_guard(name).run(LIB.function(name), *args), name)


_call = call


_warned: set[str] = set()
_warned_lock = fork_safe_lock(sys.modules[__name__], "_warned_lock")


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


def _enum_names(enum: Any, drop: str = "") -> dict[str, int]:
    """A generated ``cudnn*_t`` enum as ``{name: value}``, in the header's order: each member's
    name in lower case with ``drop`` taken out (``TENSOR_OP_MATH`` -> ``tensor_op`` for
    ``drop="_MATH"``), the ``COUNT`` sentinel left out."""
    return {
        name.replace(drop, "").lower(): int(value)
        for name, value in enum.__members__.items()
        if name != "COUNT"
    }


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
# The deprecated vectorised types of the NCHW_VECT_C format (shared with the graph API).
_VECTOR_TYPES = VECTOR_TYPES
_VECTOR_DTYPE_STRINGS = VECTOR_DTYPE_STRINGS


def _vector_format_name(rank: int, vector: int) -> str:
    """``NC/xHWx`` (4-D) or ``NC/xDHWx`` (5-D) for vector width ``x``."""
    return f"NC/{vector}HW{vector}" if rank == 4 else f"NC/{vector}DHW{vector}"


def _vector_request(dtype: Any) -> tuple[int | None, str | None]:
    """``(vector width, element type)`` of a vectorised dtype string, else ``(None, None)``."""
    if isinstance(dtype, str) and dtype.strip().lower() in _VECTOR_DTYPE_STRINGS:
        elem, vector = _VECTOR_DTYPE_STRINGS[dtype.strip().lower()]
        return vector, elem
    return None, None


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


def _check_padded_extent(extent: int, pad: int, i: int) -> None:
    # cuDNN computes extent + 2 * pad in a C int: beyond 2**31 - 1 it overflows and
    # cudnnGet*NdForwardOutputDim returns CUDNN_STATUS_BAD_PARAM with no error text.
    if extent + 2 * pad > _INT_MAX:
        raise ValueError(
            f"spatial dim {i}: x extent {extent} plus twice the pad {pad} is {extent + 2 * pad}, "
            f"beyond the 32-bit range of cuDNN's legacy API ({_INT_MAX})"
        )


def _nan_opt(propagate: Any, name: str = "nan_propagation") -> int:
    if not isinstance(propagate, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(propagate).__name__}")
    return int(_b.CUDNN_PROPAGATE_NAN if propagate else _b.CUDNN_NOT_PROPAGATE_NAN)


# Compute types of the op-tensor and reduce-tensor descriptors.
_FLOAT_COMPUTE_TYPES = ("float32", "float64")


# -- the descriptor base ---------------------------------------------------------------------

_V = TypeVar("_V")


def _destroy(function: str, ptr: int) -> None:
    try:
        _guard(function).run(LIB.function(function), ptr)
    except InterpreterExitingError:  # a daemon thread's descriptor at exit: the process is ending
        pass


class LegacyDescriptor(CResource):
    """One legacy ``cudnn<Kind>Descriptor_t``, ``<Kind>`` given as ``class ...(LegacyDescriptor,
    c_kind="<Kind>")``.

    :meth:`_make` creates it (``cudnnCreate<Kind>Descriptor``) and sets it with checked calls,
    destroying it if one fails; ``cudnnDestroy<Kind>Descriptor`` releases it. :meth:`_query` makes
    the ``cudnnGet*`` calls that read it back, and :class:`read_back` turns their items into
    properties. ``repr`` is ``<pycudnn.<Kind>Descriptor ...>`` with :meth:`_describe`'s text.
    """

    _c_kind = ""
    _key: tuple[Any, ...]

    def __init_subclass__(cls, *, c_kind: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if c_kind:
            # "OpTensor" -> "cuDNN op-tensor descriptor", the name CResource's messages use.
            cls._c_kind = c_kind
            words = re.findall("[A-Z][a-z]*", c_kind)
            cls._kind = f"cuDNN {'-'.join(w.lower() for w in words)} descriptor"

    def _make(self, *setters: tuple[Any, ...]) -> None:
        """Create the descriptor, then call each ``(function, *args)`` of ``setters`` as
        ``function(descriptor, *args)``; the descriptor is destroyed if one of them raises."""
        destroy = functools.partial(_destroy, f"cudnnDestroy{self._c_kind}Descriptor")
        out = ctypes.c_void_p()
        call(f"cudnnCreate{self._c_kind}Descriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            for function, *args in setters:
                call(function, ptr, *args)
        except BaseException:
            destroy(ptr)
            raise
        CResource.__init__(self, ptr, destroy)

    def _query(self, function: str, *outs: Any) -> None:
        """``function(self, *outs)``, each ctypes scalar of ``outs`` passed by reference (the
        out-parameters the ``cudnnGet*`` calls fill); arrays and plain ints go as they are."""
        call(
            function,
            self,
            *(ctypes.byref(o) if isinstance(o, ctypes._SimpleCData) else o for o in outs),
        )

    def _query_value(self, function: str, ctype: Any = ctypes.c_int) -> Any:
        """The one value ``function(self, &value)`` reports."""
        out = ctype()
        self._query(function, out)
        return out.value

    def key(self) -> tuple[Any, ...]:
        """A hashable tuple of every setting (equal keys describe the same descriptor)."""
        self._check_open()
        return self._key

    def _describe(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        name = f"pycudnn.{self._c_kind}Descriptor"
        if self.closed:
            return f"<{name} closed>"
        return f"<{name} {self._describe()}>"


class read_back(property, Generic[_V]):
    """A read-only property: item ``index`` of what the owner's method ``source`` returns (by
    default ``_read_back``, one ``cudnnGet*Descriptor`` call), through ``convert``."""

    def __init__(
        self,
        index: int,
        doc: str | None = None,
        *,
        convert: Callable[[Any], _V] | None = None,
        source: str = "_read_back",
    ) -> None:
        def fget(obj: Any) -> _V:
            value = getattr(obj, source)()[index]
            return value if convert is None else convert(value)

        super().__init__(fget)
        self.__doc__ = doc  # a property subclass keeps no doc of its own before Python 3.12

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> read_back[_V]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _V: ...

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return super().__get__(obj, owner)


class OpDescriptor(LegacyDescriptor):
    """Base of the op-tensor and reduce-tensor descriptors: an ``op`` from the table ``_ops`` and
    a float compute type, the first two things they read back, and a NaN propagation flag."""

    _ops: ClassVar[dict[str, int]] = {}

    def _settings(self, op: Any, compute_type: Any, nan_propagation: Any) -> tuple[int, int, int]:
        """``(op, compute type, NaN option)`` as the C enumerators, each checked."""
        return (
            _choice(op, "op", self._ops),
            _compute_type(compute_type, "compute_type", _FLOAT_COMPUTE_TYPES),
            _nan_opt(nan_propagation),
        )

    def _read_back(self) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def op(self) -> str:
        return _name_of(self._read_back()[0], self._ops)

    compute_type = read_back[np.dtype](1, convert=_dtype_of_value)

    def _describe(self) -> str:
        return _name_of(self._key[0], self._ops)
