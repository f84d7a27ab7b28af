"""Exceptions raised for cuDNN failures.

Every non-success ``cudnnStatus_t`` becomes a :class:`CudnnError` carrying the exact ``status``, its
enumerator name, the C ``function`` that returned it and cuDNN's own explanation (read with
``cudnnGetLastErrorString`` right after the failing call, on the same thread). The class is chosen by
the status *category* (``status // 1000 * 1000``), so codes added by future cuDNN releases still map.
"""

from __future__ import annotations

from typing import Any

from _nvbind.capture import GraphCaptureError
from _nvbind.cuda import driver_status
from _nvbind.ffi import LibraryNotFoundError, UnsupportedByLibraryError
from _nvbind.resource import ClosedError

__all__ = [
    "ClosedError",
    "CudnnBadParamError",
    "CudnnError",
    "CudnnExecutionFailedError",
    "CudnnInternalError",
    "CudnnNotInitializedError",
    "CudnnNotSupportedError",
    "GraphCaptureError",
    "LibraryNotFoundError",
    "UnsupportedByLibraryError",
    "error_class_for_status",
    "status_name",
]


class CudnnError(RuntimeError):
    """A cuDNN call returned a status other than ``CUDNN_STATUS_SUCCESS``."""

    category = 0

    def __init__(self, status: int, function: str = "", message: str = "") -> None:
        self.status = int(status)
        self.function = function
        self.message = message
        super().__init__(self._text())

    @property
    def status_name(self) -> str:
        """The ``cudnnStatus_t`` name of :attr:`status` (``cudnnGetErrorString``), e.g.
        "CUDNN_STATUS_BAD_PARAM"."""
        return status_name(self.status)

    def _text(self) -> str:
        where = f"{self.function}: " if self.function else ""
        text = f"{where}{self.status_name} ({self.status})"
        return f"{text}: {self.message}" if self.message else text

    def __reduce__(self) -> tuple[Any, ...]:
        return (error_from_status, (self.status, self.function, self.message))


class CudnnNotInitializedError(CudnnError):
    """Category 1000: not initialized, sub-library loading or version mismatch, licence, runtime."""

    category = 1000


class CudnnBadParamError(CudnnError, ValueError):
    """Category 2000: a parameter was rejected (also a ``ValueError``)."""

    category = 2000


class CudnnNotSupportedError(CudnnError):
    """Category 3000: valid, but no engine, architecture or library supports it."""

    category = 3000


class CudnnInternalError(CudnnError):
    """Category 4000: internal failure, including host/device allocation and compilation."""

    category = 4000


class CudnnExecutionFailedError(CudnnError):
    """Category 5000: a kernel or a CUDA library call failed while executing."""

    category = 5000


_BY_CATEGORY: dict[int, type[CudnnError]] = {
    cls.category: cls
    for cls in (
        CudnnNotInitializedError,
        CudnnBadParamError,
        CudnnNotSupportedError,
        CudnnInternalError,
        CudnnExecutionFailedError,
    )
}


def error_class_for_status(status: int) -> type[CudnnError]:
    """The exception class for ``status`` by its category (``CUDNN_STATUS_CATEGORY``)."""
    return _BY_CATEGORY.get(int(status) // 1000 * 1000, CudnnError)


def error_from_status(status: int, function: str = "", message: str = "") -> CudnnError:
    """The :class:`CudnnError` subclass instance for ``status`` returned by C ``function``."""
    # Imported here, as in status_name: the bindings are 14k lines that ``import pycudnn`` does
    # not load, and any failing status means they are loaded already.
    from . import _bindings

    if status == _bindings.cudnnStatus_t.SUBLIBRARY_LOADING_FAILED:
        message = _with_driver_hint(message)
    return error_class_for_status(status)(status, function, message)


def _with_driver_hint(message: str) -> str:
    # cuDNN reports a missing driver library (libcuda.so.1, which it loads even to plan without a
    # GPU) only as a sublibrary that failed to load: name the cause when that is it.

    st = driver_status()
    if st.library_found:
        return message
    return (
        f"{message} (the NVIDIA driver library libcuda.so.1 could not be loaded: {st.reason}; "
        "cuDNN needs it even to plan without a GPU)"
    )


def status_name(status: int) -> str:
    """The ``cudnnStatus_t`` enumerator name of ``status`` (from the generated bindings)."""
    from . import _bindings

    try:
        return "CUDNN_STATUS_" + _bindings.cudnnStatus_t(int(status)).name
    except ValueError:
        return "CUDNN_UNKNOWN_STATUS"
