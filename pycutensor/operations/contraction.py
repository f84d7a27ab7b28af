"""Contractions: ``D = alpha opA(A) opB(B) + beta C`` (``cutensorCreateContraction``,
``cutensorContract``), as an operation object and as a function on arrays."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tensor import TensorDescriptor
from ._common import OperationKeywords, PlannableOperation, WorkspaceLaunchKeywords, run

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["Contraction", "contract"]


class Contraction(PlannableOperation):
    """``D = alpha opA(A) opB(B) + beta C`` (``cutensorCreateContraction``); D is described by C.

    Modes in A and B but not C are contracted; modes in A, B and C are batch modes. ``op_a`` and
    ``op_b`` are unary operators (``"identity"``, ``"conj"``, ...). ``compute_type`` and
    ``handle``: :class:`~pycutensor.operations.OperationKeywords`.
    """

    kind = "contraction"

    def __init__(  # noqa: PLR0917 - the C API's argument order
        self,
        a: TensorDescriptor,
        modes_a: Any,
        b: TensorDescriptor,
        modes_b: Any,
        c: TensorDescriptor,
        modes_c: Any,
        *,
        op_a: Any = "identity",
        op_b: Any = "identity",
        **kw: Unpack[OperationKeywords],
    ) -> None:
        self._describe([(a, modes_a), (b, modes_b), (c, modes_c)], kw,
                       unary=(op_a, op_b, "identity"))  # fmt: skip


def contract(  # noqa: PLR0917 - the C API's argument order
    a: Any,
    modes_a: Any,
    b: Any,
    modes_b: Any,
    c: Any,
    modes_c: Any,
    *,
    alpha: Any = 1.0,
    beta: Any = 0.0,
    out: Any = None,
    op_a: Any = "identity",
    op_b: Any = "identity",
    **kw: Unpack[WorkspaceLaunchKeywords],
) -> Any:
    """``out = alpha opA(A) opB(B) + beta C`` over the modes given (``cutensorContract``).

    ``out`` defaults to ``c`` itself (C and D are the same array); when given, it must be laid out
    like ``c``. Modes of A and B missing from C are contracted. Returns the output array.
    ``compute_type``, ``preference``, ``stream``, ``workspace`` and ``handle``:
    :class:`~pycutensor.operations.WorkspaceLaunchKeywords`.
    """
    return run(Contraction, (a, b, c), (modes_a, modes_b, modes_c), out,
               {"alpha": alpha, "beta": beta}, (op_a, op_b), (), kw, "contract")  # fmt: skip
