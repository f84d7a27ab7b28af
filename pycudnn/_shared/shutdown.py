"""Long library calls and interpreter exit: no thread may be inside one when the process ends.

A daemon thread still building plans when the main thread returns used to crash the process at
exit (SIGSEGV or SIGABRT in two of three runs, cuDNN 9.28): the library's static destructors, and
NVRTC's, ran while that thread was inside ``cudnnBackendFinalize`` or the heuristics, with the GIL
released. Calls that can take long are made inside :func:`long_call`; at exit, before the
finalizers of this library's objects run, new ones are refused and those in progress are waited
for (up to :data:`EXIT_WAIT_S` seconds). A daemon thread then stops at its next long call with
:class:`InterpreterExitingError` instead of being inside the library when it unloads.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["EXIT_WAIT_S", "InterpreterExitingError", "long_call"]

#: How long exit waits for long calls in progress (a plan with runtime-compiled kernels takes
#: about two seconds on a CPU).
EXIT_WAIT_S = 30.0


class _State:
    idle = threading.Condition()  # guards the three below; notified when none is in progress
    in_progress = 0
    exiting = False
    registered = False


class InterpreterExitingError(RuntimeError):
    """A long library call was started while the interpreter is exiting."""


@contextmanager
def long_call(what: str) -> Iterator[None]:
    """Run a library call that may take long (``what`` names it for the error) so that exit
    waits for it, and refuse it once the interpreter is exiting."""
    state = _State
    with state.idle:
        if state.exiting:
            raise InterpreterExitingError(
                f"{what}: the interpreter is exiting, and the library must not be entered while "
                "it unloads (a daemon thread outlived the main thread); join worker threads "
                "before the program ends"
            )
        if not state.registered:
            # Registered at the first long call, after weakref.finalize's own exit hook (the
            # descriptors the call uses exist by then): exit hooks run last-registered first, so
            # this one waits before any of this library's objects is destroyed.
            atexit.register(_wait_for_long_calls)
            state.registered = True
        state.in_progress += 1
    try:
        yield
    finally:
        with state.idle:
            state.in_progress -= 1
            if not state.in_progress:
                state.idle.notify_all()


def _wait_for_long_calls() -> None:
    with _State.idle:
        _State.exiting = True
        _State.idle.wait_for(lambda: _State.in_progress == 0, timeout=EXIT_WAIT_S)
