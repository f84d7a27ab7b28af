"""The shared runtime ``_nvbind`` stands on its own: it imports neither package, pycutensor imports
nothing of pycudnn, and the names both packages share are one object."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imported_modules(package: str) -> dict[str, set[str]]:
    """Every module ``package``'s files import (module level, in functions, under TYPE_CHECKING),
    relative imports resolved, keyed by file."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    keep = len(parts) - node.level + (1 if is_package else 0)
                    base = ".".join(parts[:keep] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                names.add(base)
        out[str(rel)] = names
    return out


def _importing(package: str, prefix: str) -> list[tuple[str, str]]:
    return sorted(
        (where, name)
        for where, names in _imported_modules(package).items()
        for name in names
        if name == prefix or name.startswith(f"{prefix}.")
    )


@pytest.mark.parametrize("other", ["pycudnn", "pycutensor"])
def test_the_runtime_imports_neither_package(other: str) -> None:
    assert _importing("_nvbind", other) == []


def test_pycutensor_imports_nothing_of_pycudnn() -> None:
    assert _importing("pycutensor", "pycudnn") == []


def test_pycudnn_imports_nothing_of_pycutensor() -> None:
    assert _importing("pycudnn", "pycutensor") == []


def test_the_import_walk_sees_relative_and_deferred_imports() -> None:
    # The walk above must not miss the forms that matter: a deferred absolute import and a
    # relative import that climbs out of the package.
    tree = ast.parse("def f():\n    from pycudnn.layout import x\nfrom .. import layout\n")
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert len(found) == 2
    names = _imported_modules("pycutensor")
    assert "_nvbind.resource" in names["pycutensor/plan"]
    assert "pycutensor._lib" in names["pycutensor/plan"]  # `from ._lib import ...`


def test_using_pycutensor_loads_no_pycudnn_module() -> None:
    code = (
        "import sys, pkgutil, importlib, _nvbind, pycutensor\n"
        "for m in pkgutil.iter_modules(_nvbind.__path__):\n"
        "    importlib.import_module('_nvbind.' + m.name)\n"
        "for name in ('plan', 'checks', 'operations', 'tensor', 'verification', 'cli', 'smoke',\n"
        "             '_einsum', 'handle', 'errors', 'raw'):\n"
        "    importlib.import_module('pycutensor.' + name)\n"
        "pycutensor.DeviceArray\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pycudnn'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "name", ["ClosedError", "LibraryNotFoundError", "UnsupportedByLibraryError"]
)
def test_the_shared_errors_are_one_class(name: str) -> None:
    import _nvbind.ffi
    import _nvbind.resource
    import pycudnn
    import pycudnn.errors
    import pycutensor
    import pycutensor.errors

    home = getattr(_nvbind.resource, name, None) or getattr(_nvbind.ffi, name)
    assert getattr(pycudnn, name) is getattr(pycutensor, name) is home
    assert getattr(pycudnn.errors, name) is getattr(pycutensor.errors, name) is home


def test_verification_shares_one_tolerance_and_comparison() -> None:
    import _nvbind.comparison as shared
    import pycudnn.verification as cudnn_verification
    import pycudnn.verification.tolerance as cudnn_tolerance
    import pycutensor.verification as cutensor_verification

    assert cudnn_verification.Tolerance is cutensor_verification.Tolerance is shared.Tolerance
    assert cudnn_verification.compare is cutensor_verification.compare is shared.compare
    assert cudnn_tolerance.unit_roundoff is shared.unit_roundoff
    assert cudnn_tolerance.SAFETY == shared.SAFETY == 4.0


def test_format_strings_reach_pycudnn_layout_only_through_the_plug_in() -> None:
    import _nvbind.formats
    import pycudnn.layout

    assert _nvbind.formats.layout is pycudnn.layout
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _nvbind.formats.nothing  # noqa: B018


def test_the_wheel_ships_the_runtime_with_its_type_marker() -> None:
    # (tomllib is Python 3.11+; the two lines are read as text)
    config = (ROOT / "pyproject.toml").read_text()
    wheel = re.search(r"^packages = \[(.*)\]$", config, re.M)
    sdist = re.search(r"^include = \[(.*)\]$", config, re.M)
    assert wheel is not None and '"_nvbind"' in wheel.group(1)
    assert sdist is not None and '"_nvbind"' in sdist.group(1)
    assert (ROOT / "_nvbind" / "py.typed").is_file()
    assert "mypy _nvbind pycudnn pycutensor" in (ROOT / "scripts" / "test.sh").read_text()
    assert not (ROOT / "pycudnn" / "_shared").exists()
