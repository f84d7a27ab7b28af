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

from typing import Any

from _nvbind.rawlayer import make_checked, no_such_name

from . import _bindings

__all__ = sorted(_bindings.FUNCTIONS)  # noqa: PLE0605 - computed from the generated table


def _raise_status(status: int, function: str) -> None:
    from ._lib import check

    check(status, function)


def compute_descriptor(name: str) -> int:
    """Value of ``CUTENSOR_COMPUTE_DESC_<name>`` (e.g. ``"32F"``), for ``cutensorComputeDescriptor_t``."""
    from ._lib import compute_descriptor as _cd

    return _cd(name)


def __getattr__(name: str) -> Any:
    if name in _bindings.FUNCTIONS:
        from ._lib import LIB, clear_last_error, precheck

        checked = make_checked(LIB, name, _raise_status, precheck)

        def call(*args: Any) -> Any:
            clear_last_error()  # an error line logged earlier must not be attached to this call
            return checked(*args)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = checked.__doc__
        globals()[name] = call
        return call
    if name in _bindings.COMPUTE_DESCRIPTOR_SYMBOLS:
        # The value of the C global (a pointer), as C code passing CUTENSOR_COMPUTE_DESC_32F
        # gets it; read now, so that the library loads at first use and not at import.
        value = compute_descriptor(name.removeprefix("CUTENSOR_COMPUTE_DESC_"))
        globals()[name] = value
        return value
    if not name.startswith("_") and hasattr(_bindings, name):
        return getattr(_bindings, name)
    raise no_such_name("pycutensor.raw", name, __dir__)


def __dir__() -> list[str]:
    public = [n for n in vars(_bindings) if not n.startswith("_")]
    descriptors = set(_bindings.COMPUTE_DESCRIPTOR_SYMBOLS)
    return sorted(set(public) | set(_bindings.FUNCTIONS) | descriptors | {"compute_descriptor"})
