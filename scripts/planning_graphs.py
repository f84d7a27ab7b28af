"""The graphs of the planning-speed benchmarks, for pycudnn: each builder describes one graph into
a new ``pycudnn.Graph``. Kept apart from ``bench_planning.py`` so that the benchmark's new
processes import only this (and pycudnn) before their first plan: importing the whole benchmark
(argparse, subprocess, platform, ...) cost about 10 ms of what was reported as pycudnn's.
``scripts/bench_planning.py``, ``profile_planning.py`` and ``compare_planning.py`` describe these.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The committed H100 properties the plans are made for (no GPU needed).
PROPS = (
    Path(__file__).resolve().parent.parent / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"
)


CONV = dict(n=8, c=64, h=56, w=56, k=64)
NORM = (8192, 4096)
SDPA = dict(b=4, h=16, s=2048, d=128)


def _conv_fprop(g: Any) -> None:
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 64, 1, 1], fmt="NHWC", dtype="float16", name="b")
    y = g.relu(g.add(g.conv_fprop(x, w, padding=1), b))
    y.set_output(True, dtype="float16")


def _conv_dgrad(g: Any) -> None:
    dy = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="dy")
    w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    dx = g.conv_dgrad(dy, w, padding=1, dx_dims=[8, 64, 56, 56])
    dx.set_output(True, dtype="float16")


def _conv_wgrad(g: Any) -> None:
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    dy = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="dy")
    dw = g.conv_wgrad(x, dy, padding=1, dw_dims=[64, 64, 3, 3])
    dw.set_output(True, dtype="float16")


def _matmul(g: Any) -> None:
    a = g.tensor([1, 4096, 4096], dtype="bfloat16", name="a")
    b = g.tensor([1, 4096, 4096], dtype="bfloat16", name="b")
    g.matmul(a, b, out_dtype="bfloat16")


def _matmul_bias_gelu(g: Any) -> None:
    a = g.tensor([1, 4096, 4096], dtype="bfloat16", name="a")
    b = g.tensor([1, 4096, 4096], dtype="bfloat16", name="b")
    bias = g.tensor([1, 1, 4096], dtype="bfloat16", name="bias")
    y = g.gelu(g.add(g.matmul(a, b), bias))
    y.set_output(True, dtype="bfloat16")


def _bshd(g: Any, name: str) -> Any:
    b, h, s, d = SDPA["b"], SDPA["h"], SDPA["s"], SDPA["d"]
    return g.tensor([b, h, s, d], [s * h * d, d, h * d, 1], dtype="bfloat16", name=name)


def _sdpa_fwd(g: Any) -> None:
    q, k, v = (_bshd(g, n) for n in "qkv")
    g.sdpa(q, k, v, scale=SDPA["d"] ** -0.5, causal=True, return_stats=True)


def _sdpa_bwd(g: Any) -> None:
    q, k, v, o, do = (_bshd(g, n) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([SDPA["b"], SDPA["h"], SDPA["s"], 1], name="stats")
    g.sdpa_backward(q, k, v, o, do, stats=stats, scale=SDPA["d"] ** -0.5, causal=True)


def _norm_inputs(g: Any) -> tuple[Any, Any]:
    rows, cols = NORM
    x = g.tensor([rows, cols, 1, 1], dtype="bfloat16", name="x")
    return x, g.tensor([1, cols, 1, 1], name="scale")


def _layernorm_fwd(g: Any) -> None:
    x, scale = _norm_inputs(g)
    bias = g.tensor([1, NORM[1], 1, 1], name="bias")
    g.layernorm(x, scale, bias, epsilon=1e-5, training=True).y.set_output(True, dtype="bfloat16")


def _rmsnorm_fwd(g: Any) -> None:
    x, scale = _norm_inputs(g)
    g.rmsnorm(x, scale, epsilon=1e-5, training=True).y.set_output(True, dtype="bfloat16")


def _stats(g: Any, *names: str) -> list[Any]:
    return [g.tensor([NORM[0], 1, 1, 1], name=n) for n in names]


def _layernorm_bwd(g: Any) -> None:
    x, scale = _norm_inputs(g)
    dy = g.tensor([NORM[0], NORM[1], 1, 1], dtype="bfloat16", name="dy")
    mean, inv = _stats(g, "mean", "inv_variance")
    g.layernorm_backward(dy, x, scale, mean, inv).dx.set_output(True, dtype="bfloat16")


def _rmsnorm_bwd(g: Any) -> None:
    x, scale = _norm_inputs(g)
    dy = g.tensor([NORM[0], NORM[1], 1, 1], dtype="bfloat16", name="dy")
    (inv,) = _stats(g, "inv_variance")
    g.rmsnorm_backward(dy, x, scale, inv).dx.set_output(True, dtype="bfloat16")


def _batchnorm_train(g: Any) -> None:
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    pc = [1, 64, 1, 1]
    scale, bias, rm, rv = (g.tensor(pc, fmt="NHWC", name=n) for n in ("scale", "bias", "rm", "rv"))
    out = g.batchnorm(x, scale, bias, epsilon=1e-5, running_mean=rm, running_var=rv, momentum=0.1)
    out.y.set_output(True, dtype="float16")


def _conv_genstats(g: Any) -> None:
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1)
    y.set_output(True, dtype="float16")
    g.genstats(y)


def _maxpool(g: Any) -> None:
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    g.resample(x, window=[2, 2], stride=[2, 2]).set_output(True, dtype="float16")


def _slice_matmul(g: Any) -> None:
    # cudnn-frontend's C++ "Slice gemm" sample: A [B, M, K] sliced on M, then A @ B and ReLU.
    a = g.tensor([16, 64, 128], dtype="bfloat16", name="a")
    b = g.tensor([16, 128, 64], dtype="bfloat16", name="b")
    y = g.relu(g.matmul(g.slice(a, [(0, 16), (8, 40), (0, 128)]), b))
    y.set_output(True, dtype="float32")


def _rope_sdpa(g: Any) -> None:
    q, k, v = (_bshd(g, n) for n in "qkv")
    freqs = g.tensor([SDPA["s"], 1, 1, SDPA["d"]], name="freqs")
    q_rot, k_rot = g.rope(q, freqs), g.rope(k, freqs)
    q_rot.set_output(True)
    k_rot.set_output(True)
    g.sdpa(q_rot, k_rot, v, scale=SDPA["d"] ** -0.5, causal=True, return_stats=True)


def _moe(g: Any) -> None:
    t = g.tensor([1, 2048, 1024], dtype="bfloat16", name="token")
    w = g.tensor([8, 1024, 512], dtype="bfloat16", name="weight")
    f = g.tensor([8, 1, 1], dtype="int32", name="first_token_offset")
    g.moe_grouped_matmul(t, w, f)


GRAPHS: dict[str, Callable[[Any], None]] = {
    "conv_fprop_bias_relu": _conv_fprop,
    "conv_dgrad": _conv_dgrad,
    "conv_wgrad": _conv_wgrad,
    "matmul_bf16_4096": _matmul,
    "matmul_bias_gelu": _matmul_bias_gelu,
    "sdpa_fwd_causal": _sdpa_fwd,
    "sdpa_bwd_causal": _sdpa_bwd,
    "layernorm_fwd": _layernorm_fwd,
    "layernorm_bwd": _layernorm_bwd,
    "rmsnorm_fwd": _rmsnorm_fwd,
    "rmsnorm_bwd": _rmsnorm_bwd,
    "batchnorm_train": _batchnorm_train,
    "conv_genstats": _conv_genstats,
    "maxpool": _maxpool,
    "slice_matmul": _slice_matmul,
    "rope_sdpa": _rope_sdpa,
    "moe_grouped_matmul": _moe,
}
