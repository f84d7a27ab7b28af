"""Every cuTENSORMg C function (``cutensorMg.h``) under its C name, arguments as in C, status checked.

Block-cyclic tensors over several GPUs of one process: copies between layouts (host, one device,
several devices) and contractions. ``libcutensorMg.so.2`` (beside ``libcutensor.so.2`` in the
cuTENSOR wheel) loads on the first call, never at import of :mod:`pycutensor`. A failing call raises
the :class:`~pycutensor.CutensorError` subclass of its status with the error line cuTENSOR logged for
it. Counts larger than the ctypes arrays passed with them are refused before C
(``_bindings_mg.ARRAY_COUNTS``).
"""

from __future__ import annotations

from typing import Any

from _nvbind.rawlayer import make_checked, no_such_name

from . import _bindings_mg as _bindings

__all__ = sorted(_bindings.FUNCTIONS)  # noqa: PLE0605 - computed from the generated table


def _raise_status(status: int, function: str) -> None:
    from ._lib_ext import check_mg

    check_mg(status, function)


def __getattr__(name: str) -> Any:
    if name in _bindings.FUNCTIONS:
        from ._lib import clear_last_error
        from ._lib_ext import MG, precheck_mg

        checked = make_checked(MG, name, _raise_status, precheck_mg)

        def call(*args: Any) -> Any:
            clear_last_error()  # an error line logged earlier must not be attached to this call
            return checked(*args)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = checked.__doc__
        globals()[name] = call
        return call
    if not name.startswith("_") and hasattr(_bindings, name):
        return getattr(_bindings, name)
    raise no_such_name("pycutensor.raw_mg", name, __dir__)


def __dir__() -> list[str]:
    public = [n for n in vars(_bindings) if not n.startswith("_")]
    return sorted(set(public) | set(_bindings.FUNCTIONS))
