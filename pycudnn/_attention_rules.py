"""What cuDNN's attention (SDPA) and normalisation operations accept, checked in Python first.

Pure Python, no cuDNN: the graph layer calls these rules before it records an operation, so a
wrong rank, head count, dtype or layout is reported with the argument and the rule instead of a
``CUDNN_STATUS_BAD_PARAM`` from ``cudnnBackendFinalize``. Each function takes :class:`TensorSpec`
values (name, dims, strides, dtype name) and returns the dims and strides of the outputs.

Attention tensors are ``[batch, heads, sequence, head_dim]`` in logical order, as in cuDNN's
``OPERATION_SDPA_FWD_DESCRIPTOR`` and PyTorch's ``scaled_dot_product_attention``; the memory layout
is the strides: ``bshd`` (sequence-major, what a ``[b, s, h, d]`` projection writes) or ``bhsd``.

The cuDNN versions below come from the headers' ``@since`` and from NVIDIA's cudnn-frontend, which
gates each feature of the unified SDPA node on the backend version (``sdpa_support_surface.h``).
Facts measured with cuDNN 9.28 and the H100 device properties (deviceless plans, no GPU):

* SDPA forward and backward plan for fp16 and bf16, ``bshd`` and ``bhsd``, grouped-query and
  multi-query heads, odd sequence lengths, head dims 64 and 128; fp32 gets no engine; fp8 takes
  six descale/scale tensors (``Graph.sdpa_fp8``, :mod:`pycudnn.opgraph.attention_fp8`).
* Layer, RMS, batch (training) and instance norms, forward and backward, plan; batch norm in
  *inference* phase gets no engine from any heuristics mode (``matcher_casted == nullptr``), so the
  graph builds it from pointwise operations instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from _nvbind.ffi import UnsupportedByLibraryError
from _nvbind.strides import packed_strides_like

__all__ = [
    "ATTENTION_DTYPES",
    "INT32_MAX",
    "NORM_DTYPES",
    "NORM_PARAM_DTYPES",
    "VERSIONS",
    "WHY",
    "RuleError",
    "TensorSpec",
    "attention_layout",
    "check_norm_backward",
    "check_norm_forward",
    "check_norm_scalar",
    "check_sdpa",
    "check_sdpa_backward",
    "check_stats_strides",
    "norm_shapes",
    "require_version",
    "sdpa_features",
    "version_text",
]


INT32_MAX = 2**31 - 1


class RuleError(ValueError):
    """An argument breaks one of the rules of an attention or normalisation operation."""


class TensorSpec(NamedTuple):
    """What the rules need to know about a tensor: its name, dims, strides and dtype name."""

    name: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str  # numpy-style name: "float16", "bfloat16", "float32", "int32", "int64", ...


#: Element types of Q, K, V, O (and their gradients) that the SDPA operations plan for.
ATTENTION_DTYPES = ("float16", "bfloat16")
#: Element types of a normalisation's X and Y.
NORM_DTYPES = ("float16", "bfloat16", "float32")
#: Element types of scale and bias (statistics are always float32).
NORM_PARAM_DTYPES = ("float16", "bfloat16", "float32")

#: The cuDNN version (``major*10000 + minor*100 + patch``) each feature needs.
VERSIONS: dict[str, int] = {
    "sdpa": 91301,  # OPERATION_SDPA_FWD_DESCRIPTOR; the frontend needs 9.13.1 for its unified node
    "sdpa padding (seq_len_q/seq_len_kv)": 91500,
    "sdpa paged K/V caches": 91500,  # SDPA_FWD_PAGE_TABLE_KDESC/VDESC
    "sdpa score modifiers (causal, sliding_window, bias)": 92100,  # SDPA_FWD_SUBGRAPH
    "sdpa dropout": 92200,  # attributes since 9.21; the frontend enables dropout from 9.22
    # OPERATION_SDPA_BWD_DESCRIPTOR is declared since 9.17, but 9.19 cannot finalize an operation
    # graph holding one (see WHY); 9.28 is the oldest release measured to build and plan it
    "sdpa_backward": 92800,
    "sdpa_backward score modifiers (causal, sliding_window, bias)": 92100,
    "sdpa_backward dropout": 92800,  # SDPA_BWD_DROPOUT_* attributes
    "norm": 90000,  # OPERATION_NORM_FORWARD/BACKWARD_DESCRIPTOR
    # The composite graph (matmul, pointwise, reduction, RNG, reshape: cuDNN 9.0's operations);
    # deviceless plans for the H100 measured on 9.10, 9.27 and 9.28
    "sdpa composite": 90000,
    # OPERATION_PAGED_CACHE_LOAD is declared since 9.4; the frontend builds it from 9.5
    "sdpa composite paged K/V caches": 90500,
    # the sink as OPERATION_SOFTMAX's SINK_DESC, given as SDPA_FWD_SOFTMAX_DESC (9.21); the
    # frontend refuses a sink before 9.13 in either lowering
    "sdpa sink_token": 92100,
    "sdpa_backward sink_token": 92800,  # SDPA_BWD_SINK_DESC (9.21) in the unified backward
    "sdpa composite sink_token": 91300,
    # OPERATION_SOFTMAX's MAX_DESC/SUM_EXP_DESC given as SDPA_FWD_SOFTMAX_DESC (the frontend's gate)
    "sdpa score_max/score_sum_exp": 92100,
    # OPERATION_SOFTMAX_STATS_LOG2; the frontend refuses base-2 stats before 9.27 in either lowering
    "sdpa stats_use_log2": 92700,
    "sdpa composite stats_use_log2": 92700,
    "sdpa block_mask": 91400,  # SDPA_FWD_BLOCK_MASK_DESC
    "sdpa fp8": 92500,  # SDPA_FWD_DESCALE_*/SCALE_*/AMAX_* (per-tensor FP8 in the unified op)
    # the backward reads a non-ragged stats input at packed [b, h_q, s_q, 1] offsets whatever its
    # strides before 9.26 (the frontend's CompositeSDPABackwardNode refuses other strides there)
    "sdpa_backward stats strides": 92600,
}


#: Why a feature needs a newer cuDNN than the headers' ``@since`` says (added to the refusal).
WHY: dict[str, str] = {
    "sdpa_backward": (
        "OPERATION_SDPA_BWD is declared since 9.17.0, but cuDNN 9.19 refuses every operation graph "
        "holding one (CUDNN_STATUS_BAD_PARAM, outputGraph.buildDAG(), whatever the shapes, "
        "layout, dtype or optional inputs; measured); 9.27 plans it for Blackwell only, 9.28 "
        "builds and plans it for the others, 9.20 to 9.26 are not measured"
    ),
}


def version_text(v: int) -> str:
    """``92100`` -> ``"9.21.0"``."""
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def require_version(operation: str, feature: str, loaded: int) -> None:
    """Raise :class:`UnsupportedByLibraryError` when ``loaded`` is older than ``feature`` needs."""
    needed = VERSIONS[feature]
    if loaded < needed:
        raise UnsupportedByLibraryError(
            f"{operation}: {feature} needs cuDNN {version_text(needed)} or newer; the loaded "
            f"cuDNN is {version_text(loaded)}" + (f" ({WHY[feature]})" if feature in WHY else "")
        )


def _dims(dims: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _positive_of(
    t: TensorSpec, prefix: Callable[[], str], dtypes: tuple[str, ...], refusal: Callable[[], str]
) -> None:
    """Every dim of ``t`` at least 1 and its dtype one of ``dtypes`` (else ``refusal()``); the
    texts are callables, made only for a refusal (every tensor of every SDPA and norm passes
    here while its graph is described)."""
    if min(t.dims, default=1) < 1:
        raise RuleError(f"{prefix()}: dims must be positive, got {_dims(t.dims)}")
    if t.dtype not in dtypes:
        raise RuleError(f"{prefix()}: {refusal()}")


# --------------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------------


def attention_layout(t: TensorSpec) -> str:
    """The memory order of a ``[b, h, s, d]`` tensor's axes, outermost first (``"bshd"``,
    ``"bhsd"``, ``"sbhd"``, ...): any strides with the head dim contiguous and no two elements
    at one address, as cuDNN's SDPA takes them (packed QKV buffers ``bs3hd`` and ``sbh3d``
    included: Q, K and V are strided views of one buffer); strides of extent-1 dims do not
    matter.
    """
    layout, problem = _layout(tuple(t.dims), tuple(t.strides))
    if problem:
        raise RuleError(f"{t.name}: {problem}")
    return layout


@functools.lru_cache(maxsize=256)  # an SDPA asks for each of Q, K, V (and O, dO backward)
def _layout(dims: tuple[int, ...], strides: tuple[int, ...]) -> tuple[str, str]:
    """``(layout, "")`` of :func:`attention_layout`, or ``("", what is wrong)``."""
    (_, h, s, d), names = dims, "bhsd"
    shown = f"strides {_dims(strides)} for dims [b, h, s, d] = {_dims(dims)}"
    if d > 1 and strides[3] != 1:
        packed = f"bshd {_dims((s * h * d, d, h * d, 1))} or bhsd {_dims((h * s * d, s * d, d, 1))}"
        return "", f"{shown}: the head dim must be contiguous (stride 1), as in {packed}"
    if any(st < 1 for n, st in zip(dims, strides, strict=True) if n > 1):
        return "", f"strides {_dims(strides)} must be positive"
    # innermost first: each axis must step over the whole extent of the ones inside it
    order = sorted((i for i in range(3) if dims[i] > 1), key=lambda i: (strides[i], -i))
    span, inner = d, "d"
    for i in order:
        if strides[i] < span:
            step = f"dim {names[i]} (stride {strides[i]}) steps inside the {span} elements"
            return "", f"{shown} overlap: {step} of {inner}"
        span, inner = strides[i] * dims[i], names[i] + inner
    return "".join(names[i] for i in range(3) if i not in order) + inner, ""


def _attention_tensor(t: TensorSpec, what: str) -> None:
    if len(t.dims) != 4:
        raise RuleError(
            f"{what} '{t.name}': attention tensors are rank 4 [batch, heads, sequence, head_dim], "
            f"got dims {_dims(t.dims)}"
        )
    _positive_of(
        t,
        lambda: f"{what} '{t.name}'",
        ATTENTION_DTYPES,
        lambda: (
            f"SDPA takes {' or '.join(ATTENTION_DTYPES)}, not {t.dtype} "
            "(cuDNN has no fp32 attention engine; fp8 attention is sdpa_fp8, with its descale tensors)"
        ),
    )
    attention_layout(t)


def _check_seq_len(t: TensorSpec | None, batch: int, what: str) -> None:
    if t is None:
        return
    if t.dtype != "int32":
        raise RuleError(f"{what} '{t.name}': sequence lengths are int32, not {t.dtype}")
    if tuple(t.dims) != (batch, 1, 1, 1):
        raise RuleError(
            f"{what} '{t.name}': sequence lengths have dims [batch, 1, 1, 1] = "
            f"{_dims((batch, 1, 1, 1))}, got {_dims(t.dims)}"
        )


def _check_rng(t: TensorSpec | None, what: str) -> None:
    if t is None:
        raise RuleError(f"dropout needs a {what} tensor (int64, dims [1, 1, 1, 1])")
    if t.dtype != "int64" or tuple(t.dims) != (1, 1, 1, 1):
        raise RuleError(
            f"{what} '{t.name}': the dropout {what} is one int64 with dims [1, 1, 1, 1], got "
            f"{t.dtype} {_dims(t.dims)}"
        )


def sdpa_features(
    *,
    backward: bool,
    padding: bool,
    masks: bool = False,
    dropout: float = 0.0,
    causal: bool = False,
    sliding_window: int | None = None,
    bias: bool = False,
    paged: bool = False,
) -> list[str]:
    """The :data:`VERSIONS` keys the unified SDPA operation with these options needs (``masks``:
    any band mask or a bias; ``causal``, ``sliding_window`` and ``bias`` say the same)."""
    op = "sdpa_backward" if backward else "sdpa"
    out = [op]
    if paged:  # before padding, which it implies: the refusal names the feature asked for
        out.append("sdpa paged K/V caches")
    if padding:
        out.append("sdpa padding (seq_len_q/seq_len_kv)")
    if masks or causal or sliding_window is not None or bias:
        out.append(f"{op} score modifiers (causal, sliding_window, bias)")
    if dropout:
        out.append(f"{op} dropout")
    return out


class SdpaShapes(NamedTuple):
    """Dims and strides of the outputs of an SDPA forward."""

    o_dims: tuple[int, ...]
    o_strides: tuple[int, ...]
    stats_dims: tuple[int, ...]
    stats_strides: tuple[int, ...]
    scores_dims: tuple[int, ...]  # [b, h_q, s_q, s_kv]: the score matrix the masks act on


def check_sdpa(
    tensors: Mapping[str, TensorSpec], *, dropout: float = 0.0, return_stats: bool = False
) -> SdpaShapes:
    """Check an SDPA forward's tensors, given by role (``q``, ``k``, ``v`` and the optional
    ``bias``, ``seq_len_q``, ``seq_len_kv``, ``seed``, ``offset``); return its output shapes.

    Rules: Q, K, V rank 4 ``[b, h, s, d]``, fp16/bf16, all the same dtype, ``bshd`` or ``bhsd``
    layout; K and V share batch, heads and sequence; Q's heads are a multiple of K's (grouped-query,
    or multi-query with one K/V head); Q and K share the head dim; the output has Q's dims with V's
    head dim. A bias broadcasts to ``[b, h_q, s_q, s_kv]``; sequence lengths are int32
    ``[b, 1, 1, 1]`` and come as a pair. (The scale and the masks are checked where the graph
    translates its keywords, :mod:`pycudnn.opgraph.attention_args`.)
    """
    q, k, v = tensors["q"], tensors["k"], tensors["v"]
    bias, seq_len_q, seq_len_kv = (tensors.get(r) for r in ("bias", "seq_len_q", "seq_len_kv"))
    seed, offset = tensors.get("seed"), tensors.get("offset")
    for t, what in ((q, "q"), (k, "k"), (v, "v")):
        _attention_tensor(t, what)
    if not (q.dtype == k.dtype == v.dtype):
        raise RuleError(
            f"q, k and v must share one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}"
        )
    bq, hq, sq, dq = q.dims
    bk, hk, skv, dk = k.dims
    bv, hv, sv, dv = v.dims
    if not (bq == bk == bv):
        raise RuleError(f"q, k and v must share the batch dim, got {bq}, {bk}, {bv}")
    if hk != hv:
        raise RuleError(f"k and v must have the same number of heads, got {hk} and {hv}")
    if hq % hk:
        raise RuleError(
            f"q's {hq} heads must be a multiple of k/v's {hk} heads (grouped-query attention)"
        )
    if skv != sv:
        raise RuleError(f"k and v must share the sequence length, got {skv} and {sv}")
    if dq != dk:
        raise RuleError(f"q and k must share the head dim, got {dq} and {dk}")
    if max(dq, dv) > 256 or dq % 8 or dv % 8:
        raise RuleError(
            f"head dims must be multiples of 8 and at most 256 (cuDNN's flash attention), got "
            f"q/k {dq} and v {dv}"
        )
    scores = (bq, hq, sq, skv)
    if bias is not None:
        if len(bias.dims) != 4 or any(
            d not in (1, s) for d, s in zip(bias.dims, scores, strict=True)
        ):
            raise RuleError(
                f"bias '{bias.name}': dims {_dims(bias.dims)} must broadcast to the scores "
                f"[b, h_q, s_q, s_kv] = {_dims(scores)} (each dim 1 or equal)"
            )
        if tuple(bias.dims[2:]) != (sq, skv):
            raise RuleError(
                f"bias '{bias.name}': the last two dims must be [s_q, s_kv] = "
                f"{_dims((sq, skv))}, got {_dims(bias.dims)}"
            )
        if bias.dtype not in (*ATTENTION_DTYPES, "float32"):
            raise RuleError(f"bias '{bias.name}': dtype {bias.dtype} is not a float type")
    if (seq_len_q is None) != (seq_len_kv is None):
        raise RuleError("seq_len_q and seq_len_kv come together (cuDNN's padding mask needs both)")
    _check_seq_len(seq_len_q, bq, "seq_len_q")
    _check_seq_len(seq_len_kv, bq, "seq_len_kv")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
        raise RuleError(f"dropout must be a probability, not {dropout!r}")
    if not 0.0 <= dropout < 1.0:
        raise RuleError(f"dropout must be in [0, 1), got {dropout}")
    if dropout:
        _check_rng(seed, "seed")
        _check_rng(offset, "offset")
    elif seed is not None or offset is not None:
        raise RuleError("seed and offset are dropout's: give dropout > 0 or leave them out")
    o_dims = (bq, hq, sq, dv)
    stats_dims = (bq, hq, sq, 1)
    return SdpaShapes(
        o_dims=o_dims,
        o_strides=packed_strides_like(o_dims, q.strides),
        stats_dims=stats_dims,
        stats_strides=packed_strides_like(stats_dims, (hq * sq, sq, 1, 1)),
        scores_dims=scores,
    )


def check_sdpa_backward(tensors: Mapping[str, TensorSpec], *, dropout: float = 0.0) -> SdpaShapes:
    """Check an SDPA backward's tensors by role: the forward's rules plus ``o``, ``do`` and the
    saved ``stats``."""
    shapes = check_sdpa(tensors, dropout=dropout)
    q, o, do = tensors["q"], tensors["o"], tensors["do"]
    stats = tensors.get("stats")
    if stats is None:
        raise RuleError("stats (the forward's generate_stats output) is required")
    for t, what in ((o, "o"), (do, "do")):
        _attention_tensor(t, what)
        if tuple(t.dims) != shapes.o_dims:
            raise RuleError(
                f"{what} '{t.name}': dims {_dims(t.dims)} must be the forward output's "
                f"[b, h_q, s_q, d_v] = {_dims(shapes.o_dims)}"
            )
        if t.dtype != q.dtype:
            raise RuleError(f"{what} '{t.name}': dtype {t.dtype} must be q's {q.dtype}")
    if tuple(stats.dims) != shapes.stats_dims or stats.dtype != "float32":
        raise RuleError(
            f"stats '{stats.name}': the forward's softmax statistics are float32 "
            f"{_dims(shapes.stats_dims)}, got {stats.dtype} {_dims(stats.dims)} "
            "(build the forward with return_stats=True)"
        )
    return shapes


def check_stats_strides(stats: TensorSpec, loaded: int) -> None:
    """Refuse a non-ragged stats input of the SDPA backward that is not packed ``[b, h_q, s_q, 1]``
    (strides ``[h_q * s_q, s_q, 1, 1]``) on a cuDNN older than 9.26, which reads it at those
    offsets whatever its strides, as NVIDIA's frontend refuses it (strides of extent-1 dims do not
    matter: they address the same elements)."""
    if loaded >= VERSIONS["sdpa_backward stats strides"]:
        return
    packed = packed_strides_like(stats.dims, (3, 2, 1, 0))
    if any(n > 1 and st != p for n, st, p in zip(stats.dims, stats.strides, packed, strict=True)):
        raise RuleError(
            f"stats '{stats.name}': strides {_dims(stats.strides)} are not the packed "
            f"[b, h_q, s_q, 1] strides {_dims(packed)}; cuDNN before "
            f"{version_text(VERSIONS['sdpa_backward stats strides'])} reads a stats input that is "
            f"not ragged at packed offsets whatever its strides (the loaded cuDNN is "
            f"{version_text(loaded)}): give the stats packed, as sdpa returns them, or ragged "
            "(set_ragged_offset before sdpa_backward)"
        )


# --------------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------------

NORM_MODES = ("layer", "rms", "batch", "instance")


class NormShapes(NamedTuple):
    """Dims of a normalisation's scale/bias and of its saved statistics."""

    param_dims: tuple[int, ...]
    stats_dims: tuple[int, ...]


