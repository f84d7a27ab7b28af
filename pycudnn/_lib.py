"""Lazy loading of ``libcudnn.so.9``.

Nothing is loaded at import. The first call that needs cuDNN takes the path in
``PYCUDNN_LIBRARY``, or the wheel's ``site-packages/nvidia/cudnn/lib`` (where ``cuda.pathfinder``
looks first), or finds it through ``cuda.pathfinder`` (conda, the system loader, ``CUDNN_PATH``);
checks that it is cuDNN 9; loads the dependencies cuDNN's own RUNPATH misses
(:mod:`_nvbind.search_path`) and holds NVRTC; and binds prototypes on demand.
"""

from __future__ import annotations

import ctypes

from _nvbind.ffi import NativeLibrary
from _nvbind.interrupts import raise_deferred
from _nvbind.loading import decode_version, install_hint, native_library
from _nvbind.logenv import check_cudnn_environment
from _nvbind.shutdown import library_call

from . import _bindings
from .errors import error_from_status

__all__ = ["LIB", "MINIMUM_VERSION", "check", "last_error_string"]

ENV_VAR = "PYCUDNN_LIBRARY"
# The oldest cuDNN this project supports (README, "Supported versions"; docs/versions.md says why).
MINIMUM_VERSION = (9, 0, 0)
INSTALL_HINT = install_hint("cuDNN", MINIMUM_VERSION[0])


def _decode_version(v: int) -> tuple[int, int, int]:
    if v < 90000:  # cuDNN 8 and older encode major*1000 + minor*100 + patch (8906 is 8.9.6)
        return v // 1000, v % 1000 // 100, v % 100
    return decode_version(v)


LIB = native_library(
    NativeLibrary,
    "cuDNN",
    "cudnn",
    _bindings,
    ENV_VAR,
    INSTALL_HINT,
    MINIMUM_VERSION,
    decode=_decode_version,
    # libcudnn.so.9 is a dispatcher: its functions live in sublibraries it loads from its own
    # directory, and without libcudnn_graph it aborts the process on the first call.
    companions=(f"libcudnn_graph.so.{_bindings.HEADER_VERSION[0]}",),
    # what it loads by soname on first need (cuda.pathfinder's catalogue lists the same)
    dependencies=(("cublasLt", True), ("nvrtc", False)),
    # cuDNN 9.19 loads and unloads NVRTC around every plan build: held loaded, it stays
    resident=("nvrtc",),
    # where cuda.pathfinder looks first; found there, cuDNN loads without it (and without
    # cuBLASLt, until a plan needs it) when its own search path reaches those dependencies
    wheel_dirs=("nvidia/cudnn/lib",),
    before_load=check_cudnn_environment,  # its logging variables, PYCUDNN_LIBRARY a sublibrary
)

_ERROR_BUFFER_SIZE = 4096


#: Read after each failed call, on the planning threads too: guarded so that a fork waits for it.
_LAST_ERROR_CALL = library_call("cudnnGetLastErrorString")


def last_error_string() -> str:
    """Read (and so clear) this thread's ``cudnnGetLastErrorString`` text."""
    buf = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
    _LAST_ERROR_CALL.run(LIB.function("cudnnGetLastErrorString"), buf, _ERROR_BUFFER_SIZE)
    return buf.value.decode("utf-8", "replace").strip()


def check(status: int, function: str) -> None:
    """Raise the :class:`~pycudnn.CudnnError` subclass for a non-zero ``status``."""
    raise_deferred()  # a Ctrl-C that landed in the log callback during the call
    if status:
        raise error_from_status(status, function, last_error_string())
