"""What a plan file keeps of its tensors beyond cuDNN's JSON, for a plan loaded without its graph:
the by-value scalars (an SDPA's scale and mask -inf, a norm's epsilon, a batchnorm's momentum)
and which tensors are outputs. Such a plan used to get every scalar value as zero, to miss the
scalars cuDNN's JSON leaves out, and to take outputs only from the roles the loader knew;
executing it would have run with scale 0 or epsilon 0 without a word. Executing needs a GPU;
what is checked here is what the variant pack would carry, and the refusals before any GPU work.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from plan_kinds import resealed

import pycudnn
from pycudnn.graph import Graph
from pycudnn.plan import Plan
from pycudnn.plan.slots import scalar_value

pytestmark = pytest.mark.usefixtures("libcuda")


@pytest.fixture(scope="module")
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def _qkv(g: Graph, name: str) -> Any:
    return g.tensor([2, 4, 128, 64], [128 * 4 * 64, 64, 4 * 64, 1], dtype="bfloat16", name=name)


def sdpa_forward() -> Graph:
    g = Graph("attn")
    g.sdpa(_qkv(g, "q"), _qkv(g, "k"), _qkv(g, "v"), scale=0.125, causal=True, return_stats=True)
    return g


def sdpa_backward() -> Graph:
    g = Graph("attn_bwd")
    q, k, v, o, do = (_qkv(g, n) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([2, 4, 128, 1], dtype="float32", name="stats")
    g.sdpa_backward(q, k, v, o, do, stats=stats, scale=0.25, causal=True)
    return g


def layernorm() -> Graph:
    g = Graph("ln")
    x = g.tensor([8, 128, 256], dtype="bfloat16", name="x")
    scale = g.tensor([1, 1, 256], dtype="float32", name="scale")
    bias = g.tensor([1, 1, 256], dtype="float32", name="bias")
    g.layernorm(x, scale, bias, epsilon=1e-3, training=True)  # mean and inv. variance out
    return g


def _scalars(plan: Plan) -> dict[str, float | int | None]:
    return {s.name: scalar_value(s) for s in plan._slots if s.by_value}


@pytest.mark.parametrize("make", [sdpa_forward, sdpa_backward, layernorm])
def test_a_plan_loaded_without_its_graph_keeps_every_scalar_and_its_value(
    make: Any, props: pycudnn.DeviceProperties
) -> None:
    built = make().build(device_properties=props, cache=False)
    expected = _scalars(built)
    assert expected and all(v is not None for v in expected.values())
    bare = Plan.from_json(built.to_json(), device_properties=props)
    assert bare.uids == built.uids and bare.tensor_names() == built.tensor_names()
    assert _scalars(bare) == expected
    # What the variant pack points at: the buffers hold the values, not zeros.
    for slot in bare._slots:
        if slot.by_value:
            assert slot.scalar[0] == pytest.approx(expected[slot.name], rel=1e-7)
    again = Plan.from_json(bare.to_json(), device_properties=props)  # kept across saves
    assert _scalars(again) == pytest.approx(expected, rel=1e-7)  # as the float32 buffer holds


def test_the_saved_values_are_the_ones_the_plan_holds(props: pycudnn.DeviceProperties) -> None:
    built = sdpa_forward().build(device_properties=props, cache=False)
    assert _scalars(built)["sdpa0.neg_inf"] == -math.inf
    built.set_scalar("sdpa0.scale", 0.5)
    data = json.loads(built.to_json())
    kept = data["pycudnnScalarValues"]
    scale_uid = next(s.uid for s in built._slots if s.name == "sdpa0.scale")
    assert kept[str(scale_uid)] == ["0.5", "FLOAT", 4]
    bare = Plan.from_json(json.dumps(data), device_properties=props)
    assert _scalars(bare)["sdpa0.scale"] == 0.5


def test_a_damaged_scalar_entry_is_refused_naming_the_field(
    props: pycudnn.DeviceProperties,
) -> None:
    data = json.loads(sdpa_forward().build(device_properties=props, cache=False).to_json())
    uid = next(iter(data["pycudnnScalarValues"]))
    for bad in (["0.1", "FLOAT"], ["x", "FLOAT", 4], ["1", "float", 4], ["1", "FLOAT", 99]):
        edited = json.loads(json.dumps(data))
        edited["pycudnnScalarValues"][uid] = bad
        with pytest.raises(ValueError, match="pycudnnScalarValues"):
            Plan.from_json(json.dumps(resealed(edited)), device_properties=props)
    # A scalar cuDNN's JSON leaves out, kept as a type no cuDNN has: refused by name.
    edited = json.loads(json.dumps(data))
    edited["pycudnnScalarValues"]["99"] = ["1", "NO_SUCH_TYPE", 4]
    with pytest.raises(ValueError, match="NO_SUCH_TYPE"):
        Plan.from_json(json.dumps(resealed(edited)), device_properties=props)


def test_a_scalar_with_no_value_is_refused_at_execute(props: pycudnn.DeviceProperties) -> None:
    """``g.scalar()`` without a value is given at execute; leaving it out used to run with 0."""
    g = Graph("scaled")
    x = g.tensor([1, 8, 16, 16], dtype="float32", name="x")
    g.mul(x, g.scalar(name="alpha"), name="times")
    plan = g.build(device_properties=props, cache=False)
    arrays = {"x": object(), "times.y": object()}
    with pytest.raises(KeyError, match=r"by-value scalar\(s\) without a value: alpha"):
        plan.execute(arrays)
    plan.set_scalar("alpha", 2.0)
    # now past the check, on to reading the arrays: the stand-in arrays are refused by name
    with pytest.raises(TypeError, match=r"^tensor 'x' must be an array exposing DLPack"):
        plan.execute(arrays)


@pytest.mark.parametrize("make", [sdpa_forward, sdpa_backward, layernorm])
def test_a_plan_loaded_without_its_graph_knows_its_outputs(
    make: Any, props: pycudnn.DeviceProperties
) -> None:
    """The outputs decide the read-only check of execute: an output array must be writable."""
    built = make().build(device_properties=props, cache=False)
    outputs = {s.name for s in built._slots if s.is_output}
    assert outputs
    bare = Plan.from_json(built.to_json(), device_properties=props)
    assert {s.name for s in bare._slots if s.is_output} == outputs
