"""Lazy loading of ``libcudnn.so.9``.

Nothing is loaded at import. The first call that needs cuDNN finds it through ``cuda.pathfinder``
(site-packages wheels for CUDA 12 or 13, conda, the system loader, ``CUDNN_PATH``), or takes the path
in ``PYCUDNN_LIBRARY``, checks that it is cuDNN 9 and binds prototypes on demand.
"""

from __future__ import annotations

import ctypes

from _nvbind.ffi import NativeLibrary

from . import _bindings
from .errors import error_from_status

__all__ = ["LIB", "MINIMUM_VERSION", "check", "last_error_string"]

ENV_VAR = "PYCUDNN_LIBRARY"
# The oldest cuDNN this project supports (README, "Supported versions"; docs/versions.md says why).
MINIMUM_VERSION = (9, 0, 0)
INSTALL_HINT = (
    "Install cuDNN 9 with `pip install 'cudnn-cutensor-ctypes[cu12]'` (CUDA 12) or "
    "`pip install 'cudnn-cutensor-ctypes[cu13]'` (CUDA 13)"
)


def _read_version(cdll: ctypes.CDLL) -> tuple[int, int, int]:
    fn = cdll.cudnnGetVersion
    fn.restype, fn.argtypes = ctypes.c_size_t, []
    v = int(fn())
    if v < 90000:  # cuDNN 8 and older encode major*1000 + minor*100 + patch (8906 is 8.9.6)
        return v // 1000, v % 1000 // 100, v % 100
    return v // 10000, v % 10000 // 100, v % 100


LIB = NativeLibrary(
    display_name="cuDNN",
    pathfinder_name="cudnn",
    env_var=ENV_VAR,
    install_hint=INSTALL_HINT,
    expected_major=_bindings.HEADER_VERSION[0],
    functions=_bindings.FUNCTIONS,
    read_version=_read_version,
    minimum_version=MINIMUM_VERSION,
    version_symbol="cudnnGetVersion",
    # libcudnn.so.9 is a dispatcher: its functions live in sublibraries it loads from its own
    # directory, and without libcudnn_graph it aborts the process on the first call.
    companions=(f"libcudnn_graph.so.{_bindings.HEADER_VERSION[0]}",),
)

_ERROR_BUFFER_SIZE = 4096


def last_error_string() -> str:
    """Read (and so clear) this thread's ``cudnnGetLastErrorString`` text."""
    buf = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
    LIB.function("cudnnGetLastErrorString")(buf, _ERROR_BUFFER_SIZE)
    return buf.value.decode("utf-8", "replace").strip()


def check(status: int, function: str) -> None:
    """Raise the :class:`~pycudnn.CudnnError` subclass for a non-zero ``status``."""
    if status:
        raise error_from_status(status, function, last_error_string())
