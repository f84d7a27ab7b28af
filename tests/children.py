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


def run_python(
    code: str, *args: str, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -c code *args`` with ``PYTHONPATH`` set to the repository and ``env`` added."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        timeout=timeout,
        check=False,
    )
