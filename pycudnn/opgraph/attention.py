"""Scaled dot-product attention (``OPERATION_SDPA_FWD`` / ``OPERATION_SDPA_BWD``).

>>> g = pycudnn.Graph("attention")
>>> q = g.tensor([b, h, s, d], [s * h * d, d, h * d, 1], dtype="bfloat16", name="q")  # bshd
>>> ...
>>> o, stats = g.sdpa(q, k, v, causal=True, return_stats=True)

Q, K, V are ``[batch, heads, sequence, head_dim]`` in logical order, laid out ``bshd`` or
``bhsd`` by their strides; K and V may have fewer heads than Q (grouped-query and multi-query
attention). The rules are checked in Python first (:mod:`pycudnn._attention_rules`); the masks
(causal, sliding window) and an additive bias are lowered the way NVIDIA's cudnn-frontend lowers
them for the unified SDPA operation: a pointwise subgraph on the score matrix
(``SDPA_FWD_SUBGRAPH``), with ``-inf`` as a by-value scalar of the graph.

The SDPA engines of cuDNN 9.28 take no fused pointwise neighbour on the H100 (a graph with one has
no engine: :class:`~pycudnn.plan.GraphNotSupportedError`). For a cuDNN older than an SDPA
feature, NVIDIA's frontend falls back to a composite graph of matmul, softmax and mask operations;
so does ``implementation="auto"`` here (:mod:`.attention_composite`), while ``"unified"`` is
refused with the version the feature needs. Paged K/V caches: :mod:`.attention_paged`; ragged
(THD) tensors: :mod:`.attention_ragged`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from _nvbind.keywords import place_keywords, show_keywords, take_keywords

from .. import _attention_rules as rules
from . import attention_args as args
from . import attention_common as common
from . import attention_extras as ext
from .attention_args import MaskKeywords, RaggedKeywords, ScoreKeywords, SdpaKeywords
from .attention_common import AttentionCommon, Lowering, Scores, attach_offsets, spec
from .attention_paged import TABLE_ROLES, paged_kv
from .attention_ragged import ragged_args
from .common import GraphError
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["SDPA_DEFAULTS", "AttentionOps", "spec"]


# Every SdpaKeywords key with its default, None unless given here: the TypedDicts declare the
# types, this the defaults; take_keywords completes a call with them, the signatures show them.
SDPA_DEFAULTS: dict[str, Any] = {
    **dict.fromkeys(SdpaKeywords.__annotations__),
    "causal": False,
    "dropout": 0.0,
    "use_causal_mask": False,
    "use_causal_mask_bottom_right": False,
    "diagonal_alignment": "top_left",
    "use_alibi_mask": False,
}


class AttentionOps(AttentionCommon):
    """``sdpa`` and ``sdpa_backward``."""

    def sdpa(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        return_stats: bool | None = None,
        implementation: Any = "auto",
        attn_scale: Any = None,
        generate_stats: bool | None = None,
        is_inference: bool | None = None,
        rng_dump: Tensor | None = None,
        paged_attention_k_table: Tensor | None = None,
        paged_attention_v_table: Tensor | None = None,
        paged_attention_max_seq_len_kv: int | None = None,
        sink_token: Tensor | None = None,
        block_mask: Tensor | None = None,
        score_max: Tensor | None = None,
        score_sum_exp: Tensor | None = None,
        stats_use_log2: bool | None = None,
        name: str | None = None,
        **kw: Unpack[SdpaKeywords],
    ) -> tuple[Tensor, Tensor | None]:
        """``softmax(scale * Q @ K^T + bias, masked) @ V`` (``OPERATION_SDPA_FWD_DESCRIPTOR``, or
        the composite graph of ``OPERATION_MATMUL``, pointwise, reduction and RNG operations).

        Returns ``(O, stats)`` always, as NVIDIA's frontend does (``o, stats = g.sdpa(...)``):
        O is ``[b, h_q, s_q, d_v]`` in Q's layout and dtype; ``stats`` (``return_stats=True`` or
        ``generate_stats=True``, for training) is the float32 log-sum-exp of each score row,
        ``[b, h_q, s_q, 1]``, that :meth:`sdpa_backward` needs, else None.

        ``scale`` (or ``attn_scale``: a float, or a float32 ``[1, 1, 1, 1]`` tensor given at
        execute) defaults to ``1/sqrt(head_dim)``. Masks, in the frontend's terms: a diagonal
        band of the score matrix, with ``diagonal_band_right_bound`` (keys up to ``right`` after
        the query's diagonal; ``causal``/``use_causal_mask`` is right bound 0) and
        ``diagonal_band_left_bound`` (fewer than ``left`` keys before it; ``sliding_window`` is
        causal with that left bound, ``sliding_window_length`` the left bound alone), aligned
        to the ``top_left`` or ``bottom_right`` corner (``diagonal_alignment``;
        ``use_causal_mask_bottom_right``). ``bias`` is added to the scores (dims broadcast to
        ``[b, h_q, s_q, s_kv]``). ``seq_len_q``/``seq_len_kv`` (int32 ``[b, 1, 1, 1]``) give each
        batch entry's real lengths (padding mask; ``use_padding_mask`` may say so too).
        ``dropout`` (a probability with int64 ``seed`` and ``offset`` tensors, or the frontend's
        ``(p, seed, offset)`` tuple) drops attention weights; ``rng_dump`` (a float32
        ``[b, h_q, s_q, s_kv]`` tensor) receives the dropout mask (composite only).

        ``implementation``: ``"unified"`` (cuDNN's SDPA operation: 9.13.1, 9.15 for sequence
        lengths, 9.21 for masks and bias, 9.22 for dropout; no dropout with stats), ``"composite"``
        (the graph NVIDIA's frontend builds for older cuDNN and for what the unified operation
        lacks; see :mod:`pycudnn.opgraph.attention_composite`) or ``"auto"`` (unified where the
        loaded cuDNN has every feature asked, else composite; the operation's ``lowering`` and
        ``lowering_note`` settings, ``describe()`` and the plan's ``rewrite`` say which).
        ``use_alibi_mask`` is composite-only. Paged K/V caches (serving, decode with ``s_q = 1``
        included): K and V given as ``[num_blocks, h_k, block_size, d]`` containers with
        ``paged_attention_k_table``/``_v_table`` (int32 ``[b, 1, ceil(s_kv / block_size), 1]``,
        each side on its own), ``paged_attention_max_seq_len_kv`` the logical ``s_kv`` (inferred
        as the frontend does when left out) and the padding mask required; unified from cuDNN
        9.15 (``SDPA_FWD_PAGE_TABLE_K/VDESC``), composite from 9.5 (``OPERATION_PAGED_CACHE_LOAD``;
        :mod:`pycudnn.opgraph.attention_paged`). Ragged (THD) tensors: give Q, K, V (and O, the
        stats) ragged offsets with :meth:`Tensor.set_ragged_offset` (int32 or int64
        ``[b + 1, 1, 1, 1]``, one type for the operation) and the sequence lengths;
        ``max_total_seq_len_q/kv`` bound the tokens (:mod:`pycudnn.opgraph.attention_ragged`).
        ``sink_token`` (float32 ``[1, h_q, 1, 1]``: a learned logit per head in each softmax
        denominator; unified from cuDNN 9.21), ``block_mask`` (int8, one element per 128 x 128
        tile; unified only, cuDNN 9.14) and ``dropout=(mask, scale)`` (composite only): see
        :mod:`pycudnn.opgraph.attention_extras`. ``score_max`` and ``score_sum_exp`` (float32
        ``[b, h_q, s_q, 1]`` tensors the graph writes: each score row's maximum and sum of
        ``exp(score - max)``) and ``stats_use_log2`` (the stats in base 2): unified from cuDNN
        9.21 (9.27 for base 2), composite (9.27 for base 2).
        """
        # an unknown keyword: TypeError, before anything else
        shared = take_keywords("sdpa", kw, SDPA_DEFAULTS)
        op_name, label = self._begin_op("sdpa", name)
        stats_flag = args.stats_flag(label, return_stats, generate_stats, is_inference)
        rows, log2, row_features = ext.score_outputs(
            label,
            score_max=score_max,
            score_sum_exp=score_sum_exp,
            stats_use_log2=stats_use_log2,
            stats=bool(stats_flag),
        )
        opts, masks, mask_form = args.sdpa_keywords(label, shared, attn_scale, ext.dropout_mask_arg)
        dropout, bias, use_alibi_mask = opts["dropout"], opts["bias"], opts["use_alibi_mask"]
        padded = opts["seq_len_q"] is not None and opts["seq_len_kv"] is not None
        tables = {
            side: None if t is None else self._own(t, label, f"paged_attention_{side}_table")
            for side, t in (("k", paged_attention_k_table), ("v", paged_attention_v_table))
        }
        paged = paged_kv(
            label,
            self._own(k, label, "k"),
            self._own(v, label, "v"),
            batch=self._own(q, label, "q").dims[0],
            tables=tables,
            max_seq_len_kv=paged_attention_max_seq_len_kv,
            padded=padded,
            score_tensors=(bias, rng_dump),
        )
        ragged = ragged_args(label, {"q": q, "k": k, "v": v}, opts)
        needs_composite = ""
        if use_alibi_mask:
            needs_composite = "use_alibi_mask is lowered by the composite graph only"
        elif dropout and stats_flag:
            needs_composite = (
                "dropout with stats (a training forward) has no unified SDPA operation"
            )
        elif rng_dump is not None:
            needs_composite = "rng_dump (the dropout mask) is written by the composite graph only"
        elif mask_form is not None:
            needs_composite = "dropout=(mask, scale) is applied by the composite graph only"
        tensors = {
            "q": q,
            "k": k,
            "v": v,
            **{r: opts[r] for r in ("bias", "seq_len_q", "seq_len_kv", "seed", "offset")},
            "sink": sink_token,
            "block_mask": block_mask,
            **dict(zip(("dropout_mask", "dropout_scale"), mask_form or (), strict=False)),
            **{TABLE_ROLES[side]: t for side, t in tables.items()},
        }

        def check(s: dict[str, rules.TensorSpec]) -> rules.SdpaShapes:
            if paged is not None:
                # the rules check the attention the caches hold: K, V as [b, h, s_kv, d]
                s = paged.logical(s)
            return rules.check_sdpa(s, dropout=dropout, return_stats=stats_flag)

        unified_only = ""
        if block_mask is not None:
            unified_only = (
                "block_mask is an input of cuDNN's unified SDPA operation only (the composite "
                "graph has none, in cuDNN as in NVIDIA's frontend)"
            )
        paged_sides = () if paged is None else paged.sides
        lowering = Lowering(
            implementation, needs_composite, unified_only, tuple(row_features), paged_sides
        )
        scores = Scores(opts["scale"], masks, dropout, alibi=use_alibi_mask)
        inputs, attrs, shapes = self._attention_common(
            label, op_name, tensors, scores, lowering, backward=False, check=check
        )
        attrs.update(ragged._asdict())
        attrs["stats_log2"] = log2
        q_t = inputs["q"]
        outputs = self._forward_outputs(label, op_name, shapes, q_t, bool(stats_flag))
        o, stats = outputs["o"], outputs.get("stats")
        for role, given in rows.items():
            what = "score_" + role
            t = self._own(given, label, what)
            ext.check_row_output(label, what, t, shapes.stats_dims)
            outputs[role] = self._output(
                label, op_name, role, t.dims, q_t, out=t, out_dtype="float32"
            )
        if rng_dump is not None:
            if not dropout or mask_form:
                raise GraphError(
                    f"{label}: rng_dump receives the Philox dropout mask: give dropout > 0 with "
                    "seed and offset"
                )
            outputs["rng_dump"] = self._output(
                label,
                op_name,
                "rng_dump",
                shapes.scores_dims,
                q_t,
                out=self._own(rng_dump, label, "rng_dump"),
                out_dtype="float32",
            )
        attach_offsets(self._add_op("sdpa", op_name, inputs, outputs, attrs))
        return o, stats

    def sdpa_backward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        o: Tensor,
        do: Tensor | None = None,
        *,
        stats: Tensor,
        implementation: Any = "auto",
        attn_scale: Any = None,
        dBias: Tensor | None = None,
        dO: Tensor | None = None,
        use_deterministic_algorithm: bool = False,
        sink_token: Tensor | None = None,
        dSink_token: Tensor | None = None,
        name: str | None = None,
        **kw: Unpack[SdpaKeywords],
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Gradients ``(dQ, dK, dV)`` of :meth:`sdpa` (``OPERATION_SDPA_BWD_DESCRIPTOR``, or the
        frontend's composite backward graph).

        Takes the forward's Q, K, V, its output O and saved ``stats``, the incoming gradient dO,
        and the same scale, masks, bias, sequence lengths and dropout (the same seed and offset)
        as the forward, under the same keyword names. dQ, dK, dV have the dims, layout and dtype
        of Q, K, V. ``dBias`` (a tensor of the bias's dims) receives the bias gradient
        (composite only). ``dO=`` is the frontend's name of ``do``.
        ``use_deterministic_algorithm=True`` lowers to the composite graph, whose dQ is one
        product (no accumulation across key blocks: the frontend's deterministic form). Ragged
        (THD) tensors as for :meth:`sdpa` (``max_total_seq_len_q/kv`` become the unified
        operation's ``SDPA_BWD_MAX_TOTAL_SEQ_LEN_Q/KV``); the unified backward plans them only
        with ragged ``stats`` too (cuDNN 9.28, H100), so ``"auto"`` lowers to the composite graph
        otherwise.

        ``implementation`` as for :meth:`sdpa`: the unified backward needs cuDNN 9.28 (9.19
        cannot finalize one, and before 9.28 cuDNN plans it for Blackwell only), so ``"auto"``
        lowers to the composite graph on older cuDNN, which plans on Hopper from cuDNN 9.10, and
        with dropout: the training forward with dropout is the composite graph, and the
        composite backward redraws its mask the same way (as cudnn-frontend's backward, always
        composite, does); whether the unified backward's draw matches is not verified on a GPU.
        ``sink_token`` is the forward's sink; ``dSink_token`` (float32 ``[1, h_q, 1, 1]``)
        receives its gradient (:mod:`pycudnn.opgraph.attention_extras`).
        """
        # an unknown keyword: TypeError, before anything else
        shared = take_keywords("sdpa_backward", kw, SDPA_DEFAULTS)
        op_name, label = self._begin_op("sdpa_backward", name)
        if (do is None) == (dO is None):
            raise GraphError(f"{label}: give the output gradient once, as do or dO")
        do = do if do is not None else dO
        if not isinstance(use_deterministic_algorithm, bool):
            raise TypeError(
                f"{label}: use_deterministic_algorithm must be a bool, not "
                f"{use_deterministic_algorithm!r}"
            )
        opts, masks, mask_form = args.sdpa_keywords(
            label, shared, attn_scale, ext.dropout_mask_backward_arg
        )
        dropout, bias, use_alibi_mask = opts["dropout"], opts["bias"], opts["use_alibi_mask"]
        needs_composite = ""
        if mask_form:
            needs_composite = (
                "dropout=(mask, scale, scale_inv) is applied by the composite graph only"
            )
        if use_alibi_mask:
            needs_composite = "use_alibi_mask is lowered by the composite graph only"
        if use_deterministic_algorithm:
            needs_composite = "use_deterministic_algorithm is the composite graph's"
        if dBias is not None:
            if bias is None:
                raise GraphError(f"{label}: dBias is the gradient of a bias: give bias= too")
            needs_composite = "dBias is computed by the composite graph only"
        if dSink_token is not None and sink_token is None:
            raise GraphError(f"{label}: dSink_token is the gradient of a sink: give sink_token too")
        given = {"q": q, "k": k, "v": v, "o": o, "do": do, "stats": stats}
        given = {r: t for r, t in given.items() if t is not None}
        ragged = ragged_args(label, {r: self._own(t, label, r) for r, t in given.items()}, opts)
        if ragged.roles and "stats" not in ragged.roles:
            needs_composite = (
                "ragged (THD) tensors with stats that are not ragged have no unified backward "
                "engine for the H100 (cuDNN 9.28, measured; ragged stats plan)"
            )
        tensors = {
            "q": q,
            "k": k,
            "v": v,
            "o": o,
            "do": do,
            "stats": stats,
            **{r: opts[r] for r in ("bias", "seq_len_q", "seq_len_kv", "seed", "offset")},
            "sink": sink_token,
            **dict(
                zip(
                    ("dropout_mask", "dropout_scale", "dropout_scale_inv"),
                    mask_form or (),
                    strict=False,
                )
            ),
        }

        def check(s: dict[str, rules.TensorSpec]) -> rules.SdpaShapes:
            shapes = rules.check_sdpa_backward(s, dropout=dropout)
            if "stats" not in ragged.roles:
                rules.check_stats_strides(s["stats"], common._loaded_version())
            return shapes

        scores = Scores(opts["scale"], masks, dropout, alibi=use_alibi_mask)
        inputs, attrs, _ = self._attention_common(
            label,
            op_name,
            tensors,
            scores,
            Lowering(implementation, needs_composite),
            backward=True,
            check=check,
        )
        attrs.update(ragged._asdict())
        outputs = self._gradient_outputs(label, op_name, inputs, dSink_token)
        if dBias is not None:
            bias_t = inputs["bias"]
            outputs["dbias"] = self._output(
                label,
                op_name,
                "dbias",
                bias_t.dims,
                bias_t,
                out=self._own(dBias, label, "dBias"),
                out_dtype=bias_t.dtype,
            )
        attach_offsets(self._add_op("sdpa_backward", op_name, inputs, outputs, attrs))
        return outputs["dq"], outputs["dk"], outputs["dv"]


# Both methods take the score and mask keywords as SdpaKeywords, declared once (types in the
# TypedDicts, defaults in SDPA_DEFAULTS); each signature shows them where it always did.
show_keywords(vars(AttentionOps), None, SdpaKeywords, defaults=SDPA_DEFAULTS)
place_keywords(AttentionOps.sdpa, ScoreKeywords, before="return_stats")
place_keywords(AttentionOps.sdpa_backward, ScoreKeywords, before="implementation")
place_keywords(AttentionOps.sdpa, RaggedKeywords, before="sink_token")
place_keywords(AttentionOps.sdpa_backward, RaggedKeywords, before="sink_token")
place_keywords(AttentionOps.sdpa, MaskKeywords, before="rng_dump")
place_keywords(AttentionOps.sdpa_backward, MaskKeywords, before="sink_token")
