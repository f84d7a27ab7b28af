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
this library refuses instead, with the version the feature needs.
"""

from __future__ import annotations

import math
from typing import Any

from _nvbind.dtypes import dtype_name

from .. import _attention_rules as rules
from .common import GraphError
from .core import GraphCore
from .tensors import Tensor

__all__ = ["AttentionOps", "spec"]


def spec(t: Tensor) -> rules.TensorSpec:
    """The :class:`~pycudnn._attention_rules.TensorSpec` of a graph tensor."""
    dt = dtype_name(t.dtype) if t.dtype is not None else "unresolved (call set_dtype())"
    return rules.TensorSpec(t.name, t.dims, t.strides, dt)


def _loaded_version() -> int:
    from .._info import version

    return version()


class AttentionOps(GraphCore):
    """``sdpa`` and ``sdpa_backward``."""

    def _attention_common(
        self,
        label: str,
        op_name: str,
        tensors: dict[str, Any],
        *,
        scale: float | None,
        causal: bool,
        sliding_window: int | None,
        dropout: float,
        backward: bool,
        check: Any,
    ) -> tuple[dict[str, Tensor], dict[str, Any], Any]:
        """Own the tensors, run the rules and the version checks, add the scalars; returns the
        operation's inputs by role, its settings and the rules' shapes."""
        owned = {r: self._own(t, label, r) for r, t in tensors.items() if t is not None}
        specs = {r: spec(t) for r, t in owned.items()}
        try:
            shapes = check(specs)
        except rules.RuleError as exc:
            raise GraphError(f"{label}: {exc}") from None
        features = rules.sdpa_features(
            backward=backward,
            padding="seq_len_q" in owned,
            causal=causal,
            sliding_window=sliding_window,
            bias="bias" in owned,
            dropout=dropout,
        )
        loaded = _loaded_version()
        for feature in features:
            rules.require_version(label, feature, loaded)
        d_qk = owned["q"].dims[3]
        value = 1.0 / math.sqrt(d_qk) if scale is None else float(scale)
        inputs = dict(owned)
        inputs["scale"] = self.scalar(value, dtype="float32", name=f"{op_name}.scale")
        if causal or sliding_window is not None:
            inputs["neg_inf"] = self.scalar(-math.inf, dtype="float32", name=f"{op_name}.neg_inf")
        if sliding_window is not None:
            inputs["window"] = self.scalar(sliding_window, dtype="int32", name=f"{op_name}.window")
        attrs: dict[str, Any] = {
            "compute_dtype": self._compute("float32", label),
            "scale": value,
            "causal": bool(causal or sliding_window is not None),
            "sliding_window": sliding_window,
            "dropout": float(dropout),
            "scores_dims": shapes.scores_dims,
        }
        return inputs, attrs, shapes

    def sdpa(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        scale: float | None = None,
        causal: bool = False,
        sliding_window: int | None = None,
        bias: Tensor | None = None,
        seq_len_q: Tensor | None = None,
        seq_len_kv: Tensor | None = None,
        dropout: float = 0.0,
        seed: Tensor | None = None,
        offset: Tensor | None = None,
        return_stats: bool = False,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """``softmax(scale * Q @ K^T + bias, masked) @ V`` (``OPERATION_SDPA_FWD_DESCRIPTOR``).

        Returns ``(O, stats)``: O is ``[b, h_q, s_q, d_v]`` in Q's layout and dtype; ``stats``
        (``return_stats=True``, for training) is the float32 log-sum-exp of each score row,
        ``[b, h_q, s_q, 1]``, that :meth:`sdpa_backward` needs, else None.

        ``scale`` defaults to ``1/sqrt(head_dim)``. ``causal`` masks keys after the query
        (top-left aligned, as PyTorch's ``is_causal``); ``sliding_window=w`` keeps only the ``w``
        keys ending at the query's position (implies causal). ``bias`` is added to the scores
        (dims broadcast to ``[b, h_q, s_q, s_kv]``). ``seq_len_q``/``seq_len_kv`` (int32
        ``[b, 1, 1, 1]``) give each batch entry's real lengths (padding mask). ``dropout`` with
        int64 ``seed`` and ``offset`` tensors drops attention weights.

        cuDNN versions: 9.13.1 for the operation, 9.15 for sequence lengths, 9.21 for masks and
        bias, 9.22 for dropout; an older loaded cuDNN is refused with
        :class:`~_nvbind.ffi.UnsupportedByLibraryError`.
        """
        op_name, label = self._begin_op("sdpa", name)
        if not isinstance(return_stats, bool):
            raise TypeError(f"{label}: return_stats must be a bool, not {return_stats!r}")
        if dropout and return_stats:
            # NVIDIA's frontend refuses this pair for the unified SDPA operation.
            raise GraphError(
                f"{label}: dropout with return_stats=True is not supported by cuDNN's unified "
                "SDPA operation (NVIDIA's frontend refuses it too)"
            )
        tensors = {
            "q": q,
            "k": k,
            "v": v,
            "bias": bias,
            "seq_len_q": seq_len_q,
            "seq_len_kv": seq_len_kv,
            "seed": seed,
            "offset": offset,
        }

        def check(s: dict[str, rules.TensorSpec]) -> rules.SdpaShapes:
            return rules.check_sdpa(
                s["q"],
                s["k"],
                s["v"],
                scale=scale,
                causal=causal,
                sliding_window=sliding_window,
                bias=s.get("bias"),
                seq_len_q=s.get("seq_len_q"),
                seq_len_kv=s.get("seq_len_kv"),
                dropout=dropout,
                seed=s.get("seed"),
                offset=s.get("offset"),
                return_stats=return_stats,
            )

        inputs, attrs, shapes = self._attention_common(
            label,
            op_name,
            tensors,
            scale=scale,
            causal=causal,
            sliding_window=sliding_window,
            dropout=dropout,
            backward=False,
            check=check,
        )
        q_t = inputs["q"]
        o = self._output(
            label,
            op_name,
            "o",
            shapes.o_dims,
            q_t,
            out=None,
            out_dtype=q_t.dtype,
            strides=shapes.o_strides,
        )
        outputs = {"o": o}
        stats = None
        if return_stats:
            stats = self._output(
                label,
                op_name,
                "stats",
                shapes.stats_dims,
                q_t,
                out=None,
                out_dtype="float32",
                strides=shapes.stats_strides,
            )
            outputs["stats"] = stats
        self._add_op("sdpa", op_name, inputs, outputs, attrs)
        return o, stats

    def sdpa_backward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        o: Tensor,
        do: Tensor,
        *,
        stats: Tensor,
        scale: float | None = None,
        causal: bool = False,
        sliding_window: int | None = None,
        bias: Tensor | None = None,
        seq_len_q: Tensor | None = None,
        seq_len_kv: Tensor | None = None,
        dropout: float = 0.0,
        seed: Tensor | None = None,
        offset: Tensor | None = None,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Gradients ``(dQ, dK, dV)`` of :meth:`sdpa` (``OPERATION_SDPA_BWD_DESCRIPTOR``).

        Takes the forward's Q, K, V, its output O and saved ``stats`` (``return_stats=True``), the
        incoming gradient dO, and the same scale, masks, bias, sequence lengths and dropout as the
        forward. dQ, dK, dV have the dims, layout and dtype of Q, K, V. Needs cuDNN 9.17 (9.21 for
        masks and bias, 9.28 for dropout).
        """
        op_name, label = self._begin_op("sdpa_backward", name)
        tensors = {
            "q": q,
            "k": k,
            "v": v,
            "o": o,
            "do": do,
            "stats": stats,
            "bias": bias,
            "seq_len_q": seq_len_q,
            "seq_len_kv": seq_len_kv,
            "seed": seed,
            "offset": offset,
        }

        def check(s: dict[str, rules.TensorSpec]) -> rules.SdpaShapes:
            if "stats" not in s:
                raise rules.RuleError("stats (the forward's return_stats output) is required")
            return rules.check_sdpa_backward(
                s["q"],
                s["k"],
                s["v"],
                s["o"],
                s["do"],
                stats=s["stats"],
                scale=scale,
                causal=causal,
                sliding_window=sliding_window,
                bias=s.get("bias"),
                seq_len_q=s.get("seq_len_q"),
                seq_len_kv=s.get("seq_len_kv"),
                dropout=dropout,
                seed=s.get("seed"),
                offset=s.get("offset"),
            )

        inputs, attrs, _ = self._attention_common(
            label,
            op_name,
            tensors,
            scale=scale,
            causal=causal,
            sliding_window=sliding_window,
            dropout=dropout,
            backward=True,
            check=check,
        )
        outputs = {}
        for role, src in (("dq", "q"), ("dk", "k"), ("dv", "v")):
            t = inputs[src]
            outputs[role] = self._output(
                label, op_name, role, t.dims, t, out=None, out_dtype=t.dtype, strides=t.strides
            )
        self._add_op("sdpa_backward", op_name, inputs, outputs, attrs)
        return outputs["dq"], outputs["dk"], outputs["dv"]
