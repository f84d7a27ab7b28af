"""Tensor layouts: memory formats, packed strides, packing predicates and host-side reorders.

Pure Python and NumPy. Importing this module loads no shared library, so everything here works on a
machine without cuDNN or a GPU.

Conventions
===========

*Dims and strides are always in logical order*: ``(N, C, H, W)``, ``(N, C, D, H, W)``,
``(B, M, N)`` for matmul, or ``(A, B, C, ...)`` for a generic tensor. The *format* string says how
those dims sit in memory: its first letter is the dimension with the largest stride, its last letter
the one with the smallest. So ``packed_strides((N, C, H, W), "NHWC")`` returns the strides of
``N, C, H, W`` (in that order) for a tensor stored channels-last.

Accepted formats (case-insensitive):

* **Letter formats**: any permutation of the letters of one logical set:

  - ``BMN`` (3-D matmul: batch, rows, columns). ``"BMN"`` is packed row-major (strides
    ``[M*N, N, 1]``), ``"BNM"`` packed column-major (strides ``[M*N, 1, M]``). The aliases
    ``"row_major"`` and ``"col_major"`` / ``"column_major"`` name those two.
  - ``NCHW`` (4-D), e.g. ``"NCHW"``, ``"NHWC"``, ``"CHWN"``, ``"CNHW"``, ``"HWCN"``.
  - ``NCDHW`` (5-D), e.g. ``"NCDHW"``, ``"NDHWC"``, ``"CDHWN"``.
  - ``ABC`` ... ``ABCDEFGH`` (generic 3-D to 8-D tensors, the ranks a cuDNN descriptor allows):
    ``A`` is the first logical dim, ``B`` the second, and so on; ``"ABCD"`` is row-major,
    ``"DCBA"`` column-major.

* **Vectorized formats** ``NC/xHWx`` and ``NC/xDHWx`` (``x`` a positive integer dividing ``C``):
  ``C`` is split into ``C/x`` groups of ``x`` channels and each group is laid out as NHWC (NDHWC).
  One stride per logical dim cannot express that in general; :func:`vectorized_dims_strides` gives
  the equivalent packed 5-D (6-D) view ``[N, C/x, H, W, x]`` that :func:`to_format` and
  :func:`from_format` use. Two widths are plain layouts (seed 002): ``x = 1`` is NCHW (NCDHW) and
  ``x = C`` is NHWC (NDHWC); :func:`packed_strides` and the predicates treat them as such and
  refuse (:func:`packed_strides`) or answer False (predicates) for any other width.

Packing predicates
==================

:func:`is_fully_packed`, :func:`is_packed` and :func:`is_spatially_packed` follow the English
definitions of cuDNN's "Core Concepts" chapter literally, with "the i-th dimension" meaning the i-th
letter of the format (memory order, outermost first). The format notation itself implies that all
strides are strictly positive and non-increasing along the format; the packing rules imply the
ordering, and positivity is checked where the rules leave it open (see :func:`is_packed`). Extent-1
dims get no special treatment: the rules compare strides, and so do these predicates. Predicates
answer: a tensor whose rank differs from the format's, or a vectorized format no stride vector can
express, is not packed in it (False); malformed arguments (a strides list of the wrong length,
negative strides, non-integers) still raise.
:func:`is_overlapping` is exact: "some address is reached twice" (see its docstring for the limits).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from _nvbind.lazy import cached_attribute
from _nvbind.lazy_numpy import np
from _nvbind.strides import (
    OVERLAP_ENUMERATION_LIMIT,
    element_extent,
    overlapping,
    packed_strides_in_order,
)
from _nvbind.suggest import did_you_mean

from ._dims import as_ints, check_dims, check_strides

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "OVERLAP_ENUMERATION_LIMIT",
    "Format",
    "format_order",
    "from_format",
    "is_fully_packed",
    "is_overlapping",
    "is_packed",
    "is_spatially_packed",
    "min_buffer_size",
    "packed_strides",
    "parse_format",
    "strides_to_format",
    "to_format",
    "vectorized_dims_strides",
]


# Logical letter order of every accepted letter set. A format is a permutation of one of these; the
# set of letters (not their order) says which logical order the dims are given in.
_GENERIC = "ABCDEFGH"
_MIN_RANK, _MAX_RANK = 3, 8  # cuDNN's Nd tensor descriptors take 3 to 8 dims
_LOGICAL_ORDERS: tuple[str, ...] = (
    "BMN",
    "NCHW",
    "NCDHW",
    *(_GENERIC[:n] for n in range(_MIN_RANK, _MAX_RANK + 1)),
)
_LOGICAL_BY_SET: dict[frozenset[str], str] = {frozenset(s): s for s in _LOGICAL_ORDERS}
_SPATIAL: dict[str, str] = {"NCHW": "HW", "NCDHW": "DHW"}
_ALIASES: dict[str, str] = {"ROW_MAJOR": "BMN", "COL_MAJOR": "BNM", "COLUMN_MAJOR": "BNM"}
_VECTORIZED = re.compile(r"NC/(\d+)(D?HW)(\d+)")
# The formats people write, offered when a format string is misspelt.
_KNOWN_FORMATS = (
    "NCHW",
    "NHWC",
    "CHWN",
    "NCDHW",
    "NDHWC",
    "CDHWN",
    "BMN",
    "BNM",
    "NC/32HW32",
    "NC/4HW4",
)

# Preferred answers of strides_to_format when strides tie (extent-1 dims make several formats fit).
_COMMON: dict[str, tuple[str, ...]] = {
    "BMN": ("BMN", "BNM"),
    "NCHW": ("NCHW", "NHWC", "CHWN"),
    "NCDHW": ("NCDHW", "NDHWC", "CDHWN"),
}

_ACCEPTED = (
    "accepted formats are permutations of the letters BMN (3-D matmul), NCHW (4-D), NCDHW (5-D) "
    "or the first 3 to 8 letters of ABCDEFGH (generic N-d), the vectorized NC/xHWx and NC/xDHWx "
    "(x a positive integer), and the aliases row_major (BMN), col_major and column_major (BNM)"
)


@dataclass(frozen=True)
class Format:
    """A parsed memory format (see :func:`parse_format`).

    ``order`` is the memory order of the logical letters, outermost first. For a vectorized format
    it is the order of the outer dims (``"NCHW"`` with ``C`` standing for the ``C/x`` groups); the
    ``x`` channels of a group are then innermost.
    """

    name: str  #: canonical spelling, e.g. "NHWC", "BNM", "NC/32HW32"
    order: str  #: memory order, outermost first
    logical: str  #: logical order the dims are given in, e.g. "NCHW"
    vector: int | None = None  #: x of NC/xHWx; None for letter formats

    @property
    def rank(self) -> int:
        """Number of logical dims."""
        return len(self.logical)

    @property
    def is_vectorized(self) -> bool:
        """True for NC/xHWx and NC/xDHWx."""
        return self.vector is not None

    @cached_attribute  # asked for on every packing predicate; a Format never changes
    def perm(self) -> tuple[int, ...]:
        """Logical indices in memory order: ``array.transpose(perm)`` is memory-ordered."""
        return tuple(self.logical.index(letter) for letter in self.order)

    @property
    def spatial(self) -> str:
        """Spatial letters in logical order ("HW", "DHW"), or "" if the format has none."""
        return _SPATIAL.get(self.logical, "")


def parse_format(fmt: str | Format) -> Format:
    """Parse a format string (a :class:`Format` passes through); ValueError lists the accepted."""
    if isinstance(fmt, Format):
        return fmt
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a str, got {type(fmt).__name__} {fmt!r}")
    return _parse(fmt.strip().upper().replace("-", "_"))


@lru_cache(maxsize=256)  # formats are few; parsing them once keeps predicates cheap
def _parse(key: str) -> Format:
    alias = _ALIASES.get(key)
    if alias is not None:
        return Format(alias, alias, "BMN")
    vec = _VECTORIZED.fullmatch(key)
    if vec is not None:
        x, spatial, x_again = int(vec[1]), vec[2], int(vec[3])
        if x != x_again or x < 1:
            raise ValueError(
                f"format {key!r}: the vector width must be the same positive integer on both "
                f"sides, as in NC/32{spatial}32"
            )
        return Format(f"NC/{x}{spatial}{x}", "NC" + spatial, "NC" + spatial, x)
    if not _MIN_RANK <= len(key) <= _MAX_RANK:
        raise ValueError(
            f"format {key!r} has {len(key)} letters; tensor formats have {_MIN_RANK} to "
            f"{_MAX_RANK} (one per dimension); {_ACCEPTED}"
        )
    if len(set(key)) != len(key):
        raise ValueError(f"format {key!r} repeats a letter; {_ACCEPTED}")
    logical = _LOGICAL_BY_SET.get(frozenset(key))
    if logical is None:
        hint = did_you_mean(key, [*_KNOWN_FORMATS, *_ALIASES])
        raise ValueError(f"unknown format {key!r}{hint}; {_ACCEPTED}")
    return Format(key, key, logical)


def format_order(fmt: str | Format) -> tuple[int, ...]:
    """Logical dim indices in memory order, e.g. ``format_order("NHWC") == (0, 2, 3, 1)``.

    Vectorized formats have no such permutation and raise ValueError.
    """
    return _strided_format(fmt).perm


# --- input validation (the dims and strides rules themselves: pycudnn._dims) ---------------


def _check_rank(dims: tuple[int, ...], f: Format, name: str = "dims") -> None:
    if len(dims) != f.rank:
        raise ValueError(
            f"{name} has {len(dims)} entries but format {f.name!r} has {f.rank} dims "
            f"(given in logical order {f.logical})"
        )


def _strided_format(fmt: str | Format, dims: tuple[int, ...] | None = None) -> Format:
    """The letter format ``fmt`` stands for: itself, or NCHW / NHWC for NC/1HW1 / NC/CHWC.

    ``dims`` (logical order) decides whether a vector width equals C; without it only ``x = 1``
    resolves. Any other vectorized format raises ValueError.
    """
    f = parse_format(fmt)
    if f.is_vectorized:
        equivalent = _plain_equivalent(f, dims)
        if equivalent is not None:
            return equivalent
        raise ValueError(
            f"format {f.name!r} splits C into groups of {f.vector} channels and cannot be "
            "expressed as one stride per dimension; use vectorized_dims_strides(dims, fmt)"
        )
    return f


def _plain_equivalent(f: Format, dims: tuple[int, ...] | None) -> Format | None:
    # Seed 002: "when x = 1 ... the same as NCHW format"; "when x = C, NC/xHWx is identical to
    # NHWC". Only the logical rank must match for the second (C is dims[1]).
    if f.vector == 1:
        return parse_format(f.logical)
    if dims is not None and len(dims) == f.rank and dims[1] == f.vector:
        return parse_format("N" + f.spatial + "C")
    return None


# --- strides -------------------------------------------------------------------------------------


def packed_strides(dims: Sequence[int], fmt: str | Format) -> tuple[int, ...]:
    """Fully packed strides, in logical order, of a tensor of ``dims`` stored in ``fmt``.

    ``packed_strides((1, 4, 2, 3), "NHWC") == (24, 1, 12, 4)``. ``NC/1HW1`` gives NCHW's strides
    and ``NC/xHWx`` with ``x = C`` NHWC's; other vectorized formats raise ValueError (see
    :func:`vectorized_dims_strides`).
    """
    d = check_dims(dims)
    f = _strided_format(fmt, d)
    _check_rank(d, f)
    return packed_strides_in_order(d, f.perm)


def vectorized_dims_strides(
    dims: Sequence[int], fmt: str | Format
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Packed view of a vectorized format: ``[N, C/x, H, W, x]`` (or ``[N, C/x, D, H, W, x]``).

    ``dims`` is logical ``(N, C, H, W)`` / ``(N, C, D, H, W)``; the view is stored row-major, so its
    strides are plain packed strides. Element ``(n, c, h, w)`` of the tensor is element
    ``(n, c // x, h, w, c % x)`` of the view.
    """
    f = parse_format(fmt)
    if f.vector is None:
        raise ValueError(
            f"format {f.name!r} is not vectorized (NC/xHWx or NC/xDHWx); use packed_strides"
        )
    d = check_dims(dims)
    _check_rank(d, f)
    x = f.vector
    if d[1] % x:
        raise ValueError(
            f"format {f.name!r} needs C to be a multiple of {x}, but dims[1] (C) is {d[1]}"
        )
    view = (d[0], d[1] // x, *d[2:], x)
    return view, packed_strides_in_order(view, tuple(range(len(view))))


def min_buffer_size(dims: Sequence[int], strides: Sequence[int]) -> int:
    """Elements spanned by a strided tensor: ``1 + sum((dim - 1) * |stride|)``.

    Negative strides are accepted: the span is the same, but the element at index 0 then sits
    ``sum((dim - 1) * |stride|)``, summed over the dims with negative strides, into the buffer.
    """
    d = check_dims(dims)
    s = check_strides(strides, d, allow_negative=True)
    return element_extent(d, s)[1]


def strides_to_format(dims: Sequence[int], strides: Sequence[int]) -> str:
    """Guess the letter format of a strided tensor: its letters sorted by decreasing stride.

    The logical letters follow from the rank (3: BMN, 4: NCHW, 5: NCDHW, 6 to 8: ABCDEF...).
    Extent-1 dims address nothing, so their strides (which exporters fill with anything, 0
    included) never decide the order: the common formats are tried first (for rank 4: NCHW, NHWC,
    CHWN), and the answer is the first one the tensor is fully packed in, else the first one along
    which the strides of the dims of extent > 1 are non-increasing. Otherwise the dims of extent > 1
    are sorted by decreasing stride (ties keep their logical order) and extent-1 dims keep their
    logical places. This names a memory order; it does not check that the tensor is packed or
    non-overlapping.
    """
    d = check_dims(dims)
    s = check_strides(strides, d)
    logical = {3: "BMN", 4: "NCHW", 5: "NCDHW"}.get(len(d))
    if logical is None:
        if not _MIN_RANK <= len(d) <= _MAX_RANK:
            raise ValueError(
                f"dims has {len(d)} entries; tensor formats have {_MIN_RANK} to {_MAX_RANK}"
            )
        logical = _GENERIC[: len(d)]
    candidates = _COMMON.get(logical, (logical, logical[::-1]))
    for name in candidates:
        if _is_packed_in(d, s, parse_format(name), frozenset(name)):
            return name
    for name in candidates:
        along = [s[i] for i in parse_format(name).perm if d[i] > 1]
        if all(a >= b for a, b in itertools.pairwise(along)):
            return name
    # The dims of extent > 1, by decreasing stride (sorted() is stable: ties keep logical order),
    # fill the logical places of those dims; extent-1 dims stay where they are.
    moving = [i for i in range(len(d)) if d[i] > 1]
    order = list(range(len(d)))
    for place, i in zip(moving, sorted(moving, key=lambda i: -s[i]), strict=True):
        order[place] = i
    return "".join(logical[i] for i in order)


# --- packing predicates --------------------------------------------------------------------------


def _check_predicate_args(
    dims: Sequence[int], strides: Sequence[int], fmt: str | Format
) -> tuple[tuple[int, ...], tuple[int, ...], Format | None]:
    """Checked dims and strides, and the letter format; None where the answer is plainly False.

    None means: the rank differs from the format's, or a vectorized format that no stride vector
    expresses (1 < x < C). The format itself is still parsed, so an unknown one raises.
    """
    f = parse_format(fmt)
    d = check_dims(dims)
    s = check_strides(strides, d)
    if f.is_vectorized:
        plain = _plain_equivalent(f, d)
        if plain is None:
            return d, s, None
        f = plain
    if len(d) != f.rank:
        return d, s, None
    return d, s, f


def _is_packed_in(
    dims: tuple[int, ...], strides: tuple[int, ...], f: Format, packed: frozenset[str]
) -> bool:
    # Walk the dims in memory order; "next" is the next letter of the format.
    md = [dims[i] for i in f.perm]
    ms = [strides[i] for i in f.perm]
    last = len(md) - 1
    for i, letter in enumerate(f.order):
        if i < last:
            bound = md[i + 1] * ms[i + 1]
            ok = ms[i] == bound if letter in packed else ms[i] >= bound
        elif letter in packed:
            ok = ms[i] == 1  # "if the last dimension is in the -packed suffix, its stride is 1"
        else:
            # The last dim has no next one, so the ">= next dim * next stride" rule is vacuous for
            # it. What remains is the WXYZ notation's "all strides are strictly positive", i.e.
            # stride >= 1 -- the same as comparing against a virtual next dim of extent 1 and
            # stride 1. Every other stride is then >= this one, hence positive and non-increasing.
            ok = ms[i] >= 1
        if not ok:
            return False
    return True


def is_fully_packed(dims: Sequence[int], strides: Sequence[int], fmt: str | Format) -> bool:
    """True if the tensor is ``fmt``-fully-packed.

    cuDNN's rules: the number of dims equals the number of letters (otherwise the answer is
    False); the stride of the i-th dim (in format order) equals dim[i+1] * stride[i+1]; the last
    stride is 1.
    """
    d, s, f = _check_predicate_args(dims, strides, fmt)
    return f is not None and _is_packed_in(d, s, f, frozenset(f.order))


def is_packed(dims: Sequence[int], strides: Sequence[int], fmt: str | Format, packed: str) -> bool:
    """True if the ``fmt`` tensor is partially ``packed``-packed, e.g. ``fmt="NCHW", packed="CH"``.

    With dims and strides walked in ``fmt`` order, "next" meaning the next letter of ``fmt``:

    * a dim not in ``packed`` has stride >= next dim * next stride;
    * a dim in ``packed`` has stride == next dim * next stride;
    * the last dim has stride 1 if it is in ``packed``; otherwise it has no next dim, the rule above
      is vacuous, and only the notation's "strides are strictly positive" applies (stride >= 1).

    ``packed`` names letters of ``fmt`` (any order, no repeats). Note that the "next" dim of a
    packed dim is the next one in the tensor, whether or not it is in ``packed`` as well.
    """
    d, s, f = _check_predicate_args(dims, strides, fmt)
    if f is None:
        _check_packed_letters(packed, parse_format(fmt))
        return False
    return _is_packed_in(d, s, f, _check_packed_letters(packed, f))


def _check_packed_letters(packed: object, f: Format) -> frozenset[str]:
    if not isinstance(packed, str):
        raise TypeError(f"packed must be a str of format letters, got {type(packed).__name__}")
    letters = packed.strip().upper()
    if not letters:
        raise ValueError(f"packed must name at least one letter of format {f.name!r}")
    if len(set(letters)) != len(letters):
        raise ValueError(f"packed {packed!r} repeats a letter")
    foreign = "".join(c for c in letters if c not in f.order)
    if foreign:
        raise ValueError(
            f"packed {packed!r} names {foreign!r}, which is not in format {f.name!r}; "
            f"packed letters must be a subset of {f.order!r}"
        )
    return frozenset(letters)


def is_spatially_packed(
    dims: Sequence[int], strides: Sequence[int], fmt: str | Format | None = None
) -> bool:
    """True if the tensor is spatially packed: ``fmt`` HW-packed (DHW-packed for 5-D).

    cuDNN's definition reads "either NCHW HW-packed or CNHW HW-packed": the formats whose memory
    order ends with the spatial letters in their logical order (HW, or DHW). Without ``fmt`` the
    answer is that definition itself: NCHW or CNHW HW-packed for 4-D dims, NCDHW or CNDHW
    DHW-packed for 5-D ones (other ranks have no spatial dims and raise ValueError). With ``fmt``,
    only that format is tried: any other format (NHWC, NCWH, ...) returns False; formats without
    spatial letters (BMN, generic) raise ValueError.
    """
    if fmt is None:
        spatial = {4: "HW", 5: "DHW"}.get(len(as_ints(dims, "dims")))
        if spatial is None:
            raise ValueError(
                f"dims has {len(as_ints(dims, 'dims'))} entries; spatial packing applies to 4-D "
                "(NCHW) and 5-D (NCDHW) tensors, or pass fmt"
            )
        return any(is_spatially_packed(dims, strides, outer + spatial) for outer in ("NC", "CN"))
    d, s, f = _check_predicate_args(dims, strides, fmt)
    if f is None:
        return False
    if not f.spatial:
        raise ValueError(
            f"format {f.name!r} has no spatial dims; spatial packing applies to permutations of "
            "NCHW and NCDHW"
        )
    if not f.order.endswith(f.spatial):
        return False
    return _is_packed_in(d, s, f, frozenset(f.spatial))


# --- overlap -------------------------------------------------------------------------------------


def is_overlapping(dims: Sequence[int], strides: Sequence[int]) -> bool:
    """True if iterating over all indices reaches some address twice.

    Exact except for one documented case. Negative strides are accepted (mirroring a dim shifts
    every address by the same amount, so only ``|stride|`` matters); extent-1 dims never overlap;
    a zero stride over an extent > 1 always does. The dims sorted by ``|stride|`` are
    non-overlapping if each stride exceeds the largest offset reachable through the smaller ones
    (a mixed-radix argument); outermost dims passing that test are set aside, and what is left is
    decided by a pigeonhole count, a pairwise multiple test, an exact rule for two dims, or by
    enumerating its addresses when it has at most :data:`OVERLAP_ENUMERATION_LIMIT` elements.
    Beyond that the general problem is a subset-sum one and the answer is the conservative True.
    """
    d = check_dims(dims)
    s = check_strides(strides, d, allow_negative=True)
    return overlapping(d, s, limit=OVERLAP_ENUMERATION_LIMIT)  # this module's, which users may set


# --- host-side reorders --------------------------------------------------------------------------


def to_format(array: npt.ArrayLike, fmt: str | Format) -> npt.NDArray[Any]:
    """Lay out a logical-order array in ``fmt``: returns a new 1-D C-contiguous buffer.

    ``array`` has shape ``(N, C, H, W)`` etc. For letter formats ``buffer[sum(i * stride)]`` is
    ``array[i]`` with the strides of :func:`packed_strides`; for NC/xHWx the buffer is the
    row-major ``[N, C/x, H, W, x]`` view of :func:`vectorized_dims_strides`. Dtype is preserved.
    """
    f = parse_format(fmt)
    a = np.asarray(array)
    d = check_dims(a.shape, "array.shape")
    _check_rank(d, f, "array.shape")
    if f.is_vectorized:
        view, _ = vectorized_dims_strides(d, f)
        x_axis = len(view) - 1
        # (N, C, *S) -> (N, C/x, x, *S) -> (N, C/x, *S, x)
        grouped = a.reshape(view[0], view[1], view[-1], *view[2:-1])
        axes = (0, 1, *range(3, x_axis + 1), 2)
    else:
        grouped, axes = a, f.perm
    buffer: npt.NDArray[Any] = grouped.transpose(axes).flatten()  # flatten() always copies
    return buffer


def from_format(buffer: npt.ArrayLike, dims: Sequence[int], fmt: str | Format) -> npt.NDArray[Any]:
    """Inverse of :func:`to_format`: read a buffer laid out in ``fmt`` into a logical-order array.

    ``buffer`` must hold exactly ``prod(dims)`` elements (its shape is ignored). Returns a new
    C-contiguous array of shape ``dims``.
    """
    f = parse_format(fmt)
    d = check_dims(dims)
    _check_rank(d, f)
    b = np.asarray(buffer)
    if b.size != math.prod(d):
        raise ValueError(
            f"buffer has {b.size} elements but dims {d} in format {f.name!r} hold {math.prod(d)}"
        )
    flat = b.reshape(-1)
    if f.is_vectorized:
        view, _ = vectorized_dims_strides(d, f)
        x_axis = len(view) - 1
        # (N, C/x, *S, x) -> (N, C/x, x, *S) -> (N, C, *S)
        grouped: npt.NDArray[Any] = flat.reshape(view).transpose(0, 1, x_axis, *range(2, x_axis))
    else:
        inverse = tuple(f.perm.index(axis) for axis in range(f.rank))
        grouped = flat.reshape([d[i] for i in f.perm]).transpose(inverse)
    # copy(): the result never aliases the caller's buffer, even when no reorder was needed.
    out: npt.NDArray[Any] = grouped.copy(order="C").reshape(d)
    return out
