"""Route cuDNN's own log into Python's ``logging`` (``logging.getLogger("pycudnn.cudnn")``).

Opt in with :func:`enable_logging`. It registers a callback with ``cudnnSetCallback``; cuDNN calls it
synchronously on the thread that made the API call, with a message of several NUL-separated lines
(ended by a double NUL) which is joined here into one record. While the callback is registered cuDNN
stops writing to ``CUDNN_LOGDEST_DBG``. :func:`disable_logging` hands logging back: when one of
cuDNN's logging environment variables is set it restores cuDNN's built-in callback with the
severities they ask for, after which they apply again (and :func:`capture` leaves them alone);
otherwise it keeps the callback registered with nothing forwarded, because an
unregistered cuDNN (``cudnnSetCallback(0, NULL, NULL)``) goes on to print every error to stderr.

:func:`capture` collects the records emitted on the current thread inside a ``with`` block, which is
how the graph API attaches cuDNN's explanation to a failed plan.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, cast

from _nvbind.forksafe import fork_safe_lock
from _nvbind.forwarding import forward_once
from _nvbind.interrupts import defer, raise_deferred, watch_callbacks
from _nvbind.shutdown import library_call

from . import _bindings
from ._lib import LIB, check

__all__ = [
    "LogRecord",
    "capture",
    "disable_logging",
    "enable_logging",
    "is_enabled",
]

logger = logging.getLogger("pycudnn.cudnn")

# cudnnSeverity_t -> logging level. INFO entries are written for every API call, so they go to DEBUG.
_SEVERITY = _bindings.cudnnSeverity_t
_LEVELS = {
    int(_SEVERITY.FATAL): logging.CRITICAL,
    int(_SEVERITY.ERROR): logging.ERROR,
    int(_SEVERITY.WARNING): logging.WARNING,
    int(_SEVERITY.INFO): logging.DEBUG,
}
_MAX_LINES = 4096  # guards against a malformed message without its double NUL


class LogRecord(tuple):  # type: ignore[type-arg,unused-ignore]
    """``(severity, status, message)`` of one cuDNN log entry, as collected by :func:`capture`."""

    __slots__ = ()

    def __new__(cls, severity: int, status: int, message: str) -> LogRecord:
        return super().__new__(cls, (severity, status, message))

    severity = property(lambda self: self[0])
    status = property(lambda self: self[1])
    message = property(lambda self: self[2])


@functools.cache
def _c_strlen() -> Callable[[int], int]:
    """libc's ``strlen``: one C call per line of a message, with no bytes object made per line
    (``ctypes.string_at`` per line took 0.17 ms for a 43 KB, 326-line message; this, 0.07 ms)."""
    try:
        libc = ctypes.CDLL(None) if os.name == "posix" else ctypes.cdll.msvcrt
        fn = libc.strlen
    except (OSError, AttributeError):  # pragma: no cover - every supported platform has it
        return lambda address: len(ctypes.string_at(address))
    fn.argtypes = [ctypes.c_void_p]  # a 64-bit address, never truncated to a C int
    fn.restype = ctypes.c_size_t
    return cast(Callable[[int], int], fn)


def _read_message(address: int | None) -> str:
    """cuDNN's message: NUL-ended lines, the last followed by an empty line. The lines' lengths
    are measured first (``strlen``), then the span they cover is copied once: nothing past the
    empty line is ever read."""
    if not address:
        return ""
    strlen = _c_strlen()
    end = address
    for _ in range(_MAX_LINES):
        n = strlen(end)
        if not n:
            break
        end += n + 1
    if end == address:
        return ""
    # The NULs between lines become newlines; one decode of the whole text gives what decoding
    # each line and joining them gave (a bad byte sequence cannot span a newline).
    text = ctypes.string_at(address, end - address - 1).replace(b"\0", b"\n")
    return text.decode("utf-8", "replace")


_state = threading.local()
_lock = fork_safe_lock(sys.modules[__name__], "_lock")
#: The registration's inputs and what cuDNN was last given: "level", enable_logging's (absent
#: while it is off); "now", the (mask, this library's callback or cuDNN's own) that
#: cudnnSetCallback last took, absent while unknown (a call in progress, interrupted or failed);
#: "touched", set once this library first registered anything (before that cuDNN is left as is).
_registered: dict[str, Any] = {}
#: The captures in progress, on every thread: ``id(sink)`` -> the severities it collects. What
#: is registered is derived from this and from "level" (see :func:`_sync`), never counted apart:
#: a capture begins or ends with one store or one removal here, which a Ctrl-C cannot split.
_live: dict[int, int] = {}


def _on_message(severity: int, _udata: Any, dbg: Any, msg: int | None) -> None:
    try:
        text = _read_message(msg)
        status = int(dbg.contents.cudnnStatus) if dbg else 0
        sinks = getattr(_state, "sinks", None)
        if sinks:
            record = LogRecord(int(severity), status, text)
            for sink in sinks.values():
                sink.append(record)
        if "level" in _registered:  # a handler's own cuDNN calls are not forwarded
            forward_once(_state, logger, _LEVELS.get(int(severity), logging.DEBUG), "%s", text)
    except Exception:  # pragma: no cover - never let an exception cross back into C
        pass
    except BaseException as exc:  # Ctrl-C (or sys.exit) in here: ctypes would drop it
        defer(exc)  # raised again once cuDNN's call returns (see _nvbind.interrupts)


_CALLBACK = _bindings.cudnnCallback_t(_on_message)  # module-level: must outlive registration


def _check_level(level: Any) -> int:
    # Checked before any state changes: a bad level used to leave capture()'s counters raised and
    # enable_logging()'s level stored, which broke every later capture on every thread.
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(
            f"level must be a logging level int (logging.DEBUG, logging.WARNING, ...), "
            f"got {type(level).__name__} {level!r}"
        )
    return level


def _mask_for(level: int) -> int:
    mask = _bindings.CUDNN_SEV_ERROR_EN
    if level <= logging.WARNING:
        mask |= _bindings.CUDNN_SEV_WARNING_EN
    if level <= logging.DEBUG:
        mask |= _bindings.CUDNN_SEV_INFO_EN
    return int(mask)


#: Every plan registers and releases the callback, on whichever thread plans: guarded as the
#: backend calls are, so that a fork waits for it (a thread inside cudnnSetCallback at the fork
#: would leave cuDNN's logging lock taken in the child, whose first plan would block on it).
_SET_CALLBACK_CALL = library_call("cudnnSetCallback")


def _set_callback(mask: int, callback: Any) -> None:
    status = _SET_CALLBACK_CALL.run(LIB.function("cudnnSetCallback"), mask, None, callback)
    check(status, "cudnnSetCallback")


# cuDNN's own logging switches (the legacy three still work in cuDNN 9).
_ENV = (
    "CUDNN_LOGLEVEL_DBG",
    "CUDNN_LOGDEST_DBG",
    "CUDNN_LOGERR_DBG",
    "CUDNN_LOGWARN_DBG",
    "CUDNN_LOGINFO_DBG",
)


@functools.cache  # read once, as cuDNN reads them: every plan asks (about 5 us a read)
def _env_mask() -> int:
    """The severities cuDNN's own logging variables ask for (0: none set): ``CUDNN_LOGLEVEL_DBG``
    1 errors, 2 and warnings, 3 and the per-call entries; the legacy switches one each."""
    sev = (
        _bindings.CUDNN_SEV_ERROR_EN,
        _bindings.CUDNN_SEV_WARNING_EN,
        _bindings.CUDNN_SEV_INFO_EN,
    )
    mask = 0
    text = os.environ.get("CUDNN_LOGLEVEL_DBG", "").strip()
    if text not in ("", "0"):
        try:
            level = int(text)
        except ValueError:
            level = 3  # cuDNN reads what it can of it: every severity rather than none
        mask |= sum(int(s) for s in sev[: min(level, 3)]) if level > 0 else sum(sev)
    for switch, s in zip(_ENV[2:], sev, strict=True):
        if os.environ.get(switch, "0").strip() not in ("", "0"):
            mask |= int(s)
    return mask


def _wanted() -> tuple[int, bool] | None:
    """What cuDNN should have registered now: ``(mask, True)`` for this library's callback,
    ``(mask, False)`` for cuDNN's built-in one; ``None`` while this library registered nothing."""
    captures = 0
    for mask in tuple(_live.values()):
        captures |= mask
    level = _registered.get("level")
    if level is not None:
        return _mask_for(level) | captures, True
    if captures:
        return captures | _mask_for(logging.ERROR), True
    if "now" not in _registered and not _registered.get("touched"):
        return None
    env_mask = _env_mask()
    if env_mask:
        # The user configured cuDNN's own logging: its built-in callback (a NULL function) writes
        # to CUDNN_LOGDEST_DBG again, for the severities the variables ask for. A mask of 0 would
        # leave it registered and silent: the user's log stayed empty.
        return env_mask, False
    # Unregistering would make cuDNN print every error record to stderr from then on (its
    # default destination); a silent callback keeps the library quiet, as it was at start.
    return _mask_for(logging.ERROR), True


