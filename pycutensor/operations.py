"""cuTENSOR operations: contractions, reductions, elementwise operations and permutations.

Two layers:

* **Operation objects** own one ``cutensorOperationDescriptor_t`` built from
  :class:`~pycutensor.TensorDescriptor` objects and mode labels: :class:`Contraction`
  (``D = alpha opA(A) opB(B) + beta C``), :class:`ContractionTrinary` (``E = alpha opA(A) opB(B)
  opC(C) + beta opD(D)``), :class:`Reduction` (``D = alpha opReduce(opA(A)) + beta opC(C)``),
  :class:`ElementwiseBinary` (``D = opAC(alpha opA(A), gamma opC(C))``),
  :class:`ElementwiseTrinary` (``D = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``) and
  :class:`Permutation` (``B = alpha opA(A)``). ``op.plan()`` returns a :class:`~pycutensor.plan.Plan`
  that executes many times.
* **Functions on arrays**, :func:`contract`, :func:`contract_trinary`, :func:`reduce`,
  :func:`elementwise_binary`, :func:`elementwise_trinary` and :func:`permute`: they describe the
  arrays as they lie in memory, plan once and keep the plan in the handle's cache, keyed by
  everything that changes it (modes, shapes, strides, dtypes, pointer alignment, operators,
  compute type, preference), so a repeated call only executes. The result goes to ``out`` when
  given, else into the output operand itself (C, or B for a permutation), as in the C API where
  C may equal D.

cuTENSOR's rules are checked in Python before any C call, with messages that quote them:

* every mode at most once per tensor, the same extent wherever a mode appears; modes absent from
  the output are contracted (reduced); elementwise operations and permutations need every input
  mode in the output; the output's modes must come from the inputs of a contraction or reduction;
* the supported combinations of data types and compute descriptors (the tables of
  ``cutensorCreateContraction``, ``...ContractionTrinary``, ``...Reduction``,
  ``...ElementwiseBinary``, ``...ElementwiseTrinary`` and ``...Permutation``), and the GPU
  generation the emulated compute types need (9X16BF and 8XINT8: Hopper, 4X16F: Blackwell);
* the unary operators each data type supports (the user guide's table: real types all the
  mathematical operators, complex types IDENTITY and CONJ, integers IDENTITY and RELU; a
  contraction's C takes only IDENTITY) and the binary operators ADD, MUL, MAX, MIN;
* output tensors may not overlap themselves or an input (C and D may be the same memory).

Arrays given to the functions above may broadcast with stride 0 where the mode also appears in the
output or another input: the mode is then omitted from that tensor, which is how cuTENSOR
broadcasts. Modes of extent 1 are left out of every tensor.

Scalars (alpha, beta, gamma) are passed in the operation's scalar type, which cuTENSOR reports
(``CUTENSOR_OPERATION_DESCRIPTOR_SCALAR_TYPE``): float32 for 16-bit and 32-bit real data, float64
for 64-bit, complex64/complex128 for complex data. Following the user guide, a zero scalar makes
its term ignore NaN in its tensor, while NaN in the tensors themselves propagates.
"""

from __future__ import annotations

import ctypes
import numbers
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from pycudnn._shared.arrays import ArrayView, alignment_of, as_array_view
from pycudnn._shared.cuda import stream_handle
from pycudnn._shared.resource import CResource

from . import _bindings
from .handle import Handle, get_handle
from .tensor import (
    MAX_ALIGNMENT,
    ModeMap,
    TensorDescriptor,
    TensorSpec,
    check_modes,
    check_pointer,
    data_type_name,
    dtype_of_data_type,
)

if TYPE_CHECKING:  # pragma: no cover
    from .plan import Plan, PlanPreference

__all__ = [
    "BINARY_OPERATORS",
    "COMPUTE_TYPES",
    "CONTRACTION_TRINARY_TYPES",
    "CONTRACTION_TYPES",
    "ELEMENTWISE_BINARY_TYPES",
    "ELEMENTWISE_TRINARY_TYPES",
    "MIN_COMPUTE_CAPABILITY",
    "PERMUTATION_TYPES",
    "REDUCTION_TYPES",
    "UNARY_OPERATORS",
    "UNARY_OPERATORS_BY_DATA_TYPE",
    "Contraction",
    "ContractionTrinary",
    "ElementwiseBinary",
    "ElementwiseTrinary",
    "Operand",
    "Operation",
    "Permutation",
    "Reduction",
    "binary_operator",
    "check_operation",
    "compute_type_name",
    "contract",
    "contract_trinary",
    "elementwise_binary",
    "elementwise_trinary",
    "expected_scalar_type",
    "lower_layouts",
    "permute",
    "reduce",
    "unary_operator",
]

# -- operators -------------------------------------------------------------------------------------
_BINARY_NAMES = ("ADD", "MUL", "MAX", "MIN")
#: Unary ``cutensorOperator_t`` members by lower-case name.
UNARY_OPERATORS: dict[str, int] = {
    m.name.lower(): int(m)
    for m in _bindings.cutensorOperator_t
    if m.name not in _BINARY_NAMES and m.name != "UNKNOWN"
}
#: Binary ``cutensorOperator_t`` members by lower-case name (``opAC``, ``opAB``, ``opABC``, ``opReduce``).
BINARY_OPERATORS: dict[str, int] = {
    name.lower(): int(_bindings.cutensorOperator_t[name]) for name in _BINARY_NAMES
}

# The user guide's table "supported unary operators" (per data type). MISH, SWISH, SOFT_PLUS and
# SOFT_SIGN came later (cutensor/types.h documents them as real-valued activations) and are
# allowed for the real floating-point types too.
_REAL_UNARY = (
    "identity", "sqrt", "rcp", "relu", "sigmoid", "tanh", "exp", "log", "abs", "neg",
    "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    "ceil", "floor", "mish", "swish", "soft_plus", "soft_sign",
)  # fmt: skip
_COMPLEX_UNARY = ("identity", "conj")
_INTEGER_UNARY = ("identity", "relu")
#: Data type name -> the unary operators the user guide lists for it.
UNARY_OPERATORS_BY_DATA_TYPE: dict[str, frozenset[str]] = {
    **{t: frozenset(_REAL_UNARY) for t in ("R_32F", "R_64F", "R_16F", "R_16BF")},
    **{t: frozenset(_COMPLEX_UNARY) for t in ("C_32F", "C_64F", "C_16F")},
    **{t: frozenset(_INTEGER_UNARY) for t in ("R_8I", "R_8U", "R_32I", "R_32U")},
}


def _operator(value: Any, table: dict[str, int], what: str, name: str) -> int:
    if isinstance(value, str):
        found = table.get(value.lower().removeprefix("cutensor_op_").removeprefix("op_"))
        if found is not None:
            return found
    elif (
        isinstance(value, (int, np.integer))
        and not isinstance(value, bool)
        and int(value) in table.values()
    ):
        return int(value)
    raise ValueError(
        f"{name}={value!r} is not a {what} cuTENSOR operator; use one of: {', '.join(table)}"
    )


