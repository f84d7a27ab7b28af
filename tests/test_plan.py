"""Planning (heuristics, filters, plans, JSON, caches) on the CPU tier.

Everything that needs configs cuDNN can materialize uses ``deviceprops_json``: a device-properties
JSON captured on a real GPU and committed to tests/data/deviceprops (the fixture skips until one
is there). The rest runs with libcuda.so.1 only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from versioned import heuristics_run_here

import pycudnn
from _nvbind.cuda import driver_status
from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph, GraphError
from pycudnn.plan import (
    HEURISTIC_MODES,
    EngineConfig,
    GraphNotSupportedError,
    KnobInfo,
    Plan,
    PlanCache,
    PlanVersionError,
    build,
    default_plan_cache,
    engine_configs,
)

REPO = Path(__file__).resolve().parent.parent


def conv_bias_relu() -> Graph:
    g = Graph("conv_bias_relu")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
    g.relu(g.add(g.conv_fprop(x, w, padding=1, name="conv"), b, name="bias_add"), name="relu")
    return g


def conv_only() -> Graph:
    g = Graph("conv")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1, name="conv")
    return g


def matmul_bias_gelu() -> Graph:
    g = Graph("matmul_bias_gelu")
    a = g.tensor([1, 64, 32], dtype="float16", name="a")
    b = g.tensor([1, 32, 48], dtype="float16", name="b")
    bias = g.tensor([1, 1, 48], dtype="float16", name="bias")
    g.gelu(g.add(g.matmul(a, b, name="mm"), bias), name="gelu")
    return g


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> DeviceProperties:
    return DeviceProperties.from_json(deviceprops_json)


# -- argument checks (no library needed before the error) -----------------------------------------


def test_heuristic_mode_names() -> None:
    assert set(HEURISTIC_MODES) == {"instant", "a", "b", "fallback"}


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize(
    ("kwargs", "exc", "fragment"),
    [
        ({"heuristics": "z"}, ValueError, "unknown heuristic mode 'z'"),
        ({"heuristics": []}, ValueError, "at least one mode"),
        ({"device_properties": {"deviceName": "x"}}, TypeError, "pycudnn.DeviceProperties"),
        ({"max_workspace": -1}, ValueError, "max_workspace"),
        ({"deterministic": "yes"}, TypeError, "deterministic must be a bool"),
        ({"cache": "dir"}, TypeError, "cache must be"),
    ],
)
def test_build_argument_checks(kwargs: dict, exc: type, fragment: str) -> None:
    with pytest.raises(exc, match=fragment):
        build(conv_only(), **kwargs)


def test_plan_cache_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_size"):
        PlanCache(max_size=0)
    pc = PlanCache(tmp_path / "nested" / "dir", max_size=3)
    assert pc.directory is not None and pc.directory.is_dir()
    assert len(pc) == 0 and pc.stats["misses"] == 0
    assert default_plan_cache() is default_plan_cache()


@pytest.mark.parametrize(
    ("source", "exc", "fragment"),
    [
        ("{broken", ValueError, "does not parse"),
        ('{"schemaVersion": 4}', ValueError, "no 'cudnnVersion'"),
        (3, TypeError, "JSON string or a dict"),
    ],
)
def test_from_json_refuses_non_plans(source: Any, exc: type, fragment: str) -> None:
    with pytest.raises(exc, match=fragment):
        Plan.from_json(source)


@pytest.mark.usefixtures("libcuda")
def test_from_json_refuses_another_cudnn_version_before_cudnn_sees_it() -> None:
    other = pycudnn.version() - 100  # the previous minor release
    with pytest.raises(PlanVersionError, match=f"cudnnVersion {other}") as info:
        Plan.from_json({"cudnnVersion": other, "schemaVersion": 4})
    assert "exact version" in str(info.value)


@pytest.mark.usefixtures("libcuda")
def test_deserializing_without_device_properties_or_gpu_is_refused() -> None:
    # Finalizing a deserialized plan with neither DEVICEPROP nor a handle crashes cuDNN: the
    # binding must refuse before creating the descriptor.
    if driver_status().usable:
        pytest.skip("this machine has a GPU: the current device's properties are used")
    # before 9.8 there are no device properties to pass: only a GPU can load plans
    hint = "device_properties=" if pycudnn.version_tuple() >= (9, 8) else "needs a GPU"
    with pytest.raises(ValueError, match=hint):
        Plan.from_json({"cudnnVersion": pycudnn.version(), "schemaVersion": 4})


@pytest.mark.usefixtures("libcuda")
def test_without_gpu_or_properties_heuristics_count_but_return_nothing() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU")
    g = conv_bias_relu()
    res = g.heuristics("a")
    if not heuristics_run_here():
        # before 9.9 cuDNN's heuristics would read uninitialized device properties: not run
        assert res.count == 0 and res.configs == [] and "before 9.9" in res.error
        assert "a: failed (not run: cuDNN before 9.9" in res.describe()
        assert engine_configs(g, heuristics=["a", "fallback"]) == []
        return
    assert res.count > 0 and res.returned == 0 and res.configs == []
    # the result says why it returned nothing: there is no target
    assert "no device_properties= were given" in res.note
    assert (
        res.describe().startswith("a: ") and "0 returned (none without a target" in res.describe()
    )
    assert engine_configs(g, heuristics=["a", "fallback"]) == []


@pytest.mark.usefixtures("libcuda")
def test_autotune_needs_a_gpu() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="autotuning times plans on the GPU"):
        conv_only().autotune({})


@pytest.mark.usefixtures("libcuda")
def test_an_autotuned_plan_read_from_a_cache_directory_says_how_it_was_chosen(
    props: DeviceProperties, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache path of autotune() runs before any timing: a GPU's presence and its target are
    stood in for, the plan, its key and the cache directory are real. A winner read back from
    disk said "from json"."""
    import types

    from pycudnn.plan import autotuning
    from pycudnn.plan.building import _cache_key
    from pycudnn.plan.options import plan_values
    from pycudnn.plan.targets import _target

    g = conv_only()
    target = _target(props, None)
    monkeypatch.setattr(autotuning, "driver_status", lambda: types.SimpleNamespace(usable=True))
    monkeypatch.setattr(autotuning, "_target", lambda _props, _device: target)
    key = _cache_key(g, target, plan_values(("a", "b", "fallback"), {}), autotuned=True)
    PlanCache(tmp_path)._store(key, g.build(device_properties=props, cache=False), target)
    cache = PlanCache(tmp_path)
    winner = autotuning.autotune(conv_only(), {}, cache=cache)
    assert cache.stats["disk_hits"] == 1
    assert winner.source == "autotune" and winner.autotune_results is None


