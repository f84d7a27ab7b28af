"""The backward of the frontend's mask-and-scale dropout, ``sdpa_backward(dropout=(mask, scale,
scale_inv))``: planned on CPU for the committed H100 properties (the composite graph, as the
frontend lowers it), its refusals, and its NumPy reference against numeric gradients."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError
from pycudnn.verification import reference_attention as ref

B, H, S, D = 2, 4, 128, 64


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def backward(form: str = "triple", **options: Any) -> Graph:
    g = Graph("dropout_mask_bwd")

    def bshd(name: str) -> Any:
        return g.tensor([B, H, S, D], [S * H * D, D, H * D, 1], dtype="bfloat16", name=name)

    q, k, v, o, do = (bshd(n) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    mask = g.tensor([B, H, S, S], dtype="bfloat16", name="mask")
    scale = g.tensor([1, 1, 1, 1], dtype="float32", name="keep_scale")
    scale_inv = g.tensor([1, 1, 1, 1], dtype="float32", name="keep_scale_inv")
    dropout = {"triple": (mask, scale, scale_inv), "pair": (mask, scale)}[form]
    g.sdpa_backward(q, k, v, o, do, stats=stats, dropout=dropout, name="attn_bwd", **options)
    return g


def test_it_plans_as_the_frontends_composite_graph(props: pycudnn.DeviceProperties) -> None:
    g = backward()
    op = next(op for op in g.operations if op.kind == "sdpa_backward")
    assert op.attrs["lowering"] == "composite"
    assert {"dropout_mask", "dropout_scale", "dropout_scale_inv"} <= set(op.inputs)
    plan = g.build(device_properties=props, cache=False)
    if pycudnn.version_tuple() >= (9, 19):
        # the frontend's engine for the same graph (measured on cuDNN 9.19, 9.27 and 9.28; 9.12
        # plans it on engine 2)
        assert plan.engine_id == 6
    assert g.load_plan(plan.to_json(), device_properties=props).engine_id == plan.engine_id


def test_the_forwards_pair_and_the_unified_operation_are_refused() -> None:
    with pytest.raises(GraphError, match=r"\(mask, scale, scale_inv\)"):
        backward("pair")
    with pytest.raises(GraphError, match="composite graph only"):
        backward(implementation="unified")


def test_three_things_that_are_not_tensors_are_refused() -> None:
    g = Graph("bad_dropout")
    t = g.tensor([1, 1, 8, 8], dtype="bfloat16", name="q")
    with pytest.raises(GraphError, match="three tensors"):
        g.sdpa_backward(t, t, t, t, t, stats=t, dropout=(t, 1.5, 0.5))


class _Op:
    """Just what the references read of an operation."""

    def __init__(self, outputs: tuple[str, ...]) -> None:
        self.label = "sdpa 'ref'"
        self.inputs: dict[str, Any] = {}
        self.outputs = dict.fromkeys(outputs)
        self.attrs = {"scale": 0.3, "right_bound": None, "left_bound": None, "dropout_mask": True}


def test_the_reference_gradients_are_the_numeric_ones() -> None:
    rng = np.random.default_rng(5)
    vals = {r: rng.standard_normal((1, 2, 5, 4)) for r in ("q", "k", "v", "do")}
    vals["dropout_mask"] = (rng.random((1, 2, 5, 5)) > 0.3).astype(float)
    vals["dropout_scale"] = np.full((1, 1, 1, 1), 1.0 / 0.7)
    vals["dropout_scale_inv"] = np.full((1, 1, 1, 1), 0.7)

    def forward(v: dict[str, np.ndarray]) -> np.ndarray:
        # written out here: softmax(0.3 Q K^T) * mask * scale, then @ V
        s = 0.3 * v["q"] @ np.swapaxes(v["k"], -1, -2)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return (p * v["dropout_mask"] * v["dropout_scale"]) @ v["v"]

    o = forward(vals)
    stats = ref.sdpa_forward(_Op(("o", "stats")), vals)["stats"]
    grads = ref.sdpa_backward(_Op(("dq", "dk", "dv")), {**vals, "o": o, "stats": stats})
    step = 1e-6
    for role, grad in (("q", "dq"), ("k", "dk"), ("v", "dv")):
        for index in [(0, 0, 0, 0), (0, 1, 3, 2), (0, 1, 4, 3)]:
            bumped = {}
            for sign in (1, -1):
                x = vals[role].copy()
                x[index] += sign * step
                bumped[sign] = np.sum(forward({**vals, role: x}) * vals["do"])
            numeric = (bumped[1] - bumped[-1]) / (2 * step)
            assert grads[grad][index] == pytest.approx(numeric, rel=1e-5, abs=1e-8), (role, index)
