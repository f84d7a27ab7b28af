"""The composite SDPA graph, the frontend's masks and the LLM-shaped norms executed on the GPU
(GPU tier: ``pytest -m gpu``), against float64 NumPy references.

Each test builds with ``implementation="composite"`` where the feature is the composite graph's,
so the check is of this library's lowering and not of cuDNN's unified operation; where both
exist they must agree. Dropout is checked against the mask the graph dumps (``rng_dump``): the
output must be ``(P * mask / (1 - p)) @ V`` for that very mask.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from test_attention_gpu import (
    BF16,
    F16,
    GRAD_TOL,
    TOL,
    check_close,
    empty,
    f64,
    host,
    qkv_tensor,
    to_device,
)

import pycudnn
from pycudnn.graph import Graph

pytestmark = pytest.mark.gpu


def band_ref(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    scale: float,
    left: int | None = None,
    right: int | None = None,
    bottom_right: bool = False,
    bias: np.ndarray | None = None,
    alibi: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(O, stats, P) in float64 for a diagonal band mask (keys ``j`` with
    ``i + shift - left < j <= i + shift + right``, ``shift = s_kv - s_q`` bottom-right)."""
    q, k, v = f64(q), f64(k), f64(v)
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = scale * q @ k.transpose(0, 1, 3, 2)
    if bias is not None:
        s = s + f64(bias)
    sq, skv = s.shape[2:]
    i = np.arange(sq)[:, None] + (skv - sq if bottom_right else 0)
    j = np.arange(skv)[None, :]
    if alibi:  # slopes from the frontend's formula, written out independently here
        h = s.shape[1]
        n = 1 << (h.bit_length() - 1)
        a = [i + 1.0 for i in range(n)] + [i + 0.5 for i in range(h - n)]
        slopes = np.array([2.0 ** (-8 * x / n) for x in a]).reshape(1, h, 1, 1)
        s = s + slopes * (np.arange(skv)[None, :] - np.arange(sq)[:, None])
    keep = np.ones((sq, skv), dtype=bool)
    if right is not None:
        keep &= j <= i + right
    if left is not None:
        keep &= j > i - left
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    p = e / total
    return p @ v, m + np.log(total), p


def run_forward(
    dims: tuple[int, ...],
    dtype: Any,
    implementation: str,
    inputs: tuple[np.ndarray, ...] | None = None,
    **options: Any,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...], dict[str, Any]]:
    b, hq, hk, sq, skv, d = dims
    g = Graph("fwd")
    q = qkv_tensor(g, "q", (b, hq, sq, d), "bshd", dtype)
    k = qkv_tensor(g, "k", (b, hk, skv, d), "bshd", dtype)
    v = qkv_tensor(g, "v", (b, hk, skv, d), "bshd", dtype)
    feed_extra: dict[Any, Any] = {}
    bias_h = None
    if options.pop("bias_", False):
        bt = g.tensor([1, hq, sq, skv], dtype=dtype, name="bias")
        bias_h = host(bt.dims, dtype)
        feed_extra[bt] = to_device(bias_h, bt)
        options["bias"] = bt
    o, stats = g.sdpa(q, k, v, generate_stats=True, implementation=implementation, **options)
    assert stats is not None
    assert g.operations[-1].attrs["lowering"] == implementation
    qh, kh, vh = inputs or (host(q.dims, dtype), host(k.dims, dtype), host(v.dims, dtype))
    od, sd = empty(o), empty(stats)
    g.build().execute(
        {q: to_device(qh, q), k: to_device(kh, k), v: to_device(vh, v), o: od, stats: sd}
        | feed_extra
    )
    return f64(od), f64(sd), (qh, kh, vh), {"bias": bias_h}


