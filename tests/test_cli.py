"""The command line entry points (CPU tier: they must say plainly what needs a GPU)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pycudnn._shared.cuda import driver_status

ROOT = Path(__file__).resolve().parent.parent


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_info_json(package: str) -> None:
    out = run_module(package, "info", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    key = "cudnn_version" if package == "pycudnn" else "cutensor_version"
    assert report[key].split(".")[0] == ("9" if package == "pycudnn" else "2")
    assert "devices" in report and "cuda_driver" in report
    # The supported range, how the library was found, and what the loaded version lacks.
    lib = "cudnn" if package == "pycudnn" else "cutensor"
    floor = ".".join(map(str, importlib.import_module(f"{package}._lib").MINIMUM_VERSION[:2]))
    assert report[f"{lib}_supported"].startswith(f">= {floor}, <")
    assert report[f"{lib}_found_via"]
    lacks = report[f"{lib}_lacks"]
    assert isinstance(lacks, list) and all(": needs " in line for line in lacks)
    bindings = importlib.import_module(f"{package}._bindings")
    loaded = tuple(int(p) for p in report[key].split("."))
    if loaded[:2] >= bindings.HEADER_VERSION[:2]:
        assert lacks == []


def test_info_text_lists_what_the_loaded_version_lacks() -> None:
    out = run_module("pycudnn", "info")
    assert out.returncode == 0, out.stderr
    assert "cudnn_supported" in out.stdout and "cudnn_lacks" in out.stdout


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_smoke_reports_and_require_gpu_fails_without_gpu(package: str) -> None:
    out = run_module(package, "smoke", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["library"] == "ok"
    assert "failed" not in statuses.values(), report
    strict = run_module(package, "smoke", "--require-gpu")
    if driver_status().usable:
        # With a GPU every check runs, so the strict mode must pass (and skip nothing).
        assert strict.returncode == 0, strict.stdout + strict.stderr
        assert not any(c["needs_gpu"] and c["status"] == "skipped" for c in report["checks"])
        return
    assert any(c["needs_gpu"] and c["status"] == "skipped" for c in report["checks"])
    assert strict.returncode == 1
    assert "needed a GPU" in strict.stdout


def test_deviceprops_saves_on_a_gpu_and_fails_cleanly_without(tmp_path: Path) -> None:
    out = run_module("pycudnn", "deviceprops", "--save", str(tmp_path / "p.json"))
    assert "Traceback" not in out.stderr, out.stderr
    if driver_status().usable:
        from pycudnn.deviceprops import REQUIRED_KEYS

        assert out.returncode == 0, out.stdout + out.stderr
        saved = json.loads((tmp_path / "p.json").read_text())
        assert set(REQUIRED_KEYS) <= set(saved)
        return
    assert out.returncode != 0
    assert not (tmp_path / "p.json").exists()
