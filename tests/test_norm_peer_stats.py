"""Multi-GPU batch norm (``peer_stats``, as cudnn-frontend's ``batchnorm`` and
``batchnorm_backward`` take them) on CPU: real cuDNN plans for the committed H100 properties.

cuDNN's own serialisation of the planned operation graph lists the buffers it was given
(``"peerStats"``), so these tests see the ``NORM_*_PEER_STAT_DESCS`` attribute as cuDNN read it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError, Tensor
from pycudnn.verification import NoReferenceError
from pycudnn.verification import reference_attention as ref

N, C, H, W = 8, 64, 56, 56
PEER_DIMS = [2, 4 * C, 1, 1]  # the layout of the frontend's samples


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def peers(g: Graph, count: int, dims: list[int] | None = None, **kw: Any) -> list[Tensor]:
    return [
        g.tensor(dims or PEER_DIMS, dtype=kw.pop("dtype", "float32"), name=f"peer{i}", **kw)
        for i in range(count)
    ]


def nhwc(g: Graph, name: str, dims: list[int] | None = None, dtype: str = "float32") -> Tensor:
    return g.tensor(dims or [1, C, 1, 1], fmt="NHWC", dtype=dtype, name=name)


def forward(count: int, **kw: Any) -> tuple[Graph, list[Tensor]]:
    g = Graph(f"bn_peers{count}")
    x = nhwc(g, "x", [N, C, H, W], "float16")
    s, b, rm, rv = (nhwc(g, n) for n in ("scale", "bias", "rm", "rv"))
    ps = peers(g, count)
    g.batchnorm(x, s, b, running_mean=rm, running_var=rv, momentum=0.1, peer_stats=ps, **kw)
    return g, ps


def backward(peer_stats: Any, g: Graph | None = None) -> Graph:
    g = g or Graph("dbn_peers")
    x, dy = nhwc(g, "x", [N, C, H, W], "float16"), nhwc(g, "dy", [N, C, H, W], "float16")
    s, m, iv = (nhwc(g, n) for n in ("scale", "mean", "inv_variance"))
    g.batchnorm_backward(dy, x, s, m, iv, peer_stats=peer_stats(g) if callable(peer_stats) else [])
    return g


def planned_peers(plan: Any) -> list[int]:
    """The uids of the peer stats buffers in cuDNN's serialisation of the planned graph."""
    (node,) = json.loads(plan.to_json())["operationGraph"]["nodes"]
    return [int(u) for u in node["peerStats"]]


@pytest.mark.parametrize("count", [1, 2, 8])
def test_forward_with_peer_stats_plans(props: pycudnn.DeviceProperties, count: int) -> None:
    g, ps = forward(count)
    plan = g.build(device_properties=props, cache=False)
    assert planned_peers(plan) == [t.uid for t in ps]  # every buffer, in the caller's order
    assert [t.name for t in ps] == [f"peer{i}" for i in range(count)]


@pytest.mark.parametrize("count", [2, 4])
def test_backward_with_peer_stats_plans(props: pycudnn.DeviceProperties, count: int) -> None:
    held: list[Tensor] = []

    def make(g: Graph) -> list[Tensor]:
        held.extend(peers(g, count))
        return held

    plan = backward(make).build(device_properties=props, cache=False)
    assert planned_peers(plan) == [t.uid for t in held]


def test_plan_with_peer_stats_loads_back(props: pycudnn.DeviceProperties) -> None:
    plan = forward(2)[0].build(device_properties=props, cache=False)
    again = forward(2)[0].load_plan(plan.to_json(), device_properties=props)
    assert planned_peers(again) == planned_peers(plan)
    with pytest.raises(ValueError, match="built for another graph"):
        forward(4)[0].load_plan(plan.to_json(), device_properties=props)


def test_no_peer_stats_sets_no_attribute(props: pycudnn.DeviceProperties) -> None:
    # an empty list is a single-GPU batch norm, as in the frontend
    plan = backward(None).build(device_properties=props, cache=False)
    (node,) = json.loads(plan.to_json())["operationGraph"]["nodes"]
    assert not node.get("peerStats")


def test_backward_refuses_one_buffer() -> None:
    # cuDNN 9.28 has no engine for it ("num_peers == 1"); a single GPU needs none
    with pytest.raises(GraphError, match=r"peer_stats needs 2 or more .* leave peer_stats out"):
        backward(lambda g: peers(g, 1))


_OTHER = Graph("other")  # a graph that outlives the tensors taken from it


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda g: peers(g, 1)[0], TypeError, "peer_stats must be a list of Tensors"),
        (lambda g: [1.0], TypeError, r"peer_stats\[0\] must be a Tensor of this graph"),
        (lambda g: peers(_OTHER, 2), GraphError, r"peer_stats\[0\] .* belongs to graph 'other'"),
        (lambda g: peers(g, 2, dtype="float16"), GraphError, "must be float32, not float16"),
        (lambda g: peers(g, 2, [1, 4 * C, 1, 1]), GraphError, r"must have dims \[2, 256, 1, 1\]"),
        (lambda g: peers(g, 2, [2, C, 1, 1]), GraphError, r"\[2, 4 \* C, 1, \.\.\.\]"),
        (lambda g: peers(g, 2, [2, 4 * C, 1]), GraphError, "must have dims"),
        (lambda g: peers(g, 2, strides=[1, 2, 1, 1]), GraphError, "must be packed"),
        (lambda g: [peers(g, 1)[0]] * 2, GraphError, "is given twice"),
        (lambda g: [g.scalar(0.0, rank=4), *peers(g, 1)], GraphError, "not a by-value scalar"),
    ],
)  # fmt: skip
def test_peer_stats_rules(make: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        backward(make)


def test_peer_stats_rule_names_forward() -> None:
    with pytest.raises(GraphError, match=r"batchnorm .*peer_stats\[1\] .*must have dims"):
        g = Graph("bad")
        x = nhwc(g, "x", [N, C, H, W], "float16")
        ps = [*peers(g, 1), g.tensor([2, 4 * C, 1, 2], dtype="float32", name="short")]
        g.batchnorm(x, nhwc(g, "scale"), nhwc(g, "bias"), peer_stats=ps)


def test_an_output_is_no_peer_buffer() -> None:
    g = Graph("out")
    a, b = peers(g, 2)
    summed = g.add(a, b)
    with pytest.raises(GraphError, match="not the output of an operation"):
        backward(lambda _: [summed, a], g)


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_verify_has_no_reference_for_peer_stats(direction: str) -> None:
    # the result combines other GPUs' statistics: verify skips it rather than compare to one GPU's
    g = forward(2)[0] if direction == "forward" else backward(lambda g: peers(g, 2))
    op = g.operations[-1]
    fn = ref.norm_forward if direction == "forward" else ref.norm_backward
    vals = {role: np.ones(t.dims) for role, t in op.inputs.items()}
    with pytest.raises(NoReferenceError, match="peer_stats: statistics of other GPUs"):
        fn(op, vals)


def test_frontend_comparison_script_plans_its_cases(h100_props: pycudnn.DeviceProperties) -> None:
    # the pycudnn side of scripts/check_frontend_batchnorm_peers.py (exit 1 on a missed plan)
    script = (
        Path(__file__).resolve().parent.parent / "scripts" / "check_frontend_batchnorm_peers.py"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 10 and sum("refused: " in line for line in lines) == 1
