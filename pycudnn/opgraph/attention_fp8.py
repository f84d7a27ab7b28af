"""FP8 scaled dot-product attention forward (``OPERATION_SDPA_FWD`` with per-tensor scaling).

>>> o, stats, amax_s, amax_o = g.sdpa_fp8(q, k, v, descale_q, descale_k, descale_v,
...                                       descale_s, scale_s, scale_o, generate_stats=True)

NVIDIA cudnn-frontend's ``sdpa_fp8`` under its names: Q, K, V (and O) ``float8_e4m3fn`` or
``float8_e5m2``; six float32 ``[1, 1, 1, 1]`` factors given at execute (``descale_q/k/v``
dequantise the inputs, ``descale_s``/``scale_s`` the probabilities between the two products,
``scale_o`` quantises the output); outputs O (fp8), the float32 stats when asked, and the float32
absolute maxima ``amax_s`` (of the probabilities) and ``amax_o`` (of O before ``scale_o``), which a
training loop turns into the next step's scales. In cuDNN's terms::

    S = attn_scale * (descale_q * Q) @ (descale_k * K)^T      masked, then softmax -> P
    O = scale_o * ((scale_s * P rounded to fp8) * descale_s) @ (descale_v * V)

Lowered to cuDNN's unified SDPA operation with ``SDPA_FWD_DESCALE_Q/K/V/SDESC``,
``SCALE_S/ODESC`` and ``AMAX_S/ODESC`` (cuDNN 9.25; measured to plan deviceless for the H100 on
9.28, engine 9, as the frontend's graph). On older cuDNN the operation is refused with the
version (the frontend's pre-9.25 FP8 graph of matmul and pointwise operations is not built here).
MXFP8 (``float8_e8m0fnu`` block scales) is refused: cuDNN runs it on Blackwell (sm_100) only.
The backward is :mod:`pycudnn.opgraph.attention_fp8_backward` (a composite graph).
"""

from __future__ import annotations

from typing import Any, TypedDict

from _nvbind.keywords import keyword_defaults

from .. import _attention_rules as rules
from . import attention_args as kw
from .attention_common import AttentionCommon, Lowering, Scores, attach_offsets
from .common import GraphError
from .tensors import Tensor

__all__ = ["FP8_DTYPES", "SCALE_ROLES", "AttentionFp8Ops", "Fp8Keywords", "as_bf16"]

#: Element types of Q, K, V and O for per-tensor FP8 attention.
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
#: The frontend's names of the six float32 factors, in its positional order.
SCALE_ROLES = ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")


class Fp8Keywords(TypedDict, total=False):
    """The keywords of :meth:`AttentionFp8Ops.sdpa_fp8` that ``sdpa_fp8_backward`` takes too,
    with the same defaults (the scale, and the padding and diagonal-band masks under the
    frontend's FP8 names): their fixed keyword list, for ``**kw: Unpack[Fp8Keywords]``."""

    attn_scale: Any
    use_padding_mask: bool | None
    seq_len_q: Tensor | None
    seq_len_kv: Tensor | None
    use_causal_mask: bool
    use_causal_mask_bottom_right: bool
    diagonal_alignment: Any
    left_bound: int | None
    right_bound: int | None


def _name(t: Tensor) -> str:
    return t.dtype.name if t.dtype is not None else "unresolved"


def _check_fp8(label: str, qkv: dict[str, Tensor], scales: dict[str, Tensor]) -> None:
    """FP8 Q, K, V of one type and six float32 [1, 1, 1, 1] factors; MXFP8 refused."""
    if _name(scales["descale_q"]) == "float8_e8m0fnu":
        raise GraphError(
            f"{label}: float8_e8m0fnu descale tensors are MXFP8 (block-scaled) attention, which "
            "cuDNN runs on Blackwell (sm_100) only; on Hopper give per-tensor float32 "
            "[1, 1, 1, 1] descale and scale factors"
        )
    types = {r: _name(t) for r, t in qkv.items()}
    if any(t not in FP8_DTYPES for t in types.values()) or len(set(types.values())) > 1:
        raise GraphError(
            f"{label}: sdpa_fp8 takes q, k and v of one fp8 type ({' or '.join(FP8_DTYPES)}); "
            f"got {', '.join(f'{r} {t}' for r, t in types.items())} (sdpa() takes fp16/bf16)"
        )
    for role, t in scales.items():
        if t.dims != (1, 1, 1, 1) or _name(t) != "float32":
            raise GraphError(
                f"{label}: {role} '{t.name}' is one float32 factor, dims [1, 1, 1, 1]; got "
                f"{_name(t)} {list(t.dims)}"
            )


