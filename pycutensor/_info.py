"""Versions and paths of the loaded cuTENSOR (these calls load the library)."""

from __future__ import annotations

from . import _bindings
from ._lib import LIB

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
    """``cutensorGetVersion()``, e.g. 20800. (The 2.8.1 wheel reports patch 0.)"""
    major, minor, patch = LIB.version
    return major * 10000 + minor * 100 + patch


def version_tuple() -> tuple[int, int, int]:
    """``(major, minor, patch)`` of the loaded cuTENSOR (``cutensorGetVersion``)."""
    return LIB.version


def library_path() -> str:
    """Absolute path of the loaded ``libcutensor.so.2``."""
    return LIB.path


def header_version() -> tuple[int, int, int]:
    """The cuTENSOR header version the bindings were generated from."""
    return tuple(_bindings.HEADER_VERSION)  # type: ignore[return-value]


def cudart_version() -> int:
    """``cutensorGetCudartVersion()``: the CUDA runtime cuTENSOR was built with, e.g. 12090."""
    return int(LIB.function("cutensorGetCudartVersion")())


def found_via() -> str:
    """How the library was found: ``PYCUTENSOR_LIBRARY``, "already loaded in this process" (by
    CuPy, ...) or how ``cuda.pathfinder`` found it ("site-packages", ...)."""
    LIB.cdll()
    return LIB.found_via


def supported_range() -> str:
    """The cuTENSOR versions this project supports (checked at load)."""
    from _nvbind.ffi import format_version

    low = format_version(LIB.minimum_version[:2])
    return (
        f">= {low}, < {LIB.minimum_version[0] + 1} "
        f"(bindings from {format_version(_bindings.HEADER_VERSION)} headers)"
    )


def missing_features() -> list[str]:
    """What the loaded cuTENSOR lacks that the bindings know: functions and compute descriptors
    newer than it, each with the version that introduced it."""
    from ._lib import missing_symbols

    return missing_symbols()
