"""Lowering of the attention and normalisation operations to backend descriptors.

Called by :func:`pycudnn.opgraph.lowering.build_descriptors` for the kinds in :data:`KINDS`; each
builder sets the ``OPERATION_*`` descriptor's attributes and returns it unfinalized (the caller
finalizes it and names the operation in cuDNN's error).

The attribute sequences follow NVIDIA's cudnn-frontend (``UnifiedSDPANode``, the norm nodes),
measured against cuDNN 9.28 with deviceless H100 plans:

* ``OPERATION_SDPA_FWD``: Q, K, V, O, optional STATS, SCALEDESC (a by-value float), SEQ_LEN_Q/KV,
  SUBGRAPH + SUBGRAPH_INPUT_UID/OUTPUT_UID, DROPOUT_PROBABILITY + SEED/OFFSET.
* ``OPERATION_SDPA_BWD``: the same inputs plus O, dO, STATS and the outputs dQ, dK, dV.
* The score subgraph is its own ``OPERATIONGRAPH`` on a virtual float32 ``[b, h_q, s_q, s_kv]``
  tensor: a pointwise ADD(bias), then one ``OPERATION_DIAGONAL_BAND_MASK`` per bound, as the
  frontend's ``UnifiedDiagonalBandMaskNode`` (cuDNN 9.21+): the right bound (causal: 0) keeps
  ``row + right >= col`` (CMP_GE, SHIFT_RIGHT_BOUND), a sliding window of ``w`` keeps
  ``col + w > row`` (CMP_GT, LEFT_BOUND), the rest becomes -inf. Its virtual tensors get unique
  ids above ``2**40``.
* ``OPERATION_NORM_FORWARD``: MODE, PHASE, X, Y, SCALE, BIAS, EPSILON (by-value), MEAN and
  INV_VARIANCE (training; inference for batch norm), running statistics with EXP_AVG_FACTOR.
* ``OPERATION_NORM_BACKWARD``: MODE, X, DY, SCALE, MEAN, INV_VARIANCE, DX, DSCALE, DBIAS.
* A batch norm's ``peer_stats`` buffers: one ``NORM_FWD/BWD_PEER_STAT_DESCS`` attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from _nvbind.strides import c_strides

from .attention_composite import build_composite
from .attention_fp8_backward import build_fp8_backward, hopper_advice
from .norm_peer import PEER_ROLE, peer_descriptors
from .tensor_lowering import set_virtual

if TYPE_CHECKING:  # pragma: no cover
    from .tensors import Operation, Tensor

__all__ = [
    "KINDS",
    "build_operation",
    "build_operations",
    "in_subgraph_only",
    "lowering_advice",
    "lowering_notes",
]

KINDS = frozenset({"sdpa", "sdpa_backward", "norm_forward", "norm_backward"})

#: Inputs of an SDPA operation that only its score subgraph reads.
SUBGRAPH_ROLES = ("bias", "neg_inf", "right_bound", "left_bound")

_SUBGRAPH_UID_BASE = 1 << 40  # far above any graph's own tensor ids

_DESC = "BACKEND_DESCRIPTOR"


def build_operations(
    op: Operation, tensors: dict[int, Any], new: Any, finalize: Any
) -> list[Any] | None:
    """The finalized operations of an SDPA lowered to the composite graph, or None for an
    operation that lowers to one descriptor (:func:`build_operation`)."""
    if op.kind in ("sdpa", "sdpa_backward") and op.attrs.get("lowering") == "composite":
        if op.attrs.get("fp8"):
            return build_fp8_backward(op, tensors, new, finalize)
        return build_composite(op, tensors, new, finalize)
    return None


def build_operation(op: Operation, tensors: dict[int, Any], new: Any, finalize: Any) -> Any:
    """The unfinalized ``OPERATION_*`` descriptor of an attention or normalisation operation."""
    if op.kind in ("sdpa", "sdpa_backward"):
        return _sdpa(op, tensors, new, finalize)
    if op.kind == "norm_forward":
        return _norm(op, tensors, new, "OPERATION_NORM_FORWARD_DESCRIPTOR", _NORM_FWD)
    return _norm(op, tensors, new, "OPERATION_NORM_BACKWARD_DESCRIPTOR", _NORM_BWD)


def lowering_notes(ops: list[Operation]) -> list[str]:
    """One line per SDPA lowered to the composite graph: which operation, and why (for the
    planning report and ``Plan.rewrite``)."""
    return [
        f"{op.label} lowered to the {op.attrs['lowering_note']}"
        for op in ops
        if op.kind in ("sdpa", "sdpa_backward") and op.attrs.get("lowering") == "composite"
    ]


def lowering_advice(ops: list[Operation]) -> list[str]:
    """What to try when a graph of unified SDPA operations alone has no engine: the composite
    graph (with other operations fused in, neither plans on the H100: nothing to suggest)."""
    masked = [
        f"{op.label} has a block_mask: cuDNN 9.28 has no Hopper (sm_90) engine for "
        "SDPA_FWD_BLOCK_MASK_DESC (measured; NVIDIA's frontend gets none either), its block-mask "
        "engines are Blackwell's (sm_100); on Hopper give the masked tiles as -inf in bias="
        for op in ops
        if "block_mask" in op.inputs
    ]
    masked += hopper_advice(ops)
    if any(op.kind not in ("sdpa", "sdpa_backward") for op in ops):
        return masked
    return masked + [
        f"{op.label} is cuDNN's unified SDPA operation; implementation='composite' builds the "
        "matmul/softmax/matmul graph NVIDIA's frontend falls back to, which other engines take"
        for op in ops
        if op.kind in ("sdpa", "sdpa_backward")
        and op.attrs.get("lowering") == "unified"
        and "block_mask" not in op.inputs
    ]


def in_subgraph_only(t: Tensor) -> bool:
    """True for a tensor that only SDPA score subgraphs read: cuDNN's plan JSON lists the
    tensors of the operation graph, not those of a subgraph (measured with cuDNN 9.28)."""
    return bool(t.consumers) and all(
        op.kind in ("sdpa", "sdpa_backward")
        and op.attrs.get("lowering") != "composite"
        and any(op.inputs.get(role) is t for role in SUBGRAPH_ROLES)
        for op in t.consumers
    )


# -- SDPA ------------------------------------------------------------------------------------------

_SDPA_FWD_ROLES = {
    "q": "QDESC",
    "k": "KDESC",
    "v": "VDESC",
    "o": "ODESC",
    "stats": "STATSDESC",
    "scale": "SCALEDESC",
    "seq_len_q": "SEQ_LEN_QDESC",
    "seq_len_kv": "SEQ_LEN_KVDESC",
    "seed": "DROPOUT_SEED_DESC",
    "offset": "DROPOUT_OFFSET_DESC",
}
#: Forward-only inputs and outputs: the block mask and per-tensor FP8 scaling (cuDNN 9.25).
_SDPA_FWD_ONLY_ROLES = {
    "block_mask": "BLOCK_MASK_DESC",
    **{f"{k}_{t}": f"{k.upper()}_{t.upper()}DESC" for k in ("descale",) for t in "qkvs"},
    **{f"{k}_{t}": f"{k.upper()}_{t.upper()}DESC" for k in ("scale", "amax") for t in "so"},
}
_SDPA_PAGED_ROLES = {"page_table_k": "PAGE_TABLE_KDESC", "page_table_v": "PAGE_TABLE_VDESC"}
_SDPA_BWD_ROLES = {
    **{r: a for r, a in _SDPA_FWD_ROLES.items()},
    "do": "DODDESC",
    "dq": "DQDESC",
    "dk": "DKDESC",
    "dv": "DVDESC",
    "sink": "SINK_DESC",
    "dsink": "DSINK_DESC",
}


def _sdpa(op: Operation, tensors: dict[int, Any], new: Any, finalize: Any) -> Any:
    backward = op.kind == "sdpa_backward"
    prefix = "OPERATION_SDPA_BWD_" if backward else "OPERATION_SDPA_FWD_"
    roles = (
        _SDPA_BWD_ROLES
        if backward
        else {**_SDPA_FWD_ROLES, **_SDPA_PAGED_ROLES, **_SDPA_FWD_ONLY_ROLES}
    )
    # a sink, the score max or sum-exp, or base-2 stats live on an OPERATION_SOFTMAX descriptor
    softmax = not backward and (
        "sink" in op.inputs
        or "max" in op.outputs
        or "sum_exp" in op.outputs
        or bool(op.attrs.get("stats_log2"))
    )
    if softmax:
        # the stats are the softmax descriptor's output, not the SDPA's (as the frontend sets)
        roles = {r: a for r, a in roles.items() if r != "stats"}
    d = new("OPERATION_SDPA_BWD_DESCRIPTOR" if backward else "OPERATION_SDPA_FWD_DESCRIPTOR")
    for role, t in (*op.inputs.items(), *op.outputs.items()):
        attr = roles.get(role)
        if attr is not None:
            d.set(prefix + attr, tensors[t.uid], attr_type=_DESC)
    if softmax:
        d.set(prefix + "SOFTMAX_DESC", _softmax(op, tensors, new, finalize), attr_type=_DESC)
    a = op.attrs
    if "bias" in op.inputs or a["right_bound"] is not None or a["left_bound"] is not None:
        graph, in_uid, out_uid = _score_subgraph(op, tensors, new, finalize)
        d.set(prefix + "SUBGRAPH", graph, attr_type=_DESC)
        d.set(prefix + "SUBGRAPH_INPUT_UID", in_uid, attr_type="INT64")
        d.set(prefix + "SUBGRAPH_OUTPUT_UID", out_uid, attr_type="INT64")
    if a["dropout"]:
        d.set(prefix + "DROPOUT_PROBABILITY", a["dropout"], attr_type="FLOAT")
    for side in (
        ("Q", "KV") if backward else ()
    ):  # ragged tensors' token bounds (the forward has none)
        if a.get("max_total_seq_len_" + side.lower()) is not None:
            total = a["max_total_seq_len_" + side.lower()]
            d.set(prefix + "MAX_TOTAL_SEQ_LEN_" + side, total, attr_type="INT64")
    return d


def _softmax(op: Operation, tensors: dict[int, Any], new: Any, finalize: Any) -> Any:
    """The ``OPERATION_SOFTMAX`` descriptor of a unified forward with a sink, the score max or
    sum-exp or base-2 stats: virtual score and probability tensors, the sink and the statistics
    (cuDNN 9.21's ``SDPA_FWD_SOFTMAX_DESC``; ``SOFTMAX_STATS_LOG2``, 9.27), as the frontend's
    ``UnifiedSoftmaxNode`` builds it."""
    dims = tuple(op.attrs["scores_dims"])
    first = min(t.uid for t in op.outputs.values())
    what = f"{op.label} (softmax tensor)"
    ends: list[Any] = []
    for i in range(2):  # P (the scores in) and S (the probabilities out), ids after the subgraph's
        t = new("TENSOR")
        uid = _SUBGRAPH_UID_BASE + first * 64 + 48 + i
        set_virtual(t, uid, "FLOAT", dims, c_strides(dims), finalize=finalize, what=what)
        ends.append(t)
    sm = new("OPERATION_SOFTMAX")
    sm.set("OPERATION_SOFTMAX_XDESC", ends[0], attr_type=_DESC)
    sm.set("OPERATION_SOFTMAX_YDESC", ends[1], attr_type=_DESC)
    ports = (("sink", "SINK_DESC"), ("stats", "STATS_DESC"), ("max", "MAX_DESC"))
    for role, attr in (*ports, ("sum_exp", "SUM_EXP_DESC")):
        t = op.inputs.get(role) or op.outputs.get(role)
        if t is not None:
            sm.set("OPERATION_SOFTMAX_" + attr, tensors[t.uid], attr_type=_DESC)
    if op.attrs.get("stats_log2"):
        sm.set("OPERATION_SOFTMAX_STATS_LOG2", True, attr_type="BOOLEAN")
    finalize(sm, f"{op.label} (softmax of the SDPA)")
    return sm


def _score_subgraph(
    op: Operation, tensors: dict[int, Any], new: Any, finalize: Any
) -> tuple[Any, int, int]:
    """The pre-softmax subgraph (bias, causal and sliding-window masks) of an SDPA operation."""
    a = op.attrs
    dims = tuple(a["scores_dims"])
    strides = c_strides(dims)
    what = f"{op.label} (score subgraph tensor)"
    first = min(t.uid for t in op.outputs.values())
    next_uid = [_SUBGRAPH_UID_BASE + first * 64]

    def virtual(dtype: str) -> tuple[Any, int]:
        uid = next_uid[0]
        next_uid[0] += 1
        t = new("TENSOR")
        set_virtual(t, uid, dtype, dims, strides, finalize=finalize, what=what)
        return t, uid

    ops: list[Any] = []

    def pointwise(mode: str, ins: list[Any], out: Any, math: str) -> None:
        pw = new("POINTWISE")
        pw.set("POINTWISE_MODE", mode, attr_type="POINTWISE_MODE")
        pw.set("POINTWISE_MATH_PREC", math, attr_type="DATA_TYPE")
        finalize(pw, f"{op.label} (score subgraph {mode.lower()} settings)")
        o = new("OPERATION_POINTWISE")
        o.set("OPERATION_POINTWISE_PW_DESCRIPTOR", pw, attr_type=_DESC)
        for slot, t in zip(("XDESC", "BDESC", "TDESC"), ins, strict=False):
            o.set("OPERATION_POINTWISE_" + slot, t, attr_type=_DESC)
        o.set("OPERATION_POINTWISE_YDESC", out, attr_type=_DESC)
        finalize(o, f"{op.label} (score subgraph {mode.lower()})")
        ops.append(o)

    scores, in_uid = virtual("FLOAT")
    cur, cur_uid = scores, in_uid
    if "bias" in op.inputs:
        nxt, nxt_uid = virtual("FLOAT")
        pointwise("ADD", [cur, tensors[op.inputs["bias"].uid]], nxt, "FLOAT")
        cur, cur_uid = nxt, nxt_uid
    # The masks as cuDNN's DIAGONAL_BAND_MASK operation, one per bound, as the frontend builds them
    # from 9.21 (see band_op in attention_common); the composite graph, which unified operations
    # never reach, has the pointwise form of its own (attention_composite).
    for bound, mode, slot in (
        ("right_bound", "CMP_GE", "SHIFT_RIGHT_BOUND_DESC"),
        ("left_bound", "CMP_GT", "LEFT_BOUND_DESC"),
    ):
        if a[bound] is None:
            continue
        nxt, nxt_uid = virtual("FLOAT")
        o = new("OPERATION_DIAGONAL_BAND_MASK")
        o.set("OPERATION_DIAGONAL_BAND_MASK_XDESC", cur, attr_type=_DESC)
        o.set(
            "OPERATION_DIAGONAL_BAND_MASK_BDESC",
            tensors[op.inputs["neg_inf"].uid],
            attr_type=_DESC,
        )
        if bound in op.inputs:
            o.set(
                "OPERATION_DIAGONAL_BAND_MASK_" + slot,
                tensors[op.inputs[bound].uid],
                attr_type=_DESC,
            )
        o.set("OPERATION_DIAGONAL_BAND_MASK_YDESC", nxt, attr_type=_DESC)
        o.set("OPERATION_DIAGONAL_BAND_MASK_COMPARISON_MODE", mode, attr_type="POINTWISE_MODE")
        finalize(o, f"{op.label} (score subgraph {bound.replace('_', ' ')} mask)")
        ops.append(o)
        cur, cur_uid = nxt, nxt_uid
    g = new("OPERATIONGRAPH")
    g.set("OPERATIONGRAPH_OPS", ops, attr_type=_DESC)
    finalize(g, f"{op.label} (score subgraph)")
    return g, in_uid, cur_uid


# -- normalisation ---------------------------------------------------------------------------------

_NORM_FWD = {
    "x": "OPERATION_NORM_FWD_XDESC",
    "scale": "OPERATION_NORM_FWD_SCALE_DESC",
    "bias": "OPERATION_NORM_FWD_BIAS_DESC",
    "epsilon": "OPERATION_NORM_FWD_EPSILON_DESC",
    "mean": "OPERATION_NORM_FWD_MEAN_DESC",
    "inv_variance": "OPERATION_NORM_FWD_INV_VARIANCE_DESC",
    "momentum": "OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC",
    "running_mean": "OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC",
    "running_var": "OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC",
    "next_running_mean": "OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC",
    "next_running_var": "OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC",
    "y": "OPERATION_NORM_FWD_YDESC",
}
_NORM_BWD = {
    "x": "OPERATION_NORM_BWD_XDESC",
    "dy": "OPERATION_NORM_BWD_DYDESC",
    "scale": "OPERATION_NORM_BWD_SCALE_DESC",
    "mean": "OPERATION_NORM_BWD_MEAN_DESC",
    "inv_variance": "OPERATION_NORM_BWD_INV_VARIANCE_DESC",
    "epsilon": "OPERATION_NORM_BWD_EPSILON_DESC",
    "dx": "OPERATION_NORM_BWD_DXDESC",
    "dscale": "OPERATION_NORM_BWD_DSCALE_DESC",
    "dbias": "OPERATION_NORM_BWD_DBIAS_DESC",
}
_NORM_MODES = {
    "layer": "LAYER_NORM",
    "rms": "RMS_NORM",
    "batch": "BATCH_NORM",
    "instance": "INSTANCE_NORM",
}


def _norm(
    op: Operation, tensors: dict[int, Any], new: Any, kind: str, roles: dict[str, str]
) -> Any:
    a = op.attrs
    d = new(kind)
    if op.kind == "norm_forward":
        d.set("OPERATION_NORM_FWD_MODE", _NORM_MODES[a["mode"]], attr_type="NORM_MODE")
        d.set(
            "OPERATION_NORM_FWD_PHASE",
            "TRAINING" if a["training"] else "INFERENCE",
            attr_type="NORM_FWD_PHASE",
        )
    else:
        d.set("OPERATION_NORM_BWD_MODE", _NORM_MODES[a["mode"]], attr_type="NORM_MODE")
    for role, t in (*op.inputs.items(), *op.outputs.items()):
        if not role.startswith(PEER_ROLE):
            d.set(roles[role], tensors[t.uid], attr_type=_DESC)
    peers = peer_descriptors(op.inputs, tensors)
    if peers:  # one attribute holding every buffer, in the caller's order (the frontend's)
        side = "FWD" if op.kind == "norm_forward" else "BWD"
        d.set(f"OPERATION_NORM_{side}_PEER_STAT_DESCS", peers, attr_type=_DESC)
    return d
