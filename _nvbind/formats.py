"""The one door from the runtime to layouts named by a format string (``NCHW``, ``NC/32HW32``).

Format strings are cuDNN's vocabulary and :mod:`pycudnn.layout` owns them; the runtime offers
``DeviceArray.empty(shape, dtype, fmt=...)`` to both packages all the same. So that this package
imports neither ``pycudnn`` nor ``pycutensor`` (``pycutensor`` must not pay for cuDNN's modules),
``from .formats import layout`` resolves the owning module only when a ``fmt`` is given, through
the module ``__getattr__`` below (PEP 562). :mod:`pycudnn.layout` loads no shared library.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__: list[str] = []

#: The module that parses format strings and gives their packed strides.
LAYOUT_MODULE = "pycudnn.layout"


def __getattr__(name: str) -> ModuleType:
    if name == "layout":
        return importlib.import_module(LAYOUT_MODULE)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
