"""A built plan reads its engine's description (engine id, knobs, notes) when first asked for,
not while it is built, and gives the same values as before: those the plan's own JSON reads back,
after ``close()`` too, and on plan-cache views."""

from __future__ import annotations

import pytest

import pycudnn
from pycudnn.plan import Plan, PlanCache

_FIELDS = ("engine_id", "knobs", "numerical_notes", "behavior_notes")


def _conv(name: str = "conv") -> pycudnn.Graph:
    g = pycudnn.Graph(name)
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1).set_output(True, dtype="float16")
    return g


def _described(plan: Plan) -> tuple[object, ...]:
    return tuple(getattr(plan, f) for f in _FIELDS)


def test_build_reads_no_engine_description(h100_props: pycudnn.DeviceProperties) -> None:
    plan = _conv().build(device_properties=h100_props, cache=False)
    assert not set(_FIELDS) & set(vars(plan))
    assert isinstance(plan.engine_id, int) and "engine_id" in vars(plan)
    plan.close()


def test_lazy_values_match_the_plans_own_json(h100_props: pycudnn.DeviceProperties) -> None:
    g = _conv()
    plan = g.build(device_properties=h100_props, cache=False)
    # A deserialized plan reads its engine config back from cuDNN, eagerly, another path.
    loaded = Plan.from_json(plan.to_json(), graph=g, device_properties=h100_props)
    assert set(_FIELDS) <= set(vars(loaded)) and loaded.config is None
    assert _described(plan) == _described(loaded)
    assert plan.knobs, "a convolution engine has knobs: the comparison would prove nothing"
    assert "TENSOR_CORE" in plan.numerical_notes  # fp16 NHWC conv on an H100
    # The plan's knobs are its own dict: changing them leaves the config's alone.
    plan.knobs["made_up"] = 1
    assert plan.config is not None and "made_up" not in plan.config.knobs
    loaded.close()
    plan.close()


def test_description_readable_after_close(h100_props: pycudnn.DeviceProperties) -> None:
    plan = _conv().build(device_properties=h100_props, cache=False)
    eager = _conv().build(device_properties=h100_props, cache=False)
    expected = _described(eager)
    eager.close()
    plan.close()
    assert _described(plan) == expected
    assert "engine" in repr(plan) and "closed" in repr(plan)


@pytest.mark.parametrize("read_first", [False, True])
def test_cache_views_describe_the_same_engine(
    h100_props: pycudnn.DeviceProperties, read_first: bool
) -> None:
    cache = PlanCache()
    first = _conv().build(device_properties=h100_props, cache=cache)
    if read_first:
        expected = _described(first)
    view = _conv().build(device_properties=h100_props, cache=cache)
    assert cache.stats["memory_hits"] == 1
    assert view is not first
    assert _described(view) == _described(first)
    if read_first:
        assert _described(view) == expected
    assert view.knobs is not first.knobs
    cache.clear()


def test_other_attributes_still_missing(h100_props: pycudnn.DeviceProperties) -> None:
    plan = _conv().build(device_properties=h100_props, cache=False)
    with pytest.raises(AttributeError, match="no attribute 'not_a_field'"):
        plan.not_a_field  # noqa: B018
    assert not hasattr(plan, "engine")
    plan.knobs = {"SPLIT_K": 2}  # still an ordinary attribute
    assert plan.knobs == {"SPLIT_K": 2}
    plan.close()
