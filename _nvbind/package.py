"""What the two packages' ``__init__`` modules share: the public names each takes from a module of
the same name (``version`` from ``._info``, ``Handle`` from ``.handle``, ...), ``DeviceArray``
from the runtime, and the logger both packages leave silent until asked."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from .lazy import Exports, lazy_exports

__all__ = ["LIBRARY_FACE", "package_face"]

#: Module (relative to the package, or absolute) -> the public names it defines (separated by
#: spaces), alike in both.
LIBRARY_FACE: Mapping[str, str] = {
    "._info": "version version_tuple library_path header_version",
    ".log": "enable_logging disable_logging",
    ".handle": "Handle get_handle",
    "_nvbind.device_array": "DeviceArray",
}


def package_face(
    package: str,
    namespace: dict[str, Any],
    lazy: Mapping[str, str],
    submodules: Iterable[str],
) -> Exports:
    """``__all__``, ``__getattr__`` and ``__dir__`` of a library package (:func:`.lazy_exports`):
    :data:`LIBRARY_FACE` and ``lazy`` imported on first access (PEP 562), so that importing the
    package stays cheap. The package's logger gets a ``NullHandler`` (a library logs nothing unless
    the application configures it)."""
    logging.getLogger(package).addHandler(logging.NullHandler())
    return lazy_exports(package, namespace, {**LIBRARY_FACE, **lazy}, submodules)
