"""cuTENSOR's rules as data: the tables of the user guide and of ``cutensor.h``, and their lookups.

Nothing here calls cuTENSOR or needs a GPU. The tables are:

* the operators: unary and binary ``cutensorOperator_t`` members by name, and the unary operators
  each data type supports (the user guide's "supported unary operators" table);
* the compute descriptors (``CUTENSOR_COMPUTE_DESC_<name>``) and the GPU generation the emulated
  ones need;
* per operation kind, the supported combinations of data types and compute descriptors (the tables
  of ``cutensorCreateContraction``, ``...ContractionTrinary``, ``...Reduction``,
  ``...ElementwiseBinary``, ``...ElementwiseTrinary`` and ``...Permutation``), and the scalar type
  of each output type;
* :data:`KINDS`: what each operation kind is in the C API (its create and execute functions, its
  tensors, operands, scalars and operator arguments).

:mod:`pycutensor.checks` applies them; :mod:`pycutensor.operations` re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from _nvbind.suggest import did_you_mean

from . import _bindings

__all__ = [
    "BINARY_OPERATORS",
    "COMPUTE_TYPES",
    "CONTRACTION_TRINARY_TYPES",
    "CONTRACTION_TYPES",
    "ELEMENTWISE_BINARY_TYPES",
    "ELEMENTWISE_TRINARY_TYPES",
    "KINDS",
    "MIN_COMPUTE_CAPABILITY",
    "PERMUTATION_TYPES",
    "REDUCTION_TYPES",
    "UNARY_OPERATORS",
    "UNARY_OPERATORS_BY_DATA_TYPE",
    "Kind",
    "binary_operator",
    "check_types",
    "compute_type_name",
    "expected_scalar_type",
    "operator_name",
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

# The user guide's table "supported unary operators" (per data type), restricted to the data types
# some operation accepts. MISH, SWISH, SOFT_PLUS and SOFT_SIGN came later (cutensor/types.h
# documents them as real-valued activations) and are allowed for the real floating-point types too.
# The guide also lists C_16F (IDENTITY, CONJ) and R_8I, R_8U, R_32I, R_32U (IDENTITY, RELU), but no
# create call of cutensor.h 2.8 (contraction, trinary contraction, reduction, elementwise binary and
# trinary, permutation) lists those types in its table of supported combinations, so every such
# request is refused by the type tables first: rows for them here would only be dead data.
_REAL_UNARY = (
    "identity", "sqrt", "rcp", "relu", "sigmoid", "tanh", "exp", "log", "abs", "neg",
    "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    "ceil", "floor", "mish", "swish", "soft_plus", "soft_sign",
)  # fmt: skip
_COMPLEX_UNARY = ("identity", "conj")
#: Data type name -> the unary operators the user guide lists for it, for the data types that some
#: operation's table accepts (see the comment above for the guide's rows left out).
UNARY_OPERATORS_BY_DATA_TYPE: dict[str, frozenset[str]] = {
    **{t: frozenset(_REAL_UNARY) for t in ("R_32F", "R_64F", "R_16F", "R_16BF")},
    **{t: frozenset(_COMPLEX_UNARY) for t in ("C_32F", "C_64F")},
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
    hint = did_you_mean(value.lower(), table) if isinstance(value, str) else ""
    raise ValueError(
        f"{name}={value!r} is not a {what} cuTENSOR operator{hint}; use one of: {', '.join(table)}"
    )


def unary_operator(value: Any, name: str = "op") -> int:
    """A unary ``cutensorOperator_t`` from a name (``"conj"``), an enum member or its value."""
    return _operator(value, UNARY_OPERATORS, "unary", name)


def binary_operator(value: Any, name: str = "op") -> int:
    """A binary ``cutensorOperator_t`` (ADD, MUL, MAX, MIN) from a name, a member or a value."""
    return _operator(value, BINARY_OPERATORS, "binary", name)


def operator_name(value: int) -> str:
    """The C name of a ``cutensorOperator_t`` value without its prefix (``"IDENTITY"``)."""
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
# How other libraries spell the plain types: only for the hint ("FP32" is closer to "TF32" than to
# "32F" by spelling, and TF32 is the one that would silently change the precision).
_COMPUTE_ALIASES = {
    "FP16": "16F", "F16": "16F", "HALF": "16F", "BF16": "16BF",
    "FP32": "32F", "F32": "32F", "FLOAT": "32F", "FP64": "64F", "F64": "64F", "DOUBLE": "64F",
}  # fmt: skip


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
    hint = ""
    if isinstance(value, str):
        alias = _COMPUTE_ALIASES.get(value.strip().upper().replace("_", ""))
        hint = f"; did you mean {alias!r}?" if alias else did_you_mean(value.upper(), COMPUTE_TYPES)
    raise ValueError(
        f"compute_type={value!r} is not a cuTENSOR compute descriptor{hint}; use one of: "
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


# -- the operation kinds -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """One operation kind of the C API and the table that governs it."""

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

    @property
    def array_names(self) -> tuple[str, ...]:
        """Argument names of the array functions ("a", "b", "c"), for messages."""
        return tuple(t.lower() for t in self.tensors)

    @property
    def output_shares_descriptor(self) -> bool:
        """True when the output (D, or E) is described by the last input's descriptor."""
        return len(self.operands) > len(self.tensors)


