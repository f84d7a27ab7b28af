"""Attention and normalisation graphs executed on the GPU (GPU tier: ``pytest -m gpu``).

References are computed in float64 with NumPy from the inputs rounded to their dtype: attention
as ``softmax(scale * Q K^T + bias, masked) V`` with K/V heads repeated for grouped-query
attention, its gradients from the softmax backward formulas, the norms from their definitions.
Where PyTorch is installed, SDPA and the norms are also checked against
``torch.nn.functional`` and autograd. Features newer than the loaded cuDNN's unified SDPA
operation (masks and bias need 9.21, dropout 9.22, the backward 9.28) run as the composite graph
(``implementation="auto"``); ``tests/test_attention_composite_gpu.py`` checks that graph itself.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from pycudnn.graph import Graph, Tensor

pytestmark = pytest.mark.gpu

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
# Max |error| allowed, relative to max(1, max |reference|): flash attention accumulates in fp32
# but rounds P to the input type before P @ V.
TOL = {F16: 1e-2, BF16: 4e-2, np.dtype(np.float32): 1e-3}
GRAD_TOL = {F16: 3e-2, BF16: 8e-2}
RNG = np.random.default_rng(2024)


# -- helpers -----------------------------------------------------------------------------------


def _device_array() -> Any:
    from _nvbind.device_array import DeviceArray

    return DeviceArray


def host(shape: tuple[int, ...], dtype: Any, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.dtype(dtype))


def laid_out(a: np.ndarray, strides: tuple[int, ...]) -> np.ndarray:
    perm = sorted(range(a.ndim), key=lambda i: (-strides[i], i))
    return np.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))


def to_device(a: np.ndarray, t: Tensor) -> Any:
    return _device_array().from_numpy(laid_out(a, t.strides))


def empty(t: Tensor) -> Any:
    t.graph.key()  # resolve output dtypes
    return _device_array().empty(t.dims, t.dtype, strides=t.strides)


def f64(a: Any) -> np.ndarray:
    return np.asarray(a.to_numpy() if hasattr(a, "to_numpy") else a, dtype=np.float64)


def check_close(got: Any, ref: np.ndarray, tol: float, what: str) -> None:
    g = f64(got)
    scale = max(1.0, float(np.max(np.abs(ref))))
    err = float(np.max(np.abs(g - ref)))
    assert err <= tol * scale, f"{what}: max |error| {err:.4g} > {tol * scale:.4g}"


def qkv_tensor(g: Graph, name: str, dims: tuple[int, ...], layout: str, dtype: Any) -> Tensor:
    _, h, s, d = dims
    strides = [s * h * d, d, h * d, 1] if layout == "bshd" else [h * s * d, s * d, d, 1]
    return g.tensor(list(dims), strides, dtype=dtype, name=name)


def sdpa_ref(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    scale: float,
    causal: bool = False,
    window: int | None = None,
    bias: np.ndarray | None = None,
    seq_kv: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(O, log-sum-exp stats, P) in float64."""
    q, k, v = f64(q), f64(k), f64(v)
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = scale * q @ k.transpose(0, 1, 3, 2)
    if bias is not None:
        s = s + f64(bias)
    row = np.arange(s.shape[2])[:, None]
    col = np.arange(s.shape[3])[None, :]
    keep = np.ones(s.shape, dtype=bool)
    if causal or window is not None:
        keep &= row >= col
    if window is not None:
        keep &= col > row - window
    if seq_kv is not None:
        keep &= col[None, None] < seq_kv.reshape(-1, 1, 1, 1)
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    p = e / total
    return p @ v, m + np.log(total), p


