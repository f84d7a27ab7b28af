"""Stream order and memory lifetime on the host side (CPU tier): the pooled workspace after a
failed growth, host copies on a stream other than the allocation's, and a cuDNN handle shared
with code that sets its stream. Devices, streams and cuDNN's stream calls are stood in for; what
the library decides with them is real."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from standins import recording_conv_plan

from _nvbind import host_copy, memory
from pycudnn import DeviceArray, Handle
from pycudnn import handle as handle_module

# -- the per-thread workspace pool ----------------------------------------------------------


class _Buffer:
    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.closed = False

    def close(self, stream: Any = None) -> None:
        self.closed = True


class _Device:
    """Hands out made-up addresses; refuses an allocation while ``full``."""

    device_id = 0

    def __init__(self) -> None:
        self.full = False
        self.buffers: list[_Buffer] = []

    def set_current(self) -> None:
        pass

    def allocate(self, nbytes: int, *, stream: Any) -> _Buffer:
        if self.full:
            raise MemoryError("out of memory")
        buf = _Buffer(0x7E00_0000_0000 + 0x100_0000 * len(self.buffers))
        self.buffers.append(buf)
        return buf


def test_a_failed_growth_never_hands_out_the_freed_workspace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Growing a workspace frees the old buffer first; when the new allocation failed, the pool
    still held the freed buffer's address and size, and the next smaller request got freed memory
    (which the pool may already have given to an array): cuDNN would write over it."""
    dev = _Device()
    monkeypatch.setattr(memory, "_local", threading.local())
    monkeypatch.setattr(memory, "get_device", lambda device: dev)
    monkeypatch.setattr(memory, "stream_object", lambda stream, device: object())
    first = memory.workspace(1024, stream=0x5000)
    dev.full = True
    with pytest.raises(MemoryError):
        memory.workspace(4096, stream=0x5000)
    assert dev.buffers[0].closed  # freed in stream order before the larger one was asked for
    dev.full = False
    again = memory.workspace(512, stream=0x5000)
    live = [b.handle for b in dev.buffers if not b.closed]
    assert again in live, f"0x{again:x} was freed (the first workspace was 0x{first:x})"


# -- host copies on another stream ----------------------------------------------------------


class _AllocationStream:
    """The cuda.core Stream an array was allocated on (read only by the recorder)."""

    handle = 0x5000


class _CopyStream:
    handle = 0x7000

    def sync(self) -> None:
        pass


@pytest.mark.parametrize("direction", ["to_numpy", "copy_from_numpy"])
def test_a_host_copy_on_another_stream_waits_for_the_allocation_stream(
    monkeypatch: pytest.MonkeyPatch, direction: str
) -> None:
    """Every other use of a DeviceArray on a stream other than its allocation stream first makes
    that stream wait for it (the pool may have handed it memory that work queued there still
    uses); ``to_numpy(stream=)`` and ``copy_from_numpy(stream=)`` copied without waiting, so
    the write could land while a kernel on the allocation stream still read the memory's
    previous array."""
    waits: list[int] = []
    copies: list[Any] = []
    monkeypatch.setattr(DeviceArray, "_order_before", lambda self, c: waits.append(c))
    monkeypatch.setattr(host_copy, "_device_or_raise", lambda device, what: _Device())
    monkeypatch.setattr(host_copy, "stream_object", lambda stream, device: _CopyStream())
    monkeypatch.setattr(host_copy, "_copy", lambda dev, s, *, dst, src: copies.append(s))
    backing = np.zeros(16, np.float32)
    a = DeviceArray.__new__(DeviceArray)._init(
        None, backing.ctypes.data, (16,), (1,), np.dtype(np.float32), 0, stream=_AllocationStream()
    )
    if direction == "to_numpy":
        a.to_numpy(stream=0x7000)
    else:
        a.copy_from_numpy(np.ones(16, np.float32), stream=0x7000)
    assert copies and all(isinstance(s, _CopyStream) for s in copies)
    assert waits == [0x7000]


# -- a cuDNN handle wrapped from elsewhere --------------------------------------------------


class _CudnnStreams:
    """cuDNN's stream of each handle: ``cudnnSetStream`` and ``cudnnGetStream`` stood in for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.of: dict[int, int] = {}
        streams = self

        class Set:
            def run(self, function: Any, handle: Any, ptr: int) -> int:
                streams.of[int(handle._as_parameter_.value)] = ptr
                return 0

        class Get:
            def run(self, function: Any, handle: Any, out: Any) -> int:
                out._obj.value = streams.of.get(int(handle._as_parameter_.value), 0) or None
                return 0

        monkeypatch.setattr(handle_module, "_SET_STREAM", Set())
        monkeypatch.setattr(handle_module, "_GET_STREAM", Get())
        monkeypatch.setattr(handle_module, "get_device", lambda device: _Device())


def test_a_wrapped_handle_runs_on_the_stream_asked_for_after_its_owner_set_another(
    monkeypatch: pytest.MonkeyPatch, deviceprops_json: dict[str, Any]
) -> None:
    """``Handle.from_handle`` wraps a handle that other code also uses, and cudnnSetStream
    applies to the handle for every later call, whoever made it. The wrapper remembered the stream
    it had seen last and skipped cudnnSetStream when asked for that one again: after the owner had
    set another stream, execute ran there, on a stream its arrays were not ordered on and whose
    work shares no order with the pooled workspace's."""
    cudnn = _CudnnStreams(monkeypatch)
    plan, arrays, ws, _, _ = recording_conv_plan(deviceprops_json, "wrapped_handle")
    try:
        h = Handle.from_handle(0x1000)
        seen: list[int] = []
        plan._exec = lambda handle, plan_ptr, vpack: seen.append(cudnn.of.get(0x1000, 0)) or 0
        plan.execute(arrays, workspace=ws, stream=0x5000, handle=h)
        cudnn.of[0x1000] = 0x9000  # the owner's own call on its own stream
        assert h.stream_ptr == 0x9000  # the handle's stream, as cuDNN has it
        plan.execute(arrays, workspace=ws, stream=0x5000, handle=h)
        h.use_stream(0x5000)
        assert cudnn.of[0x1000] == 0x5000
        assert seen == [0x5000, 0x5000]
    finally:
        plan.close()
