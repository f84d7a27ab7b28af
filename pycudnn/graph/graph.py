"""The public :class:`Graph`: an operation graph with the planning entry points.

The description is :class:`pycudnn.opgraph.OperationGraph`; planning (:mod:`pycudnn.plan`) takes
one and never imports this module. Layers, lowest first: ``opgraph`` describes, ``plan`` plans
and executes a described graph, this class joins the two for the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import plan
from ..opgraph.operation_graph import OperationGraph
from ..plan import (
    EngineConfig,
    HeuristicsResult,
    Plan,
    PlanCache,
    build,
    build_all,
    engine_configs,
    run_heuristics,
)
from ..plan.options import PlanOptions, takes_plan_options

if TYPE_CHECKING:  # pragma: no cover
    from ..deviceprops import DeviceProperties

__all__ = ["Graph"]


class Graph(OperationGraph):
    """A cuDNN operation graph under construction, then finalized (``CUDNN_BACKEND_OPERATIONGRAPH``),
    and planned: :meth:`build`, :meth:`autotune` and the rest call :mod:`pycudnn.plan`.

    ``compute_dtype`` is the default math precision of operations; ``intermediate_dtype`` the type
    of virtual tensors; ``io_dtype`` (optional) the type of graph outputs whose type is not given.
    """

    # -- planning (pycudnn.plan) -----------------------------------------------------------------
    def heuristics(
        self,
        mode: Any = "a",
        *,
        device_properties: DeviceProperties | None = None,
        sm_count: int | None = None,
        device: Any = None,
    ) -> HeuristicsResult[EngineConfig]:
        """Run one heuristic mode for a target (``device_properties``, else the GPU ``device``):
        the count cuDNN reports and the configs it returns (see :func:`pycudnn.plan.run_heuristics`)."""

        return run_heuristics(
            self, mode, device_properties=device_properties, sm_count=sm_count, device=device
        )

    @takes_plan_options
    def engine_configs(
        self,
        *,
        heuristics: Any = ("a", "fallback"),  # pycudnn.plan.DEFAULT_HEURISTICS
        device_properties: DeviceProperties | None = None,
        sm_count: int | None = None,
        device: Any = None,
        deterministic: bool = False,
        allow_reduced_precision: bool = True,
        allow_runtime_compilation: bool = True,
        max_workspace: int | None = None,
        allow_known_bad: bool = False,
        exclude_engines: Iterable[int] | None = None,
        exclude_notes: Iterable[str] | None = None,
        options: PlanOptions | Mapping[str, Any] | None = None,
    ) -> list[EngineConfig]:
        """Engine configurations from the heuristics (``CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR``),
        filtered: see :func:`pycudnn.plan.engine_configs` for every keyword and its errors."""
        kw = _keywords(locals())

        return engine_configs(self, **kw)

    @takes_plan_options
    def build(
        self,
        *,
        heuristics: Any = ("a", "fallback"),  # pycudnn.plan.DEFAULT_HEURISTICS
        device_properties: DeviceProperties | None = None,
        device: Any = None,
        deterministic: bool = False,
        max_workspace: int | None = None,
        allow_reduced_precision: bool = True,
        allow_runtime_compilation: bool = True,
        allow_known_bad: bool = False,
        sm_count: int | None = None,
        cache: PlanCache | bool | None = None,
        exclude_engines: Iterable[int] | None = None,
        exclude_notes: Iterable[str] | None = None,
        verify: bool = False,
        options: PlanOptions | Mapping[str, Any] | None = None,
    ) -> Plan:
        """Heuristics, then the first execution plan that finalizes (``cudnnBackendFinalize`` of
        an ``EXECUTION_PLAN``): see :func:`pycudnn.plan.build` for every keyword and its errors
        (:class:`~pycudnn.plan.GraphNotSupportedError` when no engine serves)."""
        kw = _keywords(locals())

        return build(self, **kw)

    @takes_plan_options
    def build_all(
        self,
        *,
        heuristics: Any = ("a", "fallback"),  # pycudnn.plan.DEFAULT_HEURISTICS
        device_properties: DeviceProperties | None = None,
        device: Any = None,
        deterministic: bool = False,
        max_workspace: int | None = None,
        allow_reduced_precision: bool = True,
        allow_runtime_compilation: bool = True,
        allow_known_bad: bool = False,
        sm_count: int | None = None,
        exclude_engines: Iterable[int] | None = None,
        exclude_notes: Iterable[str] | None = None,
        limit: int | None = None,
        verify: bool = False,
        options: PlanOptions | Mapping[str, Any] | None = None,
    ) -> list[Plan]:
        """Every execution plan that finalizes: see :func:`pycudnn.plan.build_all`."""
        kw = _keywords(locals())

        return build_all(self, **kw)

    @takes_plan_options
    def autotune(
        self,
        tensors: Mapping[Any, Any],
        *,
        heuristics: Any = ("a", "b", "fallback"),
        candidates: int | Sequence[Plan] | None = None,
        warmup: int = 3,
        repeats: int = 10,
        stream: Any = None,
        handle: Any = None,
        device: Any = None,
        progress: bool | None = None,
        cache: PlanCache | bool | None = None,
        verify: bool = False,
        deterministic: bool = False,
        max_workspace: int | None = None,
        allow_reduced_precision: bool = True,
        allow_runtime_compilation: bool = True,
        allow_known_bad: bool = False,
        sm_count: int | None = None,
        exclude_engines: Iterable[int] | None = None,
        exclude_notes: Iterable[str] | None = None,
        options: PlanOptions | Mapping[str, Any] | None = None,
    ) -> Plan:
        """Time every candidate plan on the GPU (``cudnnBackendExecute`` between CUDA events) and
        return the fastest: see :func:`pycudnn.plan.autotune` (``RuntimeError`` without a GPU)."""
        kw = _keywords(locals())

        return plan.autotune(self, kw.pop("tensors"), **kw)  # autotuning loads on first use

    def load_plan(
        self,
        source: Any,
        *,
        device_properties: DeviceProperties | None = None,
        device: Any = None,
    ) -> Plan:
        """A plan for this graph from its JSON (text or path; ``cudnnBackendFinalize`` of an
        ``EXECUTION_PLAN`` with ``CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION``): see
        :meth:`pycudnn.plan.Plan.from_json` (``PlanVersionError`` for another cuDNN's plan)."""

        return Plan.load(source, graph=self, device_properties=device_properties, device=device)


def _keywords(frame_locals: dict[str, Any]) -> dict[str, Any]:
    """A method's arguments, ``self`` left out, to pass on to its :mod:`pycudnn.plan` function
    (the keywords are spelled out on both, so that ``help()`` and type checkers see them; a test
    checks that the two lists are the same)."""
    return {k: v for k, v in frame_locals.items() if k != "self"}