def unary_operator(value: Any, name: str = "op") -> int:
    """A unary ``cutensorOperator_t`` from a name (``"conj"``), an enum member or its value."""
    return _operator(value, UNARY_OPERATORS, "unary", name)


def binary_operator(value: Any, name: str = "op") -> int:
    """A binary ``cutensorOperator_t`` (ADD, MUL, MAX, MIN) from a name, a member or a value."""
    return _operator(value, BINARY_OPERATORS, "binary", name)


def _operator_name(value: int) -> str:
    return _bindings.cutensorOperator_t(value).name


# -- compute descriptors ---------------------------------------------------------------------------
#: Compute descriptor names, as in ``CUTENSOR_COMPUTE_DESC_<name>``.
COMPUTE_TYPES: tuple[str, ...] = tuple(
    s.removeprefix("CUTENSOR_COMPUTE_DESC_") for s in _bindings.COMPUTE_DESCRIPTOR_SYMBOLS
)
#: Emulated compute types and the GPU generation they need (the "Tensor Core" column of the tables).
MIN_COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "9X16BF": (9, 0),
    "8XINT8": (9, 0),
    "4X16F": (10, 0),
}
_COMPUTE_BY_DTYPE = {"float16": "16F", "bfloat16": "16BF", "float32": "32F", "float64": "64F"}


def compute_type_name(value: Any) -> str | None:
    """Normalise a compute type: ``"32F"``, ``"tf32"``, ``"CUTENSOR_COMPUTE_DESC_3XTF32"``, or a
    floating dtype (float16 -> 16F, bfloat16 -> 16BF, float32 -> 32F, float64 -> 64F). None stays
    None (the default of the data types)."""
    if value is None:
        return None
    if isinstance(value, str):
        name = value.upper().removeprefix("CUTENSOR_").removeprefix("COMPUTE_DESC_")
        if name in COMPUTE_TYPES:
            return name
    else:
        try:
            dt = np.dtype(value)
        except TypeError:
            dt = None
        if dt is not None and dt.name in _COMPUTE_BY_DTYPE:
            return _COMPUTE_BY_DTYPE[dt.name]
    raise ValueError(
        f"compute_type={value!r} is not a cuTENSOR compute descriptor; use one of: "
        f"{', '.join(COMPUTE_TYPES)}"
    )


# -- the supported-combination tables (from the cutensor.h documentation of each create call) ------
_R16F, _R16BF, _R32F, _R64F, _C32F, _C64F = "R_16F", "R_16BF", "R_32F", "R_64F", "C_32F", "C_64F"


def _rows(types: tuple[str, ...], computes: str) -> list[tuple[str, ...]]:
    return [(*types, c) for c in computes.split()]


#: ``cutensorCreateContraction``: (A, B, C, compute); the scalar type is in :func:`expected_scalar_type`.
CONTRACTION_TYPES: tuple[tuple[str, ...], ...] = (
    *_rows((_R16F, _R16F, _R16F), "32F"),
    *_rows((_R16BF, _R16BF, _R16BF), "32F"),
    *_rows((_R32F, _R32F, _R32F), "32F TF32 3XTF32 16BF 16F 9X16BF 4X16F"),
    *_rows((_R64F, _R64F, _R64F), "64F 32F 8XINT8"),
    *_rows((_C32F, _C32F, _C32F), "32F TF32 3XTF32 9X16BF 4X16F"),
    *_rows((_C64F, _C64F, _C64F), "64F 32F 8XINT8"),
    *_rows((_R64F, _C64F, _C64F), "64F"),
    *_rows((_C64F, _R64F, _C64F), "64F"),
)
#: ``cutensorCreateContractionTrinary``: (A, B, C, D, compute).
CONTRACTION_TRINARY_TYPES: tuple[tuple[str, ...], ...] = (
    *_rows((_R16F,) * 4, "32F"),
    *_rows((_R16BF,) * 4, "32F"),
    *_rows((_R32F,) * 4, "32F TF32 3XTF32 16BF 16F 9X16BF 4X16F"),
    *_rows((_R64F,) * 4, "64F 32F 8XINT8"),
    *_rows((_C32F,) * 4, "32F TF32 3XTF32 9X16BF 4X16F"),
    *_rows((_C64F,) * 4, "64F 32F 8XINT8"),
)
#: ``cutensorCreateReduction``: (A, C, compute).
REDUCTION_TYPES: tuple[tuple[str, ...], ...] = (
    *_rows((_R16F, _R16F), "32F 16F"),
    *_rows((_R16BF, _R16BF), "32F 16BF"),
    *_rows((_R32F, _R32F), "32F"),
    *_rows((_R64F, _R64F), "64F"),
    *_rows((_C32F, _C32F), "32F"),
    *_rows((_C64F, _C64F), "64F"),
)
#: ``cutensorCreateElementwiseBinary``: (A, C, compute).
ELEMENTWISE_BINARY_TYPES: tuple[tuple[str, ...], ...] = (
    *_rows((_R16F, _R16F), "32F 16F"),
    *_rows((_R16BF, _R16BF), "32F 16BF"),
    *_rows((_R32F, _R32F), "32F"),
    *_rows((_R64F, _R64F), "64F"),
    *_rows((_C32F, _C32F), "32F"),
    *_rows((_C64F, _C64F), "64F"),
    *_rows((_R32F, _R16F), "32F"),
    *_rows((_R64F, _R32F), "64F"),
    *_rows((_C64F, _C32F), "64F"),
)
#: ``cutensorCreateElementwiseTrinary``: (A, B, C, compute).
ELEMENTWISE_TRINARY_TYPES: tuple[tuple[str, ...], ...] = (
    *_rows((_R16F, _R16F, _R16F), "32F 16F"),
    *_rows((_R16BF, _R16BF, _R16BF), "32F 16BF"),
    *_rows((_R32F, _R32F, _R32F), "32F"),
    *_rows((_R64F, _R64F, _R64F), "64F"),
    *_rows((_C32F, _C32F, _C32F), "32F"),
    *_rows((_C64F, _C64F, _C64F), "64F"),
    *_rows((_R32F, _R32F, _R16F), "32F"),
    *_rows((_R64F, _R64F, _R32F), "64F"),
    *_rows((_C64F, _C64F, _C32F), "64F"),
)
#: ``cutensorCreatePermutation``: (A, B, compute).
PERMUTATION_TYPES: tuple[tuple[str, ...], ...] = (
    *_rows((_R16F, _R16F), "32F 16F"),
    *_rows((_R16F, _R32F), "32F"),
    *_rows((_R32F, _R16F), "32F"),
    *_rows((_R16BF, _R16BF), "32F 16BF"),
    *_rows((_R32F, _R32F), "32F"),
    *_rows((_R64F, _R64F), "64F"),
    *_rows((_R32F, _R64F), "64F"),
    *_rows((_R64F, _R32F), "64F"),
    *_rows((_C32F, _C32F), "32F"),
    *_rows((_C64F, _C64F), "64F"),
    *_rows((_C32F, _C64F), "64F"),
    *_rows((_C64F, _C32F), "64F"),
)


