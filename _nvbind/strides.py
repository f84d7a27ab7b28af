"""Stride arithmetic shared by layouts, array views, ``DeviceArray`` and the legacy descriptors.

One copy of each rule: packed strides in a given memory order (C order being the identity order),
the extent a strided array reaches, and whether it reaches an address twice. Strides and extents
are in elements. Pure Python and NumPy: no shared library is loaded.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from .lazy_numpy import np

__all__ = [
    "OVERLAP_ENUMERATION_LIMIT",
    "c_strides",
    "element_extent",
    "overlapping",
    "packed_strides_in_order",
    "packed_strides_like",
]

#: Largest element count :func:`overlapping` enumerates when cheaper tests cannot decide.
OVERLAP_ENUMERATION_LIMIT = 2**20


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


def packed_strides_like(shape: Sequence[int], like: Sequence[int]) -> tuple[int, ...]:
    """Packed strides of ``shape`` with its dims in the memory order of the strides ``like``
    (outermost = largest stride; ties keep logical order), as cuDNN's frontend infers the
    strides of an output from its input's."""
    return packed_strides_in_order(shape, sorted(range(len(shape)), key=lambda i: (-like[i], i)))


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


def overlapping(
    shape: Sequence[int], strides: Sequence[int], *, limit: int = OVERLAP_ENUMERATION_LIMIT
) -> bool:
    """True if iterating over all indices reaches some address twice (arguments unchecked).

    :func:`pycudnn.layout.is_overlapping` checks its arguments and documents the method; array
    views and ``DeviceArray`` call this directly on shapes and strides they have validated.
    ``limit`` is the largest element count enumerated when cheaper tests cannot decide.
    """
    if type(shape) is tuple and type(strides) is tuple:  # a description's: asked again and again
        try:
            return _overlapping_tuples(shape, strides, limit)
        except TypeError:  # an element that cannot be hashed: decided without the cache
            pass
    return _overlapping(shape, strides, limit)


@functools.lru_cache(maxsize=512)
def _overlapping_tuples(shape: tuple[int, ...], strides: tuple[int, ...], limit: int) -> bool:
    return _overlapping(shape, strides, limit)


def _overlapping(shape: Sequence[int], strides: Sequence[int], limit: int) -> bool:
    axes = sorted((abs(st), n) for n, st in zip(shape, strides, strict=True) if n > 1)
    if not axes or 0 in shape:  # an empty array reaches no address at all
        return False
    if axes[0][0] == 0:
        return True  # two indices along this dim land on the same address

    # reach[k]: the largest offset dims 0..k-1 (smaller strides) can produce together.
    reach = [0]
    for st, n in axes:
        reach.append(reach[-1] + (n - 1) * st)
    # Set aside the outermost dims whose stride exceeds everything below them: they place disjoint
    # copies of the inner block, so they cannot create an overlap. axes[0] always passes (stride > 0
    # = reach[0]), so what remains is empty or has at least two dims.
    core = len(axes)
    while core > 0 and axes[core - 1][0] > reach[core - 1]:
        core -= 1
    if core == 0:
        return False
    inner = axes[:core]

    count = math.prod(n for _, n in inner)
    if count > reach[core] + 1:
        return True  # more elements than distinct addresses in their span (pigeonhole)
    for i, (si, ni) in enumerate(inner):
        for sj, _ in inner[i + 1 :]:
            # sj == k * si with k < ni: index k along i and index 1 along j meet.
            if sj % si == 0 and sj // si <= ni - 1:
                return True
    if len(inner) == 2:
        # a*s1 == b*s2 has the smallest non-zero solution a = s2/g, b = s1/g (g = gcd).
        (s1, n1), (s2, n2) = inner
        g = math.gcd(s1, s2)
        return s2 // g <= n1 - 1 and s1 // g <= n2 - 1
    if count <= limit and reach[core] < 2**62:
        addresses = np.zeros(1, dtype=np.int64)
        for st, n in inner:
            step = np.arange(n, dtype=np.int64) * st
            addresses = (addresses[:, None] + step[None, :]).ravel()
        return bool(np.unique(addresses).size < addresses.size)
    return True  # undecided: report the conservative answer
