"""cuTENSOR handles: one per device (per host thread by default, or shared), with the plan cache.

A handle (``cutensorCreate``) belongs to the device that was current when it was created; cuTENSOR
plans are created for, and must execute on, that device ("executing with another active device
returns ``CUTENSOR_STATUS_ARCH_MISMATCH``"). :class:`Handle` makes its device current before
creating the C handle and, around every plan creation and execute, makes it current again when
another device is active (restoring the caller's context afterwards). :func:`get_handle` returns the
calling thread's handle for a device, created on first use: creating one costs milliseconds, so
operations share it.

Every handle owns cuTENSOR's **plan cache** (an LRU of plans, 64 entries by default): the methods
below resize it and write it to or read it from a file, and write or read the library-wide cache of
just-in-time compiled kernels.

cuTENSOR reads these environment variables **when a handle is created** (changing them later affects
only handles created later):

``CUTENSOR_DISABLE_PLAN_CACHE=1``
    no plan cache (and so no incremental autotuning, and nothing to write to a cache file).
``NVIDIA_TF32_OVERRIDE=0``
    never use TF32 tensor cores for FP32 work, whatever the compute descriptor says (a debugging
    switch shared by NVIDIA's libraries).
``CUTENSOR_LOG_LEVEL`` / ``CUTENSOR_LOG_MASK`` / ``CUTENSOR_LOG_FILE``
    cuTENSOR's own logging (level 0 off ... 5 API trace; mask bits 1 errors, 2 trace, 4 hints,
    8 heuristics, 16 API; a file name may contain ``%i`` for the process id). When any of them is
    set, :mod:`pycutensor.log` leaves cuTENSOR's output where they send it.
``CUTENSOR_NVTX_LEVEL=1``
    NVTX ranges around selected API calls, for Nsight Systems.

Besides cuTENSOR's cache, a handle keeps a small Python-side LRU of ready-to-run operations (the
plans behind :func:`pycutensor.einsum` and the functions of :mod:`pycutensor.operations`), so that
repeating a call costs only its execute.

**Threads.** cuTENSOR's plan cache "is implemented in a thread-safe manner and shared among all
threads that use the same cutensorHandle_t" (user guide). :func:`get_handle` gives each thread its
own handle, and so its own plan cache; to share one cache (and one plan-cache file written by
:meth:`Handle.write_plan_cache`) between threads, create one :class:`Handle` and pass it as
``handle=`` to :func:`pycutensor.einsum` and the functions of :mod:`pycutensor.operations`. The
Python-side operation cache is guarded by a lock, plan-cache resizing and reading are serialised
(``cutensorHandleResizePlanCache`` is not thread-safe), and a plan's execute holds the plan's own
lock while it fills the host buffer its scalars are read from. Closing a handle while another
thread uses it is not supported.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from _nvbind import files
from _nvbind.context import activate, current_context, driver, restore
from _nvbind.cuda import driver_status, get_device
from _nvbind.forksafe import fork_safe_lock
from _nvbind.resource import CResource

from . import _plan_cache_file
from ._lib import LIB, check, clear_last_error, take_last_error
from .errors import error_from_status

__all__ = [
    "DEFAULT_PLAN_CACHE_SIZE",
    "DISABLE_PLAN_CACHE_VARIABLE",
    "Handle",
    "OperationCache",
    "get_handle",
    "handle_for",
    "plan_cache_unavailable",
    "write_atomically",
]

#: cuTENSOR's default plan-cache capacity (``cutensorCreate`` documentation).
DEFAULT_PLAN_CACHE_SIZE = 64
#: The variable that, set to 1 when a handle is created, leaves it without a plan cache.
DISABLE_PLAN_CACHE_VARIABLE = "CUTENSOR_DISABLE_PLAN_CACHE"


def plan_cache_unavailable(disable_variable: str | None, capacity: int) -> str | None:
    """Why a handle has no usable plan cache, or None when it has one.

    ``disable_variable``: ``CUTENSOR_DISABLE_PLAN_CACHE`` as it was when the handle was created
    (cuTENSOR reads it only then; the user guide documents the value 1, so only 1 counts here);
    ``capacity``: the plan cache's capacity (:meth:`Handle.resize_plan_cache`; 0 keeps no plan).
    Incremental autotuning needs the cache: cuTENSOR keeps the candidates' timings and the
    winning kernel there.
    """
    if disable_variable is not None and disable_variable.strip() == "1":
        return (
            f"{DISABLE_PLAN_CACHE_VARIABLE}=1 was set when the handle was created, so cuTENSOR "
            "gave it no plan cache (unset it before the handle is created)"
        )
    if capacity == 0:
        return "the handle's plan cache was resized to 0 entries (resize_plan_cache)"
    return None


_UINT32_MAX = 2**32 - 1


def _destroy(owned: list[tuple[Callable[[int], Any], int]], ptr: int) -> None:
    # The C objects the handle owns (its default plan preference) go first, newest first, so that
    # nothing the handle made outlives it; then cutensorDestroy.
    while owned:
        destroy, child = owned.pop()
        destroy(child)
    LIB.function("cutensorDestroy")(ptr)


def synchronize_stream(stream_ptr: int) -> None:
    """``cuStreamSynchronize`` (0 is the legacy default stream)."""
    (status,) = driver().cuStreamSynchronize(stream_ptr or 0)
    if status != 0:
        raise RuntimeError(f"cuStreamSynchronize failed with CUresult {int(status)} ({status!r})")


def _no_device_error(exc: BaseException) -> BaseException:
    """The error for "cuTENSOR cannot start here": cuTENSOR's own, with the driver's reason.

    Without a usable GPU cuda.core fails before cuTENSOR is reached (CUDA_ERROR_NO_DEVICE);
    calling ``cutensorCreate`` anyway gives the exception cuTENSOR users expect
    (``CUTENSOR_STATUS_CUDA_ERROR`` with the line cuTENSOR logged) rather than cuda.core's.
    """
    reason = driver_status().reason or f"{type(exc).__name__}: {exc}"
    out = ctypes.c_void_p()
    clear_last_error()
    status = int(LIB.function("cutensorCreate")(ctypes.byref(out)))
    if status == 0:  # cuTENSOR found a device after all; do not leak the handle
        _destroy([], int(out.value or 0))
        return RuntimeError(f"cannot select a CUDA device for the cuTENSOR handle: {reason}")
    message = take_last_error()
    detail = f"{message} (no usable CUDA device: {reason})" if message else reason
    return error_from_status(status, "cutensorCreate", detail)


def _device(device: Any) -> Any:
    try:
        return get_device(device)
    except (TypeError, ValueError, ImportError):
        raise
    except Exception as exc:  # CUDA_ERROR_NO_DEVICE, no driver library, ...
        raise _no_device_error(exc) from exc


class OperationCache:
    """The Python-side LRU of ready operations a :class:`Handle` keeps, safe to use from several
    threads.

    One lock (created with the cache, never per call) guards the changes that read and then write
    (adding, trimming, clearing); a lookup takes no lock (see :meth:`get`). Evicted entries are dropped, not closed: another
    thread may be executing the plan it just looked up, so its C objects are destroyed by their
    finalizers once the last reference goes (immediately in CPython when no thread holds one).
    """

    __slots__ = ("__weakref__", "_capacity", "_entries", "_lock")

    def __init__(self, capacity: int = 128) -> None:
        self._entries: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        self._lock = fork_safe_lock(self, "_lock")
        self._capacity = 1
        self.capacity = capacity

    @property
    def capacity(self) -> int:
        """The number of entries kept; the least recently used beyond it are dropped."""
        return self._capacity

    @capacity.setter
    def capacity(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"max_cached_operations must be an int, not {type(value).__name__}")
        if value < 1:
            raise ValueError(f"max_cached_operations must be at least 1, got {value}")
        with self._lock:
            self._capacity = value
            self._trim()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Any) -> Any:
        """The entry for ``key`` (now the most recently used), or None. An unhashable key raises
        ``TypeError``, as a dictionary lookup does."""
        # Without the lock: this is every cached call's lookup (0.18 us here against 0.5 with it).
        # Each of the two dictionary calls is atomic; between them another thread may evict the
        # entry, which leaves it usable by this caller (evicted entries are not closed).
        entry = self._entries.get(key)
        if entry is not None:
            try:
                self._entries.move_to_end(key)
            except KeyError:
                pass
        return entry

    def add(self, key: Any, entry: Any) -> Any:
        """Store ``entry`` under ``key`` unless another thread stored one first; return the stored
        entry (so that all threads use one, and one incremental-tuning state per problem)."""
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None:
                self._entries.move_to_end(key)
                return existing
            self._entries[key] = entry
            self._trim()
            return entry

    def clear(self) -> list[Any]:
        """Empty the cache; returns the entries it held (the caller closes them)."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        return entries

    def _trim(self) -> None:
        # Called with the lock held. Dropped entries are not closed (see the class docstring).
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


