"""The operation graph described: every operation family combined into one class.

:class:`OperationGraph` is what planning (:mod:`pycudnn.plan`) is given; the public
:class:`pycudnn.Graph` adds the planning entry points on top, so that this package never
imports planning.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .adanorm import AdaNormOps
from .attention import AttentionOps
from .attention_fp8 import AttentionFp8Ops
from .attention_fp8_backward import AttentionFp8BackwardOps
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

__all__ = ["OperationGraph"]


class OperationGraph(
    ConvolutionOps,
    MatmulOps,
    NormalizationOps,
    PointwiseOps,
    ReductionOps,
    AttentionOps,
    AttentionFp8Ops,
    AttentionFp8BackwardOps,
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
    """A cuDNN operation graph under construction, then finalized (``CUDNN_BACKEND_OPERATIONGRAPH``):
    the description alone. :class:`pycudnn.Graph` adds the planning entry points; planning
    (:mod:`pycudnn.plan`) takes any operation graph.

    ``compute_dtype`` is the default math precision of operations; ``intermediate_dtype`` the type
    of virtual tensors; ``io_dtype`` (optional) the type of graph outputs whose type is not given.
    """


def _all_or_nothing(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def operation(self: OperationGraph, *args: Any, **kwargs: Any) -> Any:
        with self._all_or_nothing():
            return method(self, *args, **kwargs)

    return operation


_OPERATION_FAMILIES = tuple(base for base in OperationGraph.__bases__ if base is not DescriptorSets)

# Every public method of an operation family adds to the graph completely or not at all (a call
# that raises leaves the graph as it was; see GraphCore._all_or_nothing). Done here, once, rather
# than in each of the families' methods, so that a new operation cannot forget it.
for _family in _OPERATION_FAMILIES:
    for _name, _method in vars(_family).items():
        if not _name.startswith("_") and inspect.isfunction(_method):
            setattr(OperationGraph, _name, _all_or_nothing(_method))
