"""Attention sinks, block masks and the mask-and-scale dropout form: the checks of the tensors
:meth:`Graph.sdpa` and :meth:`Graph.sdpa_backward` take for them, in NVIDIA cudnn-frontend's
terms (``sink_token``, ``dSink_token``, ``block_mask``, ``dropout=(mask, scale)``).

* A **sink** is a learned logit per query head, float32 ``[1, h_q, 1, 1]``, that joins each
  score row's softmax denominator without a value row: ``P = exp(S - M) / (sum exp(S - M) +
  exp(sink - M))`` with ``M = max(max S, sink)``; the stats include it. The unified forward takes
  it on an ``OPERATION_SOFTMAX`` descriptor (``SOFTMAX_SINK_DESC``) given as the SDPA's
  ``SOFTMAX_DESC`` (cuDNN 9.21), the unified backward as ``SDPA_BWD_SINK_DESC`` /
  ``DSINK_DESC``; the composite graph adds the ``MAX``/``EXP``/``ADD`` pointwise operations the
  frontend's ``CompositeSoftmaxNode`` adds. ``dSink = -sum over b, s_q of exp(sink - stats) *
  rowsum(dO * O)``; the composite backward gives cuDNN the frontend's sequence without the minus
  sign, which cuDNN's engine applies (as the frontend notes).
* A **block mask** is int8 ``[b, h_q, ceil(s_q / 128), ceil(s_kv / 128)]``: a zero drops a
  128 x 128 tile of scores (``SDPA_FWD_BLOCK_MASK_DESC``, cuDNN 9.14, unified forward only: the
  composite graph and the backward have no such input, in cuDNN as in the frontend).
* **Score statistics** (the frontend's ``score_max`` and ``score_sum_exp``, C++
  ``set_logit_max``/``set_score_sum_exp``): float32 ``[b, h_q, s_q, 1]`` outputs, the row maximum
  ``M`` of the (masked) scores and ``sum exp(S - M)`` (the sink included, as above), and
  ``stats_use_log2`` (the stats as ``(M + ln sum) * log2(e)``). The unified forward writes them
  from its ``OPERATION_SOFTMAX`` descriptor (``SOFTMAX_MAX_DESC``/``SUM_EXP_DESC``, cuDNN 9.21;
  ``SOFTMAX_STATS_LOG2``, 9.27), the composite graph from its max and sum reductions.
* **Mask-and-scale dropout** (the composite graph only, as in the frontend): a float mask of the
  score dims (``[b, h_q, s_q, s_kv]``, 0 or 1) and a float32 ``[1, 1, 1, 1]`` scale (usually
  ``1 / (1 - p)``) given at execute, in place of the Philox seed and offset.
"""

from __future__ import annotations

from typing import Any

from .. import _attention_rules as rules
from .common import GraphError
from .tensors import Tensor

__all__ = [
    "BLOCK",
    "check_block_mask",
    "check_dropout_mask",
    "check_sink",
    "dropout_mask_arg",
    "dropout_mask_backward_arg",
    "score_outputs",
]

#: The tile of scores one block-mask element covers (cuDNN's SDPA_FWD_BLOCK_MASK_DESC).
BLOCK = 128


def _dtype(t: Tensor) -> str:
    return t.dtype.name if t.dtype is not None else "unresolved"


def check_sink(label: str, role: str, t: Tensor, h_q: int) -> None:
    """A sink (or its gradient): float32 ``[1, h_q, 1, 1]``, one logit per query head."""
    if t.dims != (1, h_q, 1, 1) or _dtype(t) != "float32":
        raise GraphError(
            f"{label}: {role} '{t.name}' is one float32 logit per query head, dims "
            f"[1, h_q, 1, 1] = [1, {h_q}, 1, 1]; got {_dtype(t)} {list(t.dims)}"
        )


