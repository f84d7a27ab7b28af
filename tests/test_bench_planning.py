"""scripts/bench_planning.py runs and writes what it promises (never timed: a smoke run in CI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "bench_planning.py"

pytestmark = pytest.mark.usefixtures("h100_props")  # skips where deviceless plans cannot be built


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from pycudnn.deviceprops import DeviceProperties

    why_not = DeviceProperties.why_no_plans()  # before the run: a module fixture runs first
    if why_not is not None:
        pytest.skip(why_not)
    out = tmp_path_factory.mktemp("bench")
    # A frontend interpreter that cannot import cudnn: the run must report it absent, not fail.
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--out",
            str(out),
            "--frontend-python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((out / "bench_planning.json").read_text())


def test_quick_run_writes_valid_json(quick_run: dict) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    import bench_planning

    assert set(quick_run["pycudnn"]) == set(bench_planning.QUICK_GRAPHS)
    for name, entry in quick_run["pycudnn"].items():
        assert isinstance(entry["engine"], int), (name, entry)
        assert entry["build_ms"] > 0 and entry["heuristics_ms"] > 0
        assert entry["heuristics_a_configs"], name
    assert quick_run["machine"]["cudnn"].startswith("9.")
    assert quick_run["cache_memory"]["stats"]["memory_hits"] > 0
    disk = quick_run["cold"]["from_disk"]
    assert disk["runs"] == 1 and disk["disk_hits"] == 2, disk  # the first hit, and a second
    assert 0 < disk["second_disk_hit_ms"] < disk["first_plan_ms"], disk
    assert "absent" in quick_run["frontend"] or "graphs" in quick_run["frontend"]


def test_docs_section_is_replaced_not_repeated(quick_run: dict, tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    import bench_planning

    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nintro\n\n## Later section\n\nkept\n")
    bench_planning.write_docs(quick_run, doc)
    bench_planning.write_docs(quick_run, doc)
    text = doc.read_text()
    assert text.count(bench_planning.SECTION) == 1
    assert "## Later section\n\nkept" in text and text.startswith("# Performance\n\nintro")
    assert "| layernorm_fwd |" in text


def test_rounds_are_pooled_into_one_median() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    import bench_planning

    def entry(build: list[float], heur: list[float]) -> dict:
        return {"engine": 7, "build_samples_ms": build, "heuristics_samples_ms": heur}

    rounds = [
        {"g": entry([1.0, 2.0], [10.0, 11.0]), "bad": entry([1.0], [1.0])},
        {"g": entry([3.0, 9.0], [12.0, 30.0]), "bad": {"error": "RuntimeError: no"}},
    ]
    pooled = bench_planning._pooled(rounds)
    assert pooled["g"] == {
        "engine": 7, "build_ms": 2.5, "build_samples": 4, "heuristics_ms": 11.5,
        "heuristics_samples": 4,
    }  # fmt: skip
    assert pooled["bad"] == {"error": "RuntimeError: no"}  # a round that failed is reported
