"""scripts/gpu_verify.py: the one command of a GPU run. Here (usually without a GPU) it must say
which steps need a GPU, keep every log and exit 3; with a GPU only its cheap step is run here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