def sdpa_backward_ref(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, do: np.ndarray, *, p: np.ndarray, scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v, do = f64(q), f64(k), f64(v), f64(do)
    hq, hk = q.shape[1], k.shape[1]
    rep = hq // hk
    ke, ve = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    o = p @ ve
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ ve.transpose(0, 1, 3, 2)
    ds = p * (dp - (do * o).sum(axis=-1, keepdims=True))
    dq = scale * ds @ ke
    dk = scale * ds.transpose(0, 1, 3, 2) @ q

    def fold(a: np.ndarray) -> np.ndarray:  # sum the gradients of the heads sharing a K/V head
        return a.reshape(a.shape[0], hk, rep, *a.shape[2:]).sum(axis=2)

    return dq, fold(dk), fold(dv)


# -- SDPA forward ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dims", "layout", "dtype"),
    [
        ((2, 8, 8, 128, 128, 64), "bshd", F16),
        ((2, 8, 2, 127, 129, 64), "bhsd", BF16),  # grouped-query, odd lengths
        ((1, 16, 1, 200, 77, 128), "bshd", BF16),  # multi-query
    ],
)
def test_sdpa_forward(dims: tuple[int, ...], layout: str, dtype: np.dtype) -> None:
    b, hq, hk, sq, skv, d = dims
    g = Graph("sdpa")
    q = qkv_tensor(g, "q", (b, hq, sq, d), layout, dtype)
    k = qkv_tensor(g, "k", (b, hk, skv, d), layout, dtype)
    v = qkv_tensor(g, "v", (b, hk, skv, d), layout, dtype)
    o, stats = g.sdpa(q, k, v, return_stats=True)
    assert stats is not None
    qh, kh, vh = host(q.dims, dtype), host(k.dims, dtype), host(v.dims, dtype)
    od, sd = empty(o), empty(stats)
    g.build().execute(
        {q: to_device(qh, q), k: to_device(kh, k), v: to_device(vh, v), o: od, stats: sd}
    )
    ref_o, ref_stats, _ = sdpa_ref(qh, kh, vh, scale=1 / math.sqrt(d))
    check_close(od, ref_o, TOL[dtype], f"sdpa O {dims} {layout}")
    check_close(sd, ref_stats, 1e-3, f"sdpa stats {dims} {layout}")


def test_sdpa_padding_with_sequence_lengths() -> None:
    b, h, s, d = 3, 4, 64, 64
    g = Graph("padded")
    q, k, v = (qkv_tensor(g, n, (b, h, s, d), "bshd", F16) for n in "qkv")
    slq = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_q")
    slkv = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_kv")
    o, _ = g.sdpa(q, k, v, seq_len_q=slq, seq_len_kv=slkv)
    lens = np.array([64, 33, 5], dtype=np.int32).reshape(b, 1, 1, 1)
    qh = host(q.dims, F16)
    od = empty(o)
    qd = to_device(qh, q)  # self-attention: one array for Q, K and V
    g.build().execute(
        {q: qd, k: qd, v: qd, slq: to_device(lens, slq), slkv: to_device(lens, slkv), o: od}
    )
    ref, _, _ = sdpa_ref(qh, qh, qh, scale=1 / math.sqrt(d), seq_kv=lens)
    got = f64(od)
    for i, n in enumerate(lens.ravel()):  # rows past a sequence's length are padding
        check_close(got[i, :, :n], ref[i, :, :n], TOL[F16], f"padded batch {i} (length {n})")


@pytest.mark.parametrize(
    "options", [{"causal": True}, {"sliding_window": 17}, {"causal": True, "bias": True}]
)
def test_sdpa_masks_and_bias(options: dict[str, Any]) -> None:
    b, hq, hk, sq, skv, d = 2, 8, 2, 128, 128, 64
    g = Graph("masked")
    q = qkv_tensor(g, "q", (b, hq, sq, d), "bshd", BF16)
    k = qkv_tensor(g, "k", (b, hk, skv, d), "bshd", BF16)
    v = qkv_tensor(g, "v", (b, hk, skv, d), "bshd", BF16)
    opts = dict(options)
    bias_t = None
    if opts.pop("bias", False):
        bias_t = g.tensor([1, hq, sq, skv], dtype=BF16, name="bias")
        opts["bias"] = bias_t
    o, _ = g.sdpa(q, k, v, **opts)  # the composite graph before cuDNN 9.21
    qh, kh, vh = host(q.dims, BF16), host(k.dims, BF16), host(v.dims, BF16)
    feed = {q: to_device(qh, q), k: to_device(kh, k), v: to_device(vh, v)}
    bh = None
    if bias_t is not None:
        bh = host(bias_t.dims, BF16)
        feed[bias_t] = to_device(bh, bias_t)
    od = empty(o)
    plan = g.build()
    plan.execute({**feed, o: od})
    ref, _, _ = sdpa_ref(
        qh,
        kh,
        vh,
        scale=1 / math.sqrt(d),
        causal=bool(options.get("causal")),
        window=options.get("sliding_window"),
        bias=bh,
    )
    check_close(od, ref, TOL[BF16], f"sdpa {options}")
    # A saved and reloaded plan keeps its score subgraph.
    od2 = empty(o)
    g.load_plan(plan.to_json()).execute({**feed, o: od2})
    check_close(od2, ref, TOL[BF16], f"sdpa {options} (reloaded plan)")


