"""Lazy loading of ``libcutensor.so.2`` (through ``cuda.pathfinder`` or ``PYCUTENSOR_LIBRARY``)."""

from __future__ import annotations

import ctypes
import enum
import functools

from _nvbind.ffi import (
    FunctionSpec,
    NativeLibrary,
    UnsupportedByLibraryError,
    format_version,
)
from _nvbind.interrupts import raise_deferred
from _nvbind.loading import install_hint, native_library
from _nvbind.logenv import check_cutensor_environment
from _nvbind.rawlayer import (
    CallCheck,
    array_count_check,
    combine_checks,
    enum_argument_check,
)

from . import _bindings
from ._enum_history import ENUMERATOR_SINCE
from ._errorlog import clear_last_error, install, record_error, take_last_error
from .errors import error_from_status

__all__ = [
    "LIB",
    "MINIMUM_VERSION",
    "check",
    "check_enum",
    "clear_last_error",
    "compute_descriptor",
    "missing_symbols",
    "record_error",
    "take_last_error",
]

ENV_VAR = "PYCUTENSOR_LIBRARY"
# The oldest cuTENSOR this project supports (README, "Supported versions"; docs/versions.md says why).
MINIMUM_VERSION = (2, 0, 0)
INSTALL_HINT = install_hint(
    "cuTENSOR",
    MINIMUM_VERSION[0],
    "it also needs cuBLAS, which the cuTENSOR wheel does not declare",
)


class _CutensorLibrary(NativeLibrary):
    def _load(self) -> ctypes.CDLL:
        first = not self.is_loaded
        cdll = super()._load()
        if first:
            install(self.function, check)  # error capture: cuTENSOR has no last-error API
        return cdll


LIB = native_library(
    _CutensorLibrary,
    "cuTENSOR",
    "cutensor",
    _bindings,
    ENV_VAR,
    INSTALL_HINT,
    MINIMUM_VERSION,
    before_load=check_cutensor_environment,  # its logging variables (a crash or hang at load)
)


def check(status: int, function: str) -> None:
    """Raise the :class:`~pycutensor.CutensorError` subclass for a non-zero ``status``."""
    raise_deferred()  # a Ctrl-C that landed in the log callback during the call
    if status:
        raise error_from_status(status, function, take_last_error())


_compute_descriptors: dict[str, int] = {}


def compute_descriptor(name: str) -> int:
    """The pointer stored in the exported data symbol ``CUTENSOR_COMPUTE_DESC_<name>``."""
    ptr = _compute_descriptors.get(name)
    if ptr is None:
        symbol = f"CUTENSOR_COMPUTE_DESC_{name}"
        if symbol not in _bindings.COMPUTE_DESCRIPTOR_SYMBOLS:
            known = ", ".join(s.rsplit("_", 1)[-1] for s in _bindings.COMPUTE_DESCRIPTOR_SYMBOLS)
            raise ValueError(f"unknown compute descriptor {name!r}; cuTENSOR has: {known}")
        LIB.check_since(symbol, _bindings.COMPUTE_DESCRIPTOR_SINCE.get(symbol))
        try:
            value = ctypes.c_void_p.in_dll(LIB.cdll(), symbol).value
        except ValueError:  # "undefined symbol": older than the headers, and undated
            raise UnsupportedByLibraryError(
                f"{symbol} is declared in cutensor.h but not exported by {LIB.path} "
                f"(cuTENSOR {format_version(LIB.version)})",
                symbol=symbol,
                loaded=LIB.version,
            ) from None
        if not value:
            raise RuntimeError(f"{symbol} is NULL in {LIB.path}")
        ptr = _compute_descriptors[name] = int(value)
    return ptr


@functools.cache
def _enum_since() -> dict[tuple[type, int], tuple[str, tuple[int, int, int]]]:
    """(enum class, value) -> (C name, the release that introduced it), from the generated
    history of the headers (``_enum_history``)."""

    out: dict[tuple[type, int], tuple[str, tuple[int, int, int]]] = {}
    for c_name, since in ENUMERATOR_SINCE.items():
        member = getattr(_bindings, c_name, None)
        if isinstance(member, enum.IntEnum):
            key = (type(member), int(member))
            if key not in out or since < out[key][1]:
                out[key] = (c_name, since)
    return out


def check_enum(enum_cls: type, value: int, context: str = "") -> None:
    """Raise :class:`~pycutensor.UnsupportedByLibraryError` when ``value`` of ``enum_cls`` (an
    operator, a plan-preference or operation-descriptor attribute, ...) is newer than the loaded
    cuTENSOR, which would otherwise answer ``CUTENSOR_STATUS_INVALID_VALUE`` at best."""
    entry = _enum_since().get((enum_cls, int(value)))
    if entry is not None:
        LIB.check_since(entry[0], entry[1], context)


def precheck(spec: FunctionSpec) -> CallCheck | None:
    """The raw layer's checks of one function (``make_checked``'s precheck, asked once per
    function): enum-typed arguments newer than the loaded cuTENSOR, and array arguments too small
    for the count passed with them (``_bindings.ARRAY_COUNTS``); None when it has neither."""
    return combine_checks(
        [
            array_count_check(spec, _bindings.ARRAY_COUNTS.get(spec.name, ()), "cuTENSOR"),
            enum_argument_check(
                spec, lambda typedef: getattr(_bindings, typedef, None), check_enum
            ),
        ]
    )


def missing_symbols() -> list[str]:
    """The functions, compute descriptors and enumerators of the headers that the loaded cuTENSOR
    is older than, each with the version that introduced it (functions and descriptors: their ELF
    symbol versions; enumerators: the first release whose headers name them). Loads the library."""

    dated = [(spec.since, name) for name, spec in _bindings.FUNCTIONS.items()]
    dated += [(since, name) for name, since in _bindings.COMPUTE_DESCRIPTOR_SINCE.items()]
    dated += [(since, name) for name, since in ENUMERATOR_SINCE.items()]
    return [
        f"{name}: needs {format_version(since)}"
        for since, name in sorted(dated, key=lambda d: (d[0] or (0,), d[1]))
        if LIB.lacks(since)
    ]
