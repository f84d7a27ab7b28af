"""The new operation kinds and conveniences executed on the GPU against NumPy (and PyTorch/CuPy
where they are installed) references (GPU tier: ``pytest -m gpu``).

Only the graphs cuDNN 9.28 plans for an H100 are executed (tests/test_operations_kinds.py records
which); each runs for two shapes and two dtypes.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pycudnn
from _nvbind.ffi import UnsupportedByLibraryError
from pycudnn.graph import Graph, Tensor
from pycudnn.plan import GraphNotSupportedError, build_engine, engine_configs

pytestmark = pytest.mark.gpu

BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(np.float32): 5e-3, np.dtype(np.float16): 1e-2, BF16: 5e-2}
RNG = np.random.default_rng(4321)


def _device_array() -> Any:
    from _nvbind.device_array import DeviceArray

    return DeviceArray


def needs(*descriptors: str) -> None:
    """Skip when the loaded cuDNN predates a kind (the method would refuse it, naming the version)."""
    import pycudnn
    from pycudnn.opgraph.kinds import kind_since

    for d in descriptors:
        since = kind_since(d)
        if since is not None and pycudnn.version_tuple() < since:
            pytest.skip(f"CUDNN_BACKEND_{d}_DESCRIPTOR needs cuDNN >= {since}")


def host(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.dtype(dtype))


def device(a: np.ndarray, t: Tensor) -> Any:
    """``a`` (logical order) on the GPU, laid out with ``t``'s strides."""
    perm = sorted(range(a.ndim), key=lambda i: (-t.strides[i], i))
    view = np.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))
    return _device_array().from_numpy(view)


def empty(t: Tensor) -> Any:
    t.graph.key()  # resolve dtypes
    return _device_array().empty(t.dims, t.dtype, strides=t.strides)


def f64(a: Any) -> np.ndarray:
    return np.asarray(a.to_numpy() if hasattr(a, "to_numpy") else a, dtype=np.float64)


def check_close(got: Any, ref: np.ndarray, dtype: Any, what: str) -> None:
    g = f64(got)
    scale = max(1.0, float(np.max(np.abs(ref))))
    err = float(np.max(np.abs(g - ref)))
    tol = TOL[np.dtype(dtype)] * scale
    assert err <= tol, f"{what}: max |error| {err:.4g} > {tol:.4g} ({np.dtype(dtype).name})"


