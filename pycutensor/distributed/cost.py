"""A communication cost model for distributed contractions and redistributions (a model, not a
measurement).

- **Redistribution** (``cutensorMpCreateRedistribution``): a rank must receive every element of its
  destination shard that its source shard does not already hold. Ownership is a product over modes
  (a rank holds an element when each index is in that mode's owned set), so the elements a rank
  keeps are the product over modes of the indices owned by both its source and its destination
  coordinate. The rules are those of :mod:`pycutensor.distributed.layout`.
- **Contraction** ``C[m,n] = A[m,k] B[k,n]`` (any contraction, its modes grouped into m, n and k) on
  a ``pr x pc`` grid, each operand split in 2-D blocks: the SUMMA schedule, in which every rank
  receives the panels of A along its grid row and those of B along its grid column,
  ``(m/pr)·k·(pc-1)/pc + k·(n/pc)·(pr-1)/pr`` elements. cuTENSORMp's planner chooses its own
  schedule; SUMMA is the classic baseline it is measured against.
- **Time**: bytes over the per-GPU bandwidth of the link that carries them (NVLink inside a node of
  ``gpus_per_node`` GPUs, the network beyond it) plus a latency per message, and ``2mnk / P`` flops
  at the sustained rate; communication and computation are added (no overlap: a pessimistic bound).

``python -m pycutensor.distributed.cost`` prints the table that ``docs/distributed.md`` shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .layout import Distribution

__all__ = [
    "ContractionCost",
    "Machine",
    "RedistributionCost",
    "contraction_cost",
    "cost_table",
    "grid_for",
    "redistribution_cost",
]


@dataclass(frozen=True)
class Machine:
    """The numbers the model needs. Defaults: an H100 SXM node (NVLink 4: 450 GB/s per GPU and
    direction) of 8 GPUs, 50 GB/s per GPU between nodes (one 400 Gb/s NIC per GPU), 50 TFLOP/s
    sustained in FP32 contractions."""

    nvlink_bytes_per_s: float = 450e9
    network_bytes_per_s: float = 50e9
    gpus_per_node: int = 8
    latency_s: float = 10e-6
    flops: float = 50e12

    def bandwidth(self, gpus: int) -> float:
        return self.nvlink_bytes_per_s if gpus <= self.gpus_per_node else self.network_bytes_per_s


@dataclass(frozen=True)
class RedistributionCost:
    total_bytes: int  # summed over the receiving ranks
    max_rank_bytes: int  # the busiest receiver
    seconds: float  # the busiest receiver's bytes over the bandwidth, plus one message per peer


def redistribution_cost(
    src: Distribution, dst: Distribution, itemsize: int, machine: Machine | None = None
) -> RedistributionCost:
    """Bytes moved to turn ``src`` into ``dst`` (same extents), by the rule above."""
    if src.extents != dst.extents:
        raise ValueError(f"src has extents {src.extents} but dst has {dst.extents}")
    machine = machine or Machine()
    assert src.ranks is not None and dst.ranks is not None
    received = []
    for rank in dst.ranks:
        need = dst.local_volume(rank)
        have_c, want_c = src.coordinate(rank), dst.coordinate(rank)
        kept = 0
        if have_c is not None and want_c is not None:
            kept = math.prod(
                int(np.count_nonzero((src.owner_coordinates(m) == have_c[m])
                                     & (dst.owner_coordinates(m) == want_c[m])))
                for m in range(src.ndim)
            )  # fmt: skip
        received.append((need - kept) * itemsize)
    peers = max(len(src.ranks), len(dst.ranks)) - 1
    busiest = max(received, default=0)
    gpus = len(set(src.ranks) | set(dst.ranks))
    seconds = busiest / machine.bandwidth(gpus) + (peers * machine.latency_s if busiest else 0.0)
    return RedistributionCost(sum(received), busiest, seconds)


@dataclass(frozen=True)
class ContractionCost:
    grid: tuple[int, int]
    received_bytes: float  # per rank
    compute_s: float
    communication_s: float

    @property
    def seconds(self) -> float:
        return self.compute_s + self.communication_s


def grid_for(gpus: int) -> tuple[int, int]:
    """The most square ``pr x pc`` grid with ``pr <= pc``."""
    if gpus < 1:
        raise ValueError(f"gpus must be positive, got {gpus}")
    pr = max(d for d in range(1, math.isqrt(gpus) + 1) if gpus % d == 0)
    return pr, gpus // pr


def contraction_cost(
    m: int,
    n: int,
    k: int,
    *,
    grid: tuple[int, int],
    itemsize: int,
    machine: Machine | None = None,
) -> ContractionCost:
    """The SUMMA model of ``C[m,n] = A[m,k] B[k,n]`` on a ``pr x pc`` grid (see above)."""
    machine = machine or Machine()
    pr, pc = grid
    if pr < 1 or pc < 1:
        raise ValueError(f"grid entries must be positive, got {grid}")
    gpus = pr * pc
    elements = (m / pr) * k * (pc - 1) / pc + k * (n / pc) * (pr - 1) / pr
    received = elements * itemsize
    messages = (pc - 1) + (pr - 1)
    comm = received / machine.bandwidth(gpus) + messages * machine.latency_s
    compute = 2.0 * m * n * k / gpus / machine.flops
    return ContractionCost(grid, received, compute, comm)


GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)


def cost_table(size: int = 32768, itemsize: int = 4, machine: Machine | None = None) -> str:
    """The Markdown table of ``docs/distributed.md``: ``size``-cubed FP32 contractions on 1-64
    GPUs, and the redistribution of a ``size x size`` matrix from row slices to column slices."""
    machine = machine or Machine()
    one = contraction_cost(
        size, size, size, grid=(1, 1), itemsize=itemsize, machine=machine
    ).seconds
    gib = float(2**30)
    rows = [
        "| GPUs | grid | A+B received per GPU (GiB) | compute (ms) | communication (ms) "
        "| modelled efficiency | redistribution received per GPU (GiB) | redistribution (ms) |",
        "|---:|:---:|---:|---:|---:|---:|---:|---:|",
    ]
    for gpus in GPU_COUNTS:
        c = contraction_cost(
            size, size, size, grid=grid_for(gpus), itemsize=itemsize, machine=machine
        )
        rows_by = Distribution((size, size), (gpus, 1))
        cols_by = Distribution((size, size), (1, gpus))
        r = redistribution_cost(rows_by, cols_by, itemsize, machine)
        rows.append(
            f"| {gpus} | {c.grid[0]}x{c.grid[1]} | {c.received_bytes / gib:.2f} "
            f"| {c.compute_s * 1e3:.1f} | {c.communication_s * 1e3:.1f} "
            f"| {one / (gpus * c.seconds):.0%} | {r.max_rank_bytes / gib:.2f} "
            f"| {r.seconds * 1e3:.1f} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover - the documented command
    print(cost_table())
