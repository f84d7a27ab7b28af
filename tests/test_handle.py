"""cuDNN handles: what happens without a GPU (CPU tier) and device/stream binding (GPU tier)."""

from __future__ import annotations

import threading

import pytest

import pycudnn
from _nvbind.cuda import driver_status
from pycudnn.handle import Handle, get_handle


def _skip_if_gpu() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a usable GPU, so cudnnCreate succeeds")


# -- CPU tier ---------------------------------------------------------------------------------


def test_handle_without_gpu_raises_cudnns_not_initialized_error() -> None:
    _skip_if_gpu()
    with pytest.raises(pycudnn.CudnnNotInitializedError) as info:
        Handle()
    err = info.value
    assert err.status == 1001
    assert err.function == "cudnnCreate"
    # cuDNN's own explanation, then the driver's reason.
    assert "cudaGetDeviceCount" in err.message
    reason = driver_status().reason
    assert reason and reason in err.message
    # The cuda.core (or cuda.pathfinder) failure that was hit first stays attached.
    assert err.__cause__ is not None


def test_get_handle_without_gpu_raises_the_same_error() -> None:
    _skip_if_gpu()
    with pytest.raises(pycudnn.CudnnNotInitializedError, match="cudaGetDeviceCount"):
        get_handle()
    with pytest.raises(pycudnn.CudnnNotInitializedError):
        get_handle(0)


@pytest.mark.parametrize(
    ("device", "error"), [("0", TypeError), (1.0, TypeError), (True, TypeError), (-1, ValueError)]
)
def test_bad_device_arguments(device: object, error: type) -> None:
    with pytest.raises(error):
        Handle(device)
    with pytest.raises(error):
        get_handle(device)


@pytest.mark.parametrize(
    ("pointer", "error"), [(0, ValueError), (-5, ValueError), ("0x1", TypeError), (None, TypeError)]
)
def test_from_handle_argument_errors(pointer: object, error: type) -> None:
    with pytest.raises(error):
        Handle.from_handle(pointer)  # type: ignore[arg-type]


# -- GPU tier ---------------------------------------------------------------------------------


@pytest.mark.gpu
def test_handle_binds_to_a_device(gpu_device: int) -> None:
    with Handle(gpu_device) as h:
        assert h.device_id == gpu_device
        assert int(h.device.device_id) == gpu_device
        assert h.stream == 0
        assert f"device={gpu_device}" in repr(h)
    assert h.closed
    h.close()
    with pytest.raises(pycudnn.ClosedError):
        _ = h.stream
    with pytest.raises(pycudnn.ClosedError):
        h.make_current()


@pytest.mark.gpu
def test_stream_round_trips(gpu_device: int) -> None:
    from cuda.core import Device

    dev = Device(gpu_device)
    dev.set_current()
    s1 = dev.create_stream()
    s2 = dev.create_stream()

    class Foreign:
        """Any object speaking the __cuda_stream__ protocol."""

        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, int(s2.handle))

    h = Handle(gpu_device, stream=s1)
    try:
        assert h.stream == int(s1.handle) == h.stream_ptr
        h.stream = int(s2.handle)
        assert h.stream == int(s2.handle)
        h.stream = Foreign()
        assert h.stream == int(s2.handle)
        h.stream = None
        assert h.stream == 0
        assert h.use_stream(s1) == int(s1.handle)
        assert h.stream == int(s1.handle)
        assert h.use_stream(s1) == int(s1.handle)  # unchanged: no cudnnSetStream
        with pytest.raises(TypeError):
            h.stream = "stream"
        with pytest.raises(ValueError):
            h.stream = -1
    finally:
        h.close()
        s1.close()
        s2.close()


@pytest.mark.gpu
def test_get_handle_is_per_thread(gpu_device: int) -> None:
    from cuda.core import Device

    mine = get_handle(gpu_device)
    assert get_handle(gpu_device) is mine
    # No argument means the current device: the same handle as asking for it by ordinal.
    current = int(Device().device_id)
    assert get_handle() is get_handle(current)
    assert get_handle().device_id == current
    theirs: list[Handle] = []
    t = threading.Thread(
        target=lambda: theirs.extend([get_handle(gpu_device), get_handle(gpu_device)])
    )
    t.start()
    t.join()
    assert theirs[0] is theirs[1]
    assert theirs[0] is not mine
    assert theirs[0].ptr != mine.ptr
    assert theirs[0].device_id == mine.device_id == gpu_device


@pytest.mark.gpu
def test_closed_thread_handle_is_replaced(gpu_device: int) -> None:
    h = get_handle(gpu_device)
    h.close()
    fresh = get_handle(gpu_device)
    assert fresh is not h and not fresh.closed


@pytest.mark.gpu
def test_from_handle_wraps_without_owning(gpu_device: int) -> None:
    owner = Handle(gpu_device)
    try:
        view = Handle.from_handle(owner.ptr, gpu_device)
        assert view.ptr == owner.ptr and view.device_id == gpu_device
        view.close()  # must not destroy the C handle
        assert owner.stream == 0  # still valid
    finally:
        owner.close()


def test_use_stream_sets_the_stream_it_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    # use_stream read the stream's handle, then the setter read it again: a __cuda_stream__ that
    # answered another stream the second time had cuDNN run on a stream other than the one
    # returned (on which the legacy operations order their arrays).
    from standins import ShiftingStream, record_set_stream, stand_in_handle

    set_on = record_set_stream(monkeypatch)
    h = stand_in_handle()
    returned = h.use_stream(ShiftingStream())
    assert set_on == [returned] and h.stream_ptr == returned
