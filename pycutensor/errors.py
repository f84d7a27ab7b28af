"""Exceptions raised for cuTENSOR failures.

cuTENSOR has no last-error API: its explanation of a failure only reaches its logger. pycutensor
registers a logger callback when the library loads (see :mod:`pycutensor.log`) and attaches the error
line that the failing call logged on the same thread to the exception's ``message``.
"""

from __future__ import annotations

from typing import Any

from _nvbind.capture import GraphCaptureError
from _nvbind.ffi import LibraryNotFoundError, UnsupportedByLibraryError
from _nvbind.resource import ClosedError

__all__ = [
    "ClosedError",
    "CutensorArchMismatchError",
    "CutensorError",
    "CutensorInsufficientWorkspaceError",
    "CutensorInvalidValueError",
    "CutensorNotSupportedError",
    "GraphCaptureError",
    "LibraryNotFoundError",
    "UnsupportedByLibraryError",
    "error_class_for_status",
    "status_name",
]


class CutensorError(RuntimeError):
    """A cuTENSOR call returned a status other than ``CUTENSOR_STATUS_SUCCESS``."""

    def __init__(self, status: int, function: str = "", message: str = "") -> None:
        self.status = int(status)
        self.function = function
        self.message = message
        where = f"{function}: " if function else ""
        text = f"{where}{self.status_name} ({self.status})"
        super().__init__(f"{text}: {message}" if message else text)

    @property
    def status_name(self) -> str:
        """The ``cutensorStatus_t`` name of :attr:`status` (``cutensorGetErrorString``), e.g.
        "CUTENSOR_STATUS_INVALID_VALUE"."""
        return status_name(self.status)

    def __reduce__(self) -> tuple[Any, ...]:
        return (error_from_status, (self.status, self.function, self.message))


class CutensorInvalidValueError(CutensorError, ValueError):
    """``CUTENSOR_STATUS_INVALID_VALUE``: an argument was rejected (also a ``ValueError``)."""


class CutensorNotSupportedError(CutensorError):
    """``CUTENSOR_STATUS_NOT_SUPPORTED``: valid, but no kernel supports this combination."""


class CutensorArchMismatchError(CutensorError):
    """``CUTENSOR_STATUS_ARCH_MISMATCH``: the device (or the active device) does not fit."""


class CutensorInsufficientWorkspaceError(CutensorError):
    """``CUTENSOR_STATUS_INSUFFICIENT_WORKSPACE``: the workspace (or cache capacity) is too small."""


# cutensorStatus_t values (flat, no categories): INVALID_VALUE 7, ARCH_MISMATCH 8,
# NOT_SUPPORTED 15, INSUFFICIENT_WORKSPACE 19.
_BY_STATUS: dict[int, type[CutensorError]] = {
    7: CutensorInvalidValueError,
    8: CutensorArchMismatchError,
    15: CutensorNotSupportedError,
    19: CutensorInsufficientWorkspaceError,
}


def error_class_for_status(status: int) -> type[CutensorError]:
    return _BY_STATUS.get(int(status), CutensorError)


def error_from_status(status: int, function: str = "", message: str = "") -> CutensorError:
    return error_class_for_status(status)(status, function, message)


def status_name(status: int) -> str:
    """The ``cutensorStatus_t`` name of :attr:`status` (``cutensorGetErrorString``), e.g.
    "CUTENSOR_STATUS_INVALID_VALUE"."""
    from . import _bindings

    try:
        return "CUTENSOR_STATUS_" + _bindings.cutensorStatus_t(int(status)).name
    except ValueError:
        return "CUTENSOR_STATUS_UNKNOWN"