def expected_scalar_type(output_type: str, compute_type: str) -> str:
    """The scalar type the user guide's table gives for an output data type and compute type.

    16-bit and 32-bit real outputs take R_32F scalars, R_64F takes R_64F; complex outputs take
    C_32F or C_64F. cuTENSOR itself is asked at run time (``SCALAR_TYPE``); this is the table.
    """
    del compute_type  # every row of the guide's table is decided by the output type alone
    if output_type in ("R_16F", "R_16BF", "R_32F"):
        return "R_32F"
    if output_type == "R_64F":
        return "R_64F"
    if output_type in ("C_16F", "C_16BF", "C_32F"):
        return "C_32F"
    if output_type == "C_64F":
        return "C_64F"
    raise TypeError(f"the user guide's scalar-type table has no row for output type {output_type}")


@dataclass(frozen=True)
class _Kind:
    name: str  # operation kind, e.g. "contraction"
    title: str  # for messages
    create: str
    execute: str
    tensors: tuple[str, ...]  # tensors described at creation, in C order; the last is the output
    operands: tuple[str, ...]  # pointers at execute, in C order (the output last)
    scalars: tuple[str, ...]
    defaults: tuple[float, ...]
    takes_workspace: bool
    table: tuple[tuple[str, ...], ...]
    unary: tuple[str, ...]  # names of the unary-operator arguments, one per tensor
    binary: tuple[str, ...]
    rule: str  # which modes may appear where


_KINDS: dict[str, _Kind] = {
    k.name: k
    for k in (
        _Kind("contraction", "contraction", "cutensorCreateContraction", "cutensorContract",
              ("A", "B", "C"), ("A", "B", "C", "D"), ("alpha", "beta"), (1.0, 0.0), True,
              CONTRACTION_TYPES, ("op_a", "op_b", "op_c"), (), "contraction"),
        _Kind("contraction_trinary", "trinary contraction", "cutensorCreateContractionTrinary",
              "cutensorContractTrinary", ("A", "B", "C", "D"), ("A", "B", "C", "D", "E"),
              ("alpha", "beta"), (1.0, 0.0), True, CONTRACTION_TRINARY_TYPES,
              ("op_a", "op_b", "op_c", "op_d"), (), "contraction"),
        _Kind("reduction", "reduction", "cutensorCreateReduction", "cutensorReduce",
              ("A", "C"), ("A", "C", "D"), ("alpha", "beta"), (1.0, 0.0), True,
              REDUCTION_TYPES, ("op_a", "op_c"), ("op_reduce",), "reduction"),
        _Kind("elementwise_binary", "elementwise binary operation",
              "cutensorCreateElementwiseBinary", "cutensorElementwiseBinaryExecute",
              ("A", "C"), ("A", "C", "D"), ("alpha", "gamma"), (1.0, 1.0), False,
              ELEMENTWISE_BINARY_TYPES, ("op_a", "op_c"), ("op_ac",), "elementwise"),
        _Kind("elementwise_trinary", "elementwise trinary operation",
              "cutensorCreateElementwiseTrinary", "cutensorElementwiseTrinaryExecute",
              ("A", "B", "C"), ("A", "B", "C", "D"), ("alpha", "beta", "gamma"),
              (1.0, 1.0, 1.0), False, ELEMENTWISE_TRINARY_TYPES, ("op_a", "op_b", "op_c"),
              ("op_ab", "op_abc"), "elementwise"),
        _Kind("permutation", "permutation", "cutensorCreatePermutation", "cutensorPermute",
              ("A", "B"), ("A", "B"), ("alpha",), (1.0,), False, PERMUTATION_TYPES,
              ("op_a",), (), "elementwise"),
    )
}  # fmt: skip


#: Argument names of the array functions per kind ("a", "b", "c"), for messages.
_ARRAY_NAMES: dict[str, tuple[str, ...]] = {
    name: tuple(t.lower() for t in k.tensors) for name, k in _KINDS.items()
}


def _format_rows(rows: Sequence[tuple[str, ...]], tensors: Sequence[str]) -> str:
    grouped: dict[tuple[str, ...], list[str]] = {}
    for row in rows:
        grouped.setdefault(row[:-1], []).append(row[-1])
    return "; ".join(
        ", ".join(f"{t}={v}" for t, v in zip(tensors, types, strict=True))
        + f" (compute {', '.join(computes)})"
        for types, computes in grouped.items()
    )


def _check_types(kind: _Kind, types: tuple[str, ...], compute: str | None) -> str:
    """Look ``types`` (+ ``compute``) up in the kind's table; return the compute type to use."""
    matching = [row for row in kind.table if row[:-1] == types]
    described = ", ".join(f"{t}={v}" for t, v in zip(kind.tensors, types, strict=False))
    if not matching:
        raise TypeError(
            f"cuTENSOR's {kind.title} does not support {described}; its table of supported "
            f"combinations lists: {_format_rows(kind.table, kind.tensors)}"
        )
    computes = [row[-1] for row in matching]
    if compute is None:
        return computes[0]  # the first row: 32F for 16-bit data, 64F for double
    if compute not in computes:
        raise ValueError(
            f"cuTENSOR's {kind.title} with {described} supports the compute types "
            f"{', '.join(computes)} (its table of supported combinations), not {compute}"
        )
    return compute


# -- structural checks ------------------------------------------------------------------------------
def _label_tuple(modes: Any, name: str) -> tuple[Hashable, ...]:
    if isinstance(modes, str):
        return tuple(modes)
    if isinstance(modes, tuple):
        return modes
    if isinstance(modes, Sequence) and not isinstance(modes, bytes):
        return tuple(modes)
    raise TypeError(
        f"{name} must be a string or a sequence of mode labels, not {type(modes).__name__}"
    )


def _check_extents_agree(
    labels: Sequence[Sequence[Hashable]], shapes: Sequence[Sequence[int]], names: Sequence[str]
) -> dict[Hashable, int]:
    extent: dict[Hashable, int] = {}
    where: dict[Hashable, str] = {}
    for tensor_labels, shape, name in zip(labels, shapes, names, strict=False):
        for label, n in zip(tensor_labels, shape, strict=False):
            seen = extent.get(label)
            if seen is None:
                extent[label] = int(n)
                where[label] = name
            elif seen != n:
                raise ValueError(
                    f"mode {label!r} has extent {seen} in {where[label]} but {n} in {name}: "
                    "a mode must have the same extent in every tensor it appears in"
                )
    return extent


