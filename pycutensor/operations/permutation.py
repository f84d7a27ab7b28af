"""Permutations: ``B = alpha opA(A)`` with B's modes in any order (``cutensorCreatePermutation``,
``cutensorPermute``); also converts between the data types cuTENSOR's table allows."""

from __future__ import annotations

from typing import Any

from ..handle import Handle
from ..tensor import TensorDescriptor
from ._common import PlannableOperation, run

__all__ = ["Permutation", "permute"]


class Permutation(PlannableOperation):
    """``B = alpha opA(A)`` with B's modes in any order (``cutensorCreatePermutation``); also
    converts between the data types cuTENSOR's table allows (16F <-> 32F, 32F <-> 64F, ...)."""

    kind = "permutation"

    def __init__(
        self,
        a: TensorDescriptor,
        modes_a: Any,
        b: TensorDescriptor,
        modes_b: Any,
        *,
        op_a: Any = "identity",
        compute_type: Any = None,
        handle: Handle | None = None,
    ) -> None:
        self._create(handle, [(a, modes_a), (b, modes_b)], unary=(op_a,),
                     compute_type=compute_type)  # fmt: skip


def permute(
    a: Any,
    modes_a: Any,
    b: Any,
    modes_b: Any,
    *,
    alpha: Any = 1.0,
    op_a: Any = "identity",
    compute_type: Any = None,
    stream: Any = None,
    handle: Handle | None = None,
) -> Any:
    """``B = alpha opA(A)`` with B's modes in any order (``cutensorPermute``); returns ``b``.

    ``handle``: the :class:`~pycutensor.Handle` to plan and execute with, bound to the arrays'
    device (share one between threads to share its plan cache); None: the calling thread's own
    (:func:`~pycutensor.get_handle`).
    """
    return run(Permutation, (a, b), (modes_a, modes_b), None, {"alpha": alpha}, (op_a,), (),
               compute_type, None, stream, None, handle=handle)  # fmt: skip
