"""Device memory from ``cuda.core``'s stream-ordered pools: allocations and reusable workspaces.

Workspaces are the only memory an execute path may need. :func:`workspace` hands out a buffer that
is kept per (host thread, device, stream) and grows when a larger one is asked for, so executing a
cached plan again allocates nothing. Freed buffers go back to the pool in stream order. It is
refused while the stream is being captured into a CUDA graph (:mod:`_nvbind.capture`).
"""

from __future__ import annotations

import threading
from typing import Any

from . import capture
from .cuda import get_device, require_cuda_core, stream_handle

__all__ = ["allocate", "release_workspaces", "stream_object", "workspace"]


def stream_object(stream: Any, device: Any) -> Any:
    """A ``cuda.core.Stream`` for ``stream`` (None: the device's default stream)."""
    core = require_cuda_core()
    if stream is None:
        return device.default_stream
    if isinstance(stream, core.Stream):
        return stream
    ptr = stream_handle(stream)
    if ptr == 0:
        return device.default_stream
    return core.Stream.from_handle(ptr)


def allocate(nbytes: int, *, device: Any = None, stream: Any = None) -> Any:
    """A ``cuda.core.Buffer`` of ``nbytes`` from the device's stream-ordered pool.

    The buffer's ``handle`` is the device pointer (256-byte aligned); ``close(stream)`` frees it in
    stream order.
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"nbytes must be a non-negative int, got {nbytes!r}")
    dev = get_device(device)
    dev.set_current()
    return dev.allocate(max(nbytes, 1), stream=stream_object(stream, dev))


class _Workspace:
    __slots__ = ("buffer", "ptr", "size")

    def __init__(self) -> None:
        self.buffer: Any = None
        self.ptr = 0
        self.size = 0


_local = threading.local()


def workspace(nbytes: int, *, device: Any = None, stream: Any = None) -> int:
    """A device pointer to at least ``nbytes`` bytes, reused across calls on this thread and stream.

    Returns 0 for ``nbytes == 0``. The memory stays valid until a larger request on the same
    (thread, device, stream) replaces it (the old buffer is freed in that stream's order, so work
    already queued on the stream keeps using it safely) or :func:`release_workspaces` is called.
    :class:`~_nvbind.capture.GraphCaptureError` while ``stream`` is being captured: a graph would
    keep the address after the pool has reused or freed it.
    """
    if nbytes <= 0:
        return 0
    sptr = stream_handle(stream)
    capture.refuse_pooled_workspace(sptr)
    dev = get_device(device)
    key = (int(dev.device_id), sptr)
    table: dict[tuple[int, int], _Workspace] | None = getattr(_local, "table", None)
    if table is None:
        table = _local.table = {}
    ws = table.get(key)
    if ws is None:
        ws = table[key] = _Workspace()
    if ws.size < nbytes:
        s = stream_object(stream, dev)
        if ws.buffer is not None:
            # forgotten before the new allocation, which may fail: a later smaller request must
            # not be handed the freed address
            buffer, ws.buffer, ws.ptr, ws.size = ws.buffer, None, 0, 0
            buffer.close(s)
        dev.set_current()
        ws.buffer = dev.allocate(nbytes, stream=s)
        ws.ptr, ws.size = int(ws.buffer.handle), nbytes
    return ws.ptr


def release_workspaces() -> None:
    """Free this thread's cached workspaces (in stream order)."""
    table: dict[tuple[int, int], _Workspace] = getattr(_local, "table", {})
    for ws in table.values():
        if ws.buffer is not None:
            ws.buffer.close()
    table.clear()
