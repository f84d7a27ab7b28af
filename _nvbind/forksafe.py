"""Locks that a child process made by ``os.fork()`` gets back unheld.

``fork()`` copies a lock in whatever state it was in, but only the forking thread: a lock another
thread held at that moment (planning, loading the library, probing the driver) stays held in the
child forever, and the child's first call that takes it blocks without end. multiprocessing forks
by default on Linux before Python 3.14, so this happens to ordinary programs. Every lock of both
packages is made by :func:`fork_safe_lock`, which replaces it with a fresh one in the child
(``os.register_at_fork``), as CPython's ``logging`` does for its own locks.

Replacing is safe because the child has one thread: nobody in it can be inside the code the old
lock guarded. The data the lock guarded may be half-updated by a thread that no longer exists; the
structures guarded here are caches and counters whose every update is a single step under the GIL.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["fork_safe_lock"]

# (id(owner), attribute) -> (weak reference to the owner, lock factory). Weak: an owner that dies
# drops out; a module (its locks are module globals) lives as long as the process.
_owners: dict[tuple[int, str], tuple[weakref.ref[Any], Callable[[], Any]]] = {}


def fork_safe_lock(owner: Any, attr: str, factory: Callable[[], Any] = threading.Lock) -> Any:
    """A new ``factory()`` lock for ``owner.attr`` (an object's attribute, or a module global with
    the module as ``owner``), replaced by a fresh one in the child after every ``os.fork()``."""
    key = (id(owner), attr)

    def forget(_ref: weakref.ref[Any]) -> None:
        _owners.pop(key, None)

    _owners[key] = (weakref.ref(owner, forget), factory)
    return factory()


def _renew_in_child() -> None:
    for (_, attr), (ref, factory) in list(_owners.items()):
        owner = ref()
        if owner is not None:
            setattr(owner, attr, factory())


os.register_at_fork(after_in_child=_renew_in_child)