@pytest.mark.parametrize(
    ("dims", "options", "band"),
    [
        ((2, 4, 4, 128, 128, 64), {}, {}),
        ((2, 8, 2, 96, 160, 64), {"use_causal_mask": True}, {"right": 0}),
        (
            (2, 4, 1, 96, 160, 64),
            {"use_causal_mask_bottom_right": True},
            {"right": 0, "bottom_right": True},
        ),
        ((1, 4, 4, 128, 128, 64), {"diagonal_band_left_bound": 16}, {"left": 16}),
        ((1, 4, 4, 128, 128, 64), {"diagonal_band_right_bound": 8}, {"right": 8}),
        (
            (1, 4, 2, 128, 128, 128),
            {"use_causal_mask": True, "sliding_window_length": 32, "bias_": True},
            {"right": 0, "left": 32},
        ),
        (
            (2, 6, 6, 128, 128, 64),
            {"use_alibi_mask": True, "use_causal_mask": True},
            {"right": 0, "alibi": True},
        ),
        ((1, 8, 2, 128, 128, 64), {"use_alibi_mask": True}, {"alibi": True}),
    ],
    ids=[
        "plain",
        "causal_gqa",
        "bottom_right_mqa",
        "left",
        "right",
        "window_bias",
        "alibi_h6",
        "alibi_h8_gqa",
    ],
)
def test_composite_forward(dims: tuple[int, ...], options: dict[str, Any], band: dict) -> None:
    d = dims[-1]
    o, stats, (qh, kh, vh), extra = run_forward(dims, BF16, "composite", **options)
    ref_o, ref_stats, _ = band_ref(qh, kh, vh, scale=1 / math.sqrt(d), bias=extra["bias"], **band)
    check_close(o, ref_o, TOL[BF16], f"composite O {options}")
    check_close(stats, ref_stats, 1e-2, f"composite stats {options}")


def test_composite_and_unified_agree() -> None:
    if pycudnn.version_tuple() < (9, 21, 0):
        pytest.skip("the unified operation takes masks from cuDNN 9.21")
    dims = (2, 8, 2, 128, 128, 64)
    b, hq, hk, sq, skv, d = dims
    same = (host((b, hq, sq, d), F16), host((b, hk, skv, d), F16), host((b, hk, skv, d), F16))
    o_c, s_c, _, _ = run_forward(dims, F16, "composite", same, use_causal_mask=True)
    o_u, s_u, _, _ = run_forward(dims, F16, "unified", same, use_causal_mask=True)
    check_close(o_c, o_u, TOL[F16], "composite O against unified O")
    check_close(s_c, s_u, 1e-2, "composite stats against unified stats")


DROPOUT_DIMS, P_DROP = (2, 4, 64, 64), 0.25


def _dropout_forward() -> dict[str, Any]:
    """The training forward with dropout (composite), executed with its mask dumped: the host
    inputs, the device arrays of every tensor, and the tensors, by name."""
    b, h, s, d = DROPOUT_DIMS
    g = Graph("train")
    q, k, v = (qkv_tensor(g, n, (b, h, s, d), "bshd", F16) for n in "qkv")
    seed = g.tensor([1, 1, 1, 1], dtype="int64", name="seed")
    offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    dump = g.tensor([b, h, s, s], dtype="float32", name="rng_dump")
    o, stats = g.sdpa(q, k, v, generate_stats=True, dropout=(P_DROP, seed, offset), rng_dump=dump)
    assert stats is not None and g.operations[-1].attrs["lowering"] == "composite"
    host_in = {"q": host(q.dims, F16), "k": host(k.dims, F16), "v": host(v.dims, F16)}
    one = np.array([[[[11]]]], dtype=np.int64)
    tensors = {"q": q, "k": k, "v": v, "seed": seed, "offset": offset, "o": o, "stats": stats,
               "dump": dump}  # fmt: skip
    dev = {n: to_device(host_in[n], tensors[n]) for n in "qkv"}
    dev.update(seed=to_device(one, seed), offset=to_device(one, offset))
    dev.update((n, empty(tensors[n])) for n in ("o", "stats", "dump"))
    g.build().execute({tensors[n]: a for n, a in dev.items()})
    return {"host": host_in, "dev": dev, "tensors": tensors}


def test_dropout_with_stats_matches_its_dumped_mask() -> None:
    run = _dropout_forward()
    (qh, kh, vh), dev = run["host"].values(), run["dev"]
    mask = f64(dev["dump"])
    assert set(np.unique(mask)) <= {0.0, 1.0}
    kept = float(mask.mean())
    assert abs(kept - (1 - P_DROP)) < 0.02, f"kept {kept:.3f} of the weights, not {1 - P_DROP}"
    _, ref_stats, p = band_ref(qh, kh, vh, scale=1 / math.sqrt(DROPOUT_DIMS[3]))
    ref_o = (p * mask / (1 - P_DROP)) @ f64(vh)
    check_close(dev["o"], ref_o, TOL[F16], "dropout O against its dumped mask")
    check_close(dev["stats"], ref_stats, 1e-2, "stats (before dropout)")


