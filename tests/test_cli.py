"""The command line entry points (CPU tier: they must say plainly what needs a GPU)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from children import run_module

from _nvbind.cuda import driver_status

ROOT = Path(__file__).resolve().parent.parent


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
    assert strict.returncode == 3  # could not run here, not a failure
    assert "needed a GPU" in strict.stdout


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_a_missing_library_is_one_failure_and_its_dependents_skip(
    package: str, tmp_path: Path
) -> None:
    variable = f"{package.upper()}_LIBRARY"
    nowhere = str(tmp_path / "no-such-library.so")
    out = run_module(package, "smoke", **{variable: nowhere})
    assert out.returncode == 3, out.stdout + out.stderr  # could not run here, not wrong
    assert "Traceback" not in out.stdout + out.stderr
    assert out.stdout.count(nowhere) == 1  # the library check says it, once
    assert "1 failed" in out.stdout and "could not run here (exit code 3)" in out.stdout
    assert "needs what the 'library' check could not load" in out.stdout
    doc = json.loads(run_module(package, "smoke", "--json", **{variable: nowhere}).stdout)
    assert doc["exit_code"] == 3 and doc["summary"]["failed"] == 1
    failed = [c for c in doc["checks"] if c["status"] == "failed"]
    assert [c["name"] for c in failed] == ["library"] and failed[0]["data"]["cannot_run"]


def test_deviceprops_saves_on_a_gpu_and_fails_cleanly_without(tmp_path: Path) -> None:
    out = run_module("pycudnn", "deviceprops", "--save", str(tmp_path / "p.json"))
    assert "Traceback" not in out.stderr, out.stderr
    if driver_status().usable:
        from pycudnn.deviceprops import REQUIRED_KEYS

        assert out.returncode == 0, out.stdout + out.stderr
        saved = json.loads((tmp_path / "p.json").read_text())
        assert set(REQUIRED_KEYS) <= set(saved)
        return
    assert out.returncode == 3
    assert not (tmp_path / "p.json").exists()


# -- one JSON document, one device schema, exit codes, closed pipes ------------------------------

DEVICE_KEYS = {"ordinal", "name", "compute_capability", "sm", "total_memory"}


def _check_devices(doc: dict[str, object]) -> None:
    """The device block every command shares: a list (empty without a GPU) and the reason."""
    st = driver_status()
    devices = doc["devices"]
    assert isinstance(devices, list)
    assert len(devices) == st.device_count
    for d in devices:
        assert set(d) == DEVICE_KEYS
        assert d["sm"] == f"sm_{d['compute_capability'][0]}{d['compute_capability'][1]}"
    assert doc["devices_reason"] == st.reason
    assert bool(doc["devices_reason"]) == (not st.usable)


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_info_and_smoke_share_the_device_schema_and_smoke_has_a_summary(package: str) -> None:
    info = json.loads(run_module(package, "info", "--json").stdout)
    _check_devices(info)
    smoke = run_module(package, "smoke", "--json")
    report = json.loads(smoke.stdout)  # exactly one document: json.loads refuses extra data
    _check_devices(report)
    assert report["devices"] == info["devices"] and report["cuda_driver"] == info["cuda_driver"]
    checks = report["checks"]
    summary = report["summary"]
    for status in ("ok", "skipped", "failed"):
        assert summary[status] == sum(c["status"] == status for c in checks)
    assert summary["gpu_skipped"] == sum(
        c["needs_gpu"] and c["status"] == "skipped" for c in checks
    )
    for c in checks:
        assert ("reason" in c) == (c["status"] == "skipped")
        if c["status"] == "skipped":
            assert c["reason"]
    assert report["exit_code"] == smoke.returncode


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_info_names_the_wheel_the_library_came_from(package: str) -> None:
    from importlib import metadata

    lib = "cudnn" if package == "pycudnn" else "cutensor"
    report = json.loads(run_module(package, "info", "--json").stdout)
    wheel = report[f"{lib}_wheel"]
    if report[f"{lib}_found_via"] != "site-packages":
        pytest.skip(f"{lib} was found via {report[f'{lib}_found_via']}, not a wheel")
    name, version = wheel.split()
    assert metadata.version(name) == version
    assert name.startswith("nvidia-cudnn-" if lib == "cudnn" else "cutensor-")


def test_deviceprops_json_is_one_document_with_the_device_schema(tmp_path: Path) -> None:
    out = run_module("pycudnn", "deviceprops", "--save", str(tmp_path / "p.json"), "--json")
    doc = json.loads(out.stdout)
    _check_devices(doc)
    assert doc["exit_code"] == out.returncode
    if driver_status().usable:
        assert out.returncode == 0 and set(doc["device"]) == DEVICE_KEYS
    else:
        assert out.returncode == 3 and "needs a GPU" in doc["error"] and doc["saved"] is None


def test_a_bad_command_line_exits_2() -> None:
    out = run_module("pycudnn", "smoke", "--no-such-flag")
    assert out.returncode == 2 and "unrecognized arguments" in out.stderr


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_a_closed_pipe_ends_quietly(package: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", package, "info", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the first byte
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode == 141


def test_demo_json_merges_both_reports_into_one_document() -> None:
    from _nvbind.merge_smoke import merge, worst

    cudnn = run_module("pycudnn", "smoke", "--json")
    cutensor = run_module("pycutensor", "smoke", "--json")
    doc = merge(
        [
            ("pycudnn", cudnn.stdout, cudnn.returncode),
            ("pycutensor", cutensor.stdout, cutensor.returncode),
        ]
    )
    assert json.loads(json.dumps(doc)) == doc
    assert doc["pycudnn"]["title"] == "pycudnn smoke"
    assert doc["pycutensor"]["title"] == "pycutensor smoke"
    parts = (doc["pycudnn"]["summary"], doc["pycutensor"]["summary"])
    assert doc["summary"]["ok"] == parts[0]["ok"] + parts[1]["ok"]
    assert doc["exit_code"] == worst([cudnn.returncode, cutensor.returncode])
    broken = merge([("pycudnn", "Traceback ...", 0), ("pycutensor", cutensor.stdout, 0)])
    assert broken["exit_code"] == 1 and "not one JSON document" in broken["pycudnn"]["error"]


def test_worst_exit_code_ranks_failure_above_could_not_run() -> None:
    from _nvbind.merge_smoke import worst

    assert worst([0, 0]) == 0
    assert worst([0, 3]) == 3
    assert worst([3, 1]) == 1
    assert worst([0, 141]) == 141


def test_demo_script_json_is_one_document() -> None:
    script = ROOT / "scripts" / "demo.sh"
    import hashlib

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    venv = Path(env.get("PYCUDNN_VENV", ROOT / ".venv"))
    want = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes()
        + (ROOT / "requirements" / "constraints-cu12.txt").read_bytes()
    ).hexdigest()
    stamp = venv / ".installed-stamp"
    if not stamp.exists() or stamp.read_text().strip() != want:
        pytest.skip(f"scripts/demo.sh would (re)install {venv} first (minutes): run it by hand")
    out = subprocess.run(
        ["bash", str(script), "--json"], capture_output=True, text=True, env=env, timeout=600
    )
    doc = json.loads(out.stdout)
    assert set(doc) == {"exit_code", "summary", "pycudnn", "pycutensor"}
    assert doc["exit_code"] == out.returncode


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_info_reports_a_log_setting_the_library_would_fail_on(package: str, tmp_path: Path) -> None:
    """`info` is what a user runs to diagnose such a setting: it printed a traceback (the log
    check's OSError was not caught) and exited 1."""
    env = (
        {"CUDNN_LOGLEVEL_DBG": "3", "CUDNN_LOGDEST_DBG": str(tmp_path)}
        if package == "pycudnn"
        else {"CUTENSOR_LOG_LEVEL": "1", "CUTENSOR_LOG_FILE": str(tmp_path)}
    )
    out = run_module(package, "info", "--json", **env)
    assert out.returncode == 3 and "Traceback" not in out.stderr, out.stderr
    lib = "cudnn" if package == "pycudnn" else "cutensor"
    assert "is a directory" in json.loads(out.stdout)[f"{lib}_error"]


def test_a_command_started_with_stdout_closed_says_so() -> None:
    """`python -m pycudnn info >&-`: Python starts with sys.stdout None, and the command line
    raised AttributeError wrapping it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "pycudnn", "info"],
        preexec_fn=lambda: os.close(1),
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert out.returncode == 1 and out.stderr.strip() == "error: stdout is closed"
