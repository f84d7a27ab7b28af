"""PEP 562 lazy attributes, so that ``import pycudnn`` / ``import pycutensor`` stay cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, overload

__all__ = ["cached_attribute", "lazy_module_attributes"]


def lazy_module_attributes(
    package: str, namespace: dict[str, Any], lazy: Mapping[str, str], submodules: set[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    ``lazy`` maps a public name to the module that defines it (relative to ``package`` when it
    starts with a dot); the first access imports that module and caches the value in ``namespace``.
    ``submodules`` are imported on attribute access too.
    """

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is not None:
            anchor = package if module.startswith(".") else None
            value = getattr(importlib.import_module(module, anchor), name)
            namespace[name] = value
            return value
        if name in submodules:
            return importlib.import_module(f".{name}", package)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy) | submodules)

    return __getattr__, __dir__


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
