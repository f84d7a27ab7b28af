"""sdpa and sdpa_backward take their shared score, mask and ragged keywords (SdpaKeywords) from one
declaration: both signatures show them, with the declared defaults, where they always stood; they
reach the operation; a misspelt one is a TypeError naming it before anything is added."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from pycudnn import Graph
from pycudnn.graph import Tensor
from pycudnn.opgraph.attention_args import (
    MaskKeywords,
    RaggedKeywords,
    ScoreKeywords,
    SdpaKeywords,
)
from pycudnn.opgraph.attention_fp8 import Fp8Keywords

# The documented defaults (the methods' docstrings): no scale given, no mask, dropout 0, the
# frontend's top-left alignment.
DEFAULTS = {
    "scale": None,
    "causal": False,
    "sliding_window": None,
    "bias": None,
    "seq_len_q": None,
    "seq_len_kv": None,
    "dropout": 0.0,
    "seed": None,
    "offset": None,
    "use_causal_mask": False,
    "use_causal_mask_bottom_right": False,
    "diagonal_alignment": "top_left",
    "diagonal_band_left_bound": None,
    "diagonal_band_right_bound": None,
    "sliding_window_length": None,
    "use_padding_mask": None,
    "use_alibi_mask": False,
    "max_total_seq_len_q": None,
    "max_total_seq_len_kv": None,
}


def _keyword_only(name: str) -> list[str]:
    params = inspect.signature(getattr(Graph, name)).parameters.values()
    assert inspect.Parameter.VAR_KEYWORD not in {p.kind for p in params}, name
    return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


@pytest.mark.parametrize(
    ("method", "after_score", "after_masks", "after_ragged"),
    [
        ("sdpa", "return_stats", "rng_dump", "sink_token"),
        ("sdpa_backward", "implementation", "sink_token", "use_causal_mask"),
    ],
)
def test_shared_keywords_show_where_they_stood(
    method: str, after_score: str, after_masks: str, after_ragged: str
) -> None:
    names = _keyword_only(method)
    params = inspect.signature(getattr(Graph, method)).parameters
    assert {k: params[k].default for k in SdpaKeywords.__annotations__} == DEFAULTS
    for typed, then in (
        (ScoreKeywords, after_score),
        (MaskKeywords, after_masks),
        (RaggedKeywords, after_ragged),
    ):
        keys = list(typed.__annotations__)
        at = names.index(keys[0])
        assert names[at : at + len(keys) + 1] == [*keys, then], method
    assert names[-1] == "name"


def _qkv(g: Graph) -> list[Tensor]:
    strides = [8 * 64 * 2, 64, 2 * 64, 1]  # bshd
    return [g.tensor([2, 2, 8, 64], strides, dtype="float16", name=n) for n in "qkv"]


def test_shared_keywords_reach_the_operation() -> None:
    g = Graph("shared_keywords")
    q, k, v = _qkv(g)
    g.sdpa(q, k, v, scale=0.25, use_causal_mask=True, name="attn")
    text = g.describe()
    assert "causal=True" in text and "scale=0.25" in text


@pytest.mark.parametrize("method", ["sdpa", "sdpa_backward"])
def test_a_misspelt_shared_keyword_is_refused_first(method: str) -> None:
    g = Graph("misspelt")
    q, k, v = _qkv(g)
    extra: dict[str, Any] = {}
    if method == "sdpa_backward":
        o = g.tensor(list(q.dims), list(q.strides), dtype="float16", name="o")
        do = g.tensor(list(q.dims), list(q.strides), dtype="float16", name="do")
        stats = g.tensor([2, 2, 8, 1], dtype="float32", name="stats")
        extra = {"stats": stats}
        args: tuple[Tensor, ...] = (q, k, v, o, do)
    else:
        args = (q, k, v)
    with pytest.raises(TypeError, match=f"{method}.*'use_causal_msk'; did you mean"):
        getattr(g, method)(*args, use_causal_msk=True, **extra)
    assert not g.operations


def test_fp8_backward_shows_sdpa_fp8s_keywords_where_they_stood() -> None:
    forward = inspect.signature(Graph.sdpa_fp8).parameters
    backward = inspect.signature(Graph.sdpa_fp8_backward).parameters
    keys = list(Fp8Keywords.__annotations__)
    for key in keys:
        assert backward[key].kind is inspect.Parameter.KEYWORD_ONLY, key
        assert backward[key].default == forward[key].default, key
    names = _keyword_only("sdpa_fp8_backward")
    # right after the eighteen positional tensors, as the frontend's sdpa_fp8_backward
    assert names[: len(keys) + 1] == [*keys, "use_deterministic_algorithm"]
    assert forward["diagonal_alignment"].default == "top_left"
    assert forward["use_causal_mask"].default is False


def test_fp8_backward_refuses_a_misspelt_keyword_first() -> None:
    g = Graph("fp8_misspelt")
    tensors = [g.tensor([1, 1, 1, 1], dtype="float32", name=f"t{i}") for i in range(18)]
    with pytest.raises(
        TypeError, match=r"sdpa_fp8_backward.*'left_bnd'; did you mean 'left_bound'"
    ):
        g.sdpa_fp8_backward(*tensors, left_bnd=3)  # type: ignore[call-arg]
    assert not g.operations
