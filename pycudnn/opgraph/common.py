"""What every part of a graph shares: its error type, rank limits, the enums it speaks and small
checks (dims, dtypes, extents, broadcasting)."""

from __future__ import annotations

import enum
import functools
import math
import numbers
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from _nvbind.dtypes import CUDNN_DATA_TYPE_NAMES, DataType, as_data_type, dtype_name
from _nvbind.lazy_numpy import numpy_types
from _nvbind.suggest import did_you_mean

from .. import _bindings, layout
from .._dims import as_ints

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MAX_RANK", "MIN_RANK", "GraphError"]

MIN_RANK = 3  # cuDNN's graph engines expect at least a batch dimension (BMN, NCHW, ...)
MAX_RANK = int(getattr(_bindings, "CUDNN_DIM_MAX", 8))

PointwiseMode: Any = _bindings.cudnnPointwiseMode_t
ReduceOp: Any = _bindings.cudnnReduceTensorOp_t
CudnnDataType: Any = _bindings.cudnnDataType_t


_CONV_OPS = frozenset({"conv_fprop", "conv_dgrad", "conv_wgrad"})


class GraphError(ValueError):
    """A graph was built wrongly (shapes, dtypes, ranks, layouts): raised before cuDNN is called."""


def _enum_member(enum_cls: type[enum.IntEnum], value: Any, prefix: str, what: str) -> Any:
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        key = value.strip().upper()
        key = key.removeprefix(prefix)
        if key in enum_cls.__members__:
            return enum_cls[key]
        names = [m.name.lower() for m in enum_cls]
        raise GraphError(
            f"unknown {what} {value!r}{did_you_mean(key, names)}; choose from {', '.join(names)}"
        )
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        try:
            return enum_cls(int(value))
        except ValueError:
            raise GraphError(f"{int(value)} is not a {enum_cls.__name__} value") from None
    raise TypeError(f"{what} must be a name or a {enum_cls.__name__}, not {value!r}")


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


def _ints(value: Any, what: str, n: int | None = None) -> tuple[int, ...]:
    """``value`` as a tuple of ints, by the rules of every dims and strides
    (:func:`pycudnn._dims.as_ints`: ints or NumPy integers, not bools); with ``n``, a single int
    stands for ``n`` copies and a sequence must have ``n`` entries."""
    if n is not None and (type(value) is int or isinstance(value, numpy_types("integer"))):
        return (int(value),) * n
    out = as_ints(value, what)
    if n is not None and len(out) != n:
        raise GraphError(f"{what} has {len(out)} entries but {n} are needed")
    return out


def _check_bounds(label: str, *checks: tuple[str, tuple[int, ...], int]) -> None:
    """Each ``(what, values, low)``: every value at least ``low`` (0 or 1) and within an int64
    (cuDNN takes window settings as int64: a larger one would wrap)."""
    for what, values, low in checks:
        for i, v in enumerate(values):
            if v < low:
                rule = "non-negative" if low == 0 else "positive"
                raise GraphError(f"{label}: {what}[{i}] is {v}; it must be {rule}")
            if v > _INT64_MAX:
                raise GraphError(f"{label}: {what}[{i}] is {v}; it must fit in an int64")


#: DataType -> its cuDNN data type: asked for every tensor and operation of every graph.
_CUDNN_TYPES: dict[DataType, Any] = {}


def _cudnn_dtype(dtype: DataType | np.dtype, what: str) -> Any:
    dt = as_data_type(dtype, name=what)
    member = _CUDNN_TYPES.get(dt)
    if member is not None:
        return member
    name = CUDNN_DATA_TYPE_NAMES.get(dt)
    if name is None or name not in CudnnDataType.__members__:
        known = ", ".join(sorted(CUDNN_DATA_TYPE_NAMES.type_names()))
        raise GraphError(f"{what}: cuDNN has no data type for {dtype_name(dt)} (known: {known})")
    member = CudnnDataType[name]
    if dt._table:  # the tables' types only: a DataType wrapping another dtype is not kept
        _CUDNN_TYPES[dt] = member
    return member


