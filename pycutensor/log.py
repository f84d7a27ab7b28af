"""cuTENSOR's logger, routed into Python's ``logging`` (``logging.getLogger("pycutensor.cutensor")``).

When the library loads, pycutensor registers a callback with ``cutensorLoggerSetCallback`` so that
the error line of a failing call can be attached to the exception (cuTENSOR has no last-error API).
Unless one of ``CUTENSOR_LOG_LEVEL``, ``CUTENSOR_LOG_MASK`` or ``CUTENSOR_LOG_FILE`` is set, it also
sends cuTENSOR's own text output to ``/dev/null`` and turns on level 1 (errors): cuTENSOR would
otherwise print those lines to stdout. When those variables are set they are left in force.

:func:`enable_logging` additionally forwards the entries to Python logging (opt-in).
"""

from __future__ import annotations

import sys

from _nvbind.forksafe import fork_safe_lock

from ._errorlog import install as _install
from ._errorlog import state as _state
from ._lib import LIB, check

__all__ = [
    "disable_logging",
    "enable_logging",
    "install_error_capture",
    "is_enabled",
]

_lock = fork_safe_lock(sys.modules[__name__], "_lock")


def install_error_capture() -> None:
    """Register the callback; done once when the library is loaded (kept for callers of 0.1)."""
    _install(LIB.function, check)


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
    """Stop forwarding to Python logging (errors are still captured for exceptions). When
    cuTENSOR's own variables are set, the level or mask they ask for is set again."""
    LIB.cdll()
    with _lock:
        _state["forward"] = False
        function, value = _state["env_setting"] or ("cutensorLoggerSetLevel", 1)
        check(LIB.function(function)(value), function)


def is_enabled() -> bool:
    return bool(_state["forward"])
