"""cuDNN handles: one per host thread per device.

A handle is bound to the device that was current when ``cudnnCreate`` ran and keeps it for life
(cuDNN core concepts). :class:`Handle` makes its device current before creating, remembers it, and
owns the C handle. :func:`get_handle` returns the calling thread's handle for a device, created on
first use, which is how operations pick a handle when none is given.

cuDNN is thread-safe as long as threads do not use one handle at the same time, hence one handle
per thread: share :class:`Handle` objects between threads only with your own locking.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

from _nvbind import context
from _nvbind.cuda import driver_status, get_device, stream_handle
from _nvbind.forksafe import fork_safe_lock
from _nvbind.resource import CResource
from _nvbind.shutdown import InterpreterExitingError, library_call

from ._lib import LIB, check, last_error_string
from .errors import error_from_status

__all__ = ["Handle", "get_handle"]

# cuDNN's documentation asks for one synchronous cudnnCreate before threads create their own.
_first_create = fork_safe_lock(sys.modules[__name__], "_first_create")
_created_once = threading.Event()


# Each C call on a handle is a library call, as the backend's are: a fork waits for it (a thread
# inside cuDNN at the fork would leave its locks taken in the child), and it is refused while the
# interpreter unloads the library.
_CREATE = library_call("cudnnCreate")
_DESTROY = library_call("cudnnDestroy")
_GET_STREAM = library_call("cudnnGetStream")
_SET_STREAM = library_call("cudnnSetStream")


def _create(out: ctypes.c_void_p) -> int:
    return int(_CREATE.run(LIB.function("cudnnCreate"), ctypes.byref(out)))


def _destroy(ptr: int) -> None:
    try:
        _DESTROY.run(LIB.function("cudnnDestroy"), ptr)
    except InterpreterExitingError:  # a daemon thread's handle at exit: the process is ending
        pass


def _get_stream(handle: Handle) -> int:
    out = ctypes.c_void_p()
    check(
        _GET_STREAM.run(LIB.function("cudnnGetStream"), handle, ctypes.byref(out)), "cudnnGetStream"
    )
    return int(out.value or 0)


def _no_device_error(exc: BaseException) -> BaseException:
    """The error for "cuDNN cannot start here": cuDNN's own, with the driver's reason added.

    Without a usable GPU cuda.core fails before cuDNN is reached (CUDA_ERROR_NO_DEVICE); calling
    ``cudnnCreate`` anyway gives the exception users of cuDNN expect (CudnnNotInitializedError,
    status 1001, with cuDNN's explanation) instead of a cuda.core internals error.
    """
    reason = driver_status().reason or f"{type(exc).__name__}: {exc}"
    out = ctypes.c_void_p()
    status = _create(out)
    if status == 0:  # cuDNN found a device after all; do not leak the handle
        _destroy(int(out.value or 0))
        return RuntimeError(f"cannot select a CUDA device for the cuDNN handle: {reason}")
    message = last_error_string()
    detail = (
        f"{message} (no usable CUDA device: {reason})"
        if message
        else f"no usable CUDA device: {reason}"
    )
    return error_from_status(status, "cudnnCreate", detail)


class Handle(CResource):
    """A ``cudnnHandle_t`` bound to one device, optionally with a stream.

    ``device``: None (the current device), an ordinal or a ``cuda.core.Device``.
    ``stream``: a ``cuda.core.Stream``, any object with ``__cuda_stream__``, or a raw handle int.

    Without a usable GPU the constructor raises :class:`~pycudnn.CudnnNotInitializedError` (what
    ``cudnnCreate`` returns there) with cuDNN's message and the driver's reason.
    """

    _kind = "cuDNN handle"
    #: True for a handle wrapped by :meth:`from_handle`: its owner may set another stream on it
    #: at any time, so the stream last set here is never trusted (-1 in ``_stream_ptr``).
    _shared = False

    def __init__(self, device: Any = None, stream: Any = None) -> None:
        try:
            dev = get_device(device)
            dev.set_current()
        except (TypeError, ValueError, ImportError):
            raise
        except Exception as exc:  # CUDA_ERROR_NO_DEVICE, no driver library, ...
            raise _no_device_error(exc) from exc
        out = ctypes.c_void_p()
        if not _created_once.is_set():
            with _first_create:
                check(_create(out), "cudnnCreate")
                _created_once.set()
        else:
            check(_create(out), "cudnnCreate")
        super().__init__(int(out.value or 0), _destroy)
        self.device_id: int = int(dev.device_id)
        self._device = dev
        self._several_devices = driver_status().device_count > 1  # see activate
        self._stream_obj: Any = None
        self._stream_ptr = 0
        if stream is not None:
            self.stream = stream

    @classmethod
    def from_handle(cls, pointer: int, device: Any = None) -> Handle:
        """Wrap a ``cudnnHandle_t`` created elsewhere (not destroyed here), bound to ``device``.

        ``device`` must be the device that was current when that handle was created (None: the
        current device); cuDNN cannot be asked. The address is trusted as in C: one that is not a
        live ``cudnnHandle_t`` is undefined behaviour. ``cudnnSetStream`` applies to the handle for
        every later call, its owner's too, so a call given a stream sets it every time on a
        wrapped handle, and :attr:`stream_ptr` asks cuDNN (``cudnnGetStream``).
        """
        if isinstance(pointer, bool) or not isinstance(pointer, int):
            raise TypeError(
                f"pointer must be an int (a cudnnHandle_t address), not {type(pointer).__name__}"
            )
        if pointer <= 0:
            raise ValueError(f"pointer must be a non-NULL cudnnHandle_t address, got {pointer}")
        dev = get_device(device)
        self = cls.__new__(cls)
        CResource.__init__(self, pointer, None, owned=False)
        self.device_id = int(dev.device_id)
        self._device = dev
        self._several_devices = driver_status().device_count > 1
        self._stream_obj = None
        self._shared = True
        self._stream_ptr = -1  # never the stream asked for: execute paths set theirs each call
        return self

    @property
    def device(self) -> Any:
        """The ``cuda.core.Device`` this handle is bound to."""
        return self._device

    @property
    def stream(self) -> int:
        """The ``cudaStream_t`` set on this handle (``cudnnGetStream``); 0 is the default stream."""
        # Checked here: ctypes would report a closed handle as ctypes.ArgumentError, which is not
        # the ClosedError (a ValueError) that every closed object raises.
        self._check_open()
        return _get_stream(self)

    @stream.setter
    def stream(self, stream: Any) -> None:
        self._check_open()  # ClosedError, not ctypes.ArgumentError (see the getter)
        self._set_stream(stream, stream_handle(stream))

    def _set_stream(self, stream: Any, ptr: int) -> None:
        # ptr is stream's handle, read once by the caller: a __cuda_stream__ asked again may
        # answer another stream than the one the caller orders its arrays on.
        check(_SET_STREAM.run(LIB.function("cudnnSetStream"), self, ptr), "cudnnSetStream")
        self._stream_obj = stream  # keep a stream object alive while it is set
        self._stream_ptr = -1 if self._shared else ptr

    @property
    def stream_ptr(self) -> int:
        """The stream last set through this object, without asking cuDNN (the fast path); for a
        handle wrapped by :meth:`from_handle`, whose owner may have set another since, cuDNN's."""
        self._check_open()
        return _get_stream(self) if self._shared else self._stream_ptr

    def use_stream(self, stream: Any) -> int:
        """Set ``stream`` only when it differs from the last one set here; returns its handle.

        ``cudnnSetStream`` costs a few microseconds even when nothing changes, so execute paths
        call this instead of the property.
        """
        # A closed handle must raise even when the stream is unchanged (no C call would tell).
        self._check_open()
        return self._use_stream(stream, stream_handle(stream))

    def _use_stream(self, stream: Any, ptr: int) -> int:
        """:meth:`use_stream` with ``stream``'s handle ``ptr`` already read (once) by the caller,
        which orders its arrays on it."""
        self._check_open()
        if ptr != self._stream_ptr:
            self._set_stream(stream, ptr)
        return ptr

    def make_current(self) -> None:
        """Make this handle's device the current one (cuDNN assumes it stays current)."""
        self._check_open()
        self._device.set_current()

    def activate(self) -> int | None:
        """Make this handle's device current for one call where another GPU's may be current;
        return the context to give :meth:`restore` after the call, or None (nothing changed).

        cuDNN launches in the thread's current context, whatever device the handle is bound to.
        On a machine with one GPU no other device can be current and nothing is asked of the
        driver; with several, one ``cuCtxGetDevice`` (and a switch where it differs)."""
        if not self._several_devices:
            return None
        self._check_open()
        return context.activate(self._device, self.device_id)

    #: Make a value :meth:`activate` returned current again (None or 0: nothing to restore).
    restore = staticmethod(context.restore)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"0x{self.ptr:x}"
        return f"<pycudnn.Handle {state} device={getattr(self, 'device_id', '?')}>"


_per_thread = threading.local()


def get_handle(device: Any = None) -> Handle:
    """The calling thread's handle for ``device`` (None: the current device), created on first use."""
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        handles: dict[int, Handle] | None = getattr(_per_thread, "handles", None)
        cached = handles.get(device) if handles else None
        if cached is not None and not cached.closed:
            return cached  # the common case, without a cuda.core lookup
    try:
        dev = get_device(device)
    except (TypeError, ValueError, ImportError):
        raise
    except Exception as exc:
        raise _no_device_error(exc) from exc
    handles = getattr(_per_thread, "handles", None)
    if handles is None:
        handles = _per_thread.handles = {}
    handle = handles.get(int(dev.device_id))
    if handle is None or handle.closed:
        handle = handles[int(dev.device_id)] = Handle(dev)
    return handle
