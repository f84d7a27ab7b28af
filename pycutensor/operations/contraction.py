"""Contractions: ``D = alpha opA(A) opB(B) + beta C`` (``cutensorCreateContraction``,
``cutensorContract``), as an operation object and as a function on arrays."""

from __future__ import annotations

from typing import Any

from ..handle import Handle
from ..preference import PlanPreference
from ..tensor import TensorDescriptor
from ._common import PlannableOperation, run

__all__ = ["Contraction", "contract"]


class Contraction(PlannableOperation):
    """``D = alpha opA(A) opB(B) + beta C`` (``cutensorCreateContraction``); D is described by C.

    Modes in A and B but not C are contracted; modes in A, B and C are batch modes. ``op_a`` and
    ``op_b`` are unary operators (``"identity"``, ``"conj"``, ...). ``compute_type`` defaults to
    the first row of cuTENSOR's table for the data types (32F for 16-bit and 32-bit data, 64F for
    doubles). ``handle`` defaults to the descriptors' handle.
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
        compute_type: Any = None,
        handle: Handle | None = None,
    ) -> None:
        self._create(handle, [(a, modes_a), (b, modes_b), (c, modes_c)],
                     unary=(op_a, op_b, "identity"), compute_type=compute_type)  # fmt: skip


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
    compute_type: Any = None,
    preference: PlanPreference | None = None,
    stream: Any = None,
    workspace: Any = None,
    handle: Handle | None = None,
) -> Any:
    """``out = alpha opA(A) opB(B) + beta C`` over the modes given (``cutensorContract``).

    ``out`` defaults to ``c`` itself (C and D are the same array); when given, it must be laid out
    like ``c``. Modes of A and B missing from C are contracted. Returns the output array.
    ``handle``: the :class:`~pycutensor.Handle` to plan and execute with, bound to the arrays'
    device (share one between threads to share its plan cache); None: the calling thread's own
    (:func:`~pycutensor.get_handle`).
    """
    return run(Contraction, (a, b, c), (modes_a, modes_b, modes_c), out,
               {"alpha": alpha, "beta": beta}, (op_a, op_b), (), compute_type, preference,
               stream, workspace, handle=handle)  # fmt: skip
