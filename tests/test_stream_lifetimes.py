"""Stream order and memory lifetime on the host side (CPU tier): the pooled workspace after a
failed growth, host copies on a stream other than the allocation's, and a cuDNN handle shared
with code that sets its stream. Devices, streams and cuDNN's stream calls are stood in for; what
the library decides with them is real."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from _nvbind import memory

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