#: Every operation kind by name.
KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("contraction", "contraction", "cutensorCreateContraction", "cutensorContract",
             ("A", "B", "C"), ("A", "B", "C", "D"), ("alpha", "beta"), (1.0, 0.0), True,
             CONTRACTION_TYPES, ("op_a", "op_b", "op_c"), (), "contraction"),
        Kind("contraction_trinary", "trinary contraction", "cutensorCreateContractionTrinary",
             "cutensorContractTrinary", ("A", "B", "C", "D"), ("A", "B", "C", "D", "E"),
             ("alpha", "beta"), (1.0, 0.0), True, CONTRACTION_TRINARY_TYPES,
             ("op_a", "op_b", "op_c", "op_d"), (), "contraction"),
        Kind("reduction", "reduction", "cutensorCreateReduction", "cutensorReduce",
             ("A", "C"), ("A", "C", "D"), ("alpha", "beta"), (1.0, 0.0), True,
             REDUCTION_TYPES, ("op_a", "op_c"), ("op_reduce",), "reduction"),
        Kind("elementwise_binary", "elementwise binary operation",
             "cutensorCreateElementwiseBinary", "cutensorElementwiseBinaryExecute",
             ("A", "C"), ("A", "C", "D"), ("alpha", "gamma"), (1.0, 1.0), False,
             ELEMENTWISE_BINARY_TYPES, ("op_a", "op_c"), ("op_ac",), "elementwise"),
        Kind("elementwise_trinary", "elementwise trinary operation",
             "cutensorCreateElementwiseTrinary", "cutensorElementwiseTrinaryExecute",
             ("A", "B", "C"), ("A", "B", "C", "D"), ("alpha", "beta", "gamma"),
             (1.0, 1.0, 1.0), False, ELEMENTWISE_TRINARY_TYPES, ("op_a", "op_b", "op_c"),
             ("op_ab", "op_abc"), "elementwise"),
        Kind("permutation", "permutation", "cutensorCreatePermutation", "cutensorPermute",
             ("A", "B"), ("A", "B"), ("alpha",), (1.0,), False, PERMUTATION_TYPES,
             ("op_a",), (), "elementwise"),
    )
}  # fmt: skip


def _format_rows(rows: Sequence[tuple[str, ...]], tensors: Sequence[str]) -> str:
    grouped: dict[tuple[str, ...], list[str]] = {}
    for row in rows:
        grouped.setdefault(row[:-1], []).append(row[-1])
    return "; ".join(
        ", ".join(f"{t}={v}" for t, v in zip(tensors, types, strict=True))
        + f" (compute {', '.join(computes)})"
        for types, computes in grouped.items()
    )


def check_types(kind: Kind, types: tuple[str, ...], compute: str | None) -> str:
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