def _dims_text(dims: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _broadcast(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


_INT64_MAX = 2**63 - 1


def _check_extent(
    dims: Sequence[int], strides: Sequence[int], dtype: DataType | np.dtype | None, label: str
) -> None:
    """Refuse tensors whose byte extent does not fit in int64: cuDNN takes dims and strides as
    int64 and computes byte offsets from them (values past 2**63 would wrap)."""
    itemsize = dtype.itemsize if dtype is not None else 1
    span = (sum((d - 1) * s for d, s in zip(dims, strides, strict=True)) + 1) * itemsize
    if span > _INT64_MAX:
        raise GraphError(
            f"{label}: dims {_dims_text(dims)} with strides {_dims_text(strides)} span {span} "
            "bytes, more than an int64 can address"
        )


# Kept per (dims, strides): a graph asks it of every operation's output, and a program describes
# the same few layouts again and again (strides_to_format tries the common formats in turn).
@functools.lru_cache(maxsize=1024)
def _format_of(dims: tuple[int, ...], strides: tuple[int, ...]) -> str:
    """The memory format of a graph tensor's (checked) dims and strides."""
    try:
        return layout.strides_to_format(dims, strides)
    except ValueError:
        return "ABCDEFGH"[: len(dims)]


#: (largest finite, smallest non-zero) magnitude of the floating types a by-value scalar has,
#: and the range of its integer types: a value outside becomes inf, 0 or another integer in C.
_FLOAT_RANGE = {
    "float16": (65504.0, 2.0**-24),
    "bfloat16": (3.3895313892515355e38, 2.0**-133),
    "float32": (3.4028234663852886e38, 2.0**-149),
    "float64": (1.7976931348623157e308, 5e-324),
}
_INT_RANGE = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def finite_real(value: Any, what: str) -> float:
    """``value`` (an operation's number setting) as a float; refused unless a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, not {value!r}")
    try:
        result = float(value)
    except OverflowError:  # an int beyond a double's range: float() names no argument
        raise ValueError(
            f"{what} must be a finite real number; this {type(value).__name__} is beyond a "
            "double's range (about 1.8e308)"
        ) from None
    if not math.isfinite(result):
        # cuDNN takes NaN and inf as scale factors and clips without a word; the result would
        # be all NaN (or inf) with no hint why. The legacy API refuses them too.
        raise ValueError(f"{what} must be a finite real number, got {result}")
    return result


#: The largest finite double: an int beyond it has no float.
_DOUBLE_MAX = int(sys.float_info.max)


def check_scalar_value(value: Any, dtype: Any, what: str) -> Any:
    """``value`` for a by-value scalar of ``dtype`` (a DataType), refused where cuDNN would get
    another number: a finite float past the type's range or a non-zero one below it (1e39 and
    1e-50 as float32 are inf and 0), a fraction, a bool or an out-of-range integer for an
    integer type, anything not a real number. Checked without NumPy (describing a graph imports
    none); NaN and infinities pass as given (a mask's -inf)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: a by-value scalar is a real number, not {value!r}")
    name, number = dtype_name(dtype), cast(Any, value)  # a real number from here on
    if isinstance(value, numbers.Integral) and abs(int(value)) > _DOUBLE_MAX:
        # past every type's range; float() below would raise OverflowError, naming nothing
        raise ValueError(f"{what}: {value!r:.60} is out of the range of {name}")
    if name in _INT_RANGE:
        low, high = _INT_RANGE[name]
        if isinstance(value, (bool, *numpy_types("bool_"))) or not float(number).is_integer():
            raise ValueError(f"{what}: {name} scalars take integers, not {value!r}")
        if not low <= int(number) <= high:
            raise ValueError(f"{what}: {value} is out of the range of {name}")
    elif name in _FLOAT_RANGE:
        big, small = _FLOAT_RANGE[name]
        x = float(value)
        if math.isfinite(x) and (abs(x) > big or 0 < abs(x) < small):
            raise ValueError(
                f"{what}: {value} is out of the range of {name} (cuDNN would get "
                f"{'inf' if abs(x) > big else '0'})"
            )
    return value
