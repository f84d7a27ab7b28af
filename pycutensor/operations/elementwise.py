"""Elementwise operations: ``D = opAC(alpha opA(A), gamma opC(C))``
(``cutensorCreateElementwiseBinary``) and ``D = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``
(``cutensorCreateElementwiseTrinary``). They take no workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tensor import TensorDescriptor
from ._common import LaunchKeywords, OperationKeywords, PlannableOperation, run

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["ElementwiseBinary", "ElementwiseTrinary", "elementwise_binary", "elementwise_trinary"]


class ElementwiseBinary(PlannableOperation):
    """``D = opAC(alpha opA(A), gamma opC(C))`` (``cutensorCreateElementwiseBinary``); D is described
    by C. Modes of A must appear in C; a mode C has and A lacks broadcasts A. ``compute_type``
    and ``handle``: :class:`~pycutensor.operations.OperationKeywords`."""

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
        **kw: Unpack[OperationKeywords],
    ) -> None:
        self._describe([(a, modes_a), (c, modes_c)], kw, unary=(op_a, op_c), binary=(op_ac,))


class ElementwiseTrinary(PlannableOperation):
    """``D = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``
    (``cutensorCreateElementwiseTrinary``); D is described by C. ``compute_type`` and ``handle``:
    :class:`~pycutensor.operations.OperationKeywords`."""

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
        **kw: Unpack[OperationKeywords],
    ) -> None:
        self._describe([(a, modes_a), (b, modes_b), (c, modes_c)], kw,
                       unary=(op_a, op_b, op_c), binary=(op_ab, op_abc))  # fmt: skip


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
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``out = opAC(alpha opA(A), gamma opC(C))`` (``cutensorElementwiseBinaryExecute``).

    ``out`` defaults to ``c`` (updated in place; allowed because C and D share one descriptor).
    ``compute_type``, ``stream`` and ``handle``: :class:`~pycutensor.operations.LaunchKeywords`.
    """
    return run(ElementwiseBinary, (a, c), (modes_a, modes_c), out,
               {"alpha": alpha, "gamma": gamma}, (op_a, op_c), (op_ac,), kw,
               "elementwise_binary")  # fmt: skip


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
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``out = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``
    (``cutensorElementwiseTrinaryExecute``). ``out`` defaults to ``c``.

    ``compute_type``, ``stream`` and ``handle``: :class:`~pycutensor.operations.LaunchKeywords`.
    """
    return run(ElementwiseTrinary, (a, b, c), (modes_a, modes_b, modes_c), out,
               {"alpha": alpha, "beta": beta, "gamma": gamma}, (op_a, op_b, op_c),
               (op_ab, op_abc), kw, "elementwise_trinary")  # fmt: skip
