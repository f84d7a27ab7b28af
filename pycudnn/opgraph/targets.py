"""The planning target a graph's backend descriptors are built for: a GPU (its handle) or none."""

from __future__ import annotations

from typing import Any

from _nvbind.cuda import driver_status
from _nvbind.resource import ClosedError

from ..handle import Handle, get_handle

__all__ = ["CURRENT_GPU"]


class _CurrentGpu:
    """The type of :data:`CURRENT_GPU`."""

    def __repr__(self) -> str:
        return "pycudnn.graph.CURRENT_GPU"


#: The default planning target of :meth:`Graph.finalize`: the calling thread's handle for the
#: current GPU when one is usable, else no handle (deviceless).
CURRENT_GPU: Any = _CurrentGpu()


def _resolve_handle(handle: Any) -> Any:
    """A :class:`pycudnn.Handle` or None for ``Graph.finalize(handle=...)``."""
    if handle is CURRENT_GPU:
        if not driver_status().usable:
            return None

        return get_handle()
    if handle is not None:
        if not isinstance(handle, Handle):
            raise TypeError(
                f"handle must be a pycudnn.Handle, None (deviceless) or CURRENT_GPU, not "
                f"{type(handle).__name__}"
            )
        if handle.closed:
            raise ClosedError("handle: this cuDNN handle is closed")
    return handle
