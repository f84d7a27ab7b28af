"""Destroying backend descriptors (``cudnnBackendDestroyDescriptor``), one or a batch at a time.

A heuristics read hands back one ENGINECFG per config (about 40 for a convolution), a knob read
one KNOB_CHOICE per slot: descriptors created together for one ``cudnnBackendGetAttribute``.
Giving each its own ``weakref.finalize`` and its own library call to destroy it cost about 4.5 µs
of Python per descriptor against 1.1 µs of C. A :class:`DescriptorBatch` owns such a group: one
finalizer destroys every C object of the group, in one library call, once no member refers to it
(each member holds the batch), so none is destroyed while a member can still be used.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from _nvbind.interrupts import defer
from _nvbind.shutdown import InterpreterExitingError, library_call

from ._lib import LIB

__all__ = ["DescriptorBatch", "destroy_descriptor", "destroy_descriptors"]


_DESTROY_CALL = library_call("cudnnBackendDestroyDescriptor")


def destroy_descriptors(ptrs: list[int]) -> None:
    """``cudnnBackendDestroyDescriptor`` on each pointer of ``ptrs``, inside one library call.

    At interpreter exit (a daemon thread's objects) nothing is destroyed: the process is ending
    and the library unloading."""
    if not ptrs:
        return
    try:
        with _DESTROY_CALL:
            destroy = LIB.function("cudnnBackendDestroyDescriptor")
            for ptr in ptrs:
                destroy(ptr)
    except InterpreterExitingError:
        pass


def destroy_descriptor(ptr: int) -> None:
    """``cudnnBackendDestroyDescriptor`` on one pointer (see :func:`destroy_descriptors`)."""
    destroy_descriptors([ptr])


def _release_batch(ptrs: list[int], parents: tuple[Any, ...]) -> None:
    # A finalizer: never raises (see _nvbind.resource._release); the parents, held until now,
    # outlive the group's C objects.
    del parents
    try:
        destroy_descriptors(ptrs)
    except (KeyboardInterrupt, SystemExit) as exc:  # kept for the next call (_nvbind.resource)
        defer(exc)
    except Exception as exc:  # pragma: no cover - depends on the library's state at shutdown
        logging.getLogger("pycudnn").warning("releasing %d descriptors failed: %s", len(ptrs), exc)


class DescriptorBatch:
    """The owner of descriptors created together: their C objects are destroyed together once
    the batch is unreferenced (its members refer to it). ``parents`` outlive them."""

    __slots__ = ("__weakref__", "_ptrs")

    def __init__(self, ptrs: list[int], parents: tuple[Any, ...] = ()) -> None:
        self._ptrs = list(ptrs)
        weakref.finalize(self, _release_batch, self._ptrs, tuple(parents))

    def release_unused(self, ptrs: list[int]) -> None:
        """Destroy now, in one library call, members never handed out (cuDNN filled fewer
        descriptors than it was given): nothing refers to them."""
        gone = set(ptrs)
        self._ptrs[:] = [p for p in self._ptrs if p not in gone]
        destroy_descriptors(ptrs)
