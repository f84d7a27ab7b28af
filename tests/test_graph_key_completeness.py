"""The graph key (``Graph.key()``) tells apart every setting that changes what a graph computes.

The plan cache (memory and disk) and plan files find a plan by this key: two graphs that compute
different things under one key would get each other's plan, and cuDNN executes whatever the plan
says (a silent wrong result). Each case below builds a base graph and varies one setting at a
time (every public ``Graph`` method, its modes and parameters, and every tensor property) to
another valid value that changes the computation, and asserts that the keys of the base and of
every variant are all different. Settings that do not change the computation (names, a default
given explicitly, a by-value scalar's value) may keep the key: a by-value scalar's value is not
in the key because the execute path reads it from the graph the plan is used with, which the
end-to-end tests check through a shared :class:`~pycudnn.plan.PlanCache` with deviceless plans
for the committed H100 properties (a hit for a graph with another value executes with that
graph's value, from memory and from disk; graphs differing in a setting get no hit).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import pycudnn
from _nvbind.ffi import UnsupportedByLibraryError
from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph, GraphError, Tensor
from pycudnn.opgraph.attention_fp8 import SCALE_ROLES
from pycudnn.opgraph.attention_fp8_backward import BWD_SCALE_ROLES
from pycudnn.plan import PlanCache
from pycudnn.plan.serialization import SCALARS_FIELD

NHWC = "NHWC"


class Case(NamedTuple):
    build: Callable[..., Graph]
    #: one setting changed each: every key differs from the base's and from each other's
    differ: list[dict[str, Any]]
    #: settings that compute the same: the key stays the base's
    same: Sequence[dict[str, Any]] = ()


def bshd(
    g: Graph, name: str, *, h: int = 2, s: int = 128, d: int = 64, dtype: str = "bfloat16"
) -> Tensor:
    return g.tensor([1, h, s, d], [s * h * d, d, h * d, 1], dtype=dtype, name=name)


def four(g: Graph, name: str, dtype: str = "float16") -> Tensor:
    return g.tensor([2, 8, 4, 4], dtype=dtype, name=name)


# -- tensors and graph defaults ----------------------------------------------------------------
def tensors(
    *,
    dims: Any = (2, 8, 4, 4),
    strides: Any = None,
    dtype: str = "float16",
    alignment: int = 16,
    kept: bool = False,
    name: str = "x",
    scalar_dtype: str = "float32",
    value: Any = 2.0,
    as_tensor: bool = False,
) -> Graph:
    g = Graph("t")
    x = g.tensor(list(dims), strides, dtype=dtype, alignment=alignment, name=name)
    if as_tensor:
        s = g.tensor([1, 1, 1, 1], dtype=scalar_dtype, by_value=value)
    else:
        s = g.scalar(value, dtype=scalar_dtype)
    y = g.scale(x, s)
    g.relu(y)
    if kept:
        y.set_output()  # an intermediate kept in memory: not virtual
    return g


def by_value(flag: bool = True) -> Graph:
    g = Graph("t")
    s = g.tensor([1, 1, 1, 1], by_value=flag)
    g.scale(four(g, "x"), s)
    return g


def vectorized(fmt: str = "NC/32HW32") -> Graph:
    g = Graph("v")
    x = g.tensor([1, 64, 8, 8], fmt=fmt, dtype="int8", name="x")
    g.conv_fprop(x, g.tensor([32, 64, 3, 3], fmt=fmt, dtype="int8", name="w"), padding=1)
    return g


def defaults(
    *,
    compute: str = "float32",
    intermediate: str = "float32",
    io: str | None = None,
    keep: bool = False,
    keep_dtype: str | None = None,
    out_strides: Any = None,
) -> Graph:
    g = Graph("d", compute_dtype=compute, intermediate_dtype=intermediate, io_dtype=io)
    y = g.relu(four(g, "x"))
    if keep:
        y.set_output(dtype=keep_dtype)
    out = None if out_strides is None else g.tensor([2, 8, 4, 4], out_strides, dtype="float16")
    g.tanh(y, out=out)
    return g


def tensor_like(alignment: int | None = None) -> Graph:
    g = Graph("l")
    g.relu(g.tensor_like(np.zeros((2, 8, 4, 4), np.float16), name="x", alignment=alignment))
    return g


# -- pointwise ---------------------------------------------------------------------------------
def binary(mode: str = "ADD", b_dims: Any = (1, 8, 1, 1), **kw: Any) -> Graph:
    g = Graph("p")
    g.pointwise(mode, four(g, "x"), g.tensor(list(b_dims), dtype="float16", name="b"), **kw)
    return g


def unary(mode: str = "RELU_FWD", **kw: Any) -> Graph:
    g = Graph("p")
    g.pointwise(mode, four(g, "x"), **kw)
    return g


def activation(method: str, **kw: Any) -> Graph:
    g = Graph("p")
    getattr(g, method)(four(g, "x"), **kw)
    return g


def gen_index(axis: int = 2) -> Graph:
    g = Graph("p")
    index = g.pointwise("GEN_INDEX", four(g, "x", "float32"), axis=axis, out_dtype="int32")
    g.identity(index, out_dtype="float32")
    return g


def select(swap: bool = False) -> Graph:
    g = Graph("p")
    mask, a, b = four(g, "m", "bool"), four(g, "a", "float32"), four(g, "b", "float32")
    g.binary_select(mask, *((b, a) if swap else (a, b)))
    return g


# -- convolution, matmul, reduction, resample --------------------------------------------------
def conv(
    kind: str,
    *,
    padding: int = 1,
    post_padding: int | None = None,
    stride: int = 1,
    dilation: int = 1,
    groups: int = 1,
    **kw: Any,
) -> Graph:
    g = Graph("c")
    post = padding if post_padding is None else post_padding
    out = (16 + padding + post - dilation * 2 - 1) // stride + 1
    settings = dict(padding=padding, post_padding=post_padding, stride=stride, dilation=dilation)
    settings.update(groups=groups, **kw)
    x = g.tensor([2, 16, 16, 16], fmt=NHWC, dtype="float16", name="x")
    w = g.tensor([32, 16 // groups, 3, 3], fmt=NHWC, dtype="float16", name="w")
    dy = g.tensor([2, 32, out, out], fmt=NHWC, dtype="float16", name="dy")
    if kind == "conv_fprop":
        g.conv_fprop(x, w, **settings)
    elif kind == "conv_dgrad":
        g.conv_dgrad(dy, w, dx_dims=[2, 16, 16, 16], **settings)
    else:
        g.conv_wgrad(x, dy, dw_dims=[32, 16 // groups, 3, 3], **settings)
    for t in (x, w, dy):
        if not t.consumers:  # the operand this kind does not read: give it a reader
            g.relu(t)
    return g


def matmul(transposed_b: bool = False, m: int = 64, **kw: Any) -> Graph:
    g = Graph("m")
    a = g.tensor([2, m, 32], dtype="float16", name="a")
    b = g.tensor([2, 32, 48], [32 * 48, 1, 32] if transposed_b else None, dtype="float16")
    g.matmul(a, b, **kw)
    return g


def reduction(out_dims: Any = (2, 8, 1, 1), **kw: Any) -> Graph:
    g = Graph("r")
    g.reduction(four(g, "x", "float32"), out_dims=list(out_dims), **kw)
    return g


def resample(window: Any = (2, 2), **kw: Any) -> Graph:
    g = Graph("r")
    g.resample(g.tensor([2, 16, 32, 32], fmt=NHWC, dtype="float16"), window=list(window), **kw)
    return g


def resample_backward(**kw: Any) -> Graph:
    g = Graph("r")
    dy = g.tensor([2, 16, 16, 16], fmt=NHWC, dtype="float16", name="dy")
    index = g.tensor([2, 16, 16, 16], fmt=NHWC, dtype="int8", name="index")
    g.resample_backward(dy, index=index, dx_dims=[2, 16, 32, 32], window=[2, 2], **kw)
    return g


# -- normalization and statistics --------------------------------------------------------------
def norm(method: str, epsilon_tensor: bool = False, epsilon: float = 1e-5, **kw: Any) -> Graph:
    g = Graph("n")
    x = g.tensor([4, 128, 1, 1], dtype="bfloat16", name="x")
    s, b = g.tensor([1, 128, 1, 1], name="s"), g.tensor([1, 128, 1, 1], name="b")
    getattr(g, method)(x, s, b, epsilon=g.scalar(epsilon) if epsilon_tensor else epsilon, **kw)
    return g


def nhwc_norm(method: str, peers: int = 0, running: bool = False, **kw: Any) -> Graph:
    g = Graph("n")
    x = g.tensor([4, 32, 8, 8], fmt=NHWC, dtype="float16", name="x")
    s, b = g.tensor([1, 32, 1, 1], name="s"), g.tensor([1, 32, 1, 1], name="b")
    if peers:
        kw["peer_stats"] = [g.tensor([2, 4 * 32, 1, 1], name=f"peer{i}") for i in range(peers)]
    if running:
        kw.update(running_mean=g.tensor([1, 32, 1, 1]), running_var=g.tensor([1, 32, 1, 1]))
        if kw.get("momentum") == "tensor":
            kw["momentum"] = g.scalar(0.1)
    getattr(g, method)(x, s, b, **kw)
    return g


def batchnorm_inference(implementation: str = "pointwise") -> Graph:
    g = Graph("n")
    x = g.tensor([4, 32, 8, 8], fmt=NHWC, dtype="float16", name="x")
    s, b, m, iv = (g.tensor([1, 32, 1, 1], name=n) for n in ("s", "b", "m", "iv"))
    g.batchnorm_inference(x, s, b, m, iv, implementation=implementation)
    return g


def norm_backward(method: str, **kw: Any) -> Graph:
    g = Graph("n")
    x, dy = (g.tensor([4, 128, 1, 1], dtype="bfloat16", name=n) for n in ("x", "dy"))
    s, iv = g.tensor([1, 128, 1, 1], name="s"), g.tensor([4, 1, 1, 1], name="iv")
    if method == "layernorm_backward":
        g.layernorm_backward(dy, x, s, g.tensor([4, 1, 1, 1], name="m"), iv, **kw)
    else:
        g.rmsnorm_backward(dy, x, s, iv, **kw)
    return g


def batchnorm_backward(peers: int = 0) -> Graph:
    g = Graph("n")
    x, dy = (g.tensor([4, 32, 8, 8], fmt=NHWC, dtype="float16", name=n) for n in ("x", "dy"))
    s, m, iv = (g.tensor([1, 32, 1, 1], name=n) for n in ("s", "m", "iv"))
    given = [g.tensor([2, 4 * 32, 1, 1], name=f"peer{i}") for i in range(peers)]
    g.batchnorm_backward(dy, x, s, m, iv, **({"peer_stats": given} if peers else {}))
    return g


def adalayernorm(**kw: Any) -> Graph:
    g = Graph("a")
    x = g.tensor([4, 128, 256], dtype="bfloat16", name="x")
    g.adalayernorm(x, g.tensor([4, 1, 256], name="scale"), g.tensor([4, 1, 256]), **kw)
    return g


def adalayernorm_backward(**kw: Any) -> Graph:
    g = Graph("a")
    x, dy = (g.tensor([4, 128, 256], dtype="bfloat16", name=n) for n in ("x", "dy"))
    mean, iv = g.tensor([4, 128, 1], name="mean"), g.tensor([4, 128, 1], name="iv")
    g.adalayernorm_backward(dy, x, g.tensor([4, 1, 256], name="scale"), mean, iv, **kw)
    return g


def genstats(**kw: Any) -> Graph:
    g = Graph("s")
    g.genstats(g.tensor([8, 64, 16, 16], fmt=NHWC, dtype="float16", name="x"), **kw)
    return g


def bn_finalize(**kw: Any) -> Graph:
    g = Graph("s")
    s, q, sc, b, rm, rv = (
        g.tensor([1, 64, 1, 1], name=n) for n in ("s", "q", "sc", "b", "rm", "rv")
    )
    settings = {"epsilon": 1e-5, "accum_count": 2048, "momentum": 0.1, **kw}
    g.batchnorm_finalize(s, q, sc, b, prev_running_mean=rm, prev_running_var=rv, **settings)
    return g


def bn_backward_weights(**kw: Any) -> Graph:
    g = Graph("s")
    x, dy = (g.tensor([8, 64, 16, 16], fmt=NHWC, dtype="float16", name=n) for n in ("x", "dy"))
    stats = (g.tensor([1, 64, 1, 1], name=n) for n in ("m", "iv", "sc"))
    g.batchnorm_backward_weights(dy, x, *stats, **kw)
    return g


# -- shape and sequence operations -------------------------------------------------------------
def reshape(dims: Any = (2, 32, 16), **kw: Any) -> Graph:
    g = Graph("s")
    g.reshape(g.tensor([2, 4, 8, 16], dtype="float16", name="x"), list(dims), **kw)
    return g


def transpose(permutation: Any = (0, 2, 1, 3)) -> Graph:
    g = Graph("s")
    g.transpose(g.tensor([2, 4, 8, 16], dtype="float16", name="x"), list(permutation))
    return g


def transpose_packed(permutation: Any = (0, 2, 1, 3)) -> Graph:
    """Into a packed [4, 4, 4, 4] out=: every permutation has the same tensors (a transpose's
    own output takes strides that follow the permutation), so only the permutation differs."""
    g = Graph("s")
    out = g.tensor([4, 4, 4, 4], dtype="float16", name="y")
    g.transpose(g.tensor([4, 4, 4, 4], dtype="float16", name="x"), list(permutation), out=out)
    return g


def slice_(h: Any = (0, 4, 1), w: Any = (0, 16, 1), out_dims: Any = None) -> Graph:
    g = Graph("s")
    x = g.tensor([2, 4, 8, 16], dtype="float16", name="x")
    out = None if out_dims is None else g.tensor(list(out_dims), dtype="float16", name="y")
    g.slice(x, [slice(None), slice(None), slice(*h), slice(*w)], out=out)
    return g


def concatenate(axis: int = 1, swap: bool = False, **kw: Any) -> Graph:
    g = Graph("s")
    a, b = (g.tensor([2, 4, 8, 16], dtype="float16", name=n) for n in "ab")
    g.concatenate([b, a] if swap else [a, b], axis=axis, **kw)
    return g


def softmax(sink: bool = False, **kw: Any) -> Graph:
    g = Graph("s")
    x = g.tensor([2, 4, 64, 64], dtype="float16", name="x")
    g.softmax(x, sink=g.tensor([1, 4, 1, 1], name="sink") if sink else None, **kw)
    return g


def rope(method: str, **kw: Any) -> Graph:
    g = Graph("s")
    x = g.tensor([2, 4, 64, 64], dtype="float16", name="x")
    getattr(g, method)(x, g.tensor([64, 1, 1, 64], name="freqs"), **kw)
    return g


def paged_cache_load(max_seq_len: int = 128) -> Graph:
    g = Graph("s")
    c = g.tensor([64, 4, 16, 64], dtype="float16", name="c")
    pt = g.tensor([2, 1, 8, 1], dtype="int32", name="pt")
    g.paged_cache_load(c, pt, g.tensor([2, 1, 1, 1], dtype="int32"), max_seq_len=max_seq_len)
    return g


def expand_band(lower: int = 4, upper: int = 4, **kw: Any) -> Graph:
    g = Graph("s")
    x = g.tensor([1, 4, lower + upper + 1, 64], dtype="float16", name="x")
    g.expand_band_matrix(x, lower_bandwidth=lower, upper_bandwidth=upper, axis=2, **kw)
    return g


def contract_band(lower: int = 4, upper: int = 4, axis: int = 2, **kw: Any) -> Graph:
    g = Graph("s")
    x = g.tensor([1, 4, 64, 64], dtype="float16", name="x")
    g.contract_band_matrix(x, lower_bandwidth=lower, upper_bandwidth=upper, axis=axis, **kw)
    return g


def band_mask(side: str = "left", fill: bool = False, lengths: bool = False, **kw: Any) -> Graph:
    g = Graph("s")
    x = g.tensor([2, 4, 64, 64], name="x")
    kw[f"{side}_bound"] = g.tensor([1, 1, 1, 1], dtype="int32", name="bound")
    if fill:
        kw["fill"] = g.scalar(float("-inf"))
    if lengths:
        for role in ("seq_len_q", "seq_len_kv"):
            kw[role] = g.tensor([2, 1, 1, 1], dtype="int32", name=role)
    g.diagonal_band_mask(x, **kw)
    return g


# -- rng, signal, quantization, mixture of experts ---------------------------------------------
def rng(seed: int | None = 1, distribution: str = "bernoulli", **kw: Any) -> Graph:
    g = Graph("r")
    seed_t = g.tensor([1, 1, 1, 1], dtype="int64", name="seed") if seed is None else seed
    offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    if distribution == "bernoulli":
        kw.setdefault("probability", 0.1)
    g.rng([2, 4, 64, 64], seed=seed_t, offset=offset, distribution=distribution, **kw)
    return g


def signal(**kw: Any) -> Graph:
    g = Graph("r")
    flag = g.tensor([1, 1, 1, 1], dtype="int64", name="flag")
    g.signal(g.tensor([2, 4, 64, 64], dtype="float16", name="x"), flag, **{"value": 1, **kw})
    return g


def quantize(block_size: int = 32, **kw: Any) -> Graph:
    g = Graph("q")
    x = g.tensor([1, 1, 128, 256], dtype="bfloat16", name="x")
    kw.setdefault("out_dtype", "float8_e4m3fn")
    g.block_scale_quantize(x, block_size=block_size, **kw)
    return g


def dequantize(
    block_size: Any = 32, x_dims: Any = (1, 128, 256), s_dims: Any = (1, 128, 8), **kw: Any
) -> Graph:
    g = Graph("q")
    x = g.tensor(list(x_dims), dtype="float8_e4m3fn", name="x")
    s = g.tensor(list(s_dims), dtype="float8_e8m0fnu", name="s")
    g.block_scale_dequantize(x, s, block_size=block_size, **{"out_dtype": "float32", **kw})
    return g


def moe(index: bool = False, ks: bool = False, **kw: Any) -> Graph:
    g = Graph("q")
    t = g.tensor([1, 256, 128], dtype="bfloat16", name="t")
    w = g.tensor([8, 128, 64], dtype="bfloat16", name="w")
    if index:
        kw["token_index"] = g.tensor([1, 256, 1], dtype="int32", name="ti")
    if ks:
        kw["token_ks"] = g.tensor([1, 256, 1], dtype="int32", name="tk")
    g.moe_grouped_matmul(t, w, g.tensor([8, 1, 1], dtype="int32", name="f"), **kw)
    return g


def moe_backward(**kw: Any) -> Graph:
    g = Graph("q")
    t = g.tensor([1, 256, 128], dtype="bfloat16", name="t")
    d = g.tensor([1, 256, 64], dtype="bfloat16", name="d")
    g.moe_grouped_matmul_backward(t, d, g.tensor([8, 1, 1], dtype="int32", name="f"), **kw)
    return g


# -- attention ---------------------------------------------------------------------------------
def lengths(g: Graph, b: int = 1) -> dict[str, Tensor]:
    return {r: g.tensor([b, 1, 1, 1], dtype="int32", name=r) for r in ("seq_len_q", "seq_len_kv")}


def sdpa(
    *,
    h_k: int = 2,
    s_kv: int = 128,
    bias: bool = False,
    padded: bool = False,
    seeded: bool = False,
    sink: bool = False,
    rows: bool = False,
    scale_tensor: bool = False,
    block_mask: bool = False,
    **kw: Any,
) -> Graph:
    g = Graph("a")
    q, k, v = bshd(g, "q"), bshd(g, "k", h=h_k, s=s_kv), bshd(g, "v", h=h_k, s=s_kv)
    if bias:
        kw["bias"] = g.tensor([1, 2, 128, s_kv], dtype="bfloat16", name="bias")
    if padded:
        kw.update(lengths(g))
    if seeded:
        kw.update({r: g.tensor([1, 1, 1, 1], dtype="int64", name=r) for r in ("seed", "offset")})
    if sink:
        kw["sink_token"] = g.tensor([1, 2, 1, 1], name="sink")
    if rows:
        for role in ("score_max", "score_sum_exp"):
            kw[role] = g.tensor([1, 2, 128, 1], name=role)
    if scale_tensor:
        kw["attn_scale"] = g.scalar(0.125)
    if block_mask:
        kw["block_mask"] = g.tensor([1, 2, 1, s_kv // 128], dtype="int8", name="block_mask")
    g.sdpa(q, k, v, name="attn", **kw)
    return g


def sdpa_backward(
    *,
    bias: bool = False,
    padded: bool = False,
    dropout: float = 0.0,
    sink: bool = False,
    d_sink: bool = False,
    d_bias: bool = False,
    **kw: Any,
) -> Graph:
    g = Graph("b")
    q, k, v, o, do = (bshd(g, n) for n in ("q", "k", "v", "o", "do"))
    if bias:
        kw["bias"] = g.tensor([1, 2, 128, 128], dtype="bfloat16", name="bias")
    if d_bias:
        kw["dBias"] = g.tensor([1, 2, 128, 128], dtype="bfloat16", name="dbias")
    if padded:
        kw.update(lengths(g))
    if dropout:
        kw.update({r: g.tensor([1, 1, 1, 1], dtype="int64", name=r) for r in ("seed", "offset")})
        kw["dropout"] = dropout
    if sink:
        kw["sink_token"] = g.tensor([1, 2, 1, 1], name="sink")
    if d_sink:
        kw["dSink_token"] = g.tensor([1, 2, 1, 1], name="dsink")
    stats = g.tensor([1, 2, 128, 1], name="stats")
    g.sdpa_backward(q, k, v, o, do, stats=stats, name="bwd", **kw)
    return g


def sdpa_fp8(dtype: str = "float8_e4m3fn", attn_scale: float = 0.125, **kw: Any) -> Graph:
    g = Graph("f")
    q, k, v = (bshd(g, n, d=128, dtype=dtype) for n in "qkv")
    scales = [g.tensor([1, 1, 1, 1], name=r) for r in SCALE_ROLES]
    g.sdpa_fp8(q, k, v, *scales, attn_scale=attn_scale, name="attn", **kw)
    return g


def sdpa_fp8_backward(attn_scale: float = 0.125, dropout: float = 0.0, **kw: Any) -> Graph:
    g = Graph("f")
    q, k, v, o, do = (bshd(g, n, d=128, dtype="float8_e4m3fn") for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([1, 2, 128, 1], name="stats")
    if dropout:
        seed, offset = (g.tensor([1, 1, 1, 1], dtype="int64", name=n) for n in ("seed", "off"))
        kw["dropout"] = (dropout, seed, offset)
    factors = [g.tensor([1, 1, 1, 1], name=r) for r in BWD_SCALE_ROLES]
    g.sdpa_fp8_backward(q, k, v, o, do, stats, *factors, attn_scale=attn_scale, name="a", **kw)
    return g


def paged_sdpa(sides: Any = ("k", "v"), block: int = 64, **kw: Any) -> Graph:
    g = Graph("p")
    b, h, d, s_kv = 2, 8, 128, 512
    q = g.tensor([b, h, 1, d], [h * d, d, h * d, 1], dtype="bfloat16", name="q")
    pages = s_kv // block
    kv, tables = {}, {}
    for side in ("k", "v"):
        if side in sides:
            kv[side] = g.tensor([b * pages, h, block, d], dtype="bfloat16", name=f"{side}_cache")
            tables[f"paged_attention_{side}_table"] = g.tensor([b, 1, pages, 1], dtype="int32")
        else:
            kv[side] = g.tensor([b, h, s_kv, d], [s_kv * h * d, d, h * d, 1], dtype="bfloat16")
    kw.setdefault("paged_attention_max_seq_len_kv", s_kv)
    g.sdpa(q, kv["k"], kv["v"], **lengths(g, b), **tables, name="attn", **kw)
    return g


def ragged_sdpa(
    shared: bool = True, offset_dtype: str = "int32", ragged_o: bool = True, **kw: Any
) -> Graph:
    g = Graph("r")
    b, h, s, d = 2, 4, 64, 64
    q, k, v = (
        g.tensor([b, hh, s, d], [s * hh * d, d, hh * d, 1], dtype="bfloat16", name=n)
        for n, hh in (("q", h), ("k", 2), ("v", 2))
    )
    off_q, off_kv = (g.tensor([b + 1, 1, 1, 1], dtype=offset_dtype, name=n) for n in ("oq", "okv"))
    q.set_ragged_offset(off_q)
    k.set_ragged_offset(off_q if shared else off_kv)
    v.set_ragged_offset(off_kv)
    o, _ = g.sdpa(q, k, v, **lengths(g, b), name="attn", **kw)
    if ragged_o:
        o.set_ragged_offset(off_q)
    return g


CASES: dict[str, Case] = {
    "tensor": Case(
        tensors,
        [
            {"dims": (2, 8, 4, 8)},
            # batch 1 in the base's strides: only the dims differ (every tensor's strides agree)
            {"dims": (1, 8, 4, 4), "strides": (128, 16, 4, 1)},
            {"strides": (128, 1, 32, 8)},
            {"dtype": "bfloat16"},
            {"alignment": 32},
            {"kept": True},
            {"scalar_dtype": "float16"},
        ],
        [{"name": "other"}, {"value": 3.0}, {"value": None}, {"as_tensor": True}],
    ),
    "tensor by_value": Case(by_value, [{"flag": False}]),
    "tensor vector count": Case(vectorized, [{"fmt": "NC/4HW4"}]),
    "graph defaults": Case(
        defaults,
        [
            {"compute": "float16"},
            {"intermediate": "float16"},
            {"io": "float32"},
            {"keep": True},
            {"keep": True, "keep_dtype": "float32"},
            {"out_strides": (128, 1, 32, 8)},
        ],
        [{"out_strides": (128, 16, 4, 1)}],
    ),
    "tensor_like": Case(tensor_like, [{"alignment": 32}], [{"alignment": 16}]),
    "pointwise binary": Case(
        binary,
        [
            {"mode": "SUB"},
            {"mode": "MUL"},
            {"mode": "MAX"},
            {"mode": "POW"},
            {"alpha1": 2.0},
            {"alpha2": 0.5},
            {"compute_dtype": "float16"},
            {"out_dtype": "float32"},
            {"b_dims": (2, 8, 4, 4)},
        ],
        [{"alpha1": 1}, {"name": "other"}],
    ),
    "pointwise unary": Case(
        unary,
        [
            {"mode": "TANH_FWD"},
            {"mode": "GELU_FWD"},
            {"mode": "GELU_APPROX_TANH_FWD"},
            {"relu_lower_clip": 0.5},
            {"relu_upper_clip": 6.0},
            {"relu_lower_clip_slope": 0.1},
            {"alpha1": 0.5},
        ],
    ),
    "elu": Case(lambda **kw: activation("elu", **kw), [{"alpha": 0.5}]),
    "swish": Case(lambda **kw: activation("swish", **kw), [{"beta": 0.5}]),
    "softplus": Case(lambda **kw: activation("softplus", **kw), [{"beta": 0.5}]),
    "gelu": Case(lambda **kw: activation("gelu", **kw), [{"approximate": "tanh"}]),
    "gen_index": Case(gen_index, [{"axis": 3}]),
    "binary_select": Case(select, [{"swap": True}]),
    **{
        kind: Case(
            lambda kind=kind, **kw: conv(kind, **kw),
            [
                {"padding": 0, "post_padding": 2},
                {"padding": 2, "post_padding": 0},
                {"stride": 2},
                {"dilation": 2, "padding": 2},
                {"groups": 2},
                {"mode": "convolution"},
                {"compute_dtype": "float16"},
                {"alpha": 2.0},
                {"beta": 1.0},
                {"out_dtype": "float32"},
            ],
            [{"post_padding": 1}, {"compute_dtype": "float32"}],
        )
        for kind in ("conv_fprop", "conv_dgrad", "conv_wgrad")
    },
    # at stride 4 each variant has the base's dims ((15 + ...) // stride + 1 = 4): only the one
    # setting differs, so the key must hold it (the variants above also change the tensors)
    **{
        f"{kind} stride 4": Case(
            lambda kind=kind, **kw: conv(kind, **{"stride": 4, **kw}),
            [
                {"stride": 5},
                {"dilation": 2},
                {"padding": 0, "post_padding": 1},
                {"padding": 1, "post_padding": 0},
            ],
        )
        for kind in ("conv_fprop", "conv_dgrad", "conv_wgrad")
    },
    "matmul": Case(
        matmul,
        [{"compute_dtype": "float16"}, {"out_dtype": "float32"}, {"transposed_b": True}, {"m": 32}],
    ),
    "reduction": Case(
        reduction,
        [
            {"op": "max"},
            {"op": "mul"},
            {"op": "amax"},
            {"op": "norm2"},
            {"out_dims": (2, 1, 1, 1)},
            {"compute_dtype": "float16"},
            {"deterministic": True},
        ],
    ),
    "resample": Case(
        resample,
        [
            {"mode": "avgpool_include_padding"},
            {"mode": "avgpool_exclude_padding"},
            {"mode": "nearest"},
            {"window": (3, 3), "stride": (2, 2), "padding": 1},
            {"window": (3, 3), "stride": (2, 2), "padding": 1, "post_padding": 0},
            {"window": (2, 1), "stride": (2, 2)},
            {"padding_mode": "zero_pad"},
            {"propagate_nan": False},
            {"generate_index": True},
        ],
        [{"stride": (2, 2)}, {"padding_mode": "neg_inf_pad"}],
    ),
    "resample_backward": Case(
        resample_backward,
        [
            {"mode": "avgpool_include_padding"},
            {"propagate_nan": False},
            {"padding_mode": "zero_pad"},
        ],
    ),
    **{
        method: Case(
            lambda method=method, **kw: norm(method, **kw),
            [
                {"epsilon": 1e-3},
                {"training": True},
                {"zero_centered_gamma": True},
                {"epsilon_tensor": True},
            ],
        )
        for method in ("layernorm", "rmsnorm")
    },
    "instancenorm": Case(
        lambda **kw: nhwc_norm("instancenorm", **kw), [{"epsilon": 1e-3}, {"training": True}]
    ),
    "batchnorm": Case(
        lambda **kw: nhwc_norm("batchnorm", **kw),
        [{"epsilon": 1e-3}, {"running": True, "momentum": 0.1}, {"peers": 2}],
    ),
    "batchnorm momentum": Case(
        lambda **kw: nhwc_norm("batchnorm", running=True, **{"momentum": 0.1, **kw}),
        [{"momentum": 0.2}, {"momentum": "tensor"}],
    ),
    "batchnorm_inference": Case(batchnorm_inference, [{"implementation": "norm"}]),
    "layernorm_backward": Case(
        lambda **kw: norm_backward("layernorm_backward", **kw),
        [{"epsilon": 1e-5}, {"zero_centered_gamma": True}],
    ),
    "rmsnorm_backward": Case(
        lambda **kw: norm_backward("rmsnorm_backward", **kw),
        [{"zero_centered_gamma": True}, {"with_dbias": True}],
    ),
    "batchnorm_backward": Case(batchnorm_backward, [{"peers": 2}]),
    # epsilon is a by-value scalar read at execute (see the end-to-end test): it keeps the key
    "adalayernorm": Case(adalayernorm, [{"training": False}], [{"epsilon": 1e-3}]),
    "adalayernorm_backward": Case(adalayernorm_backward, [{"dbias": False}]),
    "genstats": Case(genstats, [{"compute_dtype": "float16"}]),
    # epsilon, accum_count and momentum are by-value scalars read at execute
    "batchnorm_finalize": Case(
        bn_finalize,
        [{"training": False}, {"compute_dtype": "float16"}],
        [{"epsilon": 1e-3}, {"accum_count": 4096}, {"momentum": 0.2}],
    ),
    "batchnorm_backward_weights": Case(bn_backward_weights, [{"compute_dtype": "float16"}]),
    "reshape": Case(
        reshape,
        [
            {"dims": (2, 16, 32)},
            {"mode": "logical"},
            {"mode": "view_only"},
            {"strides": (512, 1, 32)},
        ],
    ),
    "transpose": Case(transpose, [{"permutation": (0, 1, 3, 2)}, {"permutation": (1, 0, 2, 3)}]),
    "transpose packed": Case(
        transpose_packed, [{"permutation": (0, 1, 3, 2)}, {"permutation": (1, 0, 2, 3)}]
    ),
    # (1, 8, 2) and (0, 8, 2), (0, 6, 3) and (0, 6, 4): the same extent, another start or step
    "slice": Case(
        slice_,
        [
            {"h": (4, 8, 1)},
            {"h": (0, 8, 2)},
            {"h": (1, 8, 2)},
            {"h": (0, 6, 3)},
            {"h": (0, 6, 4)},
            {"w": (0, 8, 1)},
        ],
    ),
    # into a packed out=, the slice's own output strides (which follow the step) are not there
    # to tell the steps apart: (0, 6, 3) and (0, 6, 4) take 2 rows each
    "slice packed": Case(
        lambda **kw: slice_(**{"h": (0, 6, 3), "out_dims": (2, 4, 2, 16), **kw}),
        [{"h": (0, 6, 4)}, {"h": (1, 6, 3)}],
    ),
    "concatenate": Case(
        concatenate, [{"axis": 2}, {"in_place_index": 0}, {"in_place_index": 1}, {"swap": True}]
    ),
    "softmax": Case(
        softmax,
        [
            {"stats": True},
            {"max_and_sum_exp": True},
            {"sink": True},
            {"stats": True, "stats_log2": True},
        ],
    ),
    **{
        method: Case(
            lambda method=method, **kw: rope(method, **kw),
            [{"rope_dim": 32}, {"output_scale": 0.5}],
            [{"rope_dim": 64}],
        )
        for method in ("rope", "rope_backward")
    },
    "paged_cache_load": Case(paged_cache_load, [{"max_seq_len": 100}]),
    "expand_band_matrix": Case(expand_band, [{"lower": 3, "upper": 5}, {"pad_value": 0.5}]),
    "contract_band_matrix": Case(
        contract_band,
        [{"lower": 3, "upper": 5}, {"pad_value": 0.5}, {"max_token": 32}, {"axis": 3}],
    ),
    "diagonal_band_mask": Case(
        band_mask,
        [{"side": "right"}, {"comparison": "cmp_gt"}, {"lengths": True}],
        [{"fill": True}],
    ),
    "rng": Case(
        rng,
        [
            {"probability": 0.2},
            {"seed": 2},
            {"seed": None},
            {"distribution": "uniform"},
            {"distribution": "normal"},
            {"out_dtype": "float16"},
        ],
    ),
    "rng uniform": Case(
        lambda **kw: rng(distribution="uniform", **kw), [{"minimum": -1.0}, {"maximum": 2.0}]
    ),
    "rng normal": Case(
        lambda **kw: rng(distribution="normal", **kw), [{"mean": 1.0}, {"std": 2.0}]
    ),
    "signal": Case(signal, [{"mode": "wait"}, {"value": 2}]),
    # axis -1 with transpose=True lays Y and the scale out as without it (axis already innermost)
    "block_scale_quantize": Case(
        quantize,
        [
            {"block_size": 16},
            {"axis": -2},
            {"axis": -2, "transpose": True},
            {"out_dtype": "float8_e5m2"},
        ],
        [{"transpose": True}],
    ),
    "block_scale_dequantize": Case(
        dequantize,
        [
            {"neg_scale": True},
            {"block_size": 16, "s_dims": (1, 128, 16)},
            {"block_size": (1, 32)},
            {"out_dtype": "bfloat16"},
        ],
        [{"block_size": (32,)}],
    ),
    "block_scale_dequantize axis": Case(
        lambda **kw: dequantize(**{"x_dims": (1, 32, 32), "s_dims": (1, 32, 1), **kw}),
        [{"block_size": (32, 1), "s_dims": (1, 1, 32)}],
    ),
    "moe_grouped_matmul": Case(
        moe,
        [
            {"mode": "gather", "index": True},
            {"mode": "scatter", "index": True, "ks": True, "top_k": 2},
        ],
    ),
    "moe_grouped_matmul_backward": Case(moe_backward, [{"out_dtype": "float32"}]),
    "sdpa": Case(
        sdpa,
        [
            {"scale": 0.5},
            {"causal": True},
            {"sliding_window": 16},
            {"sliding_window": 32},
            {"diagonal_band_left_bound": 16},
            {"diagonal_band_right_bound": 4},
            {"diagonal_band_right_bound": 4, "diagonal_alignment": "bottom_right", "s_kv": 256},
            {"use_causal_mask_bottom_right": True, "s_kv": 256},
            {"bias": True},
            {"padded": True},
            {"return_stats": True},
            {"return_stats": True, "stats_use_log2": True},
            {"implementation": "composite"},
            {"dropout": 0.1, "seeded": True},
            {"dropout": 0.2, "seeded": True},
            {"sink": True},
            {"rows": True},
            {"scale_tensor": True},
            {"h_k": 1},
            {"use_alibi_mask": True, "causal": True},
            {"block_mask": True, "s_kv": 256},
        ],
        # the default scale is 1/sqrt(64); a sliding window is causal with a left bound
        [{"scale": 0.125}, {"attn_scale": 0.125}, {"use_causal_mask": False}],
    ),
    "sdpa causal": Case(
        lambda **kw: sdpa(causal=True, **kw),
        [
            {"implementation": "composite"},
            {"sliding_window": 16},
            {"diagonal_alignment": "bottom_right", "s_kv": 256},
        ],
        [{"use_causal_mask": True}, {"diagonal_band_right_bound": 0}],
    ),
    "sdpa window": Case(
        lambda **kw: sdpa(**{"implementation": "composite", "sliding_window": 16, **kw}),
        [{"sliding_window": 32}, {"padded": True}],
        [{"causal": True}],
    ),
    "sdpa dropout": Case(
        lambda **kw: sdpa(**{"implementation": "composite", "seeded": True, "dropout": 0.1, **kw}),
        [{"dropout": 0.3}, {"return_stats": True}],
    ),
    "sdpa padded": Case(
        lambda **kw: sdpa(padded=True, s_kv=256, **kw),
        [{"use_causal_mask_bottom_right": True}, {"causal": True}],
    ),
    "sdpa_backward": Case(
        sdpa_backward,
        [
            {"scale": 0.5},
            {"causal": True},
            {"causal": True, "sliding_window": 16},
            {"bias": True},
            {"padded": True},
            {"dropout": 0.1},
            {"dropout": 0.2},
            {"implementation": "composite"},
            {"use_deterministic_algorithm": True},
            {"sink": True},
            {"sink": True, "d_sink": True},
            {"bias": True, "d_bias": True},
        ],
    ),
    "sdpa_fp8": Case(
        sdpa_fp8,
        [
            {"dtype": "float8_e5m2"},
            {"attn_scale": 0.5},
            {"generate_stats": True},
            {"use_causal_mask": True},
            {"use_causal_mask": True, "sliding_window": 32},
            {"right_bound": 16, "left_bound": 32},
            {"right_bound": 8, "left_bound": 32},
            {"right_bound": 16, "left_bound": 16},
        ],
    ),
    "sdpa_fp8_backward": Case(
        sdpa_fp8_backward,
        [
            {"attn_scale": 0.5},
            {"use_causal_mask": True},
            {"right_bound": 16, "left_bound": 32},
            {"right_bound": 8, "left_bound": 32},
            {"dropout": 0.1},
            {"dropout": 0.2},
        ],
    ),
    "sdpa paged": Case(
        paged_sdpa,
        [
            {"paged_attention_max_seq_len_kv": 256},
            {"implementation": "composite"},
            {"implementation": "composite", "paged_attention_max_seq_len_kv": 256},
            {"sides": ("k",)},
            {"block": 32},
        ],
    ),
    "sdpa ragged": Case(
        ragged_sdpa,
        [
            {"shared": False},
            {"max_total_seq_len_q": 100},
            {"implementation": "composite"},
            {"offset_dtype": "int64"},
            {"ragged_o": False},
        ],
    ),
}


def _key(case: Case, settings: dict[str, Any]) -> str | None:
    """The key of ``case``'s graph with ``settings``; None where the loaded cuDNN is too old for
    what they describe (refused before C, naming the version: tests/test_versions.py asserts
    those refusals, so leaving such a variant out hides no failure)."""
    try:
        return case.build(**settings).key()
    except UnsupportedByLibraryError:
        return None
    except GraphError as exc:
        # a bug of the loaded cuDNN refused by name, with the version that fixes it (the
        # composite SDPA backward's padding on 9.0-9.9: tests/test_attention_composite.py)
        loaded = ".".join(map(str, pycudnn.version_tuple()))
        if f"cuDNN {loaded} " in str(exc) and "or newer" in str(exc):
            return None
        raise


def _base_key(name: str, case: Case) -> str:
    key = _key(case, {})
    if key is None:
        try:
            case.build()
        except UnsupportedByLibraryError as exc:
            loaded = ".".join(map(str, pycudnn.version_tuple()))
            pytest.skip(
                f"cuDNN {loaded} lacks {name} ({exc.symbol or exc}; tests/test_versions.py asserts the refusal)"
            )
    assert key is not None
    return key


@pytest.mark.parametrize("name", list(CASES))
def test_each_setting_changes_the_key(name: str) -> None:
    case = CASES[name]
    keys = {_base_key(name, case): "the base graph"}
    for changed in case.differ:
        key = _key(case, changed)
        if key is None:
            continue  # newer than the loaded cuDNN (see _key)
        assert key not in keys, f"{name}: {changed} has the key of {keys[key]}"
        keys[key] = repr(changed)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.same])
def test_a_setting_that_computes_the_same_keeps_the_key(name: str) -> None:
    case = CASES[name]
    base = _base_key(name, case)
    for same in case.same:
        key = _key(case, same)
        assert key is None or key == base, f"{name}: {same}"


# -- end to end: a shared plan cache, deviceless plans for the H100 ----------------------------
def scaled(value: float, mode: str = "MUL", stride: int = 1) -> Graph:
    g = Graph("scaled")
    x = g.tensor([1, 32, 16, 16], fmt=NHWC, dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt=NHWC, dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1, stride=stride)
    g.pointwise(mode, y, g.scalar(value, name="s")).set_output(dtype="float16")
    return g


def kept_values(plan: pycudnn.Plan) -> dict[str, Any]:
    """What an execute call that gives no scalar runs with (the plan JSON keeps the same)."""
    return {uid: v[0] for uid, v in json.loads(plan.to_json())[SCALARS_FIELD].items()}


@pytest.mark.usefixtures("libcuda")
def test_a_hit_for_another_scalar_value_executes_with_its_own(
    h100_props: DeviceProperties, tmp_path: Path
) -> None:
    """A by-value scalar's value is not in the key: the plan cache hands the second graph the
    first one's plan (from memory, and from disk in a cache that forgot it), bound to the second
    graph's tensors, whose value its executions pass."""
    for directory in (None, tmp_path):
        cache = PlanCache(directory)
        first = scaled(2.0).build(device_properties=h100_props, cache=cache)
        if directory is not None:
            cache.clear()
        second = scaled(3.0).build(device_properties=h100_props, cache=cache)
        hits = cache.stats["disk_hits" if directory else "memory_hits"]
        assert hits == 1 and cache.stats["misses"] == 1
        uid = str(second.graph["s"].uid)
        assert kept_values(first)[uid] == "2.0" and kept_values(second)[uid] == "3.0"


@pytest.mark.usefixtures("libcuda")
def test_graphs_that_differ_in_a_setting_get_no_hit(h100_props: DeviceProperties) -> None:
    """The pointwise mode after the convolution and the convolution's stride each change the
    plan: neither graph differing from the first in one of them is a hit."""
    cache = PlanCache()
    for graph in (scaled(2.0), scaled(2.0, mode="ADD"), scaled(2.0, stride=2)):
        graph.build(device_properties=h100_props, cache=cache)
    assert cache.stats["memory_hits"] == 0 and cache.stats["misses"] == 3