def _sync() -> None:
    """Give cuDNN the registration that :func:`_wanted` asks for, when it has another.

    Run again after it was interrupted, it finishes the work: "now" is unknown from before the
    call until cuDNN has answered, so the next run makes the call again.

    ``cudnnSetCallback`` logs an entry of its own (at DEBUG), on this thread, while the lock is
    held: a logging handler that enabled, disabled or captured cuDNN's log (or built a plan, which
    captures) waited for the lock its own thread held, forever. So nothing is forwarded to
    ``logging`` from this thread meanwhile (:func:`capture` still collects), and the library is
    loaded first, out of the lock: its load is logged."""
    want = _wanted()
    if want is None or want == _registered.get("now"):
        # Nothing to do. A sync in progress on another thread takes "now" out before it reads
        # what is wanted: a change made before this check is either read by it or already done.
        return
    LIB.function("cudnnSetCallback")
    forwarding = getattr(_state, "forwarding", False)
    with _lock:
        _state.forwarding = True
        try:
            known = _registered.pop("now", None)
            want = _wanted()
            if want is not None:
                if want != known:
                    _registered["touched"] = True
                    if want[1]:  # a Ctrl-C at its first instruction (see _nvbind.interrupts)
                        watch_callbacks(_on_message)
                    _set_callback(want[0], _CALLBACK if want[1] else None)
                _registered["now"] = want
        finally:
            _state.forwarding = forwarding


