"""CUDA graphs from execution plans: ``cudnnBackendPopulateCudaGraph`` builds a plan's kernels
into an empty CUDA graph, ``cudnnBackendUpdateCudaGraph`` swaps the data pointers of a graph it
populated, without capturing again (cuDNN 9.5+). Engines that support it carry the
``SUPPORTS_CUDA_GRAPH_NATIVE_API`` behaviour note; for others cuDNN answers with an error status,
raised as :class:`~pycudnn.CudnnError` naming the missing note."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, TypedDict

from .._lib import LIB, check
from ..errors import CudnnError
from .heuristics import EngineConfig
from .variant_pack import Entry, wrong_device

__all__ = ["CudaGraphCalls", "CudaGraphKeywords", "cuda_graph_pointer"]

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


class CudaGraphKeywords(TypedDict, total=False):
    """The keywords of the CUDA-graph calls (``workspace``, ``handle``), as
    :meth:`~pycudnn.plan.Plan.populate_cuda_graph` declares them: taken by
    :meth:`~pycudnn.plan.Plan.update_cuda_graph` as ``**kw: Unpack[CudaGraphKeywords]`` and
    spelled out in its signature."""

    workspace: Any
    handle: Any


class CudaGraphCalls:
    """The CUDA-graph calls of one execution plan, owned by :class:`~pycudnn.plan.Plan`: the
    plan resolves the tensors to a variant pack as :meth:`~pycudnn.plan.Plan.execute` does; this
    object checks the CUDA graph, makes the call and names the likeliest cause of a refusal."""

    __slots__ = ("_config", "_plan")

    def __init__(self, plan_pointer: Any, config: EngineConfig | None) -> None:
        self._plan = plan_pointer  # the EXECUTION_PLAN's c_void_p
        self._config = config  # None: the engine's notes are unknown (a plan read from JSON)

    @staticmethod
    def prepare(function: str, cuda_graph: Any) -> tuple[Callable[..., int], int]:
        """The C function (refused with the version it needs on cuDNN < 9.5) and the
        ``cudaGraph_t``, both checked before the tensors are."""
        return LIB.function(function), cuda_graph_pointer(cuda_graph)

    def call(
        self, fn: Callable[..., int], function: str, handle: Any, entry: Entry, graph_ptr: int
    ) -> None:
        """``function`` (``fn``) on the variant pack ``entry`` and the CUDA graph."""
        if entry[1] != handle.device_id:
            wrong_device(handle, entry[1])
        previous = handle.activate()  # as an execute (several GPUs): cuDNN uses the current one
        status = fn(handle._as_parameter_, self._plan, entry[0], ctypes.c_void_p(graph_ptr))
        if previous is not None:
            handle.restore(previous)
        if not status:
            return
        try:
            check(status, function)
        except CudnnError as exc:
            config = self._config
            if config is None or _NATIVE in config.behavior_notes:
                raise  # the notes are unknown (a plan read from JSON alone), or not the cause
            # the likeliest cause, which cuDNN's message does not name
            raise type(exc)(
                exc.status,
                exc.function,
                f"{exc.message} (engine {config.engine_id} lacks the {_NATIVE} behaviour note; "
                "choose an engine that has it, e.g. with build_engine)",
            ) from None
