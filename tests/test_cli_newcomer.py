"""The command lines as a newcomer meets them: the wrong Python, --help and --version, a typo in
an option, a full disk or a closed pipe on stdout, the libraries' own logging.

Each case runs the real command (``python -m pycudnn`` / ``python -m pycutensor``) in a child
process, as a user would.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def in_process(package: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``main(args)`` of ``package``'s command line in this process (what parsing alone shows)."""
    main = importlib.import_module(f"{package}.cli").main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


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


def _info_without_cuda_pathfinder(package: str) -> dict[str, object]:
    # numpy importable, cuda.pathfinder not (a None entry in sys.modules makes its import fail)
    code = (
        "import sys; sys.modules['cuda.pathfinder'] = None\n"
        f"from {package}.cli import main\n"
        "sys.exit(main(['--json', 'info']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYCUDNN_LIBRARY": "", "PYCUTENSOR_LIBRARY": ""},
    )  # fmt: skip
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def _says_pathfinder_is_not_importable(message: object) -> None:
    assert isinstance(message, str), message
    assert "cuda.pathfinder" in message and "cannot be imported by the Python running" in message
    assert sys.executable in message and "is not installed" not in message, message


def test_a_missing_cuda_pathfinder_is_named_as_not_importable_from_this_python() -> None:
    # cuTENSOR is found through cuda.pathfinder: it cannot be located because of the Python,
    # which the message says.
    doc = _info_without_cuda_pathfinder("pycutensor")
    _says_pathfinder_is_not_importable(doc.get("cutensor_error") or doc.get("error"))


def test_cudnn_in_its_wheel_needs_cuda_pathfinder_only_for_what_it_cannot_reach() -> None:
    # cuDNN in its wheel directory loads without cuda.pathfinder where its own RUNPATH reaches
    # cuBLASLt; where it does not (the CUDA 13 wheel of cuDNN 9.12), the message names the
    # dependency and the Python that cannot import cuda.pathfinder, instead of a bare ImportError.
    doc = _info_without_cuda_pathfinder("pycudnn")
    message = doc.get("cudnn_error") or doc.get("error")
    if message is None:
        assert doc.get("cudnn_version"), doc
        assert doc.get("cudnn_found_via") == "site-packages", doc
    else:
        _says_pathfinder_is_not_importable(message)
        assert "needs cublasLt, which is not on its own search path" in str(message), message


