"""``pycutensor.einsum``: NumPy's einsum on device arrays, computed by cuTENSOR.

Semantics follow :func:`numpy.einsum`: implicit output (labels that appear once, in alphabetical
order, after the broadcast dimensions) or explicit ``->``; ``...`` broadcasting; labels absent
from the output summed; size-1 dimensions broadcast against larger ones. The result is
``alpha * einsum(...) + beta * out`` (``beta`` needs ``out``).

What cuTENSOR runs:

* one operand: a **permutation** (``ij->ji``, also a plain copy) or a **reduction** (``ij->i``);
* two operands: an **elementwise binary** product when nothing is summed, one operand already has
  the output's layout and ``beta`` is 0 (``ij,j->ij``); otherwise a **contraction**;
* more operands: pairwise contractions along the path ``opt_einsum`` finds (``opt_einsum`` is
  optional; without it operands are contracted left to right), with the intermediates in one
  reusable workspace.

A label repeated within one operand (a trace or diagonal, ``ii->i``) raises
``NotImplementedError``: cuTENSOR requires each mode at most once per tensor. Operands must share
one dtype. A label of extent 0 that is summed raises ``ValueError`` (cuTENSOR has no empty
tensors); an empty output is returned as it is.

Repeating a call is cheap: the plan (descriptors, operation, plan, intermediate layout) is cached
in the calling thread's handle under a key of the subscripts, shapes, strides, dtypes, pointer
alignments, compute type and whether ``beta`` is zero, so a repeated call only inspects its arrays
and executes. :func:`parse_einsum` does the parsing alone and needs no GPU.

When ``out`` is not given, the result is allocated by the library of the first operand (CuPy,
PyTorch) on the device of the operands, or as a :class:`pycutensor.DeviceArray` otherwise; its
memory comes from that library's allocator, so pass ``stream`` = that library's current stream (or
``out``) when working on other streams.
"""

from __future__ import annotations

import numbers
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pycudnn._shared import memory
from pycudnn._shared.arrays import ArrayView, alignment_of, as_array_view
from pycudnn._shared.cuda import stream_handle

from .handle import get_handle
from .operations import _check_device_view, _coerce_scalar, _span, _table_scalar_dtype
from .tensor import MAX_ALIGNMENT, TensorSpec, column_major_strides

if TYPE_CHECKING:  # pragma: no cover
    from .handle import Handle
    from .plan import Plan
    from .tensor import TensorDescriptor

__all__ = ["EinsumSpec", "einsum", "parse_einsum"]

_LETTERS = frozenset(string.ascii_letters)
_ELLIPSIS = "..."


@dataclass(frozen=True)
class EinsumSpec:
    """A parsed einsum expression (:func:`parse_einsum`).

    ``inputs``/``output``: the labels of each operand and of the result; the dimensions an
    ellipsis stands for get the labels ``"...0"``, ``"...1"``, ... (numbered from the left of the
    broadcast result). ``extents``: each label's extent after broadcasting. ``contracted``: the
    labels summed. ``broadcast``: ``(operand, label)`` pairs where a size-1 dimension broadcasts.
    ``kind``: ``"permutation"``, ``"reduction"``, ``"elementwise"``, ``"contraction"`` or
    ``"pairwise"`` (three operands or more); see the module docstring for what runs.
    """

    subscripts: str
    inputs: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    extents: Mapping[str, int] = field(compare=False)
    contracted: tuple[str, ...]
    broadcast: tuple[tuple[int, str], ...]
    kind: str

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(self.extents[label] for label in self.output)

    @property
    def explicit(self) -> str:
        """The expression with its output written out (ellipsis dimensions as ``...``)."""
        return ",".join(_join(t) for t in self.inputs) + "->" + _join(self.output)


def _join(labels: Sequence[str]) -> str:
    out, in_ellipsis = [], False
    for label in labels:
        if label.startswith(_ELLIPSIS):
            if not in_ellipsis:
                out.append(_ELLIPSIS)
                in_ellipsis = True
        else:
            out.append(label)
    return "".join(out)


