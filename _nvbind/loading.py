"""Making a package's :class:`~.ffi.NativeLibrary` from its bindings: the version reader, the
install hint and the constructor's arguments that both libraries derive the same way."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Protocol, TypeVar

from .ffi import FunctionSpec, NativeLibrary

__all__ = ["Bindings", "decode_version", "install_hint", "native_library", "version_reader"]

L = TypeVar("L", bound=NativeLibrary)


class Bindings(Protocol):
    """What a generated ``_bindings`` module offers the loader."""

    HEADER_VERSION: tuple[int, int, int]
    FUNCTIONS: dict[str, FunctionSpec]


def decode_version(value: int) -> tuple[int, int, int]:
    """``major*10000 + minor*100 + patch`` (what ``cudnnGetVersion`` and ``cutensorGetVersion``
    return) as ``(major, minor, patch)``."""
    return value // 10000, value % 10000 // 100, value % 100


def version_reader(
    symbol: str, decode: Callable[[int], tuple[int, int, int]] = decode_version
) -> Callable[[ctypes.CDLL], tuple[int, int, int]]:
    """A reader of the library's version: calls ``size_t symbol(void)`` and decodes its value."""

    def read(cdll: ctypes.CDLL) -> tuple[int, int, int]:
        fn = getattr(cdll, symbol)
        fn.restype, fn.argtypes = ctypes.c_size_t, []
        return decode(int(fn()))

    return read


def install_hint(display_name: str, major: int, note: str = "") -> str:
    """How to install the library from the project's extras (``note`` is appended)."""
    hint = (
        f"Install {display_name} {major} with `pip install 'cudnn-cutensor-ctypes[cu12]'` "
        "(CUDA 12) or `pip install 'cudnn-cutensor-ctypes[cu13]'` (CUDA 13)"
    )
    return f"{hint}; {note}" if note else hint


def native_library(  # noqa: PLR0917 - positional, so that each package's call stays short
    cls: type[L],
    display_name: str,
    prefix: str,
    bindings: Bindings,
    env_var: str,
    hint: str,
    minimum_version: tuple[int, int, int],
    *,
    decode: Callable[[int], tuple[int, int, int]] = decode_version,
    companions: tuple[str, ...] = (),
    dependencies: tuple[tuple[str, bool], ...] = (),
    resident: tuple[str, ...] = (),
    wheel_dirs: tuple[str, ...] = (),
    before_load: Callable[[], None] | None = None,
) -> L:
    """The library ``lib<prefix>.so.<header major>``, found through ``cuda.pathfinder`` under
    ``prefix`` (or the path in ``env_var``), its version read with ``<prefix>GetVersion``."""
    return cls(
        display_name=display_name,
        pathfinder_name=prefix,
        env_var=env_var,
        install_hint=hint,
        expected_major=bindings.HEADER_VERSION[0],
        functions=bindings.FUNCTIONS,
        read_version=version_reader(f"{prefix}GetVersion", decode),
        minimum_version=minimum_version,
        version_symbol=f"{prefix}GetVersion",
        companions=companions,
        dependencies=dependencies,
        resident=resident,
        wheel_dirs=wheel_dirs,
        cudart_version_symbol=f"{prefix}GetCudartVersion",
        before_load=before_load,
        header_version=bindings.HEADER_VERSION,
    )
