"""Versions and paths of the loaded cuDNN (these calls load the library)."""

from __future__ import annotations

import ctypes

from . import _bindings
from ._lib import LIB, check

__all__ = [
    "cudart_version",
    "found_via",
    "header_version",
    "library_path",
    "missing_features",
    "supported_range",
    "version",
    "version_tuple",
]


def version() -> int:
    """``cudnnGetVersion()`` of the loaded library, e.g. 92800 for 9.28.0."""
    major, minor, patch = LIB.version
    return major * 10000 + minor * 100 + patch


def version_tuple() -> tuple[int, int, int]:
    """``(major, minor, patch)`` of the loaded cuDNN (``cudnnGetVersion``)."""
    return LIB.version


def library_path() -> str:
    """Absolute path of the loaded ``libcudnn.so.9``."""
    return LIB.path


def header_version() -> tuple[int, int, int]:
    """The cuDNN header version the bindings were generated from."""
    return tuple(_bindings.HEADER_VERSION)  # type: ignore[return-value]


def cudart_version() -> int:
    """``cudnnGetCudartVersion()``: the CUDA runtime cuDNN was built with (static), e.g. 12090."""
    fn = LIB.function("cudnnGetCudartVersion")
    return int(fn())


def max_device_version() -> int:
    """``cudnnGetMaxDeviceVersion()``: newest SM the library supports, as major*100 + minor*10."""
    return int(LIB.function("cudnnGetMaxDeviceVersion")())


def property_version() -> tuple[int, int, int]:
    """``cudnnGetProperty`` for MAJOR_VERSION, MINOR_VERSION and PATCH_LEVEL."""
    fn = LIB.function("cudnnGetProperty")
    out = []
    props = _bindings.libraryPropertyType
    for prop in (props.MAJOR_VERSION, props.MINOR_VERSION, props.PATCH_LEVEL):
        value = ctypes.c_int(0)
        check(fn(int(prop), ctypes.byref(value)), "cudnnGetProperty")
        out.append(value.value)
    return out[0], out[1], out[2]


def found_via() -> str:
    """How the library was found: ``PYCUDNN_LIBRARY``, "already loaded in this process" (by
    PyTorch, cudnn-frontend, ...) or how ``cuda.pathfinder`` found it ("site-packages", ...)."""
    LIB.cdll()
    return LIB.found_via


def supported_range() -> str:
    """The cuDNN versions this project supports (checked at load)."""
    from ._versions import supported_range as _range

    return _range()


def missing_features() -> list[str]:
    """What the loaded cuDNN lacks that the bindings know, each with the version it needs."""
    from ._versions import missing_features as _missing

    return _missing()
