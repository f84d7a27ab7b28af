"""Planning does no repeated work: the driver is probed once per process, engine configs are read
lazily, bindings resolve per function, and a plan-cache hit is a dict lookup.

None of these tests is timed: each asserts that the costly step is not taken again (counted on the
real library), so it cannot flake on a loaded machine.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

import pycudnn
from _nvbind import cuda


def _conv(name: str = "conv") -> pycudnn.Graph:
    g = pycudnn.Graph(name)
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 64, 1, 1], fmt="NHWC", dtype="float16", name="b")
    g.relu(g.add(g.conv_fprop(x, w, padding=1), b))
    return g


def _count_probes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = cuda._probe

    def counting() -> cuda.DriverStatus:
        calls.append(1)
        return real()

    monkeypatch.setattr(cuda, "_probe", counting)
    return calls


def test_driver_is_probed_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    first = cuda.driver_status()
    calls = _count_probes(monkeypatch)
    assert cuda.driver_status() is first
    assert calls == []
    again = cuda.driver_status(refresh=True)
    assert calls == [1]
    assert again is not first and again == first  # cuInit's answer is the same within a process


def test_builds_do_not_probe_the_driver(
    h100_props: pycudnn.DeviceProperties, monkeypatch: pytest.MonkeyPatch
) -> None:
    cuda.driver_status()
    calls = _count_probes(monkeypatch)
    for _ in range(2):
        _conv().build(device_properties=h100_props, cache=False)
    assert calls == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_keeps_the_answer_of_a_parent_without_cuda() -> None:
    """A parent that could not initialise CUDA hands its answer on: the child does not pay for
    another failing cuInit (a parent that did initialise CUDA hands on "not usable": see
    tests/test_reliability_runtime_fork.py)."""
    parent = cuda.driver_status()
    if parent.usable:
        pytest.skip("the parent initialised CUDA: its child is told CUDA is unusable instead")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether its first call probed (a new object) and agreed
        try:
            st = cuda.driver_status()
            os.write(write, b"%d%d" % (st is parent, st == parent))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        answer = f.read()
    os.waitpid(pid, 0)
    assert answer == b"11"


def _count_descriptors(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from pycudnn import backend

    kinds: list[str] = []
    real = backend.BackendDescriptor.__init__

    def counting(self: backend.BackendDescriptor, kind: object, **kw: Any) -> None:
        kinds.append(str(kind))
        real(self, kind, **kw)

    monkeypatch.setattr(backend.BackendDescriptor, "__init__", counting)
    return kinds


def test_build_reads_only_the_config_it_builds(
    h100_props: pycudnn.DeviceProperties, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pycudnn.plan import heuristics

    g = _conv()
    g.build(device_properties=h100_props, cache=False)  # the graph's own descriptors, once
    read: list[int] = []
    real = heuristics._knob_choices

    def counting(descriptor: Any) -> dict[str, int]:
        read.append(1)
        return real(descriptor)

    monkeypatch.setattr(heuristics, "_knob_choices", counting)
    kinds = _count_descriptors(monkeypatch)
    plan = g.build(device_properties=h100_props, cache=False)
    assert plan.report is not None
    returned = sum(r.returned for r in plan.report.heuristics)
    # Mode A returns ~40 configs for this conv; reading each one's knobs took ~2,000 descriptors.
    assert returned > 30
    # Not even the built config's knobs: the plan reads them when first asked for.
    assert read == []
    assert plan.knobs == plan.config.knobs and read == [1]
    # One ENGINECFG per config returned (cuDNN fills descriptors it is given), the heuristics, the
    # built config's engine and knob choices and the plan: not one knob descriptor per knob type
    # per config (~2,000).
    assert len(kinds) < 2 * returned, sorted(set(kinds))


def test_lazy_knobs_are_the_full_read(
    h100_props: pycudnn.DeviceProperties, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pycudnn.plan import heuristics

    def full(cfg: heuristics.EngineConfig) -> dict[str, int]:
        out = {}
        for c in cfg.descriptor.get("ENGINECFG_KNOB_CHOICES", count=heuristics._KNOB_TYPE_COUNT):
            out[c.get("KNOB_CHOICE_KNOB_TYPE").name] = int(c.get("KNOB_CHOICE_KNOB_VALUE"))
        return out

    # Fewer first slots than engine 41 has knobs (6): the read must go on to the full count.
    monkeypatch.setattr(heuristics, "_FIRST_KNOB_SLOTS", 2)
    configs = _conv().engine_configs(device_properties=h100_props)
    assert max(len(c.knobs) for c in configs) > 2
    for cfg in configs[:5] + configs[-3:]:
        assert cfg.knobs == full(cfg), cfg.describe()
    # No two configs are the same engine setup (duplicates across modes are dropped).
    assert len({c.identity for c in configs}) == len(configs)


def test_report_says_each_cudnn_line_once() -> None:
    from pycudnn.plan import PlanningReport

    auto = "cuDNN Library configuration is set to AUTO. Automatically configuring the library mode to FULL."
    report = PlanningReport(
        log=[
            f"Warning: CUDNN_STATUS_SUCCESS; Reason: {auto}",
            "Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: check_for_support()",
            f"Warning: CUDNN_STATUS_SUCCESS; Reason: {auto}",
            f"Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: {auto}",
            "Warning: CUDNN_STATUS_NOT_SUPPORTED; Reason: check_for_support()",
        ]
    )
    said = report.describe().split("cuDNN said: ", 1)[1].splitlines()[0]
    assert said.count("AUTO") == 1 and said.count("check_for_support()") == 1
    assert said.index("AUTO") < said.index("check_for_support()")  # where it was first said


def test_functions_are_bound_on_first_use_each(h100_props: Any) -> None:
    """A new process binds the C functions it calls, one by one, nothing at import, and plans for
    device properties without probing the driver."""
    import subprocess
    import sys

    from conftest import H100_PROPS_FILE

    code = f"""
