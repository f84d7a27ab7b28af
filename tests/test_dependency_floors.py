"""The floors entry of the version matrix pins every declared dependency at its declared floor, so
that a floor raised or lowered in pyproject.toml without the entry (or the other way round) fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ROOT / "requirements" / "constraints-cu12-floors.txt"

try:
    import tomllib
except ImportError:  # Python 3.10 (the floors entry itself): pytest brings tomli there
    tomllib = pytest.importorskip("tomli")
version = pytest.importorskip("packaging.version")
requirements = pytest.importorskip("packaging.requirements")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _declared() -> list[requirements.Requirement]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    return [
        requirements.Requirement(text)
        for text in (*meta["dependencies"], *extras["cu12"], *extras["test"])
    ]


def _pins() -> dict[str, str]:
    pins = {}
    for line in FLOORS.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, pinned = line.partition("==")
            pins[_name(name)] = pinned
    return pins


def test_every_declared_dependency_is_pinned_at_its_floor() -> None:
    pins = _pins()
    for req in _declared():
        name = _name(req.name)
        assert name in pins, f"{FLOORS.name} does not pin {req.name}"
        pinned = version.Version(pins[name])
        assert pinned in req.specifier, f"{req.name}=={pinned} is outside {req.specifier}"
        floors = [s.version for s in req.specifier if s.operator == ">="]
        if not floors:
            continue  # no floor declared (nvidia-cublas-cu12): any version the resolver picks
        floor = version.Version(floors[0]).release
        assert pinned.release[: len(floor)] == floor, (
            f"{req.name} is pinned at {pinned}, not at its floor {floors[0]}"
        )


def test_the_entry_names_the_oldest_python_claimed() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    oldest = meta["requires-python"].removeprefix(">=")
    assert f"# python: {oldest}\n" in FLOORS.read_text()
