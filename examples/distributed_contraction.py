"""A contraction of tensors spread over several GPUs: cuTENSORMp over NCCL, one process per GPU.

    python examples/distributed_contraction.py                        # one process, one GPU
    mpirun -n 4 python examples/distributed_contraction.py            # four processes, four GPUs
    torchrun --nproc-per-node 4 examples/distributed_contraction.py   # the same with torchrun

Every rank holds a slice of A (rows), of B (columns) and of C (blocks of 64 rows dealt
round-robin); rank 0 scatters the data, every rank takes part in ``C = A B``, rank 0 gathers C and
compares it with NumPy.

Without a GPU it prints what each of four ranks would hold (cuTENSORMp's documented rules,
applied on the host) and the communication model of this contraction, then says what needs a GPU
and exits 3 (nothing was checked). With a GPU but without NCCL (the ``distributed`` extra), it
runs the same contraction with cuTENSORMg on one GPU instead. Exit status 1 on a mismatch.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import pycutensor
from pycutensor.distributed import (
    Communicator,
    DistributedTensor,
    Distribution,
    MgContractionPlan,
    MgHandle,
    MgTensor,
    MpHandle,
    einsum,
    gather,
    scatter,
)
from pycutensor.distributed.cost import contraction_cost, grid_for

# The exit status when the check against NumPy could not run here (no GPU): not 0, which says
# the results were checked (the README's exit-code table).
NOT_CHECKED = 3


def gpu_missing() -> str | None:
    """None when a CUDA GPU is usable here, else the driver's reason."""
    try:
        from cuda.core import Device

        Device(0).set_current()
    except Exception as e:  # no driver library, no device, ...
        return str(e) or type(e).__name__
    return None


M, K, N = 512, 256, 384
launched = os.environ.get("WORLD_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE")
ranks = int(launched or 4)  # the preview shows four ranks when nothing launched several

# What each rank holds, by the rules of cutensorMp.h (no GPU, no library call):
print(Distribution((M, N), (ranks, 1), block_sizes=(64, 0)).describe())
model = contraction_cost(M, N, K, grid=grid_for(ranks), itemsize=4)
print(f"model on {ranks} GPUs ({model.grid[0]}x{model.grid[1]} grid): "
      f"{model.received_bytes / 2**20:.2f} MiB received per GPU")  # fmt: skip

reason = gpu_missing()
if reason:
    print(f"needs a GPU (and NCCL) to run the contraction and check it against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

rng = np.random.default_rng(0)
host_a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
host_b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
expected = host_a @ host_b

try:
    mpi = "OMPI_COMM_WORLD_SIZE" in os.environ or "PMI_SIZE" in os.environ
    comm = Communicator.from_mpi() if mpi else Communicator.from_env()
except (ImportError, pycutensor.LibraryNotFoundError) as e:  # NCCL or nccl4py missing
    print(f"cuTENSORMp is unavailable ({e}); the same contraction with cuTENSORMg on one GPU")
    devices = MgHandle([0])
    mg_a, mg_b = MgTensor(devices, (M, K)), MgTensor(devices, (K, N))
    mg_c = MgTensor(devices, (M, N))
    mg_a.from_numpy(host_a)
    mg_b.from_numpy(host_b)
    MgContractionPlan(mg_a, "mk", mg_b, "kn", mg_c, "mn").execute(alpha=1.0, beta=0.0)
    result = mg_c.to_numpy()
else:
    handle = MpHandle(comm)
    p, rank = comm.size, comm.rank
    a = DistributedTensor(handle, (M, K), np.float32, ranks_per_mode=(p, 1))
    b = DistributedTensor(handle, (K, N), np.float32, ranks_per_mode=(1, p))
    c = DistributedTensor(handle, (M, N), np.float32, ranks_per_mode=(p, 1), block_sizes=(64, 0))
    scatter(host_a if rank == 0 else None, a)
    scatter(host_b if rank == 0 else None, b)
    einsum("mk,kn->mn", a, b, out=c)
    result = gather(c)  # the whole C on rank 0, None on the others
    # What cuTENSORMp says this rank holds is what the documented rules say.
    assert c.local_extents == c.distribution.local_extents(rank), c

if result is not None:  # rank 0 checks; the other ranks end here
    if not np.allclose(result, expected, rtol=1e-4, atol=1e-4):
        print("MISMATCH")
        sys.exit(1)
    print("matches NumPy")
