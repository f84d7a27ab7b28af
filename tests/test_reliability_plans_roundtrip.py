"""Every plan the library builds loads back (CPU tier, deviceless plans for the committed H100
properties): for every operation kind a Graph method builds (tests/plan_kinds.py), a plan is
saved, loaded for a fresh copy of its graph and without it, and served by a plan cache from disk.
Engine, knobs, graph key and tensor names survive."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import H100_PROPS_FILE
from plan_kinds import CATALOGUE, require_engine

from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph
from pycudnn.plan import Plan, PlanCache

pytestmark = pytest.mark.usefixtures("libcuda")


def _graph(name: str, build: Callable[[Graph], None]) -> Graph:
    g = Graph(name)
    build(g)
    return g


@functools.cache
def _built(name: str, props_file: str) -> tuple[str, dict[int, str], dict[str, int], int | None]:
    """The saved JSON of a plan of kind ``name`` (built once per test session), its graph's
    tensor names, and the plan's knobs and engine."""
    g = _graph(name, CATALOGUE[name])
    with g.build(device_properties=DeviceProperties.load(props_file), cache=False) as plan:
        names = {t.uid: t.name for t in g.tensors if not t.is_virtual}
        return plan.to_json(), names, dict(plan.knobs), plan.engine_id


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_a_saved_plan_loads_back_with_and_without_its_graph(
    name: str, h100_props: DeviceProperties, tmp_path: Path
) -> None:
    require_engine(name)
    text, names, knobs, engine_id = _built(name, str(H100_PROPS_FILE))
    path = tmp_path / "plan.json"
    path.write_text(text)
    saved = json.loads(text)
    with Plan.load(path, graph=_graph(name, CATALOGUE[name]), device_properties=h100_props) as p:
        again = json.loads(p.to_json())
        assert p.engine_id == engine_id
        # the built plan reports the knobs it chose; the loaded one every knob of the engine
        assert knobs.items() <= p.knobs.items()
        assert again["engine"]["engineId"] == saved["engine"]["engineId"]
        assert again["engine"]["knobChoices"] == saved["engine"]["knobChoices"]
        assert again["pycudnnGraphKey"] == saved["pycudnnGraphKey"]
        assert again["operationGraph"] == saved["operationGraph"]
    # Without the graph, the tensors keep the graph's names (they were '1', '2', '3').
    assert saved["pycudnnTensorNames"] == {str(uid): n for uid, n in names.items()}
    with Plan.load(path, device_properties=h100_props) as p:
        assert p.engine_id == engine_id
        assert p._slots and all(s.name == names[s.uid] for s in p._slots)
        for s in p._slots:
            assert p._slot_index(s.name) == p._slot_index(s.uid)
        assert json.loads(p.to_json())["pycudnnTensorNames"] == {
            str(s.uid): names[s.uid] for s in p._slots
        }


@pytest.mark.parametrize(
    "name", ["slice_matmul", "maxpool_backward", "conv_genstats", "avgpool", "sdpa", "batchnorm"]
)
def test_a_plan_cache_serves_its_own_files(
    name: str, h100_props: DeviceProperties, tmp_path: Path
) -> None:
    require_engine(name)
    # The kinds whose plans did not load back: each process rebuilt them and logged a warning.
    build = CATALOGUE[name]
    first = PlanCache(tmp_path)
    _graph(name, build).build(device_properties=h100_props, cache=first)
    assert first.stats["stores"] == 1
    second = PlanCache(tmp_path)
    _graph(name, build).build(device_properties=h100_props, cache=second)
    assert second.stats["disk_hits"] == 1, second.stats
    assert second.stats["disk_errors"] == second.stats["version_mismatches"] == 0
