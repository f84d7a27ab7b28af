"""NumPy references (float64) for scaled dot-product attention and normalisation forwards.

``sdpa``: ``O = softmax(scale * Q @ K^T + bias, masked) @ V`` with grouped K/V heads (each group
of ``h_q / h_kv`` query heads reads one K/V head), a causal mask (top-left aligned: key ``j`` is
seen by query ``i`` when ``j <= i``) or a sliding window of ``w`` keys ending at the query
(``i - w < j <= i``), and ``stats``, the natural log-sum-exp of each masked score row (base 2
with ``stats_use_log2``; ``max`` and ``sum_exp``, the row maximum and ``sum exp(S - max)``, when
asked). Sequence lengths (padding), ragged (THD) tensors and paged K/V caches:
:mod:`.reference_attention_varlen` runs these references on each batch entry's sequences. Philox
dropout has no reference here: a graph with it is reported as skipped. Also: a sink (a per-head
logit in each row's maximum and denominator, and ``dSink`` in
the backward), a block mask (a zero drops a 128 x 128 tile), the frontend's mask-and-scale
dropout (``P * mask * scale``), and FP8 (``sdpa_fp8``: Q, K, V dequantised by their descale
factors, ``O = scale_o * scale_s * descale_s * P @ V``, ``amax_s`` the largest probability and
``amax_o`` the largest ``|O|`` before ``scale_o``; the rounding of P to fp8 is left to the
tolerance), and its backward (``sdpa_fp8_backward``: the dequantised gradients, ``amax_dQ/dK/dV``
before their scales and ``amax_dP`` the largest ``|dS|``).

``norm_forward``: layer and RMS norms over every dim but the first, instance norm per sample and
channel, batch norm per channel; biased variance; ``inv_variance = 1/sqrt(var + epsilon)``;
``y = (x - mean) * inv_variance * scale + bias`` (RMS: ``x * inv_rms * scale (+ bias)``), with
the saved mean and inverse variance of a training forward. Running statistics have no reference
here (which variance estimate cuDNN blends in is not established).

``sdpa_backward`` and ``norm_backward``: the exact gradients of ``sum(out * d_out)`` of the
matching forward. Their saved inputs (O and stats; mean and inverse standard deviation) must be
what a forward would have produced, so :func:`consistent_inputs` computes them from the other
inputs when verification generates inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .common import NoReferenceError
from .reference_attention_varlen import is_varlen, sdpa_varlen

if TYPE_CHECKING:  # pragma: no cover
    from ..opgraph import Operation

__all__ = [
    "alibi_slopes",
    "consistent_inputs",
    "index_inputs",
    "norm_backward",
    "norm_forward",
    "sdpa_backward",
    "sdpa_forward",
]


def _no_reference(op: Any, why: str) -> Exception:
    return NoReferenceError(f"{op.label}: {why}")


def _refuse_peer_stats(op: Any) -> None:
    """A batch norm with ``peer_stats`` combines the statistics of the node's GPUs, which one
    GPU's tensors do not hold; its buffers carry the exchange's state, so ``verify`` (which
    fills inputs with random values) must not run it either."""
    if any(role.startswith("peer_stats_") for role in op.inputs):
        raise _no_reference(op, "peer_stats: statistics of other GPUs have no NumPy reference")


def sdpa_forward(op: Any, vals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{"o": ..., "stats": ...}`` of an ``sdpa`` operation (stats only if the op has it)."""
    if is_varlen(op):  # padding, ragged, paged: the dense reference per batch entry
        return sdpa_varlen(op, vals, sdpa_forward)
    a = op.attrs
    for role in ("seq_len_q", "seq_len_kv", "seed", "offset"):
        if role in op.inputs:
            raise _no_reference(op, f"no NumPy reference for sdpa with {role}")
    if a.get("dropout"):
        raise _no_reference(op, "dropout is random: no reference")
    _, v, scores, _ = _masked_scores(op, vals)
    p, stats = _softmax(vals, scores)
    if op.attrs.get("dropout_mask"):  # the frontend's dropout=(mask, scale): deterministic
        p = p * vals["dropout_mask"] * vals["dropout_scale"]
    out = {"o": np.matmul(p, v)}
    if "descale_q" in vals:  # FP8: the probabilities' scale pair, the amax outputs, scale_o
        out["o"] = out["o"] * vals["scale_s"] * vals["descale_s"]
        out["amax_s"] = np.max(np.abs(p)).reshape(1, 1, 1, 1)
        out["amax_o"] = np.max(np.abs(out["o"])).reshape(1, 1, 1, 1)
        out["o"] = out["o"] * vals["scale_o"]
    if "stats" in op.outputs:
        # stats_use_log2: the frontend's base-2 stats, (max + ln sum) * log2(e)
        out["stats"] = stats / np.log(2.0) if a.get("stats_log2") else stats
    if "max" in op.outputs or "sum_exp" in op.outputs:
        top, _, total = _row_max_sum(vals, scores)
        out.update({r: x for r, x in (("max", top), ("sum_exp", total)) if r in op.outputs})
    return out