def norm_shapes(
    mode: str, x_dims: Sequence[int], scale_dims: Sequence[int] | None = None
) -> NormShapes:
    """Scale/bias and statistics dims of ``mode`` for an input of ``x_dims`` (cuDNN's NORM rules).

    * layer, rms: normalise over the dims where the scale varies, as NVIDIA's frontend does
      (``x [B, S, E]`` with scale ``[1, 1, E]``: stats ``[B, S, 1]``); by default (no scale
      given, or one that is not of that form) over every dim but the first: scale
      ``[1, *x[1:]]``, stats ``[x0, 1, ...]``.
    * batch: per channel (dim 1) over batch and spatial dims; scale and stats ``[1, C, 1, ...]``.
    * instance: per sample and channel; scale ``[1, C, 1, ...]``, stats ``[N, C, 1, ...]``.
    """
    x = tuple(int(d) for d in x_dims)
    ones = (1,) * (len(x) - 2)
    if mode in ("layer", "rms"):
        legacy = NormShapes((1, *x[1:]), (x[0], 1, *ones))
        if scale_dims is None:
            return legacy
        sd = tuple(int(d) for d in scale_dims)
        varying = [i for i, (n, m) in enumerate(zip(sd, x, strict=False)) if n != 1]
        if (
            len(sd) != len(x)
            or sd[0] != 1
            or not varying
            or any(n not in (1, m) for n, m in zip(sd, x, strict=True))
        ):
            return legacy
        stats = tuple(1 if i in varying else m for i, m in enumerate(x))
        return NormShapes(sd, stats)
    if mode == "batch":
        return NormShapes((1, x[1], *ones), (1, x[1], *ones))
    if mode == "instance":
        return NormShapes((1, x[1], *ones), (x[0], x[1], *ones))
    raise RuleError(f"unknown normalisation {mode!r}; choose from {', '.join(NORM_MODES)}")


