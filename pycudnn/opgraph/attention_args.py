"""The keyword translation of :meth:`Graph.sdpa` and :meth:`Graph.sdpa_backward`: pycudnn's
spellings and NVIDIA cudnn-frontend's (``use_causal_mask``, ``attn_scale``, ``dropout=(p, seed,
offset)``, ``generate_stats``...) checked and brought to one answer each, and the diagonal-band
masks they describe. Nothing here touches a graph; :mod:`.attention` adds the operations.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from _nvbind.lazy_numpy import numpy_types

from .. import _attention_rules as rules
from .common import GraphError
from .tensors import Tensor

__all__ = [
    "ALIGNMENTS",
    "IMPLEMENTATIONS",
    "MaskKeywords",
    "Masks",
    "ScoreKeywords",
    "SdpaKeywords",
    "choice",
    "dropout_arg",
    "padding_flag",
    "refuse_unsupported",
    "scale_arg",
    "sdpa_keywords",
    "stats_flag",
]


def choice(value: Any, what: str, choices: tuple[str, ...]) -> str:
    """A keyword given as a string or as an enum member (the frontend's ``cudnn.attention_...``
    enums), lower-cased; anything else is refused with the choices."""
    name = getattr(value, "name", value)
    if isinstance(name, str) and name.lower() in choices:
        return name.lower()
    raise GraphError(f"{what} must be one of {', '.join(choices)}, not {value!r}")


def optional_int(value: Any, what: str, low: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise GraphError(f"{what} must be an int, not {value!r}")
    if not low <= value <= rules.INT32_MAX:
        raise GraphError(f"{what} must be in {low}..{rules.INT32_MAX} (an int32), got {value}")
    return value


class ScoreKeywords(TypedDict, total=False):
    """The score keywords :meth:`Graph.sdpa` and :meth:`Graph.sdpa_backward` share (scale,
    pycudnn's masks, bias, sequence lengths, dropout), as with the defaults in :data:`~pycudnn.opgraph.attention.SDPA_DEFAULTS`."""

    scale: float | None
    causal: bool
    sliding_window: int | None
    bias: Tensor | None
    seq_len_q: Tensor | None
    seq_len_kv: Tensor | None
    dropout: Any
    seed: Tensor | None
    offset: Tensor | None


class MaskKeywords(TypedDict, total=False):
    """The frontend's mask keywords :meth:`Graph.sdpa` and :meth:`Graph.sdpa_backward` share, as
    with the defaults in :data:`~pycudnn.opgraph.attention.SDPA_DEFAULTS`."""

    use_causal_mask: bool
    use_causal_mask_bottom_right: bool
    diagonal_alignment: Any
    diagonal_band_left_bound: int | None
    diagonal_band_right_bound: int | None
    sliding_window_length: int | None
    use_padding_mask: bool | None
    use_alibi_mask: bool


class RaggedKeywords(TypedDict, total=False):
    """The bounds on the tokens of ragged (THD) tensors :meth:`Graph.sdpa` and
    :meth:`Graph.sdpa_backward` share (:mod:`~pycudnn.opgraph.attention_ragged`), as
    with the defaults in :data:`~pycudnn.opgraph.attention.SDPA_DEFAULTS`."""

    max_total_seq_len_q: int | None
    max_total_seq_len_kv: int | None


class SdpaKeywords(ScoreKeywords, MaskKeywords, RaggedKeywords, total=False):
    """The three lists, for ``**kw: Unpack[SdpaKeywords]``; each method's signature shows them
    where it always did (:func:`_nvbind.keywords.place_keywords`)."""


class Masks:
    """The masks of an SDPA in the frontend's terms: a diagonal band with optional left and right
    bounds, aligned to the top-left or bottom-right corner of the score matrix."""

    def __init__(
        self,
        label: str,
        *,
        causal: bool,
        use_causal_mask: bool,
        use_causal_mask_bottom_right: bool,
        sliding_window: int | None,
        sliding_window_length: int | None,
        diagonal_alignment: Any,
        diagonal_band_left_bound: int | None,
        diagonal_band_right_bound: int | None,
    ) -> None:
        for flag, what in (
            (causal, "causal"),
            (use_causal_mask, "use_causal_mask"),
            (use_causal_mask_bottom_right, "use_causal_mask_bottom_right"),
        ):
            if not isinstance(flag, bool):
                raise GraphError(f"{label}: {what} must be a bool, not {flag!r}")
        align = choice(diagonal_alignment, f"{label}: diagonal_alignment", ALIGNMENTS)
        if use_causal_mask_bottom_right:
            if causal or use_causal_mask:
                raise GraphError(
                    f"{label}: use_causal_mask_bottom_right and causal/use_causal_mask each set "
                    "an alignment; give one"
                )
            align = "bottom_right"
        elif use_causal_mask and align == "bottom_right":
            # cudnn-frontend's use_causal_mask is the top-left mask whatever the alignment
            raise GraphError(
                f"{label}: use_causal_mask is cudnn-frontend's top-left causal mask; for the "
                "bottom-right one give use_causal_mask_bottom_right=True"
            )
        right = optional_int(diagonal_band_right_bound, f"{label}: diagonal_band_right_bound", 0)
        if causal or use_causal_mask or use_causal_mask_bottom_right:
            if right not in (None, 0):
                raise GraphError(
                    f"{label}: a causal mask is diagonal_band_right_bound=0; got "
                    f"diagonal_band_right_bound={right} as well"
                )
            right = 0
        window = optional_int(sliding_window, f"{label}: sliding_window", 1)
        length = optional_int(sliding_window_length, f"{label}: sliding_window_length", 1)
        left = optional_int(diagonal_band_left_bound, f"{label}: diagonal_band_left_bound", 1)
        given = [
            n
            for n, v in (
                ("sliding_window", window),
                ("sliding_window_length", length),
                ("diagonal_band_left_bound", left),
            )
            if v is not None
        ]
        if len(given) > 1:
            raise GraphError(f"{label}: {' and '.join(given)} each set the left bound; give one")
        if window is not None:
            # pycudnn's own spelling keeps the w keys ending at the query: causal by definition
            right = 0 if right is None else right
        left = window if window is not None else length if length is not None else left
        self.alignment = align
        self.left = left
        self.right = right

    @classmethod
    def of(cls, label: str, k: Mapping[str, Any]) -> Masks:
        """The masks the keywords ``k`` (:class:`SdpaKeywords`, defaults filled) describe."""
        return cls(
            label,
            causal=k["causal"],
            use_causal_mask=k["use_causal_mask"],
            use_causal_mask_bottom_right=k["use_causal_mask_bottom_right"],
            sliding_window=k["sliding_window"],
            sliding_window_length=k["sliding_window_length"],
            diagonal_alignment=k["diagonal_alignment"],
            diagonal_band_left_bound=k["diagonal_band_left_bound"],
            diagonal_band_right_bound=k["diagonal_band_right_bound"],
        )

    def check_lengths(self, label: str, s_q: int, s_kv: int, alibi: bool) -> None:
        """Refuse what cudnn-frontend refuses for these sequence lengths: a bottom-right aligned
        or sliding-window mask with more queries than keys (the first queries see no key: their
        rows are undefined), and ALiBi without a causal mask."""
        if s_q > s_kv and self.any and (self.alignment == "bottom_right" or self.left is not None):
            what = (
                "a bottom-right aligned" if self.alignment == "bottom_right" else "a sliding-window"
            )
            raise GraphError(
                f"{label}: {what} mask needs s_q <= s_kv, got s_q {s_q} > s_kv {s_kv}: the first "
                "queries would see no key and their outputs be undefined"
            )
        if alibi and self.right != 0:
            raise GraphError(
                f"{label}: ALiBi needs a causal mask (diagonal_band_right_bound=0), as "
                "cudnn-frontend requires"
            )

    @property
    def any(self) -> bool:
        return self.left is not None or self.right is not None


ALIGNMENTS = ("top_left", "bottom_right")
IMPLEMENTATIONS = ("auto", "composite", "unified")


def stats_flag(
    label: str, return_stats: bool | None, generate_stats: bool | None, is_inference: bool | None
) -> bool:
    """``return_stats`` / ``generate_stats`` / ``not is_inference``: one answer, or refused."""
    given = {
        n: v
        for n, v in (
            ("return_stats", return_stats),
            ("generate_stats", generate_stats),
            ("is_inference", None if is_inference is None else not is_inference),
        )
        if v is not None
    }
    for n, v in given.items():
        if not isinstance(v, bool):
            shown = is_inference if n == "is_inference" else v
            raise TypeError(f"{label}: {n} must be a bool, not {shown!r}")
    if len(set(given.values())) > 1:
        raise GraphError(f"{label}: {', '.join(given)} disagree about the stats output")
    return next(iter(given.values()), False)


def scale_arg(label: str, scale: Any, attn_scale: Any) -> Any:
    if scale is not None and attn_scale is not None:
        raise GraphError(f"{label}: scale and attn_scale are the same setting; give one")
    value = attn_scale if attn_scale is not None else scale
    if value is None or isinstance(value, Tensor):
        return value
    refusal = f"{label}: scale must be a finite number or a tensor, not {value!r:.60}"
    if isinstance(value, (bool, *numpy_types("bool_"))) or not isinstance(value, numbers.Real):
        raise GraphError(refusal)
    try:
        number = float(value)
    except OverflowError:  # an int past a double's range (10**400): math.isfinite raised it
        raise GraphError(refusal) from None
    if not math.isfinite(number):
        raise GraphError(refusal)
    return number


def dropout_arg(label: str, dropout: Any, seed: Any, offset: Any) -> tuple[float, Any, Any]:
    """``dropout=p`` with ``seed=``/``offset=``, or the frontend's ``dropout=(p, seed, offset)``
    (``None`` for none, as the frontend's tests pass it)."""
    if dropout is None:
        dropout = 0.0
    if isinstance(dropout, tuple):
        if len(dropout) != 3 or isinstance(dropout[0], Tensor):
            raise GraphError(
                f"{label}: dropout as a tuple is the frontend's (probability, seed, offset), or "
                "(mask, scale) for sdpa's forward only: give the probability with seed and offset"
            )
        if seed is not None or offset is not None:
            raise GraphError(
                f"{label}: give seed and offset in the dropout tuple or apart, not both"
            )
        dropout, seed, offset = dropout
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
        raise GraphError(f"{label}: dropout must be a probability, not {dropout!r}")
    if not 0.0 <= dropout < 1.0:
        raise GraphError(f"{label}: dropout must be in [0, 1), got {dropout}")
    return float(dropout), seed, offset


def padding_flag(label: str, use_padding_mask: Any, seq_len_q: Any, seq_len_kv: Any) -> None:
    if use_padding_mask is None:
        return
    if not isinstance(use_padding_mask, bool):
        raise TypeError(f"{label}: use_padding_mask must be a bool, not {use_padding_mask!r}")
    has = seq_len_q is not None or seq_len_kv is not None
    if use_padding_mask != has:
        raise GraphError(
            f"{label}: use_padding_mask={use_padding_mask} but seq_len_q/seq_len_kv are "
            + ("missing: the padding mask needs both" if use_padding_mask else "given")
        )


def refuse_unsupported(label: str, *, use_alibi_mask: Any) -> None:
    if not isinstance(use_alibi_mask, bool):
        raise TypeError(f"{label}: use_alibi_mask must be a bool, not {use_alibi_mask!r}")


def sdpa_keywords(
    label: str, kw: Mapping[str, Any], attn_scale: Any, mask_arg: Callable[[str, Any], Any]
) -> tuple[dict[str, Any], Masks, Any]:
    """The :class:`SdpaKeywords` of a call (completed with the defaults by ``take_keywords``)
    brought to one answer each (``scale`` or ``attn_scale``; the dropout probability, seed and
    offset), the masks they describe, and the dropout's ``(mask, scale...)`` form that
    ``mask_arg`` reads from ``dropout`` (None when it is a probability)."""
    k = dict(kw)
    k["scale"] = scale_arg(label, k["scale"], attn_scale)
    mask_form = mask_arg(label, k["dropout"])
    dropout = None if mask_form else k["dropout"]
    k["dropout"], k["seed"], k["offset"] = dropout_arg(label, dropout, k["seed"], k["offset"])
    refuse_unsupported(label, use_alibi_mask=k["use_alibi_mask"])
    padding_flag(label, k["use_padding_mask"], k["seq_len_q"], k["seq_len_kv"])
    return k, Masks.of(label, k), mask_form
