"""Versions and paths of the loaded cuTENSOR (these calls load the library)."""

from __future__ import annotations

from . import _bindings
from ._lib import LIB

__all__ = ["cudart_version", "header_version", "library_path", "version", "version_tuple"]


def version() -> int:
    """``cutensorGetVersion()``, e.g. 20800. (The 2.8.1 wheel reports patch 0.)"""
    major, minor, patch = LIB.version
    return major * 10000 + minor * 100 + patch


def version_tuple() -> tuple[int, int, int]:
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
