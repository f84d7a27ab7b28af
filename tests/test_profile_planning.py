"""scripts/profile_planning.py runs and splits a build into cuDNN's time and Python's (never timed:
the figures are checked for what they must be whatever the machine's speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "profile_planning.py"

pytestmark = pytest.mark.usefixtures("h100_props")  # skips where deviceless plans cannot be built


def test_a_short_run_accounts_for_every_build(tmp_path: Path) -> None:
    from pycudnn.deviceprops import DeviceProperties

    why_not = DeviceProperties.why_no_plans()
    if why_not is not None:
        pytest.skip(why_not)
    out = tmp_path / "profile.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--graphs",
            "layernorm_fwd",
            "--repeats",
            "2",
            "--cprofile",
            "5",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    entry = json.loads(out.read_text())["graphs"]["layernorm_fwd"]
    # cuDNN's time is measured inside each build, so it is a part of it; Python is the rest.
    assert entry["cudnn_ms"] > 0 and entry["python_ms"] >= 0
    calls = entry["cudnn_calls"]
    # A plan is at least one descriptor created, set, finalized and destroyed.
    for fn in (
        "cudnnBackendCreateDescriptor",
        "cudnnBackendSetAttribute",
        "cudnnBackendFinalize",
        "cudnnBackendDestroyDescriptor",
    ):
        assert calls[fn]["calls_per_build"] >= 1, (fn, calls)
    assert "inside_libcudnn" in entry["cprofile"]
    # Each phase ran in every build; its Python is a part of its time.
    phases = entry["phases_ms"]
    assert set(phases) == {"describe", "lowering", "heuristics", "plan"}, phases
    for phase in phases.values():
        assert 0 <= phase["python"] <= phase["total"], phases


def test_unknown_graphs_are_refused() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--graphs", "no_such_graph"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "unknown graph(s) no_such_graph" in proc.stderr