def test_sdpa_dropout_runs() -> None:
    g = Graph("dropout")
    q, k, v = (qkv_tensor(g, n, (2, 4, 64, 64), "bshd", F16) for n in "qkv")
    seed = g.tensor([1, 1, 1, 1], dtype="int64", name="seed")
    offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    o, _ = g.sdpa(q, k, v, dropout=0.5, seed=seed, offset=offset)  # composite before 9.22
    qh = host(q.dims, F16)
    one = np.array([[[[7]]]], dtype=np.int64)
    runs = []
    for _ in range(2):
        od = empty(o)
        qd = to_device(qh, q)
        g.build().execute(
            {q: qd, k: qd, v: qd, seed: to_device(one, seed), offset: to_device(one, offset), o: od}
        )
        runs.append(f64(od))
    ref, _, _ = sdpa_ref(qh, qh, qh, scale=1 / 8)
    assert np.array_equal(runs[0], runs[1]), "same seed and offset must drop the same weights"
    assert float(np.max(np.abs(runs[0] - ref))) > TOL[F16], "dropout 0.5 changed nothing"


# -- SDPA backward -----------------------------------------------------------------------------


@pytest.mark.parametrize(("hk", "causal"), [(8, False), (2, True), (1, False)])
def test_sdpa_backward(hk: int, causal: bool) -> None:
    b, hq, s, d = 2, 8, 129, 64
    dtype = BF16
    scale = 1 / math.sqrt(d)
    # before cuDNN 9.28 the backward runs as the composite graph (the unified one is refused)
    fwd = Graph("fwd")
    q = qkv_tensor(fwd, "q", (b, hq, s, d), "bshd", dtype)
    k = qkv_tensor(fwd, "k", (b, hk, s, d), "bshd", dtype)
    v = qkv_tensor(fwd, "v", (b, hk, s, d), "bshd", dtype)
    o, stats = fwd.sdpa(q, k, v, causal=causal, return_stats=True)
    assert stats is not None
    qh, kh, vh, doh = (host(t, dtype) for t in (q.dims, k.dims, v.dims, o.dims))
    qd, kd, vd = to_device(qh, q), to_device(kh, k), to_device(vh, v)
    od, sd = empty(o), empty(stats)
    fwd.build().execute({q: qd, k: kd, v: vd, o: od, stats: sd})

    bwd = Graph("bwd")
    tq, tk, tv = (
        qkv_tensor(bwd, n, t.dims, "bshd", dtype) for n, t in (("q", q), ("k", k), ("v", v))
    )
    to = qkv_tensor(bwd, "o", o.dims, "bshd", dtype)
    tdo = qkv_tensor(bwd, "do", o.dims, "bshd", dtype)
    tst = bwd.tensor(list(stats.dims), name="stats")
    dq, dk, dv = bwd.sdpa_backward(tq, tk, tv, to, tdo, stats=tst, causal=causal)
    dqd, dkd, dvd = empty(dq), empty(dk), empty(dv)
    bwd.build().execute(
        {
            tq: qd,
            tk: kd,
            tv: vd,
            to: od,
            tdo: to_device(doh, tdo),
            tst: sd,
            dq: dqd,
            dk: dkd,
            dv: dvd,
        }
    )
    _, _, p = sdpa_ref(qh, kh, vh, scale=scale, causal=causal)
    rq, rk, rv = sdpa_backward_ref(qh, kh, vh, doh, p=p, scale=scale)
    check_close(dqd, rq, GRAD_TOL[dtype], f"dQ hk={hk} causal={causal}")
    check_close(dkd, rk, GRAD_TOL[dtype], f"dK hk={hk} causal={causal}")
    check_close(dvd, rv, GRAD_TOL[dtype], f"dV hk={hk} causal={causal}")


