"""Library calls and interpreter exit: no other thread may be inside the library when it unloads.

Daemon threads still planning when the main thread returned crashed the process at exit (eight
threads: SIGSEGV in six runs of six, cuDNN 9.28; one thread on the heuristics: one run in six on
9.28 and 9.19): the library's static destructors, and NVRTC's, ran while such a thread was inside
a cuDNN call with the GIL released. The backend descriptor calls are made inside
:func:`library_call`. At exit, before the finalizers of this library's objects run, other threads
are refused new calls and the calls in progress are waited for (up to :data:`EXIT_WAIT_S`
seconds); a daemon thread then stops at its next call with :class:`InterpreterExitingError`
instead of being inside the library when it unloads. The main thread, which runs the exit and the
finalizers, is never refused. ``os.fork()`` waits (new calls held back) until no other thread is
inside such a call, so that the child inherits no library lock held by a thread it does not have;
the child starts with no call in progress, and its exit does not wait for the parent's.

A :func:`library_call` made while the same thread is already inside one counts as part of it
(it costs about 0.3 µs instead of 1.8 µs): a whole sequence of C calls, the lowering of a graph
or a heuristics query, can then be made inside one, so that exit and fork wait for the sequence
rather than for each call, and each call of it pays only for the nesting. Such a sequence must
not wait for another thread that may itself be waiting to enter a call (a lock that thread holds):
a fork in progress holds new calls back until the sequence ends (for at most :data:`EXIT_WAIT_S`).
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .interrupts import raise_deferred

__all__ = [
    "EXIT_WAIT_S",
    "InterpreterExitingError",
    "exiting_elsewhere",
    "library_call",
]

#: How long exit waits for calls in progress (a plan with runtime-compiled kernels takes about two
#: seconds on a CPU).
EXIT_WAIT_S = 30.0


class _State:
    # Entered directly on the fast path (Condition's own methods are Python). Reentrant: a garbage
    # collection while a thread holds it (Condition.notify_all allocates) may run a finalizer that
    # destroys a descriptor, a library call of its own on the same thread.
    lock = threading.RLock()
    idle = threading.Condition(lock)  # guards the four below; notified when none is in progress
    in_progress = 0
    exiting = False
    registered = False
    forking = False  # a thread waits to fork: new calls wait until it has
    waiters = 0  # threads waiting for in_progress to reach 0 (exit, fork): notified only then


class _Depth(threading.local):
    depth = 0  # this thread's library calls in progress, nested ones included


_thread = _Depth()


class InterpreterExitingError(RuntimeError):
    """A thread other than the main one called the library while the interpreter is exiting."""


def exiting_elsewhere() -> bool:
    """Whether the interpreter is exiting and this is not the thread running the exit."""
    return _State.exiting and threading.current_thread() is not threading.main_thread()


class library_call:  # a function once; its callers are unchanged
    """Make a library call (``what`` names it for the error) that exit waits for; refused in
    threads other than the main one once the interpreter is exiting.

    A class rather than a ``@contextmanager`` generator: it is entered around every C call of
    the backend layer (about 250 per convolution plan), and the generator's machinery cost
    0.8 us of the 2.8 us each entry took. An instance holds nothing else, so one can be made
    once and entered again and again, by any thread. Entered on a thread already inside one, it
    only counts the nesting: the outermost call is the one exit and fork wait for. The library
    makes its calls with :meth:`run`: ``with`` leaves a window where a Ctrl-C skips ``__exit__``
    (Python runs signal handlers as a function starts)."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        local = _thread
        depth = local.depth
        if depth:  # inside a call on this thread already: never held back (it would wait on itself)
            local.depth = depth + 1
            return
        state = _State
        try:
            with state.lock:
                while state.forking:
                    state.idle.wait()
                if state.exiting and exiting_elsewhere():
                    raise InterpreterExitingError(
                        f"{self.what}: the interpreter is exiting, and the library must not be "
                        "entered while it unloads (a daemon thread outlived the main thread); "
                        "join worker threads before the program ends"
                    )
                if not state.registered:
                    # Exit hooks run last-registered first: weakref.finalize's own hook (which
                    # destroys this library's objects) is made to exist first, so that this one
                    # runs before it.
                    weakref.finalize(_State, _nothing)
                    atexit.register(_wait_for_calls)
                    state.registered = True
                state.in_progress += 1
                local.depth = 1
        except BaseException:
            # Python runs signal handlers at calls, the lock's release among them: a Ctrl-C
            # handled there, once this call was counted, left __enter__ failing and __exit__
            # never run. The count stayed raised for good (every later fork from another thread
            # waited EXIT_WAIT_S) and this thread's calls counted as nested in a call never ended.
            if local.depth:
                local.depth = 0
                _end_outer_call()
            raise

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` as this call. On a thread already inside one (a graph's lowering,
        say), only the C call and the deferred Ctrl-C check: no context manager to enter, about
        0.3 us less for each of the lowering's C calls."""
        local = _thread
        if local.depth:
            result = function(*args)
            raise_deferred()
            return result
        self.__enter__()
        try:
            return function(*args)
        finally:
            # __exit__'s work, inline: Python runs signal handlers as a function starts, and a
            # Ctrl-C handled as __exit__ started skipped it, leaving the call counted for good
            # (see __enter__). Code that needs several C calls as one passes a function here
            # rather than using ``with``, whose __exit__ has that window.
            local.depth = 0
            state = _State
            with state.lock:
                state.in_progress -= 1
                if state.waiters and state.in_progress <= 1:  # the waiter's own call may remain
                    state.idle.notify_all()
            raise_deferred()  # a Ctrl-C that landed in a log callback during the call

    def __exit__(self, *exc: object) -> None:
        local = _thread
        depth = local.depth - 1
        local.depth = depth
        if not depth:
            _end_outer_call()
        raise_deferred()  # a Ctrl-C that landed in a log callback during the call


def _end_outer_call() -> None:
    # An outermost call ended (__exit__), or its __enter__ failed once it was counted. run() does
    # the same inline: a Python function's start is where a Ctrl-C is handled.
    state = _State
    with state.lock:
        state.in_progress -= 1
        if state.waiters and state.in_progress <= 1:  # the waiter's own call may remain
            state.idle.notify_all()


def _nothing() -> None:
    pass


def _wait_until_idle() -> None:
    # The caller holds the lock. A wait made from inside a call (a fork from a log handler, say)
    # waits for the other threads' calls, not for its own; bounded all the same. Counted in
    # ``waiters``, so that the calls ending meanwhile notify.
    state = _State
    own = 1 if _thread.depth else 0
    state.waiters += 1
    try:
        state.idle.wait_for(lambda: state.in_progress <= own, timeout=EXIT_WAIT_S)
    finally:
        state.waiters -= 1


def _wait_for_calls() -> None:
    with _State.idle:
        _State.exiting = True
        _wait_until_idle()


def _before_fork() -> None:
    # fork() copies only the forking thread: a thread inside cuDNN at that moment (its own locks,
    # NVRTC's) leaves the child blocked forever in its first call. So the fork waits, with new
    # calls held back, until no call is in progress, and keeps the lock through the fork.
    state = _State
    state.idle.acquire()
    state.forking = True
    _wait_until_idle()


def _after_fork_in_parent() -> None:
    _State.forking = False
    _State.idle.notify_all()
    _State.idle.release()


def _after_fork_in_child() -> None:
    # The child has only the forking thread: the calls the parent's other threads had in progress
    # never end there (exit used to wait EXIT_WAIT_S, 30 s, for them in every child).
    _State.lock = threading.RLock()
    _State.idle = threading.Condition(_State.lock)
    # A fork made from inside a call (a log handler's) continues that call in the child.
    _State.in_progress = 1 if _thread.depth else 0
    _State.waiters = 0
    _State.forking = False


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)
