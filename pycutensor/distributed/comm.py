"""NCCL communicators for cuTENSORMp: wrap one that exists, or create one.

cuTENSORMp talks through an NCCL communicator (``ncclComm_t``), one process per GPU. A
:class:`Communicator` wraps one made elsewhere (nccl4py's ``Communicator``, PyTorch's NCCL process
group, CuPy's ``NcclCommunicator``, or a raw address), or creates one with nccl4py after a bootstrap
through MPI (``mpirun -n N``) or the environment that ``torchrun`` sets (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``). Rank, size and device are asked of NCCL
(``ncclCommUserRank``, ``ncclCommCount``, ``ncclCommCuDevice``). nccl4py and mpi4py are the
optional ``distributed`` extra; nothing else in pycutensor needs them.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from _nvbind.cuda import get_device
from _nvbind.resource import CResource

from ._common import require_gpu

__all__ = ["Communicator"]

_EXTRA = "pip install 'cudnn-cutensor-ctypes[distributed]'"
_UID_KEY = "pycutensor/nccl-unique-id"


def _import(module: str, what: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        raise ImportError(f"{what} needs {module.partition('.')[0]} ({_EXTRA}): {exc}") from exc


def _nccl() -> ctypes.CDLL:
    """libnccl, as loaded for cuTENSORMp (which links it)."""
    from .._lib_ext import MP

    MP.cdll()  # loads NCCL first, or says which package brings it
    return ctypes.CDLL("libnccl.so.2", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)


def _comm_address(comm: Any) -> int:
    """The ``ncclComm_t`` address of ``comm``: an int, nccl4py (``.ptr``), CuPy
    (``.getptr()``), or PyTorch's NCCL process group (``_comm_ptr()`` of its CUDA backend)."""
    if isinstance(comm, bool):
        raise TypeError("comm must be an NCCL communicator or its address, not a bool")
    if isinstance(comm, int):
        value = comm
    elif isinstance(getattr(comm, "ptr", None), int):
        value = comm.ptr
    elif callable(getattr(comm, "getptr", None)):
        value = int(comm.getptr())
    elif callable(getattr(comm, "_get_backend", None)):
        import torch

        value = int(comm._get_backend(torch.device("cuda"))._comm_ptr())
    else:
        raise TypeError(
            "comm must be an ncclComm_t address (int), an nccl4py Communicator, a CuPy "
            f"NcclCommunicator or a PyTorch NCCL process group, not {type(comm).__name__}"
        )
    if not 0 < value < 2**64:
        raise ValueError(f"comm {value:#x} is not the address of an NCCL communicator")
    return value


def _ask(lib: ctypes.CDLL, name: str, comm: int) -> int:
    """``ncclResult_t name(ncclComm_t, int *)``: one of NCCL's communicator queries."""
    fn = getattr(lib, name)
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)], ctypes.c_int
    value = ctypes.c_int()
    status = fn(ctypes.c_void_p(comm), ctypes.byref(value))
    if status:
        raise RuntimeError(f"{name} failed with NCCL status {status}")
    return int(value.value)