def test_sdpa_against_torch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is the second reference when installed")
    b, h, s, d = 2, 4, 100, 64
    g = Graph("torch")
    q = qkv_tensor(g, "q", (b, h, s, d), "bshd", F16)
    k = qkv_tensor(g, "k", (b, h, s, d), "bshd", F16)
    v = qkv_tensor(g, "v", (b, h, s, d), "bshd", F16)
    o, _ = g.sdpa(q, k, v)
    qh, kh, vh = host(q.dims, F16), host(k.dims, F16), host(v.dims, F16)
    od = empty(o)
    g.build().execute({q: to_device(qh, q), k: to_device(kh, k), v: to_device(vh, v), o: od})
    tq, tk, tv = (torch.from_numpy(a.astype(np.float32)).cuda() for a in (qh, kh, vh))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv).cpu().numpy()
    check_close(od, ref.astype(np.float64), TOL[F16], "sdpa vs torch")


# -- normalisation -----------------------------------------------------------------------------


def _norm_ref(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, ...]:
    mean = x.mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return mean, inv, (x - mean) * inv


@pytest.mark.parametrize("dtype", [F16, BF16, np.dtype(np.float32)])
def test_layernorm_training_forward_and_backward(dtype: np.dtype) -> None:
    rows, hidden, eps = 300, 768, 1e-5
    g = Graph("ln")
    x = g.tensor([rows, hidden, 1], dtype=dtype, name="x")
    scale = g.tensor([1, hidden, 1], name="scale")
    bias = g.tensor([1, hidden, 1], name="bias")
    out = g.layernorm(x, scale, bias, epsilon=eps, training=True)
    assert out.mean is not None and out.inv_variance is not None
    xh = host(x.dims, dtype)
    sh, bh = host(scale.dims, np.float32), host(bias.dims, np.float32)
    yd, md, vd = empty(out.y), empty(out.mean), empty(out.inv_variance)
    xd = to_device(xh, x)
    g.build().execute(
        {
            x: xd,
            scale: to_device(sh, scale),
            bias: to_device(bh, bias),
            out.y: yd,
            out.mean: md,
            out.inv_variance: vd,
        }
    )
    mean, inv, xhat = _norm_ref(f64(xh), (1, 2), eps)
    check_close(yd, xhat * f64(sh) + f64(bh), TOL[dtype], "layernorm y")
    check_close(md, mean, 1e-3, "layernorm mean")
    check_close(vd, inv, 1e-3, "layernorm inv_variance")

    gb = Graph("ln_bwd")
    bx = gb.tensor([rows, hidden, 1], dtype=dtype, name="x")
    bdy = gb.tensor([rows, hidden, 1], dtype=dtype, name="dy")
    bs = gb.tensor([1, hidden, 1], name="scale")
    bm = gb.tensor([rows, 1, 1], name="mean")
    bv = gb.tensor([rows, 1, 1], name="inv_variance")
    grads = gb.layernorm_backward(bdy, bx, bs, bm, bv)
    assert grads.dbias is not None
    dyh = host(bx.dims, dtype)
    dxd, dsd, dbd = empty(grads.dx), empty(grads.dscale), empty(grads.dbias)
    gb.build().execute(
        {
            bx: xd,
            bdy: to_device(dyh, bdy),
            bs: to_device(sh, bs),
            bm: md,
            bv: vd,
            grads.dx: dxd,
            grads.dscale: dsd,
            grads.dbias: dbd,
        }
    )
    dy = f64(dyh)
    dxhat = dy * f64(sh)
    n = hidden
    dx = inv * (
        dxhat
        - dxhat.sum(axis=1, keepdims=True) / n
        - xhat * (dxhat * xhat).sum(axis=1, keepdims=True) / n
    )
    check_close(dxd, dx, GRAD_TOL.get(dtype, 1e-3), "layernorm dx")
    check_close(dsd, (dy * xhat).sum(axis=0, keepdims=True), 1e-2, "layernorm dscale")
    check_close(dbd, dy.sum(axis=0, keepdims=True), 1e-2, "layernorm dbias")