def as_bf16(s: dict[str, rules.TensorSpec], roles: Any) -> dict[str, rules.TensorSpec]:
    """The specs with the fp8 tensors of ``roles`` read as bfloat16: FP8 attention has the shape
    and layout rules of the bf16 one (its types are checked by :func:`_check_fp8`)."""
    return {r: t._replace(dtype="bfloat16") if r in roles else t for r, t in s.items()}


class AttentionFp8Ops(AttentionCommon):
    """``sdpa_fp8``."""

    def sdpa_fp8(  # noqa: PLR0917 - the frontend takes the nine tensors positionally
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        descale_q: Tensor,
        descale_k: Tensor,
        descale_v: Tensor,
        descale_s: Tensor,
        scale_s: Tensor,
        scale_o: Tensor,
        *,
        is_inference: bool | None = None,
        generate_stats: bool | None = None,
        attn_scale: Any = None,
        use_padding_mask: bool | None = None,
        seq_len_q: Tensor | None = None,
        seq_len_kv: Tensor | None = None,
        use_causal_mask: bool = False,
        use_causal_mask_bottom_right: bool = False,
        sliding_window: int | None = None,
        diagonal_alignment: Any = "top_left",
        left_bound: int | None = None,
        right_bound: int | None = None,
        implementation: Any = "auto",
        name: str | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor, Tensor]:
        """FP8 attention forward (``OPERATION_SDPA_FWD_DESCRIPTOR`` with FP8 scaling): returns
        ``(O, stats, amax_s, amax_o)`` as NVIDIA's frontend does; ``stats`` is None unless
        ``generate_stats=True`` (or ``is_inference=False``). Masks under the frontend's
        ``sdpa_fp8`` names: ``use_causal_mask``, ``use_causal_mask_bottom_right``,
        ``diagonal_alignment``, ``left_bound``, ``right_bound`` (``sliding_window`` is the left
        bound), and the padding mask with ``seq_len_q``/``seq_len_kv``. ``implementation`` may
        be ``"auto"`` or ``"unified"``: FP8 has no composite lowering here. See
        :mod:`pycudnn.opgraph.attention_fp8`."""
        op_name, label = self._begin_op("sdpa_fp8", name)
        stats_flag = kw.stats_flag(label, None, generate_stats, is_inference)
        scale = kw.scale_arg(label, None, attn_scale)
        kw.padding_flag(label, use_padding_mask, seq_len_q, seq_len_kv)
        qkv = {r: self._own(t, label, r) for r, t in (("q", q), ("k", k), ("v", v))}
        given = (descale_q, descale_k, descale_v, descale_s, scale_s, scale_o)
        scales = {r: self._own(t, label, r) for r, t in zip(SCALE_ROLES, given, strict=True)}
        _check_fp8(label, qkv, scales)
        masks = kw.Masks(
            label,
            causal=False,
            use_causal_mask=use_causal_mask,
            use_causal_mask_bottom_right=use_causal_mask_bottom_right,
            sliding_window=None,
            sliding_window_length=sliding_window,
            diagonal_alignment=diagonal_alignment,
            diagonal_band_left_bound=left_bound,
            diagonal_band_right_bound=right_bound,
        )
        tensors: dict[str, Any] = {
            **qkv,
            "seq_len_q": seq_len_q,
            "seq_len_kv": seq_len_kv,
            **scales,
        }

        def check(s: dict[str, rules.TensorSpec]) -> rules.SdpaShapes:
            return rules.check_sdpa(as_bf16(s, ("q", "k", "v")), return_stats=stats_flag)

        lowering = Lowering(
            implementation,
            unified_only="FP8 attention is cuDNN's unified SDPA operation with per-tensor "
            "scaling (cuDNN 9.25)",
        )
        inputs, attrs, shapes = self._attention_common(
            label, op_name, tensors, Scores(scale, masks), lowering, backward=False, check=check
        )
        q_t = inputs["q"]
        outputs = self._forward_outputs(label, op_name, shapes, q_t, bool(stats_flag))
        outputs.update(self._amax_outputs(label, op_name, ("amax_s", "amax_o"), q_t))
        attach_offsets(self._add_op("sdpa", op_name, inputs, outputs, attrs))
        return outputs["o"], outputs.get("stats"), outputs["amax_s"], outputs["amax_o"]


# sdpa_fp8 spells out the keywords (and defaults) that sdpa_fp8_backward takes as Fp8Keywords.
FP8_DEFAULTS = keyword_defaults(AttentionFp8Ops.sdpa_fp8, Fp8Keywords.__annotations__)