def _check_structure(kind: _Kind, labels: Sequence[tuple[Hashable, ...]]) -> None:
    names = kind.tensors
    *inputs, output = labels
    out_set = set(output)
    if kind.rule == "elementwise":
        for name, tensor_labels in zip(names, inputs, strict=False):
            missing = [m for m in tensor_labels if m not in out_set]
            if missing:
                raise ValueError(
                    f"mode {missing[0]!r} of {name} does not appear in the output {names[-1]}: in "
                    f"a {kind.title} every mode of an input must appear in the output (a mode only "
                    "in an input would be contracted; use a contraction or a reduction)"
                )
    else:
        union = set().union(*inputs) if inputs else set()
        missing = [m for m in output if m not in union]
        if missing:
            sources = " or ".join(names[:-1])
            raise ValueError(
                f"mode {missing[0]!r} of the output {names[-1]} appears in no input: in a "
                f"{kind.title} every output mode comes from {sources}; modes absent from the output "
                "are the ones contracted"
            )


def check_operation(
    kind: str,
    specs: Sequence[TensorSpec],
    modes: Sequence[Any],
    *,
    unary: Sequence[Any] = (),
    binary: Sequence[Any] = (),
    compute_type: Any = None,
) -> tuple[tuple[tuple[Hashable, ...], ...], tuple[int, ...], tuple[int, ...], str]:
    """Validate an operation in Python, as cuTENSOR's documentation states its rules.

    ``kind``: ``"contraction"``, ``"contraction_trinary"``, ``"reduction"``,
    ``"elementwise_binary"``, ``"elementwise_trinary"`` or ``"permutation"``. ``specs`` and
    ``modes`` describe the tensors given at creation, output last (A, B, C for a contraction;
    A, C for a reduction; A, B for a permutation, ...). ``unary`` holds one operator per tensor
    (missing ones are IDENTITY), ``binary`` the binary operators of the kind.

    Returns the labels per tensor, the unary and binary operator values, and the compute type.
    Raises ``TypeError`` / ``ValueError`` naming the rule; nothing here needs a GPU.
    """
    from pycudnn.layout import is_overlapping

    info = _KINDS.get(kind)
    if info is None:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if len(specs) != len(info.tensors) or len(modes) != len(info.tensors):
        raise TypeError(f"a {info.title} describes the tensors {', '.join(info.tensors)}")
    labels = tuple(
        check_modes(m, spec.ndim, f"modes of {name}")
        for m, spec, name in zip(modes, specs, info.tensors, strict=False)
    )
    _check_extents_agree(labels, [s.extents for s in specs], info.tensors)
    _check_structure(info, labels)
    types = tuple(s.data_type for s in specs)
    compute = _check_types(info, types, compute_type_name(compute_type))
    unary_values = list(unary) + ["identity"] * (len(info.tensors) - len(unary))
    if len(unary_values) != len(info.tensors):
        raise TypeError(f"a {info.title} takes {len(info.tensors)} unary operators")
    ops: list[int] = []
    for op, arg, type_name in zip(unary_values, info.unary, types, strict=False):
        value = unary_operator(op, arg)
        allowed = UNARY_OPERATORS_BY_DATA_TYPE.get(type_name, frozenset({"identity"}))
        op_name = _operator_name(value).lower()
        if op_name not in allowed:
            raise ValueError(
                f"{arg}={op_name.upper()} is not supported for {type_name} data: the user guide's "
                f"table lists {', '.join(sorted(o.upper() for o in allowed))} for {type_name}"
            )
        ops.append(value)
    if kind == "contraction" and ops[2] != int(_bindings.CUTENSOR_OP_IDENTITY):
        raise ValueError("op_c of a contraction must be IDENTITY (cutensorCreateContraction)")
    if len(binary) != len(info.binary):
        raise TypeError(f"a {info.title} takes {len(info.binary)} binary operators")
    binary_values = tuple(
        binary_operator(op, arg) for op, arg in zip(binary, info.binary, strict=False)
    )
    out = specs[-1]
    if is_overlapping(out.extents, out.strides):
        raise ValueError(
            f"the output {info.tensors[-1]} has overlapping strides {out.strides} for extents "
            f"{out.extents}: some element would be written twice"
        )
    return labels, tuple(ops), binary_values, compute


# -- lowering arrays to descriptors ---------------------------------------------------------------
class LoweredTensor(NamedTuple):
    """A tensor as cuTENSOR will see it: the modes kept, their extents and strides."""

    labels: tuple[Hashable, ...]
    extents: tuple[int, ...]
    strides: tuple[int, ...]


def lower_layouts(
    labels: Sequence[Sequence[Hashable]],
    shapes: Sequence[Sequence[int]],
    strides: Sequence[Sequence[int]],
    output: int,
    *,
    names: Sequence[str],
    broadcast: bool = False,
    output_broadcasts: bool = False,
) -> tuple[list[LoweredTensor], dict[Hashable, int]]:
    """Turn array layouts into what cuTENSOR accepts; returns the tensors and each mode's extent.

    * a mode of extent 1 is left out (its index is always 0); with ``broadcast=True`` a mode may
      have extent 1 in one tensor and n in another (NumPy's size-1 broadcasting), otherwise every
      extent of a mode must agree;
    * an input mode with stride 0 (a broadcast view) is left out of that tensor, which is how
      cuTENSOR broadcasts, when the mode stays in another input, or, for elementwise operations
      and permutations (``output_broadcasts=True``), in the output; otherwise (the mode would be
      summed within that tensor alone, or be an output mode of a contraction that no input has)
      it cannot be expressed and is refused;
    * an output with stride 0, negative strides anywhere and extents of 0 are refused.
    """
    extent: dict[Hashable, int] = {}
    origin: dict[Hashable, str] = {}
    for tensor_labels, shape, name in zip(labels, shapes, names, strict=False):
        for label, extent_value in zip(tensor_labels, shape, strict=False):
            n = int(extent_value)
            if n == 0:
                raise ValueError(
                    f"{name} has extent 0 along mode {label!r}: cuTENSOR requires every extent to "
                    "be larger than zero"
                )
            seen = extent.get(label)
            if seen is None or (broadcast and seen == 1):
                extent[label] = n
                origin[label] = name
            elif seen != n and not (broadcast and n == 1):
                rule = (
                    "sizes must match or be 1 (NumPy broadcasting)"
                    if broadcast
                    else "a mode must have the same extent in every tensor it appears in"
                )
                raise ValueError(
                    f"mode {label!r} has extent {seen} in {origin[label]} but {n} in {name}: {rule}"
                )
    # Where each mode is present with a real (non-zero) stride and extent > 1.
    present: dict[Hashable, set[int]] = {}
    for i, (tensor_labels, shape, st) in enumerate(zip(labels, shapes, strides, strict=False)):
        for label, n, s in zip(tensor_labels, shape, st, strict=False):
            if n > 1 and s != 0:
                present.setdefault(label, set()).add(i)
    out: list[LoweredTensor] = []
    for i, (tensor_labels, shape, st, name) in enumerate(
        zip(labels, shapes, strides, names, strict=False)
    ):
        kept_labels: list[Hashable] = []
        kept_extents: list[int] = []
        kept_strides: list[int] = []
        for label, n_value, s_value in zip(tensor_labels, shape, st, strict=False):
            n, s = int(n_value), int(s_value)
            if n == 1:
                continue
            if s < 0:
                raise ValueError(
                    f"{name} has a negative stride ({s}) along mode {label!r}: cuTENSOR does not "
                    "support negative strides"
                )
            if s == 0:
                if i == output:
                    raise ValueError(
                        f"the output {name} has stride 0 along mode {label!r}: output elements "
                        "would overlap"
                    )
                elsewhere = present.get(label, set()) - {i, output}
                if not elsewhere and not (output_broadcasts and label in labels[output]):
                    where = (
                        "an output mode that no other input has (a contraction's output modes "
                        "come from its inputs)"
                        if label in labels[output]
                        else "a mode summed within that tensor alone"
                    )
                    raise ValueError(
                        f"{name} has stride 0 along mode {label!r}, {where}: cuTENSOR broadcasts "
                        "a mode by omitting it from a tensor, which cannot express this; make the "
                        "array contiguous first"
                    )
                continue  # broadcast: omit the mode from this tensor
            kept_labels.append(label)
            kept_extents.append(n)
            kept_strides.append(s)
        out.append(LoweredTensor(tuple(kept_labels), tuple(kept_extents), tuple(kept_strides)))
    return out, extent


