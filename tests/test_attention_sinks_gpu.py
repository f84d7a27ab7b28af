"""Attention sinks, mask-and-scale dropout, block masks and FP8 attention executed on the GPU (GPU
tier: ``pytest -m gpu``), against the float64 references of :mod:`pycudnn.verification`
(``reference_attention``: the references ``verify`` uses, checked on CPU against the numeric
gradient and the plain attention they reduce to).

The composite backward's dSink follows NVIDIA's frontend operation for operation, without the
minus sign cuDNN's engine applies itself (the frontend's note); the reference is the exact
gradient (``-sum P_sink * rowsum(dO * O)``), so :func:`test_sink_backward` checks that sign.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_attention_gpu import BF16, GRAD_TOL, TOL, check_close, empty, f64, host, to_device

from pycudnn.graph import Graph, Tensor
from pycudnn.opgraph.attention_fp8 import SCALE_ROLES
from pycudnn.plan import GraphNotSupportedError
from pycudnn.verification import reference_attention as ref

pytestmark = pytest.mark.gpu

B, H, S, D = 2, 4, 160, 64
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)


def bshd(g: Graph, name: str, dtype: Any = "bfloat16", s: int = S) -> Tensor:
    return g.tensor([B, H, s, D], [s * H * D, D, H * D, 1], dtype=dtype, name=name)


def run(g: Graph, feeds: dict[Tensor, np.ndarray], outs: list[Tensor]) -> list[np.ndarray]:
    """Execute ``g`` on the host arrays ``feeds``; the outputs as float64."""
    devs = {t: empty(t) for t in outs}
    g.build().execute({t: to_device(a, t) for t, a in feeds.items()} | devs)
    return [f64(devs[t]) for t in outs]


def by_role(op: Any, feeds: dict[Tensor, np.ndarray]) -> dict[str, np.ndarray]:
    """The operation's input values by role, float64 (scalars of the graph included)."""
    vals = {r: f64(feeds[t]) for r, t in op.inputs.items() if t in feeds}
    for r, t in op.inputs.items():
        if r not in vals and t.by_value and t.value is not None:
            vals[r] = np.full(t.dims, float(t.value))
    return vals


@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_sink_forward(implementation: str) -> None:
    g = Graph("sink")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    sink = g.tensor([1, H, 1, 1], dtype="float32", name="sink")
    o, stats = g.sdpa(q, k, v, sink_token=sink, generate_stats=True, implementation=implementation)
    assert stats is not None
    feeds = {t: host(t.dims, BF16) for t in (q, k, v)}
    feeds[sink] = (np.arange(H, dtype=np.float32) - 1.0).reshape(1, H, 1, 1) * 2.0
    got_o, got_stats = run(g, feeds, [o, stats])
    want = ref.sdpa_forward(g.operations[-1], by_role(g.operations[-1], feeds))
    check_close(got_o, want["o"], TOL[BF16], f"sink O ({implementation})")
    check_close(got_stats, want["stats"], TOL[BF16], f"sink stats ({implementation})")


