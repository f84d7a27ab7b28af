"""Trinary contractions: ``E = alpha opA(A) opB(B) opC(C) + beta opD(D)``
(``cutensorCreateContractionTrinary``, ``cutensorContractTrinary``; cuTENSOR 2.1.1 or newer)."""

from __future__ import annotations

from typing import Any

from ..handle import Handle
from ..preference import PlanPreference
from ..tensor import TensorDescriptor
from ._common import PlannableOperation, run

__all__ = ["ContractionTrinary", "contract_trinary"]


class ContractionTrinary(PlannableOperation):
    """``E = alpha opA(A) opB(B) opC(C) + beta opD(D)`` (``cutensorCreateContractionTrinary``);
    E is described by D."""

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
        compute_type: Any = None,
        handle: Handle | None = None,
    ) -> None:
        self._create(handle, [(a, modes_a), (b, modes_b), (c, modes_c), (d, modes_d)],
                     unary=(op_a, op_b, op_c, op_d), compute_type=compute_type)  # fmt: skip


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
    compute_type: Any = None,
    preference: PlanPreference | None = None,
    stream: Any = None,
    workspace: Any = None,
    handle: Handle | None = None,
) -> Any:
    """``out = alpha opA(A) opB(B) opC(C) + beta opD(D)`` (``cutensorContractTrinary``).

    ``out`` defaults to ``d`` itself; when given it must be laid out like ``d``.
    ``handle``: the :class:`~pycutensor.Handle` to plan and execute with, bound to the arrays'
    device (share one between threads to share its plan cache); None: the calling thread's own
    (:func:`~pycutensor.get_handle`).
    """
    return run(ContractionTrinary, (a, b, c, d), (modes_a, modes_b, modes_c, modes_d), out,
               {"alpha": alpha, "beta": beta}, (op_a, op_b, op_c, op_d), (), compute_type,
               preference, stream, workspace, handle=handle)  # fmt: skip