# -- scalars ------------------------------------------------------------------------------------------
def _table_scalar_dtype(output_type: str) -> np.dtype | None:
    """The scalar dtype the user guide's table gives for an output type, None where it has no row
    (the type tables refuse those operations anyway)."""
    try:
        return dtype_of_data_type(expected_scalar_type(output_type, ""))
    except TypeError:
        return None


def _coerce_scalar(value: Any, dtype: np.dtype, name: str) -> Any:
    if value.__class__ is float or value.__class__ is int:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Number):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        if dtype.kind != "c":
            if complex(value).imag != 0:
                raise ValueError(
                    f"{name}={value!r} is complex but the operation's scalar type is {dtype} "
                    "(real data take real scalars)"
                )
            return complex(value).real
        return complex(value)
    return value


# -- operation objects ----------------------------------------------------------------------------------
class Operand(NamedTuple):
    """One operand of an operation, as its execute sees it."""

    name: str  # "A", "B", "C", "D", "E"
    descriptor: TensorDescriptor
    labels: tuple[Hashable, ...]
    mode_ids: tuple[int, ...]
    shape: tuple[int, ...]  # the array layout the execute expects
    strides: tuple[int, ...]

    @property
    def spec(self) -> TensorSpec:
        return self.descriptor.spec


def _destroy_operation(ptr: int) -> None:
    from ._lib import LIB

    LIB.function("cutensorDestroyOperationDescriptor")(ptr)


