"""The API reference builds from the docstrings with no warnings (scripts/build_docs.sh, Sphinx
with -W), in a child process so that Sphinx's imports stay out of this one."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_api_reference_builds_without_warnings(tmp_path: Path) -> None:
    if importlib.util.find_spec("sphinx") is None:
        pytest.skip("Sphinx is not installed: it comes with the dev extra (scripts/env.sh)")
    env = {
        **os.environ,
        "PYCUDNN_DOCS_OUT": str(tmp_path / "html"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # this interpreter's environment counts as active: the script does not set up .venv
        "VIRTUAL_ENV": sys.prefix,
    }
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_docs.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    page = (tmp_path / "html" / "pycudnn.html").read_text(encoding="utf-8")
    # The reference carries what the docstrings say, keywords included.
    assert "exclude_notes" in page and "cudnnBackendFinalize" in page
    assert (tmp_path / "html" / "pycutensor.html").exists()


def test_without_an_active_environment_the_script_sets_one_up(tmp_path: Path) -> None:
    # PYTHON=false: scripts/env.sh says where it creates the environment, then fails to (nothing
    # is installed); without it the script would run whatever python3 is on PATH.
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(PYCUDNN_VENV=str(tmp_path / "venv"), PYTHON="false", PATH="/usr/bin:/bin")
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_docs.sh")],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode != 0, out.stdout + out.stderr
    assert f"creating virtual environment in {tmp_path / 'venv'}" in out.stderr, out.stderr