def _parse_term(term: str, where: str) -> tuple[list[str], bool, list[str]]:
    """Letters before an ellipsis, whether there is one, letters after it."""
    before: list[str] = []
    after: list[str] = []
    has_ellipsis = False
    i = 0
    while i < len(term):
        ch = term[i]
        if ch == " ":  # NumPy skips spaces (and only spaces) between labels
            i += 1
            continue
        if ch == ".":
            if term[i : i + 3] != _ELLIPSIS:
                raise ValueError(
                    f"einsum subscripts contain a '.' that is not part of an ellipsis ('...') in {where}"
                )
            if has_ellipsis:
                raise ValueError(
                    f"einsum subscripts contain more than one ellipsis ('...') in {where}"
                )
            has_ellipsis = True
            i += 3
            continue
        if ch not in _LETTERS:
            raise ValueError(
                f"invalid subscript {ch!r} in einsum subscripts ({where}); subscripts must be "
                "letters a-z, A-Z"
            )
        (after if has_ellipsis else before).append(ch)
        i += 1
    return before, has_ellipsis, after


def _check_shape(shape: Any, index: int) -> tuple[int, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(
            f"shape of operand {index} must be a sequence of ints, not {type(shape).__name__}"
        )
    out = []
    for n in shape:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"shape of operand {index} must hold ints, got {n!r}")
        if n < 0:
            raise ValueError(f"shape of operand {index} has a negative extent {n}")
        if n > 2**63 - 1:  # no array has it, and no int64_t extent can hold it
            raise ValueError(f"shape of operand {index} has an extent {n} beyond int64")
        out.append(int(n))
    return tuple(out)