def test_rmsnorm_forward_and_backward() -> None:
    rows, hidden, eps, dtype = 256, 1024, 1e-6, BF16
    g = Graph("rms")
    x = g.tensor([rows, hidden, 1], dtype=dtype, name="x")
    scale = g.tensor([1, hidden, 1], name="scale")
    out = g.rmsnorm(x, scale, epsilon=eps, training=True)
    assert out.inv_variance is not None
    xh, sh = host(x.dims, dtype), host(scale.dims, np.float32)
    yd, vd = empty(out.y), empty(out.inv_variance)
    xd = to_device(xh, x)
    g.build().execute({x: xd, scale: to_device(sh, scale), out.y: yd, out.inv_variance: vd})
    xf = f64(xh)
    inv = 1 / np.sqrt((xf**2).mean(axis=1, keepdims=True) + eps)
    check_close(yd, xf * inv * f64(sh), TOL[dtype], "rmsnorm y")
    check_close(vd, inv, 1e-3, "rmsnorm inv_variance")

    gb = Graph("rms_bwd")
    bx = gb.tensor([rows, hidden, 1], dtype=dtype, name="x")
    bdy = gb.tensor([rows, hidden, 1], dtype=dtype, name="dy")
    bs = gb.tensor([1, hidden, 1], name="scale")
    bv = gb.tensor([rows, 1, 1], name="inv_variance")
    grads = gb.rmsnorm_backward(bdy, bx, bs, bv)
    dyh = host(bx.dims, dtype)
    dxd, dsd = empty(grads.dx), empty(grads.dscale)
    gb.build().execute(
        {
            bx: xd,
            bdy: to_device(dyh, bdy),
            bs: to_device(sh, bs),
            bv: vd,
            grads.dx: dxd,
            grads.dscale: dsd,
        }
    )
    dy, xhat = f64(dyh), xf * inv
    dxhat = dy * f64(sh)
    dx = inv * (dxhat - xhat * (dxhat * xhat).mean(axis=1, keepdims=True))
    check_close(dxd, dx, GRAD_TOL[dtype], "rmsnorm dx")
    check_close(dsd, (dy * xhat).sum(axis=0, keepdims=True), 1e-2, "rmsnorm dscale")


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_batchnorm_training_inference_and_backward(fmt: str) -> None:
    n, c, h, w, eps, momentum, dtype = 8, 32, 9, 7, 1e-5, 0.1, F16
    g = Graph("bn")
    x = g.tensor([n, c, h, w], fmt=fmt, dtype=dtype, name="x")
    scale, bias, rm, rv = (g.tensor([1, c, 1, 1], name=s) for s in ("scale", "bias", "rm", "rv"))
    out = g.batchnorm(
        x, scale, bias, epsilon=eps, running_mean=rm, running_var=rv, momentum=momentum
    )
    assert out.mean is not None and out.inv_variance is not None
    assert out.running_mean is not None and out.running_var is not None
    xh = host(x.dims, dtype)
    sh, bh = host(scale.dims, np.float32), host(bias.dims, np.float32)
    rmh = host(rm.dims, np.float32)
    rvh = np.abs(host(rv.dims, np.float32)) + 0.5
    outs = {
        t: empty(t) for t in (out.y, out.mean, out.inv_variance, out.running_mean, out.running_var)
    }
    xd = to_device(xh, x)
    g.build().execute(
        {
            x: xd,
            scale: to_device(sh, scale),
            bias: to_device(bh, bias),
            rm: to_device(rmh, rm),
            rv: to_device(rvh, rv),
            **outs,
        }
    )
    xf = f64(xh)
    mean, inv, xhat = _norm_ref(xf, (0, 2, 3), eps)
    count = n * h * w
    var_unbiased = xf.var(axis=(0, 2, 3), keepdims=True) * count / (count - 1)
    check_close(outs[out.y], xhat * f64(sh) + f64(bh), TOL[dtype], f"batchnorm y {fmt}")
    check_close(outs[out.mean], mean, 1e-3, "batchnorm mean")
    check_close(outs[out.inv_variance], inv, 1e-3, "batchnorm inv_variance")
    check_close(
        outs[out.running_mean],
        (1 - momentum) * f64(rmh) + momentum * mean,
        1e-3,
        "running mean (PyTorch's update)",
    )
    check_close(
        outs[out.running_var],
        (1 - momentum) * f64(rvh) + momentum * var_unbiased,
        1e-3,
        "running var (PyTorch's update, unbiased batch variance)",
    )

    gi = Graph("bn_inference")
    ix = gi.tensor([n, c, h, w], fmt=fmt, dtype=dtype, name="x")
    ip = [gi.tensor([1, c, 1, 1], name=s) for s in ("scale", "bias", "mean", "inv_variance")]
    iy = gi.batchnorm_inference(ix, *ip)
    yd = empty(iy)
    gi.build().execute(
        {
            ix: xd,
            ip[0]: to_device(sh, ip[0]),
            ip[1]: to_device(bh, ip[1]),
            ip[2]: outs[out.mean],
            ip[3]: outs[out.inv_variance],
            iy: yd,
        }
    )
    check_close(yd, xhat * f64(sh) + f64(bh), TOL[dtype], f"batchnorm inference {fmt}")

    gb = Graph("bn_bwd")
    bx = gb.tensor([n, c, h, w], fmt=fmt, dtype=dtype, name="x")
    bdy = gb.tensor([n, c, h, w], fmt=fmt, dtype=dtype, name="dy")
    bs, bm, bv = (gb.tensor([1, c, 1, 1], name=s) for s in ("scale", "mean", "inv_variance"))
    grads = gb.batchnorm_backward(bdy, bx, bs, bm, bv)
    assert grads.dbias is not None
    dyh = host(bx.dims, dtype)
    dxd, dsd, dbd = empty(grads.dx), empty(grads.dscale), empty(grads.dbias)
    gb.build().execute(
        {
            bx: xd,
            bdy: to_device(dyh, bdy),
            bs: to_device(sh, bs),
            bm: outs[out.mean],
            bv: outs[out.inv_variance],
            grads.dx: dxd,
            grads.dscale: dsd,
            grads.dbias: dbd,
        }
    )
    dy = f64(dyh)
    dxhat = dy * f64(sh)
    ax = (0, 2, 3)
    dx = inv * (
        dxhat
        - dxhat.mean(axis=ax, keepdims=True)
        - xhat * (dxhat * xhat).mean(axis=ax, keepdims=True)
    )
    check_close(dxd, dx, GRAD_TOL[dtype], f"batchnorm dx {fmt}")
    check_close(dsd, (dy * xhat).sum(axis=ax, keepdims=True), 1e-2, "batchnorm dscale")
    check_close(dbd, dy.sum(axis=ax, keepdims=True), 1e-2, "batchnorm dbias")


