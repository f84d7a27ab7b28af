"""The public :class:`Graph`: the operation families combined, and the planning entry points.

Planning lives in :mod:`pycudnn.plan`, which imports the graph; the convenience methods here
import it when they are called, so that building a graph never imports planning.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .adanorm import AdaNormOps
from .attention import AttentionOps
from .convolution import ConvolutionOps
from .descriptors import DescriptorSets
from .like import TensorLikeOps
from .matmul import MatmulOps
from .normalization import NormalizationOps
from .pointwise import PointwiseOps
from .quantize import QuantizeOps
from .reduction import ReductionOps
from .resample import ResampleOps
from .rng import RngOps
from .sequence import SequenceOps
from .shape import ShapeOps
from .statistics import StatisticsOps

if TYPE_CHECKING:  # pragma: no cover
    from ..deviceprops import DeviceProperties
    from ..plan import EngineConfig, HeuristicsResult, Plan, PlanCache
    from ..plan.options import PlanOptions

__all__ = ["Graph"]


def _takes_plan_options(method: Callable[..., Any]) -> Callable[..., Any]:
    """A planning method that also takes ``options=`` (a :class:`~pycudnn.plan.PlanOptions` or a
    mapping): spread into the filter keywords the caller did not give, as
    :func:`pycudnn.plan.options.takes_plan_options` does for the functions (here, because the
    graph may import planning only when a planning method is called)."""

    @functools.wraps(method)
    def call(self: Graph, *args: Any, options: Any = None, **keywords: Any) -> Any:
        if options is not None:
            from ..plan.options import merge_plan_options

            keywords = merge_plan_options(options, keywords)
        return method(self, *args, **keywords)

    return call


class Graph(
    ConvolutionOps,
    MatmulOps,
    NormalizationOps,
    PointwiseOps,
    ReductionOps,
    AttentionOps,
    StatisticsOps,
    ShapeOps,
    ResampleOps,
    SequenceOps,
    QuantizeOps,
    RngOps,
    TensorLikeOps,
    AdaNormOps,
    DescriptorSets,
):
    """A cuDNN operation graph under construction, then finalized (``CUDNN_BACKEND_OPERATIONGRAPH``).

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
    ) -> HeuristicsResult:
        """Run one heuristic mode for a target (``device_properties``, else the GPU ``device``):
        the count cuDNN reports and the configs it returns (see :func:`pycudnn.plan.run_heuristics`)."""
        from ..plan import run_heuristics

        return run_heuristics(
            self, mode, device_properties=device_properties, sm_count=sm_count, device=device
        )

    @_takes_plan_options
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
        kw = _keywords(locals())  # first: before the import adds a local
        from ..plan import engine_configs

        return engine_configs(self, **kw)

    @_takes_plan_options
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
        kw = _keywords(locals())  # first: before the import adds a local
        from ..plan import build

        return build(self, **kw)

    @_takes_plan_options
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
        kw = _keywords(locals())  # first: before the import adds a local
        from ..plan import build_all

        return build_all(self, **kw)

    @_takes_plan_options
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
        kw = _keywords(locals())  # first: before the import adds a local
        from ..plan import autotune

        return autotune(self, kw.pop("tensors"), **kw)

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
        from ..plan import Plan

        return Plan.load(source, graph=self, device_properties=device_properties, device=device)


def _keywords(frame_locals: dict[str, Any]) -> dict[str, Any]:
    """A method's arguments, ``self`` left out, to pass on to its :mod:`pycudnn.plan` function
    (the keywords are spelled out on both, so that ``help()`` and type checkers see them; a test
    checks that the two lists are the same)."""
    return {k: v for k, v in frame_locals.items() if k != "self"}


def _all_or_nothing(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def operation(self: Graph, *args: Any, **kwargs: Any) -> Any:
        with self._all_or_nothing():
            return method(self, *args, **kwargs)

    return operation


_OPERATION_FAMILIES = tuple(base for base in Graph.__bases__ if base is not DescriptorSets)

# Every public method of an operation family adds to the graph completely or not at all (a call
# that raises leaves the graph as it was; see GraphCore._all_or_nothing). Done here, once, rather
# than in each of the families' methods, so that a new operation cannot forget it.
for _family in _OPERATION_FAMILIES:
    for _name, _method in vars(_family).items():
        if not _name.startswith("_") and inspect.isfunction(_method):
            setattr(Graph, _name, _all_or_nothing(_method))
