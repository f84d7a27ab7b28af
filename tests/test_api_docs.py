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
