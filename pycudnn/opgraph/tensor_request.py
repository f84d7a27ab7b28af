"""The checks of a graph tensor request: its dims, its strides or format, and the vectorized
layouts (``NC/4HW4``, ``NC/32HW32``) a format or a dtype such as ``"int8x32"`` asks for. Plain
functions of their arguments, used by :meth:`GraphCore.tensor` and the operation families that take
output dims.
"""

from __future__ import annotations

from typing import Any

from _nvbind.dtypes import VECTOR_DTYPE_STRINGS, DataType, dtype_name
from _nvbind.strides import c_strides

from .. import layout
from .._dims import checked_dims
from .common import _INT64_MAX, MAX_RANK, MIN_RANK, GraphError, _dims_text, _ints

__all__ = ["check_alignment", "check_dims", "check_strides", "vector_request"]


def vector_request(
    dims: tuple[int, ...], dtype: Any, fmt: Any, strides: Any, label: str
) -> tuple[Any, Any, int]:
    """``(element dtype, fmt, vector count)`` of a tensor request; count 1 unless ``fmt`` (or
    a dtype such as ``"int8x32"``) asks for cuDNN's vectorized NC/4HW4 or NC/32HW32."""
    vector = 1
    if isinstance(dtype, str) and dtype.strip().lower() in VECTOR_DTYPE_STRINGS:
        dtype, vector = VECTOR_DTYPE_STRINGS[dtype.strip().lower()]
        spatial = "HW" if len(dims) == 4 else "DHW"
        fmt = f"NC/{vector}{spatial}{vector}" if fmt is None else fmt
    if fmt is None:
        return dtype, fmt, 1
    try:
        f = layout.parse_format(fmt)
    except (ValueError, TypeError) as exc:
        raise GraphError(f"{label}: {exc}") from None
    if vector > 1 and f.vector != vector:
        raise GraphError(
            f"{label}: a dtype of vectors of {vector} needs fmt NC/{vector}HW{vector} (or "
            f"NC/{vector}DHW{vector}), not {f.name!r}"
        )
    if f.vector is None or f.vector == 1:
        return dtype, fmt, 1  # plain formats, and NC/1HW1 which is NCHW (seed 002)
    if f.vector not in (4, 32) and len(dims) == f.rank and dims[1] == f.vector:
        return dtype, fmt, 1  # one vector of all C is NHWC (seed 002); packed_strides says so
    if f.vector not in (4, 32):
        # Probed on cuDNN 9.28: TENSOR_VECTOR_COUNT 2, 8, 16, 64 finalize NOT_SUPPORTED.
        raise GraphError(
            f"{label}: fmt {f.name!r}: cuDNN's graph tensors are vectorized by 4 or 32 "
            "(TENSOR_VECTOR_COUNT), not by other widths"
        )
    if strides is not None:
        raise GraphError(
            f"{label}: fmt {f.name!r} is a vectorized layout; its strides follow from the "
            "format, do not pass strides"
        )
    try:
        layout.vectorized_dims_strides(dims, f)  # rank and C % x
    except ValueError as exc:
        raise GraphError(f"{label}: {exc}") from None
    return dtype, fmt, f.vector


def check_dims(dims: Any, label: str) -> tuple[int, ...]:
    dims_t = _ints(dims, f"{label}: dims")
    if MIN_RANK <= len(dims_t) <= MAX_RANK and min(dims_t) >= 1:
        return dims_t  # the common case, without formatting the error texts first
    return checked_dims(
        dims_t,
        "{label}: dims[{i}] is {extent}; extents must be positive",
        ranks=(MIN_RANK, MAX_RANK),
        rank_text="{label}: dims {text} has rank {rank}; graph tensors have {low} to {high} dims "
        "(use leading 1s for a batch dimension)",
        error=GraphError,
        label=label,
        text=_dims_text(dims_t),
    )


def check_strides(dims: tuple[int, ...], strides: Any, fmt: Any, label: str) -> tuple[int, ...]:
    if strides is not None and fmt is not None:
        raise GraphError(f"{label}: give strides or fmt, not both")
    if fmt is not None:
        try:
            return tuple(layout.packed_strides(dims, fmt))
        except (ValueError, TypeError) as exc:
            raise GraphError(f"{label}: {exc}") from None
    if strides is None:  # row-major packed ("ABCD..."); dims are checked already
        return c_strides(dims)
    s = _ints(strides, f"{label}: strides")
    if len(s) != len(dims):
        raise GraphError(
            f"{label}: strides {_dims_text(s)} has {len(s)} entries but dims "
            f"{_dims_text(dims)} has {len(dims)}"
        )
    for i, v in enumerate(s):
        if v < 0:
            raise GraphError(
                f"{label}: strides[{i}] is {v}; cuDNN's graph API takes no negative strides"
            )
        if v == 0:
            raise GraphError(
                f"{label}: strides[{i}] is 0; strides must be positive (broadcast with "
                "size-1 dims instead)"
            )
    return s


def check_alignment(alignment: Any, dtype: DataType, label: str) -> None:
    """The byte alignment promised for a tensor's data pointer: a power of two that fits in the
    int64 cuDNN takes it as, and a multiple of the element size."""
    if isinstance(alignment, bool) or not isinstance(alignment, int):
        raise TypeError(f"{label}: alignment must be an int, not {alignment!r}")
    if (
        not 1 <= alignment <= _INT64_MAX
        or alignment & (alignment - 1)
        or alignment % dtype.itemsize
    ):
        raise GraphError(
            f"{label}: alignment {alignment} must be a power of two up to 2**62 (cuDNN takes an "
            f"int64) and a multiple of the element size ({dtype.itemsize} bytes for "
            f"{dtype_name(dtype)})"
        )