# -- with device properties ---------------------------------------------------------------------------


def test_heuristics_with_device_properties_return_configs(props: DeviceProperties) -> None:
    g = conv_bias_relu()
    for mode in ("a", "fallback"):
        res = g.heuristics(mode, device_properties=props)
        assert 0 < res.returned <= res.count
        for cfg in res.configs:
            assert isinstance(cfg, EngineConfig) and cfg.mode == mode
            assert isinstance(cfg.engine_id, int) and cfg.engine_id >= 0
            assert all(isinstance(v, int) for v in cfg.knobs.values())
            assert cfg.workspace_size is None or cfg.workspace_size >= 0


def test_engine_config_knob_info(props: DeviceProperties) -> None:
    cfgs = engine_configs(conv_only(), device_properties=props)
    assert cfgs
    infos = [k for c in cfgs[:5] for k in c.knob_info()]
    for info in infos:
        assert isinstance(info, KnobInfo) and info.minimum <= info.maximum
    # the knob choices a config makes lie in its engine's knob ranges
    for cfg in cfgs[:5]:
        ranges = {k.name: k for k in cfg.knob_info()}
        for name, value in cfg.knobs.items():
            if name in ranges:
                assert ranges[name].minimum <= value <= ranges[name].maximum


def test_filters_drop_the_configs_they_name(props: DeviceProperties) -> None:
    g = conv_bias_relu()
    every = engine_configs(g, heuristics=["a", "b", "fallback"], device_properties=props)
    det = engine_configs(
        g, heuristics=["a", "b", "fallback"], device_properties=props, deterministic=True
    )
    assert all("NONDETERMINISTIC" not in c.numerical_notes for c in det)
    exact = engine_configs(
        g, heuristics=["a", "b", "fallback"], device_properties=props, allow_reduced_precision=False
    )
    assert all(
        not {"REDUCED_PRECISION_REDUCTION", "DOWN_CONVERT_INPUTS"} & set(c.numerical_notes)
        for c in exact
    )
    no_rtc = engine_configs(
        g,
        heuristics=["a", "b", "fallback"],
        device_properties=props,
        allow_runtime_compilation=False,
    )
    assert all("RUNTIME_COMPILATION" not in c.behavior_notes for c in no_rtc)
    no_ws = engine_configs(
        g, heuristics=["a", "b", "fallback"], device_properties=props, max_workspace=0
    )
    assert all(c.workspace_size in (0, None) for c in no_ws)
    # each filter removes exactly the configs carrying its note
    assert len(det) == len([c for c in every if "NONDETERMINISTIC" not in c.numerical_notes])
    ids = [c.identity for c in every]
    assert len(ids) == len(set(ids))  # duplicates across modes are kept once


