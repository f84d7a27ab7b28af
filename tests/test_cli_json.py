"""The ``--json`` promise of both command lines (README): whatever happens, stdout is exactly one
JSON document and its ``exit_code`` is the exit code. Every subcommand, in a succeeding and a
failing form, with ``--json`` after and before the subcommand; usage errors and help too."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path

import pytest
from children import run_module

from _nvbind.cuda import driver_status

ROOT = Path(__file__).resolve().parent.parent
GPU = driver_status().usable

# (package, arguments, the exit code expected here): the code depends on the GPU where a command
# needs one. The verify runs without --list are filtered to one cheap case, as on a GPU they run.
LINES = [
    ("pycudnn", ["info", "--json"], 0),
    ("pycudnn", ["--json", "info"], 0),
    ("pycudnn", ["info", "--json", "--bogus"], 2),
    ("pycudnn", ["smoke", "--json"], 0),
    ("pycudnn", ["smoke", "--json", "--require-gpu"], 0 if GPU else 3),
    ("pycudnn", ["smoke", "--json", "--bogus"], 2),
    ("pycudnn", ["--json", "smoke", "--bogus"], 2),
    ("pycudnn", ["deviceprops", "--json"], 0 if GPU else 3),
    ("pycudnn", ["deviceprops", "--json", "--device", "zero"], 2),
    ("pycudnn", ["verify", "--list", "--json"], 0),
    ("pycudnn", ["verify", "--json", "--filter", "nomatch", "--list"], 2),
    ("pycudnn", ["verify", "--json", "--quick", "--filter", "matmul-fp16-fp32"], 0 if GPU else 3),
    ("pycudnn", ["verify", "--json", "--seed", "x"], 2),
    ("pycudnn", ["--json"], 2),  # no subcommand
    ("pycudnn", ["--json", "bogus"], 2),
    ("pycudnn", ["--json", "--help"], 0),
    ("pycudnn", ["verify", "--help", "--json"], 0),
    ("pycutensor", ["info", "--json"], 0),
    ("pycutensor", ["--json", "info"], 0),
    ("pycutensor", ["info", "--json", "--bogus"], 2),
    ("pycutensor", ["smoke", "--json"], 0),
    ("pycutensor", ["smoke", "--json", "--require-gpu"], 0 if GPU else 3),
    ("pycutensor", ["smoke", "--json", "--bogus"], 2),
    ("pycutensor", ["verify", "--list", "--json"], 0),
    ("pycutensor", ["verify", "--json", "--filter", "nomatch"], 2),
    ("pycutensor", ["verify", "--json", "--quick", "--filter", "gemm-float32"], 0 if GPU else 3),
    ("pycutensor", ["verify", "--json", "--seed", "x"], 2),
    ("pycutensor", ["--json"], 2),
    ("pycutensor", ["--json", "deviceprops"], 2),  # pycudnn's command only
    ("pycutensor", ["smoke", "--help", "--json"], 0),
]


def _one_document(stdout: str) -> dict[str, object]:
    doc = json.loads(stdout)  # refuses text around the document, or two of them
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize(("package", "argv", "expected"), LINES, ids=lambda v: str(v))
def test_json_is_one_document_with_the_exit_code(
    package: str, argv: list[str], expected: int, capsys: pytest.CaptureFixture[str]
) -> None:
    main = importlib.import_module(f"{package}.cli").main
    code = main(argv)
    out = capsys.readouterr()
    doc = _one_document(out.out)
    assert code == expected, out
    assert doc["exit_code"] == code
    if code == 2:  # a usage error says what was wrong
        assert doc["error"], doc


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
@pytest.mark.parametrize("command", ["info", "smoke"])
def test_json_without_the_library_is_one_document_with_exit_code_3(
    package: str, command: str, tmp_path: Path
) -> None:
    # A fresh interpreter: the library is loaded once per process.
    out = run_module(
        package,
        command,
        "--json",
        **{f"{package.upper()}_LIBRARY": str(tmp_path / "no-such-library.so")},
    )
    doc = _one_document(out.stdout)
    assert out.returncode == doc["exit_code"] == 3, out.stdout + out.stderr


def test_without_json_a_usage_error_prints_usage_once_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pycudnn.cli import main

    assert main(["smoke", "--bogus"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.count("usage:") == 1 and "unrecognized arguments: --bogus" in out.err


def test_help_shows_no_restructuredtext_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from pycudnn.cli import main as cudnn_main
    from pycutensor.cli import main as cutensor_main

    for main, argv in (
        (cudnn_main, ["--help"]),
        (cudnn_main, ["verify", "--help"]),
        (cudnn_main, ["deviceprops", "--help"]),
        (cutensor_main, ["--help"]),
        (cutensor_main, ["verify", "--help"]),
    ):
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert text.startswith("usage: ")
        assert "``" not in text and ":mod:" not in text and ":func:" not in text, text


def test_verify_list_filter_selects_and_a_filter_matching_nothing_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pycudnn.cli import main as cudnn_main
    from pycutensor.cli import main as cutensor_main

    for main in (cudnn_main, cutensor_main):
        assert main(["verify", "--list", "--filter", "fp32"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines and all("fp32" in line.split()[0] for line in lines)
        assert main(["verify", "--list", "--filter", "nomatch"]) == 2
        out = capsys.readouterr()
        assert out.out == "" and "no case name contains 'nomatch'" in out.err


def test_demo_script_reports_a_bad_argument_once_and_as_one_document() -> None:
    # Checked before the environment is set up, so this runs in a second without a .venv.
    script = str(ROOT / "scripts" / "demo.sh")
    text = subprocess.run(["bash", script, "--bogus"], capture_output=True, text=True, check=False)
    assert text.returncode == 2 and text.stdout == ""
    assert text.stderr.count("usage: scripts/demo.sh") == 1 and "--bogus" in text.stderr
    doc = subprocess.run(
        ["bash", script, "--json", "--bogus"], capture_output=True, text=True, check=False
    )
    assert doc.returncode == _one_document(doc.stdout)["exit_code"] == 2


@pytest.mark.parametrize(
    ("codes", "want"),
    [((1, 3), 1), ((3, 1), 1), ((1, 0), 1), ((0, 3), 3), ((0, 0), 0), ((139, 3), 139)],
)
def test_demo_script_exits_with_the_worst_code_of_the_two_smoke_commands(
    tmp_path: Path, codes: tuple[int, int], want: int
) -> None:
    """Without --json the script exited with the last failing command's code: a pycudnn failure
    (1) followed by a pycutensor that could not run (3) exited 3, "could not run here", where
    the header promises the worst of the two, a failure counting above could-not-run."""
    import hashlib

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"  # env.sh puts the environment's bin first on PATH
    python.write_text(
        "#!/bin/sh\n"
        f'case "$2" in pycudnn) exit {codes[0]};; pycutensor) exit {codes[1]};; esac\n'
        "exit 99\n"
    )
    python.chmod(0o755)
    stamp = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes()
        + (ROOT / "requirements" / "constraints-cu12.txt").read_bytes()
    ).hexdigest()
    (venv / ".installed-stamp").write_text(stamp + "\n")
    import os

    env = {**os.environ, "PYCUDNN_VENV": str(venv)}
    env.pop("PYCUDNN_MATRIX", None)
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == want, (codes, proc.stdout, proc.stderr)