def test_dropout_backward_draws_the_forward_mask() -> None:
    # The training forward with dropout is the composite graph; the backward given the same
    # (p, seed, offset) must apply the very mask the forward drew (dumped here), which "auto"
    # ensures by lowering it to the composite graph too, as cudnn-frontend does.
    run = _dropout_forward()
    (qh, kh, vh), dev, fwd = run["host"].values(), run["dev"], run["tensors"]
    scale = 1 / math.sqrt(DROPOUT_DIMS[3])
    bwd = Graph("train_bwd")
    tq, tk, tv, to, tdo = (qkv_tensor(bwd, n, fwd["q"].dims, "bshd", F16) for n in
                           ("q", "k", "v", "o", "do"))  # fmt: skip
    tst = bwd.tensor(list(fwd["stats"].dims), name="stats")
    bseed = bwd.tensor([1, 1, 1, 1], dtype="int64", name="seed")
    boffset = bwd.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    dq, dk, dv = bwd.sdpa_backward(tq, tk, tv, to, tdo, stats=tst, dropout=(P_DROP, bseed, boffset))
    assert bwd.operations[-1].attrs["lowering"] == "composite"
    doh = host(to.dims, F16)
    dqd, dkd, dvd = empty(dq), empty(dk), empty(dv)
    bwd.build().execute(
        {tq: dev["q"], tk: dev["k"], tv: dev["v"], to: dev["o"], tdo: to_device(doh, tdo),
         tst: dev["stats"], bseed: dev["seed"], boffset: dev["offset"], dq: dqd, dk: dkd, dv: dvd}
    )  # fmt: skip

    # float64 gradients of O = (P * D) V with D = mask / (1 - p), the mask the forward drew
    drop = f64(dev["dump"]) / (1 - P_DROP)
    _, _, p = band_ref(qh, kh, vh, scale=scale)
    qf, kf, vf, dof = f64(qh), f64(kh), f64(vh), f64(doh)
    pd = p * drop
    dv_ref = pd.transpose(0, 1, 3, 2) @ dof
    dp = (dof @ vf.transpose(0, 1, 3, 2)) * drop
    ds = p * (dp - (dof * (pd @ vf)).sum(axis=-1, keepdims=True))
    check_close(dvd, dv_ref, GRAD_TOL[F16], "dV against the forward's mask")
    check_close(dqd, scale * ds @ kf, GRAD_TOL[F16], "dQ against the forward's mask")
    check_close(dkd, scale * ds.transpose(0, 1, 3, 2) @ qf, GRAD_TOL[F16], "dK against it")


