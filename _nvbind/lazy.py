"""PEP 562 lazy attributes, so that ``import pycudnn`` / ``import pycutensor`` stay cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_module_attributes"]


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
