"""Creating and destroying backend descriptors (``cudnnBackendCreateDescriptor``,
``cudnnBackendDestroyDescriptor``), one or a batch at a time.

A heuristics read hands back one ENGINECFG per config (about 40 for a convolution), a knob read
one KNOB_CHOICE per slot: descriptors created together for one ``cudnnBackendGetAttribute``; a
graph's lowering makes its tensors, operations and operation graph, which live and die together
(each points at the ones before it). Giving each its own ``weakref.finalize`` and its own library
call to destroy it cost about 4.5 µs of Python per descriptor against 1.1 µs of C. A
:class:`DescriptorBatch` owns such a group: one finalizer destroys every C object of the group,
newest first, in one library call, once no member refers to it (each member holds the batch), so
none is destroyed while a member can still be used.
"""

from __future__ import annotations

import ctypes
import logging
import weakref
from typing import Any

from _nvbind.interrupts import defer
from _nvbind.shutdown import InterpreterExitingError, library_call

from ._attrnames import check_supported, descriptor_type, descriptor_type_name
from ._attrspec import descriptor_needs, keep_descriptor_type
from ._lib import LIB, last_error_string
from .errors import error_from_status

__all__ = ["DescriptorBatch", "destroy_descriptor", "destroy_descriptors"]


_CREATE_CALL = library_call("cudnnBackendCreateDescriptor")
_DESTROY_CALL = library_call("cudnnBackendDestroyDescriptor")


def _raise_for(status: int, function: str, context: str) -> None:
    # Callers test the status first: the context text is only worth building for an error.
    if status:
        detail = last_error_string()
        message = f"{context}: {detail}" if detail else context
        raise error_from_status(status, function, message)


def _checked_type(kind: Any) -> Any:
    """The descriptor type ``kind`` names, refused when newer than the loaded cuDNN."""
    known = descriptor_needs(kind)  # this spelling checked before, and still supported
    if known is not None:
        return known[0]
    dtype = descriptor_type(kind)
    check_supported(kind=dtype)  # a type newer than the loaded cuDNN: refused, naming both
    keep_descriptor_type(kind, dtype)
    return dtype


def _create(dtype: Any, n: int) -> list[int]:
    """``cudnnBackendCreateDescriptor`` ``n`` times, inside one library call: a heuristics read
    needs one ENGINECFG per config it returns (about 40 for a convolution). On a failure the
    ones made are destroyed and the error is raised."""
    create = LIB.unconverted_function("cudnnBackendCreateDescriptor")  # takes an int and byref
    out = ctypes.c_void_p()
    ptrs: list[int] = []
    try:
        status = _CREATE_CALL.run(_create_into, ptrs, create, int(dtype), out, n)
        if status:
            _raise_for(
                status, "cudnnBackendCreateDescriptor", f"creating a {descriptor_type_name(dtype)}"
            )
    except BaseException:
        destroy_descriptors(ptrs)
        raise
    return ptrs


def _create_into(ptrs: list[int], create: Any, kind: int, out: ctypes.c_void_p, n: int) -> int:
    # _create's loop, as one library call: appends each descriptor made to ``ptrs``; the status
    # that stopped it (0: all ``n`` made).
    address = ctypes.byref(out)  # the same for every call
    for _ in range(n):
        status = int(create(kind, address))
        if status:
            return status
        ptrs.append(out.value or 0)
    return 0


def _create_one(dtype: Any) -> int:
    """``cudnnBackendCreateDescriptor`` once (a lowering's next descriptor): :func:`_create` of
    one, without its loop."""
    out = ctypes.c_void_p()
    create = LIB.unconverted_function("cudnnBackendCreateDescriptor")  # takes an int and byref
    status = _CREATE_CALL.run(create, int(dtype), ctypes.byref(out))
    if status:
        _raise_for(
            status, "cudnnBackendCreateDescriptor", f"creating a {descriptor_type_name(dtype)}"
        )
    return out.value or 0


def destroy_descriptors(ptrs: list[int]) -> None:
    """``cudnnBackendDestroyDescriptor`` on each pointer of ``ptrs``, inside one library call.

    At interpreter exit (a daemon thread's objects) nothing is destroyed: the process is ending
    and the library unloading."""
    if not ptrs:
        return
    try:
        _DESTROY_CALL.run(_destroy_each, LIB.function("cudnnBackendDestroyDescriptor"), ptrs)
    except InterpreterExitingError:
        pass


def _destroy_each(destroy: Any, ptrs: list[int]) -> None:
    for ptr in ptrs:
        destroy(ptr)


def destroy_descriptor(ptr: int) -> None:
    """``cudnnBackendDestroyDescriptor`` on one pointer (see :func:`destroy_descriptors`)."""
    destroy_descriptors([ptr])


def _release_batch(ptrs: list[int], parents: tuple[Any, ...]) -> None:
    # A finalizer: never raises (see _nvbind.resource._release); the parents, held until now,
    # outlive the group's C objects.
    del parents
    try:
        destroy_descriptors(ptrs[::-1])  # newest first: what points at a member goes before it
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

    def add(self, ptr: int) -> None:
        """Own one more C object, created after the others (a lowering's next descriptor)."""
        self._ptrs.append(ptr)

    def destroy_now(self) -> None:
        """Destroy every C object of the batch now, newest first, in one library call (a
        lowering that failed: its members are closed and nothing else refers to them)."""
        ptrs = self._ptrs[::-1]
        self._ptrs.clear()  # the finalizer's list too: it has nothing left to destroy
        destroy_descriptors(ptrs)

    def release_unused(self, ptrs: list[int]) -> None:
        """Destroy now, in one library call, members never handed out (cuDNN filled fewer
        descriptors than it was given): nothing refers to them."""
        gone = set(ptrs)
        self._ptrs[:] = [p for p in self._ptrs if p not in gone]
        destroy_descriptors(ptrs)
