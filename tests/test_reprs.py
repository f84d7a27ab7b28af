"""The repr of graphs, tensors and plans shows what a user needs at a glance."""

from __future__ import annotations

from typing import Any

from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph
from pycudnn.plan import Plan


def _graph() -> Graph:
    g = Graph("cbr")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.relu(g.conv_fprop(x, w, padding=1, name="conv"), name="relu")
    return g


def test_graph_and_tensor_reprs_name_shape_dtype_layout_and_state() -> None:
    g = _graph()
    assert repr(g) == "<pycudnn.Graph 'cbr' 2 ops, 4 tensors, building>"
    assert repr(g["x"]) == "<pycudnn.graph.Tensor 'x' #1 [1, 32, 16, 16] float16 NHWC>"
    g.key()  # taking the key freezes the graph
    assert repr(g).endswith("frozen>")
    g.close()
    assert repr(g).endswith("closed>")


def test_plan_repr_names_graph_engine_target_workspace_and_state(
    deviceprops_json: dict[str, Any],
) -> None:
    props = DeviceProperties.from_json(deviceprops_json)
    g = _graph()
    plan = g.build(device_properties=props, cache=False)
    text = repr(plan)
    assert text.startswith("<pycudnn.Plan graph 'cbr', engine ")
    assert f"engine {plan.engine_id}" in text
    assert f"for {props.device_name} (deviceless)" in text
    assert f"workspace {plan.workspace_size} B" in text and "closed" not in text
    for name, value in plan.knobs.items():
        assert f"{name}={value}" in text
    assert repr(g).endswith("finalized>")
    # A plan loaded on a GPU gets that GPU's properties and its ordinal: it is not deviceless.
    on_gpu = Plan(plan.descriptor, graph=g, device_properties=props, device_id=0)
    on_gpu._owns_descriptor = False  # a view: the plan above owns the execution plan
    assert "on device 0" in repr(on_gpu) and "deviceless" not in repr(on_gpu)
    plan.close()
    assert repr(plan).endswith(", closed>")
