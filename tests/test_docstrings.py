"""Every public callable has a docstring: the names both packages export, and the public methods
and properties of the exported classes (a class's own ``__init__`` is documented by the class)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

PACKAGES = ("pycudnn", "pycutensor")
# Submodules whose names are part of the contract (DESIGN: public names), besides the packages.
MODULES = (
    "pycudnn.layout",
    "pycudnn.plan",
    "pycudnn.graph",
    "pycudnn.backend",
    "pycudnn.deviceprops",
    "pycudnn.known_bad",
    "pycutensor.plan",
    "pycutensor.operation",
)


def _own_doc(obj: Any) -> str | None:
    doc = getattr(obj, "__doc__", None)
    return doc.strip() if isinstance(doc, str) and doc.strip() else None


def _public_members(cls: type) -> Iterator[tuple[str, Any]]:
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property) or inspect.isfunction(value):
            yield name, value


def _undocumented() -> list[str]:
    missing: list[str] = []
    seen: set[int] = set()
    for modname in PACKAGES + MODULES:
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants, enums' values and re-exports counted once
            seen.add(id(obj))
            if _own_doc(obj) is None:
                missing.append(f"{modname}.{name}")
            if inspect.isclass(obj):
                for cls in obj.__mro__:
                    if cls is object or not cls.__module__.startswith(PACKAGES):
                        continue
                    for member, value in _public_members(cls):
                        if id(value) in seen:
                            continue
                        seen.add(id(value))
                        if _own_doc(value) is None:
                            missing.append(f"{cls.__module__}.{cls.__qualname__}.{member}")
    return missing


def test_every_public_callable_has_a_docstring() -> None:
    missing = _undocumented()
    assert not missing, f"{len(missing)} public callables without a docstring:\n" + "\n".join(
        missing
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_the_packages_export_only_names_that_exist(package: str) -> None:
    module = importlib.import_module(package)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []
