"""The version and path functions each package's ``_info`` module offers, made once.

``pycudnn.version()`` and ``pycutensor.version()`` (and ``version_tuple``, ``library_path``,
``header_version``, ``cudart_version``, ``found_via``) differ only in the library they ask and the C
functions they name; :func:`library_info` makes them, with docstrings naming those functions.
Calling them loads the library.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from .ffi import NativeLibrary

__all__ = ["LibraryInfo", "library_check", "library_info", "wheel_of"]

# The wheels that ship each library, for the report of where the loaded one came from.
_WHEELS = {
    "cudnn": ("nvidia-cudnn-cu12", "nvidia-cudnn-cu13"),
    "cutensor": ("cutensor-cu12", "cutensor-cu13"),
}


class LibraryInfo(NamedTuple):
    """The functions of one package's ``_info`` module."""

    version: Callable[[], int]
    version_tuple: Callable[[], tuple[int, int, int]]
    library_path: Callable[[], str]
    header_version: Callable[[], tuple[int, int, int]]
    cudart_version: Callable[[], int]
    found_via: Callable[[], str]


def library_info(lib: NativeLibrary, *, module: str, example: str, loaded_by: str) -> LibraryInfo:
    """The ``_info`` functions of the library ``lib`` loads (``module`` is the ``_info`` module
    they are documented in): its ``header_version`` is the bindings' and its ``env_var`` the
    variable that names its path.

    ``example`` follows "e.g." in ``version``'s docstring; ``loaded_by`` names the packages
    that may have loaded the library before us (``found_via``'s docstring)."""
    name = lib.display_name
    env_var = lib.env_var
    if lib.header_version is None:
        raise ValueError(f"{name}'s loader was made without the bindings' header version")
    header = lib.header_version
    prefix = lib.soname.removeprefix("lib").split(".so")[0]  # cudnn, cutensor: the C names' prefix

    def version() -> int:
        major, minor, patch = lib.version
        return major * 10000 + minor * 100 + patch

    def version_tuple() -> tuple[int, int, int]:
        return lib.version

    def library_path() -> str:
        return lib.path

    def header_version() -> tuple[int, int, int]:
        return header

    def cudart_version() -> int:
        return int(lib.function(f"{prefix}GetCudartVersion")())

    def found_via() -> str:
        lib.cdll()
        return lib.found_via

    docs = {
        version: f"``{prefix}GetVersion()`` of the loaded library, e.g. {example}.",
        version_tuple: f"``(major, minor, patch)`` of the loaded {name} (``{prefix}GetVersion``).",
        library_path: f"Absolute path of the loaded ``{lib.soname}``.",
        header_version: f"The {name} header version the bindings were generated from.",
        cudart_version: (
            f"``{prefix}GetCudartVersion()``: the CUDA runtime {name} was built with, e.g. 12090."
        ),
        found_via: (
            f'How the library was found: ``{env_var}``, "already loaded in this process" (by '
            f'{loaded_by}) or how ``cuda.pathfinder`` found it ("site-packages", ...).'
        ),
    }
    for fn, doc in docs.items():
        _publish(fn, module, doc)
    return LibraryInfo(
        version, version_tuple, library_path, header_version, cudart_version, found_via
    )


def _publish(fn: Callable[..., Any], module: str, doc: str) -> None:
    # Documented (and pickled, and shown by help()) as the package module's own functions.
    fn.__module__ = module
    fn.__qualname__ = fn.__name__
    fn.__doc__ = doc


def library_check(package: str, library: str, *, built: str = "") -> dict[str, Any]:
    """The ``library`` smoke check of ``package`` (``pycudnn``/``pycutensor``, whose ``_info``
    functions are asked; ``library`` is ``cudnn`` or ``cutensor``): version, path, wheel, header
    and CUDA runtime versions. ``built`` is appended to the summary's "built with" part."""
    info = importlib.import_module(f"{package}._info")
    lib = importlib.import_module(f"{package}._lib").LIB
    v = info.version_tuple()
    path = info.library_path()
    wheel = wheel_of(library, path)
    return {
        "summary": f"{lib.display_name} {'.'.join(map(str, v))} at {path} "
        f"(from the wheel {wheel or 'none: not installed by pip'}) "
        f"(bindings from headers {'.'.join(map(str, info.header_version()))}, "
        f"built with CUDA runtime {info.cudart_version()}{built})",
        "version": info.version(),
        "path": path,
        "wheel": wheel,
        "header_version": list(info.header_version()),
        "cudart_version": info.cudart_version(),
    }


def wheel_of(library: str, path: str) -> str | None:
    """``"<wheel> <version>"`` of the installed wheel that holds the file ``path`` (the loaded
    ``library``, ``cudnn`` or ``cutensor``), or None when it came from elsewhere (system, conda).

    The wheel's version can differ from the library's own number: cutensor-cu12 2.8.1 ships a
    library that reports 2.8.0.
    """
    # importlib.metadata costs ~20 ms to import; only this report needs it, not planning
    from importlib import metadata

    try:
        target = Path(path).resolve()
    except OSError:
        return None
    for name in _WHEELS.get(library, ()):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.name == target.name and Path(str(dist.locate_file(f))).resolve() == target:
                return f"{name} {dist.version}"
    return None
