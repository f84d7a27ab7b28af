"""Resolution of a graph's tensors when it is finalized: which operation outputs are virtual and
which dtype each gets where the caller left it open, and the checks a resolved graph must pass
(every virtual tensor written and read, outputs in range and not overlapping). Functions of the
tensors and the graph's dtype defaults; :meth:`GraphCore._resolve` stores the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from _nvbind.dtypes import DataType, dtype_name

from .. import layout
from .common import GraphError, _check_extent, _dims_text
from .tensors import Operation, Tensor

__all__ = ["decide", "resolve", "source_dtype"]


def source_dtype(t: Tensor, seen: set[int] | None = None) -> DataType | None:
    """The dtype of the first caller-provided tensor an op output is computed from."""
    seen = seen if seen is not None else set()
    if t.uid in seen:
        return None
    seen.add(t.uid)
    op = t.producer
    if op is None:
        return None if t.by_value else t.element_type
    for src in op.inputs.values():
        if src.producer is None and not src.by_value and src.element_type is not None:
            return src.element_type
    for src in op.inputs.values():
        dt = source_dtype(src, seen)
        if dt is not None:
            return dt
    return None


def decide(
    t: Tensor, intermediate_dtype: DataType, io_dtype: DataType | None
) -> tuple[bool, DataType]:
    """Whether an operation output is virtual, and its dtype, as the graph stands now: what
    finalizing it would decide for what the caller left open."""
    virtual = (not t.is_output) if t._virtual is None else t._virtual
    dtype = t._dtype
    if dtype is None and virtual:
        dtype = intermediate_dtype
    elif dtype is None:
        dtype = io_dtype or source_dtype(t) or intermediate_dtype
    return virtual, dtype


def resolve(
    name: str,
    tensors: Sequence[Tensor],
    ops: Sequence[Operation],
    intermediate_dtype: DataType,
    io_dtype: DataType | None,
) -> None:
    """Decide virtual flags and dtypes of op outputs and store them, or refuse the graph and
    change nothing."""
    if not ops:
        raise GraphError(f"graph '{name}' has no operations")
    decided: list[tuple[Tensor, bool, DataType]] = []
    for t in tensors:
        if t.producer is None:
            if t.is_virtual:
                raise GraphError(
                    f"tensor '{t.name}' is virtual but no operation writes it; pass it as out= "
                    "to the operation that computes it"
                )
            if not t.consumers:
                raise GraphError(f"tensor '{t.name}' is not used by any operation")
            continue
        # Decided here but stored only once every check passed: a refused graph stays as
        # the caller built it, so that the mistake can be fixed (e.g. with set_output()).
        virtual, dtype = decide(t, intermediate_dtype, io_dtype)
        if virtual and not t.consumers:
            # cuDNN accepts such a graph and then finds no engine for it ("NOT_SUPPORTED_LAYOUT").
            raise GraphError(
                f"{t.producer.label}: output '{t.name}' is virtual and read by no operation, "
                "so the graph computes nothing with it; make it a graph output (set_output())"
            )
        shape, strides = t.array_shape, t.array_strides  # elements, vectors unpacked
        _check_extent(shape, strides, dtype, f"{t.producer.label}: output '{t.name}'")
        if not virtual and layout.is_overlapping(shape, strides):
            raise GraphError(
                f"{t.producer.label}: output '{t.name}' has overlapping strides "
                f"{_dims_text(t.strides)} for dims {_dims_text(t.dims)}: outputs may not overlap"
            )
        decided.append((t, virtual, dtype))
    for t, virtual, dtype in decided:
        t._virtual, t._dtype = virtual, dtype


#: What :func:`layout_of` keeps of one tensor.
Layout = tuple[object, object, int, bool, int, int, object]


def layout_of(tensors: Sequence[Tensor]) -> tuple[Layout, ...]:
    """What a graph's key holds of its tensors that a caller can still reassign (each tensor's
    dims, strides, alignment, ``by_value``, vector count and unique id are plain attributes; the
    ragged offset, which the key holds through the operations that read it, too): kept with the
    key, and compared at every later key (:func:`check_layout_unchanged`). A ``by_value`` flag
    changed after the key was taken made that graph's plan (a device pointer read where the
    other graph passes a host scalar, or the reverse) a memory hit for every graph of the old
    key."""
    return tuple(
        (t.dims, t.strides, t.alignment, t.by_value, t.vector_count, t.uid, t.ragged_offset)
        for t in tensors
    )


def check_layout_unchanged(name: str, tensors: Sequence[Tensor], kept: tuple[Layout, ...]) -> None:
    """Refuse a graph whose tensors were reassigned after its key was taken: the key, and the
    plans cached under it, describe the tensors as they were (a hit would run the old plan on
    arrays checked against the new layout)."""
    now = layout_of(tensors)
    if now != kept:
        t = next(t for t, a, b in zip(tensors, now, kept, strict=True) if a != b)
        raise GraphError(
            f"tensor '{t.name}' of graph '{name}' was changed after the graph was finalized "
            "(built or its key taken): its plans are for the tensor as it was; describe a new "
            "Graph"
        )


def written_as(out: Tensor, dtype: DataType, op_label: str) -> None:
    """Give the tensor an operation's ``out=`` names the type the operation writes, refusing
    another type it already has (it was re-typed silently: ``transpose`` of float32 data into a
    float16 ``out`` made it float32)."""
    if out._dtype is not None and out._dtype != dtype:
        raise GraphError(
            f"{op_label}: out ('{out.name}') is {dtype_name(out._dtype)} but the operation "
            f"writes {dtype_name(dtype)}"
        )
    out.set_dtype(dtype)