@pytest.mark.parametrize(
    ("hk", "options", "band"),
    [
        (4, {}, {}),
        (2, {"use_causal_mask": True}, {"right": 0}),
        (
            1,
            {"diagonal_band_left_bound": 24, "diagonal_band_right_bound": 4},
            {"left": 24, "right": 4},
        ),
        (4, {"bias_": True}, {}),
        (2, {"use_alibi_mask": True, "use_causal_mask": True}, {"right": 0, "alibi": True}),
    ],
    ids=["plain", "causal_gqa", "band_mqa", "bias_dbias", "alibi_causal"],
)
def test_composite_backward(hk: int, options: dict[str, Any], band: dict) -> None:
    b, hq, s, d = 2, 4, 128, 64
    dtype, scale = BF16, 1 / math.sqrt(64)
    qh, kh, vh = host((b, hq, s, d), dtype), host((b, hk, s, d), dtype), host((b, hk, s, d), dtype)
    doh = host((b, hq, s, d), dtype)
    bias_h = host((1, hq, s, s), dtype) if options.get("bias_") else None
    ref_o, ref_stats, p = band_ref(qh, kh, vh, scale=scale, bias=bias_h, **band)
    g = Graph("bwd")
    q = qkv_tensor(g, "q", qh.shape, "bshd", dtype)
    k = qkv_tensor(g, "k", kh.shape, "bshd", dtype)
    v = qkv_tensor(g, "v", vh.shape, "bshd", dtype)
    o = qkv_tensor(g, "o", doh.shape, "bshd", dtype)
    do = qkv_tensor(g, "do", doh.shape, "bshd", dtype)
    st = g.tensor([b, hq, s, 1], dtype="float32", name="stats")
    opts = {k_: v_ for k_, v_ in options.items() if k_ != "bias_"}
    feed: dict[Any, Any] = {}
    dbias = None
    if bias_h is not None:
        bt = g.tensor([1, hq, s, s], dtype=dtype, name="bias")
        dbias = g.tensor([1, hq, s, s], dtype=dtype, name="dbias")
        feed[bt] = to_device(bias_h, bt)
        opts.update(bias=bt, dBias=dbias)
    dq, dk, dv = g.sdpa_backward(
        q=q, k=k, v=v, o=o, dO=do, stats=st, implementation="composite", **opts
    )
    outs = {t: empty(t) for t in (dq, dk, dv, *([dbias] if dbias is not None else []))}
    o_lp = ref_o.astype(dtype)  # O as the forward would have stored it
    g.build().execute(
        {
            q: to_device(qh, q),
            k: to_device(kh, k),
            v: to_device(vh, v),
            o: to_device(o_lp, o),
            do: to_device(doh, do),
            st: to_device(ref_stats.astype(np.float32), st),
        }
        | feed
        | outs
    )
    rep = hq // hk
    ke, ve = np.repeat(f64(kh), rep, axis=1), np.repeat(f64(vh), rep, axis=1)
    d_o = f64(doh)
    dp = d_o @ ve.transpose(0, 1, 3, 2)
    d_scores = p * (dp - (d_o * f64(o_lp)).sum(axis=-1, keepdims=True))

    def fold(a: np.ndarray) -> np.ndarray:
        return a.reshape(b, hk, rep, *a.shape[2:]).sum(axis=2)

    check_close(outs[dq], scale * d_scores @ ke, GRAD_TOL[dtype], f"dQ {options}")
    check_close(
        outs[dk], fold(scale * d_scores.transpose(0, 1, 3, 2) @ f64(qh)), GRAD_TOL[dtype], "dK"
    )
    check_close(outs[dv], fold(p.transpose(0, 1, 3, 2) @ d_o), GRAD_TOL[dtype], "dV")
    if dbias is not None:
        check_close(outs[dbias], d_scores.sum(axis=0, keepdims=True), GRAD_TOL[dtype], "dBias")


# -- norms -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["layer", "rms"])
def test_norm_over_the_last_dim_of_tokens(mode: str) -> None:
    b, s, e, eps = 4, 64, 768, 1e-5
    g = Graph(mode)
    x = g.tensor([b, s, e], dtype=BF16, name="x")
    scale = g.tensor([1, 1, e], dtype="float32", name="scale")
    eps_t = g.scalar(eps, dtype="float32", rank=3, name="epsilon")
    sh = host(scale.dims, np.float32)
    bh = host((1, 1, e), np.float32)
    xh = host(x.dims, BF16)
    feed = {x: to_device(xh, x), scale: to_device(sh, scale)}
    if mode == "layer":
        bias = g.tensor([1, 1, e], dtype="float32", name="bias")
        feed[bias] = to_device(bh, bias)
        out = g.layernorm(x, scale, bias, epsilon=eps_t, training=True)
    else:
        out = g.rmsnorm(x, scale, epsilon=eps_t, training=True)
    outs = {t: empty(t) for t in out if t is not None}
    plan = g.build()
    xf = f64(xh)
    for value in (eps, 0.5):  # the epsilon tensor changes per execution, the plan stays
        plan.set_scalar(eps_t, value)
        plan.execute(feed | outs)
        mean = xf.mean(axis=-1, keepdims=True) if mode == "layer" else 0.0
        var = ((xf - mean) ** 2).mean(axis=-1, keepdims=True)
        inv = 1 / np.sqrt(var + value)
        y = (xf - mean) * inv * sh + (bh if mode == "layer" else 0.0)
        check_close(outs[out.y], y, TOL[BF16], f"{mode}norm y (epsilon {value})")
        check_close(outs[out.inv_variance], inv, 1e-3, f"{mode}norm inv_variance")
