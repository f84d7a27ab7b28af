"""The NumPy references for attention and normalisation, against loops over rows in plain Python
(``math.exp``, ``math.fsum``): the definitions, one score row or one normalised group at a time."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pycudnn.graph import Graph
from pycudnn.verification import evaluate, make_inputs, tolerance_for
from pycudnn.verification.reference import NoReferenceError


def _attention(causal: bool, window: int | None, bias: bool) -> tuple[Graph, dict[str, Any]]:
    g = Graph("att")
    q = g.tensor([2, 4, 5, 8], dtype="float16", name="q")
    k = g.tensor([2, 2, 6, 8], dtype="float16", name="k")  # 2 query heads per K/V head
    v = g.tensor([2, 2, 6, 16], dtype="float16", name="v")
    b = g.tensor([1, 4, 5, 6], dtype="float16", name="bias") if bias else None
    o, stats = g.sdpa(q, k, v, scale=0.7, causal=causal, sliding_window=window, bias=b,
                      return_stats=True)  # fmt: skip
    g.signature()
    return g, {"q": q, "k": k, "v": v, "bias": b, "o": o, "stats": stats}


@pytest.mark.parametrize(
    ("causal", "window", "bias"),
    [(False, None, False), (True, None, False), (True, 3, False), (False, None, True)],
    ids=["plain", "causal", "window3", "bias"],
)
def test_sdpa_matches_one_score_row_at_a_time(causal: bool, window: Any, bias: bool) -> None:
    g, t = _attention(causal, window, bias)
    ins = make_inputs(g, seed=5)
    out = evaluate(g, ins)
    q, k, v = (ins[t[r].uid].astype(np.float64) for r in "qkv")
    bv = ins[t["bias"].uid].astype(np.float64) if bias else None
    for b, h, i in np.ndindex(2, 4, 5):
        kv = h // 2
        keys = [
            j for j in range(6) if (not causal or j <= i) and (window is None or j > i - window)
        ]
        s = {j: 0.7 * math.fsum(q[b, h, i] * k[b, kv, j]) + (bv[0, h, i, j] if bias else 0.0)
             for j in keys}  # fmt: skip
        top = max(s.values())
        e = {j: math.exp(s[j] - top) for j in keys}
        total = math.fsum(e.values())
        want = [math.fsum(e[j] / total * v[b, kv, j, c] for j in keys) for c in range(16)]
        np.testing.assert_allclose(out[t["o"].uid][b, h, i], want, rtol=1e-12, atol=1e-14)
        assert out[t["stats"].uid][b, h, i, 0] == pytest.approx(top + math.log(total), rel=1e-12)


@pytest.mark.parametrize("mode", ["layer", "rms", "batch", "instance"])
def test_norm_forward_matches_one_group_at_a_time(mode: str) -> None:
    g = Graph("norm")
    x = g.tensor([3, 4, 2, 5], dtype="float32", name="x")
    per_channel = mode in ("batch", "instance")
    pdims = [1, 4, 1, 1] if per_channel else [1, 4, 2, 5]
    scale = g.tensor(pdims, name="scale")
    bias = g.tensor(pdims, name="bias")
    if mode == "batch":
        outs = g.batchnorm(x, scale, bias, epsilon=1e-3)
    else:
        fn = {"layer": g.layernorm, "rms": g.rmsnorm, "instance": g.instancenorm}[mode]
        outs = fn(x, scale, bias, epsilon=1e-3, training=True)
    g.signature()
    ins = make_inputs(g, seed=6)
    got = evaluate(g, ins)
    xv = ins[x.uid].astype(np.float64)
    sv = np.broadcast_to(ins[scale.uid].astype(np.float64), xv.shape)
    bv = np.broadcast_to(ins[bias.uid].astype(np.float64), xv.shape)
    groups: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for idx in np.ndindex(*xv.shape):
        key = {"layer": idx[:1], "rms": idx[:1], "batch": idx[1:2], "instance": idx[:2]}[mode]
        groups.setdefault(key, []).append(idx)
    for key, members in groups.items():
        vals = [float(xv[i]) for i in members]
        mean = 0.0 if mode == "rms" else math.fsum(vals) / len(vals)
        var = math.fsum((u - mean) ** 2 for u in vals) / len(vals)
        inv = 1 / math.sqrt(var + 1e-3)
        for i in members:
            want = (xv[i] - mean) * inv * sv[i] + bv[i]
            assert got[outs.y.uid][i] == pytest.approx(want, rel=1e-12, abs=1e-12)
        at = (*key, *([0] * (4 - len(key))))
        if mode == "batch":
            at = (0, key[0], 0, 0)
        assert got[outs.inv_variance.uid][at] == pytest.approx(inv, rel=1e-12)
        if outs.mean is not None:
            assert got[outs.mean.uid][at] == pytest.approx(mean, abs=1e-14)


def test_attention_tolerance_has_the_probability_rounding_and_what_has_no_reference() -> None:
    _, t = _attention(True, None, False)
    tol = tolerance_for(t["o"])
    names = " ".join(name for name, _ in tol.terms)
    assert "probabilities as float16" in names and "approximate exp" in names
    assert tol.rtol < 0.02  # fp16 output: still far below garbage
    d = Graph("dropout")
    q = d.tensor([1, 2, 4, 8], dtype="bfloat16", name="q")
    k = d.tensor([1, 2, 4, 8], dtype="bfloat16", name="k")
    v = d.tensor([1, 2, 4, 8], dtype="bfloat16", name="v")
    seed = d.tensor([1, 1, 1, 1], dtype="int64", name="seed")
    offset = d.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    d.sdpa(q, k, v, dropout=0.1, seed=seed, offset=offset)
    d.signature()
    with pytest.raises(NoReferenceError, match="seed"):
        evaluate(d, make_inputs(d))
