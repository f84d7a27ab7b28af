"""Code run in a fresh interpreter with the repository importable: for tests that need a clean
process (what an import loads, a crash that must not take the test run with it, variables read
when a library loads)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _run(argv: list[str], timeout: float, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        timeout=timeout,
        check=False,
    )


def run_python(
    code: str, *args: str, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -c code *args`` with ``PYTHONPATH`` set to the repository and ``env`` added."""
    return _run(["-c", textwrap.dedent(code), *args], timeout, env)


def run_module(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m *args`` (a command line: ``run_module("pycudnn", "info")``) with
    ``PYTHONPATH`` set to the repository and ``env`` added."""
    return _run(["-m", *args], timeout, env)
