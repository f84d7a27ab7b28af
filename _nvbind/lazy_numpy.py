"""NumPy, imported on first use: the one place the packages import it lazily.

A process that only describes a graph and plans it (a CI job planning for another GPU) never
touches an array, and importing NumPy is most of what such a process would otherwise spend in
Python before its first plan (about 75 ms of 350 on a small machine). Modules that use NumPy bind
``np`` from here instead of ``import numpy as np``: the first attribute read (``np.ndarray``,
``np.dtype(...)``) imports NumPy and copies its namespace in, so that later reads are plain
module attribute reads, as fast as NumPy's own. Type checkers see NumPy itself.

:func:`numpy_types` answers ``isinstance`` checks without importing it: while NumPy is not
imported, no value can be one of its types.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__all__ = ["np", "numpy_loaded", "numpy_types"]


class _OnUse(types.ModuleType):
    """A stand-in for a module that imports it on the first attribute read."""

    def __getattr__(self, attr: str) -> Any:
        # Only attributes the stand-in lacks arrive here: after the first, none of NumPy's.
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


if TYPE_CHECKING:
    import numpy as np
else:
    np = _OnUse("numpy")


def numpy_loaded() -> bool:
    """True once NumPy is imported (by anything: the user, or a module reading ``np``)."""
    return "numpy" in sys.modules


def numpy_types(*names: str) -> tuple[type[Any], ...]:
    """NumPy's types of these names (``"ndarray"``, ``"generic"``) for an ``isinstance`` check,
    or ``()`` while NumPy is not imported: no value can be of them then, and asking must not import
    it."""
    module = sys.modules.get("numpy")
    if module is None:
        return ()
    if getattr(getattr(module, "__spec__", None), "_initializing", False):
        # Another thread is importing NumPy right now: its module is in sys.modules half made
        # (no ndarray yet). Importing waits for that thread to finish.
        module = importlib.import_module("numpy")
    return tuple(getattr(module, name) for name in names)