def _row_max_sum(vals: Mapping[str, np.ndarray], scores: np.ndarray) -> tuple[Any, Any, Any]:
    """Each masked score row's maximum, the exponentials ``exp(S - max)`` and their sum; a sink
    (one logit per head) joins the maximum and the sum without a value row."""
    top = scores.max(axis=-1, keepdims=True)
    sink = vals.get("sink")
    if sink is not None:
        top = np.maximum(top, sink)
    e = np.exp(scores - top)
    total = e.sum(axis=-1, keepdims=True)
    if sink is not None:
        total = total + np.exp(sink - top)
    return top, e, total


def _softmax(vals: Mapping[str, np.ndarray], scores: np.ndarray) -> tuple[Any, Any]:
    """The probabilities and stats (log-sum-exp) of masked scores."""
    top, e, total = _row_max_sum(vals, scores)
    return e / total, top + np.log(total)


def _norm_axes(mode: str, ndim: int, op: Any = None) -> tuple[int, ...]:
    if op is not None and op.attrs.get("norm_axes"):
        return tuple(op.attrs["norm_axes"])  # the dims where the scale varies (layer, rms)
    if mode in ("layer", "rms"):
        return tuple(range(1, ndim))
    if mode == "batch":
        return (0, *range(2, ndim))
    return tuple(range(2, ndim))  # instance