def check_block_mask(label: str, t: Tensor, scores: tuple[int, ...]) -> None:
    """int8 ``[b, h_q, ceil(s_q / 128), ceil(s_kv / 128)]``."""
    b, h, s_q, s_kv = scores
    want = (b, h, -(-s_q // BLOCK), -(-s_kv // BLOCK))
    if t.dims != want or _dtype(t) != "int8":
        raise GraphError(
            f"{label}: block_mask '{t.name}' is int8 with one element per {BLOCK} x {BLOCK} tile "
            f"of the scores, dims [b, h_q, ceil(s_q / {BLOCK}), ceil(s_kv / {BLOCK})] = "
            f"{list(want)}; got {_dtype(t)} {list(t.dims)}"
        )


def dropout_mask_arg(label: str, dropout: Any) -> tuple[Any, Any] | None:
    """The frontend's ``dropout=(mask, scale)`` form, or None for any other ``dropout``."""
    if isinstance(dropout, tuple) and len(dropout) == 2:
        mask, scale = dropout
        if not (isinstance(mask, Tensor) and isinstance(scale, Tensor)):
            raise GraphError(
                f"{label}: dropout as a pair is the frontend's (mask, scale) of two tensors; "
                f"got ({type(mask).__name__}, {type(scale).__name__})"
            )
        return mask, scale
    return None


def dropout_mask_backward_arg(label: str, dropout: Any) -> tuple[Any, Any, Any] | None:
    """The frontend's backward form ``dropout=(mask, scale, scale_inv)`` (the forward's mask and
    scale, and ``1 / scale``), or None for any other ``dropout``; a pair is the forward's form."""
    if (
        isinstance(dropout, tuple)
        and len(dropout) == 2
        and all(isinstance(t, Tensor) for t in dropout)
    ):
        raise GraphError(
            f"{label}: the backward's mask-and-scale dropout is the frontend's "
            "(mask, scale, scale_inv): the forward's mask and scale, and 1/scale"
        )
    if isinstance(dropout, tuple) and len(dropout) == 3 and isinstance(dropout[0], Tensor):
        if not all(isinstance(t, Tensor) for t in dropout):
            names = ", ".join(type(t).__name__ for t in dropout)
            raise GraphError(
                f"{label}: dropout as (mask, scale, scale_inv) takes three tensors; got ({names})"
            )
        return dropout[0], dropout[1], dropout[2]
    return None


def check_dropout_mask(label: str, mask: Tensor, scale: Tensor, scores: tuple[int, ...]) -> None:
    """A float mask of the score dims and a float32 ``[1, 1, 1, 1]`` scale."""
    if mask.dims != tuple(scores) or _dtype(mask) not in (*rules.ATTENTION_DTYPES, "float32"):
        raise GraphError(
            f"{label}: the dropout mask '{mask.name}' is a float tensor of the scores' dims "
            f"[b, h_q, s_q, s_kv] = {list(scores)}; got {_dtype(mask)} {list(mask.dims)}"
        )
    if scale.dims != (1, 1, 1, 1) or _dtype(scale) != "float32":
        raise GraphError(
            f"{label}: the dropout scale '{scale.name}' is one float32 value, dims [1, 1, 1, 1]; "
            f"got {_dtype(scale)} {list(scale.dims)}"
        )


def score_outputs(
    label: str,
    *,
    score_max: Any,
    score_sum_exp: Any,
    stats_use_log2: Any,
    stats: bool,
) -> tuple[dict[str, Tensor], bool, list[str]]:
    """Check the frontend's ``score_max``/``score_sum_exp`` outputs and ``stats_use_log2``;
    returns the outputs by role (``max``, ``sum_exp``), the log2 flag and the version keys of
    :data:`pycudnn._attention_rules.VERSIONS` the unified operation needs for them."""
    outs: dict[str, Tensor] = {}
    for role, what, t in (
        ("max", "score_max", score_max),
        ("sum_exp", "score_sum_exp", score_sum_exp),
    ):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise GraphError(
                f"{label}: {what} is an output tensor (float32 [b, h_q, s_q, 1]) the graph "
                f"writes; got {type(t).__name__}"
            )
        outs[role] = t
    if stats_use_log2 is None:
        stats_use_log2 = False
    if not isinstance(stats_use_log2, bool):
        raise GraphError(f"{label}: stats_use_log2 must be a bool, not {stats_use_log2!r}")
    if stats_use_log2 and not stats:
        # the frontend ignores the flag without stats; a flag that changes nothing is a mistake
        raise GraphError(
            f"{label}: stats_use_log2 writes the stats in base 2; ask for them with "
            "generate_stats=True (or return_stats=True)"
        )
    features = ["sdpa score_max/score_sum_exp"] * bool(outs)
    features += ["sdpa stats_use_log2"] * stats_use_log2
    return outs, stats_use_log2, features


def check_row_output(label: str, what: str, t: Tensor, row: tuple[int, ...]) -> None:
    """A per-row statistic: float32 of the stats' dims ``[b, h_q, s_q, 1]``."""
    if t.dims != tuple(row) or _dtype(t) != "float32":
        raise GraphError(
            f"{label}: {what} '{t.name}' is one float32 value per score row, dims "
            f"[b, h_q, s_q, 1] = {list(row)}; got {_dtype(t)} {list(t.dims)}"
        )