class Handle(CResource):
    """A ``cutensorHandle_t`` bound to one device (``cutensorCreate`` / ``cutensorDestroy``).

    ``device``: None (the current device), an ordinal or a ``cuda.core.Device``. The device is
    made current before ``cutensorCreate`` runs, since the handle binds to the current device.
    Without a usable GPU this raises :class:`~pycutensor.CutensorError` with status
    ``CUTENSOR_STATUS_CUDA_ERROR`` (what ``cutensorCreate`` returns there), cuTENSOR's message
    and the driver's reason.
    """

    _kind = "cuTENSOR handle"

    def __init__(self, device: Any = None) -> None:
        dev = _device(device)
        previous = current_context()
        dev.set_current()  # cutensorCreate binds the handle to the current device
        out = ctypes.c_void_p()
        # cuTENSOR reads the variable during cutensorCreate: what it was then decides for good
        # whether this handle has a plan cache (see plan_cache_unavailable).
        disable_cache = os.environ.get(DISABLE_PLAN_CACHE_VARIABLE)
        try:
            clear_last_error()
            status = LIB.function("cutensorCreate")(ctypes.byref(out))
        finally:
            self.restore(previous)  # leave the caller's current device as it was
        check(status, "cutensorCreate")
        # C objects made for this handle and destroyed with it, before it (see _adopt); the
        # finalizer holds this list, never the handle itself.
        self._owned: list[tuple[Callable[[int], Any], int]] = []
        super().__init__(int(out.value or 0), functools.partial(_destroy, self._owned))
        self.device_id: int = int(dev.device_id)
        self._device = dev
        self._lock = fork_safe_lock(
            self, "_lock"
        )  # cutensorHandleResizePlanCache is not thread-safe
        self._plan_cache_size = DEFAULT_PLAN_CACHE_SIZE
        self._disable_plan_cache: str | None = disable_cache
        self._operations = OperationCache(128)
        self._compute_capability: tuple[int, int] | None = None
        #: The plan preference with cuTENSOR's defaults that plans made without one use: created
        #: on first use by :func:`pycutensor.preference.default_preference`, owned by the handle.
        self._default_preference: CResource | None = None

    @property
    def device(self) -> Any:
        """The ``cuda.core.Device`` this handle is bound to."""
        return self._device

    @property
    def compute_capability(self) -> tuple[int, int]:
        """``(major, minor)`` of the handle's device."""
        cc = self._compute_capability
        if cc is None:
            c = self._device.compute_capability
            cc = self._compute_capability = (int(c[0]), int(c[1]))
        return cc

    # -- device activation (used around plan creation and executes) ----------------------------
    def activate(self) -> int | None:
        """Make the handle's device current if it is not; return the context to restore, or None.

        Pass the returned value to :meth:`restore` once the cuTENSOR call returned.
        """
        return activate(self._device, self.device_id)

    #: Make a value :meth:`activate` returned current again (None or 0: nothing to restore).
    restore = staticmethod(restore)

    def _adopt(self, destroy: Callable[[int], Any], ptr: int) -> None:
        """Own the C object ``ptr``: ``destroy(ptr)`` runs when the handle is closed or collected,
        before ``cutensorDestroy``. Its Python wrapper must not destroy it too (``owned=False``)."""
        self._check_open()
        self._owned.append((destroy, int(ptr)))

    # -- cuTENSOR's plan cache ----------------------------------------------------------------
    @property
    def plan_cache_size(self) -> int:
        """The capacity last given to :meth:`resize_plan_cache` (64, cuTENSOR's default, before)."""
        return self._plan_cache_size

    @property
    def plan_cache_unavailable(self) -> str | None:
        """Why this handle has no usable plan cache (so no incremental autotuning), or None when
        it has one: see :func:`plan_cache_unavailable`."""
        return plan_cache_unavailable(self._disable_plan_cache, self._plan_cache_size)

    def resize_plan_cache(self, entries: int) -> None:
        """Set the plan cache's capacity (``cutensorHandleResizePlanCache``).

        Resizing empties the cache. Not thread-safe in cuTENSOR, so it is serialised here.
        """
        if isinstance(entries, bool) or not isinstance(entries, int):
            raise TypeError(f"entries must be an int, not {type(entries).__name__}")
        if not 0 <= entries <= _UINT32_MAX:
            raise ValueError(
                f"entries must be between 0 and {_UINT32_MAX} (a uint32_t), got {entries}"
            )
        self._check_open()
        with self._lock:
            clear_last_error()
            check(
                LIB.function("cutensorHandleResizePlanCache")(self, entries),
                "cutensorHandleResizePlanCache",
            )
            self._plan_cache_size = entries

    def write_plan_cache(self, path: str | os.PathLike[str]) -> None:
        """Write the plan cache to ``path``, overwriting it (``cutensorHandleWritePlanCacheToFile``).

        cuTENSOR returns INVALID_VALUE when the handle has no cache
        (``CUTENSOR_DISABLE_PLAN_CACHE=1``) and IO_ERROR when the file cannot be written. cuTENSOR
        writes a temporary file beside ``path`` that replaces it only once complete, so a failed
        or interrupted write leaves an existing file as it was.
        """
        self._write_cache(path, "cutensorHandleWritePlanCacheToFile")

    def _write_cache(self, path: str | os.PathLike[str], function: str) -> None:
        """``function(handle, filename)`` into a temporary file beside ``path`` that replaces it
        once complete (the plan cache and the kernel cache are written alike)."""
        name = _path_bytes(path, "path")
        self._check_open()
        write = LIB.function(function)

        def write_to(temporary: bytes) -> None:
            clear_last_error()
            check(write(self, temporary), function)

        write_atomically(name, write_to)

    def read_plan_cache(self, path: str | os.PathLike[str]) -> int:
        """Fill the plan cache from ``path``; returns the number of entries read.

        ``cutensorHandleReadPlanCacheFromFile`` overwrites the cache. A file written by another
        cuTENSOR or CUDA version, or on another GPU (SM count included), is refused by cuTENSOR
        with INVALID_VALUE. When the file holds more entries than the cache can take, cuTENSOR
        answers INSUFFICIENT_WORKSPACE with the count it needs: the cache is then resized to that
        count (resizing empties it, which is why it happens *before* the successful read) and the
        file is read again. That count is checked first (a file of N bytes holds 1 to N entries);
        when it fails the check, or the second read is refused too (the capacity is then
        restored), the :class:`~pycutensor.CutensorError` names the file, as every refusal does.
        """
        name = _path_bytes(path, "path")
        # Opened (and checked) first: a missing or special file is refused before the handle's
        # state is, as every other argument is.
        with _opened_regular(name, "plan-cache file") as opened:
            self._check_open()
            with self._lock:  # resizing is not thread-safe in cuTENSOR
                return _plan_cache_file.read_plan_cache(self, opened, name)

    def write_kernel_cache(self, path: str | os.PathLike[str]) -> None:
        """Write the library's just-in-time compiled kernels to ``path``
        (``cutensorWriteKernelCacheToFile``; NOT_SUPPORTED where JIT is unavailable), through a
        temporary file beside it as :meth:`write_plan_cache` does."""
        self._write_cache(path, "cutensorWriteKernelCacheToFile")

    def read_kernel_cache(self, path: str | os.PathLike[str]) -> None:
        """Add the kernels stored in ``path`` to the library's JIT kernel cache
        (``cutensorReadKernelCacheFromFile``; the file must come from the same cuTENSOR, CUDA
        version and GPU)."""
        name = _path_bytes(path, "path")
        # Compiled kernels can make a large file; cuTENSOR, not Python, reads it.
        with _opened_regular(name, "kernel-cache file", _MAX_KERNEL_CACHE_BYTES) as name:
            self._check_open()
            clear_last_error()
            check(
                LIB.function("cutensorReadKernelCacheFromFile")(self, name),
                "cutensorReadKernelCacheFromFile",
            )

    # -- the Python-side cache of ready operations -------------------------------------------
    @property
    def max_cached_operations(self) -> int:
        """How many ready operations the Python-side cache keeps (128 by default)."""
        return self._operations.capacity

    @max_cached_operations.setter
    def max_cached_operations(self, value: int) -> None:
        self._operations.capacity = value

    def cached(self, key: Any) -> Any:
        """The cached entry for ``key`` (moved to the most-recently-used end), or None."""
        return self._operations.get(key)

    def cache(self, key: Any, entry: Any) -> Any:
        """Remember ``entry`` under ``key`` and return the entry to use: ``entry``, or the one
        another thread stored under ``key`` first (see :meth:`OperationCache.add`)."""
        return self._operations.add(key, entry)

    def clear_cached_operations(self) -> None:
        """Close every entry of the Python-side operation cache."""
        for old in self._operations.clear():
            close = getattr(old, "close", None)
            if close is not None:
                close()

    def close(self) -> None:
        """Close the cached operations, then destroy the C objects the handle owns (its default plan
        preference, ``cutensorDestroyPlanPreference``) and the handle (``cutensorDestroy``)."""
        if self.closed:
            return
        self.clear_cached_operations()
        pref, self._default_preference = self._default_preference, None
        if pref is not None:
            pref.close()  # the wrapper reads as closed; its C object goes with the handle below
        super().close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"0x{self.ptr:x}"
        return f"<pycutensor.Handle {state} device={getattr(self, 'device_id', '?')}>"


