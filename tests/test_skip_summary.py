"""The test run's skips: a few lines grouped by reason (tests/conftest.py), not one per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import skip_summary

from _nvbind.cuda import driver_status

REPO = Path(__file__).resolve().parent.parent


def test_skips_are_counted_by_reason_gpu_ones_together() -> None:
    reasons = [
        "needs a CUDA GPU: no CUDA-capable device is detected",
        "needs a CUDA GPU: no CUDA-capable device is detected",
        "needs a CUDA GPU: no CUDA-capable device is detected",
        "Sphinx is not installed",
        "needs cuDNN 9.21",
        "needs cuDNN 9.21",
    ]
    assert skip_summary(reasons) == [
        "3 GPU tests skipped: no GPU (no CUDA-capable device is detected)",
        "2 tests skipped: needs cuDNN 9.21",
        "1 test skipped: Sphinx is not installed",
    ]
    assert skip_summary([]) == []


def test_a_run_prints_the_summary_and_no_line_per_skipped_test() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_device_array.py"],
        capture_output=True, text=True, timeout=600, cwd=REPO, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "SKIPPED [" not in proc.stdout, proc.stdout[-3000:]
    if not driver_status().usable:  # the module's GPU tests skip here
        lines = [x for x in proc.stdout.splitlines() if "GPU tests skipped: no GPU (" in x]
        assert len(lines) == 1, proc.stdout[-3000:]
    # -rs still lists each skipped test
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/test_device_array.py"],
        capture_output=True, text=True, timeout=600, cwd=REPO, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    if not driver_status().usable:
        assert "SKIPPED [" in listed.stdout and "skipped, by reason" not in listed.stdout
