"""The composite lowering of SDPA: forward and backward as matmul, pointwise, reduction and RNG
operations that cuDNN's fused-attention engines recognise.

cuDNN's unified ``OPERATION_SDPA_FWD`` / ``_BWD`` descriptors are recent (9.13.1 / 9.17) and do
not cover every case: the unified backward plans only on Blackwell before 9.28, and the unified
forward has no dropout together with softmax statistics. NVIDIA's cudnn-frontend covers those with
its composite nodes (``CompositeSDPANode``, ``CompositeSDPABackwardNode``); this module builds the
same operation sequence, measured to plan deviceless for the H100 (forward: engine 2, backward:
engine 6):

forward
    ``S = Q @ K^T`` (K shown to cuDNN as ``[b, h, d, s]``), ``S *= scale``, ``S += bias``,
    padding and band masks as ``GEN_INDEX``/``CMP_*``/``BINARY_SELECT(S, -inf, keep)``, softmax as
    ``max`` reduction, ``SUB``, ``EXP``, ``add`` reduction, ``DIV`` (stats = ``max + log(sum)``;
    the reductions write ``score_max``/``score_sum_exp``; base-2 stats: one ``OPERATION_SOFTMAX``),
    dropout as ``RNG`` (Bernoulli ``1 - p``) ``* mask * 1/(1-p)``, then ``O = P @ V``.
backward
    ``softmax_sum = rowsum(dO * O) * (1-p)``; ``P`` recomputed from the stats
    (``exp(scale * Q @ K^T + bias - stats)``, masked); ``dV = P^T @ dO``; ``dP = dO @ V^T``;
    ``dS = P * (dP - softmax_sum)``; ``dK = dS^T @ Q * scale``; ``dQ = dS @ K * scale``. Grouped
    query heads are reduced from full-head ``dK``/``dV`` with an ``add`` reduction.

Every by-value scalar the sequence reads is a graph tensor created by :meth:`Graph.sdpa`, so that
the plan's variant pack holds it; every intermediate is a virtual tensor made here, with unique
ids above ``2**41``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from _nvbind.strides import c_strides

from .common import GraphError, _cudnn_dtype
from .tensor_lowering import set_virtual

if TYPE_CHECKING:  # pragma: no cover
    from .tensors import Operation

__all__ = ["INTERNAL_UID_BASE", "backward_shapes", "build_composite", "composite_views"]

_UID_BASE = 1 << 41  # above the score-subgraph ids of the unified lowering (2**40)
#: Unique ids from here up name tensors made by the attention lowerings, not graph tensors.
INTERNAL_UID_BASE = 1 << 40
_DESC = "BACKEND_DESCRIPTOR"


def _transposed(dims: tuple[int, ...], strides: tuple[int, ...]) -> tuple[Any, Any]:
    d, s = list(dims), list(strides)
    d[2], d[3] = d[3], d[2]
    s[2], s[3] = s[3], s[2]
    return tuple(d), tuple(s)


def composite_views(ops: list[Operation]) -> dict[int, tuple[Any, Any]]:
    """The tensors a composite SDPA shows cuDNN transposed: K as ``K^T`` (and, in the backward,
    V as ``V^T``), as the frontend does; same unique id and memory, so the arrays do not change."""
    views: dict[int, tuple[Any, Any]] = {}
    for op in ops:
        if op.kind not in ("sdpa", "sdpa_backward") or op.attrs.get("lowering") != "composite":
            continue
        roles = ("k", "v") if op.kind == "sdpa_backward" else ("k",)
        # a paged cache is read by OPERATION_PAGED_CACHE_LOAD as it is: nothing to transpose
        for role in (r for r in roles if r not in op.attrs.get("paged", ())):
            t = op.inputs[role]
            others = [o for o in t.consumers if o is not op]
            if t.producer is not None or others:
                # every operation would see the transposed description: refused, not computed
                # on the wrong axes
                user = t.producer or others[0]
                raise GraphError(
                    f"{op.label}: {role} ('{t.name}') is also used by {user.label}; the "
                    f"composite graph shows cuDNN {role.upper()} transposed, which that "
                    "operation cannot share: use implementation='unified', or split the graph"
                )
            views[t.uid] = _transposed(t.dims, t.strides)
    return views


class _Builder:
    """Creates the virtual tensors and operations of one composite SDPA."""

    def __init__(self, op: Operation, tensors: dict[int, Any], new: Any, finalize: Any) -> None:
        self.op = op
        self.tensors = tensors
        self.new = new
        self.finalize = finalize
        self.ops: list[Any] = []
        self.loaded: dict[str, Any] = {}
        first = min(t.uid for t in op.outputs.values())
        self.next_uid = _UID_BASE + first * 256

    def arg(self, role: str) -> Any:
        t = self.op.inputs.get(role) or self.op.outputs.get(role)
        return None if t is None else self.tensors[t.uid]

    def kv(self, side: str) -> Any:
        """K^T (``side="k"``) or V as the matmuls read them: the graph tensor, or for a paged
        cache the virtual ``[b, h, d, s_kv]`` K^T / ``[b, h, s_kv, d]`` V that
        ``OPERATION_PAGED_CACHE_LOAD`` gathers from its pages, as the frontend builds it."""
        if side not in self.op.attrs.get("paged", ()):
            return self.arg(side)
        if side in self.loaded:
            return self.loaded[side]
        b, _, _, s_kv = self.op.attrs["scores_dims"]
        c = self.op.inputs[side]
        h, d = c.dims[1], c.dims[3]
        if side == "k":
            y = self.virtual((b, h, d, s_kv), _dtype(c), (h * d * s_kv, d * s_kv, 1, d))
        else:
            y = self.virtual((b, h, s_kv, d), _dtype(c))
        slots = {"CONTAINER_DESC": self.arg(side), "YDESC": y}
        slots["SEQUENCE_DESC"] = self.arg("seq_len_kv")
        slots["PAGE_TABLE_DESC"] = self.arg("page_table_" + side)
        self.operation("PAGED_CACHE_LOAD", f"paged {side} cache load", slots)
        self.loaded[side] = y
        return y

    def virtual(
        self,
        dims: tuple[int, ...],
        dtype: str,
        strides: tuple[int, ...] | None = None,
        *,
        ragged_like: Any = None,
    ) -> Any:
        """A virtual tensor; ``ragged_like`` (a graph tensor) gives it that tensor's ragged
        offsets, for a view of a ragged tensor."""
        t = self.new("TENSOR")
        uid = self.next_uid
        self.next_uid += 1
        what = f"{self.op.label} (composite tensor {dims})"
        offsets = getattr(ragged_like, "ragged_offset", None)
        set_virtual(
            t,
            uid,
            dtype,
            dims,
            strides or c_strides(dims),
            finalize=self.finalize,
            what=what,
            ragged=None if offsets is None else self.tensors[offsets.uid],
        )
        return t

    def operation(self, kind: str, short: str, slots: dict[str, Any]) -> None:
        """Create, fill and record one ``OPERATION_<kind>`` descriptor: each slot that is not
        None is set as ``OPERATION_<kind>_<slot>`` (the backend's attribute name)."""
        o = self.new("OPERATION_" + kind)
        for slot, value in slots.items():
            if value is not None:
                o.set(f"OPERATION_{kind}_{slot}", value, attr_type=_DESC)
        self.add(o, short)

    def pw(
        self,
        mode: str,
        x: Any,
        b: Any = None,
        t: Any = None,
        *,
        dims: tuple[int, ...],
        dtype: str = "FLOAT",
        math: str = "FLOAT",
        axis: int | None = None,
        out: Any = None,
    ) -> Any:
        y = out if out is not None else self.virtual(dims, dtype)
        desc = self.new("POINTWISE")
        desc.set("POINTWISE_MODE", mode, attr_type="POINTWISE_MODE")
        desc.set("POINTWISE_MATH_PREC", math, attr_type="DATA_TYPE")
        if axis is not None:
            desc.set("POINTWISE_AXIS", axis, attr_type="INT64")
        self.finalize(desc, f"{self.op.label} (composite {mode.lower()} settings)")
        slots = {"PW_DESCRIPTOR": desc, "XDESC": x, "BDESC": b, "TDESC": t, "YDESC": y}
        self.operation("POINTWISE", mode.lower(), slots)
        return y

    def matmul(
        self,
        a: Any,
        b: Any,
        c: Any,
        *,
        m: Any = None,
        n: Any = None,
        k: Any = None,
        padding: bool = False,
    ) -> Any:
        desc = self.new("MATMUL")
        desc.set("MATMUL_COMP_TYPE", "FLOAT", attr_type="DATA_TYPE")
        if padding:
            desc.set("MATMUL_PADDING_VALUE", 0.0, attr_type="DOUBLE")
        self.finalize(desc, f"{self.op.label} (composite matmul settings)")
        slots = {"ADESC": a, "BDESC": b, "CDESC": c, "DESC": desc}
        slots.update({f"GEMM_{key}_OVERRIDE_DESC": t for key, t in (("M", m), ("N", n), ("K", k))})
        self.operation("MATMUL", "matmul", slots)
        return c

    def reduce(self, operator: str, x: Any, y: Any) -> Any:
        desc = self.new("REDUCTION")
        desc.set("REDUCTION_OPERATOR", operator, attr_type="REDUCTION_OPERATOR_TYPE")
        desc.set("REDUCTION_COMP_TYPE", "FLOAT", attr_type="DATA_TYPE")
        self.finalize(desc, f"{self.op.label} (composite reduction settings)")
        self.operation("REDUCTION", "reduction", {"XDESC": x, "YDESC": y, "DESC": desc})
        return y

    def reshape(self, x: Any, y: Any) -> Any:
        self.operation("RESHAPE", "reshape", {"XDESC": x, "YDESC": y})
        return y

    def rng(self, probability: float, y: Any) -> Any:
        desc = self.new("RNG")
        desc.set("RNG_DISTRIBUTION", "BERNOULLI", attr_type="RNG_DISTRIBUTION")
        desc.set("RNG_BERNOULLI_DIST_PROBABILITY", probability, attr_type="DOUBLE")
        self.finalize(desc, f"{self.op.label} (composite rng settings)")
        slots = {"YDESC": y, "SEED": self.arg("seed"), "OFFSET_DESC": self.arg("offset")}
        self.operation("RNG", "rng", {**slots, "DESC": desc})
        return y

    def add(self, o: Any, what: str) -> None:
        self.finalize(o, f"{self.op.label} (composite {what})")
        self.ops.append(o)

    # -- score modifiers ---------------------------------------------------------------------------
    def indices(self, s: Any, scores: tuple[int, ...]) -> tuple[Any, Any]:
        """Row (query) and column (key) index of each score, int32."""
        row = self.pw("GEN_INDEX", s, dims=scores, dtype="INT32", math="INT32", axis=2)
        col = self.pw("GEN_INDEX", s, dims=scores, dtype="INT32", math="INT32", axis=3)
        return row, col

    def bool_op(self, mode: str, x: Any, b: Any, scores: tuple[int, ...]) -> Any:
        return self.pw(mode, x, b, dims=scores, dtype="BOOLEAN", math="BOOLEAN")

    def alibi(self, s: Any, scores: tuple[int, ...]) -> Any:
        """``S + slope[h] * (col - row)``: the slopes computed from the head index, as the
        frontend's ``get_alibi_slope`` (which writes them to its workspace instead)."""
        head = self.pw("GEN_INDEX", s, dims=scores, dtype="INT32", math="INT32", axis=1)
        a = self.pw("ADD", head, self.arg("alibi_one"), dims=scores)
        if "alibi_heads" in self.op.inputs:
            first = self.bool_op("CMP_LT", head, self.arg("alibi_heads"), scores)
            later = self.pw("ADD", head, self.arg("alibi_shift"), dims=scores)
            a = self.pw("BINARY_SELECT", a, later, first, dims=scores)
        slope = self.pw("EXP", self.pw("MUL", a, self.arg("alibi_rate"), dims=scores), dims=scores)
        row, col = self.indices(s, scores)
        dist = self.pw("SUB", col, row, dims=scores, dtype="INT32", math="INT32")
        return self.pw("ADD", s, self.pw("MUL", dist, slope, dims=scores), dims=scores)

    def padding_mask(self, s: Any, scores: tuple[int, ...]) -> Any:
        """Scores outside each batch entry's real lengths become ``-inf``."""
        row, col = self.indices(s, scores)
        in_q = self.bool_op("CMP_LT", row, self.arg("seq_len_q"), scores)
        in_kv = self.bool_op("CMP_LT", col, self.arg("seq_len_kv"), scores)
        keep = self.bool_op("LOGICAL_AND", in_q, in_kv, scores)
        return self.pw("BINARY_SELECT", s, self.arg("neg_inf"), keep, dims=scores)

    def band_mask(self, s: Any, scores: tuple[int, ...]) -> Any:
        """Scores outside the diagonal band become ``-inf``: ``row + right >= col`` (the right
        bound; causal is 0) and ``col + left > row`` (the left bound). A bottom-right alignment
        is folded into the bounds for fixed lengths, or shifts the row index by
        ``seq_len_kv - seq_len_q`` of each batch entry with padding."""
        a = self.op.attrs
        row, col = self.indices(s, scores)
        if a["shift_from_lengths"]:
            # row + (seq_len_kv - seq_len_q) compared with col is row + seq_len_kv compared with
            # col + seq_len_q: score-shaped operations only (a pointwise operation on the
            # [b, 1, 1, 1] lengths alone leaves the graph without an engine)
            row = self.pw(
                "ADD", row, self.arg("seq_len_kv"), dims=scores, dtype="INT32", math="INT32"
            )
            col = self.pw(
                "ADD", col, self.arg("seq_len_q"), dims=scores, dtype="INT32", math="INT32"
            )
        neg_inf = self.arg("neg_inf")
        if a["right_bound"] is not None:
            r = row
            if a["right_bound"]:
                r = self.pw(
                    "ADD", row, self.arg("right_bound"), dims=scores, dtype="INT32", math="INT32"
                )
            s = self.pw(
                "BINARY_SELECT", s, neg_inf, self.bool_op("CMP_GE", r, col, scores), dims=scores
            )
        if a["left_bound"] is not None:
            c = self.pw(
                "ADD", col, self.arg("left_bound"), dims=scores, dtype="INT32", math="INT32"
            )
            s = self.pw(
                "BINARY_SELECT", s, neg_inf, self.bool_op("CMP_GT", c, row, scores), dims=scores
            )
        return s

    def has_band(self) -> bool:
        a = self.op.attrs
        return a["right_bound"] is not None or a["left_bound"] is not None


def _dtype(t: Any) -> str:

    return str(_cudnn_dtype(t.dtype, t.name).name).removeprefix("CUDNN_DATA_")


def build_composite(op: Operation, tensors: dict[int, Any], new: Any, finalize: Any) -> list[Any]:
    """The operations of a composite SDPA forward or backward, finalized, in graph order."""
    bld = _Builder(op, tensors, new, finalize)
    if op.kind == "sdpa":
        _forward(bld)
    else:
        _backward(bld)
    return bld.ops


def _scores(bld: _Builder, scores: tuple[int, ...], after_scale: tuple[str, ...] = ()) -> Any:
    """``scale * Q @ K^T + bias`` with the padding mask (the forward and backward share it);
    ``after_scale`` names factors multiplied in after the scale (the FP8 descales)."""
    op = bld.op
    padded = "seq_len_q" in op.inputs
    s = bld.virtual(scores, "FLOAT")
    bld.matmul(
        bld.arg("q"),
        bld.kv("k"),
        s,
        m=bld.arg("seq_len_q"),
        n=bld.arg("seq_len_kv"),
        padding=padded and op.kind == "sdpa",
    )
    s = bld.pw("MUL", s, bld.arg("scale"), dims=scores)
    for factor in after_scale:
        s = bld.pw("MUL", s, bld.arg(factor), dims=scores)
    if "bias" in op.inputs:
        s = bld.pw("ADD", s, bld.arg("bias"), dims=scores)
    if op.attrs.get("alibi"):
        s = bld.alibi(s, scores)
    if padded:
        s = bld.padding_mask(s, scores)
    return s


def _forward(bld: _Builder) -> None:
    op, a = bld.op, bld.op.attrs
    scores = tuple(a["scores_dims"])
    io = _dtype(op.inputs["q"])
    s = _scores(bld, scores)
    if bld.has_band():
        s = bld.band_mask(s, scores)
    dropout = bool(a["dropout"]) or a.get("dropout_mask", False)
    if a.get("stats_log2"):
        p = _softmax_op(bld, s, scores, "FLOAT" if dropout else io)
    else:
        p = _softmax_steps(bld, s, scores, "FLOAT" if dropout else io)
    if a.get("dropout_mask"):
        # the frontend's dropout=(mask, scale): the mask and its scale given at execute
        p = bld.pw("MUL", p, bld.arg("dropout_mask"), dims=scores)
        p = bld.pw("MUL", p, bld.arg("dropout_scale"), dims=scores, dtype=io)
    elif dropout:
        mask = bld.rng(1.0 - a["dropout"], bld.virtual(scores, "FLOAT"))
        if "rng_dump" in op.outputs:
            mask = bld.pw("IDENTITY", mask, dims=scores, out=bld.arg("rng_dump"))
        p = bld.pw("MUL", p, mask, dims=scores)
        p = bld.pw("MUL", p, bld.arg("dropout_scale"), dims=scores, dtype=io)
    bld.matmul(p, bld.kv("v"), bld.arg("o"), m=bld.arg("seq_len_q"), k=bld.arg("seq_len_kv"))


def _softmax_steps(bld: _Builder, s: Any, scores: tuple[int, ...], p_dtype: str) -> Any:
    """Softmax as the frontend's ``CompositeSoftmaxNode``: max and add reductions, ``SUB``,
    ``EXP``, ``DIV``, stats ``max + log(sum)``; a sink joins the row max and the denominator,
    ``exp(sink - max)``, without a value row. The ``score_max``/``score_sum_exp`` outputs, when
    asked, are the final max and sum themselves."""
    row = (*scores[:3], 1)
    sink, m_out, sum_out = bld.arg("sink"), bld.arg("max"), bld.arg("sum_exp")
    direct = sink is None  # without a sink the reductions write the outputs
    m = bld.reduce("MAX", s, m_out if direct and m_out is not None else bld.virtual(row, "FLOAT"))
    if sink is not None:
        m = bld.pw("MAX", m, sink, dims=row, out=m_out)
    e = bld.pw("EXP", bld.pw("SUB", s, m, dims=scores), dims=scores)
    total = bld.reduce(
        "ADD", e, sum_out if direct and sum_out is not None else bld.virtual(row, "FLOAT")
    )
    if sink is not None:
        exp_sink = bld.pw("EXP", bld.pw("SUB", sink, m, dims=row), dims=row)
        total = bld.pw("ADD", total, exp_sink, dims=row, out=sum_out)
    # cuDNN's fused engines take a composite forward with its stats only ("non-flash composite
    # MHA fprop is no longer supported" without, 9.28): a virtual stats tensor when none is asked
    log = bld.pw("LOG", total, dims=row)
    bld.pw("ADD", m, log, dims=row, out=bld.arg("stats"))
    return bld.pw("DIV", e, total, dims=scores, dtype=p_dtype)


def _softmax_op(bld: _Builder, s: Any, scores: tuple[int, ...], p_dtype: str) -> Any:
    """Softmax as one ``OPERATION_SOFTMAX`` (cuDNN 9.20; ``STATS_LOG2`` 9.27), the form the
    frontend's composite graph takes on cuDNN 9.21+: base-2 stats exist only there (a ``MUL`` by
    ``log2(e)`` after the stats has no engine on the H100, cuDNN 9.28, measured)."""
    p = bld.virtual(scores, p_dtype)
    o = bld.new("OPERATION_SOFTMAX")
    o.set("OPERATION_SOFTMAX_XDESC", s, attr_type=_DESC)
    o.set("OPERATION_SOFTMAX_YDESC", p, attr_type=_DESC)
    for role, attr in (
        ("sink", "SINK"),
        ("stats", "STATS"),
        ("max", "MAX"),
        ("sum_exp", "SUM_EXP"),
    ):
        t = bld.arg(role)
        if t is not None:
            o.set(f"OPERATION_SOFTMAX_{attr}_DESC", t, attr_type=_DESC)
    o.set("OPERATION_SOFTMAX_STATS_LOG2", True, attr_type="BOOLEAN")
    bld.add(o, "softmax")
    return p


def backward_shapes(op: Operation) -> tuple[tuple[int, ...], tuple[int, ...], str, int, int]:
    """The score dims ``[b, h_q, s_q, s_kv]``, the row dims ``[b, h_q, s_q, 1]``, the I/O type
    and ``d_qk``, ``d_v`` of a backward (the bf16/fp16 and the FP8 composite graphs)."""
    scores = tuple(op.attrs["scores_dims"])
    q_t, v_t = op.inputs["q"], op.inputs["v"]
    return scores, (*scores[:3], 1), _dtype(q_t), q_t.dims[3], v_t.dims[3]


def _backward(bld: _Builder) -> None:
    op, a = bld.op, bld.op.attrs
    scores, row, io, d_qk, d_v = backward_shapes(op)
    b, hq, sq, skv = scores
    k_t = op.inputs["k"]
    mask = None
    if a.get("dropout_mask"):  # the frontend's (mask, scale, scale_inv), given at execute
        mask = bld.arg("dropout_mask")
    elif a["dropout"]:
        mask = bld.rng(1.0 - a["dropout"], bld.virtual(scores, "FLOAT"))
    # softmax_sum = rowsum(dO * O) * (1 - p)
    prod = bld.pw("MUL", bld.arg("do"), bld.arg("o"), dims=(b, hq, sq, d_v))
    rowsum = bld.reduce("ADD", prod, bld.virtual(row, "FLOAT"))
    if "dsink" in op.outputs:
        # dSink from P_sink = exp(sink - stats) and rowsum(dO * O), summed over b and s_q, in
        # the frontend's sequence (SUB, EXP, MUL, add reduction), which cuDNN's fused backward
        # recognises as the sink gradient and negates itself (the exact gradient is
        # -sum(P_sink * rowsum), the verification reference's; NVIDIA's frontend notes the
        # backend applies the sign). A NEG here leaves the graph without an engine (cuDNN 9.28,
        # H100, measured). The softmax_sum MUL below stays even without dropout: it tells the
        # engine's pattern matcher the softmax path (MUL, SUB) from this chain (MUL, reduction).
        p_sink = bld.pw("EXP", bld.pw("SUB", bld.arg("sink"), bld.arg("stats"), dims=row), dims=row)
        bld.reduce("ADD", bld.pw("MUL", p_sink, rowsum, dims=row), bld.arg("dsink"))
    softmax_sum = bld.pw("MUL", rowsum, bld.arg("dropout_scale_inv"), dims=row)
    # P, recomputed from the saved stats
    s = _scores(bld, scores)
    s = bld.pw("SUB", s, bld.arg("stats"), dims=scores)
    if bld.has_band():
        s = bld.band_mask(s, scores)
    exp_s = bld.pw("EXP", s, dims=scores)
    p = exp_s
    if mask is not None:
        p = bld.pw("MUL", p, mask, dims=scores)
        p = bld.pw("MUL", p, bld.arg("dropout_scale"), dims=scores)
    transposed = (b, hq, skv, sq)
    t_strides = (hq * sq * skv, sq * skv, 1, skv)
    p_t = bld.reshape(p, bld.virtual(transposed, io, t_strides))
    m_kv, k_q = bld.arg("seq_len_kv"), bld.arg("seq_len_q")
    _grad(bld, p_t, bld.arg("do"), role="dv", full=(b, hq, skv, d_v), io=io, m=m_kv, k=k_q)
    # dS = P * (dO @ V^T - softmax_sum) [* 1/(1-p)] * scale
    dp = bld.virtual(scores, "FLOAT")
    bld.matmul(bld.arg("do"), bld.arg("v"), dp, m=bld.arg("seq_len_q"), n=bld.arg("seq_len_kv"))
    if mask is not None:
        dp = bld.pw("MUL", dp, mask, dims=scores)
    ds = bld.pw("SUB", dp, softmax_sum, dims=scores)
    ds = bld.pw("MUL", ds, exp_s, dims=scores)
    if mask is not None:
        ds = bld.pw("MUL", ds, bld.arg("dropout_scale"), dims=scores)
    if "dbias" in op.outputs:
        bld.reduce("ADD", ds, bld.arg("dbias"))
    ds = bld.pw("MUL", ds, bld.arg("scale"), dims=scores)
    ds_t = bld.reshape(ds, bld.virtual(transposed, io, t_strides))
    _grad(bld, ds_t, bld.arg("q"), role="dk", full=(b, hq, skv, d_qk), io=io, m=m_kv, k=k_q)
    # dQ = dS @ K: K back from the K^T cuDNN is shown, with K's ragged offsets (THD), as the
    # frontend's reshape_k has them: the product reads each sequence's keys where they lie
    k_back = bld.reshape(bld.arg("k"), bld.virtual(k_t.dims, io, k_t.strides, ragged_like=k_t))
    bld.matmul(ds, k_back, bld.arg("dq"), m=bld.arg("seq_len_q"), k=bld.arg("seq_len_kv"))


def _grad(
    bld: _Builder,
    a_t: Any,
    b_t: Any,
    *,
    role: str,
    full: tuple[int, ...],
    io: str,
    m: Any,
    k: Any,
) -> None:
    """``dK``/``dV`` = ``A^T @ B``; for grouped-query heads a full-head product, then the heads of
    each group summed (an ``add`` reduction), as the frontend does."""
    out = bld.op.outputs[role]
    if out.dims[1] == full[1]:
        bld.matmul(a_t, b_t, bld.arg(role), m=m, k=k)
        return
    whole = bld.virtual(full, io)
    bld.matmul(a_t, b_t, whole, m=m, k=k)
    bld.reduce("ADD", whole, bld.arg(role))