def test_demo_help_under_json_is_one_json_document_in_either_order() -> None:
    for args in (["--json", "--help"], ["--help", "--json"], ["-h", "--json"]):
        proc = subprocess.run(
            ["bash", str(REPO / "scripts" / "demo.sh"), *args], capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        doc = json.loads(proc.stdout)
        assert doc["exit_code"] == 0, (args, doc)
        assert doc["usage"].startswith("usage: scripts/demo.sh"), (args, doc)
        assert "--require-gpu" in doc["help"], (args, doc)
    text = subprocess.run(
        ["bash", str(REPO / "scripts" / "demo.sh"), "--help"], capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert text.returncode == 0 and text.stdout.startswith("usage: scripts/demo.sh"), text


def _source_version() -> str:
    """The one version: pyproject.toml takes it from _nvbind/_version.py (checked here; see
    tests/test_version_single_source.py for the rest)."""
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M), "the version is not dynamic"
    assert '[tool.hatch.version]\npath = "_nvbind/_version.py"' in pyproject
    assert not re.search(r"^version = ", pyproject, re.M), "a second version in pyproject.toml"
    init = (REPO / "_nvbind" / "_version.py").read_text(encoding="utf-8")
    found = re.findall(r'^__version__ = "([^"]+)"$', init, re.M)
    assert len(found) == 1, found
    assert "__version__ = " not in (REPO / "pycutensor" / "__init__.py").read_text()
    return found[0]


@pytest.mark.parametrize("package", PACKAGES)
def test_version_comes_from_the_package_as_text_or_json(package: str) -> None:
    version = _source_version()
    text = in_process(package, "--version")
    assert (text.returncode, text.stdout, text.stderr) == (0, f"{package} {version}\n", "")
    doc = in_process(package, "--json", "--version")
    assert doc.returncode == 0, doc.stderr
    assert json.loads(doc.stdout) == {"command": None, "exit_code": 0, "version": version}


@pytest.mark.parametrize("package", PACKAGES)
def test_a_subcommands_error_prints_the_subcommands_usage(package: str) -> None:
    proc = in_process(package, "info", "--bogus")
    assert proc.returncode == 2
    usage, error = proc.stderr.splitlines()[:2]
    assert usage == f"usage: python -m {package} info [-h] [--json]", proc.stderr
    assert error == f"python -m {package} info: error: unrecognized arguments: --bogus"
    doc = json.loads(in_process(package, "--json", "info", "--bogus").stdout)
    assert doc["usage"] == f"usage: python -m {package} info [-h] [--json]", doc
    assert doc["exit_code"] == 2 and "--bogus" in doc["error"], doc


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize(
    "args",
    [["info", "--jso"], ["--jso", "info"], ["smoke", "--require"], ["--vers"]],
    ids=["jso-after", "jso-before", "require", "vers"],
)
def test_abbreviated_options_are_refused(package: str, args: list[str]) -> None:
    proc = in_process(package, *args)
    assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
    abbreviated = next(a for a in args if a.startswith("--"))
    # refused for what it is, or (alone, without a subcommand) for the missing subcommand
    assert f"unrecognized arguments: {abbreviated}" in proc.stderr or (
        args == [abbreviated] and "arguments are required: command" in proc.stderr
    ), proc.stderr
    assert proc.stdout == "", proc.stdout  # nothing ran


FULL_DISK_ARGS = [["info"], ["--json", "info"], ["info", "--help"], ["--json", "--version"]]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("args", FULL_DISK_ARGS, ids=" ".join)
def test_a_full_disk_on_stdout_is_one_error_line(package: str, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", package, *args], stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "error: cannot write to stdout: No space left on device\n", proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_demo_json_merge_on_a_full_disk_is_one_error_line(tmp_path: Path) -> None:
    # scripts/demo.sh --json prints its document through merge_smoke.
    files = []
    for package in PACKAGES:
        path = tmp_path / f"{package}.json"
        path.write_text(json.dumps({"command": "smoke", "exit_code": 0, "summary": {}}))
        files += [str(path), "0"]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "_nvbind.merge_smoke", *files], stdout=full,
            stderr=subprocess.PIPE, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "error: cannot write to stdout: No space left on device\n", proc.stderr


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("args", [["info"], ["--json", "info"], ["verify", "--list"]], ids=" ".join)
def test_a_closed_pipe_on_stdout_ends_quietly(package: str, args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    try:
        proc = subprocess.run(
            [sys.executable, "-m", package, *args], stdout=write, stderr=subprocess.PIPE,
            text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (141, ""), proc.stderr


@pytest.mark.parametrize(
    ("package", "env", "marker"),
    [
        ("pycudnn", {"CUDNN_LOGLEVEL_DBG": "3", "CUDNN_LOGDEST_DBG": "stdout"}, "CuDNN"),
        ("pycutensor", {"CUTENSOR_LOG_LEVEL": "5"}, "[cuTENSOR]"),
    ],
)
def test_with_json_the_libraries_own_log_goes_to_stderr(
    package: str, env: dict[str, str], marker: str
) -> None:
    # Both libraries write their log to descriptor 1 here (cuDNN as told, cuTENSOR without
    # CUTENSOR_LOG_FILE): stdout must still be the one JSON document.
    env = {**env, "CUTENSOR_LOG_FILE": ""} if package == "pycutensor" else env
    env.pop("CUTENSOR_LOG_FILE", None)
    proc = cli(package, "--json", "info", env=env)
    doc = json.loads(proc.stdout)
    assert doc["command"] == "info", doc
    assert marker in proc.stderr, proc.stderr[-2000:]
    # Without --json the log stays where the library was told to write it.
    plain = cli(package, "info", env=env)
    assert marker in plain.stdout, plain.stdout[-2000:]


def _fuzz_cli() -> Any:
    sys.path.insert(0, str(REPO / "scripts"))
    import reliability_fuzz_cli

    return reliability_fuzz_cli


def test_the_cli_fuzz_target_tells_a_broken_promise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fz = _fuzz_cli()
    with pytest.raises(fz.ContractBroken, match="abbreviated option was accepted"):
        fz.check(["info", "--jso"], 0, "", "")
    with pytest.raises(fz.ContractBroken, match="no single JSON document"):
        fz.check(["--json", "info"], 0, '{"exit_code": 0}\nI! CuDNN log line', "")
    with pytest.raises(fz.ContractBroken, match="exit_code is not the exit code"):
        fz.check(["--json", "info"], 3, '{"exit_code": 0}', "")
    fz.check(["--json", "info", "--jso"], 2, '{"exit_code": 2}', "")  # refused: kept
    # With argparse's abbreviations back on, the target finds the broken promise.
    from _nvbind.report import CliParser

    init = CliParser.__init__

    def abbreviating(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **{**kwargs, "allow_abbrev": True})

    monkeypatch.setattr(CliParser, "__init__", abbreviating)
    ctx = type("Ctx", (), {"tmp": tmp_path})()
    found = []
    for n in range(80):
        try:
            fz.cli_argv(random.Random(f"abbrev/{n}"), ctx)
        except fz.ContractBroken as exc:
            found.append(str(exc))
    assert any("abbreviated option was accepted" in f for f in found), found[:3]
