"""Stride arithmetic shared by layouts, array views, ``DeviceArray`` and the legacy descriptors.

One copy of each rule: packed strides in a given memory order (C order being the identity order),
and the extent a strided array reaches. Strides and extents are in elements. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["c_strides", "element_extent", "packed_strides_in_order"]


def packed_strides_in_order(shape: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """Packed strides of ``shape`` stored with its dims in ``order`` (outermost first).

    ``order`` lists every dim index once; ``packed_strides_in_order((2, 3, 4), (0, 2, 1))`` is
    ``(12, 1, 3)``. Extent-0 dims count as 1 so that an empty array still gets usable strides.
    """
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(tuple(order)):
        strides[axis] = step
        step *= max(int(shape[axis]), 1)
    return tuple(strides)


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major (C order) packed strides of ``shape``."""
    return packed_strides_in_order(shape, range(len(shape)))


def element_extent(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, int]:
    """``(lo, span)`` in elements for a strided array (strides in elements, any sign).

    Element 0 sits ``-lo`` elements above the lowest element reached, and ``span`` elements cover
    everything reached (``(0, 0)`` for an empty array).
    """
    if math.prod(shape) == 0:
        return 0, 0
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
    return lo, hi - lo + 1