class Operation(CResource):
    """A ``cutensorOperationDescriptor_t``; see the subclasses for each kind.

    Keeps its handle and tensor descriptors alive. :meth:`plan` plans it; the plan executes it.
    """

    _kind = "cuTENSOR operation descriptor"
    kind: ClassVar[str] = ""

    def _create(
        self,
        handle: Handle | None,
        tensors: Sequence[tuple[TensorDescriptor, Any]],
        *,
        unary: Sequence[Any] = (),
        binary: Sequence[Any] = (),
        compute_type: Any = None,
        layouts: Sequence[tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
    ) -> None:
        from ._lib import LIB, check, clear_last_error, compute_descriptor

        info = _KINDS[self.kind]
        descriptors = [d for d, _ in tensors]
        for d, name in zip(descriptors, info.tensors, strict=False):
            if not isinstance(d, TensorDescriptor):
                raise TypeError(
                    f"{name} must be a pycutensor.TensorDescriptor, not {type(d).__name__} "
                    "(the functions in pycutensor.operations take arrays)"
                )
            d._check_open()
        labels, unary_ops, binary_ops, compute = check_operation(
            self.kind,
            [d.spec for d in descriptors],
            [m for _, m in tensors],
            unary=unary,
            binary=binary,
            compute_type=compute_type,
        )
        if handle is None:
            handle = descriptors[0].handle
        if not isinstance(handle, Handle):
            raise TypeError(
                f"handle must be a pycutensor.Handle or None, not {type(handle).__name__}"
            )
        handle._check_open()
        for d, name in zip(descriptors, info.tensors, strict=False):
            if d.handle.device_id != handle.device_id:
                raise ValueError(
                    f"{name} was described on device {d.handle.device_id}, the handle is for "
                    f"device {handle.device_id}"
                )
        need = MIN_COMPUTE_CAPABILITY.get(compute)
        if need is not None and handle.compute_capability < need:
            raise ValueError(
                f"compute type {compute} needs compute capability {need[0]}.{need[1]} or newer "
                f"(cuTENSOR's table), device {handle.device_id} has "
                f"{handle.compute_capability[0]}.{handle.compute_capability[1]}"
            )
        mode_map = ModeMap()
        ids = [mode_map.ids(t) for t in labels]
        arrays = [(ctypes.c_int32 * len(t))(*t) for t in ids]
        identity = int(_bindings.CUTENSOR_OP_IDENTITY)
        compute_ptr = compute_descriptor(compute)
        ds, m, u, b = descriptors, arrays, unary_ops, binary_ops
        out = ctypes.c_void_p()
        ref = ctypes.byref(out)
        # The output (D, or E) is passed with the last input's descriptor and modes: cuTENSOR
        # requires descD == descC (modeD == modeC) "for now".
        # fmt: off
        if self.kind == "contraction":
            args: tuple[Any, ...] = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1],
                                     ds[2], m[2], identity, ds[2], m[2], compute_ptr)
        elif self.kind == "contraction_trinary":
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1], ds[2], m[2], u[2],
                    ds[3], m[3], u[3], ds[3], m[3], compute_ptr)
        elif self.kind in ("reduction", "elementwise_binary"):  # the same argument order
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1], ds[1], m[1], b[0],
                    compute_ptr)
        elif self.kind == "elementwise_trinary":
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], u[1], ds[2], m[2], u[2],
                    ds[2], m[2], b[0], b[1], compute_ptr)
        else:  # permutation
            args = (handle, ref, ds[0], m[0], u[0], ds[1], m[1], compute_ptr)
        # fmt: on
        previous = handle.activate()
        try:
            clear_last_error()
            status = LIB.function(info.create)(*args)
        finally:
            handle.restore(previous)
        check(status, info.create)
        super().__init__(int(out.value or 0), _destroy_operation, parents=(handle, *descriptors))
        self.handle = handle
        self.compute_type: str = compute
        self.mode_map = mode_map
        self._mode_arrays = arrays
        if layouts is None:
            layouts = [(desc.extents, desc.strides) for desc in descriptors]
        operands = [
            Operand(name, desc, lab, i, tuple(lay[0]), tuple(lay[1]))
            for name, desc, lab, i, lay in zip(
                info.tensors, descriptors, labels, ids, layouts, strict=False
            )
        ]
        if len(info.operands) > len(info.tensors):  # the output shares the last descriptor
            operands.append(operands[-1]._replace(name=info.operands[-1]))
        self.operands: tuple[Operand, ...] = tuple(operands)
        self.unary_operators = tuple(_operator_name(v) for v in unary_ops)
        self.binary_operators = tuple(_operator_name(v) for v in binary_ops)
        self._scalar_type: np.dtype | None = None

    # -- what it is --------------------------------------------------------------------------
    @property
    def operand_names(self) -> tuple[str, ...]:
        """The arrays an execute takes, in order (the output last)."""
        return _KINDS[self.kind].operands

    @property
    def scalar_names(self) -> tuple[str, ...]:
        return _KINDS[self.kind].scalars

    @property
    def scalar_defaults(self) -> dict[str, float]:
        info = _KINDS[self.kind]
        return dict(zip(info.scalars, info.defaults, strict=False))

    @property
    def output_shares_descriptor(self) -> bool:
        """True when the output (D, or E) is described by the last input's descriptor (C, or D),
        so that the output array may be omitted at execute (it then is that input)."""
        info = _KINDS[self.kind]
        return len(info.operands) > len(info.tensors)

    @property
    def takes_workspace(self) -> bool:
        return _KINDS[self.kind].takes_workspace

    @property
    def execute_function(self) -> str:
        return _KINDS[self.kind].execute

    # -- attributes (cutensorOperationDescriptorGetAttribute / SetAttribute) -------------------
    def _get(self, attribute: Any, buf: Any) -> Any:
        from ._lib import LIB, check, clear_last_error

        self._check_open()
        clear_last_error()
        check(
            LIB.function("cutensorOperationDescriptorGetAttribute")(
                self.handle, self, int(attribute), ctypes.byref(buf), ctypes.sizeof(buf)
            ),
            "cutensorOperationDescriptorGetAttribute",
        )
        return buf.value

    @property
    def scalar_type(self) -> np.dtype:
        """The dtype of alpha/beta/gamma (``CUTENSOR_OPERATION_DESCRIPTOR_SCALAR_TYPE``)."""
        if self._scalar_type is None:
            value = self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_SCALAR_TYPE, ctypes.c_int32())
            self._scalar_type = dtype_of_data_type(int(value))
        return self._scalar_type

    @property
    def flops(self) -> float:
        """Floating-point operations of one execute (``CUTENSOR_OPERATION_DESCRIPTOR_FLOPS``)."""
        return float(self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_FLOPS, ctypes.c_float()))

    @property
    def moved_bytes(self) -> float:
        """Minimal bytes moved to/from global memory (``..._MOVED_BYTES``)."""
        return float(
            self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_MOVED_BYTES, ctypes.c_float())
        )

    @property
    def tag(self) -> int:
        """``CUTENSOR_OPERATION_DESCRIPTOR_TAG``: tells otherwise identical problems apart in the
        plan cache."""
        return int(self._get(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_TAG, ctypes.c_int32()))

    @tag.setter
    def tag(self, value: int) -> None:
        from ._lib import LIB, check, clear_last_error

        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"tag must be an int, not {type(value).__name__}")
        if not -(2**31) <= int(value) < 2**31:
            raise ValueError(f"tag must fit an int32_t, got {value}")
        self._check_open()
        buf = ctypes.c_int32(int(value))
        clear_last_error()
        check(
            LIB.function("cutensorOperationDescriptorSetAttribute")(
                self.handle, self, int(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_TAG),
                ctypes.byref(buf), ctypes.sizeof(buf),
            ),
            "cutensorOperationDescriptorSetAttribute",
        )  # fmt: skip

    # -- planning ----------------------------------------------------------------------------
    def plan(
        self, preference: PlanPreference | None = None, *, workspace: str | int = "default"
    ) -> Plan:
        """A :class:`~pycutensor.plan.Plan` for this operation (``cutensorCreatePlan``)."""
        from .plan import Plan

        return Plan(self, preference, workspace=workspace)

    def estimate_workspace(
        self, preference: PlanPreference | None = None, workspace: str = "default"
    ) -> int:
        """``cutensorEstimateWorkspaceSize`` with the ``"min"``, ``"default"`` or ``"max"`` preference."""
        from .plan import estimate_workspace

        return estimate_workspace(self, preference, workspace)

    # -- execute-time checks -------------------------------------------------------------------
    def scalar_values(self, **given: Any) -> list[Any]:
        """alpha/beta/gamma in :attr:`scalar_names` order, defaults filled in, typed-checked."""
        info = _KINDS[self.kind]
        for name, value in given.items():
            if value is not None and name not in info.scalars:
                raise TypeError(
                    f"a {info.title} takes the scalars {', '.join(info.scalars)}, not {name}"
                )
        dtype = self.scalar_type
        out = []
        for name, default in zip(info.scalars, info.defaults, strict=False):
            value = given.get(name)
            out.append(default if value is None else _coerce_scalar(value, dtype, name))
        return out

    def check_arrays(self, arrays: Sequence[Any], stream_ptr: int) -> list[int]:
        """Pointers of ``arrays`` (in :attr:`operand_names` order) after checking each against
        the layout, dtype, device and alignment this operation was described with, and the
        output against overlapping an input."""
        device = self.handle.device_id
        pointers: list[int] = []
        spans: list[tuple[int, int] | None] = []
        last = len(self.operands) - 1
        for i, (operand, array) in enumerate(zip(self.operands, arrays, strict=False)):
            name = operand.name
            if isinstance(array, (int, np.integer)) and not isinstance(array, bool):
                ptr = int(array)
                if ptr <= 0:
                    raise ValueError(f"{name}: a device pointer must be a positive int, got {ptr}")
                pointers.append(ptr)
                spans.append(None)
                continue
            view = as_array_view(array, name=name, stream_ptr=stream_ptr)
            _check_device_view(view, name, device)
            spec = operand.spec
            if view.dtype != spec.dtype:
                raise TypeError(
                    f"{name} has dtype {view.dtype}, the operation was described for {spec.dtype}"
                )
            if view.shape != operand.shape or view.strides != operand.strides:
                raise ValueError(
                    f"{name} has shape {view.shape} and strides {view.strides}; the operation was "
                    f"described for shape {operand.shape} and strides {operand.strides}"
                )
            check_pointer(view.ptr, view.itemsize, name)
            if i == last and view.readonly:
                raise ValueError(f"{name} is the output but its array is read-only")
            pointers.append(view.ptr)
            spans.append(_span(view.ptr, view.shape, view.strides, view.itemsize))
        out_span = spans[-1]
        if out_span is not None:
            alias = len(self.operands) - 2 if self.output_shares_descriptor else -1
            for i, span in enumerate(spans[:-1]):
                if span is None:
                    continue
                if i == alias and pointers[i] == pointers[-1]:
                    continue  # C and D are the same array: allowed, their descriptors are one
                if span[0] < out_span[1] and out_span[0] < span[1]:
                    raise ValueError(
                        f"{self.operands[i].name} overlaps the output {self.operands[-1].name} in "
                        "memory: cuTENSOR requires inputs not to overlap the output"
                    )
        return pointers


