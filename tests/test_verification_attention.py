"""The NumPy references for attention and normalisation, against loops over rows in plain Python
(``math.exp``, ``math.fsum``): the definitions, one score row or one normalised group at a time."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pycudnn.graph import Graph
from pycudnn.opgraph import attention_common as attention_module
from pycudnn.verification import evaluate, make_inputs, tolerance_for
from pycudnn.verification.reference import NoReferenceError


@pytest.fixture(autouse=True)
def _every_cudnn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The references under test are NumPy and these graphs never reach cuDNN (no finalize, no
    plan), so they are checked on every cuDNN of the version matrix: the attention version gate
    (tested in test_attention.py) is given the newest release's number."""
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)


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


def _numeric_grad(f: Any, arrays: dict[str, np.ndarray], role: str, idx: tuple[int, ...]) -> float:
    """Central difference of the scalar ``f(arrays)`` along one element."""
    h = 1e-6
    plus = {**arrays, role: arrays[role].copy()}
    minus = {**arrays, role: arrays[role].copy()}
    plus[role][idx] += h
    minus[role][idx] -= h
    return (f(plus) - f(minus)) / (2 * h)


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
def test_sdpa_backward_is_the_gradient_of_the_forward(causal: bool) -> None:
    """dQ, dK, dV against central differences of sum(O * dO) through the forward reference
    (itself checked row by row above); O and stats are generated consistent with Q, K, V."""
    fwd, ft = _attention(causal, None, False)
    g = Graph("att_bwd")
    like = {r: g.tensor(list(ft[r].dims), list(ft[r].strides), dtype=ft[r].dtype, name=r)
            for r in ("q", "k", "v", "o")}  # fmt: skip
    do = g.tensor(list(ft["o"].dims), dtype="float16", name="do")
    stats = g.tensor(list(ft["stats"].dims), list(ft["stats"].strides), name="stats")
    dq, dk, dv = g.sdpa_backward(like["q"], like["k"], like["v"], like["o"], do, stats=stats,
                                 scale=0.7, causal=causal)  # fmt: skip
    g.signature()
    ins = make_inputs(g, seed=8)
    arrays = {r: ins[like[r].uid].astype(np.float64) for r in ("q", "k", "v")}
    fwd_out = evaluate(fwd, {ft[r].uid: arrays[r] for r in ("q", "k", "v")})
    # the generated O and stats are the forward's, rounded to their types
    np.testing.assert_allclose(ins[like["o"].uid], fwd_out[ft["o"].uid], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(ins[stats.uid], fwd_out[ft["stats"].uid], rtol=1e-6)
    got = evaluate(g, ins)
    dov = ins[do.uid].astype(np.float64)

    def loss(a: dict[str, np.ndarray]) -> float:
        o = evaluate(fwd, {ft[r].uid: a[r] for r in ("q", "k", "v")})[ft["o"].uid]
        return float(np.sum(o * dov))

    rng = np.random.default_rng(9)
    for role, grad in (("q", dq), ("k", dk), ("v", dv)):
        for _ in range(6):
            idx = tuple(int(rng.integers(n)) for n in arrays[role].shape)
            # the reference uses the generated O (rounded); the loss uses the exact forward
            want = _numeric_grad(loss, arrays, role, idx)
            assert got[grad.uid][idx] == pytest.approx(want, rel=2e-3, abs=2e-4), (role, idx)


@pytest.mark.parametrize("mode", ["layer", "rms"])
def test_norm_backward_is_the_gradient_of_the_forward(mode: str) -> None:
    fwd = Graph("norm")
    x = fwd.tensor([3, 6, 1], dtype="float32", name="x")
    scale = fwd.tensor([1, 6, 1], name="scale")
    bias = fwd.tensor([1, 6, 1], name="bias")
    fn = fwd.layernorm if mode == "layer" else fwd.rmsnorm
    y = fn(x, scale, bias, epsilon=1e-5, training=True).y
    g = Graph("norm_bwd")
    bx = g.tensor([3, 6, 1], dtype="float32", name="x")
    dy = g.tensor([3, 6, 1], dtype="float32", name="dy")
    bs = g.tensor([1, 6, 1], name="scale")
    inv = g.tensor([3, 1, 1], name="inv_variance")
    if mode == "layer":
        mean = g.tensor([3, 1, 1], name="mean")
        grads = g.layernorm_backward(dy, bx, bs, mean, inv)
    else:
        grads = g.rmsnorm_backward(dy, bx, bs, inv, with_dbias=True)
    g.signature()
    ins = make_inputs(g, seed=10)
    got = evaluate(g, ins)
    arrays = {"x": ins[bx.uid].astype(np.float64), "scale": ins[bs.uid].astype(np.float64),
              "bias": np.zeros((1, 6, 1))}  # fmt: skip
    dyv = ins[dy.uid].astype(np.float64)

    def loss(a: dict[str, np.ndarray]) -> float:
        out = evaluate(fwd, {x.uid: a["x"], scale.uid: a["scale"], bias.uid: a["bias"]})
        return float(np.sum(out[y.uid] * dyv))

    for role, grad in (("x", grads.dx), ("scale", grads.dscale), ("bias", grads.dbias)):
        assert grad is not None
        for idx in np.ndindex(*arrays[role].shape):
            want = _numeric_grad(loss, arrays, role, idx)
            assert got[grad.uid][idx] == pytest.approx(want, rel=1e-5, abs=1e-7), (role, idx)


def test_zero_centered_gamma_is_added_back_once() -> None:
    """With zero_centered_gamma the graph feeds the norm ``stored + 1`` through a pointwise ADD:
    the reference must not add 1 a second time (forward against the formula, backward against
    central differences of that forward)."""
    fwd = Graph("zc")
    x = fwd.tensor([3, 6, 1], dtype="float32", name="x")
    scale = fwd.tensor([1, 6, 1], name="gamma_minus_one")
    bias = fwd.tensor([1, 6, 1], name="bias")
    y = fwd.layernorm(x, scale, bias, epsilon=1e-5, training=True, zero_centered_gamma=True).y
    rng = np.random.default_rng(11)
    arrays = {"x": rng.standard_normal((3, 6, 1)), "scale": rng.standard_normal((1, 6, 1)),
              "bias": rng.standard_normal((1, 6, 1))}  # fmt: skip

    def forward(a: dict[str, np.ndarray]) -> np.ndarray:
        out = evaluate(fwd, {x.uid: a["x"], scale.uid: a["scale"], bias.uid: a["bias"]})
        return out[y.uid]

    xv = arrays["x"]
    mean = xv.mean(axis=(1, 2), keepdims=True)
    inv = 1 / np.sqrt(xv.var(axis=(1, 2), keepdims=True) + 1e-5)
    want = (xv - mean) * inv * (arrays["scale"] + 1.0) + arrays["bias"]
    np.testing.assert_allclose(forward(arrays), want, rtol=1e-12, atol=1e-12)

    g = Graph("zc_bwd")
    bx = g.tensor([3, 6, 1], dtype="float32", name="x")
    dy = g.tensor([3, 6, 1], dtype="float32", name="dy")
    bs = g.tensor([1, 6, 1], name="gamma_minus_one")
    bm = g.tensor([3, 1, 1], name="mean")
    bi = g.tensor([3, 1, 1], name="inv_variance")
    grads = g.layernorm_backward(dy, bx, bs, bm, bi, zero_centered_gamma=True)
    dyv = rng.standard_normal((3, 6, 1))
    got = evaluate(g, {bx.uid: xv, dy.uid: dyv, bs.uid: arrays["scale"], bm.uid: mean,
                       bi.uid: inv})  # fmt: skip

    def loss(a: dict[str, np.ndarray]) -> float:
        return float(np.sum(forward(a) * dyv))

    for role, grad in (("x", grads.dx), ("scale", grads.dscale), ("bias", grads.dbias)):
        assert grad is not None
        for idx in np.ndindex(*arrays[role].shape):
            want_g = _numeric_grad(loss, arrays, role, idx)
            assert got[grad.uid][idx] == pytest.approx(want_g, rel=1e-5, abs=1e-7), (role, idx)


def test_saved_statistics_are_generated_for_a_zero_centered_gamma_backward() -> None:
    """The backward's scale is the ADD's output (no generated values): the saved mean and inverse
    standard deviation are still made from x."""
    g = Graph("zc_inputs")
    x = g.tensor([3, 6, 1], dtype="float32", name="x")
    dy = g.tensor([3, 6, 1], dtype="float32", name="dy")
    scale = g.tensor([1, 6, 1], name="gamma_minus_one")
    mean = g.tensor([3, 1, 1], name="mean")
    inv = g.tensor([3, 1, 1], name="inv_variance")
    g.layernorm_backward(dy, x, scale, mean, inv, zero_centered_gamma=True)
    g.signature()
    ins = make_inputs(g, seed=12)
    xv = ins[x.uid].astype(np.float64)
    np.testing.assert_allclose(ins[mean.uid], xv.mean(axis=(1, 2), keepdims=True), rtol=1e-6)
    want = 1 / np.sqrt(xv.var(axis=(1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(ins[inv.uid], want, rtol=1e-6)
