"""Every cuTENSORMg C function (``cutensorMg.h``) under its C name, arguments as in C, status checked.

Block-cyclic tensors over several GPUs of one process: copies between layouts (host, one device,
several devices) and contractions. ``libcutensorMg.so.2`` (beside ``libcutensor.so.2`` in the
cuTENSOR wheel) loads on the first call, never at import of :mod:`pycutensor`. A failing call raises
the :class:`~pycutensor.CutensorError` subclass of its status with the error line cuTENSOR logged for
it. Counts larger than the ctypes arrays passed with them are refused before C
(``_bindings_mg.ARRAY_COUNTS``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from _nvbind.rawlayer import called_after, make_checked, raw_module

from . import _bindings_mg as _bindings


def _bind(name: str) -> Callable[..., Any]:
    from ._lib import clear_last_error
    from ._lib_ext import MG, check_mg, precheck_mg

    # An error line logged earlier must not be attached to this call.
    return called_after(clear_last_error, make_checked(MG, name, check_mg, precheck_mg), name)


__all__, __getattr__, __dir__ = raw_module("pycutensor.raw_mg", _bindings, globals(), _bind)
