"""The version is written once, in _nvbind/_version.py, and everything else reads it there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import pycudnn
import pycutensor

ROOT = Path(__file__).resolve().parents[1]


def _written_version() -> str:
    # Read the file as text, not by import, so the test does not trust the module it checks.
    tree = ast.parse((ROOT / "_nvbind" / "_version.py").read_text())
    values = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
    ]
    assert len(values) == 1, "_nvbind/_version.py must assign __version__ once, to a literal"
    return str(values[0])


def test_both_packages_report_the_one_version() -> None:
    version = _written_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", version), version
    assert pycudnn.__version__ == version
    assert pycutensor.__version__ == version


def test_the_metadata_reads_the_same_file() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the floors entry runs 3.10
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in meta["project"], "the version must not be typed in pyproject.toml"
    assert "version" in meta["project"]["dynamic"]
    assert meta["tool"]["hatch"]["version"]["path"] == "_nvbind/_version.py"


def test_no_other_file_types_the_version() -> None:
    version = _written_version()
    typed = [
        str(path.relative_to(ROOT))
        for package in ("_nvbind", "pycudnn", "pycutensor")
        for path in (ROOT / package).rglob("*.py")
        if path.name != "_version.py" and f'"{version}"' in path.read_text()
    ]
    assert typed == []
