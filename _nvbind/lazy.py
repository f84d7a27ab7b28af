"""PEP 562 lazy attributes, so that ``import pycudnn`` / ``import pycutensor`` stay cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any, Generic, TypeVar, overload

__all__ = ["Exports", "cached_attribute", "lazy_exports"]


#: What a module's ``__all__``, ``__getattr__`` and ``__dir__`` are (see :func:`lazy_exports`).
Exports = tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]

# Bound in every module that uses this one and never public.
_NEVER_PUBLIC = frozenset({"annotations", "TYPE_CHECKING"})


def lazy_exports(
    package: str,
    namespace: dict[str, Any],
    lazy: Mapping[str, str],
    submodules: Iterable[str] = (),
) -> Exports:
    """``__all__``, ``__getattr__`` and ``__dir__`` for ``package`` (PEP 562), from one table.

    ``lazy`` maps a module (relative to ``package`` when it starts with a dot) to the public names
    it defines, separated by spaces (as :func:`collections.namedtuple` takes fields): the first access to one imports that module and caches the value in
    ``namespace``, so that importing ``package`` imports none of them. ``submodules`` are imported
    on attribute access too. ``__all__`` is those names and every public name ``namespace`` binds
    when this is called (the eager imports), modules and ``annotations``/``TYPE_CHECKING`` left
    out, sorted: so a module imports its own helpers under private names. Type checkers see the
    lazy names through the package's ``if TYPE_CHECKING:`` re-exports (``import X as X``).
    """
    by_name = {name: module for module, names in lazy.items() for name in names.split()}
    subs = set(submodules)

    def __getattr__(name: str) -> Any:
        module = by_name.get(name)
        if module is not None:
            anchor = package if module.startswith(".") else None
            value = getattr(importlib.import_module(module, anchor), name)
            namespace[name] = value
            return value
        if name in subs:
            return importlib.import_module(f".{name}", package)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(by_name) | subs)

    eager = {
        name
        for name, value in namespace.items()
        if not name.startswith("_")
        and name not in _NEVER_PUBLIC
        and not isinstance(value, ModuleType)
    }
    return sorted(eager | set(by_name)), __getattr__, __dir__


T = TypeVar("T")


class cached_attribute(Generic[T]):
    """:func:`functools.cached_property` without its lock: computed on first access, then kept in
    the instance's ``__dict__``.

    Before Python 3.12 ``cached_property`` holds one lock per property, for every instance, while it
    computes; a thread inside one at an ``os.fork()`` leaves that lock held in the child forever,
    and the child's first access of the property on any instance blocks. Two threads racing on one
    instance both compute (the values are equal reads of one C object), which is harmless here.
    """

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> cached_attribute[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | cached_attribute[T]:
        if obj is None:
            return self
        value = self.func(obj)
        obj.__dict__[self.name] = value
        return value