def _path_bytes(path: Any, name: str) -> bytes:
    if isinstance(path, (bytes, str, os.PathLike)):
        raw = os.fsencode(path)
    else:
        raise TypeError(f"{name} must be a str, bytes or os.PathLike, not {type(path).__name__}")
    if not raw:
        raise ValueError(f"{name} must not be empty")
    if b"\0" in raw:
        raise ValueError(f"{name} must not contain a NUL character")
    return raw


#: The largest kernel-cache file handed to cuTENSOR (1 GiB).
_MAX_KERNEL_CACHE_BYTES = 1 << 30


@contextlib.contextmanager
def _opened_regular(
    path: bytes, what: str, max_bytes: int = files.MAX_FILE_BYTES
) -> Iterator[bytes]:
    """Open ``path`` as :func:`_nvbind.files.open_regular` does (a regular file, within
    the size limit; FileNotFoundError when missing) and yield a path cuTENSOR can open that names
    the *opened* file: ``/proc/self/fd/N``. cuTENSOR opens the path itself, and a FIFO there
    blocks it forever; checking the path first and letting cuTENSOR open it again would leave a
    window in which the file can be swapped. Without ``/proc`` the checked path is given."""
    with files.open_regular(path, what=what, max_bytes=max_bytes) as fd:
        proc = b"/proc/self/fd/%d" % fd
        yield proc if os.path.exists(proc) else path