def _end(sinks: dict[int, list[LogRecord]], key: int) -> None:
    """End the capture ``key`` on this thread (``sinks``): whatever of it was begun; safe to run
    again."""
    sinks.pop(key, None)
    _live.pop(key, None)
    _sync()


def enable_logging(level: int = logging.WARNING) -> None:
    """Forward cuDNN's log entries at ``level`` and above to ``logging.getLogger("pycudnn.cudnn")``.

    Wraps ``cudnnSetCallback``. ``logging.DEBUG`` includes cuDNN's per-call INFO entries.
    """
    _check_level(level)
    LIB.function("cudnnSetCallback")  # a missing library: raised before anything changes
    previous = _registered.get("level")
    try:
        _registered["level"] = level
        _registered.pop("now", None)  # made again: a raw cudnnSetCallback may have replaced it
        _sync()
    except Exception:  # cuDNN refused the registration: the level stays as it was
        if previous is None:
            _registered.pop("level", None)
        else:
            _registered["level"] = previous
        raise
    except BaseException:  # a Ctrl-C in the middle: the registration is finished, then it raises
        _sync()
        raise


def disable_logging() -> None:
    """Stop forwarding cuDNN's log (see the module docstring for what happens to the callback)."""
    try:
        _registered.pop("level", None)
        _registered.pop("now", None)  # as in enable_logging
        _sync()
    except BaseException:  # as in enable_logging
        _sync()
        raise


def is_enabled() -> bool:
    return "level" in _registered


@contextlib.contextmanager
def capture(level: int = logging.WARNING) -> Iterator[list[LogRecord]]:
    """Collect the cuDNN log entries this thread produces inside the block.

    Registers the callback for the duration when logging is not enabled, without forwarding those
    entries to ``logging`` unless :func:`enable_logging` is on. When cuDNN's own logging variables
    are set (``CUDNN_LOGLEVEL_DBG``, ...) and :func:`enable_logging` is off, nothing is collected:
    the entries stay in cuDNN's own log, where the user asked for them.
    """
    mask = _mask_for(_check_level(level))
    sink: list[LogRecord] = []
    if "level" not in _registered and _env_mask():
        # cuDNN's own logging variables are set and enable_logging() is off: cuDNN's built-in
        # callback writes every entry where they say, the planning's included, which a callback
        # registered here would take from the user's log. Nothing is collected.
        yield sink
        return
    sinks = getattr(_state, "sinks", None)
    if sinks is None:
        sinks = _state.sinks = {}
    # Keyed by identity: an enclosing capture's sink can be equal to this one (two empty lists).
    key = id(sink)
    try:
        # Python handles a signal at a call (after it, or as a function starts), never inside
        # a store: a Ctrl-C lands before these two stores, between them or after, and the
        # finally undoes whichever were made. They used to be counted before the try, and
        # uncounted in several steps: a Ctrl-C between two left a capture counted for good
        # (cuDNN kept its severities, disable_logging() no longer handed the log back).
        sinks[key] = sink
        _live[key] = mask
        _sync()  # e.g. cuDNN missing: the finally leaves no capture behind
        yield sink
    finally:
        # Nothing here before the try is entered; a Ctrl-C that lands in _end (at a call inside
        # it) is raised once _end, run again, has finished. A Ctrl-C that skips the context
        # manager's __exit__ (as it starts) leaves the generator suspended: closing it, when
        # it is collected, runs this.
        try:
            _end(sinks, key)
        except BaseException:
            _end(sinks, key)
            raise
        raise_deferred()  # a Ctrl-C in the callback during a call no status check followed