def _norm_x(mode: str, x: TensorSpec, what: str) -> None:
    low = 4 if mode in ("batch", "instance") else 3
    if not low <= len(x.dims) <= 8:
        shape = "[N, C, (D,) H, W]" if low == 4 else "[batch, features...]"
        raise RuleError(
            f"{mode}norm {what} '{x.name}': rank {len(x.dims)} is outside {low}..8 {shape}; "
            + (
                "give [rows, features, 1] for a 2-D input"
                if low == 3
                else "give [N, C, H, 1] for a 3-D input"
            )
        )
    _positive_of(
        x,
        lambda: f"{mode}norm {what} '{x.name}'",
        NORM_DTYPES,
        lambda: f"dtype {x.dtype} is not one of {', '.join(NORM_DTYPES)}",
    )


def _param(mode: str, t: TensorSpec | None, dims: tuple[int, ...], what: str) -> None:
    if t is None:
        return
    if tuple(t.dims) != dims:
        hint = ""
        if mode in ("layer", "rms"):
            hint = (
                " (or x's dims with 1 on the dims each row keeps, e.g. [1, 1, E] for x [B, S, E], "
                "normalising over the dims where the scale varies)"
            )
        raise RuleError(
            f"{mode}norm {what} '{t.name}': dims must be {_dims(dims)}{hint}, got {_dims(t.dims)}"
        )
    if t.dtype not in NORM_PARAM_DTYPES:
        raise RuleError(f"{mode}norm {what} '{t.name}': dtype {t.dtype} is not a float type")


