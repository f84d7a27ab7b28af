"""What :meth:`Graph.sdpa`, :meth:`Graph.sdpa_backward` and :meth:`Graph.sdpa_fp8` share: own
and check the tensors, choose the lowering (cuDNN's unified SDPA operation or the composite graph
of :mod:`.attention_composite`) and add the by-value scalars each lowering reads.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from _nvbind.dtypes import as_data_type, dtype_name

from .. import _attention_rules as rules
from .._info import version
from . import attention_args as kw
from . import attention_extras as ext
from .common import GraphError
from .core import GraphCore
from .tensors import Operation, Tensor

__all__ = ["AttentionCommon", "Lowering", "Scores", "attach_offsets", "spec"]


def spec(t: Tensor) -> rules.TensorSpec:
    """The :class:`~pycudnn._attention_rules.TensorSpec` of a graph tensor."""
    dt = (
        dtype_name(t.element_type)
        if t.element_type is not None
        else "unresolved (call set_dtype())"
    )
    return rules.TensorSpec(t.name, t.dims, t.strides, dt)


def attach_offsets(op: Operation) -> None:
    """The ragged offsets of the tensors an SDPA reads or writes become its inputs (the tensors
    given ragged later attach theirs themselves: :meth:`Tensor.set_ragged_offset`)."""
    ragged = [t for t in (*op.inputs.values(), *op.outputs.values()) if t.ragged_offset is not None]
    for t in dict.fromkeys(ragged):
        assert t.ragged_offset is not None
        op.attach_ragged_offset(t, t.ragged_offset)


def _loaded_version() -> int:

    return version()


class Scores(NamedTuple):
    """How an SDPA forms its score matrix, as its keywords gave it."""

    #: A float, None (``1/sqrt(head_dim)``) or a float32 ``[1, 1, 1, 1]`` tensor set per execution.
    scale: Any
    masks: kw.Masks
    dropout: float = 0.0
    #: ALiBi position biases (composite only).
    alibi: bool = False


#: The last cuDNN whose fused SDPA backward (bf16/fp16) gives wrong gradients, NaN among them,
#: when s_kv is not a multiple of 128 and there is no padding mask: NVIDIA's frontend adds a
#: padding mask of full lengths there (``CompositeSDPABackwardNode``, "Workaround padding mask",
#: cudnn-frontend issue #160, stopped from 9.15.1 by its pull request #178).
_KV_TAIL_LAST_BROKEN = 91500
#: Before this cuDNN the frontend's composite backward masks the padding a second time after the
#: stats are subtracted ("Explicitly put the padding value again after the stats have been
#: loaded", ``CompositeSDPABackwardNode``, 9.0 to 9.9); the composite graph here masks once.
_SECOND_PADDING_UNTIL = 91000
_FRONTEND_REFUSES = "(NVIDIA's frontend refuses it on that version too)"


def _check_backward_bugs(
    label: str,
    loaded: int,
    *,
    rows: int,
    s_q: int,
    s_kv: int,
    padded: bool,
    left_bound: bool,
    causal_like: bool,
    ragged: bool,
    sink: bool,
) -> None:
    """Refuse the composite bf16/fp16 backward where cuDNN crashes planning it: a single score
    row (``b * h_q * s_q == 1``: cuDNN 9.28's heuristics segfault, found by fuzzing; older
    versions unchecked, refused alike). And on the cuDNN versions where NVIDIA's frontend
    works around or refuses a known bug (``CompositeSDPABackwardNode``): a padding mask on 9.0 to
    9.9 (masked again after the stats there); ``s_kv % 128 != 0`` without one on 9.15.0 and
    older (the frontend fills full-length ``seq_len_q``/``seq_len_kv`` in its own workspace; here
    the caller gives them); every such backward on 9.10.0 and 9.10.1; a sliding window without a
    causal-like mask over ``s_kv > 1024`` on 9.14.0; ragged tensors with a sink token before
    9.26 (an out-of-bounds read in cuDNN's ``compute_dot_do_o`` pre-pass)."""
    why = ""
    if rows == 1:
        why = (
            "is not given the composite SDPA backward of a single score row (b * h_q * s_q == 1): "
            "cuDNN 9.28's heuristics crash on it (SIGSEGV), older versions are unchecked; use "
            "implementation='unified' (cuDNN 9.28 and newer), or batch more rows"
        )
    elif padded and loaded < _SECOND_PADDING_UNTIL:
        why = (
            "needs the padding mask of the SDPA backward applied again after the stats are "
            "subtracted (cuDNN 9.0 to 9.9; NVIDIA's frontend adds that second mask there, which "
            "this library's composite graph does not); use cuDNN 9.10.2 or newer"
        )
    elif not padded and s_kv % 128 and loaded <= _KV_TAIL_LAST_BROKEN:
        why = (
            f"computes wrong gradients (NaN among them) for the SDPA backward when s_kv ({s_kv}) "
            "is not a multiple of 128 and there is no padding mask (cuDNN "
            f"{rules.version_text(_KV_TAIL_LAST_BROKEN)} and older; NVIDIA's frontend adds a "
            "padding mask of full lengths there); give seq_len_q and seq_len_kv (int32 "
            f"[b, 1, 1, 1]) filled with the full lengths ({s_q} and {s_kv}), or make s_kv a "
            "multiple of 128, or use cuDNN 9.15.1 or newer"
        )
    elif loaded in (91000, 91001):
        why = (
            "has known bugs in every fp16/bf16 SDPA backward; use 9.10.2 or newer "
            + _FRONTEND_REFUSES
        )
    elif loaded == 91400 and s_kv > 1024 and left_bound and not causal_like:
        why = (
            "has a known bug with a sliding window (left bound) without a causal-like mask when "
            f"s_kv > 1024 (here {s_kv}); use 9.14.1 or newer, or add a right bound "
            + _FRONTEND_REFUSES
        )
    elif ragged and sink and loaded < 92600:
        why = (
            "reads out of bounds in the SDPA backward with ragged tensors and a sink token "
            "(its compute_dot_do_o pre-pass); use 9.26 or newer " + _FRONTEND_REFUSES
        )
    if why:
        raise GraphError(f"{label}: cuDNN {rules.version_text(loaded)} {why}")


class Lowering(NamedTuple):
    """What an SDPA method knows of its lowering before the rules run."""

    #: ``"auto"``, ``"unified"`` or ``"composite"``, as given.
    implementation: Any
    #: Why the unified operation cannot express the call ("" when it can).
    needs_composite: str = ""
    #: Why the call has no composite lowering (a block mask, FP8; "" when it has).
    unified_only: str = ""
    #: Further :data:`rules.VERSIONS` keys the unified operation needs (``sdpa stats_use_log2``
    #: needs its composite key too).
    features: tuple[str, ...] = ()
    #: The sides (``"k"``, ``"v"``) read from paged caches.
    paged: tuple[str, ...] = ()


#: The dims (and strides) of a by-value scalar, and the data types of the operations' own.
_SCALAR_SHAPE = (1, 1, 1, 1)
_SCALAR_TYPES = {name: as_data_type(name) for name in ("float32", "int32")}


class AttentionCommon(GraphCore):
    """The checks and lowering choice of every SDPA operation."""

    def _operation_scalar(self, value: float, dtype: str, name: str) -> Tensor:
        """A by-value scalar the operation adds of its own (its scale, the masks' -inf and
        bounds, the dropout's scales): the tensor :meth:`scalar` makes, without its checks of
        a caller's request, which a float or int the operation computed and a float32 or int32
        type pass."""
        dt = _SCALAR_TYPES[dtype]
        shape = _SCALAR_SHAPE
        return self._new_tensor((name, name), shape, shape, dt, by_value=True, value=value)

    def _attention_common(
        self,
        label: str,
        op_name: str,
        tensors: dict[str, Any],
        scores: Scores,
        asked: Lowering,
        *,
        backward: bool,
        check: Any,
    ) -> tuple[dict[str, Tensor], dict[str, Any], Any]:
        """Own the tensors, run the rules (``check``), choose the lowering (unified SDPA operation
        or the composite graph) and add the scalars it reads; returns the operation's inputs by
        role, its settings and the rules' shapes."""
        scale, masks, dropout, alibi = scores
        implementation, needs_composite, unified_only, features, paged = asked
        impl = kw.choice(implementation, f"{label}: implementation", kw.IMPLEMENTATIONS)
        if unified_only:
            if impl == "composite" or needs_composite:
                raise GraphError(
                    f"{label}: {unified_only}, so it cannot be lowered to the composite graph"
                    + (f", but {needs_composite}" if needs_composite else "")
                    + "; leave out what needs the composite graph, or the unified-only input"
                )
            impl = "unified"
        if impl == "unified" and needs_composite:
            raise GraphError(
                f"{label}: {needs_composite} (cuDNN's unified SDPA operation has no such "
                "setting); implementation='composite' or 'auto' lowers it to matmul, softmax and "
                "matmul operations, as NVIDIA's frontend does"
            )
        owned = {r: self._own(t, label, r) for r, t in tensors.items() if t is not None}
        scale_t = scale if isinstance(scale, Tensor) else None
        if scale_t is not None:
            self._own(scale_t, label, "attn_scale")
            if (
                scale_t.dims != (1, 1, 1, 1)
                or scale_t.dtype is None
                or scale_t.dtype.name != ("float32")
            ):
                raise GraphError(
                    f"{label}: attn_scale tensor '{scale_t.name}' must be float32 [1, 1, 1, 1], "
                    f"got {spec(scale_t).dtype} {list(scale_t.dims)}"
                )
        specs = {r: spec(t) for r, t in owned.items()}
        try:
            shapes = check(specs)
        except rules.RuleError as exc:
            raise GraphError(f"{label}: {exc}") from None
        b, h_q, s_q, s_kv = shapes.scores_dims
        # the FP8 forward is the unified operation; the FP8 backward is a composite graph
        fp8 = "descale_q" in owned and not backward
        if "sink" in owned:
            ext.check_sink(label, "sink_token", owned["sink"], h_q)
        if "block_mask" in owned:
            ext.check_block_mask(label, owned["block_mask"], shapes.scores_dims)
        if "dropout_mask" in owned:
            ext.check_dropout_mask(
                label, owned["dropout_mask"], owned["dropout_scale"], shapes.scores_dims
            )
            if "dropout_scale_inv" in owned:  # the backward's third tensor, as the scale
                ext.check_dropout_mask(
                    label, owned["dropout_mask"], owned["dropout_scale_inv"], shapes.scores_dims
                )
        padded = "seq_len_q" in owned
        masks.check_lengths(label, s_q, s_kv, alibi)
        # Bottom-right alignment shifts the diagonal by s_kv - s_q: folded into the bounds for
        # fixed lengths, taken from the sequence-length tensors per batch entry with padding.
        shift = s_kv - s_q if masks.alignment == "bottom_right" and not padded else 0
        right = None if masks.right is None else masks.right + shift
        left = None if masks.left is None else masks.left - shift
        shift_from_lengths = masks.alignment == "bottom_right" and padded and masks.any
        loaded = _loaded_version()
        unified_features = rules.sdpa_features(
            backward=backward,
            padding=padded,
            masks=masks.any or "bias" in owned,
            dropout=dropout,
            paged=bool(paged),
        )
        op_kind = "sdpa_backward" if backward else "sdpa"
        unified_features += [f"{op_kind} sink_token"] * ("sink" in owned)
        unified_features += ["sdpa block_mask"] * ("block_mask" in owned)
        unified_features += ["sdpa fp8"] * fp8
        unified_features += features
        why_not = needs_composite
        if not why_not and backward and dropout and impl == "auto":
            # The forward that saved the stats is the composite graph (dropout with stats has no
            # unified forward), whose mask an RNG operation draws; the composite backward draws
            # it again the same way, as cudnn-frontend's (always composite) does. The unified
            # backward's own draw is not known to match: "unified" must be asked for.
            why_not = (
                "dropout in a backward pairs with the composite training forward, whose mask the "
                "composite backward draws again the same way (the unified backward's own draw is "
                "not verified to match it on a GPU)"
            )
        if not why_not and shift_from_lengths:
            why_not = "a bottom-right aligned mask with padding is composite-only"
        if not why_not:
            for feature in unified_features:
                if loaded < rules.VERSIONS[feature]:
                    why_not = (
                        f"{feature} needs cuDNN {rules.version_text(rules.VERSIONS[feature])} in "
                        f"the unified operation; the loaded cuDNN is {rules.version_text(loaded)}"
                    )
                    break
        if impl == "unified":
            if shift_from_lengths:
                raise GraphError(
                    f"{label}: {why_not} (cuDNN's unified SDPA operation has no such setting); "
                    "implementation='composite' or 'auto' lowers it to matmul, softmax and "
                    "matmul operations, as NVIDIA's frontend does"
                )
            for feature in unified_features:
                rules.require_version(label, feature, loaded)
            lowering = "unified"
        elif impl == "composite" or why_not:
            rules.require_version(label, "sdpa composite", loaded)
            if paged:
                rules.require_version(label, "sdpa composite paged K/V caches", loaded)
            if "sink" in owned:
                rules.require_version(label, "sdpa composite sink_token", loaded)
            if "sdpa stats_use_log2" in features:
                rules.require_version(label, "sdpa composite stats_use_log2", loaded)
            lowering = "composite"
        else:
            lowering = "unified"
        composite = lowering == "composite"
        if composite and backward and "descale_q" not in owned:
            _check_backward_bugs(
                label,
                loaded,
                rows=b * h_q * s_q,
                s_q=s_q,
                s_kv=s_kv,
                padded=padded,
                left_bound=masks.left is not None,
                causal_like=masks.right is not None,
                ragged=any(t.ragged_offset is not None for t in owned.values()),
                sink="sink" in owned,
            )
        # The unified operation's masks are cuDNN's DIAGONAL_BAND_MASK operations (one per bound),
        # as the frontend builds them from 9.21 (UnifiedDiagonalBandMaskNode), the version the
        # unified operation's score subgraph needs anyway: one operation where the pointwise form
        # (GEN_INDEX, CMP, BINARY_SELECT) takes four and three more virtual tensors. 9.28's FP8
        # engine compiles only this form. The composite graph keeps the pointwise form. (The
        # FP8 forward is always the unified operation.)
        band_op = not composite
        # The composite graph shows cuDNN K (and, backward, V) transposed under its own unique
        # id: a tensor that is also another operand of the operation cannot be shown both ways.
        for role in ("k", "v") if backward else ("k",):
            if (
                composite
                and role not in paged
                and any(owned[role] is t for r, t in owned.items() if r != role)
            ):
                raise GraphError(
                    f"{label}: {role} ('{owned[role].name}') is also another operand; the "
                    f"composite graph shows cuDNN {role.upper()} transposed, so give it a tensor "
                    "of its own (a second g.tensor() over the same memory is fine)"
                )
        inputs = dict(owned)
        d_qk = owned["q"].dims[3]
        value: float | None = None
        if scale_t is not None:
            inputs["scale"] = scale_t
        else:
            value = 1.0 / math.sqrt(d_qk) if scale is None else float(scale)
            inputs["scale"] = self._operation_scalar(
                value, dtype="float32", name=f"{op_name}.scale"
            )
        if masks.any or (composite and padded):
            inputs["neg_inf"] = self._operation_scalar(
                -math.inf, dtype="float32", name=f"{op_name}.neg_inf"
            )
        if right:
            inputs["right_bound"] = self._operation_scalar(
                right, dtype="int32", name=f"{op_name}.right_bound"
            )
        if left is not None:
            # cuDNN's DIAGONAL_BAND_MASK operation (the FP8 score subgraph) reads a float left
            # bound, as the frontend gives it; the pointwise CMP_GT an int32 one
            inputs["left_bound"] = self._operation_scalar(
                left, dtype="float32" if band_op else "int32", name=f"{op_name}.left_bound"
            )
        if composite and dropout and "dropout_scale" not in inputs:
            inputs["dropout_scale"] = self._operation_scalar(
                1.0 / (1.0 - dropout), dtype="float32", name=f"{op_name}.dropout_scale"
            )
        if alibi:
            # ALiBi slopes as the frontend's get_alibi_slope: 2 ** (-8 a / n) with n the largest
            # power of two <= h_q, a = h + 1 for the first n heads and h - n + 1/2 after them
            h_q = owned["q"].dims[1]
            n = 1 << (h_q.bit_length() - 1)
            inputs["alibi_rate"] = self._operation_scalar(
                -8.0 * math.log(2.0) / n, dtype="float32", name=f"{op_name}.alibi_rate"
            )
            inputs["alibi_one"] = self._operation_scalar(
                1.0, dtype="float32", name=f"{op_name}.alibi_one"
            )
            if n != h_q:
                inputs["alibi_heads"] = self._operation_scalar(
                    n, dtype="int32", name=f"{op_name}.alibi_heads"
                )
                inputs["alibi_shift"] = self._operation_scalar(
                    0.5 - n, dtype="float32", name=f"{op_name}.alibi_shift"
                )
        if (
            composite
            and backward
            and "dropout_scale_inv" not in inputs
            and (dropout or "descale_q" not in owned or "sink" in owned)
        ):
            # rowsum(dO * O) is scaled by the keep probability (1 with no dropout), as the
            # frontend's composite backward does (its FP8 backward only with dropout or a sink)
            inputs["dropout_scale_inv"] = self._operation_scalar(
                1.0 - dropout, dtype="float32", name=f"{op_name}.dropout_scale_inv"
            )
        attrs: dict[str, Any] = {
            "compute_dtype": self._compute("float32", label),
            "scale": value,
            "causal": masks.right == 0 and masks.alignment == "top_left",
            "sliding_window": masks.left if masks.right == 0 else None,
            "alignment": masks.alignment,
            "right_bound": right,
            "left_bound": left,
            "band": (masks.left, masks.right),
            "shift_from_lengths": shift_from_lengths,
            "dropout": float(dropout),
            "dropout_mask": "dropout_mask" in owned,
            "scores_dims": shapes.scores_dims,
            "alibi": alibi,
            "paged": paged,
            "implementation": impl,
            "lowering": lowering,
            "lowering_note": (
                f"composite graph (matmul, softmax, matmul): {why_not}"
                if composite and why_not
                else "composite graph (matmul, softmax, matmul), as asked"
                if composite
                else "unified SDPA operation"
            ),
        }
        del b
        return inputs, attrs, shapes

    # -- the outputs every SDPA operation declares ------------------------------------------------
    def _forward_outputs(
        self, label: str, op_name: str, shapes: rules.SdpaShapes, q: Tensor, stats: bool
    ) -> dict[str, Tensor]:
        """O (Q's dtype, the layout the rules chose) and, when asked, the float32 stats."""
        out = {
            "o": self._output(label, op_name, "o", shapes.o_dims, q, out=None,
                              out_dtype=q.element_type, strides=shapes.o_strides)
        }  # fmt: skip
        if stats:
            out["stats"] = self._output(label, op_name, "stats", shapes.stats_dims, q, out=None,
                                        out_dtype="float32", strides=shapes.stats_strides)  # fmt: skip
        return out

    def _gradient_outputs(
        self, label: str, op_name: str, inputs: dict[str, Tensor], dsink: Tensor | None
    ) -> dict[str, Tensor]:
        """dQ, dK, dV (dims, layout and dtype of Q, K, V) and, when given, dSink."""
        out = {}
        for role, src in (("dq", "q"), ("dk", "k"), ("dv", "v")):
            t = inputs[src]
            out[role] = self._output(
                label,
                op_name,
                role,
                t.dims,
                t,
                out=None,
                out_dtype=t.element_type,
                strides=t.strides,
            )
        if dsink is not None:
            owned = self._own(dsink, label, "dSink_token")
            ext.check_sink(label, "dSink_token", owned, inputs["q"].dims[1])
            out["dsink"] = self._output(
                label, op_name, "dsink", owned.dims, owned, out=owned, out_dtype="float32"
            )
        return out

    def _amax_outputs(
        self, label: str, op_name: str, roles: tuple[str, ...], like: Tensor
    ) -> dict[str, Tensor]:
        """The FP8 operations' float32 ``[1, 1, 1, 1]`` absolute maxima."""
        return {
            role: self._output(
                label, op_name, role, (1, 1, 1, 1), like, out=None, out_dtype="float32"
            )
            for role in roles
        }
