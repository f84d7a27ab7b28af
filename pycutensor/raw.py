"""Every cuTENSOR C function under its C name, arguments as in C, status checked.

A failing call raises the :class:`~pycutensor.CutensorError` subclass of its status, with the error
line cuTENSOR logged for it. Enums and data-type constants are here too (``raw.CUTENSOR_R_32F``,
``raw.cutensorOperator_t.IDENTITY``). The compute descriptors are exported C globals
(``extern const cutensorComputeDescriptor_t``); they are here under their C names
(``raw.CUTENSOR_COMPUTE_DESC_32F``, ``..._TF32``, ``..._64F``, ...), read from the library the first
time one is used, and by short name with :func:`compute_descriptor` (``compute_descriptor("32F")``).
The library loads on first use, never at import. A count larger than the ctypes array passed with
it (a tensor descriptor's extents and strides, an attribute buffer) is refused before C, naming the
function, the argument and both numbers (``_bindings.ARRAY_COUNTS``, from the headers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from _nvbind.rawlayer import called_after, make_checked, raw_module

from . import _bindings


def compute_descriptor(name: str) -> int:
    """Value of ``CUTENSOR_COMPUTE_DESC_<name>`` (e.g. ``"32F"``), for ``cutensorComputeDescriptor_t``."""
    from ._lib import compute_descriptor as _cd

    return _cd(name)


def _bind(name: str) -> Callable[..., Any]:
    from ._lib import LIB, check, clear_last_error, precheck

    # An error line logged earlier must not be attached to this call.
    return called_after(clear_last_error, make_checked(LIB, name, check, precheck), name)


def _descriptor(name: str) -> int:
    # The value of the C global (a pointer), as C code passing CUTENSOR_COMPUTE_DESC_32F gets it;
    # read at first use, so that the library loads then and not at import.
    return compute_descriptor(name.removeprefix("CUTENSOR_COMPUTE_DESC_"))


__all__, __getattr__, __dir__ = raw_module(
    "pycutensor.raw",
    _bindings,
    globals(),
    _bind,
    values=_descriptor,
    # compute_descriptor is a function here, listed by dir() with the C names.
    value_names=(*_bindings.COMPUTE_DESCRIPTOR_SYMBOLS, "compute_descriptor"),
)