class Communicator(CResource):
    """An NCCL communicator that cuTENSORMp plans run over.

    ``Communicator(comm)`` wraps an existing one (it is not destroyed here: ``keep`` holds its
    owner alive). :meth:`from_mpi`, :meth:`from_env` and :meth:`single` create one with nccl4py
    and destroy it on :meth:`close`.
    """

    _kind = "NCCL communicator"

    def __init__(self, comm: Any, *, keep: Any = None) -> None:
        address = _comm_address(comm)
        keep = comm if keep is None and not isinstance(comm, int) else keep
        self._owned: Any = None  # an nccl4py Communicator created here
        require_gpu("an NCCL communicator")
        lib = _nccl()
        self._rank, self._size, self._device_id = (
            _ask(lib, name, address)
            for name in ("ncclCommUserRank", "ncclCommCount", "ncclCommCuDevice")
        )
        # No finalizer: a wrapped communicator is its owner's to destroy, and one created here is
        # nccl4py's object (a parent, kept alive), destroyed by close() or left to nccl4py.
        super().__init__(address, None, parents=() if keep is None else (keep,), owned=False)

    # -- creation ---------------------------------------------------------------------------
    @classmethod
    def _create(cls, nranks: int, rank: int, uid: Any, device: int) -> Communicator:
        require_gpu("an NCCL communicator")
        nccl = _import("nccl.core", "creating an NCCL communicator")

        get_device(device).set_current()  # NCCL binds the communicator to the current device
        created = nccl.Communicator.init(nranks, rank, uid)
        try:
            out = cls(created.ptr, keep=created)
        except BaseException:
            created.destroy()  # nothing else holds it: NCCL's resources would wait for the GC
            raise
        out._owned = created
        return out

    @classmethod
    def single(cls, device: int = 0) -> Communicator:
        """A one-rank communicator on ``device`` (no launcher needed)."""
        require_gpu("an NCCL communicator")
        nccl = _import("nccl.core", "creating an NCCL communicator")
        return cls._create(1, 0, nccl.get_unique_id(), device)

    @classmethod
    def from_mpi(cls, mpi_comm: Any = None, *, device: int | None = None) -> Communicator:
        """One rank per MPI process (``mpirun -n N``): rank 0's NCCL unique id is broadcast over
        ``mpi_comm`` (default ``MPI.COMM_WORLD``); ``device`` defaults to the rank within the
        node."""
        require_gpu("an NCCL communicator")
        mpi = _import("mpi4py.MPI", "an MPI bootstrap")
        nccl = _import("nccl.core", "creating an NCCL communicator")
        world = mpi.COMM_WORLD if mpi_comm is None else mpi_comm
        rank, size = world.Get_rank(), world.Get_size()
        raw = bytes(nccl.get_unique_id()) if rank == 0 else None
        uid = nccl.UniqueId.from_bytes(world.bcast(raw, root=0))
        if device is None:  # the rank within the node
            node = world.Split_type(mpi.COMM_TYPE_SHARED)
            device = node.Get_rank()
            node.Free()
        return cls._create(size, rank, uid, device)

    @classmethod
    def from_env(cls, *, device: int | None = None) -> Communicator:
        """One rank per process as ``torchrun`` launches them (``RANK``, ``WORLD_SIZE``,
        ``LOCAL_RANK``; the unique id goes through the c10d store at ``MASTER_ADDR``:
        ``MASTER_PORT``, which needs PyTorch). Without those variables: :meth:`single`."""
        if "WORLD_SIZE" not in os.environ:
            return cls.single(0 if device is None else device)
        try:
            rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
            local = int(os.environ.get("LOCAL_RANK", rank))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"RANK and WORLD_SIZE must be set to ints (torchrun): {exc}") from exc
        if size == 1:
            return cls.single(local if device is None else device)
        require_gpu("an NCCL communicator")
        nccl = _import("nccl.core", "creating an NCCL communicator")
        dist = _import("torch.distributed", "the torchrun bootstrap")
        agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), size,
            is_master=rank == 0 and not agent,
        )  # fmt: skip
        if rank == 0:
            store.set(_UID_KEY, bytes(nccl.get_unique_id()))
        uid = nccl.UniqueId.from_bytes(store.get(_UID_KEY))
        return cls._create(size, rank, uid, local if device is None else device)

    # -- state ------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """This process's rank in the communicator (0 to ``size - 1``)."""
        return self._rank

    @property
    def size(self) -> int:
        """How many ranks the communicator has."""
        return self._size

    @property
    def device_id(self) -> int:
        """The CUDA device NCCL bound this communicator to on this rank."""
        return self._device_id

    def close(self) -> None:
        """Destroy a communicator created here (a wrapped one is left to its owner)."""
        owned, self._owned = self._owned, None
        super().close()
        if owned is not None:
            owned.destroy()

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<Communicator closed>"
        return f"<Communicator rank {self._rank} of {self._size} on device {self._device_id}>"
