"""Declarations shared by the generated ``_bindings`` modules and the lazy library loaders.

The generated modules describe each C function with a :class:`FunctionSpec`; :class:`NativeLibrary`
loads the shared library on first use (never at import), binds prototypes on demand, and refuses a
function whose ``@since`` version is newer than the loaded library, naming the version it needs.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "AttributeSpec",
    "FunctionSpec",
    "LibraryNotFoundError",
    "NativeLibrary",
    "UnsupportedByLibraryError",
    "format_version",
]

_log = logging.getLogger("pycudnn")


class FunctionSpec(NamedTuple):
    """One C function as declared in a header (written by ``scripts/generate_bindings.py``)."""

    name: str
    restype: Any  # a ctypes type, or None for ``void``
    argtypes: tuple[Any, ...]
    argnames: tuple[str, ...]
    since: tuple[int, int, int] | None  # from the ``@since`` doc tag; None when the header has none
    deprecated: bool
    returns_status: bool  # restype is the library's status enum
    header: str  # header file the declaration came from
    # Out-parameters (C writes through them) whose documentation does not allow NULL: the raw layer
    # refuses None there, since some cuDNN functions dereference them without checking.
    nonnull: tuple[str, ...] = ()


class AttributeSpec(NamedTuple):
    """A cuDNN backend attribute as documented in ``cudnn_graph.h``.

    ``attr_type`` is a ``cudnnBackendAttributeType_t`` value or None when the header documents no
    type for it; ``count`` is the documented element count, or None for "n elements"/undocumented.
    """

    name: str
    value: int
    attr_type: int | None
    count: int | None  # type: ignore[assignment]  # shadows tuple.count on purpose
    descriptor_type: int | None  # the backend descriptor type whose docs list this attribute
    access: str  # "required", "optional", "read-only" or "" when the header does not say
    since: tuple[int, int, int] | None
    deprecated: bool


class LibraryNotFoundError(ImportError):
    """The shared library could not be found or loaded; the message names the pip extra to install."""


class UnsupportedByLibraryError(NotImplementedError):
    """A symbol exists in the headers the bindings came from but is newer than the loaded library."""


def format_version(version: tuple[int, ...] | None) -> str:
    return "unknown" if version is None else ".".join(str(v) for v in version)


class NativeLibrary:
    """A lazily loaded shared library and its generated prototypes.

    Loading happens once, under a lock, on the first call that needs it: from the path in the
    environment variable ``env_var`` when set, else through ``cuda.pathfinder``.
    """

    def __init__(
        self,
        *,
        display_name: str,
        pathfinder_name: str,
        env_var: str,
        install_hint: str,
        expected_major: int,
        functions: dict[str, FunctionSpec],
        read_version: Callable[[ctypes.CDLL], tuple[int, int, int]],
    ) -> None:
        self.display_name = display_name
        self._pathfinder_name = pathfinder_name
        self._env_var = env_var
        self._install_hint = install_hint
        self._expected_major = expected_major
        self._specs = functions
        self._read_version = read_version
        self._lock = threading.Lock()
        self._cdll: ctypes.CDLL | None = None
        self._path: str | None = None
        self._version: tuple[int, int, int] | None = None
        self._bound: dict[str, Any] = {}

    # -- loading -----------------------------------------------------------------------------
    @property
    def is_loaded(self) -> bool:
        return self._cdll is not None

    def cdll(self) -> ctypes.CDLL:
        cdll = self._cdll
        if cdll is None:
            cdll = self._load()
        return cdll

    @property
    def path(self) -> str:
        self.cdll()
        assert self._path is not None
        return self._path

    @property
    def version(self) -> tuple[int, int, int]:
        self.cdll()
        assert self._version is not None
        return self._version

    def _locate(self) -> str:
        override = os.environ.get(self._env_var)
        if override:
            if not os.path.isfile(override):
                raise LibraryNotFoundError(
                    f"{self._env_var}={override!r} does not name a file; unset it to search the "
                    f"installed wheels, or {self._install_hint}"
                )
            return os.path.abspath(override)
        try:
            from cuda import pathfinder
        except ImportError as exc:  # pragma: no cover - cuda-pathfinder is a base dependency
            raise LibraryNotFoundError(
                f"cuda-pathfinder is not installed, so {self.display_name} cannot be located; "
                f"{self._install_hint}"
            ) from exc
        try:
            loaded = pathfinder.load_nvidia_dynamic_lib(self._pathfinder_name)
        except Exception as exc:  # DynamicLibNotFoundError and friends
            raise LibraryNotFoundError(
                f"{self.display_name} was not found ({type(exc).__name__}: {exc}). "
                f"{self._install_hint}, or set {self._env_var} to the library's path."
            ) from exc
        _log.debug("%s found via %s at %s", self.display_name, loaded.found_via, loaded.abs_path)
        return str(loaded.abs_path)

    def _load(self) -> ctypes.CDLL:
        with self._lock:
            if self._cdll is not None:
                return self._cdll
            path = self._locate()
            try:
                cdll = ctypes.CDLL(path)
            except OSError as exc:
                raise LibraryNotFoundError(
                    f"{self.display_name} at {path} could not be loaded: {exc}. {self._install_hint}."
                ) from exc
            try:
                version = self._read_version(cdll)
            except AttributeError as exc:  # the version symbol is missing: some other library
                raise LibraryNotFoundError(
                    f"{path} does not look like {self.display_name} ({exc}). {self._install_hint}."
                ) from exc
            if version[0] != self._expected_major:
                raise LibraryNotFoundError(
                    f"{path} is {self.display_name} {format_version(version)}, but these bindings need "
                    f"major version {self._expected_major}. {self._install_hint}."
                )
            self._path, self._version = path, version
            self._cdll = cdll
            return cdll

    # -- functions ---------------------------------------------------------------------------
    def spec(self, name: str) -> FunctionSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise AttributeError(
                f"{self.display_name} declares no function named {name!r}"
            ) from None

    def function(self, name: str) -> Any:
        """The ctypes function ``name`` with its prototype bound (no status checking)."""
        fn = self._bound.get(name)
        if fn is not None:
            return fn
        spec = self.spec(name)
        cdll = self.cdll()
        if spec.since is not None and spec.since > self.version:
            raise UnsupportedByLibraryError(
                f"{name} needs {self.display_name} >= {format_version(spec.since)}; the loaded "
                f"library ({self._path}) is {format_version(self.version)}"
            )
        try:
            fn = getattr(cdll, name)
        except AttributeError:
            raise UnsupportedByLibraryError(
                f"{name} is declared in {spec.header} but not exported by {self._path} "
                f"({self.display_name} {format_version(self.version)})"
            ) from None
        fn.restype = spec.restype
        fn.argtypes = list(spec.argtypes)
        self._bound[name] = fn
        return fn
