"""The public :class:`Graph`: the operation families combined, and the planning entry points.

Planning lives in :mod:`pycudnn.plan`, which imports the graph; the convenience methods here
import it when they are called, so that building a graph never imports planning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .adanorm import AdaNormOps
from .attention import AttentionOps
from .convolution import ConvolutionOps
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
    from ..plan import EngineConfig, HeuristicsResult, Plan

__all__ = ["Graph"]


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

    def engine_configs(self, **options: Any) -> list[EngineConfig]:
        """Engine configurations from the heuristics, filtered (see :func:`pycudnn.plan.engine_configs`)."""
        from ..plan import engine_configs

        return engine_configs(self, **options)

    def build(self, **options: Any) -> Plan:
        """Heuristics, then the first execution plan that finalizes (see :func:`pycudnn.plan.build`)."""
        from ..plan import build

        return build(self, **options)

    def build_all(self, **options: Any) -> list[Plan]:
        """Every execution plan that finalizes (see :func:`pycudnn.plan.build_all`)."""
        from ..plan import build_all

        return build_all(self, **options)

    def autotune(self, tensors: Mapping[Any, Any], **options: Any) -> Plan:
        """Time every candidate plan on the GPU and return the fastest (see :func:`pycudnn.plan.autotune`)."""
        from ..plan import autotune

        return autotune(self, tensors, **options)

    def load_plan(self, source: Any, **options: Any) -> Plan:
        """A plan for this graph from its JSON (text or path); see :meth:`pycudnn.plan.Plan.from_json`."""
        from ..plan import Plan

        return Plan.load(source, graph=self, **options)
