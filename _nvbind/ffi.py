"""Declarations shared by the generated ``_bindings`` modules and the lazy library loaders.

The generated modules describe each C function with a :class:`FunctionSpec`; :class:`NativeLibrary`
loads the shared library on first use (never at import), binds prototypes on demand, and refuses a
function whose ``@since`` version is newer than the loaded library, naming the version it needs.
"""

from __future__ import annotations

import ctypes
import enum
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from .files import open_regular
from .forksafe import fork_safe_lock
from .search_path import ELF_HEADER, ELF_PHDR, PT_LOAD, reached, sublibraries, wheel_library

__all__ = [
    "AttributeSpec",
    "FunctionSpec",
    "IntEnumBody",
    "LibraryNotFoundError",
    "NativeLibrary",
    "UnsupportedByLibraryError",
    "format_version",
    "int64_arg",
    "int_enum",
    "loaded_copy",
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
    # Parameters of a C enum type, as (parameter, enum typedef): passed as ints, so the raw layer
    # checks the value against the enumerator's ``@since`` version.
    enum_args: tuple[tuple[str, str], ...] = ()


_E = TypeVar("_E")


def _int_enum_by_call(cls: type) -> type[enum.IntEnum]:
    """``cls``'s public class attributes as an ``IntEnum`` of its name, module and docstring,
    made through the functional API (the class statement's metaclass, member by member)."""
    members = [(name, value) for name, value in vars(cls).items() if not name.startswith("_")]
    made = enum.IntEnum(  # type: ignore[misc]  # the functional form with a list of pairs
        cls.__name__, members, module=cls.__module__, qualname=cls.__qualname__
    )
    made.__doc__ = cls.__doc__
    return made


if TYPE_CHECKING:
    #: The base of a generated enum class, which :func:`int_enum` decorates: ``IntEnum`` as type
    #: checkers see it; at run time a plain class body that the decorator makes the IntEnum.
    IntEnumBody = enum.IntEnum

    def int_enum(cls: _E) -> _E:
        """The ``IntEnum`` of a generated class body (see the run-time definition)."""
        return cls

else:
    IntEnumBody = object
    #: The generated modules make about 90 enums (some 1,100 members) at import: the class
    #: statement of an IntEnum builds each member through the enum metaclass, about twice the
    #: time the standard library's own converter of a plain class body takes (cuDNN's 74 on
    #: Python 3.11: 18 against 8 ms). The converter is what the standard library makes its own
    #: IntEnums with (``re.RegexFlag``, ``http.HTTPStatus``) from 3.11 on, and gives the same
    #: enum (members, aliases, names, ``repr``, pickling); where it is missing (3.10) the
    #: functional API does.
    int_enum = getattr(enum, "_simple_enum", None)
    int_enum = _int_enum_by_call if int_enum is None else int_enum(enum.IntEnum)


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


#: The modules this distribution depends on (pyproject.toml's dependencies and extras).
DEPENDENCIES = ("numpy", "ml_dtypes", "cuda")


def not_importable(module: str, exc: BaseException) -> str:
    """Why a dependency cannot be imported, for a message: the usual cause is a Python other than
    the environment's (``python3`` outside the checkout's ``.venv``), not a missing library."""
    return (
        f"{module}, a dependency of this package, cannot be imported by the Python running "
        f"({sys.executable}, Python {sys.version.split()[0]}): {exc}. Run the Python of the "
        "environment the package was installed in (in a checkout: `. scripts/env.sh` first, or "
        "scripts/demo.sh and scripts/test.sh, which do it), or install the package with its "
        'dependencies for this Python: pip install "cudnn-cutensor-ctypes[cu12]" (or [cu13])'
    )


class UnsupportedByLibraryError(NotImplementedError):
    """A symbol or feature exists in the headers the bindings came from but is newer than the
    loaded library. ``symbol`` names it, ``required`` is the version that introduced it (None when
    unknown) and ``loaded`` the version of the library in this process."""

    def __init__(
        self,
        message: str,
        *,
        symbol: str = "",
        required: tuple[int, ...] | None = None,
        loaded: tuple[int, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.symbol = symbol
        self.required = required
        self.loaded = loaded

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unsupported, (str(self), self.symbol, self.required, self.loaded))


def _unsupported(
    message: str, symbol: str, required: tuple[int, ...] | None, loaded: tuple[int, ...] | None
) -> UnsupportedByLibraryError:
    return UnsupportedByLibraryError(message, symbol=symbol, required=required, loaded=loaded)


# Counts of elements, kept: ctypes reads a c_int64 argument when it is passed and nothing here
# changes these, so one object serves every call.
_SMALL_INT64 = tuple(ctypes.c_int64(n) for n in range(17))


def int64_arg(n: int) -> ctypes.c_int64:
    """``n`` as a C ``int64_t`` argument of an :meth:`NativeLibrary.unconverted_function` (an
    element count, say); the small ones shared."""
    return _SMALL_INT64[n] if 0 <= n < 17 else ctypes.c_int64(n)


def format_version(version: tuple[int, ...] | None) -> str:
    return "unknown" if version is None else ".".join(str(v) for v in version)


class _DlInfo(ctypes.Structure):
    _fields_ = (
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    )


def loaded_copy(soname: str, symbol: str) -> str | None:
    """The path of the library with ``soname`` that this process has already loaded, or None.

    ``dlopen(soname, RTLD_NOLOAD)`` finds a loaded copy without loading one (whoever loaded it:
    PyTorch, CuPy, cudnn-frontend), and ``dladdr`` on one of its symbols names its file.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        handle = ctypes.CDLL(soname, mode=os.RTLD_NOLOAD)
    except OSError:
        return None
    try:
        address = ctypes.cast(getattr(handle, symbol), ctypes.c_void_p).value
        dladdr = ctypes.CDLL(None).dladdr
    except AttributeError:
        return None
    dladdr.argtypes, dladdr.restype = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)], ctypes.c_int
    info = _DlInfo()
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(os.fsdecode(info.dli_fname))


def check_elf(path: str, what: str, hint: str) -> None:
    """Refuse a file that is not a whole 64-bit little-endian ELF object before the dynamic loader
    maps it: a truncated library is mapped beyond its end and the first access kills the process
    with SIGBUS (observed with a cut libcudnn.so.9 named by PYCUDNN_LIBRARY)."""

    def bad(reason: str) -> LibraryNotFoundError:
        return LibraryNotFoundError(f"{what} could not be loaded: {reason}. {hint}.")

    try:
        # Opened without blocking and checked on the descriptor: a FIFO named by the variable
        # (or swapped in after the isfile check) would block open() forever. Not read whole, so
        # the size limit is only that of a file.
        with (
            open_regular(path, what="library", max_bytes=1 << 62) as fd,
            os.fdopen(fd, "rb", closefd=False) as f,
        ):
            size = os.fstat(fd).st_size
            header = f.read(ELF_HEADER.size)
            if len(header) < ELF_HEADER.size or header[:4] != b"\x7fELF":
                raise bad("it is not an ELF shared library")
            if header[4] != 2 or header[5] != 1:  # ELFCLASS64, ELFDATA2LSB
                raise bad("it is not a 64-bit little-endian ELF library")
            fields = ELF_HEADER.unpack(header)
            phoff, shoff, phentsize, phnum, shentsize, shnum = (
                fields[5], fields[6], fields[9], fields[10], fields[11], fields[12]
            )  # fmt: skip
            if shoff + shentsize * shnum > size or phoff + phentsize * phnum > size:
                raise bad(f"it is truncated ({size} bytes, its tables reach beyond the end)")
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError as exc:
        raise bad(f"it cannot be read ({exc})") from None
    for i in range(phnum):
        if phentsize < ELF_PHDR.size:
            break
        p_type, _, p_offset, _, _, p_filesz, _, _ = ELF_PHDR.unpack_from(table, i * phentsize)
        if p_type == PT_LOAD and p_offset + p_filesz > size:
            raise bad(
                f"it is truncated ({size} bytes, a loadable segment ends at {p_offset + p_filesz})"
            )


@dataclass(eq=False, repr=False, kw_only=True)
class NativeLibrary:
    """A lazily loaded shared library and its generated prototypes.

    Loading happens once, under a lock, on the first call that needs it: from the path in the
    environment variable ``env_var`` when set, else through ``cuda.pathfinder``.
    """

    display_name: str
    pathfinder_name: str  # cuda.pathfinder's name for it, and its soname's stem
    env_var: str  # names the library's path (checked before a search)
    install_hint: str
    expected_major: int
    functions: dict[str, FunctionSpec]  # the generated prototypes, by C name
    read_version: Callable[[ctypes.CDLL], tuple[int, int, int]]
    minimum_version: tuple[int, int, int]
    version_symbol: str
    # Libraries the named one loads from its own directory (cuDNN 9's libcudnn.so.9 is a
    # dispatcher that aborts the process when its sublibraries are missing).
    companions: tuple[str, ...] = ()
    # Libraries it loads by soname when it first needs them ((cuda.pathfinder name, required)),
    # which cuda.pathfinder loads first for a library it finds: see _load_dependencies.
    dependencies: tuple[tuple[str, bool], ...] = ()
    # Those of them it loads and unloads again as it goes, which are held loaded here.
    resident: tuple[str, ...] = ()
    # Its site-packages wheel directories, where cuda.pathfinder looks first: a library there is
    # loaded directly, its dependencies only where its own search path misses them.
    wheel_dirs: tuple[str, ...] = ()
    # The function that returns the CUDA version it was built for (12080: CUDA 12.8), which names
    # the dependencies' sonames (libcublasLt.so.12); "" when it has none.
    cudart_version_symbol: str = ""
    # Checks of the environment the library reads when it loads (its own logging variables):
    # run before every attempt, so that one fixed variable lets the next call load it.
    before_load: Callable[[], None] | None = None
    # The header version the bindings were generated from (None: not told).
    header_version: tuple[int, int, int] | None = None

    def __post_init__(self) -> None:
        self.soname = f"lib{self.pathfinder_name}.so.{self.expected_major}"
        self.found_via = ""  # how the library was found: see _locate
        self._held: list[ctypes.CDLL] = []  # dependencies loaded here, kept for the process
        self._lock = fork_safe_lock(self, "_lock")
        self._cdll: ctypes.CDLL | None = None
        self._path: str | None = None
        self._version: tuple[int, int, int] | None = None
        self._bound: dict[str, Any] = {}
        self._unconverted: dict[str, Any] = {}

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

    def _locate(self) -> tuple[str, bool]:
        """The library's path, and whether it is loaded without cuda.pathfinder (which loads its
        dependencies first) and so gets them from :meth:`_load_dependencies`."""
        # One copy per process: a second libcudnn.so.9 next to the one PyTorch (or CuPy, or
        # cudnn-frontend) loaded would have its own handles, logging and caches, and objects of one
        # passed to the other. So a copy already in the process is used, and an override naming
        # another file is refused.
        loaded = loaded_copy(self.soname, self.version_symbol)
        override = os.environ.get(self.env_var)
        if override:
            if not os.path.isfile(override):
                raise LibraryNotFoundError(
                    f"{self.env_var}={override!r} does not name a file; unset it to search the "
                    f"installed wheels, or {self.install_hint[0].lower()}{self.install_hint[1:]}"
                )
            if loaded is not None and os.path.realpath(override) != loaded:
                raise LibraryNotFoundError(
                    f"{self.env_var}={override!r} names another {self.display_name} than the "
                    f"{self.soname} this process has already loaded ({loaded}, loaded by another "
                    "package imported earlier); one process cannot use two copies. Unset "
                    f"{self.env_var} to use the loaded one, or set it before that package loads"
                )
            self.found_via = self.env_var
            path = os.path.abspath(override)
            check_elf(path, f"{self.env_var}={override!r}", self.install_hint)
            return path, loaded is None  # a copy already loaded has its dependencies
        if loaded is not None:
            self.found_via = "already loaded in this process"
            return loaded, False
        wheel = wheel_library(self.wheel_dirs, self.soname) if self.wheel_dirs else None
        if wheel is not None:
            self.found_via = "site-packages"
            return wheel, True
        try:
            from cuda import pathfinder
        except ImportError as exc:  # pragma: no cover - cuda-pathfinder is a base dependency
            raise LibraryNotFoundError(
                f"{self.display_name} cannot be located: {not_importable('cuda.pathfinder', exc)}"
            ) from exc
        try:
            found = pathfinder.load_nvidia_dynamic_lib(self.pathfinder_name)
        except Exception as exc:  # DynamicLibNotFoundError and friends
            raise LibraryNotFoundError(
                f"{self.display_name} was not found ({type(exc).__name__}: {exc}). "
                f"{self.install_hint}, or set {self.env_var} to the library's path."
            ) from exc
        self.found_via = str(found.found_via)
        return str(found.abs_path), False

    def _check_companions(self, path: str) -> None:
        # Imported here, not with the module: ctypes.util brings subprocess, shutil and tempfile,
        # about 5 ms of every ``import pycudnn`` for a check that runs only with an explicit path.
        import ctypes.util

        missing = [
            name
            for name in self.companions
            if not os.path.exists(os.path.join(os.path.dirname(path), name))
            and ctypes.util.find_library(name.removeprefix("lib").split(".so")[0]) is None
        ]
        if missing:
            raise LibraryNotFoundError(
                f"{self.env_var}={path!r}: {', '.join(missing)} is neither beside it nor on the "
                f"loader's path; {self.display_name} loads it from there and aborts the process "
                f"without it. Point {self.env_var} at a complete installation. {self.install_hint}."
            )

    def _cuda_major(self, cdll: ctypes.CDLL) -> int | None:
        """The CUDA major version the library was built for (None when it cannot say)."""
        fn = getattr(cdll, self.cudart_version_symbol, None) if self.cudart_version_symbol else None
        if fn is None:
            return None
        fn.restype, fn.argtypes = ctypes.c_size_t, []
        return int(fn()) // 1000 or None

    def _load_dependencies(self, cdll: ctypes.CDLL, path: str) -> None:
        # cuDNN loads cuBLASLt (and NVRTC, for runtime-compiled engines) by soname when a plan
        # first needs it, and aborts the process when that fails ("Cannot load symbol
        # cublasLtGetProperty"): the RUNPATH of cuDNN 9.12's CUDA 13 wheel does not reach
        # nvidia/cu13/lib. cuda.pathfinder loads a library's dependencies before the library it
        # finds; one loaded directly (named by the environment variable, or a wheel's) gets those
        # its own search path does not reach loaded the same way. Of those it reaches, only the
        # resident ones are loaded here, from where it would load them: cuDNN 9.19 loads NVRTC
        # and unloads it again around every plan build (6 ms and about 130 KiB never returned,
        # each time; measured with 200 deviceless conv builds), while mapping cuBLASLt costs
        # about 55 ms that a process loading a saved convolution plan never needs, and cuDNN
        # keeps it once loaded. A missing required one is refused now rather than aborting
        # later; a missing optional one is left to the library.
        major = self._cuda_major(cdll)
        libraries = sublibraries(path, self.pathfinder_name, self.expected_major) or [path]
        what = f"{self.env_var}={path!r}" if self.found_via == self.env_var else path
        for name, required in self.dependencies:
            found = None if major is None else reached(libraries, f"lib{name}.so.{major}")
            if found is not None:
                if name in self.resident:
                    self._hold(found)
                continue
            try:
                from cuda import pathfinder
            except ImportError as exc:  # a Python without it: say so
                if not required:
                    _log.debug("%s for %s not loaded: %s", name, self.display_name, exc)
                    continue
                raise LibraryNotFoundError(
                    f"{what}: {self.display_name} needs {name}, which is not on its own search "
                    f"path, and {not_importable('cuda.pathfinder', exc)}"
                ) from exc
            try:
                pathfinder.load_nvidia_dynamic_lib(name)
            except Exception as exc:  # DynamicLibNotFoundError and friends
                if required:
                    raise LibraryNotFoundError(
                        f"{what}: {self.display_name} needs {name}, which is not on its own "
                        f"search path and was not found ({type(exc).__name__}: {exc}); "
                        f"{self.display_name} aborts the process without it. "
                        f"{self.install_hint}, or install {name}."
                    ) from exc
                _log.debug("%s for %s not found: %s", name, self.display_name, exc)

    def _hold(self, path: str) -> None:
        """Keep the dependency at ``path`` loaded for the life of the process."""
        try:
            self._held.append(ctypes.CDLL(path))
        except OSError as exc:  # the library's own attempt will say what is wrong
            _log.debug("%s not held for %s: %s", path, self.display_name, exc)

    def _before_open(self, path: str) -> None:
        """Called with the located library's path just before it is loaded: a subclass loads
        there what the dynamic loader must find in the process first (nothing by default)."""

    def _load(self) -> ctypes.CDLL:
        with self._lock:
            if self._cdll is not None:
                return self._cdll
            cdll = self._open()
        # Logged once the lock is released: a logging handler that itself calls into the library
        # would otherwise wait forever for the lock its own thread holds.
        _log.debug(
            "%s %s loaded from %s (found via %s)",
            self.display_name, format_version(self._version), self._path, self.found_via,
        )  # fmt: skip
        return cdll

    def _open(self) -> ctypes.CDLL:
        """Locate, load and check the library (under the load lock); record what was loaded."""
        if self.before_load is not None:
            self.before_load()
        path, direct = self._locate()
        self._before_open(path)
        try:
            cdll = ctypes.CDLL(path)
        except OSError as exc:
            raise LibraryNotFoundError(
                f"{self.display_name} at {path} could not be loaded: {exc}. {self.install_hint}."
            ) from exc
        if self.found_via == self.env_var and hasattr(cdll, self.version_symbol):
            self._check_companions(path)  # before the first call, which would abort
        try:
            version = self.read_version(cdll)
        except AttributeError as exc:  # the version symbol is missing: some other library
            raise LibraryNotFoundError(
                f"{path} does not look like {self.display_name} ({exc}). {self.install_hint}."
            ) from exc
        if version[0] != self.expected_major:
            raise LibraryNotFoundError(
                f"{path} is {self.display_name} {format_version(version)}, but these bindings need "
                f"major version {self.expected_major}. {self.install_hint}."
            )
        if version < self.minimum_version:
            raise LibraryNotFoundError(
                f"{path} is {self.display_name} {format_version(version)}, older than the oldest "
                f"supported {format_version(self.minimum_version[:2])} (see the README's "
                f"'Supported versions'). {self.install_hint}, or set {self.env_var} to a "
                "newer library."
            )
        if direct:
            self._load_dependencies(cdll, path)
        self._path, self._version = path, version
        self._cdll = cdll
        return cdll

    # -- versions ----------------------------------------------------------------------------
    def lacks(self, since: tuple[int, ...] | None) -> bool:
        """Whether the loaded library is older than ``since`` (loads it; None: never lacks)."""
        if since is None:
            return False
        # Asked for every enum value and attribute set (hundreds per plan): the loaded version
        # is read directly once there is one, not through the property's load check.
        version = self._version if self._cdll is not None else None
        if version is None:
            version = self.version
        return (since if type(since) is tuple else tuple(since)) > version

    def check_since(self, symbol: str, since: tuple[int, ...] | None, context: str = "") -> None:
        """Raise :class:`UnsupportedByLibraryError` when ``symbol`` (introduced in ``since``) is
        newer than the loaded library; it names the symbol (and ``context``: where it was used)
        and both versions."""
        if self.lacks(since):
            where = f" ({context})" if context else ""
            raise UnsupportedByLibraryError(
                f"{symbol}{where} needs {self.display_name} >= {format_version(since)}; the "
                f"loaded library ({self._path}) is {format_version(self.version)}",
                symbol=symbol,
                required=since,
                loaded=self.version,
            )

    def require(self, version: tuple[int, ...], feature: str) -> None:
        """Raise :class:`UnsupportedByLibraryError` unless the loaded library is at least
        ``version`` (``(9, 8)`` or ``(9, 8, 0)``); ``feature`` says what needs it."""
        want = tuple(version) + (0,) * (3 - len(version))
        self.check_since(feature, want)

    # -- functions ---------------------------------------------------------------------------
    def spec(self, name: str) -> FunctionSpec:
        try:
            return self.functions[name]
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
        if spec.since is not None:
            self.check_since(name, spec.since)
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

    def unconverted_function(self, name: str) -> Any:
        """The ctypes function ``name`` with its return type but no argument types, so that
        ctypes converts nothing on the way in: for ``cudnnBackendSetAttribute`` (a pointer, two
        enums, an ``int64_t`` count, an array) about 0.4 us less a call than :meth:`function`'s,
        most of it the Python ints' conversion (pointer-only calls gain about 0.03 us). For the
        few calls a plan's lowering and heuristics make a hundred times each.

        Nothing is checked or converted: each argument must already be what C takes, a ctypes
        object of the parameter's exact type (``c_void_p``, ``c_int64``, an array or ``byref``),
        or a Python int where the parameter is a C ``int`` or enum. A Python int for any wider
        parameter is passed as a 32-bit ``int``, which the callee would read with garbage above
        it. The same checks as :meth:`function` run first (declared, exported, new enough)."""
        fn = self._unconverted.get(name)
        if fn is None:
            restype = self.function(name).restype
            fn = self.cdll()[name]  # a function object of its own: function()'s keeps its types
            fn.restype = restype
            self._unconverted[name] = fn
        return fn
