"""Every cuTENSORMp C function (``cutensorMp.h``) under its C name, arguments as in C, status checked.

Distributed contractions, redistribution, unfolding and folding across processes that talk through
NCCL. ``libcutensorMp.so.2`` (beside ``libcutensor.so.2`` in the cuTENSOR wheel) and the NCCL and
CUDA runtime libraries it needs load on the first call, never at import of :mod:`pycutensor`; a
missing one raises :class:`~pycutensor.LibraryNotFoundError` naming it and the package to install.
A failing call raises the :class:`~pycutensor.CutensorError` subclass of its status with the lines
cuTENSORMp logged for it. Counts larger than the ctypes arrays passed with them are refused before
C (``_bindings_mp.ARRAY_COUNTS``), as in :mod:`pycutensor.raw`; the enums of ``cutensor.h`` that the
prototypes take (``cutensorOperator_t``) are in :mod:`pycutensor.raw`.
"""

from __future__ import annotations

from typing import Any

from _nvbind.rawlayer import make_checked, no_such_name

from . import _bindings_mp as _bindings

__all__ = sorted(_bindings.FUNCTIONS)  # noqa: PLE0605 - computed from the generated table


def _raise_status(status: int, function: str) -> None:
    from ._lib_ext import check_mp

    check_mp(status, function)


def __getattr__(name: str) -> Any:
    if name in _bindings.FUNCTIONS:
        from ._lib import clear_last_error
        from ._lib_ext import MP, MP_LOG, precheck_mp

        checked = make_checked(MP, name, _raise_status, precheck_mp)

        def call(*args: Any) -> Any:
            clear_last_error()  # lines logged before this call must not be attached to it
            MP_LOG.mark()
            return checked(*args)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = checked.__doc__
        globals()[name] = call
        return call
    if not name.startswith("_") and hasattr(_bindings, name):
        return getattr(_bindings, name)
    raise no_such_name("pycutensor.raw_mp", name, __dir__)


def __dir__() -> list[str]:
    public = [n for n in vars(_bindings) if not n.startswith("_")]
    return sorted(set(public) | set(_bindings.FUNCTIONS))