@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_sink_backward(implementation: str) -> None:
    g = Graph("sink_bwd")
    q, k, v, o, do = (bshd(g, n) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    sink = g.tensor([1, H, 1, 1], dtype="float32", name="sink")
    dsink = g.tensor([1, H, 1, 1], dtype="float32", name="dsink")
    dq, dk, dv = g.sdpa_backward(
        q, k, v, o, do, stats=stats, sink_token=sink, dSink_token=dsink,
        implementation=implementation,
    )  # fmt: skip
    op = g.operations[-1]
    feeds = {t: host(t.dims, BF16) for t in (q, k, v, do)}
    feeds[sink] = np.linspace(-1.0, 1.0, H, dtype=np.float32).reshape(1, H, 1, 1)
    fwd = ref.consistent_inputs(op, by_role(op, feeds))
    feeds[o] = fwd["o"].astype(BF16)
    feeds[stats] = fwd["stats"].astype(np.float32)
    got = dict(zip(("dq", "dk", "dv", "dsink"), run(g, feeds, [dq, dk, dv, dsink]), strict=True))
    want = ref.sdpa_backward(op, by_role(op, feeds))
    for role, arr in got.items():
        check_close(arr, want[role], GRAD_TOL[BF16], f"sink {role} ({implementation})")


def test_mask_and_scale_dropout() -> None:
    g = Graph("dropout_mask")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    mask = g.tensor([B, H, S, S], dtype="bfloat16", name="mask")
    scale = g.tensor([1, 1, 1, 1], dtype="float32", name="scale")
    o, _ = g.sdpa(q, k, v, dropout=(mask, scale))
    feeds = {t: host(t.dims, BF16) for t in (q, k, v)}
    keep = np.random.default_rng(5).random(mask.dims) >= 0.25
    feeds[mask] = keep.astype(BF16)
    feeds[scale] = np.full((1, 1, 1, 1), 1.0 / 0.75, dtype=np.float32)
    (got,) = run(g, feeds, [o])
    want = ref.sdpa_forward(g.operations[-1], by_role(g.operations[-1], feeds))
    check_close(got, want["o"], TOL[BF16], "dropout=(mask, scale)")


def test_block_mask_where_an_engine_takes_it() -> None:
    g = Graph("block_mask")
    q, k, v = bshd(g, "q", s=256), bshd(g, "k", s=256), bshd(g, "v", s=256)
    mask = g.tensor([B, H, 2, 2], dtype="int8", name="block_mask")
    o, _ = g.sdpa(q, k, v, block_mask=mask)
    try:
        plan = g.build()
    except GraphNotSupportedError as exc:  # Hopper: no engine in cuDNN 9.28 (measured on CPU)
        pytest.skip(f"no engine for a block mask on this GPU: {str(exc).splitlines()[0]}")
    feeds = {t: host(t.dims, BF16) for t in (q, k, v)}
    tiles = np.ones(mask.dims, dtype=np.int8)
    tiles[:, :, 1, 0] = 0  # the lower-left tile of every head dropped
    feeds[mask] = tiles
    od = empty(o)
    plan.execute({t: to_device(a, t) for t, a in feeds.items()} | {o: od})
    want = ref.sdpa_forward(g.operations[-1], by_role(g.operations[-1], feeds))
    check_close(od, want["o"], TOL[BF16], "block mask")


def test_fp8_forward() -> None:
    g = Graph("fp8")
    q, k, v = (bshd(g, n, "float8_e4m3fn") for n in "qkv")
    factors = [g.tensor([1, 1, 1, 1], dtype="float32", name=r) for r in SCALE_ROLES]
    o, stats, amax_s, amax_o = g.sdpa_fp8(
        q, k, v, *factors, generate_stats=True, use_causal_mask=True
    )
    assert stats is not None
    feeds = {t: host(t.dims, E4M3) for t in (q, k, v)}
    values = dict(zip(SCALE_ROLES, (1.0, 1.0, 1.0, 1.0 / 256, 256.0, 4.0), strict=True))
    feeds |= {
        t: np.full((1, 1, 1, 1), values[r], np.float32)
        for t, r in zip(factors, SCALE_ROLES, strict=True)
    }
    got = dict(
        zip(
            ("o", "stats", "amax_s", "amax_o"),
            run(g, feeds, [o, stats, amax_s, amax_o]),
            strict=True,
        )
    )
    want = ref.sdpa_forward(g.operations[-1], by_role(g.operations[-1], feeds))
    # O is e4m3 (3 mantissa bits) and P is rounded to e4m3 before P @ V
    check_close(got["o"], want["o"], 0.15, "fp8 O")
    check_close(got["stats"], want["stats"], TOL[BF16], "fp8 stats")
    check_close(got["amax_o"], want["amax_o"], 0.1, "fp8 amax_o")
    check_close(got["amax_s"], want["amax_s"], 0.1, "fp8 amax_s")
