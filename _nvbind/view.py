"""What an operation knows of an operand, whichever protocol described it (:mod:`.arrays`, and
:mod:`.dlpack`'s reader, which returns one)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from .lazy_numpy import np
from .strides import element_extent

__all__ = ["ArrayGeometry", "ArrayView", "alignment_of"]


def alignment_of(ptr: int, cap: int = 256) -> int:
    """Largest power of two (at most ``cap``) dividing ``ptr``; ``cap`` for a NULL pointer."""
    if ptr == 0:
        return cap
    return min(ptr & -ptr, cap)


class ArrayGeometry:
    """What an array's ``shape`` and ``dtype`` tell (:class:`ArrayView`, ``DeviceArray``)."""

    __slots__ = ()

    if TYPE_CHECKING:  # what the subclasses define, as fields or properties

        @property
        def shape(self) -> tuple[int, ...]: ...

        @property
        def dtype(self) -> np.dtype: ...

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return int(self.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes of data (``size * itemsize``), not counting gaps a strided layout leaves."""
        return self.size * self.itemsize


class _ViewFields(NamedTuple):
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: np.dtype
    device_id: int  # -1 for host memory
    readonly: bool
    owner: Any


class ArrayView(_ViewFields, ArrayGeometry):
    """What an operation needs to know about an operand. ``owner`` keeps the exporter alive.

    A named tuple rather than a frozen dataclass: one is built per operand per call on the execute
    paths, and a frozen dataclass costs several times more to construct.
    """

    __slots__ = ()

    @property
    def is_device(self) -> bool:
        return self.device_id >= 0

    @property
    def alignment(self) -> int:
        return alignment_of(self.ptr)

    def span_bytes(self) -> int:
        """Bytes from the lowest to one past the highest addressed element (0 when empty)."""
        return element_extent(self.shape, self.strides)[1] * self.itemsize

    def byte_range(self) -> tuple[int, int]:
        """``(lowest, one past the highest)`` address the elements reach (negative strides
        included): what two views are compared by to tell whether they share memory."""
        lo, span = element_extent(self.shape, self.strides)
        start = self.ptr + lo * self.itemsize
        return start, start + span * self.itemsize
