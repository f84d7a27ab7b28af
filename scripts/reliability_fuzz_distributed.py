"""Fuzz targets of ``pycutensor.distributed``'s host-side rules (registered in
``reliability_fuzz.py``): process-grid distributions, the redistribution cost model and
block-sparse structures, with valid, edge and junk arguments. Nothing here needs a GPU; what does
(handles, descriptors) raises ``DeviceRequiredError`` before any library call and is covered by
the tests, not fuzzed."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np


def _helpers() -> tuple[Any, Any]:
    # Imported when a target runs: this module is imported while reliability_fuzz is loading.
    from reliability_fuzz import junk, small

    return junk, small


def _ints(rng: random.Random, n: int, lo: int, hi: int) -> Any:
    junk, _ = _helpers()
    if rng.random() < 0.08:
        return junk(rng)
    out: list[Any] = [rng.randint(lo, hi) for _ in range(n)]
    if out and rng.random() < 0.1:
        out[rng.randrange(len(out))] = rng.choice([-1, 0, 2**63, 10**30, 1.5, "2"])
    return out


def distribution(rng: random.Random, ctx: Any) -> None:
    """Distribution: its checks, what each rank holds, and the cost between two layouts."""
    from pycutensor.distributed.cost import redistribution_cost
    from pycutensor.distributed.layout import Distribution

    _, small = _helpers()
    n = rng.randint(0, 4)
    extents: Any = _ints(rng, n, 1, 40)
    grid: Any = _ints(rng, n, 1, 4)
    blocks: Any = None if rng.random() < 0.3 else _ints(rng, n, 0, 9)
    nranks = None if rng.random() < 0.5 else rng.choice([small(rng), 0, -1, 2**40])
    d = Distribution(extents, grid, blocks, nranks)
    assert d.ranks is not None
    rank: Any = rng.choice([*d.ranks, -1, d.nranks, 10**9])
    d.local_extents(rank)
    d.global_indices(rank)
    d.describe()
    other = Distribution(extents, list(reversed(grid)) if isinstance(grid, list) else grid)
    redistribution_cost(d, other, itemsize=rng.choice([1, 4, 8]))
    if np.prod(d.extents, dtype=float) > 1e6:
        return  # a dense host copy of a huge tensor is the caller's memory, not a rule
    shard = d.local_shard(np.zeros(d.extents, np.float32), d.ranks[0])
    if shard.shape != d.local_extents(d.ranks[0]):  # the host rules disagree with themselves
        raise AssertionError(f"local_shard {shard.shape} vs local_extents")


def block_structure(rng: random.Random, ctx: Any) -> None:
    """BlockStructure: its checks, and split/assemble of a dense array."""
    from pycutensor.distributed.blocksparse import BlockStructure

    modes = rng.randint(0, 4) if rng.random() < 0.95 else 33
    sections: Any = [_ints(rng, rng.randint(0, 4), 1, 5) for _ in range(modes)]
    nblocks = rng.randint(0, 5)
    blocks: Any = [_ints(rng, modes, 0, 3) for _ in range(nblocks)]
    strides: Any = None
    if rng.random() < 0.3:
        strides = [_ints(rng, modes, 1, 50) for _ in range(nblocks)]
    s = BlockStructure(sections, blocks, strides)
    if np.prod(s.extents, dtype=float) > 1e6:
        return  # as above: only the rules are fuzzed, not the host's memory
    dense = np.ones(s.extents, np.float32)
    back = s.assemble(s.split(dense))
    if back.shape != dense.shape:
        raise AssertionError("assemble(split(x)) changed the shape")


TARGETS: dict[str, Callable[[random.Random, Any], None]] = {
    "distribution": distribution,
    "block_structure": block_structure,
}
WEIGHTS: dict[str, float] = {"distribution": 2, "block_structure": 2}
