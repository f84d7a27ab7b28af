"""A reference for one batch element of a graph too large for the host reference.

Convolution forward and backward data, matmul, pointwise operations and reductions that keep the
batch axis compute batch element ``n`` of their outputs from batch element ``n`` of their inputs
only. For a graph made of such operations, NumPy can compute the outputs of batch element 0 alone
(``1/N`` of the work) from the first batch element of the same inputs: an exact reference for
part of the outputs, still independent of cuDNN. A weight gradient (which sums over the batch), an
operation with an output that has no batch dim (a reduction over the batch axis, a norm's dscale
and dbias, an attention's dbias, dsink or amax) or a training batch norm (statistics over the
batch) makes the graph not separable; then another engine is the reference (see :mod:`.run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..opgraph import OperationGraph

__all__ = ["batch_slice", "slice_arrays"]


def batch_slice(graph: OperationGraph) -> dict[int, tuple[int, ...]] | None:
    """The dims of every tensor of batch element 0 (uid -> dims), or None when the graph's
    outputs are not separable by batch element (or there is a single element)."""
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
        sliced[t.uid] = (1, *t.dims[1:])
    return sliced


def slice_arrays(
    arrays: Mapping[int, Any], dims: Mapping[int, tuple[int, ...]]
) -> dict[int, np.ndarray]:
    """``arrays`` with the batch element 0 of every tensor in ``dims`` (the others unchanged)."""
    return {uid: (np.asarray(a)[:1] if uid in dims else np.asarray(a)) for uid, a in arrays.items()}
