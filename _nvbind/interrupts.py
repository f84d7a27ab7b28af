"""Ctrl-C (and ``sys.exit``) raised inside a callback from C, raised again once the C call returns.

cuDNN and cuTENSOR call this library's log callbacks from inside their API calls, on the calling
thread. A SIGINT that arrives meanwhile makes Python raise ``KeyboardInterrupt`` in the callback's
frame, and ctypes cannot pass an exception back through C: it prints "Exception ignored on calling
ctypes callback function" and drops it, so the Ctrl-C was lost and a long build went on (one ran
110 s after its only SIGINT). The callbacks hand such exceptions to :func:`defer`, and the code
after each C call (the libraries' status checks, the exit guard's call wrapper, the log capture)
calls :func:`raise_deferred`, which raises it on the thread it was deferred on.

A signal can also be handled at the callback's very first instruction, before its ``try`` is
entered; ctypes then reports the exception through ``sys.unraisablehook``. So can one handled in a
``weakref.finalize`` callback outside its own ``try``: the release functions of this library's C
objects catch and defer what lands inside them, but not what lands in the finalizer's machinery
around them, which the collector runs wherever it happens to collect.
:func:`watch_callbacks` chains a hook in front of the current one that defers a
``KeyboardInterrupt`` or ``SystemExit`` from the named callbacks or from any finalizer (dropped
otherwise, whoever's finalizer it was) and hands everything else on unchanged.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["defer", "raise_deferred", "watch_callbacks"]


class _Pending(threading.local):
    # A class default: a thread with nothing deferred finds None without a failed lookup
    # (getattr with a default took 0.4 us, after every library call).
    pending: BaseException | None = None


_local = _Pending()


def defer(exc: BaseException) -> None:
    """Keep ``exc`` (raised in a callback from C, which cannot propagate it) for this thread."""
    if _local.pending is None:  # the first one wins: a second Ctrl-C repeats it
        _local.pending = exc


def raise_deferred() -> None:
    """Raise the exception a callback deferred on this thread, if any (once)."""
    exc = _local.pending
    if exc is not None:
        _local.pending = None
        raise exc


_watched: set[Any] = set()  # the Python functions behind this library's C callbacks


def _hook(unraisable: Any) -> None:
    source = unraisable.object
    if (isinstance(source, weakref.finalize) or source in _watched) and isinstance(
        unraisable.exc_value, (KeyboardInterrupt, SystemExit)
    ):
        defer(unraisable.exc_value)
        return
    _hook.previous(unraisable)  # type: ignore[attr-defined]


def watch_callbacks(*callbacks: Callable[..., Any]) -> None:
    """Defer what ``callbacks`` (Python functions registered with C) lose to ctypes on entry;
    called whenever they are registered, so that a hook installed since is chained, not lost."""
    _watched.update(callbacks)
    if sys.unraisablehook is not _hook:
        _hook.previous = sys.unraisablehook  # type: ignore[attr-defined]
        sys.unraisablehook = _hook