def parse_einsum(subscripts: str, *shapes: Sequence[int]) -> EinsumSpec:
    """Parse ``subscripts`` for operands of the given shapes, with NumPy's rules and messages.

    No GPU and no library are needed. Raises ``ValueError`` for what NumPy refuses and
    ``NotImplementedError`` for a label repeated within one operand (cuTENSOR cannot express
    traces or diagonals).
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"subscripts must be a str, not {type(subscripts).__name__}")
    # Like NumPy, find "->" and the ellipses in the string as written and skip only the spaces
    # between labels: "i - > j", ". .." and tabs or other whitespace are refused as NumPy refuses
    # them (removing all whitespace first would accept them).
    text = subscripts.replace(" ", "")
    if subscripts.count("->") > 1:
        raise ValueError("einsum subscripts contain '->' more than once")
    if "->" in subscripts:
        lhs, rhs = subscripts.split("->")
    else:
        lhs, rhs = subscripts, None
    for part in (lhs, rhs or ""):
        if "-" in part or ">" in part:
            raise ValueError("einsum subscripts contain a '-' or '>' that is not part of '->'")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise ValueError(
            f"fewer operands ({len(shapes)}) provided to einsum than specified in the subscripts "
            f"({len(terms)})"
        )
    if len(terms) < len(shapes):
        raise ValueError(
            f"more operands ({len(shapes)}) provided to einsum than specified in the subscripts "
            f"({len(terms)})"
        )
    shp = tuple(_check_shape(s, i) for i, s in enumerate(shapes))
    parsed = []
    ellipsis_dims = 0
    for i, (term, shape) in enumerate(zip(terms, shp, strict=False)):
        before, has_ellipsis, after = _parse_term(term, f"operand {i}")
        named = len(before) + len(after)
        if has_ellipsis:
            if named > len(shape):
                raise ValueError(
                    f"einsum subscripts for operand {i} name {named} dimensions but it has {len(shape)}"
                )
            ellipsis_dims = max(ellipsis_dims, len(shape) - named)
        elif named != len(shape):
            many = "many" if named > len(shape) else "few"
            raise ValueError(
                f"einsum subscripts contain too {many} subscripts for operand {i}: {named} for "
                f"{len(shape)} dimensions"
            )
        parsed.append((before, has_ellipsis, after))
    ellipsis_labels = [f"{_ELLIPSIS}{k}" for k in range(ellipsis_dims)]
    inputs: list[tuple[str, ...]] = []
    for i, ((before, has_ellipsis, after), shape) in enumerate(zip(parsed, shp, strict=False)):
        e = len(shape) - len(before) - len(after) if has_ellipsis else 0
        labels = (*before, *ellipsis_labels[ellipsis_dims - e :], *after)
        repeated = [label for label in labels if labels.count(label) > 1]
        if repeated:
            raise NotImplementedError(
                f"label {repeated[0]!r} appears more than once in operand {i} (a trace or "
                "diagonal); cuTENSOR requires each mode at most once per tensor: take the "
                "diagonal first (e.g. with the array library's diagonal()) and pass that"
            )
        inputs.append(labels)
    # Extents, with NumPy's size-1 broadcasting.
    extents: dict[str, int] = {}
    broadcast: list[tuple[int, str]] = []
    for i, (labels, shape) in enumerate(zip(inputs, shp, strict=False)):
        for label, n in zip(labels, shape, strict=False):
            seen = extents.get(label)
            if seen is None or seen == 1:
                extents[label] = n
            elif n not in (seen, 1):
                raise ValueError(
                    f"operands could not be broadcast together: label {label!r} has extent "
                    f"{seen} in one operand and {n} in operand {i}"
                )
    for i, (labels, shape) in enumerate(zip(inputs, shp, strict=False)):
        broadcast.extend(
            (i, label)
            for label, n in zip(labels, shape, strict=False)
            if n == 1 and extents[label] != 1
        )
    if rhs is None:
        counts: dict[str, int] = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        once = sorted(label for label, c in counts.items() if c == 1 and label in _LETTERS)
        output = (*ellipsis_labels, *once)
    else:
        before, has_ellipsis, after = _parse_term(rhs, "the output")
        for label in (*before, *after):
            if (*before, *after).count(label) > 1:
                raise ValueError(
                    f"einsum subscripts include output subscript {label!r} multiple times"
                )
            if label not in extents:
                raise ValueError(
                    f"einsum subscripts include output subscript {label!r}, which never appeared "
                    "in an input"
                )
        if ellipsis_dims and not has_ellipsis:
            raise ValueError(
                "output has more dimensions than subscripts given in einsum, but no '...' ellipsis "
                "provided to broadcast the extra dimensions"
            )
        output = (*before, *(ellipsis_labels if has_ellipsis else ()), *after)
    out_set = set(output)
    contracted: list[str] = []
    for labels in inputs:
        for label in labels:
            if label not in out_set and label not in contracted:
                contracted.append(label)
    if len(inputs) == 1:
        kind = "permutation" if not contracted else "reduction"
    elif len(inputs) == 2:
        full = [set(t) == out_set for t in inputs]
        subset = [set(t) <= out_set for t in inputs]
        kind = "elementwise" if not contracted and any(full) and all(subset) else "contraction"
    else:
        kind = "pairwise"
    return EinsumSpec(
        subscripts=text,
        inputs=tuple(inputs),
        output=tuple(output),
        shapes=shp,
        extents=extents,
        contracted=tuple(contracted),
        broadcast=tuple(broadcast),
        kind=kind,
    )


# -- building and running ---------------------------------------------------------------------------
# A tensor in a program: a user operand ("in", i), an intermediate ("tmp", j) or the output ("out",).
_Source = tuple[Any, ...]


class _Step:
    __slots__ = ("descriptors", "operation", "plan", "scalars", "sources")

    def __init__(self, descriptors: list[TensorDescriptor], plan: Plan, sources: list[_Source],
                 scalars: tuple[str, ...]) -> None:  # fmt: skip
        self.descriptors = descriptors
        self.plan = plan
        self.operation = plan.operation
        self.sources = sources  # one per execute operand
        self.scalars = scalars  # per scalar of the operation: "alpha", "beta", "one" or "zero"

    def close(self) -> None:
        self.plan.close()
        self.operation.close()
        for d in self.descriptors:
            d.close()


class _Program:
    """Everything a repeated einsum needs, built once per key and cached in the handle."""

    __slots__ = ("block", "device", "dtype", "out_alignment", "out_shape", "out_span", "spans",
                 "steps", "tmp_offsets", "workspace_offset", "workspace_size")  # fmt: skip

    def __init__(self) -> None:
        self.steps: list[_Step] = []
        self.tmp_offsets: list[int] = []
        self.block = 0
        self.workspace_offset = 0
        self.workspace_size = 0
        self.out_alignment = MAX_ALIGNMENT  # the output alignment the steps were planned for
        # byte offsets (lowest, one past highest) from each operand's pointer, and out's
        self.spans: list[tuple[int, int]] = []
        self.out_span: tuple[int, int] = (0, 0)
        self.out_shape: tuple[int, ...] = ()
        self.dtype: np.dtype = np.dtype(np.float32)
        self.device: Any = None

    def close(self) -> None:
        for step in self.steps:
            step.close()
        self.steps = []

    def run(
        self, pointers: list[int], out_ptr: int, alpha: Any, beta: Any, stream_ptr: int
    ) -> None:
        scalar_dtype = self.steps[-1].plan.scalar_dtype
        alpha = _coerce_scalar(alpha, scalar_dtype, "alpha")
        beta = _coerce_scalar(beta, scalar_dtype, "beta")
        base = 0
        if self.block:
            base = memory.workspace(self.block, device=self.device, stream=stream_ptr)
            if base % 256:
                raise RuntimeError(f"the memory pool returned 0x{base:x}, not 256-byte aligned")
        tmp = self.tmp_offsets
        ws_ptr = base + self.workspace_offset if self.workspace_size else 0
        for step in self.steps:
            ptrs = []
            for src in step.sources:
                kind = src[0]
                if kind == "in":
                    ptrs.append(pointers[src[1]])
                elif kind == "tmp":
                    ptrs.append(base + tmp[src[1]])
                else:
                    ptrs.append(out_ptr)
            values = [
                alpha if s == "alpha" else beta if s == "beta" else 1.0 if s == "one" else 0.0
                for s in step.scalars
            ]
            step.plan._call(ptrs, values, stream_ptr, ws_ptr, self.workspace_size)


def _check_number(value: Any, name: str) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Number):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")


def _round_up(n: int, to: int = 256) -> int:
    return (n + to - 1) // to * to


def _common_dtype(views: Sequence[ArrayView]) -> np.dtype:
    dtypes = {np.dtype(v.dtype) for v in views}
    if len(dtypes) != 1:
        names = ", ".join(sorted(str(d) for d in dtypes))
        raise TypeError(
            f"einsum operands must share one dtype (got {names}); cast them first (cuTENSOR "
            "contracts tensors of one type)"
        )
    return dtypes.pop()


class _Tensor:
    """A tensor while a program is built: its labels and layout, and where its pointer comes from."""

    __slots__ = ("labels", "shape", "source", "strides")

    def __init__(self, labels: tuple[str, ...], shape: tuple[int, ...], strides: tuple[int, ...],
                 source: _Source) -> None:  # fmt: skip
        self.labels = labels
        self.shape = shape
        self.strides = strides
        self.source = source


def _path(spec: EinsumSpec) -> list[tuple[int, ...]]:
    """The pairwise contraction order: opt_einsum's greedy path, else left to right."""
    n = len(spec.inputs)
    try:
        import opt_einsum
    except ImportError:  # left to right: the running result is always the last operand
        steps: list[tuple[int, ...]] = [(0, 1)]
        return steps + [(0, m - 1) for m in range(n - 1, 1, -1)]
    symbols: dict[str, str] = {}
    for labels in (*spec.inputs, spec.output):
        for label in labels:
            if label not in symbols:
                symbols[label] = opt_einsum.get_symbol(len(symbols))
    expr = ",".join("".join(symbols[x] for x in t) for t in spec.inputs)
    expr += "->" + "".join(symbols[x] for x in spec.output)
    shapes = [tuple(spec.extents[x] if n_ != 1 else 1 for x, n_ in zip(t, s, strict=False))
              for t, s in zip(spec.inputs, spec.shapes, strict=False)]  # fmt: skip
    try:
        path, _ = opt_einsum.contract_path(expr, *shapes, shapes=True, optimize="greedy")
    except TypeError:  # opt_einsum < 3.3 has no shapes=
        arrays = [np.broadcast_to(np.zeros((), np.float32), shape) for shape in shapes]
        path, _ = opt_einsum.contract_path(expr, *arrays, optimize="greedy")
    return [tuple(int(i) for i in step) for step in path]


