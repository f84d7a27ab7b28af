"""The checked-in ``_bindings.py`` modules are exactly what the generator makes from the headers.

Regenerates both modules from the installed cuDNN and cuTENSOR header wheels into a temporary
directory and compares them byte for byte with the files in the repository. Skipped when libclang
or the headers are not installed; a different header version than the one the checked-in files
record is a failure (the bindings must be regenerated), not a skip.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATOR_PATH = ROOT / "scripts" / "generate_bindings.py"
SOURCE_LINE = re.compile(
    r"^# Source: (?P<library>\S+) (?P<version>\d+\.\d+\.\d+) headers .*\n"
    r"# parsed with libclang (?P<libclang>\d+\.\d+\.\d+) for ",
    re.MULTILINE,
)


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_bindings", GENERATOR_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    module = _load_generator()
    try:
        module.cindex().conf.lib  # noqa: B018 - loads the libclang shared library
    except module.GenerationError as exc:
        pytest.skip(f"libclang is not available: {exc}")
    except Exception as exc:  # clang.cindex raises LibclangError when the .so cannot be loaded
        pytest.skip(f"libclang cannot be loaded: {exc}")
    return module


@pytest.fixture(scope="module")
def regenerated(generator: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of the generated files, written by the generator's command line."""
    for libname in ("cudnn", "cutensor"):
        try:
            generator.find_header_dir(libname)
        except generator.GenerationError as exc:
            pytest.skip(f"the {libname} headers are not installed: {exc}")
    out_dir = tmp_path_factory.mktemp("bindings")
    assert generator.main(["--out-dir", str(out_dir), "--quiet"]) == 0
    return out_dir


def _recorded(text: str, what: str) -> re.Match[str]:
    match = SOURCE_LINE.search(text)
    assert match is not None, f"{what} has no '# Source: ... parsed with libclang ...' header"
    return match


@pytest.mark.parametrize(
    "relpath",
    [
        "pycudnn/_bindings.py",
        "pycutensor/_bindings.py",
        "pycutensor/_bindings_mp.py",
        "pycutensor/_bindings_mg.py",
        "pycudnn/raw.pyi",
        "pycutensor/raw.pyi",
    ],
)
def test_checked_in_bindings_match_the_installed_headers(
    generator: ModuleType, regenerated: Path, relpath: str
) -> None:
    checked_in_path = ROOT / relpath
    assert checked_in_path.exists(), f"{relpath} is missing; run scripts/generate_bindings.py"
    checked_in = checked_in_path.read_bytes()
    fresh = (regenerated / relpath).read_bytes()
    if checked_in == fresh:
        return

    old = _recorded(checked_in.decode(), f"checked-in {relpath}")
    new = _recorded(fresh.decode(), f"regenerated {relpath}")
    if old["version"] != new["version"]:
        pytest.fail(
            f"{relpath} was generated from {old['library']} {old['version']} headers, but "
            f"{new['library']} {new['version']} headers are installed. Regenerate with "
            "`python scripts/generate_bindings.py` and commit the result (or install the "
            f"{old['library']} {old['version']} wheel)."
        )
    if old["libclang"] != new["libclang"]:
        pytest.skip(
            f"{relpath} was generated with libclang {old['libclang']}, but libclang "
            f"{new['libclang']} is installed; install libclang=={old['libclang']} to run the "
            "drift check"
        )
    diff = difflib.unified_diff(
        checked_in.decode().splitlines(keepends=True),
        fresh.decode().splitlines(keepends=True),
        fromfile=f"{relpath} (checked in)",
        tofile=f"{relpath} (regenerated)",
    )
    excerpt = "".join(list(diff)[:80])
    pytest.fail(
        f"{relpath} differs from what scripts/generate_bindings.py produces from the same "
        f"headers; regenerate it (do not edit it by hand).\n{excerpt}"
    )


def test_check_mode_passes_on_a_fresh_tree(generator: ModuleType, regenerated: Path) -> None:
    assert generator.main(["--check", "--quiet", "--out-dir", str(regenerated)]) == 0


def test_check_mode_reports_drift(
    generator: ModuleType,
    regenerated: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stale = tmp_path / "pycutensor" / "_bindings.py"
    stale.parent.mkdir()
    stale.write_text((regenerated / "pycutensor" / "_bindings.py").read_text() + "EXTRA = 1\n")
    (tmp_path / "pycudnn").mkdir()
    (tmp_path / "pycudnn" / "_bindings.py").write_bytes(
        (regenerated / "pycudnn" / "_bindings.py").read_bytes()
    )
    assert generator.main(["--check", "--quiet", "--out-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "-EXTRA = 1" in out
    assert "pycudnn/_bindings.py" not in out


def test_generator_imports_without_libclang_use() -> None:
    """The module imports (for tests and tooling) without touching libclang or the headers."""
    module = _load_generator()
    assert callable(module.main)
    assert module.STUB_HEADER_DIR.joinpath("cuda_runtime_api.h").is_file()


def test_cutensor_enumerator_history_matches_the_pinned_headers(
    generator: ModuleType, regenerated: Path
) -> None:
    """``pycutensor/_enum_history.py`` is what ``--cutensor-history`` makes from the older
    headers pinned in ``requirements/cutensor-history.txt``; checked when their wheels are in the
    download cache (a first ``--cutensor-history`` run fills it), since fetching them here would
    download gigabytes."""
    cache = ROOT / generator.HISTORY_CACHE
    specs = [
        line.split("#", 1)[0].strip()
        for line in (ROOT / generator.HISTORY_FILE).read_text().splitlines()
        if line.split("#", 1)[0].strip()
    ]
    missing = [
        s
        for s in specs
        if not list(cache.glob(f"{s.split('==')[0].replace('-', '_')}-{s.split('==')[1]}-*.whl"))
    ]
    if missing:
        pytest.skip(f"the older cuTENSOR wheels are not in {cache} ({', '.join(missing)})")
    report = generator.Report()
    include = generator.find_header_dir("cutensor")
    fresh = generator.generate_cutensor_history(include, ROOT, report)
    assert fresh == (ROOT / generator.HISTORY_OUTPUT).read_text(encoding="utf-8")
