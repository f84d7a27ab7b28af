"""Trinary contractions: ``E = alpha opA(A) opB(B) opC(C) + beta opD(D)``
(``cutensorCreateContractionTrinary``, ``cutensorContractTrinary``; cuTENSOR 2.1.1 or newer)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tensor import TensorDescriptor
from ._common import OperationKeywords, PlannableOperation, WorkspaceLaunchKeywords, run

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["ContractionTrinary", "contract_trinary"]


class ContractionTrinary(PlannableOperation):
    """``E = alpha opA(A) opB(B) opC(C) + beta opD(D)`` (``cutensorCreateContractionTrinary``);
    E is described by D. ``compute_type`` and ``handle``:
    :class:`~pycutensor.operations.OperationKeywords`."""

    kind = "contraction_trinary"

    def __init__(  # noqa: PLR0917 - the C API's argument order
        self,
        a: TensorDescriptor,
        modes_a: Any,
        b: TensorDescriptor,
        modes_b: Any,
        c: TensorDescriptor,
        modes_c: Any,
        d: TensorDescriptor,
        modes_d: Any,
        *,
        op_a: Any = "identity",
        op_b: Any = "identity",
        op_c: Any = "identity",
        op_d: Any = "identity",
        **kw: Unpack[OperationKeywords],
    ) -> None:
        self._describe([(a, modes_a), (b, modes_b), (c, modes_c), (d, modes_d)], kw,
                       unary=(op_a, op_b, op_c, op_d))  # fmt: skip


def contract_trinary(  # noqa: PLR0917 - the C API's argument order
    a: Any,
    modes_a: Any,
    b: Any,
    modes_b: Any,
    c: Any,
    modes_c: Any,
    d: Any,
    modes_d: Any,
    *,
    alpha: Any = 1.0,
    beta: Any = 0.0,
    out: Any = None,
    op_a: Any = "identity",
    op_b: Any = "identity",
    op_c: Any = "identity",
    op_d: Any = "identity",
    **kw: Unpack[WorkspaceLaunchKeywords],
) -> Any:
    """``out = alpha opA(A) opB(B) opC(C) + beta opD(D)`` (``cutensorContractTrinary``).

    ``out`` defaults to ``d`` itself; when given it must be laid out like ``d``.
    ``compute_type``, ``preference``, ``stream``, ``workspace`` and ``handle``:
    :class:`~pycutensor.operations.WorkspaceLaunchKeywords`.
    """
    return run(ContractionTrinary, (a, b, c, d), (modes_a, modes_b, modes_c, modes_d), out,
               {"alpha": alpha, "beta": beta}, (op_a, op_b, op_c, op_d), (), kw,
               "contract_trinary")  # fmt: skip