def _step_specs(
    tensors: Sequence[_Tensor],
    dtype: np.dtype,
    alignments: Sequence[int],
    *,
    elementwise: bool = False,
) -> tuple[list[TensorSpec], list[tuple[str, ...]]]:
    from .operations import lower_layouts

    lowered, _ = lower_layouts(
        [t.labels for t in tensors],
        [t.shape for t in tensors],
        [t.strides for t in tensors],
        len(tensors) - 1,
        names=[_describe(t.source) for t in tensors],
        broadcast=True,
        output_broadcasts=elementwise,
    )
    specs = [
        TensorSpec(low.extents, low.strides, dtype, a)
        for low, a in zip(lowered, alignments, strict=False)
    ]
    return specs, [tuple(str(x) for x in low.labels) for low in lowered]


def _describe(source: _Source) -> str:
    if source[0] == "in":
        return f"operand {source[1]}"
    if source[0] == "tmp":
        return "an intermediate"
    return "out"


def _compile(  # noqa: PLR0917 - private
    handle: Handle,
    spec: EinsumSpec,
    views: Sequence[ArrayView],
    out_layout: tuple[tuple[int, ...], tuple[int, ...]],
    out_alignment: int,
    compute_type: Any,
    beta_zero: bool,
) -> _Program:
    from .operations import (
        Contraction,
        ElementwiseBinary,
        Permutation,
        Reduction,
        check_operation,
    )
    from .plan import Plan
    from .tensor import TensorDescriptor

    dtype = _common_dtype(views)
    program = _Program()
    program.dtype = dtype
    program.device = handle.device
    out_tensor = _Tensor(spec.output, out_layout[0], out_layout[1], ("out",))
    user = [
        _Tensor(labels, tuple(v.shape), tuple(v.strides), ("in", i))
        for i, (labels, v) in enumerate(zip(spec.inputs, views, strict=False))
    ]
    alignment: dict[_Source, int] = {
        ("in", i): alignment_of(v.ptr, MAX_ALIGNMENT) for i, v in enumerate(views)
    }
    alignment[("out",)] = out_alignment
    tmp_sizes: list[int] = []

    def align_of(t: _Tensor) -> int:
        return alignment.get(t.source, MAX_ALIGNMENT)  # intermediates are 256-byte aligned

    def add(kind: str, tensors: Sequence[_Tensor], sources: list[_Source],
            scalars: tuple[str, ...], binary: tuple[str, ...] = ()) -> None:  # fmt: skip
        alignments = [align_of(t) for t in tensors]
        if sources[-1] == ("out",):
            # the output shares the last tensor's descriptor: plan for the less aligned pointer
            alignments[-1] = min(alignments[-1], out_alignment)
        specs, labels = _step_specs(
            tensors, dtype, alignments, elementwise=kind in ("permutation", "elementwise_binary")
        )
        check_operation(kind, specs, labels, binary=binary, compute_type=compute_type)
        descriptors: list[TensorDescriptor] = []
        try:
            for s in specs:
                descriptors.append(TensorDescriptor.from_spec(handle, s))
            pairs = [(d, lab) for d, lab in zip(descriptors, labels, strict=False)]
            if kind == "contraction":
                op: Any = Contraction(*pairs[0], *pairs[1], *pairs[2], compute_type=compute_type,
                                      handle=handle)  # fmt: skip
            elif kind == "reduction":
                op = Reduction(*pairs[0], *pairs[1], compute_type=compute_type, handle=handle)
            elif kind == "permutation":
                op = Permutation(*pairs[0], *pairs[1], compute_type=compute_type, handle=handle)
            else:
                op = ElementwiseBinary(*pairs[0], *pairs[1], op_ac=binary[0],
                                       compute_type=compute_type, handle=handle)  # fmt: skip
            plan = Plan(op)
        except BaseException:
            for d in descriptors:
                d.close()
            raise
        program.steps.append(_Step(descriptors, plan, sources, scalars))

    if len(user) == 1:
        a = user[0]
        _, labels = _step_specs(
            [a, out_tensor], dtype, [align_of(a), out_alignment], elementwise=True
        )
        if set(labels[0]) <= set(labels[1]):
            if beta_zero:
                add("permutation", [a, out_tensor], [a.source, ("out",)], ("alpha",))
            else:  # out = alpha A + beta out: C and D are both out
                add("elementwise_binary", [a, out_tensor], [a.source, ("out",), ("out",)],
                    ("alpha", "beta"), binary=("add",))  # fmt: skip
        else:
            add("reduction", [a, out_tensor], [a.source, ("out",), ("out",)], ("alpha", "beta"),
                binary=("add",))  # fmt: skip
    elif len(user) == 2:
        x, y = user
        chosen = None
        # The elementwise table is narrower than the contraction one (float32 data: 32F compute
        # only, no TF32/3XTF32/16BF/...), so take that route only where it supports the request.
        if beta_zero and _table_allows("elementwise_binary", dtype, compute_type):
            chosen = _elementwise_pair(x, y, out_tensor)
        if chosen is not None:
            other, same = chosen
            add("elementwise_binary", [other, same], [other.source, same.source, ("out",)],
                ("alpha", "one"), binary=("mul",))  # fmt: skip
        else:
            add("contraction", [x, y, out_tensor], [x.source, y.source, ("out",), ("out",)],
                ("alpha", "beta"))  # fmt: skip
    else:
        pending: list[_Tensor] = list(user)
        path = _path(spec)
        for k, step in enumerate(path):
            if len(step) != 2:
                raise NotImplementedError(f"einsum path step {step} is not a pairwise contraction")
            i, j = sorted(step)
            left, right = pending[i], pending[j]
            rest = [t for n, t in enumerate(pending) if n not in (i, j)]
            last = k == len(path) - 1
            if last:
                target = out_tensor
                sources = [left.source, right.source, ("out",), ("out",)]
                scalars: tuple[str, ...] = ("alpha", "beta")
            else:
                needed = set(spec.output).union(*(set(t.labels) for t in rest))
                labels_out: list[str] = []
                for label in (*left.labels, *right.labels):
                    if label in needed and label not in labels_out:
                        labels_out.append(label)
                local: dict[str, int] = {}
                for t in (left, right):
                    for label, n in zip(t.labels, t.shape, strict=False):
                        local[label] = max(local.get(label, 1), n)
                shape = tuple(local[x] for x in labels_out)
                strides = column_major_strides(shape)
                index = len(tmp_sizes)
                size = 1
                for n in shape:
                    size *= n
                tmp_sizes.append(size * dtype.itemsize)
                target = _Tensor(tuple(labels_out), shape, strides, ("tmp", index))
                sources = [left.source, right.source, target.source, target.source]
                scalars = ("one", "zero")
            add("contraction", [left, right, target], sources, scalars)
            pending = [*rest, target]
    # The block: intermediates first, then the largest workspace any step needs.
    offset = 0
    for size in tmp_sizes:
        program.tmp_offsets.append(offset)
        offset += _round_up(size)
    need = max((s.plan.required_workspace for s in program.steps
                if s.operation.takes_workspace), default=0)  # fmt: skip
    program.workspace_offset = offset
    program.workspace_size = need
    program.block = offset + need
    return program


