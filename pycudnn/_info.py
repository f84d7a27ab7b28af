"""Versions and paths of the loaded cuDNN (these calls load the library)."""

from __future__ import annotations

import ctypes

from _nvbind.libinfo import library_info

from . import _bindings
from ._lib import LIB, check
from ._versions import missing_features as _missing
from ._versions import supported_range as _range

# version, version_tuple, library_path, header_version, cudart_version, found_via: made alike for
# both libraries (a private module: the package re-exports what is public).
version, version_tuple, library_path, header_version, cudart_version, found_via = library_info(
    LIB, module=__name__, example="92800 for 9.28.0", loaded_by="PyTorch, cudnn-frontend, ..."
)


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


def supported_range() -> str:
    """The cuDNN versions this project supports (checked at load)."""

    return _range()


def missing_features() -> list[str]:
    """What the loaded cuDNN lacks that the bindings know, each with the version it needs."""

    return _missing()
