"""What the two packages' ``__init__`` modules share: the public names each takes from a module of
the same name (``version`` from ``._info``, ``Handle`` from ``.handle``, ...), ``DeviceArray``
from the runtime, and the logger both packages leave silent until asked."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from .lazy import lazy_module_attributes

__all__ = ["LIBRARY_FACE", "package_face"]

#: Public name -> the module (relative to the package, or absolute) that defines it, alike in both.
LIBRARY_FACE: Mapping[str, str] = {
    "version": "._info",
    "version_tuple": "._info",
    "library_path": "._info",
    "header_version": "._info",
    "enable_logging": ".log",
    "disable_logging": ".log",
    "Handle": ".handle",
    "get_handle": ".handle",
    "DeviceArray": "_nvbind.device_array",
}


def package_face(
    package: str, namespace: dict[str, Any], lazy: Mapping[str, str], submodules: set[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` of a library package: :data:`LIBRARY_FACE` and ``lazy``
    imported on first access (PEP 562), so that importing the package stays cheap. The package's
    logger gets a ``NullHandler`` (a library logs nothing unless the application configures it)."""
    logging.getLogger(package).addHandler(logging.NullHandler())
    return lazy_module_attributes(package, namespace, {**LIBRARY_FACE, **lazy}, submodules)
