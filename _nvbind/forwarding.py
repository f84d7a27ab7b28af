"""Passing a library's log entries, received in a C callback, on to Python's ``logging``.

cuDNN and cuTENSOR call their log callbacks on the calling thread, from inside their API calls. A
``logging`` handler that calls the library itself (builds a plan, reads a version, changes the
log's settings) makes it log again, on the same thread, from inside the forwarding: forwarding
those too recursed until Python's limit, or without end where every call logs. Both packages
forward through :func:`forward_once`, which drops what arrives while the thread is already
forwarding (what a package collects for its own errors is collected before, unaffected).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

__all__ = ["forward_once"]


def forward_once(
    local: threading.local, logger: logging.Logger, level: int, fmt: str, *args: Any
) -> None:
    """``logger.log(level, fmt, *args)``, unless this thread is already inside a forwarding
    (``local.forwarding``; a package may also set it while it must not forward, e.g. while it
    holds the lock its handlers' calls would take)."""
    if getattr(local, "forwarding", False):
        return
    local.forwarding = True
    try:
        logger.log(level, fmt, *args)
    finally:
        local.forwarding = False