def write_atomically(path: bytes, write: Callable[[bytes], None]) -> None:
    """Have ``write`` create a temporary file in ``path``'s directory, then move it onto ``path``
    (``os.replace``, atomic on POSIX). When ``write`` raises, the temporary file is removed and an
    existing ``path`` is left untouched; readers never see a half-written file.

    The runtime's :func:`_nvbind.files.write_atomically` does the work, with the temporary name
    as bytes (cuTENSOR's writers take a ``const char*``). A FIFO, device or directory at ``path``
    is refused (cuTENSOR's own writer would block on a FIFO); a link there is replaced, as the
    plan-cache files of pycudnn are.
    """
    files.write_atomically(
        path,
        lambda temporary: write(os.fsencode(temporary)),
        what="cache file",
        follow_symlinks=False,
    )


_per_thread = threading.local()


def get_handle(device: Any = None) -> Handle:
    """The calling thread's handle for ``device`` (None: the current device), created on first use.

    An int ordinal is looked up without touching cuda.core, which keeps repeated calls cheap.
    """
    handles: dict[int, Handle] | None = getattr(_per_thread, "handles", None)
    if handles is None:
        handles = _per_thread.handles = {}
    if isinstance(device, int) and not isinstance(device, bool):
        if device < 0:
            raise ValueError(f"device must be a non-negative ordinal, got {device}")
        handle = handles.get(device)
        if handle is not None and not handle.closed:
            return handle
    dev = _device(device)
    ordinal = int(dev.device_id)
    handle = handles.get(ordinal)
    if handle is None or handle.closed:
        handle = handles[ordinal] = Handle(dev)
    return handle


def handle_for(handle: Any, device: int) -> Handle:
    """The handle an operation on arrays of ``device`` runs on: ``handle`` when given (an open
    :class:`Handle` bound to ``device``), else the calling thread's (:func:`get_handle`)."""
    if handle is None:
        return get_handle(device)
    check_handle_argument(handle)
    given: Handle = handle  # check_handle_argument refused anything else
    if given.closed:
        raise ValueError("handle is closed")
    if given.device_id != device:
        raise ValueError(
            f"handle is bound to device {given.device_id}, but the arrays are on device {device}: "
            "cuTENSOR plans are created for, and execute on, their handle's device"
        )
    return given


def check_handle_argument(handle: Any) -> None:
    """Refuse a ``handle=`` argument that is neither None nor a :class:`Handle` (before any array
    is looked at, so that the mistake is named even without a GPU)."""
    if handle is not None and not isinstance(handle, Handle):
        raise TypeError(f"handle must be a pycutensor.Handle or None, not {type(handle).__name__}")
