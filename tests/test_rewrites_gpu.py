"""GPU tier: plans made through an equivalent description execute to the graph's own result.

When cuDNN has no engine for a graph as described, planning shows it an equivalent description
of the same memory (:mod:`pycudnn.opgraph.rewrites`): NCHW elementwise graphs as a rank-3
row-major view, rank-4 matmul batch dims folded into one. ``tests/test_rewrites_equivalence.py``
proves the views address the same elements under NumPy's rules; these tests run the plans on
cuDNN's kernels, with the graph's own arrays, against NumPy (the channels-last reductions are
executed by ``tests/test_reduction_planning.py``'s GPU cases).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pycudnn.graph import Graph, Tensor

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(2026)


def _on_gpu(a: np.ndarray, t: Tensor) -> Any:
    """``a`` (logical order) on the GPU, laid out with ``t``'s strides."""
    from _nvbind.device_array import DeviceArray

    perm = sorted(range(a.ndim), key=lambda i: (-t.strides[i], i))
    return DeviceArray.from_numpy(
        np.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))
    )


def _empty(t: Tensor) -> Any:
    from _nvbind.device_array import DeviceArray

    return DeviceArray.empty(t.dims, t.dtype, strides=t.strides)


@pytest.mark.parametrize("b_dims", [[2, 8, 5, 6], [1, 8, 1, 1], [2, 1, 5, 6]])
def test_an_nchw_elementwise_graph_planned_as_a_rank3_view(b_dims: list[int]) -> None:
    g = Graph("nchw add")
    a = g.tensor([2, 8, 5, 6], fmt="NCHW", dtype="float32", name="a")
    b = g.tensor(b_dims, fmt="NCHW", dtype="float32", name="b")
    y = g.add(a, b)
    y.set_output(True)
    plan = g.build(cache=False)
    assert "rank-3" in plan.rewrite, plan.describe()  # planned through the rewrite
    ah = RNG.standard_normal(a.dims).astype(np.float32)
    bh = RNG.standard_normal(b.dims).astype(np.float32)
    out = _empty(y)
    plan.execute({a: _on_gpu(ah, a), b: _on_gpu(bh, b), y: out})
    np.testing.assert_allclose(out.to_numpy(), ah + bh, rtol=1e-6, atol=1e-6)


def test_a_rank4_matmul_planned_with_its_batch_dims_folded() -> None:
    g = Graph("rank-4 matmul")
    a = g.tensor([2, 3, 64, 32], dtype="float16", name="a")
    b = g.tensor([2, 3, 32, 48], dtype="float16", name="b")
    y = g.matmul(a, b)
    y.set_output(True, dtype="float32")
    plan = g.build(cache=False)
    assert "folded" in plan.rewrite, plan.describe()
    ah = RNG.standard_normal(a.dims).astype(np.float16)
    bh = RNG.standard_normal(b.dims).astype(np.float16)
    out = _empty(y)
    plan.execute({a: _on_gpu(ah, a), b: _on_gpu(bh, b), y: out})
    ref = np.matmul(ah.astype(np.float64), bh.astype(np.float64))
    # fp16 products summed in fp32 over K = 32: well within 1e-2 of values of size ~6
    np.testing.assert_allclose(out.to_numpy(), ref, rtol=1e-2, atol=1e-2)
