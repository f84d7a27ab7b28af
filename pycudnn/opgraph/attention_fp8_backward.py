"""FP8 scaled dot-product attention backward (cudnn-frontend's ``sdpa_fp8_backward``).

>>> dq, dk, dv, amax_dq, amax_dk, amax_dv, amax_dp = g.sdpa_fp8_backward(
...     q, k, v, o, dO, stats, descale_q, descale_k, descale_v, descale_o, descale_dO,
...     descale_s, descale_dP, scale_s, scale_dQ, scale_dK, scale_dV, scale_dP,
...     attn_scale=0.125, use_causal_mask=True)

The frontend's names and positional order: Q, K, V, O, dO of one fp8 type (``float8_e4m3fn``
or ``float8_e5m2``), the float32 stats of :meth:`Graph.sdpa_fp8`, twelve float32
``[1, 1, 1, 1]`` factors given at execute, and the gradients dQ, dK, dV in the inputs' fp8 type
with the float32 absolute maxima of each before its scale (``amax_dP`` of dS, the softmax
gradient), which a training loop turns into the next step's scales. In cuDNN's terms::

    P  = exp(attn_scale * (descale_q Q) @ (descale_k K)^T, masked, - stats)
    dV = scale_dV * descale_s * descale_dO * (scale_s P rounded to fp8)^T @ dO
    dS = attn_scale * P * (descale_dO descale_v dO @ V^T - descale_dO descale_o rowsum(dO * O))
    dQ = scale_dQ * descale_dP * descale_k * (scale_dP dS rounded to fp8) @ K
    dK = scale_dK * descale_dP * descale_q * (scale_dP dS rounded to fp8)^T @ Q

cuDNN's unified ``OPERATION_SDPA_BWD`` has no FP8 attributes (9.28: the FP8 descale, scale and
amax attributes are the forward's, ``SDPA_FWD_*``), so this lowers as the frontend's
``SDPAFP8BackwardNode`` does: a composite graph of matmul, pointwise, reduction and reshape
operations that cuDNN's fused FP8 attention backward engine recognises (measured: engine 6
deviceless for the H100 on cuDNN 9.19 and 9.28, as the frontend 1.32's plan for the same graph).
On Hopper that engine takes ``d_qk == d_v == 128`` only (the frontend's rule for sm_90);
bottom-right causal alignment and ragged tensors are refused here (Blackwell-only or not built).
A sink gets its gradient (``dSink_token``) as in the bf16 composite graph. cuDNN before 9.1 and
9.10.0 are refused as the frontend refuses them (9.10.0 for known bugs; 9.10.2 works).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from _nvbind.ffi import UnsupportedByLibraryError
from _nvbind.keywords import place_keywords, show_keywords, take_keywords

from .. import _attention_rules as rules
from . import attention_args as args
from . import attention_common
from .attention_common import AttentionCommon, Lowering, Scores
from .attention_composite import _Builder, _scores, backward_shapes
from .attention_fp8 import FP8_DEFAULTS, AttentionFp8Ops, Fp8Keywords, _check_fp8, as_bf16
from .common import GraphError
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

    from .tensors import Operation

__all__ = ["BWD_SCALE_ROLES", "AttentionFp8BackwardOps", "build_fp8_backward", "hopper_advice"]

#: The frontend's names of the twelve float32 factors, in its positional order.
BWD_SCALE_ROLES = (
    "descale_q",
    "descale_k",
    "descale_v",
    "descale_o",
    "descale_dO",
    "descale_s",
    "descale_dP",
    "scale_s",
    "scale_dQ",
    "scale_dK",
    "scale_dV",
    "scale_dP",
)
#: The first cuDNN with the fused FP8 attention backward, and the release the frontend refuses.
_FIRST, _BROKEN = 90100, 91000
_HOPPER_D = 128


class AttentionFp8BackwardOps(AttentionCommon):
    """``sdpa_fp8_backward``."""

    def sdpa_fp8_backward(  # noqa: PLR0917 - the frontend's eighteen positional tensors
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        o: Tensor,
        dO: Tensor,
        stats: Tensor,
        descale_q: Tensor,
        descale_k: Tensor,
        descale_v: Tensor,
        descale_o: Tensor,
        descale_dO: Tensor,
        descale_s: Tensor,
        descale_dP: Tensor,
        scale_s: Tensor,
        scale_dQ: Tensor,
        scale_dK: Tensor,
        scale_dV: Tensor,
        scale_dP: Tensor,
        *,
        use_deterministic_algorithm: bool = False,
        dropout: Any = None,
        sink_token: Tensor | None = None,
        dSink_token: Tensor | None = None,
        implementation: Any = "auto",
        name: str | None = None,
        **kw: Unpack[Fp8Keywords],
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
        """FP8 attention backward as NVIDIA's frontend builds it (a composite graph of
        ``OPERATION_MATMUL``, ``_POINTWISE``, ``_REDUCTION`` and ``_RESHAPE`` descriptors; cuDNN's
        ``OPERATION_SDPA_BWD_DESCRIPTOR`` has no FP8 scaling): returns ``(dQ, dK, dV, amax_dQ,
        amax_dK, amax_dV, amax_dP)``. Masks as :meth:`sdpa_fp8` (``use_causal_mask``,
        ``left_bound``, ``right_bound``, the padding mask with ``seq_len_q``/``seq_len_kv``);
        ``dropout=(p, seed, offset)`` as :meth:`sdpa_backward`; ``sink_token`` with
        ``dSink_token`` (float32 ``[1, h_q, 1, 1]``) receiving its gradient. ``implementation``
        may be ``"auto"`` or ``"composite"``. See :mod:`pycudnn.opgraph.attention_fp8_backward`."""
        opts = take_keywords("sdpa_fp8_backward", kw, FP8_DEFAULTS)  # an unknown one: TypeError
        op_name, label = self._begin_op("sdpa_fp8_backward", name)
        loaded = attention_common._loaded_version()
        if loaded < _FIRST or loaded == _BROKEN:
            raise UnsupportedByLibraryError(
                f"{label}: the fused FP8 attention backward needs cuDNN 9.1 or newer, and not "
                f"9.10.0 (known bugs; NVIDIA's frontend refuses it too: use 9.10.2 or newer); "
                f"the loaded cuDNN is {rules.version_text(loaded)}"
            )
        bottom_right = opts["use_causal_mask_bottom_right"]
        if bottom_right or opts["diagonal_alignment"] not in ("top_left", None):
            # the frontend refuses both on Hopper (sm_90); on Blackwell it plans them only for
            # s_q and s_kv multiples of 64 without dropout: not built here
            raise GraphError(
                f"{label}: a bottom-right aligned mask in the FP8 backward runs on Blackwell "
                "(sm_100) only (NVIDIA's frontend refuses it on Hopper) and is not built here; "
                "give the top-left causal mask, or left_bound/right_bound"
            )
        if use_deterministic_algorithm is not False:
            raise GraphError(
                f"{label}: use_deterministic_algorithm selects Blackwell's (sm_100) FP8 backward "
                "kernel configuration, which is not built here; on Hopper the fused FP8 "
                "backward has one algorithm: leave it False"
            )
        if (sink_token is None) != (dSink_token is None):
            # P comes from the stats, which hold the sink already: the backward reads the sink
            # only for its gradient (a sink alone would be an input no operation reads)
            raise GraphError(
                f"{label}: give sink_token together with dSink_token: the FP8 backward reads the "
                "sink only for its gradient (the saved stats carry it into P)"
            )
        scale = args.scale_arg(label, None, opts["attn_scale"])
        args.padding_flag(label, opts["use_padding_mask"], opts["seq_len_q"], opts["seq_len_kv"])
        drop_p, seed, offset = args.dropout_arg(
            label, 0.0 if dropout is None else dropout, None, None
        )
        io = {"q": q, "k": k, "v": v, "o": o, "do": dO}
        qkv = {r: self._own(t, label, r) for r, t in io.items()}
        descales = (descale_q, descale_k, descale_v, descale_o, descale_dO, descale_s, descale_dP)
        given = (*descales, scale_s, scale_dQ, scale_dK, scale_dV, scale_dP)
        factors = {r: self._own(t, label, r) for r, t in zip(BWD_SCALE_ROLES, given, strict=True)}
        _check_fp8(label, qkv, factors)
        for r in ("q", "k", "v"):
            if qkv[r].ragged_offset is not None:
                raise GraphError(
                    f"{label}: {r} is ragged (THD); NVIDIA's frontend refuses a ragged FP8 "
                    "backward on Hopper and it is not built here: give padded BSHD tensors "
                    "with seq_len_q/seq_len_kv"
                )
        masks = args.Masks(
            label,
            causal=False,
            use_causal_mask=opts["use_causal_mask"],
            use_causal_mask_bottom_right=False,
            sliding_window=None,
            sliding_window_length=None,
            diagonal_alignment="top_left",
            diagonal_band_left_bound=opts["left_bound"],
            diagonal_band_right_bound=opts["right_bound"],
        )
        tensors: dict[str, Any] = {
            **qkv,
            "stats": stats,
            "seq_len_q": opts["seq_len_q"],
            "seq_len_kv": opts["seq_len_kv"],
            "seed": seed,
            "offset": offset,
            "sink": sink_token,
            **{r.lower(): t for r, t in factors.items()},
        }

        def check(s: dict[str, rules.TensorSpec]) -> rules.SdpaShapes:
            return rules.check_sdpa_backward(as_bf16(s, io), dropout=drop_p)

        lowering = Lowering(
            implementation,
            needs_composite="cuDNN's unified SDPA backward has no FP8 scaling (its descale, "
            "scale and amax attributes are the forward's, cuDNN 9.28): the FP8 backward is the "
            "composite graph NVIDIA's frontend builds",
        )
        inputs, attrs, _ = self._attention_common(
            label,
            op_name,
            tensors,
            Scores(scale, masks, drop_p),
            lowering,
            backward=True,
            check=check,
        )
        attrs["fp8"] = True
        outputs = self._gradient_outputs(label, op_name, inputs, dSink_token)
        outputs.update(
            self._amax_outputs(
                label, op_name, ("amax_dq", "amax_dk", "amax_dv", "amax_dp"), inputs["q"]
            )
        )
        self._add_op("sdpa_backward", op_name, inputs, outputs, attrs)
        return (
            outputs["dq"],
            outputs["dk"],
            outputs["dv"],
            outputs["amax_dq"],
            outputs["amax_dk"],
            outputs["amax_dv"],
            outputs["amax_dp"],
        )


def hopper_advice(ops: list[Operation]) -> list[str]:
    """Why an FP8 backward found no engine on Hopper, when its head dims are the cause."""
    return [
        f"{op.label}: cuDNN's fused FP8 attention backward takes d_qk == d_v == {_HOPPER_D} "
        f"only on Hopper (sm_90; NVIDIA's frontend refuses other head dims there), got d_qk "
        f"{op.inputs['q'].dims[3]}, d_v {op.inputs['v'].dims[3]}; Blackwell (sm_100) takes any "
        "multiple of 16 up to 128"
        for op in ops
        if op.attrs.get("fp8")
        and op.kind == "sdpa_backward"
        and (op.inputs["q"].dims[3], op.inputs["v"].dims[3]) != (_HOPPER_D, _HOPPER_D)
    ]


def build_fp8_backward(
    op: Operation, tensors: dict[int, Any], new: Any, finalize: Any
) -> list[Any]:
    """The finalized operations of an FP8 backward, in the frontend's ``SDPAFP8BackwardNode``
    order and with its intermediate types: cuDNN's fused FP8 attention backward engine is chosen
    by matching that operation pattern."""
    bld = _Builder(op, tensors, new, finalize)
    a = op.attrs
    scores, row, fp8, d_qk, d_v = backward_shapes(op)
    b, hq, sq, skv = scores
    k_t = op.inputs["k"]
    mask = bld.rng(1.0 - a["dropout"], bld.virtual(scores, "FLOAT")) if a["dropout"] else None
    # softmax_sum = rowsum(dO * O) * descale_dO * descale_o [* (1 - p)]
    prod = bld.pw("MUL", bld.arg("do"), bld.arg("o"), dims=(b, hq, sq, d_v))
    rowsum = bld.reduce("ADD", prod, bld.virtual(row, "FLOAT"))
    rowsum = bld.pw("MUL", rowsum, bld.arg("descale_do"), dims=row)
    softmax_sum = bld.pw("MUL", rowsum, bld.arg("descale_o"), dims=row)
    if "dsink" in op.outputs:
        # dSink as the bf16 composite graph (attention_composite): cuDNN's engine negates it
        p_sink = bld.pw("EXP", bld.pw("SUB", bld.arg("sink"), bld.arg("stats"), dims=row), dims=row)
        bld.reduce("ADD", bld.pw("MUL", p_sink, softmax_sum, dims=row), bld.arg("dsink"))
    if mask is not None or "dsink" in op.outputs:
        # (1 - p), or 1 with a sink: the MUL tells the engine this path from the dSink chain
        softmax_sum = bld.pw("MUL", softmax_sum, bld.arg("dropout_scale_inv"), dims=row)
    # P = exp(scale * descale_q * descale_k * Q @ K^T, masked, - stats)
    s = _scores(bld, scores, after_scale=("descale_q", "descale_k"))
    if bld.has_band():
        s = bld.band_mask(s, scores)
    exp_s = bld.pw("EXP", bld.pw("SUB", s, bld.arg("stats"), dims=scores), dims=scores)
    p = exp_s
    if mask is not None:
        p = bld.pw(
            "MUL", bld.pw("MUL", p, mask, dims=scores), bld.arg("dropout_scale"), dims=scores
        )
    p = bld.pw("MUL", p, bld.arg("scale_s"), dims=scores, dtype=fp8)
    transposed, t_strides = (b, hq, skv, sq), (hq * sq * skv, sq * skv, 1, skv)
    p_t = bld.reshape(p, bld.virtual(transposed, fp8, t_strides))
    m_kv, k_q = bld.arg("seq_len_kv"), bld.arg("seq_len_q")
    _matmul_fp8(
        bld, p_t, bld.arg("do"), ("descale_s", "descale_do"), role="dv", d=d_v, m=m_kv, k=k_q
    )
    # dS = scale * P * (descale_dO * descale_v * dO @ V^T - softmax_sum) [/ (1 - p)]
    dp = bld.virtual(scores, "FLOAT")
    bld.matmul(bld.arg("do"), bld.arg("v"), dp, m=bld.arg("seq_len_q"), n=bld.arg("seq_len_kv"))
    dp = bld.pw("MUL", dp, bld.arg("descale_do"), dims=scores)
    dp = bld.pw("MUL", dp, bld.arg("descale_v"), dims=scores)
    ds = bld.pw("MUL", bld.pw("SUB", dp, softmax_sum, dims=scores), exp_s, dims=scores)
    if mask is not None:
        ds = bld.pw("MUL", ds, bld.arg("dropout_scale"), dims=scores)
    ds = bld.pw("MUL", ds, bld.arg("scale"), dims=scores)
    bld.reduce("AMAX", ds, bld.arg("amax_dp"))
    ds = bld.pw("MUL", ds, bld.arg("scale_dp"), dims=scores, dtype=fp8)
    # dQ = dS @ K: K back from the K^T cuDNN is shown
    k_back = bld.reshape(bld.arg("k"), bld.virtual(k_t.dims, fp8, k_t.strides))
    m_q, k_kv = bld.arg("seq_len_q"), bld.arg("seq_len_kv")
    _matmul_fp8(bld, ds, k_back, ("descale_dp", "descale_k"), role="dq", d=d_qk, m=m_q, k=k_kv)
    ds_t = bld.reshape(ds, bld.virtual(transposed, fp8, t_strides))
    _matmul_fp8(
        bld, ds_t, bld.arg("q"), ("descale_dp", "descale_q"), role="dk", d=d_qk, m=m_kv, k=k_q
    )
    return bld.ops


def _matmul_fp8(
    bld: _Builder, a: Any, b: Any, descales: tuple[str, str], *, role: str, d: int, m: Any, k: Any
) -> None:
    """The frontend's ``MatmulFP8Node``: ``C = scale_C * descale_A * descale_B * (A @ B)`` and
    ``amax_C`` of the product before ``scale_C``; grouped-query heads summed first."""
    out = bld.op.outputs[role]
    b_, h_a, rows = bld.op.attrs["scores_dims"][0], bld.op.attrs["scores_dims"][1], out.dims[2]
    c = bld.virtual((b_, h_a, rows, d), "FLOAT")
    bld.matmul(a, b, c, m=m, k=k)
    if out.dims[1] != h_a:
        c = bld.reduce("ADD", c, bld.virtual(out.dims, "FLOAT"))
    for factor in descales:
        c = bld.pw("MUL", c, bld.arg(factor), dims=out.dims)
    bld.pw("MUL", c, bld.arg("scale_" + role), dims=out.dims, out=bld.arg(role))
    bld.reduce("AMAX", c, bld.arg("amax_" + role))


# sdpa_fp8 spells out the keywords (and defaults) that sdpa_fp8_backward takes as Fp8Keywords;
# its signature shows them where they always stood, after the eighteen tensors.
show_keywords(vars(AttentionFp8BackwardOps), AttentionFp8Ops.sdpa_fp8, Fp8Keywords)
place_keywords(
    AttentionFp8BackwardOps.sdpa_fp8_backward, Fp8Keywords, before="use_deterministic_algorithm"
)
