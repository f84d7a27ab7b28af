"""docs/environment.md names the loggers the code really uses (a user configures them by name)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_logger_the_environment_doc_names_is_one_the_code_uses() -> None:
    doc = (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")
    named = set(re.findall(r'getLogger\("([^"]+)"\)', doc))
    code = "\n".join(
        f.read_text(encoding="utf-8")
        for package in ("pycudnn", "pycutensor")
        for f in (ROOT / package).rglob("*.py")
    )
    used = set(re.findall(r'getLogger\("([^"]+)"\)', code))
    assert {"pycudnn.cudnn", "pycutensor.cutensor"} <= named
    assert named <= used, named - used