def test_build_and_json_round_trip(props: DeviceProperties, tmp_path: Path) -> None:
    for make in (conv_bias_relu, conv_only, matmul_bias_gelu):
        g = make()
        plan = g.build(device_properties=props, cache=False)
        assert isinstance(plan.engine_id, int) and plan.workspace_size >= 0
        text = plan.to_json()
        data = json.loads(text)
        assert data["cudnnVersion"] == pycudnn.version()
        assert data["engine"]["engineId"] == plan.engine_id
        assert data["GPUProfile"]["deviceName"] == props.device_name
        path = tmp_path / f"{g.name}.json"
        plan.save(path)
        again = g.load_plan(path, device_properties=props)
        assert again.engine_id == plan.engine_id
        # a deserialized config may also list knobs left at their defaults (-1)
        assert {k: again.knobs.get(k) for k in plan.knobs} == plan.knobs
        assert again.workspace_size == plan.workspace_size
        assert again.uids == plan.uids
        assert json.loads(again.to_json())["engine"] == data["engine"]
        bare = Plan.from_json(text, device_properties=props)  # no graph: keys are unique ids
        assert bare.uids == plan.uids and bare.graph is None


def test_plan_for_another_graph_is_refused(props: DeviceProperties) -> None:
    text = conv_only().build(device_properties=props, cache=False).to_json()
    with pytest.raises(ValueError, match="another graph"):
        Plan.from_json(text, graph=matmul_bias_gelu(), device_properties=props)


def test_edited_version_is_refused(props: DeviceProperties) -> None:
    data = json.loads(conv_only().build(device_properties=props, cache=False).to_json())
    data["cudnnVersion"] -= 100
    with pytest.raises(PlanVersionError):
        Plan.from_json(json.dumps(data), device_properties=props)


def test_build_all_gives_several_plans(props: DeviceProperties) -> None:
    plans = conv_only().build_all(device_properties=props, heuristics=["a", "fallback"], limit=4)
    assert 1 <= len(plans) <= 4
    assert len({(p.engine_id, tuple(sorted(p.knobs.items()))) for p in plans}) == len(plans)


def test_memory_cache_returns_the_same_plan(props: DeviceProperties) -> None:
    pc = PlanCache()
    g = conv_only()
    p1 = g.build(device_properties=props, cache=pc)
    p2 = g.build(device_properties=props, cache=pc)
    assert p2 is p1 and pc.stats["memory_hits"] == 1 and pc.stats["misses"] == 1
    other = conv_only()  # same structure, new Tensor objects
    p3 = other.build(device_properties=props, cache=pc)
    assert p3.graph is other and p3.engine_id == p1.engine_id
    assert pc.stats["memory_hits"] == 2
    assert p3.descriptor is p1.descriptor  # one execution plan, two graph bindings
    different = conv_bias_relu().build(device_properties=props, cache=pc)
    assert different is not p1 and pc.stats["misses"] == 2
    p1.close()
    # The cache keeps the execution plan: closing the plan build() handed out closes that object
    # only; the view and the next build still use the cached plan (no second finalize).
    assert p1.closed and not p3.closed and not p1.descriptor.closed
    with pytest.raises(pycudnn.ClosedError):
        p1.execute({})
    p4 = g.build(device_properties=props, cache=pc)
    assert p4 is not p1 and not p4.closed and p4.descriptor is p1.descriptor
    assert pc.stats["memory_hits"] == 3 and pc.stats["misses"] == 2


def test_closing_each_built_plan_does_not_rebuild_it(props: DeviceProperties) -> None:
    # `with g.build() as plan:` in a loop: each close used to destroy the cached plan, so every
    # build after the first missed and finalized a new plan (for runtime-compiled engines a
    # kernel compilation and memory cuDNN keeps; docs/reliability.md, "Runtime compilation").
    pc = PlanCache()
    for _ in range(3):
        with conv_only().build(device_properties=props, cache=pc) as plan:
            assert not plan.closed
    assert pc.stats["misses"] == 1 and pc.stats["memory_hits"] == 2
    pc.clear()
    assert conv_only().build(device_properties=props, cache=pc) is not plan
    assert pc.stats["misses"] == 2


