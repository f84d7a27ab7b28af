"""Permutations: ``B = alpha opA(A)`` with B's modes in any order (``cutensorCreatePermutation``,
``cutensorPermute``); also converts between the data types cuTENSOR's table allows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tensor import TensorDescriptor
from ._common import LaunchKeywords, OperationKeywords, PlannableOperation, run

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["Permutation", "permute"]


class Permutation(PlannableOperation):
    """``B = alpha opA(A)`` with B's modes in any order (``cutensorCreatePermutation``); also
    converts between the data types cuTENSOR's table allows (16F <-> 32F, 32F <-> 64F, ...).
    ``compute_type`` and ``handle``: :class:`~pycutensor.operations.OperationKeywords`."""

    kind = "permutation"

    def __init__(
        self,
        a: TensorDescriptor,
        modes_a: Any,
        b: TensorDescriptor,
        modes_b: Any,
        *,
        op_a: Any = "identity",
        **kw: Unpack[OperationKeywords],
    ) -> None:
        self._describe([(a, modes_a), (b, modes_b)], kw, unary=(op_a,))


def permute(
    a: Any,
    modes_a: Any,
    b: Any,
    modes_b: Any,
    *,
    alpha: Any = 1.0,
    op_a: Any = "identity",
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``B = alpha opA(A)`` with B's modes in any order (``cutensorPermute``); returns ``b``.

    ``compute_type``, ``stream`` and ``handle``: :class:`~pycutensor.operations.LaunchKeywords`.
    """
    return run(Permutation, (a, b), (modes_a, modes_b), None, {"alpha": alpha}, (op_a,), (), kw,
               "permute")  # fmt: skip
