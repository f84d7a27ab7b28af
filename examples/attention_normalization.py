"""Fused attention (grouped-query SDPA, forward and backward) and layer norm with cuDNN's graph API.

Without a GPU it builds the three graphs, plans them ahead of time for an H100 from the committed
device properties (the NVIDIA driver library libcuda.so.1 is needed for that, not a GPU), prints the
plans, says what needs a GPU and exits 3. It needs cuDNN 9.13.1 or later (older: it says so and
exits 3); the backward is cuDNN's unified SDPA operation from 9.28 and the composite graph NVIDIA's
frontend builds before (``implementation="auto"``). With a GPU it runs the attention forward
and the layer norm on ``pycudnn.DeviceArray`` operands and compares them with NumPy (exit status
1 on a mismatch).

    python examples/attention_normalization.py
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import pycudnn

H100 = Path(__file__).resolve().parent.parent / "tests/data/deviceprops/h100-sxm-80gb.json"
BF16 = np.dtype(ml_dtypes.bfloat16)


# The exit status when the check against NumPy could not run here (no GPU): not 0, which says
# the results were checked (the README's exit-code table).
NOT_CHECKED = 3


def gpu_missing() -> str | None:
    """None when a CUDA GPU is usable here, else the driver's reason."""
    try:
        from cuda.core import Device

        Device(0).set_current()
    except Exception as e:  # no driver library, no device, ...
        return str(e) or type(e).__name__
    return None


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) v in float64, K/V heads shared by groups of Q heads."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1).astype(np.float64), np.repeat(v, group, axis=1)
    scores = np.einsum("bhsd,bhtd->bhst", q.astype(np.float64), k) / np.sqrt(q.shape[-1])
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("bhst,bhtd->bhsd", p / p.sum(axis=-1, keepdims=True), v.astype(np.float64))


if pycudnn.version() < 91301:
    print(f"needs a cuDNN with SDPA (9.13.1 or later; loaded: {pycudnn.version()}) and a GPU")
    sys.exit(NOT_CHECKED)

b, h, h_kv, s, d = 2, 8, 2, 256, 64
g = pycudnn.Graph("attention")


def bshd(heads: int) -> list[int]:  # [b, s, h, d] in memory, [b, h, s, d] as dims
    return [s * heads * d, d, heads * d, 1]


q = g.tensor([b, h, s, d], bshd(h), dtype="bfloat16", name="q")
k = g.tensor([b, h_kv, s, d], bshd(h_kv), dtype="bfloat16", name="k")  # grouped-query attention
v = g.tensor([b, h_kv, s, d], bshd(h_kv), dtype="bfloat16", name="v")
o, stats = g.sdpa(q, k, v, return_stats=True)  # scale defaults to 1/sqrt(d); causal=True masks

# the backward pass (its own graph) takes the forward's output and stats
bwd = pycudnn.Graph("attention_backward")


def like(t: pycudnn.graph.Tensor, name: str) -> pycudnn.graph.Tensor:
    return bwd.tensor(t.dims, t.strides, dtype=t.dtype, name=name)


graphs = [g, bwd]
try:  # unified from 9.28, the composite graph before (implementation="auto")
    dq, dk, dv = bwd.sdpa_backward(
        like(q, "q"),
        like(k, "k"),
        like(v, "v"),
        like(o, "o"),
        like(o, "do"),
        stats=like(stats, "stats"),
    )
except pycudnn.UnsupportedByLibraryError as e:
    print(f"attention_backward left out: {e}")
    graphs.remove(bwd)

tokens, hidden = 512, 1024
n = pycudnn.Graph("norm")
x = n.tensor([tokens, hidden, 1], dtype="bfloat16", name="x")  # normalised over all but dim 0
gamma = n.tensor([1, hidden, 1], name="gamma")
beta = n.tensor([1, hidden, 1], name="beta")
y, mean, inv_var, *_ = n.layernorm(x, gamma, beta, epsilon=1e-5, training=True)

try:
    ctypes.CDLL("libcuda.so.1")
except OSError:
    print("deviceless planning skipped: cuDNN needs the NVIDIA driver library libcuda.so.1")
else:
    h100 = pycudnn.DeviceProperties.load(H100)
    for graph in (*graphs, n):
        aot = graph.build(device_properties=h100, cache=False)
        print(f"{graph.name}: plan for {h100.device_name} without a GPU: {aot.describe()}")

reason = gpu_missing()
if reason:
    print(f"needs a GPU to run the plans and check them against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

rng = np.random.default_rng(0)
host = {t: rng.standard_normal(t.dims).astype(BF16) for t in (q, k, v)}
arrays = {t: pycudnn.DeviceArray.empty(t.dims, BF16, strides=t.strides) for t in (q, k, v, o)}
arrays[stats] = pycudnn.DeviceArray.empty(stats.dims, np.float32, strides=stats.strides)
for t, a in host.items():
    arrays[t].copy_from_numpy(a)

plan = g.build()
plan.execute(arrays)  # {q: ..., k: ..., v: ..., o: ..., stats: ...}: any device arrays
err = np.abs(arrays[o].to_numpy().astype(np.float64) - attention_reference(*host.values())).max()
print(f"attention: max |error| {err:.3g} against NumPy")

xh = rng.standard_normal(x.dims).astype(BF16)
gh = rng.standard_normal(gamma.dims).astype(np.float32)
bh = rng.standard_normal(beta.dims).astype(np.float32)
norm_arrays = {t: pycudnn.DeviceArray.empty(t.dims, t.dtype, strides=t.strides) for t in (x, gamma, beta, y, mean, inv_var)}  # fmt: skip
for t, a in ((x, xh), (gamma, gh), (beta, bh)):
    norm_arrays[t].copy_from_numpy(a)
n.build().execute(norm_arrays)
x64 = xh.astype(np.float64)
ref = (x64 - x64.mean(axis=(1, 2), keepdims=True)) / np.sqrt(
    x64.var(axis=(1, 2), keepdims=True) + 1e-5
) * gh + bh
norm_err = np.abs(norm_arrays[y].to_numpy().astype(np.float64) - ref).max()
print(f"layernorm: max |error| {norm_err:.3g} against NumPy")

if err > 2e-2 or norm_err > 5e-2:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("attention and layernorm agree with NumPy")
print("matches NumPy")
