"""The callback pycutensor registers with ``cutensorLoggerSetCallback``, and what it records.

cuTENSOR has no last-error API: the error line it logs for a failing call is the only explanation,
so this callback keeps the last one per thread for the exception (``take_last_error``), and
forwards entries to Python logging while :func:`pycutensor.log.enable_logging` is on. It lives
below both ``_lib`` (which registers it when the library loads) and ``log`` (which switches the
forwarding), so that neither imports the other in a cycle.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any

from _nvbind.forwarding import forward_once
from _nvbind.interrupts import defer, watch_callbacks

from . import _bindings

__all__ = ["clear_last_error", "env_setting", "install", "record_error", "take_last_error"]

logger = logging.getLogger("pycutensor.cutensor")

# cuTENSOR levels: 1 errors, 2 performance trace, 3 performance hints, 4 heuristics trace, 5 API trace
_TO_LOGGING = {
    1: logging.ERROR,
    2: logging.DEBUG,
    3: logging.INFO,
    4: logging.DEBUG,
    5: logging.DEBUG,
}
ENV = ("CUTENSOR_LOG_LEVEL", "CUTENSOR_LOG_MASK", "CUTENSOR_LOG_FILE")

# "forward": send entries to Python logging; "env_controls_output": cuTENSOR's own variables are
# set, so its output and level are left as they say; "env_setting": the cuTENSOR call that sets
# the level or mask they asked for again, as (function, value) (see env_setting).
state: dict[str, Any] = {"forward": False, "env_controls_output": False, "env_setting": None}

# The last error line cuTENSOR logged on each thread.
_errors = threading.local()


def record_error(function: str, message: str) -> None:
    _errors.last = (function, message)


def take_last_error() -> str:
    last = getattr(_errors, "last", None)
    _errors.last = None
    if last is None:
        return ""
    function, message = last
    return f"{message} (logged by {function})" if function else message


def clear_last_error() -> None:
    _errors.last = None


def _on_message(level: int, function: bytes | None, message: bytes | None) -> None:
    try:
        fname = function.decode("utf-8", "replace") if function else ""
        text = message.decode("utf-8", "replace") if message else ""
        if level == 1:
            record_error(fname, text)
        if state["forward"]:  # a handler's own cuTENSOR calls are not forwarded (error kept)
            level_ = _TO_LOGGING.get(int(level), logging.DEBUG)
            forward_once(_errors, logger, level_, "[%s] %s", fname, text)
    except Exception:  # pragma: no cover - never let an exception cross back into C
        pass
    except BaseException as exc:  # Ctrl-C (or sys.exit) in here: ctypes would drop it
        defer(exc)  # raised again once cuTENSOR's call returns (see _nvbind.interrupts)


_CALLBACK = _bindings.cutensorLoggerCallback_t(_on_message)  # must outlive the registration


def install(function: Callable[[str], Any], check: Callable[[int, str], None]) -> None:
    """Register the callback (``function`` binds a C function of the loaded library); called once
    when the library loads. Unless cuTENSOR's own logging variables are set, its text output goes
    to ``/dev/null`` at level 1 (errors), which it would otherwise print to stdout."""
    watch_callbacks(_on_message)  # a Ctrl-C at its first instruction (see _nvbind.interrupts)
    check(function("cutensorLoggerSetCallback")(_CALLBACK), "cutensorLoggerSetCallback")
    if any(os.environ.get(v) for v in ENV):
        state["env_controls_output"] = True
        state["env_setting"] = env_setting()
        return
    check(function("cutensorLoggerOpenFile")(os.devnull.encode()), "cutensorLoggerOpenFile")
    check(function("cutensorLoggerSetLevel")(1), "cutensorLoggerSetLevel")


def _leading_int(text: str) -> int:
    """The number ``text`` starts with (``"5x"`` is 5, ``"x5"`` 0), as cuTENSOR reads it."""
    match = re.match(r"\s*([-+]?\d+)", text)
    return int(match.group(1)) if match else 0


def env_setting() -> tuple[str, int]:
    """What cuTENSOR's variables ask for, read as cuTENSOR reads them when it loads: a non-empty
    ``CUTENSOR_LOG_LEVEL`` wins (a level outside 0 to 5 logs nothing), else
    ``CUTENSOR_LOG_MASK``; neither: level 0, no log. As ``(function, value)``, the call that sets
    it again after :func:`pycutensor.log.enable_logging` changed it."""
    level = os.environ.get("CUTENSOR_LOG_LEVEL", "")
    if level:
        value = _leading_int(level)
        return "cutensorLoggerSetLevel", value if 0 <= value <= 5 else 0
    mask = os.environ.get("CUTENSOR_LOG_MASK", "")
    if mask:
        return "cutensorLoggerSetMask", max(-(2**31), min(_leading_int(mask), 2**31 - 1))
    return "cutensorLoggerSetLevel", 0
