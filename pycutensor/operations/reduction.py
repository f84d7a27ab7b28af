"""Reductions: ``D = alpha opReduce(opA(A)) + beta opC(C)`` (``cutensorCreateReduction``,
``cutensorReduce``): the modes of A that C lacks are reduced."""

from __future__ import annotations

from typing import Any

from ..handle import Handle
from ..preference import PlanPreference
from ..tensor import TensorDescriptor
from ._common import PlannableOperation, run

__all__ = ["Reduction", "reduce"]


class Reduction(PlannableOperation):
    """``D = alpha opReduce(opA(A)) + beta opC(C)`` (``cutensorCreateReduction``); D is described by C.

    Modes of A absent from C are reduced with ``op_reduce`` (``"add"``, ``"mul"``, ``"max"``,
    ``"min"``).
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
        compute_type: Any = None,
        handle: Handle | None = None,
    ) -> None:
        self._create(handle, [(a, modes_a), (c, modes_c)], unary=(op_a, op_c),
                     binary=(op_reduce,), compute_type=compute_type)  # fmt: skip


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
    compute_type: Any = None,
    preference: PlanPreference | None = None,
    stream: Any = None,
    workspace: Any = None,
    handle: Handle | None = None,
) -> Any:
    """``out = alpha opReduce(opA(A)) + beta opC(C)`` (``cutensorReduce``): modes of A that C
    lacks are reduced. ``out`` defaults to ``c``.

    ``handle``: the :class:`~pycutensor.Handle` to plan and execute with, bound to the arrays'
    device (share one between threads to share its plan cache); None: the calling thread's own
    (:func:`~pycutensor.get_handle`).
    """
    return run(Reduction, (a, c), (modes_a, modes_c), out, {"alpha": alpha, "beta": beta},
               (op_a, op_c), (op_reduce,), compute_type, preference, stream,
               workspace, handle=handle)  # fmt: skip
