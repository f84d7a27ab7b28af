"""cuTENSOR's logger, routed into Python's ``logging`` (``logging.getLogger("pycutensor.cutensor")``).

When the library loads, pycutensor registers a callback with ``cutensorLoggerSetCallback`` so that
the error line of a failing call can be attached to the exception (cuTENSOR has no last-error API).
Unless one of ``CUTENSOR_LOG_LEVEL``, ``CUTENSOR_LOG_MASK`` or ``CUTENSOR_LOG_FILE`` is set, it also
sends cuTENSOR's own text output to ``/dev/null`` and turns on level 1 (errors): cuTENSOR would
otherwise print those lines to stdout. When those variables are set they are left in force.

:func:`enable_logging` additionally forwards the entries to Python logging (opt-in).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from . import _bindings
from ._lib import LIB, check, record_error

__all__ = ["disable_logging", "enable_logging", "install_error_capture", "is_enabled"]

logger = logging.getLogger("pycutensor.cutensor")

# cuTENSOR levels: 1 errors, 2 performance trace, 3 performance hints, 4 heuristics trace, 5 API trace
_TO_LOGGING = {
    1: logging.ERROR,
    2: logging.DEBUG,
    3: logging.INFO,
    4: logging.DEBUG,
    5: logging.DEBUG,
}
_ENV = ("CUTENSOR_LOG_LEVEL", "CUTENSOR_LOG_MASK", "CUTENSOR_LOG_FILE")

_lock = threading.Lock()
_state: dict[str, Any] = {"forward": False, "env_controls_output": False}


def _on_message(level: int, function: bytes | None, message: bytes | None) -> None:
    try:
        fname = function.decode("utf-8", "replace") if function else ""
        text = message.decode("utf-8", "replace") if message else ""
        if level == 1:
            record_error(fname, text)
        if _state["forward"]:
            logger.log(_TO_LOGGING.get(int(level), logging.DEBUG), "[%s] %s", fname, text)
    except Exception:  # pragma: no cover - never let an exception cross back into C
        pass


_CALLBACK = _bindings.cutensorLoggerCallback_t(_on_message)  # must outlive the registration


def install_error_capture() -> None:
    """Register the callback; called once when the library is loaded."""
    set_cb = LIB.function("cutensorLoggerSetCallback")
    check(set_cb(_CALLBACK), "cutensorLoggerSetCallback")
    if any(os.environ.get(v) for v in _ENV):
        _state["env_controls_output"] = True
        return
    check(LIB.function("cutensorLoggerOpenFile")(os.devnull.encode()), "cutensorLoggerOpenFile")
    check(LIB.function("cutensorLoggerSetLevel")(1), "cutensorLoggerSetLevel")


def enable_logging(level: int = 1) -> None:
    """Forward cuTENSOR log entries up to cuTENSOR ``level`` (1 errors ... 5 API trace) to logging.

    Wraps ``cutensorLoggerSetLevel``; ``level`` is cuTENSOR's scale, not Python's.
    """
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 5:
        raise ValueError(
            f"level must be a cuTENSOR log level from 1 (errors) to 5 (API trace), got {level!r}"
        )
    LIB.cdll()
    with _lock:
        _state["forward"] = True
        check(LIB.function("cutensorLoggerSetLevel")(level), "cutensorLoggerSetLevel")


def disable_logging() -> None:
    """Stop forwarding to Python logging (errors are still captured for exceptions)."""
    LIB.cdll()
    with _lock:
        _state["forward"] = False
        if not _state["env_controls_output"]:
            check(LIB.function("cutensorLoggerSetLevel")(1), "cutensorLoggerSetLevel")


def is_enabled() -> bool:
    return bool(_state["forward"])
