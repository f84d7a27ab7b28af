"""Versions and paths of the loaded cuTENSOR (these calls load the library)."""

from __future__ import annotations

from _nvbind.ffi import format_version
from _nvbind.libinfo import library_info

from . import _bindings
from ._lib import LIB

# version, version_tuple, library_path, header_version, cudart_version, found_via: made alike for
# both libraries (a private module: the package re-exports what is public).
version, version_tuple, library_path, header_version, cudart_version, found_via = library_info(
    LIB, module=__name__, example="20800 (the 2.8.1 wheel reports patch 0)", loaded_by="CuPy, ..."
)


def supported_range() -> str:
    """The cuTENSOR versions this project supports (checked at load)."""

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