def test_execute_checks_arguments_before_any_gpu_work(props: DeviceProperties) -> None:
    g = conv_bias_relu()
    plan = g.build(device_properties=props, cache=False)
    x, w, b, y = g["x"], g["w"], g["bias"], g["relu.y"]
    host = {t: np.zeros(t.dims, dtype=t.dtype) for t in (x, w, b, y)}
    with pytest.raises(ValueError, match="tensor 'x': the array is in host memory"):
        plan.execute(host)
    with pytest.raises(KeyError, match="missing for tensor\\(s\\): w"):
        plan.execute({x: host[x], b: host[b], y: host[y]})
    with pytest.raises(KeyError, match="not a tensor of this plan"):
        plan.execute({**host, "nope": host[x]})
    with pytest.raises(KeyError, match="virtual"):
        plan.execute({**host, g["conv.y"]: host[x]})
    with pytest.raises(KeyError, match="given twice"):
        plan.execute({x: host[x], "x": host[x], w: host[w], b: host[b], y: host[y]})
    with pytest.raises(TypeError, match=r"pycudnn\.Handle"):
        plan.execute(host, handle=object())
    with pytest.raises(TypeError, match="bare pointer"):
        plan.execute(host, workspace=1234)
    plan.close()
    plan.close()
    with pytest.raises(pycudnn.ClosedError):
        plan.execute(host)
    with pytest.raises(pycudnn.ClosedError):
        plan.to_json()


def test_disk_cache_is_reused_by_another_process(
    props: DeviceProperties, tmp_path: Path, deviceprops_json: dict[str, Any]
) -> None:
    cache_dir = tmp_path / "plans"
    pc = PlanCache(cache_dir)
    plan = conv_bias_relu().build(device_properties=props, cache=pc)
    files = list(cache_dir.glob("*.json"))
    assert len(files) == 1 and pc.stats["stores"] == 1
    props_file = tmp_path / "props.json"
    props_file.write_text(json.dumps(deviceprops_json))
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        import pycudnn.plan as P
        from pycudnn import DeviceProperties
        from test_plan import conv_bias_relu

        def no_heuristics(*a, **k):
            raise AssertionError("heuristics ran although the plan is cached on disk")

        P.run_heuristics = no_heuristics
        pc = P.PlanCache({str(cache_dir)!r})
        props = DeviceProperties.load({str(props_file)!r})
        plan = conv_bias_relu().build(device_properties=props, cache=pc)
        print(plan.engine_id, pc.stats["disk_hits"], pc.stats["misses"])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    engine, disk_hits, misses = out.stdout.split()
    assert int(engine) == plan.engine_id and int(disk_hits) == 1 and int(misses) == 0


def test_disk_cache_rebuilds_a_plan_from_another_version(
    props: DeviceProperties, tmp_path: Path
) -> None:
    pc = PlanCache(tmp_path)
    conv_only().build(device_properties=props, cache=pc)
    (path,) = tmp_path.glob("*.json")
    data = json.loads(path.read_text())
    data["cudnnVersion"] -= 100
    path.write_text(json.dumps(data))
    fresh = PlanCache(tmp_path)
    plan = conv_only().build(device_properties=props, cache=fresh)
    assert fresh.stats["version_mismatches"] == 1 and fresh.stats["misses"] == 1
    assert fresh.stats["stores"] == 1
    assert json.loads(path.read_text())["cudnnVersion"] == pycudnn.version()  # rewritten
    assert plan.engine_id is not None


def test_cache_keys_separate_what_changes_a_plan(props: DeviceProperties) -> None:
    pc = PlanCache()
    conv_only().build(device_properties=props, cache=pc)
    conv_only().build(device_properties=props, cache=pc, deterministic=True)
    conv_only().build(device_properties=props, cache=pc, heuristics="fallback")
    other_device = DeviceProperties.from_json(
        {**props.as_dict(), "multiProcessorCount": props.multiprocessor_count - 2}
    )
    conv_only().build(device_properties=other_device, cache=pc)
    assert pc.stats["misses"] == 4 and pc.stats["memory_hits"] == 0 and len(pc) == 4


def test_lru_is_bounded(props: DeviceProperties) -> None:
    pc = PlanCache(max_size=2)
    for make in (conv_only, conv_bias_relu, matmul_bias_gelu):
        make().build(device_properties=props, cache=pc)
    assert len(pc) == 2
    conv_only().build(device_properties=props, cache=pc)  # evicted first: a miss again
    assert pc.stats["misses"] == 4