import json
import pycudnn, pycudnn.raw
from pycudnn._lib import LIB
at_import = (LIB.is_loaded, len(LIB._bound))
g = pycudnn.Graph("g")
g.relu(g.tensor([1, 8, 8], dtype="float16", name="x"))
g.build(device_properties=pycudnn.DeviceProperties.load({str(H100_PROPS_FILE)!r}), cache=False)
from _nvbind import cuda
print(json.dumps([at_import, sorted(LIB._bound), cuda._Kept.answer is not None]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (loaded, bound_at_import), bound, probed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (loaded, bound_at_import) == (False, 0)
    # Planning for device properties needs libcuda, not cuInit (14-60 ms when it fails).
    assert probed is False
    from pycudnn import _bindings

    assert "cudnnBackendFinalize" in bound and "cudnnBackendCreateDescriptor" in bound
    # A plan needs a handful of the library's functions; none of the others is resolved.
    assert len(bound) < 20 < len(_bindings.FUNCTIONS), bound


def test_memory_hit_is_a_lookup(
    h100_props: pycudnn.DeviceProperties, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pycudnn.plan import PlanCache

    cache = PlanCache()
    g = _conv()
    plan = g.build(device_properties=h100_props, cache=cache)
    key = g.key()
    probes = _count_probes(monkeypatch)
    kinds = _count_descriptors(monkeypatch)
    for _ in range(3):
        assert g.build(device_properties=h100_props, cache=cache) is plan
    assert (probes, kinds) == ([], [])  # no driver probe, no cuDNN descriptor: a dict lookup
    assert cache.stats["memory_hits"] == 3
    assert g.key() is key  # the graph's key is computed once per graph object


def test_report_lists_every_filtered_config_though_the_build_stops_early(
    h100_props: pycudnn.DeviceProperties,
) -> None:
    every = _conv().engine_configs(device_properties=h100_props)
    first = every[0].engine_id
    # An engine with several configs, all after the first config (engine 10 on cuDNN 9.28; the
    # heuristics' order differs between versions).
    later = [e for e in dict.fromkeys(c.engine_id for c in every) if e != first]
    several = [e for e in later if sum(c.engine_id == e for c in every) > 1]
    if not several:
        pytest.skip("this cuDNN's heuristics list no engine with several configs after the first")
    engine = several[0]
    configs = [c for c in every if c.engine_id == engine]
    plan = _conv().build(device_properties=h100_props, cache=False, exclude_engines=[engine])
    assert plan.engine_id == first and plan.report is not None
    excluded = (f"engine {engine}", "engine excluded (exclude_engines)")
    assert plan.report.filtered == [excluded] * len(configs)


# -- cuDNN's log is read only to explain a failure ---------------------------------------------------
def _count_log_captures(monkeypatch: pytest.MonkeyPatch, props: Any) -> list[int]:
    """Counts the times planning registers pycudnn's cuDNN log callback (log.capture) from now
    on; ``props``' descriptor, whose making reads the log once, is made first."""
    from pycudnn import log

    if log.is_enabled() or log._env_mask():
        pytest.skip("cuDNN's log is already taken (enable_logging or CUDNN_LOG* variables)")
    assert props.descriptor is not None
    calls: list[int] = []
    real = log.capture

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(log, "capture", counting)
    return calls


def _finalize_for_real_and_fail(graph: pycudnn.Graph, props: Any) -> None:
    """A real failing finalize (deviceless plan finalizes of the configs the heuristics return do
    not fail): the ENGINE of a global index ``graph`` does not have."""
    from pycudnn.backend import BackendDescriptor

    engine = BackendDescriptor("ENGINE")
    engine.set("ENGINE_OPERATION_GRAPH", graph._descriptors_for(None)["graph"])
    engine.set("ENGINE_GLOBAL_INDEX", 1000, attr_type="INT64")
    engine.set("ENGINE_DEVICEPROP", props.descriptor)
    engine.finalize()  # raises: no engine 1000
    raise AssertionError("cuDNN finalized an engine the graph does not have")


def test_a_plan_found_reads_no_cudnn_log(h100_props: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """cuDNN formats a log line for each kernel it rejects while a callback takes its log (up to
    a sixth of a heuristics query); planning that finds its plan never registers one."""
    captures = _count_log_captures(monkeypatch, h100_props)
    plan = _conv("no_log").build(device_properties=h100_props, cache=False)
    result = _conv("no_log_heuristics").heuristics("a", device_properties=h100_props)
    assert result.configs and result.log == []
    plan.close()
    assert captures == []


def test_a_query_that_returns_nothing_is_asked_again_with_the_log_read(
    h100_props: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = pycudnn.Graph("nothing")
    x = g.tensor([4, 32, 16, 16], fmt="NCHW", dtype="float32", name="x")
    g.reduction(x, op="add", out_dims=[1, 32, 1, 1])  # no engine: measured on 9.19 and 9.28
    captures = _count_log_captures(monkeypatch, h100_props)
    result = g.heuristics("a", device_properties=h100_props)
    if result.configs:
        pytest.skip(f"cuDNN {pycudnn.version()} has an engine for this reduction")
    assert captures == [1]
    assert any("Reason:" in line or "Warning:" in line for line in result.log), result.log


def test_failed_finalizes_are_made_again_with_the_log_read_when_planning_fails(
    h100_props: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every config's finalize is replaced by a real failing one: planning fails, and the error
    carries cuDNN's log of those finalizes, read after the fact."""
    from pycudnn.plan import GraphNotSupportedError, building

    graph = _conv("explained")
    attempts: list[int] = []

    def failing_finalize(cfg: Any, target: Any, g: Any) -> Any:
        attempts.append(cfg.engine_id)
        _finalize_for_real_and_fail(graph, h100_props)

    monkeypatch.setattr(building, "_finalize_plan", failing_finalize)
    with pytest.raises(GraphNotSupportedError) as info:
        graph.build(heuristics=["a"], device_properties=h100_props, cache=False)
    report = info.value.report
    assert len(report.failed) == len(attempts) - min(len(report.failed), building._EXPLAINED)
    assert "global index 1000" in str(info.value), str(info.value)
    assert report._unexplained == []


def test_a_plan_found_after_failed_finalizes_keeps_nothing_to_explain(
    h100_props: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first config's finalize fails for real; the next one is finalized: the plan's report
    lists the failure and holds nothing to make again."""
    from pycudnn.plan import building

    graph = _conv("explained_then_found")
    real = building._finalize_plan
    calls: list[int] = []

    def first_fails(cfg: Any, target: Any, g: Any) -> Any:
        calls.append(cfg.engine_id)
        if len(calls) == 1:
            _finalize_for_real_and_fail(graph, h100_props)
        return real(cfg, target, g)

    monkeypatch.setattr(building, "_finalize_plan", first_fails)
    captures = _count_log_captures(monkeypatch, h100_props)
    with graph.build(heuristics=["a"], device_properties=h100_props, cache=False) as plan:
        assert plan.report is not None and len(plan.report.failed) == 1
        assert plan.report._unexplained == [] and plan.report.log == []
    assert len(calls) == 2 and captures == []
