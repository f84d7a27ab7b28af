"""PlanOptions: the planning filters as one object, taken by every planning entry point."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import pytest

import pycudnn
from pycudnn import Graph, plan
from pycudnn.deviceprops import DeviceProperties
from pycudnn.plan import GraphNotSupportedError, PlanOptions
from pycudnn.plan.building import _cache_key
from pycudnn.plan.options import PLAN_FILTERS
from pycudnn.plan.targets import _target

MODES = ("a", "b", "fallback")

ENTRY_POINTS = [
    plan.engine_configs,
    plan.build,
    plan.build_all,
    plan.autotune,
    Graph.engine_configs,
    Graph.build,
    Graph.build_all,
    Graph.autotune,
]


def conv_graph() -> Graph:
    g = Graph("conv_options")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1, name="conv")
    return g


@pytest.fixture(scope="module")
def props(deviceprops_json: dict[str, Any]) -> DeviceProperties:
    return DeviceProperties.from_json(deviceprops_json)


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__qualname__)
def test_every_entry_point_takes_the_filters_and_options(entry: Callable[..., Any]) -> None:
    params = inspect.signature(entry).parameters
    assert set(PLAN_FILTERS) <= set(params)
    assert params["options"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["options"].default is None
    assert pycudnn.PlanOptions is PlanOptions


def _ids(configs: list[Any]) -> list[Any]:
    return [c.identity for c in configs]


@pytest.mark.usefixtures("libcuda")
def test_options_object_mapping_and_keywords_select_the_same_configs(
    props: DeviceProperties,
) -> None:
    g = conv_graph()
    every = plan.engine_configs(g, heuristics=MODES, device_properties=props)
    first = every[0].engine_id
    keywords = plan.engine_configs(
        g, heuristics=MODES, device_properties=props, exclude_engines=[first]
    )
    expected = [c.identity for c in every if c.engine_id != first]
    assert _ids(keywords) == expected
    opts = PlanOptions(heuristics=MODES, exclude_engines=[first])
    assert _ids(plan.engine_configs(g, device_properties=props, options=opts)) == expected
    assert _ids(g.engine_configs(device_properties=props, options=opts)) == expected
    as_dict = {"heuristics": MODES, "exclude_engines": [first]}
    assert _ids(g.engine_configs(device_properties=props, options=as_dict)) == expected


@pytest.mark.usefixtures("libcuda")
def test_a_keyword_overrides_the_options_field(props: DeviceProperties) -> None:
    g = conv_graph()
    every = plan.engine_configs(g, heuristics=MODES, device_properties=props)
    opts = PlanOptions(heuristics=MODES, exclude_engines=[every[0].engine_id])
    # exclude_engines=None given in the call wins over the options' exclusion
    both = g.engine_configs(device_properties=props, options=opts, exclude_engines=None)
    assert _ids(both) == _ids(every)
    # heuristics left None in the options: the entry point's own default modes
    default = plan.engine_configs(g, device_properties=props)
    assert _ids(g.engine_configs(device_properties=props, options=PlanOptions())) == _ids(default)


@pytest.mark.usefixtures("libcuda")
def test_options_and_keywords_share_the_plan_cache_entry(props: DeviceProperties) -> None:
    g = conv_graph()
    pc = plan.PlanCache()
    by_keywords = g.build(device_properties=props, cache=pc, deterministic=True)
    by_options = plan.build(g, device_properties=props, cache=pc, options={"deterministic": True})
    assert by_options is by_keywords
    other = g.build(device_properties=props, cache=pc, options=PlanOptions(max_workspace=0))
    assert other is not by_keywords


def test_options_are_checked_with_the_keywords_errors() -> None:
    g = conv_graph()
    with pytest.raises(TypeError, match=r"unknown planning option 'determinstic'.*'deterministic'"):
        plan.engine_configs(g, options={"determinstic": True})
    with pytest.raises(TypeError, match="options must be a PlanOptions or a mapping"):
        g.build(options=["deterministic"])
    with pytest.raises(ValueError, match="max_workspace must be a non-negative int"):
        g.engine_configs(options=PlanOptions(max_workspace=-1))
    with pytest.raises(TypeError, match="deterministic must be a bool"):
        plan.build_all(g, options=PlanOptions(deterministic="yes"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown note 'fast'"):
        g.engine_configs(options=PlanOptions(exclude_notes=["fast"]))


def test_options_are_frozen_and_keep_no_reference_to_a_callers_list() -> None:
    notes = ["TENSOR_CORE"]
    opts = PlanOptions(exclude_notes=notes)
    notes.append("DOWN_CONVERT_INPUTS")
    assert opts.exclude_notes == ("TENSOR_CORE",)
    with pytest.raises(AttributeError):
        opts.deterministic = True  # type: ignore[misc]
    assert hash(opts) == hash(PlanOptions(exclude_notes=("TENSOR_CORE",)))
    assert "heuristics" not in opts.keywords()
    assert PlanOptions.of(opts) is opts


@pytest.mark.usefixtures("libcuda")
def test_one_shot_iterables_filter_with_a_cache_as_lists_do(props: DeviceProperties) -> None:
    """The cache key and the query both read the exclusions: a generator used to be consumed by
    the key, so the query excluded nothing and the unfiltered plan was cached under the key of
    the filtered request."""
    first = conv_graph().build(device_properties=props, cache=False).engine_id
    pc = plan.PlanCache()
    excluded = conv_graph().build(
        device_properties=props, cache=pc, exclude_engines=(e for e in [first])
    )
    assert excluded.engine_id != first
    again = conv_graph().build(device_properties=props, cache=pc, exclude_engines=[first])
    assert again.engine_id == excluded.engine_id and pc.stats["memory_hits"] == 1
    no_tc = conv_graph().build(
        device_properties=props, cache=plan.PlanCache(), exclude_notes=iter(["TENSOR_CORE"])
    )
    assert "TENSOR_CORE" not in no_tc.numerical_notes
    one_mode = conv_graph().build(device_properties=props, heuristics=iter(["a"]))
    assert one_mode.engine_id == first and one_mode.report is not None


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize("cached", [False, True])
def test_a_bad_filter_is_refused_alike_with_and_without_a_cache(
    props: DeviceProperties, cached: bool
) -> None:
    # The key used to be made before the checks: with a cache, JSON's "not serializable".
    cache = plan.PlanCache() if cached else False
    with pytest.raises(ValueError, match="max_workspace must be a non-negative int"):
        conv_graph().build(device_properties=props, cache=cache, max_workspace=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected option"):
        _cache_key(conv_graph(), _target(props, None), {"max_wrokspace": 0}, autotuned=False)


@pytest.mark.usefixtures("libcuda")
def test_autotuning_a_few_candidates_has_its_own_cache_key(props: DeviceProperties) -> None:
    """The winner of the first N candidates is not what a full autotune would pick."""
    g, target, values = conv_graph(), _target(props, None), {"heuristics": ("a",)}
    full = _cache_key(g, target, values, autotuned=True)
    few = {n: _cache_key(g, target, values, autotuned=True, candidates=n) for n in (1, 8)}
    assert len({full, *few.values()}) == 3
    assert _cache_key(g, target, values, autotuned=True, candidates=None) == full


def wgrad_graph() -> Graph:
    """A weight gradient whose H100 engines include engine 20, noted NONDETERMINISTIC."""
    g = Graph("wgrad_options")
    x = g.tensor([8, 64, 32, 32], fmt="NCHW", dtype="float32", name="x")
    dy = g.tensor([8, 64, 32, 32], fmt="NCHW", dtype="float32", name="dy")
    g.conv_wgrad(x, dy, padding=1, name="wgrad")
    return g


@pytest.mark.usefixtures("libcuda")
def test_autotune_applies_the_filters_to_a_list_of_candidates(
    props: DeviceProperties, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's list of plans used to be timed whatever the filters said (and the filters went
    unchecked): a NONDETERMINISTIC plan could win autotune(deterministic=True). The filters run
    before any timing: a GPU's presence and the target are stood in for, the plans are real."""
    from pycudnn.plan import autotuning

    g = wgrad_graph()
    target = _target(props, None)
    monkeypatch.setattr(autotuning, "driver_status", lambda: types.SimpleNamespace(usable=True))
    monkeypatch.setattr(autotuning, "_target", lambda _props, _device: target)
    nondeterministic = plan.build_engine(g, 20, device_properties=props)
    assert "NONDETERMINISTIC" in nondeterministic.numerical_notes
    with pytest.raises(GraphNotSupportedError, match="nondeterministic") as info:
        autotuning.autotune(g, {}, candidates=[nondeterministic], deterministic=True, cache=False)
    assert info.value.report.filtered == [("engine 20", "nondeterministic")]
    with pytest.raises(GraphNotSupportedError, match=r"exclude_engines"):
        autotuning.autotune(g, {}, candidates=[nondeterministic], exclude_engines=[20], cache=False)
    with pytest.raises(ValueError, match="unknown note 'TENSOR_CORES'"):
        autotuning.autotune(
            g, {}, candidates=[nondeterministic], exclude_notes=["TENSOR_CORES"], cache=False
        )
    assert not nondeterministic.closed  # the caller's plan, left to the caller
