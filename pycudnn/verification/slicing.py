"""A reference for some batch elements of a graph too large for the host reference.

Convolution forward and backward data, matmul, pointwise operations and reductions that keep the
batch axis compute batch element ``n`` of their outputs from batch element ``n`` of their inputs
only. For a graph made of such operations, NumPy can compute the outputs of a few batch elements
alone (``1/N`` of the work each) from the same batch elements of the inputs: an exact reference
for part of the outputs, still independent of cuDNN. The elements checked are the first and the
last (:func:`batch_elements`): a fault in how an engine finds batch element ``n`` (a wrong batch
stride, every element computed from the first) leaves element 0 right and the last one wrong.
A weight gradient (which sums over the batch), an operation with an output that has no batch dim
(a reduction over the batch axis, a norm's dscale and dbias, an attention's dbias, dsink or amax),
a training batch norm (statistics over the batch) or an index generated along the batch axis
makes the graph not separable; then another engine is the reference (see :mod:`.run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..opgraph import OperationGraph

__all__ = ["batch_elements", "batch_slice", "slice_arrays"]


def batch_elements(batch: int, count: int) -> tuple[int, ...]:
    """The batch elements a sliced reference checks: the first and the last (``count`` 2), or
    the last alone (``count`` 1: its inputs are the furthest from the first, where a fault in
    how an engine finds a batch element shows)."""
    if count not in (1, 2) or batch < 2:
        raise ValueError(f"1 or 2 of at least 2 batch elements, not {count} of {batch}")
    return (batch - 1,) if count == 1 else (0, batch - 1)


def batch_slice(graph: OperationGraph, count: int = 1) -> dict[int, tuple[int, ...]] | None:
    """The dims of every tensor of ``count`` batch elements (uid -> dims), or None when the
    graph's outputs are not separable by batch element (or there is a single element)."""
    outputs = graph.outputs
    if not outputs:
        return None
    batch = outputs[0].dims[0]
    if batch == 1:
        return None
    weights: set[int] = set()
    for op in graph.operations:
        if op.kind == "conv_wgrad":
            return None
        if (
            op.kind == "pointwise"
            and op.attrs["mode"].name == "GEN_INDEX"
            and int(op.attrs.get("axis", 0)) == 0
        ):
            return None  # each batch element's output is its own index
        if op.kind in ("sdpa", "sdpa_backward"):
            # a paged K/V cache holds blocks, not batch elements (the page table picks them)
            weights.update(op.inputs[role].uid for role in op.attrs.get("paged", ()))
        if op.kind in ("conv_fprop", "conv_dgrad"):
            w = op.inputs["w"]
            if w.producer is not None:
                return None  # a weight computed from batch data: not a per-element graph
            weights.add(w.uid)
        if (
            op.kind == "norm_forward"
            and op.attrs.get("mode") == "batch"
            and "mean" not in op.inputs
        ):
            return None  # statistics over the batch (a given mean and variance: per element)
        reads_batch = any(
            t.dims[0] == batch and not t.by_value
            for role, t in op.inputs.items()
            if not (role == "w" and op.kind in ("conv_fprop", "conv_dgrad"))
        )
        if reads_batch and any(t.dims[0] != batch for t in op.outputs.values()):
            # an output without the batch dim sums or reduces over it: a reduction over the
            # batch, a norm's dscale and dbias, an attention's dbias, dsink or amax
            return None
    sliced: dict[int, tuple[int, ...]] = {}
    for t in graph.tensors:
        if t.uid in weights or t.by_value or t.dims[0] == 1:
            continue
        if t.dims[0] != batch:
            return None  # a leading dim that is neither the batch nor a broadcast
        sliced[t.uid] = (count, *t.dims[1:])
    return sliced


def slice_arrays(
    arrays: Mapping[int, Any],
    dims: Mapping[int, tuple[int, ...]],
    elements: tuple[int, ...] = (0,),
) -> dict[int, np.ndarray]:
    """``arrays`` with batch ``elements`` of every tensor in ``dims`` (the others unchanged)."""
    index = list(elements)
    return {
        uid: (np.asarray(a)[index] if uid in dims else np.asarray(a)) for uid, a in arrays.items()
    }
