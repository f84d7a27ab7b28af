"""cuTENSOR's rules applied in Python, before any C call: modes, extents, types, operators, layouts.

Everything here is pure Python and NumPy: it runs without a GPU and without loading cuTENSOR.

* :func:`check_operation` validates an operation as cuTENSOR's documentation states its rules: every
  mode at most once per tensor, the same extent wherever a mode appears; modes absent from the
  output are contracted (reduced); elementwise operations and permutations need every input mode in
  the output; the output's modes must come from the inputs of a contraction or reduction; the
  data-type/compute-type tables and the unary operators each data type supports
  (:mod:`pycutensor.tables`); an output may not overlap itself.
* :func:`lower_layouts` turns array layouts into what cuTENSOR accepts (size-1 modes left out,
  stride-0 broadcasts expressed by omitting the mode where cuTENSOR can express them).
* Scalars, device views and memory spans: the execute-time checks the operations share.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from _nvbind.arrays import array_view
from _nvbind.strides import overlapping
from _nvbind.suggest import did_you_mean

from . import _bindings
from .tables import (
    KINDS,
    UNARY_OPERATORS_BY_DATA_TYPE,
    Kind,
    binary_operator,
    check_types,
    compute_type_name,
    expected_scalar_type,
    operator_name,
    unary_operator,
)
from .tensor import TensorSpec, check_modes, dtype_of_data_type

if TYPE_CHECKING:  # pragma: no cover
    from _nvbind.arrays import ArrayView

__all__ = [
    "LoweredTensor",
    "check_device_view",
    "check_laid_out_like",
    "check_operation",
    "check_workspace_apart",
    "coerce_scalar",
    "label_tuple",
    "lower_layouts",
    "operand_spans",
    "span",
    "table_scalar_dtype",
    "workspace_extent",
]


# -- structural checks ------------------------------------------------------------------------------
def label_tuple(modes: Any, name: str) -> tuple[Hashable, ...]:
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


def _check_structure(kind: Kind, labels: Sequence[tuple[Hashable, ...]]) -> None:
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
    info = KINDS.get(kind)
    if info is None:
        hint = did_you_mean(kind, KINDS) if isinstance(kind, str) else ""
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}{hint}")
    if len(specs) != len(info.tensors) or len(modes) != len(info.tensors):
        raise TypeError(f"a {info.title} describes the tensors {', '.join(info.tensors)}")
    labels = tuple(
        check_modes(m, spec.ndim, f"modes of {name}")
        for m, spec, name in zip(modes, specs, info.tensors, strict=False)
    )
    _check_extents_agree(labels, [s.extents for s in specs], info.tensors)
    _check_structure(info, labels)
    types = tuple(s.data_type for s in specs)
    compute = check_types(info, types, compute_type_name(compute_type))
    unary_values = list(unary) + ["identity"] * (len(info.tensors) - len(unary))
    if len(unary_values) != len(info.tensors):
        raise TypeError(f"a {info.title} takes {len(info.tensors)} unary operators")
    ops: list[int] = []
    for op, arg, type_name in zip(unary_values, info.unary, types, strict=False):
        value = unary_operator(op, arg)
        allowed = UNARY_OPERATORS_BY_DATA_TYPE.get(type_name, frozenset({"identity"}))
        op_name = operator_name(value).lower()
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
    if overlapping(out.extents, out.strides):  # TensorSpec validated both
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
def table_scalar_dtype(output_type: str) -> np.dtype | None:
    """The scalar dtype the user guide's table gives for an output type, None where it has no row
    (the type tables refuse those operations anyway)."""
    try:
        return dtype_of_data_type(expected_scalar_type(output_type, ""))
    except TypeError:
        return None


def coerce_scalar(value: Any, dtype: np.dtype, name: str) -> Any:
    """``value`` as a scalar of an operation whose scalar type is ``dtype``: a number, complex only
    for complex data (a complex value with a zero imaginary part is taken as real)."""
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


# -- memory and devices ----------------------------------------------------------------------------
def span(ptr: int, shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    """``(lowest, one past highest)`` byte address an array at ``ptr`` reaches."""
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=False) if s < 0 and n > 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=False) if s > 0 and n > 0)
    return ptr + lo * itemsize, ptr + (hi + 1) * itemsize


def check_device_view(view: ArrayView, name: str, device: int | None) -> None:
    """Refuse a host array, or a device array on another device than ``device`` (None: any)."""
    if not view.is_device:
        raise ValueError(
            f"{name} is in host memory (e.g. a NumPy array); cuTENSOR works on device memory: copy "
            "it to the GPU first (cupy.asarray, torch.Tensor.cuda, pycutensor.DeviceArray)"
        )
    if device is not None and view.device_id != device:
        raise ValueError(
            f"{name} is on device {view.device_id}, the operation runs on device {device}"
        )


def check_laid_out_like(  # noqa: PLR0917 - the array, then what it must match
    view: ArrayView,
    name: str,
    dtype: Any,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    like: str,
    why: str,
) -> None:
    """``TypeError`` unless ``view`` has ``dtype``, ``ValueError`` unless it has ``shape`` and
    ``strides``: an array given where one descriptor, made for ``like``'s layout, describes it
    (``why`` says why it must match, for the message)."""
    if view.dtype != dtype:
        raise TypeError(f"{name} has dtype {view.dtype}, {like} has {dtype}: they must match")
    if view.shape != shape or view.strides != strides:
        raise ValueError(
            f"{name} must be laid out like {like} ({why}): {like} has shape {shape} and "
            f"strides {strides}, {name} has {view.shape} and {view.strides}"
        )


def workspace_extent(buffer: Any, stream_ptr: int, device_id: int) -> tuple[int, int]:
    """``(pointer, bytes)`` of a workspace the caller gives (a ``cuda.core`` Buffer or a device
    array), which must be device memory of ``device_id``, the plan's device: the plan's kernels
    run there, and memory of another device is an illegal address for them (or, with peer
    access, slow remote memory)."""
    handle = getattr(buffer, "handle", None)
    size = getattr(buffer, "size", None)
    if handle is not None and isinstance(size, int) and not hasattr(buffer, "shape"):
        # a cuda.core Buffer
        if getattr(buffer, "is_device_accessible", True) is False:
            raise ValueError("workspace must be device memory, not a host buffer")
        where = getattr(buffer, "device_id", None)
        if isinstance(where, int) and where >= 0 and where != device_id:
            raise ValueError(f"workspace is on device {where}, the plan runs on device {device_id}")
        return int(handle), int(size)
    view = array_view(buffer, "workspace", stream_ptr)
    if not view.is_device:
        raise ValueError("workspace must be device memory, not a host array")
    check_device_view(view, "workspace", device_id)
    # cuTENSOR writes [pointer, pointer + size): the array's memory must be that range
    if view.readonly:
        raise ValueError("workspace is read-only; cuTENSOR writes it")
    if span(0, view.shape, view.strides, view.itemsize)[0] < 0:
        raise ValueError("workspace has negative strides: its memory does not start at it")
    return view.ptr, view.span_bytes()


def operand_spans(
    arrays: Sequence[Any], names: Sequence[str], stream_ptr: int
) -> list[tuple[str, int, int]]:
    """``(name, lowest, one past highest address)`` of each operand given as an array; raw
    pointers (ints) have no known extent and are left out."""
    out = []
    for array, name in zip(arrays, names, strict=False):
        if isinstance(array, (int, np.integer)) and not isinstance(array, bool):
            continue
        view = array_view(array, name, stream_ptr)
        lo, hi = span(view.ptr, view.shape, view.strides, view.itemsize)
        out.append((name, lo, hi))
    return out


def check_workspace_apart(ptr: int, size: int, spans: Sequence[tuple[str, int, int]]) -> None:
    """Refuse a workspace of ``size`` bytes at ``ptr`` that overlaps an operand's address range
    (``spans``: :func:`operand_spans`): cuTENSOR may write all of the workspace it is given
    during the execute, over that operand's elements."""
    for name, lo, hi in spans:
        if ptr < hi and lo < ptr + size:
            raise ValueError(
                f"workspace overlaps {name} in memory: cuTENSOR writes its workspace during the "
                f"execute, which would overwrite {name}"
            )