def test_instancenorm_training() -> None:
    n, c, h, w, eps, dtype = 4, 16, 8, 8, 1e-5, F16
    g = Graph("in")
    x = g.tensor([n, c, h, w], fmt="NHWC", dtype=dtype, name="x")
    scale, bias = (g.tensor([1, c, 1, 1], name=s) for s in ("scale", "bias"))
    out = g.instancenorm(x, scale, bias, epsilon=eps, training=True)
    assert out.mean is not None and out.inv_variance is not None
    xh, sh, bh = host(x.dims, dtype), host(scale.dims, np.float32), host(bias.dims, np.float32)
    yd, md, vd = empty(out.y), empty(out.mean), empty(out.inv_variance)
    g.build().execute(
        {
            x: to_device(xh, x),
            scale: to_device(sh, scale),
            bias: to_device(bh, bias),
            out.y: yd,
            out.mean: md,
            out.inv_variance: vd,
        }
    )
    mean, inv, xhat = _norm_ref(f64(xh), (2, 3), eps)
    check_close(yd, xhat * f64(sh) + f64(bh), TOL[dtype], "instancenorm y")
    check_close(md, mean, 1e-3, "instancenorm mean")
    check_close(vd, inv, 1e-3, "instancenorm inv_variance")


def test_norms_against_torch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is the second reference when installed")
    rows, hidden = 64, 256
    g = Graph("ln_torch")
    x = g.tensor([rows, hidden, 1], dtype=F16, name="x")
    scale = g.tensor([1, hidden, 1], name="scale")
    bias = g.tensor([1, hidden, 1], name="bias")
    out = g.layernorm(x, scale, bias, epsilon=1e-5)
    xh, sh, bh = host(x.dims, F16), host(scale.dims, np.float32), host(bias.dims, np.float32)
    yd = empty(out.y)
    g.build().execute(
        {x: to_device(xh, x), scale: to_device(sh, scale), bias: to_device(bh, bias), out.y: yd}
    )
    ref = torch.nn.functional.layer_norm(
        torch.from_numpy(xh.astype(np.float32)).reshape(rows, hidden),
        (hidden,),
        torch.from_numpy(sh.reshape(hidden)),
        torch.from_numpy(bh.reshape(hidden)),
        eps=1e-5,
    ).numpy()
    check_close(
        f64(yd).reshape(rows, hidden), ref.astype(np.float64), TOL[F16], "layernorm vs torch"
    )
