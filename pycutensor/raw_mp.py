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

from collections.abc import Callable
from typing import Any

from _nvbind.rawlayer import called_after, make_checked, raw_module

from . import _bindings_mp as _bindings


def _bind(name: str) -> Callable[..., Any]:
    from ._lib import clear_last_error
    from ._lib_ext import MP, MP_LOG, check_mp, precheck_mp

    def before() -> None:
        clear_last_error()  # lines logged before this call must not be attached to it
        MP_LOG.mark()

    return called_after(before, make_checked(MP, name, check_mp, precheck_mp), name)


__all__, __getattr__, __dir__ = raw_module("pycutensor.raw_mp", _bindings, globals(), _bind)
