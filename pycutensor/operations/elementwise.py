"""Elementwise operations: ``D = opAC(alpha opA(A), gamma opC(C))``
(``cutensorCreateElementwiseBinary``) and ``D = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``
(``cutensorCreateElementwiseTrinary``). They take no workspace."""

from __future__ import annotations

from typing import Any

from ..handle import Handle
from ..tensor import TensorDescriptor
from ._common import PlannableOperation, run

__all__ = ["ElementwiseBinary", "ElementwiseTrinary", "elementwise_binary", "elementwise_trinary"]


class ElementwiseBinary(PlannableOperation):
    """``D = opAC(alpha opA(A), gamma opC(C))`` (``cutensorCreateElementwiseBinary``); D is described
    by C. Modes of A must appear in C; a mode C has and A lacks broadcasts A."""

    kind = "elementwise_binary"

    def __init__(
        self,
        a: TensorDescriptor,
        modes_a: Any,
        c: TensorDescriptor,
        modes_c: Any,
        *,
        op_ac: Any = "add",
        op_a: Any = "identity",
        op_c: Any = "identity",
        compute_type: Any = None,
        handle: Handle | None = None,
    ) -> None:
        self._create(handle, [(a, modes_a), (c, modes_c)], unary=(op_a, op_c), binary=(op_ac,),
                     compute_type=compute_type)  # fmt: skip


class ElementwiseTrinary(PlannableOperation):
    """``D = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``
    (``cutensorCreateElementwiseTrinary``); D is described by C."""

    kind = "elementwise_trinary"

    def __init__(  # noqa: PLR0917 - the C API's argument order
        self,
        a: TensorDescriptor,
        modes_a: Any,
        b: TensorDescriptor,
        modes_b: Any,
        c: TensorDescriptor,
        modes_c: Any,
        *,
        op_ab: Any = "add",
        op_abc: Any = "add",
        op_a: Any = "identity",
        op_b: Any = "identity",
        op_c: Any = "identity",
        compute_type: Any = None,
        handle: Handle | None = None,
    ) -> None:
        self._create(handle, [(a, modes_a), (b, modes_b), (c, modes_c)],
                     unary=(op_a, op_b, op_c), binary=(op_ab, op_abc),
                     compute_type=compute_type)  # fmt: skip


def elementwise_binary(
    a: Any,
    modes_a: Any,
    c: Any,
    modes_c: Any,
    *,
    alpha: Any = 1.0,
    gamma: Any = 1.0,
    out: Any = None,
    op_ac: Any = "add",
    op_a: Any = "identity",
    op_c: Any = "identity",
    compute_type: Any = None,
    stream: Any = None,
    handle: Handle | None = None,
) -> Any:
    """``out = opAC(alpha opA(A), gamma opC(C))`` (``cutensorElementwiseBinaryExecute``).

    ``out`` defaults to ``c`` (updated in place; allowed because C and D share one descriptor).
    ``handle``: the :class:`~pycutensor.Handle` to plan and execute with, bound to the arrays'
    device (share one between threads to share its plan cache); None: the calling thread's own
    (:func:`~pycutensor.get_handle`).
    """
    return run(ElementwiseBinary, (a, c), (modes_a, modes_c), out,
               {"alpha": alpha, "gamma": gamma}, (op_a, op_c), (op_ac,), compute_type, None,
               stream, None, handle=handle)  # fmt: skip


def elementwise_trinary(  # noqa: PLR0917 - the C API's argument order
    a: Any,
    modes_a: Any,
    b: Any,
    modes_b: Any,
    c: Any,
    modes_c: Any,
    *,
    alpha: Any = 1.0,
    beta: Any = 1.0,
    gamma: Any = 1.0,
    out: Any = None,
    op_ab: Any = "add",
    op_abc: Any = "add",
    op_a: Any = "identity",
    op_b: Any = "identity",
    op_c: Any = "identity",
    compute_type: Any = None,
    stream: Any = None,
    handle: Handle | None = None,
) -> Any:
    """``out = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``
    (``cutensorElementwiseTrinaryExecute``). ``out`` defaults to ``c``.

    ``handle``: the :class:`~pycutensor.Handle` to plan and execute with, bound to the arrays'
    device (share one between threads to share its plan cache); None: the calling thread's own
    (:func:`~pycutensor.get_handle`).
    """
    return run(ElementwiseTrinary, (a, b, c), (modes_a, modes_b, modes_c), out,
               {"alpha": alpha, "beta": beta, "gamma": gamma}, (op_a, op_b, op_c),
               (op_ab, op_abc), compute_type, None, stream, None, handle=handle)  # fmt: skip
