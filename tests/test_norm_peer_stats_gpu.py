"""A batch norm with ``peer_stats`` executed on one GPU (GPU tier: ``pytest -m gpu``): a node of
one, its own buffer the only peer, so the statistics are the batch's own and the result is the
single-GPU batch norm's (float64 NumPy, as :func:`pycudnn.verification.reference_attention`
computes it).

The multi-GPU kernels synchronise through the buffers; should one wait for a peer that never
writes, the execution would not return, so it runs in a child process with a time limit and a
hang fails the test instead of stopping the suite. The buffer starts zeroed, as in the
frontend's sample.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_attention_gpu import check_close, empty, f64, host, to_device

from pycudnn.graph import Graph

pytestmark = pytest.mark.gpu

N, C, H, W = 4, 32, 16, 16
EPS = 1e-5
LIMIT_S = 120


def child() -> None:
    """Build, execute and check; run in the child process (see the module docstring)."""
    g = Graph("bn_one_peer")
    x = g.tensor([N, C, H, W], fmt="NHWC", dtype="float16", name="x")
    scale, bias = (g.tensor([1, C, 1, 1], fmt="NHWC", name=n) for n in ("scale", "bias"))
    peer = g.tensor([2, 4 * C, 1, 1], dtype="float32", name="peer0")
    out = g.batchnorm(x, scale, bias, epsilon=EPS, peer_stats=[peer])
    assert out.mean is not None and out.inv_variance is not None
    xs = host(x.dims, "float16")
    feeds = {
        x: xs,
        scale: host(scale.dims, "float32"),
        bias: host(bias.dims, "float32"),
        peer: np.zeros(peer.dims, np.float32),
    }
    outs = [out.y, out.mean, out.inv_variance]
    devs = {t: empty(t) for t in outs}
    g.build(cache=False).execute({t: to_device(a, t) for t, a in feeds.items()} | devs)
    xd = xs.astype(np.float64)
    mean = xd.mean(axis=(0, 2, 3), keepdims=True)
    inv = 1.0 / np.sqrt(xd.var(axis=(0, 2, 3), keepdims=True) + EPS)
    y = (xd - mean) * inv * f64(feeds[scale]) + f64(feeds[bias])
    check_close(devs[out.mean], mean, 1e-3, "mean")
    check_close(devs[out.inv_variance], inv, 1e-3, "inv_variance")
    check_close(devs[out.y], y, 1e-2, "y")


def test_batchnorm_with_one_peer_matches_single_gpu() -> None:
    here = Path(__file__).parent
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")])
    )
    code = "import test_norm_peer_stats_gpu as t; t.child()"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=here, capture_output=True, text=True,
            timeout=LIMIT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"batch norm with one peer buffer did not return in {LIMIT_S} s")
    assert done.returncode == 0, done.stderr[-3000:]