def _table_allows(kind: str, dtype: np.dtype, compute_type: Any) -> bool:
    """Whether cuTENSOR's table for ``kind`` lists ``dtype`` for every tensor with
    ``compute_type`` (None: the table's default)."""
    from .operations import _KINDS, _check_types, compute_type_name
    from .tensor import data_type_name

    info = _KINDS[kind]
    types = (data_type_name(dtype),) * len(info.tensors)
    try:
        _check_types(info, types, compute_type_name(compute_type))
    except (TypeError, ValueError):
        return False
    return True


def _elementwise_pair(x: _Tensor, y: _Tensor, out: _Tensor) -> tuple[_Tensor, _Tensor] | None:
    """``(other, same)`` when ``same`` is laid out exactly as the output (so that one descriptor
    serves both, as cutensorCreateElementwiseBinary requires) and nothing is summed."""
    out_layout = {
        label: (n, s)
        for label, n, s in zip(out.labels, out.shape, out.strides, strict=False)
        if n != 1
    }
    for same, other in ((x, y), (y, x)):
        layout = {
            label: (n, s)
            for label, n, s in zip(same.labels, same.shape, same.strides, strict=False)
            if n != 1
        }
        other_labels = {
            label for label, n in zip(other.labels, other.shape, strict=False) if n != 1
        }
        if layout == out_layout and other_labels <= set(out_layout) and 0 not in same.strides:
            return other, same
    return None


