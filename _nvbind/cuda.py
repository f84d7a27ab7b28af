"""Devices, streams and the CUDA driver, normalised once for both packages.

The probe functions talk to ``libcuda.so.1`` directly through ctypes so that ``info`` and ``smoke``
work (and say why) even where cuda-bindings is missing or the machine has no GPU; they never create a
context. Memory and streams themselves come from ``cuda.core``, imported lazily.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DriverStatus",
    "current_device_id",
    "device_id_of",
    "driver_status",
    "get_device",
    "gpu_available",
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


_driver_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _libcuda() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def driver_status() -> DriverStatus:
    """Probe the driver: its version, ``cuInit``, and the devices (name, compute capability)."""
    with _driver_lock:
        lib = _libcuda()
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
            mem = ctypes.c_size_t(0)
            lib.cuDeviceTotalMem_v2(ctypes.byref(mem), dev)
            devices.append(
                {
                    "ordinal": ordinal,
                    "name": name.value.decode(errors="replace"),
                    "compute_capability": (major.value, minor.value),
                    "total_memory": int(mem.value),
                }
            )
        return DriverStatus(True, drv, status, len(devices), tuple(devices), "")


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


def stream_handle(stream: Any) -> int:
    """The ``cudaStream_t`` address of ``stream``.

    Accepts ``None`` (0, the legacy default stream), a raw handle int, any object with
    ``__cuda_stream__`` (cuda.core, CuPy, numba, RMM, cuda.bindings), and PyTorch streams
    (``.cuda_stream``).
    """
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TypeError("stream must be a stream object or a handle int, not a bool")
    if isinstance(stream, int):
        # Beyond 64 bits ctypes would mask the value silently (2**64 becomes the default stream).
        if not 0 <= stream < 2**64:
            raise ValueError(f"stream handle must be an address from 0 to 2**64 - 1, got {stream}")
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        try:
            _version, handle = value
            handle = int(handle)
        except (TypeError, ValueError):
            raise TypeError(
                f"{type(stream).__name__}.__cuda_stream__() must return (version, handle), "
                f"got {value!r}"
            ) from None
        return stream_handle(handle)  # the range check of a plain int
    torch_handle = getattr(stream, "cuda_stream", None)
    if isinstance(torch_handle, int) and not isinstance(torch_handle, bool):
        return stream_handle(torch_handle)
    raise TypeError(
        f"stream must be None, a handle int or an object with __cuda_stream__, "
        f"not {type(stream).__name__}"
    )
