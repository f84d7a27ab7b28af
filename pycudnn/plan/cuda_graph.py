"""CUDA graphs from execution plans: ``cudnnBackendPopulateCudaGraph`` builds a plan's kernels
into an empty CUDA graph, ``cudnnBackendUpdateCudaGraph`` swaps the data pointers of a graph it
populated, without capturing again (cuDNN 9.5+). Engines that support it carry the
``SUPPORTS_CUDA_GRAPH_NATIVE_API`` behaviour note; for others cuDNN answers with an error status,
raised as :class:`~pycudnn.CudnnError` naming the missing note."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping
from typing import Any

from _nvbind.resource import ClosedError

from .._lib import LIB, check
from ..errors import CudnnError
from .variant_pack import _Handle

__all__ = ["CudaGraphs", "cuda_graph_pointer"]

_NATIVE = "SUPPORTS_CUDA_GRAPH_NATIVE_API"  # the behaviour note of engines that support it


def cuda_graph_pointer(cuda_graph: Any) -> int:
    """The ``cudaGraph_t`` behind ``cuda_graph``: an int, or a cuda-python ``cudaGraph_t`` /
    ``CUgraph``, whose ``int()`` is the handle (their ``getPtr()`` is the address of the
    handle's storage instead, which cuDNN must not get)."""
    if isinstance(cuda_graph, (bool, str, bytes, float)) or not hasattr(cuda_graph, "__int__"):
        raise TypeError(
            "cuda_graph must be a cudaGraph_t: an int or a cuda-python cudaGraph_t/CUgraph, "
            f"not {type(cuda_graph).__name__}"
        )
    ptr = int(cuda_graph)
    if ptr <= 0:
        raise ValueError(
            f"cuda_graph is a null or negative pointer ({ptr}); create it with cudaGraphCreate"
        )
    return ptr


class CudaGraphs:
    """Mixed into :class:`~pycudnn.plan.Plan`: populate and update CUDA graphs."""

    def populate_cuda_graph(
        self,
        tensors: Mapping[Any, Any],
        cuda_graph: Any,
        *,
        workspace: Any = None,
        handle: Any = None,
    ) -> None:
        """Add this plan's work on ``tensors`` to the empty CUDA graph ``cuda_graph``
        (``cudnnBackendPopulateCudaGraph``, cuDNN 9.5+).

        ``tensors`` as for :meth:`execute`. The graph keeps the data pointers: the arrays (and the
        ``workspace``, required when :attr:`workspace_size` is not 0, since a per-call workspace
        would be gone when the graph is launched) must outlive every launch.
        """
        self._cuda_graph_call(
            "cudnnBackendPopulateCudaGraph", tensors, cuda_graph, workspace, handle
        )

    def update_cuda_graph(
        self,
        tensors: Mapping[Any, Any],
        cuda_graph: Any,
        *,
        workspace: Any = None,
        handle: Any = None,
    ) -> None:
        """Point a CUDA graph that :meth:`populate_cuda_graph` built for this plan at new arrays
        (``cudnnBackendUpdateCudaGraph``, cuDNN 9.5+): no capture, no new nodes."""
        self._cuda_graph_call("cudnnBackendUpdateCudaGraph", tensors, cuda_graph, workspace, handle)

    def _cuda_graph_call(
        self,
        function: str,
        tensors: Mapping[Any, Any],
        cuda_graph: Any,
        workspace: Any,
        handle: Any,
    ) -> None:
        plan: Any = self
        if plan._closed or plan._desc._ptr is None:
            raise ClosedError("this execution plan is closed")
        fn = LIB.function(function)  # refused with the version it needs on cuDNN < 9.5
        graph_ptr = cuda_graph_pointer(cuda_graph)
        try:
            values = tensors.values()
        except AttributeError:
            raise TypeError(
                "tensors must be a mapping of graph tensors (or names, or unique ids) to arrays, "
                f"not {type(tensors).__name__}"
            ) from None
        keys = tuple(tensors)
        if keys != plan._keys:
            plan._bind(keys, values)
        ptrs = tuple([g(v) for g, v in zip(plan._getters, values, strict=True)])
        if workspace is None:
            if plan.workspace_size:
                raise ValueError(
                    f"this plan needs a {plan.workspace_size}-byte workspace: pass workspace= (a "
                    "buffer that outlives the CUDA graph; the graph keeps its pointer)"
                )
            ws = 0
        else:
            ws = plan._user_workspace(workspace)
        if handle is None:
            handle = plan._handles.get(threading.get_ident()) or plan._thread_handle(values)
        elif not isinstance(handle, _Handle()):
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        key = (plan._order, ptrs, ws)
        entry = plan._vpacks.get(key)
        if entry is None:
            entry = plan._new_variant_pack(key, values, handle, None)
        if entry[1] != handle.device_id:
            plan._wrong_device(handle, entry[1])
        status = fn(handle._as_parameter_, plan._ptr, entry[0], ctypes.c_void_p(graph_ptr))
        if status:
            try:
                check(status, function)
            except CudnnError as exc:
                if plan.config is None or _NATIVE in plan.behavior_notes:
                    raise  # the notes are unknown (a plan read from JSON alone), or not the cause
                # the likeliest cause, which cuDNN's message does not name
                raise type(exc)(
                    exc.status,
                    exc.function,
                    f"{exc.message} (engine {plan.engine_id} lacks the {_NATIVE} behaviour note; "
                    "choose an engine that has it, e.g. with build_engine)",
                ) from None
