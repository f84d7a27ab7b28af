"""Devices, streams and the CUDA driver, normalised once for both packages.

The probe functions talk to ``libcuda.so.1`` directly through ctypes so that ``info`` and ``smoke``
work (and say why) even where cuda-bindings is missing or the machine has no GPU; they never create a
context. Memory and streams themselves come from ``cuda.core``, imported lazily.
"""

from __future__ import annotations

import ctypes
import functools
import numbers
import operator
import os
import sys
from dataclasses import dataclass
from typing import Any

from .forksafe import fork_safe_lock
from .shutdown import library_call

__all__ = [
    "DriverStatus",
    "current_device_id",
    "device_id_of",
    "driver_library_found",
    "driver_status",
    "get_device",
    "gpu_available",
    "libcuda",
    "require_cuda_core",
    "stream_handle",
]

_CUDA_SUCCESS = 0
_CUDA_ERROR_NO_DEVICE = 100


@dataclass(frozen=True)
class DriverStatus:
    """What the CUDA driver library says about this machine."""

    library_found: bool
    driver_version: int | None  # e.g. 12090 for CUDA 12.9
    init_status: int | None  # cuInit's CUresult; 0 when a GPU is usable
    device_count: int
    devices: tuple[dict[str, Any], ...]
    reason: str  # empty when at least one device is usable

    @property
    def usable(self) -> bool:
        return self.device_count > 0

    @property
    def driver_version_text(self) -> str:
        v = self.driver_version
        return "unknown" if v is None else f"{v // 1000}.{v % 1000 // 10}"


# Serialises the probes. Not held across fork(): the probe is a library call, which a fork waits
# for with new ones held back (shutdown.library_call); renewed in the child like every lock here.
_driver_lock = fork_safe_lock(sys.modules[__name__], "_driver_lock")


# The probe's answer, made once per process: cuInit's answer does not change in a process (a
# failure is sticky, and devices do not come and go), and each probe called into the driver. One
# attribute, read once by each reader, so that a reader never sees it between two states.
class _Kept:
    answer: DriverStatus | None = None


_probing = library_call("the CUDA driver probe (cuInit)")


