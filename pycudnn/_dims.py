"""Integer sequences given as dims and strides: the rules (ints, not bools; one dimension; each
extent positive; as many strides as dims) that layouts, tensor descriptors and graph tensors share,
each wording its errors in its own terms through :func:`checked_dims`.

Pure Python: NumPy arrays and scalars are accepted without importing NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _nvbind.lazy_numpy import numpy_types

__all__ = [
    "INT64_MAX",
    "as_int",
    "as_ints",
    "check_dims",
    "check_strides",
    "checked_dims",
    "vectorized_dim_rule",
    "vectorized_extent",
]

INT64_MAX = 2**63 - 1


def vectorized_extent(dims: Sequence[int], count: int, vdim: int) -> int:
    """The elements a vectorized tensor holds along its vectorized dimension, ``dims[vdim]``
    vectors of ``count`` elements; 0 when ``vdim`` names none of ``dims`` (cuDNN's default -1).

    cuDNN multiplies the two in 64 bits without a check and divides by the product (a reduction's
    input extent by its output's): a product that wraps to 0 (``[2**62, ...]`` by 4 along dim 0)
    kills the process with SIGFPE (cuDNN 9.28, through the backend layer and through a plan's
    JSON alike). Callers refuse a product above :data:`INT64_MAX`, which no tensor can have.
    """
    return dims[vdim] * count if 0 <= vdim < len(dims) else 0


def vectorized_dim_rule(vdim: int, rank: int) -> str | None:
    """The rule a tensor's vectorized dimension breaks, or None: -1 (none) or the index of one of
    its ``rank`` dims. cuDNN 9.28 finalizes a TENSOR (and loads a plan's) naming one past the
    last dim or below -1, a dimension the tensor does not have."""
    if -1 <= vdim < rank:
        return None
    return f"must be -1 or the index of one of the tensor's {rank} dims"


def as_int(value: object, name: str, index: int) -> int:
    if type(value) is int:  # the common case, first: each graph tensor's dims pass here
        return value
    # bool is an int subclass: refuse it explicitly so that (True, 3, 4) is not read as (1, 3, 4).
    if isinstance(value, (bool, *numpy_types("bool_"))):
        raise TypeError(f"{name}[{index}] must be an int, got bool {value!r}")
    integers: tuple[type[Any], ...] = (int, *numpy_types("integer"))
    if isinstance(value, integers):
        return int(value)
    raise TypeError(f"{name}[{index}] must be an int, got {type(value).__name__} {value!r}")


def as_ints(values: object, name: str) -> tuple[int, ...]:
    if isinstance(values, numpy_types("ndarray")):
        if values.ndim != 1:
            raise ValueError(
                f"{name} must be one-dimensional, got an array of shape {values.shape}"
            )
        values = values.tolist()  # NumPy scalars become Python ints, floats and bools
    # The common spellings: a tuple or list of ints, not bools (the tuple is what is returned).
    if (type(values) is tuple or type(values) is list) and all(type(v) is int for v in values):
        return values if type(values) is tuple else tuple(values)
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    return tuple(as_int(v, name, i) for i, v in enumerate(values))


def checked_dims(
    dims: tuple[int, ...],
    extent_text: str,
    *,
    ranks: tuple[int, int] | None = None,
    rank_text: str = "",
    error: type[ValueError] = ValueError,
    **fields: Any,
) -> tuple[int, ...]:
    """``dims`` when it has ``ranks`` (low, high; None: any) entries, each a positive extent;
    else ``error`` with ``rank_text`` (given ``rank``, ``low``, ``high``) or ``extent_text`` (the
    first extent below 1: ``i``, ``extent``), formatted with ``fields`` too. The one home of the
    rule for the dims checks of layouts, tensor descriptors and graph tensors, which word it
    each in their own terms."""
    if ranks is not None and not ranks[0] <= len(dims) <= ranks[1]:
        raise error(rank_text.format(rank=len(dims), low=ranks[0], high=ranks[1], **fields))
    for i, extent in enumerate(dims):
        if extent < 1:
            raise error(extent_text.format(i=i, extent=extent, **fields))
    return dims


def check_dims(dims: object, name: str = "dims") -> tuple[int, ...]:
    text = "{name}[{i}] must be a positive extent (>= 1), got {extent}"
    return checked_dims(as_ints(dims, name), text, name=name)


def check_strides(
    strides: object, dims: tuple[int, ...], allow_negative: bool = False
) -> tuple[int, ...]:
    out = as_ints(strides, "strides")
    if len(out) != len(dims):
        raise ValueError(
            f"strides has {len(out)} entries but dims has {len(dims)}; they must match"
        )
    if not allow_negative:
        for i, stride in enumerate(out):
            if stride < 0:
                raise ValueError(
                    f"strides[{i}] is {stride}: negative strides are not supported here"
                )
    return out
