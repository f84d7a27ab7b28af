"""Host bookkeeping of distributed tensors against the rules that cutensorMp.h and cutensorMg.h
state in their comments, and the communication cost model built on it (and the docs table)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pycutensor.distributed.cost import (
    Machine,
    contraction_cost,
    cost_table,
    grid_for,
    redistribution_cost,
)
from pycutensor.distributed.layout import Distribution, local_length, owned_ranges, owner_of

ROOT = Path(__file__).resolve().parent.parent


def test_block_cyclic_example_of_the_header() -> None:
    # cutensorMp.h: "extent 10 with block size 4 on two rank coordinates assigns global elements
    # [0, 4) and [8, 10) to coordinate 0, and [4, 8) to coordinate 1"
    assert owned_ranges(10, 2, 4, 0) == [(0, 4), (8, 10)]
    assert owned_ranges(10, 2, 4, 1) == [(4, 8)]


def test_near_even_slices_give_the_remainder_to_lower_coordinates() -> None:
    # "blockSize[i] == 0 creates near-even contiguous slices; lower rank coordinates receive any
    # remainder": 10 over 3 is 4, 3, 3
    assert [owned_ranges(10, 3, 0, c) for c in range(3)] == [[(0, 4)], [(4, 7)], [(7, 10)]]
    # more coordinates than elements: the last ones hold nothing
    assert owned_ranges(2, 3, 0, 2) == []


def test_counts_and_owner_arrays_agree_with_the_listed_ranges() -> None:
    # local_length (closed form) and owner_of (vectorised) against the ranges listed block by
    # block, over every small case
    for extent in range(1, 23):
        for parts in range(1, 6):
            for block in range(7):
                owner = owner_of(extent, parts, block)
                for c in range(parts):
                    ranges = owned_ranges(extent, parts, block, c)
                    listed = [i for a, b in ranges for i in range(a, b)]
                    assert local_length(extent, parts, block, c) == len(listed)
                    assert listed == [i for i in range(extent) if owner[i] == c]


def test_huge_extents_are_counted_not_listed() -> None:
    d = Distribution((2**40, 3), (4, 1), block_sizes=(1, 0))
    assert d.local_extents(1) == (2**38, 3)
    with pytest.raises(ValueError, match="lists at most"):
        d.global_indices(1)
    with pytest.raises(ValueError, match="more than the"):
        Distribution((8,), (2**30,))
    with pytest.raises(ValueError, match=r"extents\[0\] must be <= "):
        Distribution((2**63,), (1,))


def test_logical_rank_coordinates_have_mode_0_fastest() -> None:
    d = Distribution((8, 6), (2, 3))
    assert [d.coordinate(r) for r in range(6)] == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
    ]  # fmt: skip


def test_ranks_order_maps_logical_ranks_and_unlisted_ranks_hold_nothing() -> None:
    # "ranks[l] has logical rank l"; "A communicator rank not listed in ranks owns no local
    # elements" (and the query returns zero local extents)
    d = Distribution((8, 6), (2, 1), nranks=2, ranks=(5, 3))
    assert d.coordinate(5) == (0, 0) and d.coordinate(3) == (1, 0)
    assert d.local_extents(3) == (4, 6)
    assert d.coordinate(0) is None
    assert d.local_extents(0) == (0, 0)


def test_replication_factor() -> None:
    # "when nranks is an integer multiple of P, the descriptor has a uniform replication factor of
    # nranks / P"; otherwise none describes it
    assert Distribution((8,), (2,), nranks=6).replication == 3
    assert Distribution((8,), (2,), nranks=3).replication is None
    d = Distribution((8, 4), (2, 1), nranks=4)
    assert d.ranks_at((1, 0)) == [1, 3]
    assert d.local_extents(3) == d.local_extents(1) == (4, 4)


def test_every_element_is_held_once_per_replica() -> None:
    d = Distribution((10, 7, 5), (2, 3, 1), block_sizes=(4, 0, 2), nranks=12)
    seen = np.zeros(d.extents, dtype=np.int64)
    for r in range(12):
        seen[np.ix_(*d.global_indices(r))] += 1
    assert (seen == 2).all()


def test_local_shard_is_fortran_ordered_slice_of_the_global_array() -> None:
    d = Distribution((10, 4), (2, 1), block_sizes=(4, 0))
    g = np.arange(40.0).reshape(10, 4)
    shard = d.local_shard(g, 0)
    assert shard.flags.f_contiguous
    np.testing.assert_array_equal(shard, g[[0, 1, 2, 3, 8, 9], :])


def test_mg_example_of_the_header() -> None:
    # cutensorMg.h: 9x9, blocks 4x2, device count 2x2: the four devices own six, four, three and
    # two blocks. Which device is second is told two ways there: the `devices` parameter is
    # "column-major order, i.e., stride 1 first" (mode 0 fastest, as cuTENSORMp says), while the
    # worked example gives device 1 the four blocks (mode 1 first). The parameter's rule is
    # followed; both agree on the blocks per grid coordinate.
    d = Distribution.block_cyclic((9, 9), (2, 2), (4, 2))
    blocks = [
        len(owned_ranges(9, 2, 4, c[0])) * len(owned_ranges(9, 2, 2, c[1]))
        for c in (d.coordinate(r) for r in range(4))
        if c is not None
    ]
    assert blocks == [6, 3, 4, 2]
    # replication: devices = {0..7} with a 2x2 grid stores every block twice
    assert Distribution.block_cyclic((9, 9), (2, 2), (4, 2), num_devices=8).replication == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"extents": (0, 4), "ranks_per_mode": (1, 1)}, r"extents\[0\] must be >= 1"),
        ({"extents": (4,), "ranks_per_mode": (1, 1)}, "ranks_per_mode has 2 entries"),
        ({"extents": (4,), "ranks_per_mode": (0,)}, r"ranks_per_mode\[0\] must be >= 1"),
        ({"extents": (4,), "ranks_per_mode": (2,), "nranks": 1}, "smaller than the process grid"),
        ({"extents": (4,), "ranks_per_mode": (2,), "ranks": (0, 0)}, "lists a rank twice"),
        ({"extents": (4,), "ranks_per_mode": (1,), "block_sizes": (-1,)}, "block_sizes"),
        ({"extents": (), "ranks_per_mode": ()}, "at least one mode"),
    ],
)
def test_bad_distributions_are_refused_naming_the_argument(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Distribution(**kwargs)


def test_mg_layout_errors_name_the_argument_at_fault() -> None:
    # Without block sizes the blocks are the extents: a zero extent was reported as a zero block
    # size, an argument the caller never gave.
    with pytest.raises(ValueError, match=r"extents\[0\] must be >= 1"):
        Distribution.block_cyclic((0, 4))
    with pytest.raises(ValueError, match="block_sizes must be positive for cuTENSORMg"):
        Distribution.block_cyclic((4, 4), (2, 1), (0, 4))


def test_redistribution_rows_to_columns_moves_all_but_the_diagonal_blocks() -> None:
    rows = Distribution((8, 8), (4, 1))
    cols = Distribution((8, 8), (1, 4))
    cost = redistribution_cost(rows, cols, itemsize=4)
    # each rank keeps its 2x2 diagonal block of the 2x8 row slice it needs as an 8x2 column slice
    assert cost.max_rank_bytes == (16 - 4) * 4
    assert cost.total_bytes == 4 * (16 - 4) * 4
    # the same layout moves nothing
    assert redistribution_cost(rows, rows, itemsize=4).total_bytes == 0


def test_redistribution_to_one_rank_is_a_gather() -> None:
    spread = Distribution((6, 4), (3, 1))
    root = Distribution((6, 4), (1, 1), nranks=1, ranks=(0,))
    cost = redistribution_cost(spread, root, itemsize=8)
    assert cost.total_bytes == cost.max_rank_bytes == (24 - 8) * 8


def test_summa_volume_and_grid() -> None:
    assert grid_for(8) == (2, 4) and grid_for(7) == (1, 7) and grid_for(64) == (8, 8)
    c = contraction_cost(100, 200, 300, grid=(2, 4), itemsize=4)
    a = (100 / 2) * 300 * 3 / 4
    b = 300 * (200 / 4) * 1 / 2
    assert c.received_bytes == pytest.approx((a + b) * 4)
    assert contraction_cost(100, 200, 300, grid=(1, 1), itemsize=4).communication_s == 0
    slow = Machine(network_bytes_per_s=1e9)
    assert (
        contraction_cost(64, 64, 64, grid=(4, 4), itemsize=4, machine=slow).communication_s
        > contraction_cost(64, 64, 64, grid=(4, 4), itemsize=4).communication_s
    )


def test_docs_table_is_the_models_output() -> None:
    text = (ROOT / "docs" / "distributed.md").read_text()
    m = re.search(r"<!-- cost-table:begin -->\n(.*?)\n<!-- cost-table:end -->", text, re.DOTALL)
    assert m is not None, "docs/distributed.md has no cost-table markers"
    assert m.group(1).strip() == cost_table().strip(), (
        "regenerate the table with `python -m pycutensor.distributed.cost`"
    )
    assert "model" in text[: m.start()].rsplit("##", 1)[-1].lower()


def test_a_replaced_distribution_has_its_own_owners_and_ranks() -> None:
    # dataclasses.replace handed the caches of the original to the copy: the copy answered with
    # the original's owner arrays, and its rank mapping was merged into the original's.
    import dataclasses

    d = Distribution((8,), (2,), nranks=2, ranks=(0, 1))
    assert d.owner_coordinates(0).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    cyclic = dataclasses.replace(d, block_sizes=(1,))
    assert cyclic.owner_coordinates(0).tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    swapped = dataclasses.replace(d, ranks=(1, 0))
    assert swapped.coordinate(0) == (1,) and swapped.coordinate(1) == (0,)
    assert d.coordinate(0) == (0,) and d.coordinate(1) == (1,)  # the original is unchanged
    elsewhere = dataclasses.replace(d, ranks_per_mode=(1,), nranks=1, ranks=(3,))
    assert elsewhere.coordinate(0) is None and elsewhere.local_extents(0) == (0,)
    assert elsewhere.local_extents(3) == (8,)


def test_mg_device_counts_are_named_as_cutensormg_names_them() -> None:
    # block_cyclic is cuTENSORMg's layout (MgTensor's): a wrong device_count or device list was
    # reported as cuTENSORMp's ranks_per_mode or nranks, arguments the caller never gave.
    with pytest.raises(ValueError, match="device_count has 1 entries but the tensor has 2 modes"):
        Distribution.block_cyclic((4, 4), (2,))
    with pytest.raises(ValueError, match=r"device_count\[0\] must be >= 1"):
        Distribution.block_cyclic((4, 4), (0, 1))
    with pytest.raises(ValueError, match="num_devices = 2 is smaller than prod"):
        Distribution.block_cyclic((4, 4), (2, 2), None, 2)
    assert Distribution.block_cyclic((4, 4), (2, 2), None, 8).replication == 2
