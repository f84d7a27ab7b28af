"""Building an einsum's cuTENSOR program from its plan (:mod:`._einsum_plan`), and running it.

:func:`build_program` walks the plan's steps: a diagonal becomes other strides on the operand's
own pointer; casts, reductions and contractions become cuTENSOR operations whose intermediates
live in one workspace block. Called without a handle it only validates every step in Python
(layouts, type tables, structure rules), which is how einsum refuses bad requests before it looks
at devices, and how the CPU tests check each generated plan against cuTENSOR's rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from _nvbind import memory

from ._einsum_plan import Cast, Contract, Diagonal, EinsumPlan, Reduce, diagonal_strides
from .checks import coerce_scalar as _coerce_scalar
from .operations import (
    Contraction,
    ElementwiseBinary,
    Permutation,
    Reduction,
    check_operation,
    compute_type_name,
    lower_layouts,
)
from .plan import Plan
from .tables import KINDS as _KINDS
from .tables import check_types as _check_types
from .tensor import (
    MAX_ALIGNMENT,
    TensorDescriptor,
    TensorSpec,
    column_major_strides,
    data_type_name,
)

if TYPE_CHECKING:  # pragma: no cover
    from .handle import Handle
    from .plan import Plan
    from .tensor import TensorDescriptor

# Where a tensor of a program lives: a user operand ("in", i), an intermediate ("tmp", j), or the
# output ("out",).
_Source = tuple[Any, ...]
# The compute type of a cast (a permutation into the wider type): the one its table row lists.
_CAST_COMPUTE = {"float32": "32F", "float64": "64F", "complex128": "64F"}


_SCALAR_INDEX = {"alpha": 0, "beta": 1, "one": 2, "zero": 3}  # into run()'s (alpha, beta, 1, 0)
_SOURCE_KIND = {"in": 0, "tmp": 1, "out": 2}


class _Step:
    __slots__ = ("descriptors", "gather", "operation", "plan", "scalar_index", "scalars", "sources")

    def __init__(self, descriptors: list[TensorDescriptor], plan: Plan, sources: list[_Source],
                 scalars: tuple[str, ...]) -> None:  # fmt: skip
        self.descriptors = descriptors
        self.plan = plan
        self.operation = plan.operation
        self.sources = sources  # one per execute operand
        self.scalars = scalars  # per scalar of the operation: "alpha", "beta", "one" or "zero"
        # The same, as integers for run(): (kind, index) per operand, index per scalar.
        self.gather = tuple(
            (_SOURCE_KIND[src[0]], src[1] if len(src) > 1 else 0) for src in sources
        )
        self.scalar_index = tuple(_SCALAR_INDEX[name] for name in scalars)

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
        ws_size = self.workspace_size
        values = (alpha, beta, 1.0, 0.0)
        for step in self.steps:
            # operands: 0 = the caller's operand i, 1 = intermediate i, 2 = the output
            ptrs = [
                pointers[i] if kind == 0 else base + tmp[i] if kind == 1 else out_ptr
                for kind, i in step.gather
            ]
            scalars = [values[i] for i in step.scalar_index]
            step.plan.launch_unchecked(ptrs, scalars, stream_ptr, ws_ptr, ws_size)


def _round_up(n: int, to: int = 256) -> int:
    return (n + to - 1) // to * to


class _Tensor:
    """A tensor while a program is built: its labels, layout and dtype, and where its pointer
    comes from."""

    __slots__ = ("dtype", "labels", "shape", "source", "strides")

    def __init__(self, labels: tuple[str, ...], shape: tuple[int, ...], strides: tuple[int, ...],
                 source: _Source, dtype: np.dtype) -> None:  # fmt: skip
        self.labels = labels
        self.shape = shape
        self.strides = strides
        self.source = source
        self.dtype = dtype


def _step_specs(
    tensors: Sequence[_Tensor],
    alignments: Sequence[int],
    *,
    elementwise: bool = False,
) -> tuple[list[TensorSpec], list[tuple[str, ...]]]:

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
        TensorSpec(low.extents, low.strides, t.dtype, a)
        for low, t, a in zip(lowered, tensors, alignments, strict=False)
    ]
    return specs, [tuple(str(x) for x in low.labels) for low in lowered]


def _describe(source: _Source) -> str:
    if source[0] == "in":
        return f"operand {source[1]}"
    if source[0] == "tmp":
        return "an intermediate"
    return "out"


def _table_allows(kind: str, dtype: np.dtype, compute_type: Any) -> bool:
    """Whether cuTENSOR's table for ``kind`` lists ``dtype`` for every tensor with
    ``compute_type`` (None: the table's default)."""

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


def build_program(  # noqa: PLR0917 - private
    handle: Handle | None,
    plan: EinsumPlan,
    layouts: Sequence[tuple[tuple[int, ...], tuple[int, ...], int]],
    out_layout: tuple[tuple[int, ...], tuple[int, ...], int],
    compute_type: Any,
    beta_zero: bool,
) -> _Program:
    """The cuTENSOR program of ``plan`` for operands of the given (shape, element strides,
    alignment) and the output's: per step ``cutensorCreateTensorDescriptor``, then
    ``cutensorCreatePermutation``, ``cutensorCreateReduction``, ``cutensorCreateContraction`` or
    ``cutensorCreateElementwiseBinary``, and ``cutensorCreatePlan``. ``handle=None``: validate
    every step in Python only (no descriptor, no GPU); the program then has no steps."""

    dtype = plan.dtype
    program = _Program()
    program.dtype = plan.tensors[-1].dtype  # the output's
    program.device = None if handle is None else handle.device
    tensors: dict[int, _Tensor] = {}
    alignment: dict[_Source, int] = {("out",): out_layout[2]}
    for i, (shape, strides, align) in enumerate(layouts):
        t = plan.tensors[i]
        tensors[i] = _Tensor(t.labels, tuple(shape), tuple(strides), ("in", i), t.dtype)
        alignment[("in", i)] = align
    tmp_sizes: list[int] = []

    def place(k: int) -> _Tensor:
        """The output, or a new packed intermediate in the block."""
        t = plan.tensors[k]
        if k == plan.output:
            return _Tensor(t.labels, out_layout[0], out_layout[1], ("out",), t.dtype)
        size = t.dtype.itemsize
        for n in t.shape:
            size *= n
        tmp_sizes.append(size)
        strides = column_major_strides(t.shape)
        return _Tensor(t.labels, t.shape, strides, ("tmp", len(tmp_sizes) - 1), t.dtype)

    def add(kind: str, operands: Sequence[_Tensor], sources: list[_Source],
            scalars: tuple[str, ...], *, binary: tuple[str, ...] = (),
            compute: Any = compute_type, describes_out: int | None = None) -> None:  # fmt: skip
        # intermediates are 256-byte aligned
        alignments = [alignment.get(t.source, MAX_ALIGNMENT) for t in operands]
        if describes_out is not None:  # that operand's descriptor is out's too (D is C)
            alignments[describes_out] = min(alignments[describes_out], alignment[("out",)])
        specs, labels = _step_specs(
            operands, alignments, elementwise=kind in ("permutation", "elementwise_binary")
        )
        check_operation(kind, specs, labels, binary=binary, compute_type=compute)
        if handle is None:
            return
        descriptors: list[TensorDescriptor] = []
        try:
            for s in specs:
                descriptors.append(TensorDescriptor.from_spec(handle, s))
            pairs = [(d, lab) for d, lab in zip(descriptors, labels, strict=False)]
            if kind == "contraction":
                op: Any = Contraction(*pairs[0], *pairs[1], *pairs[2], compute_type=compute,
                                      handle=handle)  # fmt: skip
            elif kind == "reduction":
                op = Reduction(*pairs[0], *pairs[1], compute_type=compute, handle=handle)
            elif kind == "permutation":
                op = Permutation(*pairs[0], *pairs[1], compute_type=compute, handle=handle)
            else:
                op = ElementwiseBinary(*pairs[0], *pairs[1], op_ac=binary[0],
                                       compute_type=compute, handle=handle)  # fmt: skip
            cu_plan = Plan(op)
        except BaseException:
            for d in descriptors:
                d.close()
            raise
        program.steps.append(_Step(descriptors, cu_plan, sources, scalars))

    try:
        for step in plan.steps:
            if isinstance(step, Diagonal):  # other strides on the operand's own memory
                src = tensors[step.source]
                t = plan.tensors[step.target]
                strides = diagonal_strides(src.strides, step.axes)
                tensors[step.target] = _Tensor(t.labels, t.shape, strides, src.source, src.dtype)
                continue
            target = place(step.target)
            tensors[step.target] = target
            final = target.source == ("out",)
            if isinstance(step, Cast):
                a = tensors[step.source]
                compute = _CAST_COMPUTE[target.dtype.name]
                if not final:
                    add("permutation", [a, target], [a.source, target.source], ("one",),
                        compute=compute)  # fmt: skip
                elif beta_zero:  # the result widened into out
                    add("permutation", [a, target], [a.source, ("out",)], ("alpha",),
                        compute=compute)  # fmt: skip
                else:
                    raise ValueError(
                        f"beta other than 0 needs out of the computed dtype ({dtype}), not "
                        f"{target.dtype}: cuTENSOR has no operation that widens into out while "
                        "adding beta * out"
                    )
            elif isinstance(step, Reduce):
                _add_reduce(add, tensors[step.source], target, final, beta_zero)
            else:
                assert isinstance(step, Contract)
                x, y = tensors[step.left], tensors[step.right]
                chosen = None
                # The elementwise table is narrower than the contraction one (float32 data: 32F
                # compute only, no TF32/3XTF32/16BF/...): take that route only where it allows.
                if final and beta_zero and _table_allows("elementwise_binary", dtype, compute_type):
                    chosen = _elementwise_pair(x, y, target)
                if chosen is not None:
                    other, same = chosen
                    add("elementwise_binary", [other, same], [other.source, same.source, ("out",)],
                        ("alpha", "one"), binary=("mul",), describes_out=1)  # fmt: skip
                else:
                    scalars = ("alpha", "beta") if final else ("one", "zero")
                    add("contraction", [x, y, target],
                        [x.source, y.source, target.source, target.source], scalars)  # fmt: skip
    except BaseException:
        program.close()
        raise
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


def _add_reduce(add: Any, a: _Tensor, target: _Tensor, final: bool, beta_zero: bool) -> None:
    """One tensor into ``target``: a permutation (a copy in another order) when nothing is
    summed, else a reduction; into the output with ``alpha`` and ``beta``."""
    _, labels = _step_specs([a, target], [MAX_ALIGNMENT] * 2, elementwise=True)
    if set(labels[0]) <= set(labels[1]):
        if not final:
            add("permutation", [a, target], [a.source, target.source], ("one",))
        elif beta_zero:
            add("permutation", [a, target], [a.source, ("out",)], ("alpha",))
        else:  # out = alpha A + beta out: C and D are both out
            add("elementwise_binary", [a, target], [a.source, ("out",), ("out",)],
                ("alpha", "beta"), binary=("add",))  # fmt: skip
    else:
        scalars = ("alpha", "beta") if final else ("one", "zero")
        add("reduction", [a, target], [a.source, target.source, target.source], scalars,
            binary=("add",))  # fmt: skip