# -- output allocation --------------------------------------------------------------------------------
def _new_output(
    template: Any, shape: tuple[int, ...], dtype: np.dtype, device: int, stream: Any
) -> Any:
    module = type(template).__module__.split(".", 1)[0]
    if module == "torch":
        import torch

        return torch.empty(shape, dtype=template.dtype, device=template.device)
    if module == "cupy":
        import cupy

        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=dtype)
    from pycudnn._shared.device_array import DeviceArray

    return DeviceArray.empty(shape, dtype, device=device, stream=stream)


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


def einsum(
    subscripts: str,
    *operands: Any,
    out: Any = None,
    alpha: Any = 1.0,
    beta: Any = 0.0,
    compute_type: Any = None,
    stream: Any = None,
) -> Any:
    """``alpha * numpy.einsum(subscripts, *operands) + beta * out``, on the GPU with cuTENSOR.

    ``operands``: device arrays (DLPack or ``__cuda_array_interface__``: CuPy, PyTorch, JAX,
    :class:`pycutensor.DeviceArray`) of one dtype on one device. ``out``: a device array of the
    result's shape and dtype (it may not overlap an operand); ``beta`` other than 0 needs it.
    ``compute_type``: a cuTENSOR compute descriptor name (``"32F"``, ``"TF32"``, ``"3XTF32"``,
    ``"16BF"``, ``"16F"``, ``"64F"``, ...); the default follows the data type (32F for 16-bit and
    32-bit data, 64F for doubles). ``stream``: the stream to run on (None: the legacy default
    stream). Returns ``out``, or a new array.
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"subscripts must be a str, not {type(subscripts).__name__}")
    if not operands:
        raise ValueError("einsum needs at least one operand")
    stream_ptr = stream_handle(stream)
    views = [
        as_array_view(x, name=f"operand {i}", stream_ptr=stream_ptr) for i, x in enumerate(operands)
    ]
    out_view = None if out is None else as_array_view(out, name="out", stream_ptr=stream_ptr)
    if beta is not None and beta.__class__ is not float and beta.__class__ is not int:
        # before comparing it with 0: an array or another object may not compare to a bool
        _check_number(beta, "beta")
    beta_zero = beta is None or bool(beta == 0)
    if not beta_zero and out_view is None:
        raise ValueError("beta other than 0 scales out, so it needs out=")
    compute_key = (
        compute_type if compute_type is None or isinstance(compute_type, str) else str(compute_type)
    )
    out_align = 0 if out_view is None else alignment_of(out_view.ptr, MAX_ALIGNMENT)
    out_key = None if out_view is None else (out_view.shape, out_view.strides, out_view.dtype,
                                             out_align)  # fmt: skip
    key = (
        "einsum", subscripts, compute_key, beta_zero, out_key,
        tuple((v.shape, v.strides, v.dtype, alignment_of(v.ptr, MAX_ALIGNMENT)) for v in views),
    )  # fmt: skip
    device = views[0].device_id
    handle = None
    program: _Program | None = None
    same = device >= 0 and (out_view is None or out_view.device_id == device)
    for v in views:
        same = same and v.device_id == device
    if same:
        handle = get_handle(device)
        program = handle.cached(key)
    if program is None:
        program, handle = _first_call(
            subscripts, views, out_view, compute_type, beta_zero, key, alpha, beta
        )
        if program is None:  # an empty output: nothing to compute
            return _empty_result(operands[0], views, out, out_view, subscripts, stream)
    assert handle is not None
    dtype = program.dtype
    fresh = out is None
    if fresh:
        out = _new_output(operands[0], program.out_shape, dtype, device, stream)
        out_view = as_array_view(out, name="out", stream_ptr=stream_ptr)
        if out_view.strides != _c_strides(out_view.shape):
            raise RuntimeError("the new output array is not C-contiguous")
    assert out_view is not None
    if fresh:
        out_align = alignment_of(out_view.ptr, MAX_ALIGNMENT)
    if out_align < program.out_alignment:
        # The program was planned for 256-byte aligned outputs; this allocation is less aligned,
        # so plan (once, cached) for an out of this alignment.
        return einsum(subscripts, *operands, out=out, alpha=alpha, beta=0.0,
                      compute_type=compute_type, stream=stream)  # fmt: skip
    if out_view.readonly:
        raise ValueError("out is read-only")
    pointers = [v.ptr for v in views]
    out_ptr = out_view.ptr
    if not fresh:  # a new output cannot overlap the operands
        lo, hi = program.out_span
        lo, hi = out_ptr + lo, out_ptr + hi
        for i, (a, b) in enumerate(program.spans):
            if pointers[i] + a < hi and lo < pointers[i] + b:
                raise ValueError(
                    f"out overlaps operand {i} in memory: cuTENSOR requires inputs not to overlap "
                    "the output"
                )
    _check_device_view(out_view, "out", handle.device_id)
    previous = handle.activate()  # intermediates and workspace live on the handle's device
    try:
        program.run(pointers, out_view.ptr, alpha, 0.0 if beta is None else beta, stream_ptr)
    finally:
        handle.restore(previous)
    return out


def _first_call(  # noqa: PLR0917 - private
    subscripts: str,
    views: Sequence[ArrayView],
    out_view: ArrayView | None,
    compute_type: Any,
    beta_zero: bool,
    key: Any,
    alpha: Any = 1.0,
    beta: Any = 0.0,
) -> tuple[_Program | None, Handle | None]:
    """Parse, validate and plan; returns None for an empty output. Everything that can be checked
    without a GPU is checked before the devices are looked at."""
    from .operations import compute_type_name
    from .tensor import data_type_name

    spec = parse_einsum(subscripts, *(v.shape for v in views))
    dtype = _common_dtype(views)
    type_name = data_type_name(dtype, name="operands' dtype")
    compute_type_name(compute_type)
    # The scalars' type follows the data (the user guide's scalar-type table: complex data take
    # complex scalars, real data real ones); refuse a complex alpha for real data before planning.
    scalar_dtype = _table_scalar_dtype(type_name)
    if scalar_dtype is not None:
        _coerce_scalar(alpha, scalar_dtype, "alpha")
        if beta is not None:
            _coerce_scalar(beta, scalar_dtype, "beta")
    out_shape = spec.output_shape
    if out_view is not None:
        if tuple(out_view.shape) != out_shape:
            raise ValueError(f"out has shape {tuple(out_view.shape)}, the result has {out_shape}")
        if np.dtype(out_view.dtype) != dtype:
            raise TypeError(f"out has dtype {out_view.dtype}, the result has {dtype}")
        if out_view.readonly:  # known before planning; the execute path checks it again
            raise ValueError("out is read-only")
    if any(n == 0 for n in out_shape):
        _check_devices(views, out_view)
        return None, None
    for label in spec.contracted:
        if spec.extents[label] == 0:
            raise ValueError(
                f"label {label!r} is summed over extent 0; cuTENSOR requires extents larger than "
                "zero (the sum of nothing is 0: compute it without einsum)"
            )
    out_layout = (out_shape, _c_strides(out_shape)) if out_view is None else (
        tuple(out_view.shape), tuple(out_view.strides))  # fmt: skip
    # Validate the layouts and the type tables for the first step without a GPU.
    _dry_run(spec, views, out_layout, dtype, compute_type, beta_zero)
    device = _check_devices(views, out_view)
    handle = get_handle(device)
    out_alignment = MAX_ALIGNMENT if out_view is None else alignment_of(out_view.ptr, MAX_ALIGNMENT)
    program = _compile(handle, spec, views, out_layout, out_alignment, compute_type, beta_zero)
    program.out_shape = out_shape
    program.out_alignment = out_alignment
    program.spans = [_span(0, v.shape, v.strides, v.itemsize) for v in views]
    program.out_span = _span(0, out_layout[0], out_layout[1], dtype.itemsize)
    handle.cache(key, program)
    return program, handle


def _check_devices(views: Sequence[ArrayView], out_view: ArrayView | None) -> int:
    device: int | None = None
    for i, v in enumerate(views):
        _check_device_view(v, f"operand {i}", device)
        device = v.device_id
    if out_view is not None:
        _check_device_view(out_view, "out", device)
    assert device is not None
    return device


def _dry_run(  # noqa: PLR0917 - private
    spec: EinsumSpec,
    views: Sequence[ArrayView],
    out_layout: tuple[tuple[int, ...], tuple[int, ...]],
    dtype: np.dtype,
    compute_type: Any,
    beta_zero: bool,
) -> None:
    """The checks of the first cuTENSOR call, in Python: layouts, broadcasts, type tables."""
    from .operations import check_operation

    tensors = [
        _Tensor(labels, tuple(v.shape), tuple(v.strides), ("in", i))
        for i, (labels, v) in enumerate(zip(spec.inputs, views, strict=False))
    ]
    out_tensor = _Tensor(spec.output, out_layout[0], out_layout[1], ("out",))
    if len(tensors) == 1:
        pair = [tensors[0], out_tensor]
        specs, labels = _step_specs(pair, dtype, [MAX_ALIGNMENT] * 2, elementwise=True)
        if set(labels[0]) <= set(labels[1]):
            kind, binary = ("permutation", ()) if beta_zero else ("elementwise_binary", ("add",))
        else:
            kind, binary = "reduction", ("add",)
            specs, labels = _step_specs(pair, dtype, [MAX_ALIGNMENT] * 2)
        check_operation(kind, specs, labels, binary=binary, compute_type=compute_type)
    elif len(tensors) == 2:
        specs, labels = _step_specs([*tensors, out_tensor], dtype, [MAX_ALIGNMENT] * 3)
        try:
            check_operation("contraction", specs, labels, compute_type=compute_type)
        except (TypeError, ValueError):
            if not (spec.kind == "elementwise" and beta_zero):
                raise
            # a product that may run as an elementwise operation, whose table differs
            check_operation("elementwise_binary", specs[1:], labels[1:], binary=("mul",),
                            compute_type=compute_type)  # fmt: skip
    else:
        for i, t in enumerate(tensors):  # strides of every operand, before anything is planned
            copy = _Tensor(t.labels, t.shape, column_major_strides(t.shape), ("tmp", i))
            _step_specs([t, copy], dtype, [MAX_ALIGNMENT] * 2, elementwise=True)
        types = (TensorSpec((), (), dtype, MAX_ALIGNMENT),) * 3
        check_operation("contraction", types, [(), (), ()], compute_type=compute_type)


def _empty_result(  # noqa: PLR0917 - private
    template: Any, views: Sequence[ArrayView], out: Any, out_view: ArrayView | None,
    subscripts: str, stream: Any,
) -> Any:  # fmt: skip
    if out is not None:
        return out
    spec = parse_einsum(subscripts, *(v.shape for v in views))
    return _new_output(
        template, spec.output_shape, _common_dtype(views), views[0].device_id, stream
    )