def _span(ptr: int, shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=False) if s < 0 and n > 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=False) if s > 0 and n > 0)
    return ptr + lo * itemsize, ptr + (hi + 1) * itemsize


def _check_device_view(view: ArrayView, name: str, device: int | None) -> None:
    if not view.is_device:
        raise ValueError(
            f"{name} is in host memory (e.g. a NumPy array); cuTENSOR works on device memory: copy "
            "it to the GPU first (cupy.asarray, torch.Tensor.cuda, pycutensor.DeviceArray)"
        )
    if device is not None and view.device_id != device:
        raise ValueError(
            f"{name} is on device {view.device_id}, the operation runs on device {device}"
        )


class Contraction(Operation):
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


class ContractionTrinary(Operation):
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


class Reduction(Operation):
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


class ElementwiseBinary(Operation):
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


class ElementwiseTrinary(Operation):
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


class Permutation(Operation):
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


_CLASSES: dict[str, type[Operation]] = {
    cls.kind: cls
    for cls in (Contraction, ContractionTrinary, Reduction, ElementwiseBinary,
                ElementwiseTrinary, Permutation)
}  # fmt: skip


# -- the functions on arrays --------------------------------------------------------------------------
class _Prepared(NamedTuple):
    specs: list[TensorSpec]  # per described tensor (output last)
    lowered: list[LoweredTensor]
    layouts: list[tuple[tuple[int, ...], tuple[int, ...]]]


def _prepare(  # noqa: PLR0917 - private
    info: _Kind,
    views: Sequence[ArrayView],
    labels: Sequence[tuple[Hashable, ...]],
    out_view: ArrayView | None,
    unary: Sequence[Any],
    binary: Sequence[Any],
    compute_type: Any,
    scalars: Mapping[str, Any],
) -> _Prepared:
    """Everything that can be checked without a GPU, from the arrays' layouts."""
    names = [t.lower() for t in info.tensors]
    for view, tensor_labels, name in zip(views, labels, names, strict=False):
        check_modes(tensor_labels, view.ndim, f"modes_{name}")
        data_type_name(view.dtype, name=f"{name}.dtype")
    # The scalars' types are known before any plan exists: refuse them here, not after a plan
    # was built (the execute path checks them again per call).
    scalar_dtype = _table_scalar_dtype(data_type_name(views[-1].dtype))
    for scalar_name, value in scalars.items():
        if value is not None and scalar_dtype is not None:
            _coerce_scalar(value, scalar_dtype, scalar_name)
    lowered, _ = lower_layouts(
        labels,
        [v.shape for v in views],
        [v.strides for v in views],
        len(views) - 1,
        names=names,
        output_broadcasts=info.rule == "elementwise",
    )
    out_name = names[-1]
    if out_view is not None:
        last = views[-1]
        if out_view.dtype != last.dtype:
            raise TypeError(
                f"out has dtype {out_view.dtype}, {out_name} has {last.dtype}: they must match"
            )
        if out_view.shape != last.shape or out_view.strides != last.strides:
            raise ValueError(
                f"out must be laid out like {out_name} (cuTENSOR describes both with one "
                f"descriptor): {out_name} has shape {last.shape} and strides {last.strides}, out "
                f"has {out_view.shape} and {out_view.strides}"
            )
    for view, name in zip(views, names, strict=False):
        check_pointer(view.ptr, view.itemsize, name)
    specs = []
    for i, (view, low) in enumerate(zip(views, lowered, strict=False)):
        alignment = alignment_of(view.ptr, MAX_ALIGNMENT)
        if i == len(views) - 1 and out_view is not None:
            alignment = min(alignment, alignment_of(out_view.ptr, MAX_ALIGNMENT))
        dt = np.dtype(view.dtype)
        specs.append(TensorSpec(low.extents, low.strides, dt, alignment))
    check_operation(info.name, specs, [low.labels for low in lowered], unary=unary,
                    binary=binary, compute_type=compute_type)  # fmt: skip
    # Known before any plan exists too (the execute path checks it again per call).
    target = out_view if out_view is not None else views[-1]
    if target.readonly:
        raise ValueError(f"the output {'out' if out_view is not None else out_name} is read-only")
    layouts = [(tuple(v.shape), tuple(v.strides)) for v in views]
    return _Prepared(specs, lowered, layouts)


class _Ready:
    """A planned operation kept in a handle's cache: descriptors, operation, plan."""

    __slots__ = ("descriptors", "offsets", "operation", "plan")

    def __init__(self, descriptors: list[TensorDescriptor], operation: Operation, plan: Plan,
                 offsets: list[tuple[int, int]]) -> None:  # fmt: skip
        self.descriptors = descriptors
        self.operation = operation
        self.plan = plan
        self.offsets = offsets  # per operand: (lowest, one past highest) byte offset

    def close(self) -> None:
        self.plan.close()
        self.operation.close()
        for d in self.descriptors:
            d.close()


