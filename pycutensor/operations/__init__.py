"""cuTENSOR operations: contractions, reductions, elementwise operations and permutations.

One module per operation kind, each with two layers:

* **Operation objects** own one ``cutensorOperationDescriptor_t`` built from
  :class:`~pycutensor.TensorDescriptor` objects and mode labels: :class:`Contraction`
  (``D = alpha opA(A) opB(B) + beta C``, :mod:`.contraction`), :class:`ContractionTrinary`
  (``E = alpha opA(A) opB(B) opC(C) + beta opD(D)``, :mod:`.contraction_trinary`),
  :class:`Reduction` (``D = alpha opReduce(opA(A)) + beta opC(C)``, :mod:`.reduction`),
  :class:`ElementwiseBinary` (``D = opAC(alpha opA(A), gamma opC(C))``) and
  :class:`ElementwiseTrinary` (``D = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``,
  both in :mod:`.elementwise`) and :class:`Permutation` (``B = alpha opA(A)``,
  :mod:`.permutation`). ``op.plan()`` returns a :class:`~pycutensor.plan.Plan` that executes
  many times.
* **Functions on arrays**, :func:`contract`, :func:`contract_trinary`, :func:`reduce`,
  :func:`elementwise_binary`, :func:`elementwise_trinary` and :func:`permute`: they describe the
  arrays as they lie in memory, plan once and keep the plan in the handle's cache, keyed by
  everything that changes it (modes, shapes, strides, dtypes, pointer alignment, operators,
  compute type, preference), so a repeated call only executes. The result goes to ``out`` when
  given, else into the output operand itself (C, or B for a permutation), as in the C API where
  C may equal D.

The keywords they share have one home each, with what each one does: :class:`OperationKeywords`
(``compute_type``, ``handle``: every operation object and function), :class:`LaunchKeywords`
(and ``stream``: every function on arrays) and :class:`WorkspaceLaunchKeywords` (and
``preference``, ``workspace``: :func:`contract`, :func:`contract_trinary`, :func:`reduce`).

Below the kinds, and never importing them: :mod:`pycutensor.tables` (cuTENSOR's rules as data),
:mod:`pycutensor.checks` (those rules applied before any C call, with messages that quote them),
:mod:`pycutensor.operation` (the descriptor base class) and :mod:`pycutensor.plan`. Every name they
export that this module exported before the split is re-exported here.

Arrays given to the functions may broadcast with stride 0 where the mode also appears in the output
or another input: the mode is then omitted from that tensor, which is how cuTENSOR broadcasts.
Modes of extent 1 are left out of every tensor. Output tensors may not overlap themselves or an
input (C and D may be the same memory).

Scalars (alpha, beta, gamma) are passed in the operation's scalar type, which cuTENSOR reports
(``CUTENSOR_OPERATION_DESCRIPTOR_SCALAR_TYPE``): float32 for 16-bit and 32-bit real data, float64
for 64-bit, complex64/complex128 for complex data. Following the user guide, a zero scalar makes
its term ignore NaN in its tensor, while NaN in the tensors themselves propagates.
"""

from __future__ import annotations

from .. import tables as _tables
from ..checks import LoweredTensor, check_operation, lower_layouts

# Pre-split private names, kept for callers inside pycutensor (einsum imports them from here).
from ..checks import check_device_view as _check_device_view  # noqa: F401
from ..checks import coerce_scalar as _coerce_scalar  # noqa: F401
from ..checks import span as _span  # noqa: F401
from ..checks import table_scalar_dtype as _table_scalar_dtype  # noqa: F401
from ..operation import Operand, Operation

# pycutensor.tables' public names, re-exported ("X as X" for type checkers; __all__ takes them
# from tables.__all__), and its plumbing under private names for callers inside pycutensor.
from ..tables import BINARY_OPERATORS as BINARY_OPERATORS
from ..tables import COMPUTE_TYPES as COMPUTE_TYPES
from ..tables import CONTRACTION_TRINARY_TYPES as CONTRACTION_TRINARY_TYPES
from ..tables import CONTRACTION_TYPES as CONTRACTION_TYPES
from ..tables import ELEMENTWISE_BINARY_TYPES as ELEMENTWISE_BINARY_TYPES
from ..tables import ELEMENTWISE_TRINARY_TYPES as ELEMENTWISE_TRINARY_TYPES
from ..tables import KINDS as _KINDS  # noqa: F401
from ..tables import MIN_COMPUTE_CAPABILITY as MIN_COMPUTE_CAPABILITY
from ..tables import PERMUTATION_TYPES as PERMUTATION_TYPES
from ..tables import REDUCTION_TYPES as REDUCTION_TYPES
from ..tables import UNARY_OPERATORS as UNARY_OPERATORS
from ..tables import UNARY_OPERATORS_BY_DATA_TYPE as UNARY_OPERATORS_BY_DATA_TYPE
from ..tables import binary_operator as binary_operator
from ..tables import check_types as _check_types  # noqa: F401
from ..tables import compute_type_name as compute_type_name
from ..tables import expected_scalar_type as expected_scalar_type
from ..tables import unary_operator as unary_operator
from ._common import (
    LaunchKeywords,
    OperationKeywords,
    PlannableOperation,
    WorkspaceLaunchKeywords,
    show_operation_keywords,
)
from .contraction import Contraction, contract
from .contraction_trinary import ContractionTrinary, contract_trinary
from .elementwise import (
    ElementwiseBinary,
    ElementwiseTrinary,
    elementwise_binary,
    elementwise_trinary,
)
from .permutation import Permutation, permute
from .reduction import Reduction, reduce

__all__ = [
    "Contraction",
    "ContractionTrinary",
    "ElementwiseBinary",
    "ElementwiseTrinary",
    "LaunchKeywords",
    "LoweredTensor",
    "Operand",
    "Operation",
    "OperationKeywords",
    "Permutation",
    "PlannableOperation",
    "Reduction",
    "WorkspaceLaunchKeywords",
    "check_operation",
    "contract",
    "contract_trinary",
    "elementwise_binary",
    "elementwise_trinary",
    "lower_layouts",
    "permute",
    "reduce",
]
# and pycutensor.tables' public names imported above (not KINDS, Kind, check_types, operator_name)
__all__ += [name for name in _tables.__all__ if name in globals()]

# help(), inspect.signature and the API reference list each kind's shared keywords (its
# operation class's OperationKeywords, its function's LaunchKeywords or WorkspaceLaunchKeywords).
show_operation_keywords(globals())
