"""Array producers that break the DLPack and CUDA-array-interface contracts the way a buggy or
hostile library could, for the reliability tests of the array surface and their child processes.

:class:`DamagedDLPack` exports a valid host tensor through this library's own exporter, then damages
one field of the capsule's ``DLTensor`` (or of the managed struct) before handing it over.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from _nvbind import dlpack as dl

_GET_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)

#: damage -> a word the refusal must contain (the rule it breaks)
DLPACK_DAMAGES = {
    "null shape": "no shape array",
    "null data": "NULL data pointer",
    "negative ndim": "claims -1 dims",
    "absurd ndim": "claims 100000 dims",
    "version 2": "DLPack 2.",
    "version 99": "DLPack 99.",
    "version 0": "DLPack 0.",
    "device mismatch": "__dlpack_device__() said",
    "stride wraps": "64-bit address space",
    "offset wraps": "not a 64-bit address",
    "lanes": "lanes=4",
}


class DamagedDLPack:
    """A DLPack producer of a 2x3 float32 host tensor whose capsule carries ``damage``."""

    def __init__(self, damage: str, *, device: tuple[int, int] = (1, 0)) -> None:
        self.a = np.arange(6, dtype=np.float32).reshape(2, 3)
        self.damage = damage
        self.device = device

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, **_: Any) -> Any:
        a = self.a
        capsule = dl.export_dlpack(
            a.ctypes.data, a.shape, (3, 1), a.dtype, self.device, owner=a, versioned=True
        )
        managed = dl._DLManagedTensorVersioned.from_address(
            _GET_POINTER(capsule, b"dltensor_versioned")
        )
        t = managed.dl_tensor
        damage = self.damage
        if damage == "null shape":
            t.shape = None
        elif damage == "null data":
            t.data = None
        elif damage == "negative ndim":
            t.ndim = -1
        elif damage == "absurd ndim":
            t.ndim = 100000
        elif damage.startswith("version "):
            managed.version.major = int(damage.split()[1])
        elif damage == "device mismatch":
            t.device.device_type = 2  # CUDA, for host memory
        elif damage == "stride wraps":  # 7 * 2**62 bytes past the start: beyond 2**64
            t.shape[0] = 8
            t.strides[0] = 2**60
        elif damage == "offset wraps":
            t.byte_offset = 2**64 - 8
        elif damage == "lanes":
            t.dtype.lanes = 4
        else:
            raise AssertionError(f"unknown damage {damage!r}")
        return capsule


class CudaInterface:
    """An object whose ``__cuda_array_interface__`` is exactly ``iface`` (anything at all)."""

    def __init__(self, iface: Any) -> None:
        self.iface = iface

    @property
    def __cuda_array_interface__(self) -> Any:
        if isinstance(self.iface, BaseException):
            raise self.iface
        return self.iface


def good_interface(**changes: Any) -> dict[str, Any]:
    """A well-formed CUDA array interface of a 4x4 float32 array, with ``changes`` applied."""
    iface: dict[str, Any] = {
        "shape": (4, 4),
        "typestr": "<f4",
        "data": (0x7F0000000000, False),
        "version": 3,
        "strides": None,
        "stream": None,
    }
    iface.update(changes)
    return iface
