"""CPU tier of pycutensor.distributed's cuTENSORMp and cuTENSORMg objects: argument checks that
run before any library call, and the specific error for what needs a GPU."""

from __future__ import annotations

import pytest

from _nvbind.cuda import gpu_available
from pycutensor.distributed import (
    Communicator,
    DeviceRequiredError,
    DistributedTensor,
    MgHandle,
    MpHandle,
)
from pycutensor.distributed._common import contraction_modes
from pycutensor.distributed.layout import Distribution
from pycutensor.distributed.mp import _groups, check_folding, parse_subscripts


@pytest.fixture
def no_gpu() -> None:
    if gpu_available()[0]:
        pytest.skip("a GPU is usable here: the no-GPU errors are not raised")


@pytest.mark.parametrize(
    ("comm", "error", "match"),
    [
        ("comm", TypeError, "ncclComm_t address"),
        (True, TypeError, "not a bool"),
        (0, ValueError, "not the address"),
        (2**64, ValueError, "not the address"),
        (object(), TypeError, "PyTorch NCCL process group"),
    ],
)
def test_communicator_refuses_what_is_not_one(comm: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        Communicator(comm)


def test_communicator_says_it_needs_a_gpu(no_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DeviceRequiredError, match="NCCL communicator needs a CUDA GPU"):
        Communicator(0x1000)
    with pytest.raises(DeviceRequiredError):
        Communicator.single()
    with pytest.raises(DeviceRequiredError):
        Communicator.from_mpi()
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(DeviceRequiredError):
        Communicator.from_env()  # no launcher: one rank


def test_from_env_reads_torchrun_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(ValueError, match="RANK and WORLD_SIZE must be set to ints"):
        Communicator.from_env()


def test_handle_and_tensor_check_their_arguments() -> None:
    with pytest.raises(TypeError, match="Communicator"):
        MpHandle(0x1000)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MpHandle"):
        DistributedTensor("handle", (4, 4))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("subscripts", "match"),
    [
        ("ik,kj", "explicit"),
        ("ik,kj,jl->il", "two operands"),
        ("i...,kj->ij", "distinct letters"),
        ("iik,kj->ij", "distinct letters"),
        ("ik,k1->i1", "distinct letters"),
    ],
)
def test_einsum_subscripts(subscripts: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_subscripts(subscripts)


def test_einsum_subscripts_parse() -> None:
    assert parse_subscripts("mk, kn -> mn") == ("mk", "kn", "mn")


def test_unfold_groups_follow_the_header() -> None:
    # "currently only the value 2 is supported"; groupSize entries "must sum to the number of
    # modes"
    indices, sizes = _groups([[0, 2], [1]], 3, "unfold")
    assert list(indices) == [0, 2, 1] and list(sizes) == [2, 1]
    with pytest.raises(ValueError, match="exactly 2 groups"):
        _groups([[0], [1], [2]], 3, "unfold")
    with pytest.raises(ValueError, match="each of the 3 modes"):
        _groups([[0, 1], [1]], 3, "unfold")


@pytest.mark.parametrize(
    ("devices", "match"),
    [([], "at least one device"), ([0, 0], "twice"), ([-1], r"ordinals \(>= 0\)")],
)
def test_mg_handle_checks_the_device_list(devices: list[int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MgHandle(devices)


def test_mg_handle_says_it_needs_a_gpu(no_gpu: None) -> None:
    # The project's common wording, which the documentation's checks take for "no GPU here".
    needs = "cuTENSORMg handle needs a CUDA GPU, but none is usable: "
    with pytest.raises(DeviceRequiredError, match=needs):
        MgHandle([0])
    with pytest.raises(DeviceRequiredError, match=needs):
        MgHandle()  # every visible GPU: none


def test_folding_rules_of_the_header() -> None:
    tensor = Distribution((8, 4, 16), (2, 1, 1))
    matrix = Distribution((128, 4), (2, 1), block_sizes=(32, 32))
    indices, sizes = check_folding(tensor, "R_32F", matrix, "R_32F", [[0, 2], [1]], what="unfold")
    assert list(indices) == [0, 2, 1] and list(sizes) == [2, 1]
    # "a multiple of 32 for FP32 (CUDA_R_32F) and a multiple of 16 for all other ... datatypes"
    tiles16 = Distribution((128, 4), (2, 1), block_sizes=(16, 16))
    with pytest.raises(ValueError, match="multiple of 32 for R_32F"):
        check_folding(tensor, "R_32F", tiles16, "R_32F", [[0, 2], [1]], what="unfold")
    check_folding(tensor, "R_64F", tiles16, "R_64F", [[0, 2], [1]], what="fold")
    # "FP16 and BF16 unfolding are currently not supported"
    with pytest.raises(TypeError, match="FP16 and BF16"):
        check_folding(tensor, "R_16F", tiles16, "R_16F", [[0, 2], [1]], what="unfold")
    # "the unfolded extents do not match descDst"
    with pytest.raises(ValueError, match=r"grouped extents are \(32, 16\)"):
        check_folding(tensor, "R_64F", tiles16, "R_64F", [[0, 1], [2]], what="unfold")
    with pytest.raises(ValueError, match="2 modes"):
        check_folding(tensor, "R_64F", tensor, "R_64F", [[0, 2], [1]], what="unfold")


def test_contraction_modes_follow_cutensors_rules() -> None:
    ma, mb, mc = contraction_modes(
        [((4, 3), "mk", "modes_a"), ((3, 5), "kn", "modes_b"), ((4, 5), "mn", "modes_c")]
    )
    assert (ma, mb, mc) == ((ord("m"), ord("k")), (ord("k"), ord("n")), (ord("m"), ord("n")))
    with pytest.raises(ValueError, match="mode 'k' has extent 3 in modes_a but 4 in modes_b"):
        contraction_modes(
            [((4, 3), "mk", "modes_a"), ((4, 5), "kn", "modes_b"), ((4, 5), "mn", "modes_c")]
        )
    with pytest.raises(ValueError, match="output mode 'x' appears in no input"):
        contraction_modes(
            [((4, 3), "mk", "modes_a"), ((3, 5), "kn", "modes_b"), ((4, 5), "mx", "modes_c")]
        )
    with pytest.raises(ValueError, match="modes_b repeats a mode"):
        contraction_modes(
            [((4, 3), "mk", "modes_a"), ((3, 3), "kk", "modes_b"), ((4, 3), "mk", "modes_c")]
        )
    with pytest.raises(ValueError, match="modes_c has 1 modes but the tensor has 2"):
        contraction_modes(
            [((4, 3), "mk", "modes_a"), ((3, 5), "kn", "modes_b"), ((4, 5), "m", "modes_c")]
        )
    with pytest.raises(TypeError, match="one-character string"):
        contraction_modes(
            [((4, 3), ["mm", "k"], "modes_a"), ((3, 5), "kn", "modes_b"), ((4, 5), "mn", "c")]
        )


def test_mg_contraction_refuses_a_replicated_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """cutensorMg.h: "Replicated tensors can be used everywhere except as outputs for
    contractions". A C over twice prod(device_count) devices reached
    cutensorMgCreateContractionDescriptor. The handle and tensors are stand-ins (cuTENSORMg needs
    GPUs for them); the C call is a recorder that says whether the plan got that far."""
    import numpy as np

    from _nvbind.resource import CResource
    from pycutensor import raw_mg
    from pycutensor.distributed import MgContractionPlan, MgTensor

    handle = MgHandle.__new__(MgHandle)
    CResource.__init__(handle, 0x1000, None, owned=False)  # never reaches C
    handle.devices = (0, 1, 2, 3)

    def tensor(extents: tuple[int, ...], devices: tuple[int, ...]) -> MgTensor:
        t = MgTensor.__new__(MgTensor)
        CResource.__init__(t, 0x2000, None, owned=False)
        t.handle, t.devices, t.data_type, t.dtype = handle, devices, "R_32F", np.dtype("f4")
        t.distribution = Distribution.block_cyclic(extents, (2, 1), None, len(devices))
        return t

    class ReachedC(Exception):
        pass

    def recorder(*args: object) -> None:
        raise ReachedC

    monkeypatch.setattr(raw_mg, "cutensorMgCreateContractionDescriptor", recorder, raising=False)
    a, b = tensor((8, 4), (0, 1, 2, 3)), tensor((4, 6), (0, 1))
    with pytest.raises(ValueError, match="except as outputs for contractions"):
        MgContractionPlan(a, "mk", b, "kn", tensor((8, 6), (0, 1, 2, 3)), "mn")
    with pytest.raises(ReachedC):  # replicated inputs are fine
        MgContractionPlan(a, "mk", b, "kn", tensor((8, 6), (0, 1)), "mn")


class _Created:
    """An nccl4py Communicator stand-in that records its destruction."""

    ptr = 0x7F00_0000_1000
    events: list[str]

    @classmethod
    def init(cls, nranks: int, rank: int, uid: object) -> _Created:
        cls.events.append("init")
        return cls()

    def destroy(self) -> None:
        self.events.append("destroy")


@pytest.fixture
def stand_in_nccl(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """nccl4py, the GPU guard and the device stand in (creating a communicator needs a GPU);
    returns the list of the created communicators' events."""
    import sys
    import types

    from pycutensor.distributed import comm as comm_module

    events: list[str] = []
    monkeypatch.setattr(_Created, "events", events, raising=False)
    nccl = types.ModuleType("nccl")
    core = types.ModuleType("nccl.core")
    core.Communicator = _Created  # type: ignore[attr-defined]
    core.get_unique_id = lambda: b"uid"  # type: ignore[attr-defined]
    nccl.core = core  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nccl", nccl)
    monkeypatch.setitem(sys.modules, "nccl.core", core)
    monkeypatch.setattr(comm_module, "require_gpu", lambda what: None)
    monkeypatch.setattr(comm_module, "get_device", lambda device: types.SimpleNamespace(
        set_current=lambda: None))  # fmt: skip
    return events


def test_a_created_communicator_is_destroyed_when_wrapping_it_fails(
    monkeypatch: pytest.MonkeyPatch, stand_in_nccl: list[str]
) -> None:
    """``Communicator.single()`` (and from_mpi/from_env) create an NCCL communicator with nccl4py,
    then wrap it, which loads NCCL through cuTENSORMp and asks it for rank, size and device. When
    that fails (cuTENSORMp missing its CUDA runtime, an NCCL query failing), the communicator just
    created must be destroyed, not left to the garbage collector (NCCL resources, peers waiting)."""
    from pycutensor.distributed import comm as comm_module

    def no_nccl() -> None:
        raise OSError("libnccl.so.2: cannot open shared object file")

    monkeypatch.setattr(comm_module, "_nccl", no_nccl)
    with pytest.raises(OSError, match="libnccl"):
        Communicator.single()
    assert stand_in_nccl == ["init", "destroy"]


def test_a_communicator_owns_its_nccl_communicator_as_other_c_objects_do(
    monkeypatch: pytest.MonkeyPatch, stand_in_nccl: list[str]
) -> None:
    """A created communicator is destroyed once, by close() (or leaving ``with``); a wrapped one
    never; either refuses its address once closed, and neither can be copied (a copy's close
    would destroy what the original still uses)."""
    import copy
    import pickle

    from pycutensor.distributed import comm as comm_module
    from pycutensor.errors import ClosedError

    monkeypatch.setattr(comm_module, "_nccl", lambda: None)
    answers = {"ncclCommUserRank": 0, "ncclCommCount": 1, "ncclCommCuDevice": 3}
    monkeypatch.setattr(comm_module, "_ask", lambda lib, name, comm: answers[name])

    with Communicator.single() as created:
        assert (created.rank, created.size, created.device_id) == (0, 1, 3)
        assert created.ptr == _Created.ptr and not created.closed
        assert repr(created) == "<Communicator rank 0 of 1 on device 3>"
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            copy.copy(created)
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            pickle.dumps(created)
    assert stand_in_nccl == ["init", "destroy"]
    created.close()  # idempotent: not destroyed twice
    assert stand_in_nccl == ["init", "destroy"] and created.closed
    with pytest.raises(ClosedError, match="NCCL communicator is closed"):
        created.ptr  # noqa: B018
    with pytest.raises(ClosedError), created:
        pass

    wrapped = Communicator(0x2000)
    wrapped.close()
    assert wrapped.closed and stand_in_nccl == ["init", "destroy"]  # its owner's to destroy
    assert repr(wrapped) == "<Communicator closed>"


def test_a_handle_refuses_to_reach_cutensormp_once_its_communicator_is_closed(
    monkeypatch: pytest.MonkeyPatch, stand_in_nccl: list[str]
) -> None:
    """Every cuTENSORMp call made with an MpHandle reaches NCCL through the handle's
    communicator: once that is closed (destroyed, for one created here) the call would use freed
    memory, so ctypes' read of the handle refuses it. The handle is made without cuTENSORMp (it
    needs a GPU); a harmless libc function stands for the C call that reads it (the raw layer
    turns ctypes' report of the refusal back into the ClosedError: tests/test_raw_cudnn.py)."""
    import ctypes

    from _nvbind.resource import CResource
    from pycutensor.distributed import comm as comm_module
    from pycutensor.errors import ClosedError

    monkeypatch.setattr(comm_module, "_nccl", lambda: None)
    monkeypatch.setattr(comm_module, "_ask", lambda lib, name, comm: 0)
    comm = Communicator.single()
    handle = MpHandle.__new__(MpHandle)
    CResource.__init__(handle, 0x1000, None, parents=(comm,), owned=False)
    handle.comm = comm
    labs = ctypes.CDLL(None).labs  # reads its argument as a number: nothing is dereferenced
    labs.argtypes, labs.restype = [ctypes.c_void_p], ctypes.c_long
    assert labs(handle) == 0x1000
    comm.close()
    with pytest.raises(ctypes.ArgumentError, match="communicator of this cuTENSORMp handle"):
        labs(handle)
    with pytest.raises(ClosedError, match="close the handle, and what uses it, before"):
        handle._as_parameter_  # noqa: B018 - what ctypes reads
    assert stand_in_nccl == ["init", "destroy"]


def test_mg_tensor_refuses_arrays_not_laid_out_as_its_descriptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The descriptor tells cuTENSORMg that each device's data is a packed column-major array of
    local_shape from the array's pointer: a C-ordered array, one with gaps between elements, or
    one with negative strides (the memory below its pointer) was accepted on its byte span, and
    cuTENSORMg read and wrote other elements than the array's (or past its memory). The handle is a
    stand-in and the descriptor is not created (cuTENSORMg needs GPUs)."""
    import numpy as np

    from _nvbind.resource import CResource
    from _nvbind.view import ArrayView
    from pycutensor.distributed import MgTensor

    handle = MgHandle.__new__(MgHandle)
    CResource.__init__(handle, 0x1000, None, owned=False)  # never reaches C
    handle.devices = (0, 1)
    monkeypatch.setattr(
        MgTensor, "_create", lambda self, *args: CResource.__init__(self, 0x2000, None, owned=False)
    )
    f4 = np.dtype("f4")

    def arrays(shape: tuple[int, ...], strides: tuple[int, ...], ptr: int = 0x10000) -> list:
        return [ArrayView(ptr, shape, strides, f4, dev, False, None) for dev in (0, 1)]

    def tensor(given: list) -> MgTensor:  # 8x3 in blocks of 2 rows over 2 devices: 4x3 each
        return MgTensor(handle, (8, 3), np.float32, block_sizes=(2, 3), device_count=(2, 1),
                        arrays=given)  # fmt: skip

    assert tensor(arrays((4, 3), (1, 4))).local_shape == (4, 3)  # column-major
    tensor(arrays((12,), (1,)))  # one dense run of elements
    tensor(arrays((16,), (1,)))  # longer than needed
    for shape, strides, ptr in [
        ((4, 3), (3, 1), 0x10000),  # C order
        ((12,), (2,), 0x10000),  # gaps between elements
        ((12,), (-1,), 0x10000 + 44),  # memory below the pointer
    ]:
        with pytest.raises(ValueError, match=r"arrays\[0\] must be .*column-major"):
            tensor(arrays(shape, strides, ptr))
