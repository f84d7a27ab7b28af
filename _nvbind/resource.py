"""One owner per C object: the base class every wrapper of a cuDNN or cuTENSOR object builds on.

A :class:`CResource` holds one C pointer. ``close()`` releases it once (idempotent), ``with``
releases it on exit, and a ``weakref.finalize`` releases it when the object is collected. The
finalizer holds the *parents* (the handle, the descriptors an object points at) as arguments, so a
parent can never be destroyed before a child that depends on it, even inside a reference cycle, and
at interpreter exit finalizers run newest-first, children before parents.

Passing a closed object to a C function raises ``ValueError`` before C is reached: ctypes reads
``_as_parameter_``, which refuses once the object is closed.
"""

from __future__ import annotations

import ctypes
import logging
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .interrupts import defer, raise_deferred

__all__ = ["CResource", "Closable", "ClosedError"]


class ClosedError(ValueError):
    """An operation was attempted on a closed object."""


def _release(
    destroy: Callable[[int], Any], handle: int, what: str, parents: tuple[Any, ...]
) -> None:
    # Runs from close(), from garbage collection or at exit. Never raises: an exception here would
    # surface as an unraisable warning at best; a leak is better than a crash at shutdown.
    del parents  # kept alive until now so they outlive the child
    try:
        destroy(handle)
    except (KeyboardInterrupt, SystemExit) as exc:
        # A Ctrl-C that landed here, or that a log callback deferred during the call: from
        # garbage collection the finalizer machinery would print it and drop it. Deferred again,
        # it is raised by close() or after the thread's next library call.
        defer(exc)
    except Exception as exc:  # pragma: no cover - depends on driver state at shutdown
        logging.getLogger(__name__.split(".")[0]).warning("releasing %s failed: %s", what, exc)


_C = TypeVar("_C", bound="Closable")


class Closable:
    """``with obj:`` returns ``obj`` and closes it on leaving, for an object whose resources
    :meth:`close` releases (a :class:`CResource` also refuses to enter once closed)."""

    __slots__ = ()

    def close(self) -> None:
        """Release what the object holds (the subclass says what)."""
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CResource:
    """Owner of one C object.

    Subclasses call ``super().__init__(pointer, destroy, parents=...)`` once the C object exists,
    where ``destroy`` takes the raw pointer (an int). ``owned=False`` wraps a pointer that something
    else releases (it is never destroyed here).
    """

    _kind = "object"

    def __init__(
        self,
        pointer: int,
        destroy: Callable[[int], Any] | None,
        *,
        parents: Iterable[Any] = (),
        owned: bool = True,
    ) -> None:
        if not pointer:
            raise ValueError(f"cannot wrap a NULL {self._kind}")
        if not 0 < int(pointer) < 2**64:  # ctypes would mask it into some other address
            raise ValueError(f"{pointer!r} is not an address, so cannot be a {self._kind}")
        self._ptr: int | None = int(pointer)
        self._c_ptr = ctypes.c_void_p(pointer)
        self._parents = tuple(parents)
        self._finalizer: weakref.finalize[..., CResource] | None = None
        if owned and destroy is not None:
            self._finalizer = weakref.finalize(
                self, _release, destroy, int(pointer), f"{self._kind} 0x{pointer:x}", self._parents
            )

    # -- state -----------------------------------------------------------------------------
    @property
    def ptr(self) -> int:
        """The raw C pointer as an int; raises ``ClosedError`` once closed."""
        ptr = self._ptr
        if ptr is None:
            raise ClosedError(f"this {self._kind} is closed")
        return ptr

    @property
    def _as_parameter_(self) -> ctypes.c_void_p:
        if self._ptr is None:
            raise ClosedError(f"this {self._kind} is closed")
        return self._c_ptr

    @property
    def closed(self) -> bool:
        """True once :meth:`close` destroyed the C object (or it was never made)."""
        return self._ptr is None

    is_closed = closed

    def _check_open(self) -> None:
        if self._ptr is None:
            raise ClosedError(f"this {self._kind} is closed")

    def close(self) -> None:
        """Release the C object now. Calling it again does nothing."""
        if self._ptr is None:
            return
        self._ptr = None
        finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()
        self._parents = ()
        raise_deferred()  # a Ctrl-C during the release (see _release)

    # A copy (or a pickle round trip) would be a second owner of the same C pointer: closing one
    # would leave the other pointing at freed memory, a use after free inside the library.
    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(f"a {self._kind} owns a C object and cannot be copied or pickled")

    def __copy__(self) -> Any:
        return self.__reduce_ex__(4)  # raises, with the subclass's own message if it has one

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__reduce_ex__(4)

    def __enter__(self) -> Any:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else f"0x{self._ptr:x}"
        return f"<{type(self).__module__}.{type(self).__qualname__} {state}>"
