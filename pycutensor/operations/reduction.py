"""Reductions: ``D = alpha opReduce(opA(A)) + beta opC(C)`` (``cutensorCreateReduction``,
``cutensorReduce``): the modes of A that C lacks are reduced."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tensor import TensorDescriptor
from ._common import OperationKeywords, PlannableOperation, WorkspaceLaunchKeywords, run

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["Reduction", "reduce"]


class Reduction(PlannableOperation):
    """``D = alpha opReduce(opA(A)) + beta opC(C)`` (``cutensorCreateReduction``); D is described by C.

    Modes of A absent from C are reduced with ``op_reduce`` (``"add"``, ``"mul"``, ``"max"``,
    ``"min"``). ``compute_type`` and ``handle``: :class:`~pycutensor.operations.OperationKeywords`.
    """

    kind = "reduction"

    def __init__(
        self,
        a: TensorDescriptor,
        modes_a: Any,
        c: TensorDescriptor,
        modes_c: Any,
        *,
        op_reduce: Any = "add",
        op_a: Any = "identity",
        op_c: Any = "identity",
        **kw: Unpack[OperationKeywords],
    ) -> None:
        self._describe([(a, modes_a), (c, modes_c)], kw, unary=(op_a, op_c), binary=(op_reduce,))


def reduce(
    a: Any,
    modes_a: Any,
    c: Any,
    modes_c: Any,
    *,
    alpha: Any = 1.0,
    beta: Any = 0.0,
    out: Any = None,
    op_reduce: Any = "add",
    op_a: Any = "identity",
    op_c: Any = "identity",
    **kw: Unpack[WorkspaceLaunchKeywords],
) -> Any:
    """``out = alpha opReduce(opA(A)) + beta opC(C)`` (``cutensorReduce``): modes of A that C
    lacks are reduced. ``out`` defaults to ``c``.

    ``compute_type``, ``preference``, ``stream``, ``workspace`` and ``handle``:
    :class:`~pycutensor.operations.WorkspaceLaunchKeywords`.
    """
    return run(Reduction, (a, c), (modes_a, modes_c), out, {"alpha": alpha, "beta": beta},
               (op_a, op_c), (op_reduce,), kw, "reduce")  # fmt: skip
