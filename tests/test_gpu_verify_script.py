"""scripts/gpu_verify.py: the one command of a GPU run. Here (usually without a GPU) it must say
which steps need a GPU, keep every log and exit 3; with a GPU only its cheap step is run here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from _nvbind.cuda import driver_status

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu_verify.py"


def test_gpu_verify_records_each_step_and_why_it_did_not_run(tmp_path: Path) -> None:
    st = driver_status()
    only = "info" if st.usable else "info,gpu-tier,memcheck"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--only", only, "--budget", "120"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    summary = json.loads((tmp_path / "summary.json").read_text())
    by_step = {r["step"]: r for r in summary["steps"]}
    assert by_step["info"]["status"] == "passed", proc.stdout + proc.stderr
    info = json.loads((tmp_path / "info-0.log").read_text().split("\n", 1)[1])
    assert info["cudnn_version"]  # the log holds the command's own output
    table = (tmp_path / "summary.md").read_text()
    assert "| info | passed |" in table
    if st.usable:
        assert proc.returncode == 0
        return
    assert proc.returncode == 3, proc.stdout + proc.stderr
    for step in ("gpu-tier", "memcheck"):
        assert by_step[step]["status"] == "skipped"
        assert by_step[step]["reason"] == f"needs a GPU: {st.reason}"
    assert summary["gpu"].startswith("no GPU usable")


def test_unknown_steps_are_refused_naming_the_steps() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--only", "gpu-teir"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "unknown step(s) ['gpu-teir']" in proc.stderr and "'gpu-tier'" in proc.stderr


def test_a_run_that_would_check_nothing_or_write_nowhere_is_refused(tmp_path: Path) -> None:
    """`--only info --skip info` ran no step and exited 0; `--budget nan` turned the budget off;
    an --out that is a file was a traceback."""
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for args, said in (
        (["--only", "info", "--skip", "info"], "leave no step to run"),
        (["--budget", "nan"], "--budget must be a positive number"),
        (["--budget", "-5"], "--budget must be a positive number"),
        (["--out", str(a_file)], "is not a directory"),
    ):
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), *args],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 2 and said in proc.stderr, (args, proc.stderr)


def _script_module(name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = importlib.util.spec_from_file_location(f"_script_{name}", SCRIPT.parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_bench_step_gives_bench_cutensor_files_not_the_shared_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench step passed its directory as bench_cutensor.py's --out, which names the JSON
    file: after the whole suite had run on the GPU, writing the report raised IsADirectoryError
    (bench_cudnn.py had made the directory), and its plot went to the checkout's root."""
    monkeypatch.setenv("CUPY_ACCELERATORS", "cutensor")  # the script sets it when unset
    gpu_verify = _script_module("gpu_verify", monkeypatch)
    bench = next(s for s in gpu_verify.steps(tmp_path) if s.name == "bench")
    argv = next(c for c in bench.commands if c[1].endswith("bench_cutensor.py"))
    (tmp_path / "bench").mkdir()  # as bench_cudnn.py, run first, leaves it
    module = _script_module("bench_cutensor", monkeypatch)
    monkeypatch.setattr(module, "driver_status", lambda: SimpleNamespace(usable=True, reason=""))
    monkeypatch.setattr(module, "_optional", lambda name: None)
    monkeypatch.setattr(module, "suite", lambda quick: [])
    monkeypatch.setattr(module, "overhead", lambda calls: {})
    monkeypatch.setattr(module, "machine", lambda: {"gpu": ["stand-in"]})
    plots: list[Path] = []
    monkeypatch.setattr(module, "plot", lambda results, path: plots.append(path) or False)
    assert module.main(argv[2:]) == 0
    written = [p for p in (tmp_path / "bench").iterdir() if p.suffix == ".json"]
    assert len(written) == 1 and json.loads(written[0].read_text())["machine"]["gpu"]
    assert plots and plots[0].parent == tmp_path / "bench", plots


def test_bench_first_plan_refuses_a_count_of_no_runs() -> None:
    """`--repeats 0` (or negative) built the cached plan, ran no child and ended in a traceback
    (statistics.median of nothing), exit status 1."""
    for value in ("0", "-3"):
        proc = subprocess.run(
            [sys.executable, str(SCRIPT.parent / "bench_first_plan.py"), "--repeats", value],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and "--repeats" in proc.stderr, proc.stderr


@pytest.mark.parametrize("option", ["--repeat", "--calls"])
def test_bench_cutensor_refuses_a_count_of_no_calls(
    option: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a GPU `--repeat -5` timed no call and divided by -5 (negative seconds in the report),
    `--repeat 0` divided by zero (each case reported as an error, exit 0) and `--calls 0` ended in
    a ZeroDivisionError traceback after the suite; without a GPU the count was never looked at."""
    monkeypatch.setenv("CUPY_ACCELERATORS", "cutensor")
    module = _script_module("bench_cutensor", monkeypatch)
    for value in ("0", "-5"):
        assert module.main([option, value]) == 2
        assert f"{option} must be" in capsys.readouterr().err


def test_the_summary_names_the_library_versions_it_was_run_with(tmp_path: Path) -> None:
    """summary.json promised "machine, versions" but held only Python's version: the table for
    docs/gpu-verification.md named no cuDNN or cuTENSOR, so its results had no versions."""
    import pycudnn
    import pycutensor

    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--only", "info", "--budget", "120"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    summary = json.loads((tmp_path / "summary.json").read_text())
    cudnn = ".".join(map(str, pycudnn.version_tuple()))
    cutensor = ".".join(map(str, pycutensor.version_tuple()))
    assert summary.get("cudnn") == cudnn and summary.get("cutensor") == cutensor, proc.stdout
    first = (tmp_path / "summary.md").read_text().splitlines()[0]
    assert f"cuDNN {cudnn}" in first and f"cuTENSOR {cutensor}" in first, first