@functools.lru_cache(maxsize=1)
def libcuda() -> ctypes.CDLL | None:
    """``libcuda.so.1`` through ctypes (loaded once), or None where the driver library is missing."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def driver_status(*, refresh: bool = False) -> DriverStatus:
    """What the driver says: its version, ``cuInit``, and the devices (name, compute capability).

    Probed once per process and remembered: ``cuInit``'s answer cannot change within a process (a
    failed ``cuInit`` fails again, 14-60 ms each time without a GPU, and leaks in libcuda), so
    planning asks on every build without paying for it; ``refresh=True`` probes again on demand.
    In a child made by ``os.fork()`` after the parent initialised CUDA the answer is "not usable",
    with the reason: CUDA does not survive a fork."""
    answer = _Kept.answer
    if answer is not None and not refresh:
        return answer
    # The call outside the lock: a thread waiting for the lock is then inside a call, which a
    # fork waits for, never one held back by a fork while holding the lock.
    with _probing, _driver_lock:
        answer = _Kept.answer
        if answer is None or refresh:
            answer = _Kept.answer = _probe()
        return answer


def driver_library_found() -> bool:
    """Whether ``libcuda.so.1`` loads, without ``cuInit``: planning for device properties needs
    the driver library, not a GPU, and a failing ``cuInit`` costs 14-60 ms."""
    return libcuda() is not None


def _probe() -> DriverStatus:
    """``cuDriverGetVersion``, ``cuInit`` and each device's name, capability and memory (called
    with ``_driver_lock`` held); see driver_status."""
    lib = libcuda()
    if lib is None:
        return DriverStatus(
            False, None, None, 0, (), "the CUDA driver library libcuda.so.1 is not installed"
        )
    version = ctypes.c_int(0)
    drv = int(version.value) if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 else None
    status = int(lib.cuInit(0))
    if status != _CUDA_SUCCESS:
        reason = (
            "no CUDA-capable device is detected (cuInit returned CUDA_ERROR_NO_DEVICE)"
            if status == _CUDA_ERROR_NO_DEVICE
            else f"cuInit failed with CUresult {status}"
        )
        return DriverStatus(True, drv, status, 0, (), reason)
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return DriverStatus(True, drv, status, 0, (), "the driver reports no devices")
    devices = []
    for ordinal in range(count.value):
        dev = ctypes.c_int(0)
        lib.cuDeviceGet(ctypes.byref(dev), ordinal)
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(name, 256, dev)
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76 (cuda.h)
        lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
        lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
        sms = ctypes.c_int(0)  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
        lib.cuDeviceGetAttribute(ctypes.byref(sms), 16, dev)
        mem = ctypes.c_size_t(0)
        lib.cuDeviceTotalMem_v2(ctypes.byref(mem), dev)
        devices.append(
            {
                "ordinal": ordinal,
                "name": name.value.decode(errors="replace"),
                "compute_capability": (major.value, minor.value),
                "multiprocessor_count": sms.value,
                "total_memory": int(mem.value),
            }
        )
    return DriverStatus(True, drv, status, len(devices), tuple(devices), "")


def _forked_child() -> None:
    parent = _Kept.answer
    if parent is not None and parent.usable:
        _Kept.answer = DriverStatus(
            True,
            parent.driver_version,
            parent.init_status,
            0,
            (),
            "this process was made by os.fork() after its parent initialised CUDA, which a forked "
            "child cannot use (start workers with multiprocessing's 'spawn' or 'forkserver' method)",
        )


# No thread is inside the probe at a fork (cuInit holds the driver's own locks, which the child
# would find held forever): the fork waits for the probe as for every library call.
os.register_at_fork(after_in_child=_forked_child)


def gpu_available() -> tuple[bool, str]:
    """``(True, "")`` when a CUDA device is usable, else ``(False, reason)``."""
    st = driver_status()
    return st.usable, st.reason


def require_cuda_core() -> Any:
    """Import ``cuda.core`` or raise an ImportError that says how to get it."""
    try:
        import cuda.core as core
    except Exception as exc:
        raise ImportError(
            "cuda.core is needed for device memory and streams: install the cu12 or cu13 extra "
            f"(`pip install 'cudnn-cutensor-ctypes[cu12]'`); import failed with: {exc}"
        ) from exc
    return core


def get_device(device: Any = None) -> Any:
    """A ``cuda.core.Device`` for ``None`` (the current device), an ordinal, or a Device."""
    core = require_cuda_core()
    if device is None:
        return core.Device()
    if isinstance(device, core.Device):
        return device
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(
            f"device must be None, an int ordinal or a cuda.core.Device, not {device!r}"
        )
    if device < 0:
        raise ValueError(f"device must be a non-negative ordinal, got {device}")
    return core.Device(device)


def current_device_id() -> int:
    return int(get_device(None).device_id)


def device_id_of(device: Any = None) -> int:
    """The ordinal of ``device`` (None means the current device)."""
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    return int(get_device(device).device_id)


_STREAM_PROTOCOL_VERSION = 0  # the __cuda_stream__ protocol's only version (cuda.core)


def _is_bool(value: Any) -> bool:
    # A NumPy bool exists only once NumPy is imported: ask it then, without importing NumPy here
    # (the command lines import this module before they can say that NumPy is missing).
    np = sys.modules.get("numpy")
    return isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))


def _is_int(value: Any) -> bool:
    # bool is an int to Python, not a handle; NumPy integers are numbers.Integral.
    return isinstance(value, numbers.Integral) and not _is_bool(value)


def _int_value(value: Any) -> int:
    # The value that is checked is the one returned: operator.index reads an int subclass's value
    # itself, where int() would ask its __int__, which may say anything (-1 passed the range check).
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"stream: {type(value).__name__} is an Integral with no integer value"
        ) from None


def stream_handle(stream: Any) -> int:
    """The ``cudaStream_t`` address of ``stream``.

    Accepts ``None`` (0, the legacy default stream), a raw handle int from 0 to 2**64 - 1, any
    object with a ``__cuda_stream__()`` method returning ``(0, handle)`` (cuda.core, CuPy, numba,
    RMM, cuda.bindings: version 0 is the protocol's only one, and a handle is an int), and PyTorch
    streams (an int ``.cuda_stream``). Anything else is a TypeError (wrong types: a float, bool,
    str or bytes handle is refused, not truncated or parsed) or a ValueError (a version or handle
    out of range), naming the rule.
    """
    if stream is None:
        return 0
    if _is_bool(stream):
        raise TypeError("stream must be a stream object or a handle int, not a bool")
    if _is_int(stream):
        value = _int_value(stream)
        # Beyond 64 bits ctypes would mask the value silently (2**64 becomes the default stream).
        if not 0 <= value < 2**64:
            raise ValueError(f"stream handle must be an address from 0 to 2**64 - 1, got {value}")
        return value
    kind = type(stream).__name__
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        if not callable(proto):
            raise TypeError(f"stream: {kind}.__cuda_stream__ must be a method, got {proto!r}")
        try:
            value = proto()
        except Exception as exc:  # the object's own failure, named as the stream argument's
            raise ValueError(
                f"stream: {kind}.__cuda_stream__() failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not (isinstance(value, tuple) and len(value) == 2 and all(map(_is_int, value))):
            raise TypeError(
                f"stream: {kind}.__cuda_stream__() must return (version, handle) ints, "
                f"got {value!r}"
            )
        if _int_value(value[0]) != _STREAM_PROTOCOL_VERSION:
            raise ValueError(
                f"stream: {kind}.__cuda_stream__() speaks protocol version {value[0]}; this "
                f"library knows version {_STREAM_PROTOCOL_VERSION}"
            )
        return stream_handle(value[1])  # the range check of a plain int
    torch_handle = getattr(stream, "cuda_stream", None)
    if _is_int(torch_handle):
        return stream_handle(torch_handle)
    if torch_handle is not None:
        raise TypeError(f"stream: {kind}.cuda_stream must be a handle int, got {torch_handle!r}")
    raise TypeError(
        f"stream must be None, a handle int or an object with __cuda_stream__, "
        f"not {type(stream).__name__}"
    )
