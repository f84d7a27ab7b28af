"""scripts/compare_planning.py runs and reports what it promises (never timed: a smoke run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "compare_planning.py"

pytestmark = pytest.mark.usefixtures("h100_props")  # skips where deviceless plans cannot be built


def test_two_checkouts_are_sampled_in_turn_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "samples.json"
    argv = [sys.executable, str(SCRIPT), "--before", str(ROOT), "--graphs", "layernorm_fwd"]
    argv += ["--what", "heuristics", "--samples", "3", "--json", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    by_side = result["samples"]["heuristics layernorm_fwd"]
    assert set(by_side) == {"before", "after"}  # no frontend asked for: none reported
    assert all(len(ms) == 3 and min(ms) > 0 for ms in by_side.values()), by_side
    engines = result["engines"]["heuristics layernorm_fwd"]
    assert engines["before"] == engines["after"] != "None", engines
    assert "| heuristics | layernorm_fwd |" in proc.stdout
    assert proc.stdout.rstrip().endswith("| same |"), proc.stdout


def test_an_unknown_graph_is_refused_by_name() -> None:
    argv = [sys.executable, str(SCRIPT), "--before", str(ROOT), "--graphs", "no_such_graph"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert "unknown graph" in proc.stderr


def test_without_before_this_checkout_alone_is_sampled(tmp_path: Path) -> None:
    out = tmp_path / "samples.json"
    argv = [sys.executable, str(SCRIPT), "--graphs", "layernorm_fwd", "--what", "heuristics"]
    argv += ["--samples", "2", "--json", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_side = json.loads(out.read_text())["samples"]["heuristics layernorm_fwd"]
    assert set(by_side) == {"pycudnn"} and len(by_side["pycudnn"]) == 2, by_side
    assert "| what | graph | pycudnn | engines |" in proc.stdout
