"""NumPy references (float64) for scaled dot-product attention and normalisation forwards.

``sdpa``: ``O = softmax(scale * Q @ K^T + bias, masked) @ V`` with grouped K/V heads (each group
of ``h_q / h_kv`` query heads reads one K/V head), a causal mask (top-left aligned: key ``j`` is
seen by query ``i`` when ``j <= i``) or a sliding window of ``w`` keys ending at the query
(``i - w < j <= i``), and ``stats``, the natural log-sum-exp of each masked score row. Sequence
lengths (padding) and dropout have no reference here: a graph with them is reported as skipped.

``norm_forward``: layer and RMS norms over every dim but the first, instance norm per sample and
channel, batch norm per channel; biased variance; ``inv_variance = 1/sqrt(var + epsilon)``;
``y = (x - mean) * inv_variance * scale + bias`` (RMS: ``x * inv_rms * scale (+ bias)``), with
the saved mean and inverse variance of a training forward. Running statistics have no reference
here (which variance estimate cuDNN blends in is not established).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .common import NoReferenceError

if TYPE_CHECKING:  # pragma: no cover
    from ..graph import Operation

__all__ = ["norm_forward", "sdpa_forward"]


def _no_reference(op: Operation, why: str) -> Exception:
    return NoReferenceError(f"{op.label}: {why}")


def sdpa_forward(op: Operation, vals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{"o": ..., "stats": ...}`` of an ``sdpa`` operation (stats only if the op has it)."""
    a = op.attrs
    for role in ("seq_len_q", "seq_len_kv", "seed", "offset"):
        if role in op.inputs:
            raise _no_reference(op, f"no NumPy reference for sdpa with {role}")
    if a.get("dropout"):
        raise _no_reference(op, "dropout is random: no reference")
    q, k, v = vals["q"], vals["k"], vals["v"]
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = a["scale"] * np.matmul(q, np.swapaxes(k, -1, -2))
    if "bias" in vals:
        scores = scores + vals["bias"]
    sq, skv = scores.shape[-2:]
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    keep = np.ones((sq, skv), dtype=bool)
    if a.get("causal"):
        keep &= j <= i
    window = a.get("sliding_window")
    if window is not None:
        keep &= j > i - int(window)
    scores = np.where(keep, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    out = {"o": np.matmul(e / total, v)}
    if "stats" in op.outputs:
        out["stats"] = top + np.log(total)
    return out


def _norm_axes(mode: str, ndim: int) -> tuple[int, ...]:
    if mode in ("layer", "rms"):
        return tuple(range(1, ndim))
    if mode == "batch":
        return (0, *range(2, ndim))
    return tuple(range(2, ndim))  # instance


def norm_forward(op: Operation, vals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``y`` (and ``mean``, ``inv_variance`` in training) of a ``norm_forward`` operation."""
    a = op.attrs
    if "running_mean" in op.inputs or "running_var" in op.inputs:
        raise _no_reference(op, "running statistics have no NumPy reference here")
    x = vals["x"]
    axes = _norm_axes(a["mode"], x.ndim)
    eps = float(a["epsilon"])
    if a["mode"] == "rms":
        mean = np.zeros_like(x.mean(axis=axes, keepdims=True))
        var = np.mean(x * x, axis=axes, keepdims=True)
    else:
        mean = x.mean(axis=axes, keepdims=True)
        var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    y = (x - mean) * inv * vals["scale"]
    if "bias" in vals:
        y = y + vals["bias"]
    out: dict[str, Any] = {"y": y}
    if "mean" in op.outputs:
        out["mean"] = mean
    if "inv_variance" in op.outputs:
        out["inv_variance"] = inv
    return out
