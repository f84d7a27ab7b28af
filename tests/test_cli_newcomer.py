"""The command lines as a newcomer meets them: the wrong Python, --help and --version, a typo in
an option, a full disk or a closed pipe on stdout, the libraries' own logging.

Each case runs the real command (``python -m pycudnn`` / ``python -m pycutensor``) in a child
process, as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("pycudnn", "pycutensor")


def cli(
    package: str, *args: str, env: dict[str, str] | None = None, python: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(python or (sys.executable,)), "-m", package, *args], capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_a_python_without_the_dependencies_is_named_not_a_missing_library(
    package: str, json_mode: bool
) -> None:
    # -S: no site-packages, as python3 outside the checkout's .venv (numpy, cuda-pathfinder and
    # the wheels are not importable from it).
    proc = cli(package, *(["--json"] if json_mode else []), "info", python=(sys.executable, "-S"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    text = json.loads(proc.stdout)["error"] if json_mode else proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "cannot be imported by the Python running" in text and sys.executable in text, text
    assert "scripts/env.sh" in text and "is not installed" not in text, text


def test_a_missing_cuda_pathfinder_is_named_as_not_importable_from_this_python() -> None:
    # numpy importable, cuda.pathfinder not (a None entry in sys.modules makes its import fail):
    # the library cannot be located because of the Python, which the message says.
    code = (
        "import sys; sys.modules['cuda.pathfinder'] = None\n"
        "from pycudnn.cli import main\n"
        "sys.exit(main(['--json', 'info']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYCUDNN_LIBRARY": ""},
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    message = doc.get("cudnn_error") or doc.get("error")
    assert message, doc
    assert "cuda.pathfinder" in message and "cannot be imported by the Python running" in message
    assert sys.executable in message and "is not installed" not in message, message