def norm_forward(op: Any, vals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``y`` (and ``mean``, ``inv_variance`` in training) of a ``norm_forward`` operation."""
    a = op.attrs
    _refuse_peer_stats(op)
    if "running_mean" in op.inputs or "running_var" in op.inputs:
        raise _no_reference(op, "running statistics have no NumPy reference here")
    x = vals["x"]
    if "mean" in op.inputs:  # batch norm in inference phase: the statistics are given
        y = (x - vals["mean"]) * vals["inv_variance"] * vals["scale"] + vals["bias"]
        return {"y": y}
    axes = _norm_axes(a["mode"], x.ndim, op)
    # a per-execution epsilon (a tensor) has no value in the settings
    eps = (
        float(a["epsilon"]) if a.get("epsilon") is not None else float(np.ravel(vals["epsilon"])[0])
    )
    if a["mode"] == "rms":
        mean = np.zeros_like(x.mean(axis=axes, keepdims=True))
        var = np.mean(x * x, axis=axes, keepdims=True)
    else:
        mean = x.mean(axis=axes, keepdims=True)
        var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    # zero_centered_gamma: the graph's pointwise ADD in front of the norm already made the scale
    # input gamma = stored + 1 (opgraph.normalization), so the scale is read as given
    y = (x - mean) * inv * vals["scale"]
    if "bias" in vals:
        y = y + vals["bias"]
    out: dict[str, Any] = {"y": y}
    if "mean" in op.outputs:
        out["mean"] = mean
    if "inv_variance" in op.outputs:
        out["inv_variance"] = inv
    return out


def _masked_scores(op: Any, vals: Mapping[str, np.ndarray]) -> tuple[Any, Any, Any, int]:
    """K and V expanded to Q's heads, the masked scores (``-inf`` where masked), the group size."""
    a = op.attrs
    q, k, v = vals["q"], vals["k"], vals["v"]
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    # a per-execution scale (a tensor) has no value in the settings
    scale = a["scale"] if a.get("scale") is not None else float(np.ravel(vals["scale"])[0])
    if "descale_q" in vals:  # FP8: dequantised operands
        q, k, v = q * vals["descale_q"], k * vals["descale_k"], v * vals["descale_v"]
    scores = scale * np.matmul(q, np.swapaxes(k, -1, -2))
    if "bias" in vals:
        scores = scores + vals["bias"]
    sq, skv = scores.shape[-2:]
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    if a.get("alibi"):
        slopes = np.asarray(alibi_slopes(scores.shape[1])).reshape(1, -1, 1, 1)
        scores = scores + slopes * (j - i)
    keep = np.ones((sq, skv), dtype=bool)
    # the diagonal band, bottom-right shift folded into the bounds (attention._Masks)
    if a.get("right_bound") is not None:
        keep &= j <= i + int(a["right_bound"])
    elif a.get("causal"):
        keep &= j <= i
    if a.get("left_bound") is not None:
        keep &= j > i - int(a["left_bound"])
    elif a.get("sliding_window") is not None:
        keep &= j > i - int(a["sliding_window"])
    if "block_mask" in vals:  # one element per 128 x 128 tile of the scores; 0 drops it
        tiles = np.repeat(np.repeat(vals["block_mask"] != 0, 128, axis=2), 128, axis=3)
        keep = keep & tiles[:, :, :sq, :skv]
    return k, v, np.where(keep, scores, -np.inf), group


def alibi_slopes(heads: int) -> list[float]:
    """ALiBi's per-head slopes as cudnn-frontend's ``get_alibi_slope``: ``2 ** (-8 a / n)``,
    ``n`` the largest power of two <= ``heads``, ``a`` = 1..n, then 0.5, 1.5, ... for the rest."""
    n = 1 << (heads.bit_length() - 1)
    a = [i + 1.0 for i in range(n)] + [(i + 1) * 0.5 for i in range(0, 2 * (heads - n), 2)]
    return [2.0 ** (-8.0 * x / n) for x in a]


def _fold(grad: np.ndarray, group: int) -> np.ndarray:
    """Gradients of the expanded K/V heads summed back onto the K/V heads they came from."""
    b, h, *rest = grad.shape
    out: np.ndarray = grad.reshape(b, h // group, group, *rest).sum(axis=2)
    return out


def sdpa_backward(op: Operation, vals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{"dq", "dk", "dv"}`` of an ``sdpa_backward`` operation: the exact gradients of
    ``sum(O * dO)`` for the forward of the same settings (the probabilities are recomputed from
    Q and K; ``O`` enters through ``rowsum(dO * O)``, as in flash attention's backward)."""
    if is_varlen(op):  # padding, ragged, paged: the dense reference per batch entry
        return sdpa_varlen(op, vals, sdpa_backward)
    for role in ("seq_len_q", "seq_len_kv", "seed", "offset"):
        if role in op.inputs:
            raise _no_reference(op, f"no NumPy reference for sdpa_backward with {role}")
    if op.attrs.get("dropout"):
        raise _no_reference(op, "dropout is random: no reference")
    k, v, scores, group = _masked_scores(op, vals)
    if "descale_do" in vals:
        return _fp8_backward(op, vals, scores, (k, v), group)
    p, _ = _softmax(vals, scores)
    do, o = vals["do"], vals["o"]
    # the frontend's (mask, scale, scale_inv) dropout: the forward's P * mask * scale (scale_inv
    # is the 1/scale the composite graph's rowsum term takes; given as the caller's tensor)
    keep = vals["dropout_mask"] * vals["dropout_scale"] if op.attrs.get("dropout_mask") else 1.0
    dv = np.matmul(np.swapaxes(p * keep, -1, -2), do)
    dp = np.matmul(do, np.swapaxes(v, -1, -2)) * keep
    scale = _scale_of(op, vals)
    d_scores = p * (dp - np.sum(do * o, axis=-1, keepdims=True))  # the gradient of the bias
    ds = d_scores * scale
    dq = np.matmul(ds, k)
    dk = np.matmul(np.swapaxes(ds, -1, -2), vals["q"])
    out = {"dq": dq, "dk": _fold(dk, group), "dv": _fold(dv, group)}
    if "dbias" in op.outputs:
        bias_dims = op.outputs["dbias"].dims
        axes = tuple(i for i, n in enumerate(bias_dims) if n == 1 and d_scores.shape[i] != 1)
        out["dbias"] = d_scores.sum(axis=axes, keepdims=True)
    if "dsink" in op.outputs:
        out["dsink"] = _dsink(vals, scores, do, o)
    return out


def _dsink(vals: Mapping[str, np.ndarray], scores: Any, do: Any, o: Any) -> Any:
    """d/dsink of sum(O * dO): every probability of the row gives the sink its share,
    -P_sink * rowsum(dO * O), P_sink = exp(sink - stats), summed over batch and queries."""
    _, stats = _softmax(vals, scores)
    per_row = -np.exp(vals["sink"] - stats) * np.sum(do * o, axis=-1, keepdims=True)
    return per_row.sum(axis=(0, 2), keepdims=True)


def _scale_of(op: Any, vals: Mapping[str, np.ndarray]) -> float:
    scale = op.attrs["scale"]
    return float(np.ravel(vals["scale"])[0]) if scale is None else float(scale)


def _fp8_backward(
    op: Any, vals: Mapping[str, np.ndarray], scores: Any, kv: tuple[Any, Any], group: int
) -> dict[str, np.ndarray]:
    """``sdpa_fp8_backward``: the gradients of the dequantised attention, each output its
    float32 absolute maximum (``amax_*``) before its scale factor; P and dS enter their products
    through their fp8 scale pairs (``scale_s * descale_s``, ``scale_dP * descale_dP``; the
    rounding to fp8 is left to the tolerance), as cuDNN's fused FP8 backward computes them."""
    k, v = kv
    p, _ = _softmax(vals, scores)
    do, o = vals["do"] * vals["descale_do"], vals["o"] * vals["descale_o"]
    q = vals["q"] * vals["descale_q"]
    dv = np.matmul(np.swapaxes(p, -1, -2), do) * vals["scale_s"] * vals["descale_s"]
    dp = np.matmul(do, np.swapaxes(v, -1, -2))
    ds = p * (dp - np.sum(do * o, axis=-1, keepdims=True)) * _scale_of(op, vals)
    out: dict[str, np.ndarray] = {"amax_dp": np.max(np.abs(ds)).reshape(1, 1, 1, 1)}
    ds = ds * vals["scale_dp"] * vals["descale_dp"]
    grads = {
        "dq": np.matmul(ds, k),
        "dk": _fold(np.matmul(np.swapaxes(ds, -1, -2), q), group),
        "dv": _fold(dv, group),
    }
    for role, g in grads.items():
        out["amax_" + role] = np.max(np.abs(g)).reshape(1, 1, 1, 1)
        out[role] = g * vals["scale_" + role]
    if "dsink" in op.outputs:
        out["dsink"] = _dsink(vals, scores, do, o)
    return out


def norm_backward(op: Operation, vals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{"dx", "dscale", "dbias"}`` of a ``norm_backward`` operation, from the saved mean and
    inverse standard deviation: the exact gradients of the forward's ``sum(y * dy)``."""
    _refuse_peer_stats(op)
    mode = op.attrs["mode"]
    # zero_centered_gamma: the scale input is already gamma = stored + 1 (see norm_forward)
    x, dy, scale = vals["x"], vals["dy"], vals["scale"]
    axes = _norm_axes(mode, x.ndim, op)
    mean = vals["mean"] if "mean" in vals else np.zeros(1)
    inv = vals["inv_variance"]
    xhat = (x - mean) * inv
    g = dy * scale
    n = int(np.prod([x.shape[i] for i in axes]))  # elements per normalised group
    mean_g = np.sum(g, axis=axes, keepdims=True) / n
    mean_gx = np.sum(g * xhat, axis=axes, keepdims=True) / n
    # RMS norm has no mean, so no mean term in its gradient.
    centred = g - xhat * mean_gx if mode == "rms" else g - mean_g - xhat * mean_gx
    dx = inv * centred
    param_axes = tuple(i for i in range(x.ndim) if scale.shape[i] == 1 and x.shape[i] != 1)
    out = {"dx": dx, "dscale": np.sum(dy * xhat, axis=param_axes, keepdims=True)}
    if "dbias" in op.outputs:
        out["dbias"] = np.sum(dy, axis=param_axes, keepdims=True)
    return out


def consistent_inputs(op: Operation, vals: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """For a backward operation, the saved forward values (O and stats; mean and inverse
    standard deviation) computed from its other inputs, so that the inputs are ones a forward
    could have produced, and an FP8 attention's quantisation factors as a training step picks
    them (by role; empty for other operations)."""
    if op.kind == "sdpa":
        index = index_inputs(op)
        if "descale_q" in op.inputs:  # FP8: quantisation factors a forward would be given
            return {**index, **_fp8_factors(op, {**vals, **index})}
        return index
    if op.kind == "sdpa_backward":
        index = index_inputs(op)
        given = {**vals, **index}  # the lengths, offsets and tables the GPU will read
        fp8 = "descale_do" in op.inputs
        if fp8:  # the factors a training step picks (O's scale pair included)
            given.update(_fp8_factors(op, given))
        fwd_vals = dict(given)
        if fp8:  # FP8: O as the forward stored it, O / descale_o
            one = np.ones((1, 1, 1, 1))
            fwd_vals.update(scale_s=one, descale_s=one, scale_o=1 / given["descale_o"])
        try:
            fwd = sdpa_forward(_Forward(op, {"stats"}), fwd_vals)
        except NoReferenceError:
            return index  # dropout: O and stats stay drawn (no reference)
        # past a sequence's length O and stats are not defined (NaN): drawn as 0 there
        saved = {r: np.nan_to_num(fwd[r], nan=0.0) for r in ("o", "stats")}
        if fp8:
            o = saved["o"].astype(op.inputs["o"].dtype).astype(np.float64)  # as stored
            return {**index, **saved, **_fp8_factors(op, given, saved_o=o)}
        return {**index, **saved}
    if op.kind == "norm_backward":
        eps = float(np.asarray(vals["epsilon"]).reshape(-1)[0]) if "epsilon" in vals else 1e-5
        fwd_op = _Forward(op, {"mean", "inv_variance"}, {"epsilon": eps, "mode": op.attrs["mode"]})
        # the statistics do not depend on the scale, which may be computed in the graph (the
        # ADD of a zero-centred gamma) and so have no generated values here
        fwd = norm_forward(fwd_op, {"scale": np.ones(1), **vals, "bias": np.zeros(1)})
        return {r: fwd[r] for r in ("mean", "inv_variance") if r in op.inputs}
    return {}


_FP8_MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}


def _fp8_max(t: Any) -> float:
    """The largest finite value of an fp8 tensor's type (448 for e4m3, 57344 for e5m2)."""
    return _FP8_MAX[np.dtype(t.dtype).name]


def _pow2_scale(amax: Any, t: Any) -> np.ndarray:
    """The power of two that brings ``amax`` closest below the largest value of ``t``'s type."""
    top = max(float(np.max(amax)), 1e-30)
    return np.full((1, 1, 1, 1), 2.0 ** np.floor(np.log2(_fp8_max(t) / top)))


def _fp8_factors(op: Any, vals: Mapping[str, np.ndarray], saved_o: Any = None) -> Any:
    """Quantisation factors of an FP8 attention as a training step picks them: the inputs are
    drawn in their fp8 types (descale 1), P is scaled by its type's maximum, and O (forward) or
    dS and the gradients (backward, once ``saved_o``, the stored O, is known) by the power of two
    that brings their amax below their type's maximum. Random factors put P, O or dS under the
    fp8 range, where no engine can be right. Factors the graph fixes (tensors with a value) are
    kept."""
    one = np.ones((1, 1, 1, 1))
    top_p = _fp8_max(op.inputs["q"])
    f = {r: one for r in op.inputs if r.startswith("descale_")}
    f.update(scale_s=one * top_p, descale_s=one / top_p)
    fixed = {r: vals[r] for r, t in op.inputs.items() if r in vals and t.value is not None}
    if op.kind == "sdpa":
        first = sdpa_forward(op, {**vals, **f, "scale_o": one, **fixed})
        f["scale_o"] = _pow2_scale(first["amax_o"], op.outputs["o"])
    elif saved_o is not None:
        f.update({r: one for r in op.inputs if r.startswith("scale_d")})
        first = sdpa_backward(op, {**vals, **f, **fixed, "o": saved_o})
        f["scale_dp"] = _pow2_scale(first["amax_dp"], op.inputs["q"])
        f["descale_dp"] = 1 / f["scale_dp"]
        for g in ("dq", "dk", "dv"):
            f["scale_" + g] = _pow2_scale(first["amax_" + g], op.outputs[g])
    return {r: x for r, x in f.items() if r in op.inputs and r not in fixed}


def index_inputs(op: Any) -> dict[str, np.ndarray]:
    """Valid index inputs of an SDPA, so that executing it on drawn inputs reads only its own
    memory: sequence lengths in ``1..s`` (batch entry ``i``: ``s - i``), page tables naming
    blocks of the container (entry ``i`` its own blocks, in order), and ragged offsets at the
    padded positions (``i * stride[0]``, the smallest among the tensors sharing the offsets)."""
    out: dict[str, np.ndarray] = {}
    b, _, s_q, s_kv = op.attrs["scores_dims"]
    batch = np.arange(b).reshape(b, 1, 1, 1)
    for role, s in (("seq_len_q", s_q), ("seq_len_kv", s_kv)):
        if role in op.inputs:
            out[role] = np.maximum(1, s - batch)
    for side in op.attrs.get("paged", ()):
        pages = op.inputs["page_table_" + side].dims[2]
        blocks = op.inputs[side].dims[0]
        out["page_table_" + side] = (batch * pages + np.arange(pages).reshape(1, 1, -1, 1)) % blocks
    tensors = {**op.inputs, **op.outputs}
    for role, offsets in op.inputs.items():
        if role.startswith("ragged_offset_"):
            step = min(
                tensors[r.removeprefix("ragged_offset_")].strides[0]
                for r, t in op.inputs.items()
                if r.startswith("ragged_offset_") and t is offsets
            )
            out[role] = np.arange(b + 1).reshape(b + 1, 1, 1, 1) * step
    return out


class _Forward:
    """The forward operation a backward one mirrors (settings shared, outputs as asked)."""

    def __init__(self, op: Operation, outputs: set[str], attrs: Mapping[str, Any] | None = None):
        self.label = op.label
        self.attrs = {**op.attrs, **(attrs or {})}
        self.inputs = {r: t for r, t in op.inputs.items() if r not in outputs}
        self.outputs = {r: op.inputs.get(r) for r in outputs}  # the backward reads them
