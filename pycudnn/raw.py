"""Every cuDNN C function under its C name, arguments as in C, status checked.

>>> from pycudnn import raw
>>> import ctypes
>>> desc = ctypes.c_void_p()
>>> raw.cudnnCreateTensorDescriptor(ctypes.byref(desc))
>>> raw.cudnnSetTensorNdDescriptor(desc, raw.CUDNN_DATA_FLOAT, 4, dims, strides)

A failing call raises the :class:`~pycudnn.CudnnError` subclass of its status category, with the text
of ``cudnnGetLastErrorString``. A function, enum value (an enum-typed argument, or a backend
attribute name, type or enum value passed to ``cudnnBackendSetAttribute``) newer than the loaded
cuDNN raises :class:`~pycudnn.UnsupportedByLibraryError` before C. Enums, constants and structs of the headers are here too
(``raw.CUDNN_DATA_FLOAT``, ``raw.cudnnDataType_t.FLOAT``, ``raw.cudnnDebug_t``). The library loads on
the first call, not on import.

What would crash cuDNN rather than return a status is refused before C with a ``ValueError`` or
``TypeError`` naming the function and argument: a NULL handle, a NULL out-parameter cuDNN writes
through unchecked, and a count larger than the ctypes array passed with it (the (count, array)
pairs come from the headers: ``_bindings.ARRAY_COUNTS``). A bare integer address cannot be sized
and stays the caller's responsibility, as in C.
"""

from __future__ import annotations

from typing import Any

from _nvbind.rawlayer import make_checked, no_such_name

from . import _bindings
from ._rawchecks import precheck

__all__ = sorted(_bindings.FUNCTIONS)  # noqa: PLE0605 - computed from the generated table


def _raise_status(status: int, function: str) -> None:
    from ._lib import check

    check(status, function)


def __getattr__(name: str) -> Any:
    if name in _bindings.FUNCTIONS:
        from ._lib import LIB

        wrapper = make_checked(LIB, name, _raise_status, precheck)
        globals()[name] = wrapper
        return wrapper
    if not name.startswith("_") and hasattr(_bindings, name):
        return getattr(_bindings, name)
    raise no_such_name("pycudnn.raw", name, __dir__)


def __dir__() -> list[str]:
    public = [n for n in vars(_bindings) if not n.startswith("_")]
    return sorted(set(public) | set(_bindings.FUNCTIONS))