def _stats(mode: str, t: TensorSpec | None, dims: tuple[int, ...], what: str) -> None:
    if t is None:
        return
    if tuple(t.dims) != dims or t.dtype != "float32":
        raise RuleError(
            f"{mode}norm {what} '{t.name}': statistics are float32 {_dims(dims)}, got "
            f"{t.dtype} {_dims(t.dims)}"
        )


def _as_double(value: int | float) -> float:
    """``value`` as a float; an int past a double's range (``10**400``) is infinite here, and
    refused as such, where ``math.isfinite`` raised ``OverflowError``."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _epsilon(mode: str, epsilon: object) -> None:
    if isinstance(epsilon, TensorSpec):
        _scalar_tensor(mode, epsilon, "epsilon")
        return
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise RuleError(f"{mode}norm epsilon must be a number, not {epsilon!r}")
    if not (math.isfinite(_as_double(epsilon)) and epsilon > 0):
        raise RuleError(f"{mode}norm epsilon must be a finite positive number, got {epsilon!r:.60}")


def _scalar_tensor(mode: str, t: TensorSpec, what: str) -> None:
    """An epsilon or momentum given per execution: one float32 value (all dims 1)."""
    if t.dtype != "float32" or any(d != 1 for d in t.dims):
        raise RuleError(
            f"{mode}norm {what} '{t.name}': a {what} tensor is one float32 value (every dim 1), "
            f"got {t.dtype} {_dims(t.dims)}"
        )


def check_norm_scalar(mode: str, what: str, value: object) -> None:
    """Refuse a NaN, infinite or out-of-range epsilon (> 0) or momentum (in [0, 1])."""
    if what == "epsilon":
        _epsilon(mode, value)
        return
    if isinstance(value, TensorSpec):
        _scalar_tensor(mode, value, what)
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RuleError(f"{mode}norm {what} must be a number, not {value!r}")
    if not (math.isfinite(_as_double(value)) and 0.0 <= value <= 1.0):
        raise RuleError(f"{mode}norm {what} must be in [0, 1], got {value!r:.60}")


def check_norm_forward(
    mode: str,
    x: TensorSpec,
    scale: TensorSpec,
    bias: TensorSpec | None,
    *,
    epsilon: float | TensorSpec,
    running_mean: TensorSpec | None = None,
    running_var: TensorSpec | None = None,
    momentum: float | TensorSpec | None = None,
) -> NormShapes:
    """Check a normalisation forward (``layer``, ``rms``, ``batch``, ``instance``)."""
    _norm_x(mode, x, "x")
    shapes = norm_shapes(mode, x.dims, scale.dims)
    _param(mode, scale, shapes.param_dims, "scale")
    _param(mode, bias, shapes.param_dims, "bias")
    if mode in ("layer", "batch", "instance") and bias is None:
        raise RuleError(f"{mode}norm needs a bias (cuDNN's {mode} norm applies scale and bias)")
    _epsilon(mode, epsilon)
    if (running_mean is None) != (running_var is None):
        raise RuleError(f"{mode}norm: running_mean and running_var come together")
    if running_mean is not None:
        if mode != "batch":
            raise RuleError(f"{mode}norm keeps no running statistics; only batchnorm does")
        _stats(mode, running_mean, shapes.stats_dims, "running_mean")
        _stats(mode, running_var, shapes.stats_dims, "running_var")
        check_norm_scalar(mode, "momentum", momentum)
    elif momentum is not None:
        raise RuleError("batchnorm momentum updates running statistics: give running_mean/var")
    return shapes


def check_norm_backward(
    mode: str,
    dy: TensorSpec,
    x: TensorSpec,
    *,
    scale: TensorSpec,
    mean: TensorSpec | None,
    inv_variance: TensorSpec,
) -> NormShapes:
    """Check a normalisation backward: dY like X, the forward's scale and saved statistics."""
    _norm_x(mode, x, "x")
    if tuple(dy.dims) != tuple(x.dims):
        raise RuleError(
            f"{mode}norm backward dy '{dy.name}': dims {_dims(dy.dims)} must be x's {_dims(x.dims)}"
        )
    if dy.dtype != x.dtype:
        raise RuleError(
            f"{mode}norm backward dy '{dy.name}': dtype {dy.dtype} must be x's {x.dtype}"
        )
    shapes = norm_shapes(mode, x.dims, scale.dims)
    _param(mode, scale, shapes.param_dims, "scale")
    if mode == "rms":
        if mean is not None:
            raise RuleError("rmsnorm backward takes no mean (RMS norm does not centre)")
    elif mean is None:
        raise RuleError(f"{mode}norm backward needs the forward's saved mean")
    _stats(mode, mean, shapes.stats_dims, "mean")
    _stats(mode, inv_variance, shapes.stats_dims, "inv_variance")
    return shapes
