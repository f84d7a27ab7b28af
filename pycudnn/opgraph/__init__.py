"""The operation graph described: tensors, operations, their checks, and the lowering to cuDNN's
backend descriptors (``CUDNN_BACKEND_OPERATIONGRAPH``).

This package describes and never plans: :mod:`pycudnn.plan` plans an :class:`OperationGraph`, and
:class:`pycudnn.Graph` (an operation graph with the planning entry points) joins the two. Users
start from :class:`pycudnn.Graph`; see :mod:`pycudnn.graph`.
"""

from __future__ import annotations

from .common import MAX_RANK, MIN_RANK, GraphError
from .operation_graph import OperationGraph
from .pointwise import POINTWISE_ARITY, pointwise_arity, pointwise_mode
from .reduction import reduction_operator
from .targets import CURRENT_GPU
from .tensors import Operation, Tensor

__all__ = [
    "CURRENT_GPU",
    "MAX_RANK",
    "MIN_RANK",
    "POINTWISE_ARITY",
    "GraphError",
    "Operation",
    "OperationGraph",
    "Tensor",
    "pointwise_arity",
    "pointwise_mode",
    "reduction_operator",
]
