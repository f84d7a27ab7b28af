"""A graph's backend descriptors, one set per planning target (a GPU's handle, or none for
deviceless planning) and per description (see :mod:`.rewrites`), built by :mod:`.lowering`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .core import GraphCore
from .lowering import build_descriptors
from .targets import CURRENT_GPU, _resolve_handle

if TYPE_CHECKING:  # pragma: no cover
    from ..backend import BackendDescriptor

__all__ = ["DescriptorSets"]


class DescriptorSets(GraphCore):
    """The backend-descriptor half of :class:`pycudnn.Graph`."""

    def finalize(self, handle: Any = CURRENT_GPU) -> BackendDescriptor:
        """Build and finalize the backend descriptors for one planning target; returns the
        ``CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR``.

        A graph is planned for a target. ``handle``, a :class:`pycudnn.Handle`, binds the
        operation graph to that handle's GPU (``OPERATIONGRAPH_HANDLE``): cuDNN needs it to plan for
        a real device. ``None`` builds the unbound descriptors used for deviceless planning, where
        the target is a :class:`~pycudnn.DeviceProperties` given to the heuristics and the plan.
        The default, :data:`CURRENT_GPU`, is the calling thread's handle for the current GPU when
        one is usable, else unbound. Each target gets its own descriptor set, built once and
        kept until :meth:`close`. cuDNN's refusals are raised as its
        :class:`~pycudnn.CudnnError` subclass with the operation's name and cuDNN's reason.
        """
        graph: BackendDescriptor = self._descriptors_for(_resolve_handle(handle))["graph"]
        return graph

    def _descriptors_for(
        self,
        handle: Any,
        variant: str = "",
        views: Mapping[int, tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
    ) -> dict[str, Any]:
        """The descriptor set for (``handle`` or unbound, description ``variant``), built once.

        ``variant`` names an equivalent description of the tensors (``views``, uid -> (dims,
        strides)) that cuDNN is shown instead of the graph's own; "" is the graph as described.
        """

        self._check_open()
        self._resolve()
        key = (None if handle is None else id(handle), variant)
        with self._descriptor_lock:
            found = self._descriptor_sets.get(key)
            if found is not None and not found["graph"].closed:
                return found
            # The set keeps its handle alive, so id(handle) is not reused while the key exists.
            made = build_descriptors(self, handle=handle, views=views)
            self._descriptor_sets[key] = made
            return made

    @property
    def operation_graph(self) -> BackendDescriptor:
        """The finalized ``CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR`` for the default target
        (see :meth:`finalize`; built on first use)."""
        return self.finalize()

    @property
    def engine_count(self) -> int:
        """``OPERATIONGRAPH_ENGINE_GLOBAL_COUNT``: engines cuDNN has that could match the graph."""
        return int(self.operation_graph.get("OPERATIONGRAPH_ENGINE_GLOBAL_COUNT"))