def _byte_offsets(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    lo, hi = _span(0, shape, strides, itemsize)
    return lo, hi


def _common_device(views: Sequence[ArrayView], names: Sequence[str]) -> int:
    device = None
    for view, name in zip(views, names, strict=False):
        _check_device_view(view, name, device)
        device = view.device_id
    assert device is not None
    return device


def _run(  # noqa: PLR0917 - private, called from the public functions only
    kind: str,
    arrays: Sequence[Any],
    modes: Sequence[Any],
    out: Any,
    scalars: dict[str, Any],
    unary: tuple[Any, ...],
    binary: tuple[Any, ...],
    compute_type: Any,
    preference: PlanPreference | None,
    stream: Any,
    workspace: Any,
) -> Any:
    info = _KINDS[kind]
    names = _ARRAY_NAMES[kind]  # built once, not per call
    stream_ptr = stream_handle(stream)
    views = [
        as_array_view(x, name=n, stream_ptr=stream_ptr) for x, n in zip(arrays, names, strict=False)
    ]
    out_view = None if out is None else as_array_view(out, name="out", stream_ptr=stream_ptr)
    labels = tuple(_label_tuple(m, f"modes_{n}") for m, n in zip(modes, names, strict=False))
    all_views = [*views, out_view] if out_view is not None else views
    all_names = [*names, "out"] if out_view is not None else names
    if any(not v.is_device for v in all_views):
        _prepare(
            info, views, labels, out_view, unary, binary, compute_type, scalars
        )  # the specific error first
    device = _common_device(all_views, all_names)
    handle = get_handle(device)
    key = (
        kind, labels,
        tuple((v.shape, v.strides, v.dtype, alignment_of(v.ptr, MAX_ALIGNMENT)) for v in views),
        None if out_view is None else (out_view.shape, out_view.strides,
                                       alignment_of(out_view.ptr, MAX_ALIGNMENT)),
        unary, binary, compute_type, preference,
    )  # fmt: skip
    try:
        ready: _Ready | None = handle.cached(key)
    except TypeError:  # an unhashable label or operator: _prepare names the argument
        _prepare(info, views, labels, out_view, unary, binary, compute_type, scalars)
        raise
    if ready is None:
        ready = _build(
            handle, info, views, labels, out_view, unary, binary, compute_type, preference, scalars
        )
        handle.cache(key, ready)
    target = out_view if out_view is not None else views[-1]
    if target.readonly:
        raise ValueError(f"the output {'out' if out_view is not None else names[-1]} is read-only")
    pointers = [v.ptr for v in views]
    if len(info.operands) > len(info.tensors):
        pointers.append(target.ptr)
    lo, hi = ready.offsets[-1]
    out_lo, out_hi = pointers[-1] + lo, pointers[-1] + hi
    for i in range(len(views) - (0 if len(info.operands) > len(info.tensors) else 1)):
        if i == len(views) - 1 and pointers[i] == pointers[-1]:
            continue  # C is D
        a, b = ready.offsets[i]
        if pointers[i] + a < out_hi and out_lo < pointers[i] + b:
            raise ValueError(
                f"{names[i]} overlaps the output in memory: cuTENSOR requires inputs not to "
                "overlap the output"
            )
    values = ready.operation.scalar_values(**scalars)
    previous = handle.activate()  # the workspace is allocated on the handle's device
    try:
        ws_ptr, ws_size = ready.plan._workspace(workspace, stream_ptr, stream)
        ready.plan._call(pointers, values, stream_ptr, ws_ptr, ws_size)
    finally:
        handle.restore(previous)
    return out if out is not None else arrays[-1]


def _build(  # noqa: PLR0917 - private
    handle: Handle,
    info: _Kind,
    views: Sequence[ArrayView],
    labels: Sequence[tuple[Hashable, ...]],
    out_view: ArrayView | None,
    unary: tuple[Any, ...],
    binary: tuple[Any, ...],
    compute_type: Any,
    preference: PlanPreference | None,
    scalars: Mapping[str, Any],
) -> _Ready:
    from .plan import Plan

    prepared = _prepare(info, views, labels, out_view, unary, binary, compute_type, scalars)
    descriptors: list[TensorDescriptor] = []
    try:
        for spec in prepared.specs:
            descriptors.append(TensorDescriptor.from_spec(handle, spec))
        tensors = [(d, low.labels) for d, low in zip(descriptors, prepared.lowered, strict=False)]
        operation = _CLASSES[info.name].__new__(_CLASSES[info.name])
        lowered_layouts = [(low.extents, low.strides) for low in prepared.lowered]
        operation._create(handle, tensors, unary=unary, binary=binary, compute_type=compute_type,
                          layouts=lowered_layouts)  # fmt: skip
        plan = Plan(operation, preference)
    except BaseException:
        for d in descriptors:
            d.close()
        raise
    offsets = [_byte_offsets(shape, strides, v.itemsize)
               for (shape, strides), v in zip(prepared.layouts, views, strict=False)]  # fmt: skip
    if len(info.operands) > len(info.tensors):
        offsets.append(offsets[-1])
    return _Ready(descriptors, operation, plan, offsets)


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
) -> Any:
    """``out = alpha opA(A) opB(B) + beta C`` over the modes given (``cutensorContract``).

    ``out`` defaults to ``c`` itself (C and D are the same array); when given, it must be laid out
    like ``c``. Modes of A and B missing from C are contracted. Returns the output array.
    """
    return _run("contraction", (a, b, c), (modes_a, modes_b, modes_c), out,
                {"alpha": alpha, "beta": beta}, (op_a, op_b), (), compute_type, preference,
                stream, workspace)  # fmt: skip


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
) -> Any:
    """``out = alpha opA(A) opB(B) opC(C) + beta opD(D)`` (``cutensorContractTrinary``).

    ``out`` defaults to ``d`` itself; when given it must be laid out like ``d``.
    """
    return _run("contraction_trinary", (a, b, c, d), (modes_a, modes_b, modes_c, modes_d), out,
                {"alpha": alpha, "beta": beta}, (op_a, op_b, op_c, op_d), (), compute_type,
                preference, stream, workspace)  # fmt: skip


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
) -> Any:
    """``out = alpha opReduce(opA(A)) + beta opC(C)`` (``cutensorReduce``): modes of A that C
    lacks are reduced. ``out`` defaults to ``c``."""
    return _run("reduction", (a, c), (modes_a, modes_c), out, {"alpha": alpha, "beta": beta},
                (op_a, op_c), (op_reduce,), compute_type, preference, stream,
                workspace)  # fmt: skip


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
) -> Any:
    """``out = opAC(alpha opA(A), gamma opC(C))`` (``cutensorElementwiseBinaryExecute``).

    ``out`` defaults to ``c`` (updated in place; allowed because C and D share one descriptor).
    """
    return _run("elementwise_binary", (a, c), (modes_a, modes_c), out,
                {"alpha": alpha, "gamma": gamma}, (op_a, op_c), (op_ac,), compute_type, None,
                stream, None)  # fmt: skip


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
) -> Any:
    """``out = opABC(opAB(alpha opA(A), beta opB(B)), gamma opC(C))``
    (``cutensorElementwiseTrinaryExecute``). ``out`` defaults to ``c``."""
    return _run("elementwise_trinary", (a, b, c), (modes_a, modes_b, modes_c), out,
                {"alpha": alpha, "beta": beta, "gamma": gamma}, (op_a, op_b, op_c),
                (op_ab, op_abc), compute_type, None, stream, None)  # fmt: skip


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
) -> Any:
    """``B = alpha opA(A)`` with B's modes in any order (``cutensorPermute``); returns ``b``."""
    return _run("permutation", (a, b), (modes_a, modes_b), None, {"alpha": alpha}, (op_a,), (),
                compute_type, None, stream, None)  # fmt: skip
