"""Planning refusals that name the argument and the rule before cuDNN: knob names and values for a
chosen engine, ``sm_count`` against the target, and ``props.why_no_plans()`` for the properties
themselves (measured deviceless for an H100 on cuDNN 9.19 and 9.28)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pycudnn
from pycudnn.graph import Graph
from pycudnn.plan import GraphNotSupportedError, build_engine, engine_config

# The file the h100_props fixture (conftest.py) loads, read as JSON by the why_no_plans test.
H100 = Path(__file__).resolve().parent / "data" / "deviceprops" / "h100-sxm-80gb.json"


def conv() -> Graph:
    g = Graph("conv")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1)
    return g


def matmul() -> Graph:
    g = Graph("mm")
    g.matmul(g.tensor([1, 64, 32], dtype="float16"), g.tensor([1, 32, 48], dtype="float16"))
    return g


# -- knobs of a chosen engine -----------------------------------------------------------------------


def first_config(props: pycudnn.DeviceProperties) -> Any:
    cfg = conv().engine_configs(device_properties=props)[0]
    if not cfg.knob_info():
        pytest.skip(f"engine {cfg.engine_id} has no knobs with this cuDNN")
    return cfg


def test_a_value_outside_the_knob_range_is_refused_naming_it(
    h100_props: pycudnn.DeviceProperties,
) -> None:
    cfg = first_config(h100_props)
    knob = cfg.knob_info()[0]
    for value in (knob.maximum + 1, knob.minimum - 1):  # minimum - 1 is -1 for most knobs
        with pytest.raises(ValueError) as info:
            build_engine(conv(), cfg.engine_id, {knob.name: value}, device_properties=h100_props)
        text = str(info.value)
        assert f"knob {knob.name!r} of engine {cfg.engine_id}" in text
        assert f"{value} is outside its range {knob.minimum}..{knob.maximum}" in text


def test_a_knob_the_engine_lacks_is_refused_listing_its_knobs(
    h100_props: pycudnn.DeviceProperties,
) -> None:
    cfg = first_config(h100_props)
    names = [k.name for k in cfg.knob_info()]
    other = next(n for n in ("KBLOCK", "SPLIT_K_SLC", "TILE_SIZE", "SWIZZLE") if n not in names)
    with pytest.raises(ValueError) as info:
        engine_config(conv(), cfg.engine_id, {other: 0}, device_properties=h100_props)
    text = str(info.value)
    assert f"engine {cfg.engine_id} of graph 'conv' has no knob {other!r}" in text
    assert ", ".join(names) in text


def test_a_misspelt_knob_name_suggests_the_right_one() -> None:
    from pycudnn.plan.selection import _knob_type

    with pytest.raises(ValueError, match=r"unknown knob 'TILESIZE'.*did you mean 'TILE_SIZE'"):
        _knob_type("TILESIZE")


def test_the_heuristics_own_knob_choices_pass_the_checks(
    h100_props: pycudnn.DeviceProperties,
) -> None:
    # Every choice the heuristics make is within the ranges the engine reports (442 checked for
    # three graphs on 9.28), so replaying a config by hand is never refused before cuDNN.
    cfgs = conv().engine_configs(device_properties=h100_props)[:3]
    for cfg in cfgs:
        plan = build_engine(conv(), cfg.engine_id, cfg.knobs, device_properties=h100_props)
        assert plan.engine_id == cfg.engine_id and plan.knobs == cfg.knobs


def test_knob_values_are_checked_against_the_stride() -> None:
    from pycudnn.plan.heuristics import KnobInfo
    from pycudnn.plan.selection import _check_knobs, _knob_type

    info = [KnobInfo("SPLIT_K_SLC", 1, 9, 2)]
    _check_knobs([(_knob_type("SPLIT_K_SLC"), 5)], info, "engine 4")
    with pytest.raises(ValueError, match=r"4 is not 1 plus a multiple of its stride 2"):
        _check_knobs([(_knob_type("SPLIT_K_SLC"), 4)], info, "engine 4")


# -- sm_count ---------------------------------------------------------------------------------------


def test_sm_count_above_the_device_is_refused_before_cudnn(
    h100_props: pycudnn.DeviceProperties,
) -> None:
    # cuDNN 9.19 fails the heuristics for it ("target_sm_count > multiProcessorCount"; measured)
    sms = h100_props.multiprocessor_count
    with pytest.raises(ValueError, match=rf"sm_count={sms + 1} exceeds the target's {sms} SMs"):
        matmul().build(device_properties=h100_props, sm_count=sms + 1, cache=False)
    with pytest.raises(ValueError, match="exceeds"):
        matmul().heuristics("a", device_properties=h100_props, sm_count=sms + 1)
    with pytest.raises(ValueError, match="sm_count must be a positive int"):
        matmul().build(device_properties=h100_props, sm_count=0, cache=False)
    assert matmul().build(device_properties=h100_props, sm_count=sms, cache=False).engine_id >= 0


def test_sm_count_below_the_device_says_why_nothing_planned(
    h100_props: pycudnn.DeviceProperties,
) -> None:
    # Measured on 9.19 and 9.28: no engine of a matmul supports an SM carveout deviceless.
    with pytest.raises(GraphNotSupportedError) as info:
        matmul().build(device_properties=h100_props, sm_count=66, cache=False)
    assert any("sm_count=66 is below the target's 132 SMs" in a for a in info.value.report.advice)
    assert "Leave sm_count=None" in str(info.value)


# -- why_no_plans on the class and on an instance ---------------------------------------------------


def test_why_no_plans_on_an_instance_also_asks_about_the_properties(libcuda: Any) -> None:
    here = pycudnn.DeviceProperties.why_no_plans()  # the process only, as examples use it
    if here is not None:
        pytest.skip(here)
    data = json.loads(H100.read_text())
    assert pycudnn.DeviceProperties.from_json(data).why_no_plans() is None
    data.pop("memoryBusWidth", None)
    partial = pycudnn.DeviceProperties.from_json(data)
    why = partial.why_no_plans()
    assert pycudnn.DeviceProperties.why_no_plans() is None  # the class form is unchanged
    try:
        matmul().build(device_properties=partial, cache=False)
    except ValueError as exc:  # the loaded cuDNN requires the key (9.27 and newer)
        assert why is not None and "'memoryBusWidth'" in why and why == str(exc)
    else:  # 9.19 and older do not: the instance answers None, as the build shows
        assert why is None
