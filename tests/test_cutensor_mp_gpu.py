"""GPU tier of pycutensor.distributed against NumPy (``pytest -m gpu``).

cuTENSORMp runs on every rank of the launch: one process on one GPU by default, or N ranks with
``mpirun -n N python -m pytest -m gpu tests/test_cutensor_mp_gpu.py`` (each rank checks its own
shard; the root checks gathered results). The cuTENSORMp tests need NCCL, the CUDA runtime and
nccl4py (the ``distributed`` extra) and are skipped with the reason otherwise. cuTENSORMg runs on
one device and, where there are several, on all of them; block-sparse contractions on one GPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

import pycutensor
from pycutensor.distributed import (
    BlockSparseContractionPlan,
    BlockSparseTensor,
    BlockStructure,
    Communicator,
    ContractionPlan,
    DistributedTensor,
    FoldPlan,
    MgContractionPlan,
    MgHandle,
    MgTensor,
    MpHandle,
    RedistributionPlan,
    UnfoldPlan,
    einsum,
    gather,
    scatter,
)

pytestmark = pytest.mark.gpu

RTOL = 1e-4  # float32 sums of at most a few hundred terms of magnitude <= 1


@pytest.fixture(scope="module")
def comm() -> Iterator[Communicator]:
    pytest.importorskip("nccl.core", reason="nccl4py is not installed (the distributed extra)")
    from pycutensor._lib_ext import MP

    try:
        MP.cdll()
    except pycutensor.LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    launched_by_mpi = any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"))
    c = Communicator.from_mpi() if launched_by_mpi else Communicator.from_env()
    yield c
    c.close()


@pytest.fixture(scope="module")
def handle(comm: Communicator) -> Iterator[MpHandle]:
    h = MpHandle(comm)
    yield h
    h.close()


def _host(shape: tuple[int, ...], seed: int) -> np.ndarray:
    # the same on every rank: each rank can check its own shard
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def test_wrapping_a_communicator_asks_nccl_for_rank_and_size(comm: Communicator) -> None:
    other = Communicator(comm.ptr)
    assert (other.rank, other.size, other.device_id) == (comm.rank, comm.size, comm.device_id)
    other.close()  # not owned: the wrapped communicator stays usable
    assert not comm.closed


@pytest.mark.parametrize(
    ("per", "blocks"), [((-1, 1), None), ((-1, 1), (4, 0)), ((1, -1), (0, 3)), ((1, 1), None)]
)
def test_what_cutensormp_reports_each_rank_holds_follows_the_header(
    handle: MpHandle, per: tuple[int, int], blocks: tuple[int, int] | None
) -> None:
    p = handle.size
    grid = tuple(p if x == -1 else x for x in per)
    t = DistributedTensor(handle, (21, 10), np.float32, ranks_per_mode=grid, block_sizes=blocks,
                          nranks=p)  # fmt: skip
    assert t.local_extents == t.distribution.local_extents(handle.rank)
    assert t.local_storage_bytes >= np.prod(t.local_extents) * 4
    t.close()


def test_scatter_then_gather_round_trips(handle: MpHandle) -> None:
    p, rank = handle.size, handle.rank
    host = _host((13, 8), 1)
    t = DistributedTensor(handle, host.shape, np.float32, ranks_per_mode=(p, 1),
                          block_sizes=(3, 0))  # fmt: skip
    scatter(host if rank == 0 else None, t)
    np.testing.assert_array_equal(t.local_to_numpy(), t.distribution.local_shard(host, rank))
    back = gather(t)
    if rank == 0:
        np.testing.assert_array_equal(back, host)
    else:
        assert back is None


def test_scatter_refused_by_the_root_raises_on_every_rank_and_leaves_them_usable(
    handle: MpHandle,
) -> None:
    """The root's refusal reaches every rank through the flag's collective (none waits in the
    data's), and the next scatter on the same handle works."""
    p, rank = handle.size, handle.rank
    host = _host((13, 8), 5)
    t = DistributedTensor(handle, host.shape, np.float32, ranks_per_mode=(p, 1))
    with pytest.raises(ValueError, match="scatter: "):
        scatter(host.T if rank == 0 else None, t)
    scatter(host if rank == 0 else None, t)
    np.testing.assert_array_equal(t.local_to_numpy(), t.distribution.local_shard(host, rank))
    t.close()


def test_einsum_matches_numpy(handle: MpHandle) -> None:
    p, rank = handle.size, handle.rank
    ha, hb, hc = _host((64, 48), 2), _host((48, 40), 3), _host((64, 40), 4)
    a = DistributedTensor(handle, ha.shape, np.float32, ranks_per_mode=(p, 1))
    b = DistributedTensor(handle, hb.shape, np.float32, ranks_per_mode=(1, p))
    c = DistributedTensor(handle, hc.shape, np.float32, ranks_per_mode=(p, 1), block_sizes=(8, 0))
    for host, t in ((ha, a), (hb, b), (hc, c)):
        scatter(host if rank == 0 else None, t)
    plan = einsum("mk,kn->mn", a, b, out=c, alpha=2.0, beta=0.5)
    assert isinstance(plan, ContractionPlan)
    result = gather(c)
    if rank == 0:
        np.testing.assert_allclose(result, 2.0 * ha @ hb + 0.5 * hc, rtol=RTOL, atol=RTOL)
    # the plan runs again with only the data changing
    scatter(hc if rank == 0 else None, c)
    plan.execute(1.0, 0.0)
    result = gather(c)
    if rank == 0:
        np.testing.assert_allclose(result, ha @ hb, rtol=RTOL, atol=RTOL)


def test_redistribution_rows_to_columns(handle: MpHandle) -> None:
    p, rank = handle.size, handle.rank
    host = _host((12, 10), 5)
    rows = DistributedTensor(handle, host.shape, np.float32, ranks_per_mode=(p, 1))
    cols = DistributedTensor(handle, host.shape, np.float32, ranks_per_mode=(1, p),
                             block_sizes=(0, 2))  # fmt: skip
    scatter(host if rank == 0 else None, rows)
    RedistributionPlan(cols, rows).execute()
    np.testing.assert_array_equal(cols.local_to_numpy(), cols.distribution.local_shard(host, rank))


def test_unfold_and_fold(handle: MpHandle) -> None:
    p, rank = handle.size, handle.rank
    host = _host((8, 4, 16), 6).astype(np.float64)
    t = DistributedTensor(handle, host.shape, np.float64, ranks_per_mode=(p, 1, 1))
    # rows: modes 0 and 2 (mode 0 fastest), columns: mode 1; tiles of 16 for float64
    m = DistributedTensor(handle, (128, 4), np.float64, ranks_per_mode=(p, 1), block_sizes=(16, 16))
    scatter(host if rank == 0 else None, t)
    UnfoldPlan(m, t, [[0, 2], [1]]).execute()
    matrix = gather(m)
    if rank == 0:
        expected = np.transpose(host, (0, 2, 1)).reshape(128, 4, order="F")
        np.testing.assert_array_equal(matrix, expected)
    back = DistributedTensor(handle, host.shape, np.float64, ranks_per_mode=(1, 1, p))
    FoldPlan(back, m, [[0, 2], [1]]).execute()
    whole = gather(back)
    if rank == 0:
        np.testing.assert_array_equal(whole, host)


def test_unfold_refuses_tiles_off_the_granularity(handle: MpHandle) -> None:
    t = DistributedTensor(handle, (8, 4), np.float32)
    m = DistributedTensor(handle, (8, 4), np.float32, block_sizes=(16, 16))
    with pytest.raises(ValueError, match="multiple of 32"):
        UnfoldPlan(m, t, [[0], [1]])


# -- cuTENSORMg ----------------------------------------------------------------------------------
def _device_count() -> int:
    from _nvbind.cuda import driver_status

    return driver_status().device_count


@pytest.mark.parametrize("devices", ["one", "all"])
def test_mg_copy_and_contraction_match_numpy(devices: str) -> None:
    n = 1 if devices == "one" else _device_count()
    if devices == "all" and n < 2:
        pytest.skip("one GPU: the several-device case needs two or more")
    handle = MgHandle(list(range(n)))
    ha, hb, hc = _host((40, 24), 7), _host((24, 36), 8), _host((40, 36), 9)
    a = MgTensor(handle, ha.shape, np.float32, block_sizes=(8, 8), device_count=(n, 1))
    b = MgTensor(handle, hb.shape, np.float32, block_sizes=(8, 12), device_count=(1, n))
    c = MgTensor(handle, hc.shape, np.float32, block_sizes=(16, 16), device_count=(n, 1))
    a.from_numpy(ha)
    b.from_numpy(hb)
    c.from_numpy(hc)
    np.testing.assert_array_equal(a.to_numpy(), ha)
    MgContractionPlan(a, "mk", b, "kn", c, "mn").execute(alpha=1.5, beta=-1.0)
    np.testing.assert_allclose(c.to_numpy(), 1.5 * ha @ hb - hc, rtol=RTOL, atol=RTOL)


def test_mg_handle_defaults_to_every_visible_gpu() -> None:
    assert MgHandle().devices == tuple(range(_device_count()))


# -- block-sparse --------------------------------------------------------------------------------
def test_block_sparse_contraction_matches_numpy(gpu_device: int) -> None:
    m, k, n = (8, 16), (12, 4), (10, 6)
    sa = BlockStructure((m, k), ((0, 0), (1, 1), (1, 0)))
    sb = BlockStructure((k, n), ((0, 0), (1, 1), (0, 1)))
    sc = BlockStructure((m, n), ((0, 0), (1, 1)))  # C's blocks alone are computed
    ha = sa.assemble(sa.split(_host(sa.extents, 10).astype(np.float64)))
    hb = sb.assemble(sb.split(_host(sb.extents, 11).astype(np.float64)))
    hc = sc.assemble(sc.split(_host(sc.extents, 12).astype(np.float64)))
    a = BlockSparseTensor.from_numpy(ha, sa, device=gpu_device)
    b = BlockSparseTensor.from_numpy(hb, sb, device=gpu_device)
    c = BlockSparseTensor.from_numpy(hc, sc, device=gpu_device)
    plan = BlockSparseContractionPlan(a, "mk", b, "kn", c, "mn")
    plan.execute(alpha=2.0, beta=1.0)
    from _nvbind.cuda import get_device

    get_device(gpu_device).sync()
    full = 2.0 * ha @ hb + hc
    expected = sc.assemble(sc.split(full))  # no fill-in outside C's blocks
    np.testing.assert_allclose(c.to_numpy(), expected, rtol=1e-12, atol=1e-12)