def pool_ref(x: np.ndarray, win: int, stride: int, pad: int, mode: str) -> np.ndarray:
    n, c, h, w = x.shape
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(f64(x), [(0, 0), (0, 0), (pad, pad), (pad, pad)], constant_values=fill)
    oh, ow = (h + 2 * pad - win) // stride + 1, (w + 2 * pad - win) // stride + 1
    out = np.empty((n, c, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        patch = xp[:, :, i * stride : i * stride + win, j * stride : j * stride + win]
        out[:, :, i, j] = patch.max(axis=(2, 3)) if mode == "max" else patch.mean(axis=(2, 3))
    return out


SHAPES_4D = [(2, 16, 12, 12), (1, 8, 17, 9)]
DTYPES = ["float16", "float32"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES_4D)
@pytest.mark.parametrize(
    "setting", [("maxpool", 2, 2, 0), ("avgpool_include_padding", 3, 2, 1)], ids=["max", "avg"]
)
def test_resample_forward(
    shape: tuple[int, ...], dtype: str, setting: tuple[str, int, int, int]
) -> None:
    needs("OPERATION_RESAMPLE_FWD")
    mode, win, stride, pad = setting
    g = Graph("pool")
    x = g.tensor(shape, fmt="NHWC", dtype=dtype, name="x")
    y = g.resample(x, mode=mode, window=[win, win], stride=[stride, stride], padding=pad)
    assert isinstance(y, Tensor)
    xh = host(shape, dtype)
    out = empty(y)
    g.build(cache=False).execute({x: device(xh, x), y: out})
    check_close(out, pool_ref(xh, win, stride, pad, mode[:3]), dtype, f"{mode} {shape}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES_4D)
def test_avgpool_backward(shape: tuple[int, ...], dtype: str) -> None:
    needs("OPERATION_RESAMPLE_BWD")
    win, stride, pad = 3, 2, 1
    n, c, h, w = shape
    oh, ow = (h + 2 * pad - win) // stride + 1, (w + 2 * pad - win) // stride + 1
    g = Graph("avgpool_bwd")
    dy = g.tensor([n, c, oh, ow], fmt="NHWC", dtype=dtype, name="dy")
    dx = g.resample_backward(
        dy, mode="avgpool_include_padding", window=[win, win], stride=[stride, stride],
        padding=pad, dx_dims=shape,
    )  # fmt: skip
    dyh = host(dy.dims, dtype)
    ref = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    for i, j in itertools.product(range(oh), range(ow)):
        ref[:, :, i * stride : i * stride + win, j * stride : j * stride + win] += (
            f64(dyh)[:, :, i : i + 1, j : j + 1] / win**2
        )
    out = empty(dx)
    g.build(cache=False).execute({dy: device(dyh, dy), dx: out})
    check_close(out, ref[:, :, pad : pad + h, pad : pad + w], dtype, f"avgpool backward {shape}")


@pytest.mark.parametrize("channels", [16, 64])
@pytest.mark.parametrize("count", [64, 2048])
def test_batchnorm_finalize(channels: int, count: int) -> None:
    needs("OPERATION_BN_FINALIZE_STATISTICS")
    pc = [1, channels, 1, 1]
    g = Graph("bn_finalize")
    names = ("sum", "sq_sum", "scale", "bias", "rm", "rv")
    s, q, sc, b, rm, rv = (g.tensor(pc, fmt="NHWC", name=n) for n in names)
    eps, momentum = 1e-5, 0.1
    outs = g.batchnorm_finalize(
        s, q, sc, b, epsilon=eps, accum_count=count, prev_running_mean=rm,
        prev_running_var=rv, momentum=momentum,
    )  # fmt: skip
    data = RNG.standard_normal((count, channels))
    mean, var = data.mean(axis=0), data.var(axis=0)
    ins = {
        s: data.sum(axis=0),
        q: (data**2).sum(axis=0),
        sc: RNG.standard_normal(channels),
        b: RNG.standard_normal(channels),
        rm: RNG.standard_normal(channels),
        rv: np.abs(RNG.standard_normal(channels)),
    }
    arrays = {t: device(v.reshape(pc).astype(np.float32), t) for t, v in ins.items()}
    results = {role: empty(t) for role, t in outs.items()}
    g.build(cache=False).execute({**arrays, **{outs[r]: a for r, a in results.items()}})
    inv_std = 1.0 / np.sqrt(var + eps)
    ref = {
        "mean": mean,
        "inv_variance": inv_std,
        "eq_scale": ins[sc] * inv_std,
        "eq_bias": ins[b] - mean * ins[sc] * inv_std,
        "next_running_mean": (1 - momentum) * ins[rm] + momentum * mean,
        # the running variance is updated with the unbiased estimate (as PyTorch does)
        "next_running_var": (1 - momentum) * ins[rv] + momentum * var * count / (count - 1),
    }
    for role, want in ref.items():
        check_close(results[role], want.reshape(pc), np.float32, f"bn_finalize {role}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(4, 32, 8, 8), (2, 64, 16, 16)])
def test_conv_genstats(shape: tuple[int, ...], dtype: str) -> None:
    needs("OPERATION_GEN_STATS")
    c = shape[1]
    g = Graph("conv_genstats")
    x = g.tensor(shape, fmt="NHWC", dtype=dtype, name="x")
    wt = g.tensor([c, c, 1, 1], fmt="NHWC", dtype=dtype, name="w")
    y = g.conv_fprop(x, wt)
    y.set_output(True, dtype=dtype)
    s, q = g.genstats(y)
    xh, wh = host(shape, dtype), host(wt.dims, dtype)
    outs = {y: empty(y), s: empty(s), q: empty(q)}
    g.build(cache=False).execute({x: device(xh, x), wt: device(wh, wt), **outs})
    yref = np.einsum("nchw,kc->nkhw", f64(xh), f64(wh)[:, :, 0, 0])
    check_close(outs[y], yref, dtype, "conv output")
    yq = f64(outs[y])  # the statistics are of the stored (rounded) output
    check_close(outs[s], yq.sum(axis=(0, 2, 3)).reshape(1, c, 1, 1), np.float32, "sum")
    check_close(outs[q], (yq**2).sum(axis=(0, 2, 3)).reshape(1, c, 1, 1), np.float32, "sq_sum")


class _Window:
    """A CUDA-array-interface view of ``base``'s memory from element ``offset`` on, with its own
    shape and strides (in elements): an input that already lies in an output."""

    def __init__(self, base: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]):
        size = base.dtype.itemsize
        self.base = base  # keeps the memory alive
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": base.dtype.str,
            "data": (base.ptr + offset * size, False),
            "strides": tuple(st * size for st in strides),
            "version": 3,
        }


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(("n", "c", "hw"), [(2, 32, 8), (1, 64, 5)])
def test_in_place_concatenation_keeps_its_input_and_writes_the_rest(
    n: int, c: int, hw: int, dtype: str
) -> None:
    """``concatenate(in_place_index=1)``: the second input already is the channel slice
    [c, 2c) of the output (cuDNN 9.28 plans it fused after a convolution on the H100, engine 1).
    The convolution's channels must be written and the in-place slice left as it was."""
    g = Graph("in_place_concat")
    x = g.tensor([n, c, hw, hw], fmt="NHWC", dtype=dtype, name="x")
    wt = g.tensor([c, c, 1, 1], fmt="NHWC", dtype=dtype, name="w")
    y = g.conv_fprop(x, wt, name="conv")
    o_strides = [2 * c * hw * hw, 1, hw * 2 * c, 2 * c]  # the output's own (NHWC, 2c channels)
    o = g.tensor([n, c, hw, hw], strides=o_strides, dtype=dtype, name="o")
    out = g.concatenate([y, o], axis=1, in_place_index=1, name="cat")
    out.set_output(True)
    assert list(out.strides) == o_strides
    xh, wh, oh = host(x.dims, dtype), host(wt.dims, dtype), host(o.dims, dtype)
    start = np.full(out.dims, np.nan, dtype=np.dtype(xh.dtype))  # NaN where the conv writes
    start[:, c:] = oh
    buf = device(start, out)
    window = _device_array().from_array(_Window(buf, c, tuple(o.dims), tuple(o_strides)))
    g.build(cache=False).execute({x: device(xh, x), wt: device(wh, wt), o: window, out: buf})
    got = f64(buf)
    yref = np.einsum("nchw,kc->nkhw", f64(xh), f64(wh)[:, :, 0, 0])
    check_close(got[:, :c], yref, dtype, "convolution channels")
    np.testing.assert_array_equal(got[:, c:], f64(oh), err_msg="the in-place input changed")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(("tokens", "experts", "k", "n"), [(256, 8, 128, 64), (96, 3, 64, 32)])
def test_moe_grouped_matmul(tokens: int, experts: int, k: int, n: int, dtype: str) -> None:
    needs("OPERATION_MOE_GROUPED_MATMUL")
    g = Graph("moe")
    t = g.tensor([1, tokens, k], dtype=dtype, name="t")
    w = g.tensor([experts, k, n], dtype=dtype, name="w")
    f = g.tensor([experts, 1, 1], dtype="int32", name="f")
    y = g.moe_grouped_matmul(t, w, f)
    if pycudnn.version_tuple()[:2] == (9, 19):
        # 9.19's only MoE engine is Blackwell-only ("Moe grouped matmul is not supported on this
        # architecture": SM90); tests/test_operations_kinds.py records that outcome for 9.19
        major = pycudnn.DeviceProperties.for_device(0).compute_capability[0]
        if major < 10:
            with pytest.raises(GraphNotSupportedError, match="no engine supports graph 'moe'"):
                g.build(cache=False)
            return
    cuts = np.sort(RNG.choice(np.arange(1, tokens), experts - 1, replace=False))
    offsets = np.concatenate([[0], cuts]).astype(np.int32)
    th, wh = host(t.dims, dtype), host(w.dims, dtype)
    out = empty(y)
    g.build(cache=False).execute(
        {t: device(th, t), w: device(wh, w), f: device(offsets.reshape(experts, 1, 1), f), y: out}
    )
    ref = np.empty((1, tokens, n))
    bounds = [*offsets.tolist(), tokens]
    for e in range(experts):
        lo, hi = bounds[e], bounds[e + 1]
        ref[0, lo:hi] = f64(th)[0, lo:hi] @ f64(wh)[e]
    check_close(out, ref, dtype, "moe grouped matmul")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(("batch", "m", "k", "n"), [(8, 16, 64, 32), (3, 40, 32, 24)])
def test_slice_then_matmul(batch: int, m: int, k: int, n: int, dtype: str) -> None:
    needs("OPERATION_SLICE")
    g = Graph("slice_gemm")
    a = g.tensor([batch + 3, m + 7, k], dtype=dtype, name="a")
    s = g.slice(a, [(1, 1 + batch), (3, 3 + m), (0, k)])
    b = g.tensor([batch, k, n], dtype=dtype, name="b")
    y = g.relu(g.matmul(s, b))
    ah, bh = host(a.dims, dtype), host(b.dims, dtype)
    out = empty(y)
    g.build(cache=False).execute({a: device(ah, a), b: device(bh, b), y: out})
    ref = np.maximum(f64(ah)[1 : 1 + batch, 3 : 3 + m] @ f64(bh), 0)
    check_close(out, ref, dtype, "slice -> matmul -> relu")


# cuDNN 9.28 plans this fusion for float16 data only (bfloat16 and float32: no engine for an H100,
# asserted in tests/test_operations_kinds.py).
@pytest.mark.parametrize("dtype", ["float16"])
@pytest.mark.parametrize("shape", [(4, 32, 16, 16), (2, 64, 8, 8)])
def test_dgrad_drelu_batchnorm_backward_weights(shape: tuple[int, ...], dtype: str) -> None:
    needs("OPERATION_BN_BWD_WEIGHTS")
    n, c, h, w = shape
    k = 2 * c
    g = Graph("dgrad_drelu_dbn")
    dy = g.tensor([n, k, h, w], fmt="NHWC", dtype=dtype, name="dy")
    wt = g.tensor([k, c, 3, 3], fmt="NHWC", dtype=dtype, name="w")
    dg = g.conv_dgrad(dy, wt, padding=1, dx_dims=shape)
    x = g.tensor(shape, fmt="NHWC", dtype=dtype, name="x")
    m, v, sc, b = (g.tensor([1, c, 1, 1], fmt="NHWC", name=nm) for nm in ("m", "v", "sc", "b"))
    bn = g.add(g.mul(g.mul(g.sub(x, m), v), sc), b)
    dr = g.pointwise("relu_bwd", bn, dg)
    dr.set_output(True, dtype=dtype)
    outs = g.batchnorm_backward_weights(dr, x, m, v, sc)
    h_in = {
        dy: host(dy.dims, dtype),
        wt: host(wt.dims, dtype),
        x: host(shape, dtype),
        m: RNG.standard_normal((1, c, 1, 1)).astype(np.float32),
        v: (np.abs(RNG.standard_normal((1, c, 1, 1))) + 0.5).astype(np.float32),
        sc: RNG.standard_normal((1, c, 1, 1)).astype(np.float32),
        b: RNG.standard_normal((1, c, 1, 1)).astype(np.float32),
    }
    res = {t: empty(t) for t in (dr, outs["dscale"], outs["dbias"])}
    plan = g.build(cache=False)
    plan.execute(
        {t: device(a, t) for t, a in h_in.items()}
        | res
        | {t: empty(t) for r, t in outs.items() if r not in ("dscale", "dbias")}
    )
    dgx = np.zeros((n, c, h + 2, w + 2))
    wf = f64(h_in[wt])
    for i, j in itertools.product(range(3), range(3)):
        dgx[:, :, i : i + h, j : j + w] += np.einsum("nkhw,kc->nchw", f64(h_in[dy]), wf[:, :, i, j])
    dg_ref = dgx[:, :, 1 : 1 + h, 1 : 1 + w]
    xhat = (f64(h_in[x]) - h_in[m]) * h_in[v]
    dr_ref = np.where(xhat * h_in[sc] + h_in[b] > 0, dg_ref, 0.0)
    check_close(res[dr], dr_ref, dtype, "dgrad -> drelu")
    drq = f64(res[dr])
    check_close(
        res[outs["dbias"]], drq.sum(axis=(0, 2, 3)).reshape(1, c, 1, 1), np.float32, "dbias"
    )
    check_close(
        res[outs["dscale"]],
        (drq * xhat).sum(axis=(0, 2, 3)).reshape(1, c, 1, 1),
        np.float32,
        "dscale",
    )


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(("b", "s", "d"), [(4, 128, 256), (2, 40, 64)])
def test_adalayernorm_forward_and_backward(b: int, s: int, d: int, dtype: str) -> None:
    needs("OPERATION_NORM_FORWARD", "OPERATION_NORM_BACKWARD")
    eps = 1e-5
    xh, dyh = host((b, s, d), dtype), host((b, s, d), dtype)
    sch, bh = RNG.standard_normal((b, 1, d)), RNG.standard_normal((b, 1, d))
    x64 = f64(xh)
    mean = x64.mean(axis=2, keepdims=True)
    inv_std = 1.0 / np.sqrt(x64.var(axis=2, keepdims=True) + eps)
    xhat = (x64 - mean) * inv_std

    g = Graph("adaln")
    x = g.tensor([b, s, d], dtype=dtype, name="x")
    sc, bias = g.tensor([b, 1, d], name="scale"), g.tensor([b, 1, d], name="bias")
    y, m, v = g.adalayernorm(x, sc, bias, epsilon=eps)
    outs = {t: empty(t) for t in (y, m, v)}
    scale_d = device(sch.astype(np.float32), sc)
    g.build(cache=False).execute(
        {x: device(xh, x), sc: scale_d, bias: device(bh.astype(np.float32), bias), **outs}
    )
    check_close(outs[y], xhat * sch + bh, dtype, "adalayernorm y")
    check_close(outs[m], mean, np.float32, "adalayernorm mean")
    check_close(outs[v], inv_std, np.float32, "adalayernorm inv_variance")

    gb = Graph("adaln_bwd")
    dyt = gb.tensor([b, s, d], dtype=dtype, name="dy")
    xb = gb.tensor([b, s, d], dtype=dtype, name="x")
    scb = gb.tensor([b, 1, d], name="scale")
    mb, vb = gb.tensor([b, s, 1], name="mean"), gb.tensor([b, s, 1], name="inv_var")
    dx, dscale, dbias = gb.adalayernorm_backward(dyt, xb, scb, mb, vb)
    res = {t: empty(t) for t in (dx, dscale, dbias)}
    gb.build(cache=False).execute(
        {
            dyt: device(dyh, dyt),
            xb: device(xh, xb),
            scb: device(sch.astype(np.float32), scb),
            mb: device(mean.astype(np.float32), mb),
            vb: device(inv_std.astype(np.float32), vb),
            **res,
        }
    )
    dy64 = f64(dyh)
    dxhat = dy64 * sch
    dx_ref = inv_std * (
        dxhat
        - dxhat.mean(axis=2, keepdims=True)
        - xhat * (dxhat * xhat).mean(axis=2, keepdims=True)
    )
    check_close(res[dx], dx_ref, dtype, "adalayernorm dx")
    check_close(res[dscale], (dy64 * xhat).sum(axis=1, keepdims=True), np.float32, "dscale")
    check_close(res[dbias], dy64.sum(axis=1, keepdims=True), np.float32, "dbias")


def _rotate(x: np.ndarray, theta: np.ndarray, sign: float) -> np.ndarray:
    """Non-interleaved RoPE over the whole head dim (cuDNN's RoPE page): the halves rotate by
    ``sign * theta`` (``theta`` has equal halves, as rotary caches hold it)."""
    half = x.shape[-1] // 2
    lo, hi = x[..., :half], x[..., half:]
    rotated = np.concatenate([-hi, lo], axis=-1)
    return x * np.cos(theta) + sign * rotated * np.sin(theta)


def _freqs(s: int, d: int) -> np.ndarray:
    inv = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    angles = np.outer(np.arange(s), inv)  # [S, D/2]
    return np.concatenate([angles, angles], axis=-1).reshape(s, 1, 1, d)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(("b", "h", "s", "d"), [(2, 4, 128, 64), (1, 2, 64, 128)])
def test_rope_fused_with_sdpa(b: int, h: int, s: int, d: int, dtype: str) -> None:
    needs("OPERATION_ROPE_FWD", "OPERATION_ROPE_BWD", "OPERATION_SDPA_FWD", "OPERATION_SDPA_BWD")
    freqs = _freqs(s, d)
    theta = freqs.reshape(1, 1, s, d)  # [S, 1, 1, D] -> position s of a [B, H, S, D] tensor
    qh, kh, vh, doh = (host((b, h, s, d), dtype) for _ in range(4))
    scale = 1.0 / np.sqrt(d)

    g = Graph("rope_sdpa")
    q, k, v = (g.tensor([b, h, s, d], dtype=dtype, name=n) for n in "qkv")
    f = g.tensor([s, 1, 1, d], name="freqs")
    q_rot, k_rot = g.rope(q, f), g.rope(k, f)
    q_rot.set_output(True)
    k_rot.set_output(True)
    o, stats = g.sdpa(q_rot, k_rot, v, scale=scale, return_stats=True)
    assert stats is not None
    outs = {t: empty(t) for t in (q_rot, k_rot, o, stats)}
    feeds = {
        q: device(qh, q),
        k: device(kh, k),
        v: device(vh, v),
        f: device(freqs.astype(np.float32), f),
    }
    g.build(cache=False).execute({**feeds, **outs})
    qr, kr = _rotate(f64(qh), theta, 1.0), _rotate(f64(kh), theta, 1.0)
    check_close(outs[q_rot], qr, dtype, "RoPE(Q)")
    check_close(outs[k_rot], kr, dtype, "RoPE(K)")
    scores = scale * qr @ kr.swapaxes(-1, -2)
    lse = np.log(
        np.exp(scores - scores.max(-1, keepdims=True)).sum(-1, keepdims=True)
    ) + scores.max(-1, keepdims=True)
    p = np.exp(scores - lse)
    check_close(outs[o], p @ f64(vh), dtype, "SDPA(RoPE(Q), RoPE(K), V)")
    check_close(outs[stats], lse, np.float32, "stats")

    # backward: SDPA's gradients for the rotated Q and K, then RoPE's backward to Q and K
    gb = Graph("sdpa_bwd_rope")
    qb, kb, vb, ob, dob = (gb.tensor([b, h, s, d], dtype=dtype, name=n) for n in "qkvoO")
    sb = gb.tensor([b, h, s, 1], name="stats")
    fb = gb.tensor([s, 1, 1, d], name="freqs")
    if pycudnn.version_tuple() < (9, 28):
        # OPERATION_SDPA_BWD is declared from 9.17, but sdpa_backward is refused before 9.28
        # (9.19 finalizes no graph holding it): RoPE 9.24 to 9.27 still check the forward above
        with pytest.raises(UnsupportedByLibraryError, match=r"needs cuDNN 9\.28\.0"):
            gb.sdpa_backward(qb, kb, vb, ob, dob, stats=sb, scale=scale)
        return
    dq_rot, dk_rot, dv = gb.sdpa_backward(qb, kb, vb, ob, dob, stats=sb, scale=scale)
    dq, dk = gb.rope_backward(dq_rot, fb), gb.rope_backward(dk_rot, fb)
    res = {t: empty(t) for t in (dq, dk, dv)}
    gb.build(cache=False).execute(
        {
            qb: outs[q_rot],
            kb: outs[k_rot],
            vb: device(vh, vb),
            ob: outs[o],
            dob: device(doh, dob),
            sb: outs[stats],
            fb: device(freqs.astype(np.float32), fb),
            **res,
        }
    )
    qr, kr, o64 = f64(outs[q_rot]), f64(outs[k_rot]), f64(outs[o])
    scores = scale * qr @ kr.swapaxes(-1, -2)
    p = np.exp(scores - f64(outs[stats]))
    do64 = f64(doh)
    dp = do64 @ f64(vh).swapaxes(-1, -2)
    ds = p * (dp - (do64 * o64).sum(-1, keepdims=True))
    check_close(res[dv], p.swapaxes(-1, -2) @ do64, dtype, "dV")
    check_close(res[dq], _rotate(scale * ds @ kr, theta, -1.0), dtype, "dQ (through RoPE)")
    check_close(res[dk], _rotate(scale * ds.swapaxes(-1, -2) @ qr, theta, -1.0), dtype, "dK")


# -- tensor_like with the frameworks ----------------------------------------------------------------


def test_tensor_like_torch() -> None:
    torch = pytest.importorskip("torch")
    g = Graph()
    a = torch.zeros((2, 3, 4, 5), dtype=torch.bfloat16, device="cuda").permute(0, 2, 3, 1)
    t = g.tensor_like(a, name="a")
    assert t.dims == tuple(a.shape) and t.strides == tuple(a.stride()) and t.dtype == BF16


def test_tensor_like_cupy() -> None:
    cp = pytest.importorskip("cupy")
    g = Graph()
    a = cp.zeros((6, 4, 8), dtype=cp.float16)[:, ::2, :]
    t = g.tensor_like(a, name="a")
    assert t.dims == (6, 2, 8)
    assert t.strides == tuple(s // 2 for s in a.strides) and t.dtype == np.float16


# -- CUDA graphs --------------------------------------------------------------------------------------


def _rt() -> Any:
    from cuda.bindings import runtime

    return runtime


def _ok(result: Any) -> Any:
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert int(err) == 0, f"CUDA runtime error {err}"
    return rest[0] if len(rest) == 1 else rest


def test_cuda_graph_update_gives_the_new_result() -> None:
    needs("OPERATION_SLICE")
    rt = _rt()
    g = Graph("slice_gemm_graph")
    a = g.tensor([4, 24, 32], dtype="float16", name="a")
    b = g.tensor([4, 32, 16], dtype="float16", name="b")
    y = g.relu(g.matmul(g.slice(a, [(0, 4), (0, 16), (0, 32)]), b))
    cfgs = [
        c
        for c in engine_configs(g, heuristics=["a", "b", "fallback"])
        if "SUPPORTS_CUDA_GRAPH_NATIVE_API" in c.behavior_notes
    ]
    if not cfgs:
        pytest.skip("no engine for this graph advertises SUPPORTS_CUDA_GRAPH_NATIVE_API")
    plan = build_engine(g, cfgs[0].engine_id, cfgs[0].knobs)
    ws = _device_array().empty((max(plan.workspace_size, 1),), np.uint8)
    first = {a: host(a.dims, "float16"), b: host(b.dims, "float16")}
    second = {a: host(a.dims, "float16"), b: host(b.dims, "float16")}
    bufs1 = {t: device(v, t) for t, v in first.items()} | {y: empty(y)}
    bufs2 = {t: device(v, t) for t, v in second.items()} | {y: empty(y)}
    cg = _ok(rt.cudaGraphCreate(0))
    plan.populate_cuda_graph(bufs1, cg, workspace=ws)
    exe = _ok(rt.cudaGraphInstantiate(cg, 0))
    stream = _ok(rt.cudaStreamCreate())
    _ok(rt.cudaGraphLaunch(exe, stream))
    _ok(rt.cudaStreamSynchronize(stream))

    def ref(h: dict[Tensor, np.ndarray]) -> np.ndarray:
        return np.maximum(f64(h[a])[:, :16] @ f64(h[b]), 0)

    check_close(bufs1[y], ref(first), "float16", "populated graph")
    plan.update_cuda_graph(bufs2, cg, workspace=ws)
    _ok(rt.cudaGraphExecUpdate(exe, cg))
    _ok(rt.cudaGraphLaunch(exe, stream))
    _ok(rt.cudaStreamSynchronize(stream))
    check_close(bufs2[y], ref(second), "float16", "updated graph")
    _ok(rt.cudaGraphExecDestroy(exe))
    _ok(rt.cudaGraphDestroy(cg))
    _ok(rt.cudaStreamDestroy(stream))
    assert ctypes.sizeof(ctypes.c_void_p) == 8
