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

from collections.abc import Callable
from typing import Any

from _nvbind.rawlayer import make_checked, raw_module

from . import _bindings
from ._rawchecks import precheck


def _bind(name: str) -> Callable[..., Any]:
    from ._lib import LIB, check

    return make_checked(LIB, name, check, precheck)


__all__, __getattr__, __dir__ = raw_module("pycudnn.raw", _bindings, globals(), _bind)
