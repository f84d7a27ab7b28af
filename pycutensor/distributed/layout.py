"""What each rank (or device) holds of a distributed tensor: the host-side rules of
``cutensorMpCreateTensorDescriptor`` and ``cutensorMgCreateTensorDescriptor``, as their headers
state them.

cuTENSORMp (``cutensorMp.h``):

- Let ``P = prod(ranks_per_mode)``. Logical rank ``l`` is ``ranks[l]`` (``range(nranks)`` when
  ``ranks`` is omitted); its coordinate on the process grid has mode 0 varying fastest. When
  ``nranks`` is a multiple of ``P`` every coordinate is stored ``nranks // P`` times (the
  replication factor); otherwise the multiplicity is not uniform.
- A mode with ``ranks_per_mode[i] == 1`` is replicated. ``block_size[i] == 0`` (or no block sizes)
  cuts the mode into near-even contiguous slices, the lower coordinates taking the remainder; a
  positive block size deals fixed-size global blocks round-robin, the last one possibly shorter
  ("extent 10 with block size 4 on two rank coordinates assigns [0, 4) and [8, 10) to coordinate 0,
  and [4, 8) to coordinate 1").
- A communicator rank not listed in ``ranks`` owns nothing (zero local extents).
- With no strides given, a rank's local shard is compact with mode 0 fastest (Fortran order).

cuTENSORMg (``cutensorMg.h``): blocks of ``block_size`` (the whole extent when omitted) are dealt
round-robin over ``device_count[i]`` devices per mode; devices are listed column-major (mode 0
fastest), and a device list longer than ``prod(device_count)`` replicates the tensor.

None of this is used to size what cuTENSORMp stores: :class:`~pycutensor.distributed.DistributedTensor`
asks the library for its local extents, strides and storage size. These rules serve the cost model
(:mod:`pycutensor.distributed.cost`), the reports of what each rank holds, and host-side slicing of
test data; the GPU tests compare them with what cuTENSORMp reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ._common import int_tuple

__all__ = ["Distributed", "Distribution", "local_length", "owned_ranges", "owner_of"]


#: Indices one mode may have where the host lists them one by one (owner arrays, global indices);
#: the extents themselves may be anything int64_t holds.
MAX_LISTED = 2**27
#: Ranks a Distribution lists on the host (cuTENSORMp takes uint32_t nranks).
MAX_RANKS = 2**24


def _blocks(extent: int, block: int) -> int:
    return -(-extent // block)  # ceil without floats: extents go up to 2**63 - 1


def local_length(extent: int, parts: int, block: int, coord: int) -> int:
    """How many indices of one mode grid coordinate ``coord`` of ``parts`` owns (the rules of
    :func:`owned_ranges`, in closed form)."""
    if not 0 <= coord < parts:
        raise ValueError(f"coordinate {coord} is outside a mode split {parts} ways")
    if block == 0:
        q, r = divmod(extent, parts)
        return q + (1 if coord < r else 0)
    n = _blocks(extent, block)
    if coord >= n:
        return 0
    owned = (n - coord + parts - 1) // parts
    short = block - (extent - (n - 1) * block)  # what the last block lacks
    return owned * block - (short if (n - 1) % parts == coord else 0)


def owned_ranges(extent: int, parts: int, block: int, coord: int) -> list[tuple[int, int]]:
    """The global ``[start, stop)`` ranges of one mode that grid coordinate ``coord`` of ``parts``
    owns, in local (ascending) order: near-even contiguous slices for ``block == 0`` (lower
    coordinates take the remainder), else blocks of ``block`` dealt round-robin."""
    if not 0 <= coord < parts:
        raise ValueError(f"coordinate {coord} is outside a mode split {parts} ways")
    if block == 0:
        q, r = divmod(extent, parts)
        start = coord * q + min(coord, r)
        size = q + (1 if coord < r else 0)
        return [(start, start + size)] if size else []
    count = max(0, (_blocks(extent, block) - coord + parts - 1) // parts)
    if count > MAX_LISTED:
        raise ValueError(
            f"coordinate {coord} owns {count} blocks of {block} of this mode; the host lists at "
            f"most {MAX_LISTED} (use local_extents, which counts them without listing)"
        )
    return [
        (b * block, min(extent, (b + 1) * block))
        for b in range(coord, _blocks(extent, block), parts)
    ]


def owner_of(extent: int, parts: int, block: int) -> np.ndarray:
    """``owner[i]``: the grid coordinate that owns global index ``i`` of one mode."""
    if extent > MAX_LISTED:
        raise ValueError(
            f"a mode of extent {extent} is too long to list owner by owner on the host (at most "
            f"{MAX_LISTED})"
        )
    index = np.arange(extent, dtype=np.int64)
    if block:
        return (index // block) % parts
    q, r = divmod(extent, parts)
    # The first r coordinates hold q + 1 indices, the others q.
    cut = r * (q + 1)
    return np.where(index < cut, index // (q + 1), r + (index - cut) // max(q, 1))


@dataclass(frozen=True)
class Distribution:
    """A tensor's distribution over the ranks of a communicator (cuTENSORMp's rules, above).

    ``block_sizes``: None or 0 entries for near-even contiguous slices. ``nranks`` defaults to
    ``prod(ranks_per_mode)``, ``ranks`` to ``range(nranks)``.
    """

    # Any sequences of ints; kept as tuples (checked, in __post_init__).
    extents: Sequence[int]
    ranks_per_mode: Sequence[int]
    block_sizes: Sequence[int] | None = None
    nranks: int | None = None
    ranks: Sequence[int] | None = None
    # Caches of this instance's own layout: not init fields, so that dataclasses.replace gives
    # the new instance fresh ones instead of sharing (and rewriting) this one's.
    _owners: dict[int, np.ndarray] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _index: dict[int, int] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        ext = int_tuple(self.extents, "extents", minimum=1)
        if not ext:
            raise ValueError("extents must have at least one mode (cuTENSORMp: numModes > 0)")
        per = int_tuple(self.ranks_per_mode, "ranks_per_mode", minimum=1)
        if len(per) != len(ext):
            raise ValueError(
                f"ranks_per_mode has {len(per)} entries but the tensor has {len(ext)} modes"
            )
        blocks = (0,) * len(ext) if self.block_sizes is None else self.block_sizes
        blocks = int_tuple(blocks, "block_sizes", minimum=0)
        if len(blocks) != len(ext):
            raise ValueError(
                f"block_sizes has {len(blocks)} entries but the tensor has {len(ext)} modes"
            )
        grid = math.prod(per)
        nranks = grid if self.nranks is None else self.nranks
        if isinstance(nranks, bool) or not isinstance(nranks, (int, np.integer)) or nranks < 1:
            raise ValueError(f"nranks must be a positive int, got {nranks!r}")
        if nranks > MAX_RANKS:
            raise ValueError(
                f"{nranks} ranks (nranks, or the grid prod(ranks_per_mode)) is more than the "
                f"{MAX_RANKS} a distribution lists on the host"
            )
        if nranks < grid:
            # Coordinates beyond the last logical rank would have no owner: parts of the tensor
            # would be stored nowhere.
            raise ValueError(
                f"nranks = {nranks} is smaller than the process grid prod(ranks_per_mode) = "
                f"{grid}; every grid coordinate needs a rank"
            )
        ranks = (
            tuple(range(nranks))
            if self.ranks is None
            else int_tuple(self.ranks, "ranks", minimum=0)
        )
        if len(ranks) != nranks:
            raise ValueError(f"ranks has {len(ranks)} entries but nranks = {nranks}")
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"ranks lists a rank twice: {list(ranks)}")
        object.__setattr__(self, "extents", ext)
        object.__setattr__(self, "ranks_per_mode", per)
        object.__setattr__(self, "block_sizes", blocks)
        object.__setattr__(self, "nranks", int(nranks))
        object.__setattr__(self, "ranks", ranks)
        self._index.update((r, i) for i, r in enumerate(ranks))  # logical rank of each rank

    # -- the grid ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.extents)

    @property
    def grid_size(self) -> int:
        """``P = prod(ranks_per_mode)``: the distinct ownership coordinates."""
        return math.prod(self.ranks_per_mode)

    @property
    def replication(self) -> int | None:
        """How many ranks store each coordinate (``nranks // P``); None when not uniform."""
        assert self.nranks is not None
        return self.nranks // self.grid_size if self.nranks % self.grid_size == 0 else None

    def coordinate(self, rank: int) -> tuple[int, ...] | None:
        """The grid coordinate of communicator rank ``rank`` (mode 0 fastest); None when
        ``rank`` is not listed in ``ranks`` (it owns nothing)."""
        logical = self._index.get(rank)
        if logical is None:
            return None
        rest = logical % self.grid_size
        coord = []
        for parts in self.ranks_per_mode:
            rest, c = divmod(rest, parts)
            coord.append(c)
        return tuple(coord)

    def ranks_at(self, coord: Sequence[int]) -> list[int]:
        """The communicator ranks that store grid coordinate ``coord`` (its replicas)."""
        assert self.ranks is not None
        return [r for r in self.ranks if self.coordinate(r) == tuple(coord)]

    # -- what a rank holds ------------------------------------------------------------------
    def owned_ranges(self, rank: int) -> list[list[tuple[int, int]]]:
        """Per mode, the global ``[start, stop)`` ranges that ``rank`` holds, in local order."""
        coord = self.coordinate(rank)
        if coord is None:
            return [[] for _ in self.extents]
        assert self.block_sizes is not None
        return [
            owned_ranges(e, p, b, c)
            for e, p, b, c in zip(
                self.extents, self.ranks_per_mode, self.block_sizes, coord, strict=True
            )
        ]

    def local_extents(self, rank: int) -> tuple[int, ...]:
        """The elements ``rank`` holds per mode (cuTENSORMp's LOCAL_EXTENT; zeros for a rank
        that is not listed)."""
        coord = self.coordinate(rank)
        if coord is None:
            return (0,) * self.ndim
        assert self.block_sizes is not None
        return tuple(
            local_length(e, p, b, c)
            for e, p, b, c in zip(
                self.extents, self.ranks_per_mode, self.block_sizes, coord, strict=True
            )
        )

    def local_volume(self, rank: int) -> int:
        return math.prod(self.local_extents(rank))

    def global_indices(self, rank: int) -> list[np.ndarray]:
        """Per mode, the global indices ``rank`` holds in local order: ``global_array[np.ix_(*
        idx)]`` is its shard (stored compact with mode 0 fastest: ``np.asfortranarray``).

        A mode with more than :data:`MAX_LISTED` of them is refused, as owner arrays are: one
        contiguous slice of a mode of 2**31 - 1 split 2 ways is a billion indices (8 GiB)."""
        for mode, count in enumerate(self.local_extents(rank)):
            if count > MAX_LISTED:
                raise ValueError(
                    f"rank {rank} holds {count} indices of mode {mode}; the host lists at most "
                    f"{MAX_LISTED} (use local_extents, which counts them without listing)"
                )
        return [
            np.concatenate([np.arange(a, b) for a, b in m]) if m else np.empty(0, np.int64)
            for m in self.owned_ranges(rank)
        ]

    def local_shard(self, global_array: np.ndarray, rank: int) -> np.ndarray:
        """``rank``'s part of a host copy of the whole tensor, Fortran-ordered as cuTENSORMp
        stores a shard without explicit strides."""
        if tuple(global_array.shape) != self.extents:
            raise ValueError(
                f"global_array has shape {tuple(global_array.shape)}, not the extents {self.extents}"
            )
        return np.asfortranarray(global_array[np.ix_(*self.global_indices(rank))])

    def owner_coordinates(self, mode: int) -> np.ndarray:
        """``owner[i]``: the grid coordinate along ``mode`` that holds global index ``i``."""
        cached = self._owners.get(mode)
        if cached is None:
            assert self.block_sizes is not None
            cached = self._owners[mode] = owner_of(
                self.extents[mode], self.ranks_per_mode[mode], self.block_sizes[mode]
            )
        return cached

    def describe(self) -> str:
        """One line per rank: its grid coordinate and local extents."""
        assert self.ranks is not None
        lines = [
            f"extents {self.extents}, grid {self.ranks_per_mode}, blocks {self.block_sizes}, "
            f"{self.nranks} ranks (replication {self.replication or 'not uniform'})"
        ]
        for r in self.ranks:
            lines.append(
                f"  rank {r}: coordinate {self.coordinate(r)}, holds {self.local_extents(r)}"
            )
        return "\n".join(lines)

    @classmethod
    def block_cyclic(
        cls,
        extents: Sequence[int],
        device_count: Sequence[int] | None = None,
        block_sizes: Sequence[int] | None = None,
        num_devices: int | None = None,
    ) -> Distribution:
        """cuTENSORMg's layout (``cutensorMgCreateTensorDescriptor``): blocks of ``block_sizes``
        (the whole extent when None) dealt round-robin over ``device_count`` devices per mode (1
        when None); positions in the device list play the part of ranks."""
        ext = tuple(extents)
        counts = (
            (1,) * len(ext)
            if device_count is None
            else int_tuple(device_count, "device_count", minimum=1)
        )
        if len(counts) != len(ext):  # named here: the checks of cls name cuTENSORMp's arguments
            raise ValueError(
                f"device_count has {len(counts)} entries but the tensor has {len(ext)} modes"
            )
        grid = math.prod(counts)
        if num_devices is not None and (
            isinstance(num_devices, bool)
            or not isinstance(num_devices, (int, np.integer))
            or num_devices < 1
        ):
            raise ValueError(f"num_devices must be a positive int, got {num_devices!r}")
        if num_devices is not None and num_devices < grid:
            raise ValueError(
                f"num_devices = {num_devices} is smaller than prod(device_count) = {grid}; "
                "every block needs a device"
            )
        blocks = tuple(block_sizes) if block_sizes is not None else ext
        if block_sizes is not None and 0 in blocks:  # else the extents, checked as extents
            raise ValueError(f"block_sizes must be positive for cuTENSORMg, got {list(blocks)}")
        return cls(ext, counts, blocks, num_devices)


class Distributed:
    """What a tensor laid out by a :class:`Distribution` (its ``distribution``) answers from it:
    the base of cuTENSORMp's :class:`~pycutensor.distributed.DistributedTensor` and cuTENSORMg's
    :class:`~pycutensor.distributed.MgTensor`."""

    distribution: Distribution

    @property
    def extents(self) -> tuple[int, ...]:
        """The whole tensor's extents, mode by mode."""
        return tuple(self.distribution.extents)

    @property
    def ndim(self) -> int:
        """Number of modes."""
        return self.distribution.ndim
