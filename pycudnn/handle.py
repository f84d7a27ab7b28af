"""cuDNN handles: one per host thread per device.

A handle is bound to the device that was current when ``cudnnCreate`` ran and keeps it for life
(cuDNN core concepts). :class:`Handle` makes its device current before creating, remembers it, and
owns the C handle. :func:`get_handle` returns the calling thread's handle for a device, created on
first use, which is how operations pick a handle when none is given.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from ._lib import LIB, check
from ._shared.cuda import get_device, stream_handle
from ._shared.resource import CResource

__all__ = ["Handle", "get_handle"]

# cuDNN's documentation asks for one synchronous cudnnCreate before threads create their own.
_first_create = threading.Lock()
_created_once = False


def _destroy(ptr: int) -> None:
    LIB.function("cudnnDestroy")(ptr)


class Handle(CResource):
    """A ``cudnnHandle_t`` bound to one device, optionally with a stream.

    ``device``: None (the current device), an ordinal or a ``cuda.core.Device``.
    ``stream``: a ``cuda.core.Stream``, any object with ``__cuda_stream__``, or a raw handle int.
    """

    _kind = "cuDNN handle"

    def __init__(self, device: Any = None, stream: Any = None) -> None:
        global _created_once  # noqa: PLW0603 - one process-wide flag, guarded by the lock
        dev = get_device(device)
        dev.set_current()
        out = ctypes.c_void_p()
        create = LIB.function("cudnnCreate")
        if not _created_once:
            with _first_create:
                check(create(ctypes.byref(out)), "cudnnCreate")
                _created_once = True
        else:
            check(create(ctypes.byref(out)), "cudnnCreate")
        super().__init__(int(out.value or 0), _destroy)
        self.device_id: int = int(dev.device_id)
        self._device = dev
        self._stream_obj: Any = None
        self._stream_ptr = 0
        if stream is not None:
            self.stream = stream

    @property
    def device(self) -> Any:
        """The ``cuda.core.Device`` this handle is bound to."""
        return self._device

    @property
    def stream(self) -> int:
        """The ``cudaStream_t`` set on this handle (``cudnnGetStream``); 0 is the default stream."""
        out = ctypes.c_void_p()
        check(LIB.function("cudnnGetStream")(self, ctypes.byref(out)), "cudnnGetStream")
        return int(out.value or 0)

    @stream.setter
    def stream(self, stream: Any) -> None:
        ptr = stream_handle(stream)
        check(LIB.function("cudnnSetStream")(self, ptr), "cudnnSetStream")
        self._stream_obj = stream  # keep a stream object alive while it is set
        self._stream_ptr = ptr

    def use_stream(self, stream: Any) -> int:
        """Set ``stream`` only when it differs from the last one set here; returns its handle.

        ``cudnnSetStream`` costs a few microseconds even when nothing changes, so execute paths
        call this instead of the property.
        """
        ptr = stream_handle(stream)
        if ptr != self._stream_ptr:
            self.stream = stream
        return ptr

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"0x{self.ptr:x}"
        return f"<pycudnn.Handle {state} device={getattr(self, 'device_id', '?')}>"


_per_thread = threading.local()


def get_handle(device: Any = None) -> Handle:
    """The calling thread's handle for ``device`` (None: the current device), created on first use."""
    dev = get_device(device)
    handles: dict[int, Handle] | None = getattr(_per_thread, "handles", None)
    if handles is None:
        handles = _per_thread.handles = {}
    handle = handles.get(int(dev.device_id))
    if handle is None or handle.closed:
        handle = handles[int(dev.device_id)] = Handle(dev)
    return handle