def test_not_supported_with_properties_lists_failures(props: DeviceProperties) -> None:
    # An unfused reduction along the inner dims of an NCHW-packed tensor had no engine in the
    # observed library (cuDNN: "!is_NHWC"): the error must list what was tried.
    g = Graph("reduce_nchw")
    g.reduction(g.tensor([8, 64, 32, 32], dtype="float32"), axes=[0, 2, 3])
    try:
        plan = g.build(device_properties=props, cache=False)
    except GraphNotSupportedError as exc:
        text = str(exc)
        assert "no engine supports graph 'reduce_nchw'" in text and "heuristics tried" in text
        assert exc.report.heuristics
    else:  # a newer library may support it; then it is a plan like any other
        assert plan.engine_id is not None


def test_smoke_checks_run_on_this_machine(
    deviceprops_json: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pycudnn.plan import smoke_checks

    path = tmp_path / "props.json"
    path.write_text(json.dumps(deviceprops_json))
    monkeypatch.setenv("PYCUDNN_DEVICEPROPS", str(path))

    names = dict(smoke_checks())
    out = names["graph heuristics (conv+bias+ReLU, matmul)"]()
    assert out["conv_bias_relu"]["engines"] > 0
    assert "graphs finalized" in out["summary"]
    deviceless = names["deviceless plans from device properties"]()
    assert deviceless["conv_bias_relu"]["json_bytes"] > 0


@pytest.mark.usefixtures("libcuda")
def test_a_tensor_changed_after_the_key_was_taken_is_refused(props: DeviceProperties) -> None:
    """A tensor's dims, strides and alignment are plain attributes: reassigned after the graph's
    key was taken, the key (and a plan cached under it) still described the old layout, and a
    memory hit ran the old plan on arrays checked against the new one."""
    cache = PlanCache()
    conv_only().build(device_properties=props, cache=cache)
    g = conv_only()
    key = g.key()
    assert g.key() == key  # unchanged: the same key, no refusal
    g["x"].strides = (8192, 1, 512, 32)[::-1]
    with pytest.raises(GraphError, match="tensor 'x' of graph 'conv' was changed after"):
        g.build(device_properties=props, cache=cache)
    assert cache.stats["memory_hits"] == 0


def scaled_conv() -> Graph:
    """conv_only times a by-value scalar 's' (a graph cuDNN plans as described, no rewrite)."""
    g = conv_only()
    y = g.scale(g.operations[0].outputs["y"], g.scalar(2.0, name="s"), name="scale")
    y.set_output(dtype="float16")
    return g


@pytest.mark.usefixtures("libcuda")
def test_a_by_value_flag_changed_after_the_key_was_taken_is_refused(
    props: DeviceProperties,
) -> None:
    """``by_value`` is a plain attribute too, and in the key: set False after the key was taken,
    the graph's plan read 's' as a device pointer under the key of graphs that pass it as a host
    scalar, and their memory hit executed it so (a silent wrong scale)."""
    cache = PlanCache()
    g = scaled_conv()
    g.key()
    g["s"].by_value = False
    with pytest.raises(GraphError, match="tensor 's' of graph 'conv' was changed after"):
        g.build(device_properties=props, cache=cache)
    scaled_conv().build(device_properties=props, cache=cache)
    assert cache.stats["memory_hits"] == 0 and cache.stats["stores"] == 1


@pytest.mark.usefixtures("libcuda")
def test_a_tensor_changed_after_finalize_before_the_key_is_refused(props: DeviceProperties) -> None:
    """The guard compared the tensors with themselves as they were when the key was first taken:
    changed after finalize() (descriptors built of the old layout) and before any key, the
    graph was planned from those descriptors under the key of the new layout, and a graph
    described with that layout got the old layout's plan as a memory hit."""
    cache = PlanCache()
    g = scaled_conv()
    g.finalize(None)  # the unbound descriptors deviceless planning uses
    g["s"].by_value = False
    with pytest.raises(GraphError, match="tensor 's' of graph 'conv' was changed after"):
        g.build(device_properties=props, cache=cache)
    g = conv_only()
    g.finalize(None)
    g["x"].strides = (8192, 1, 512, 32)[::-1]
    with pytest.raises(GraphError, match="tensor 'x' of graph 'conv' was changed after"):
        g.key()
    assert cache.stats["stores"] == 0
