"""NVIDIA's logging variables and ``PYCUDNN_LIBRARY``, checked before the library loads.

cuDNN crashed (SIGSEGV) at its first log line when ``CUDNN_LOGDEST_DBG`` named a file it could not
create; cuTENSOR aborted (SIGABRT) when its log went to a closed pipe or a full disk; both blocked
forever at load on a FIFO. Each case runs in a child process (a crash or a hang there fails the
test instead of ending the run) that makes a real library call; the child must end normally with
an ``OSError`` naming the variable and the rule. ``PYCUDNN_LIBRARY`` naming one of cuDNN's
sublibraries is refused too (the CLIs keep ``--json`` stdout clean at the descriptor level).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from children import REPO, run_python

_CUDNN_CALL = """
import pycudnn
g = pycudnn.Graph("t")
a = g.tensor([1, 16, 16], dtype="float16", name="a")
b = g.tensor([1, 16, 16], dtype="float16", name="b")
g.matmul(a, b, name="mm")
try:
    g.build(device_properties=pycudnn.DeviceProperties.load(
        "tests/data/deviceprops/h100-sxm-80gb.json"), cache=False)
    print("BUILT")
except OSError as exc:
    print("REFUSED", type(exc).__name__, exc)
"""

_CUTENSOR_CALL = """
import pycutensor
try:
    print("LOADED", pycutensor.version())
except OSError as exc:
    import sys
    print("REFUSED", type(exc).__name__, exc, file=sys.stderr)
"""


def _cudnn_child(**env: str) -> subprocess.CompletedProcess[str]:
    return run_python(_CUDNN_CALL, timeout=120, **env)


@pytest.fixture
def fifo(tmp_path: Path) -> str:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize("switch", [("CUDNN_LOGLEVEL_DBG", "2"), ("CUDNN_LOGINFO_DBG", "1")])
@pytest.mark.parametrize(
    ("dest", "expect"),
    [
        ("{tmp}/missing/dir/log.txt", ("FileNotFoundError", "does not exist")),
        ("{tmp}", ("IsADirectoryError", "is a directory")),
        ("{fifo}", ("OSError", "FIFO")),
        ("/dev/full", ("OSError", "/dev/full")),
        (
            "{tmp}/file/log.txt",
            ("NotADirectoryError|FileNotFoundError", "cannot be looked up|does not exist"),
        ),
    ],
)
def test_cudnn_log_destination_that_cannot_take_the_log_is_refused_in_a_child(
    tmp_path: Path, fifo: str, switch: tuple[str, str], dest: str, expect: tuple[str, str]
) -> None:
    kind, rule = expect
    (tmp_path / "file").write_text("")
    value = dest.format(tmp=tmp_path, fifo=fifo)
    r = _cudnn_child(**{switch[0]: switch[1], "CUDNN_LOGDEST_DBG": value})
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stderr[-2000:]}"
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("REFUSED"), line
    assert any(k in line for k in kind.split("|")), line
    assert "CUDNN_LOGDEST_DBG" in line and any(w in line for w in rule.split("|")), line


def test_cudnn_log_to_a_writable_file_still_works(tmp_path: Path, h100_props: object) -> None:
    log = tmp_path / "cudnn.log"
    r = _cudnn_child(CUDNN_LOGLEVEL_DBG="3", CUDNN_LOGDEST_DBG=str(log))
    assert r.returncode == 0 and r.stdout.strip().endswith("BUILT"), r.stderr[-2000:]
    assert log.is_file()  # created by cuDNN (the directory is fresh): the variable still applies
    # and it holds the planning's own entries: pycudnn's callback, registered while it plans,
    # used to take them, and its release left cuDNN's logging off (the file stayed empty)
    text = log.read_text(errors="replace")
    assert "function cudnnBackendFinalize() called" in text, text[:500]
    assert "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR" in text


@pytest.mark.parametrize(
    ("value", "kind", "rule"),
    [
        ("{tmp}/missing/dir/log.txt", "FileNotFoundError", "does not exist"),
        ("{tmp}", "IsADirectoryError", "is a directory"),
        ("{fifo}", "OSError", "FIFO"),
        ("/dev/full", "OSError", "/dev/full"),
    ],
)
def test_cutensor_log_file_that_cannot_take_the_log_is_refused_in_a_child(
    tmp_path: Path, fifo: str, value: str, kind: str, rule: str
) -> None:
    r = run_python(
        _CUTENSOR_CALL,
        timeout=120,
        CUTENSOR_LOG_LEVEL="5",
        CUTENSOR_LOG_FILE=value.format(tmp=tmp_path, fifo=fifo),
    )
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stderr[-2000:]}"
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"REFUSED {kind}") and "CUTENSOR_LOG_FILE" in line and rule in line, line


def _child_with_stdout(code: str, stdout: int, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )


@pytest.mark.parametrize("var", ["CUTENSOR_LOG_LEVEL", "CUTENSOR_LOG_MASK"])
def test_cutensor_log_to_a_closed_pipe_is_refused_not_aborted(var: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone, as with `python ... | head -c 10` once head exits
    try:
        r = _child_with_stdout(_CUTENSOR_CALL, write_end, **{var: "5"})
    finally:
        os.close(write_end)
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stderr[-2000:]}"
    assert "REFUSED BrokenPipeError" in r.stderr and "reader has gone" in r.stderr, r.stderr


def test_cutensor_log_to_a_full_stdout_is_refused_not_aborted() -> None:
    with open("/dev/full", "w") as full:
        r = _child_with_stdout(_CUTENSOR_CALL, full.fileno(), CUTENSOR_LOG_LEVEL="1")
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stderr[-2000:]}"
    assert "REFUSED OSError" in r.stderr and "/dev/full" in r.stderr, r.stderr


def test_cutensor_smoke_into_a_closed_pipe_exits_as_a_closed_pipe_does() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "pycutensor", "smoke"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
            env={**os.environ, "PYTHONPATH": str(REPO), "CUTENSOR_LOG_LEVEL": "5"},
        )
    finally:
        os.close(write_end)
    assert r.returncode == 141, (r.returncode, r.stderr[-2000:])  # 128 + SIGPIPE, not -6


def _sublibraries() -> list[str]:
    from pycudnn._lib import LIB

    directory = Path(LIB.path).parent
    return sorted(p.name for p in directory.glob("libcudnn_*.so.*"))[:4]


def test_pycudnn_library_naming_a_sublibrary_is_refused() -> None:
    from pycudnn._lib import LIB

    names = _sublibraries()
    assert names, "no cuDNN sublibraries beside libcudnn.so.9"
    for name in names:
        r = run_python(
            """
            import pycudnn
            try:
                print("LOADED", pycudnn.version())
            except ImportError as exc:
                print("REFUSED", type(exc).__name__, exc)
            """,
            timeout=60,
            PYCUDNN_LIBRARY=str(Path(LIB.path).parent / name),
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.startswith("REFUSED LibraryNotFoundError"), r.stdout
        assert "sublibraries" in r.stdout and "libcudnn.so.9" in r.stdout, r.stdout


# The libraries parse their level and mask variables themselves: a negative mask is every bit
# (CUTENSOR_LOG_MASK=-1 aborted the process on a closed stdout) and CUDNN_LOGINFO_DBG=-1 opened its
# destination (a FIFO hung the process): anything but an empty value or 0 counts as on.
@pytest.mark.parametrize("value", ["-1", "7x", " 1"])
def test_cutensor_mask_values_python_would_not_read_as_on_are_checked(value: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = _child_with_stdout(_CUTENSOR_CALL, write_end, CUTENSOR_LOG_MASK=value)
    finally:
        os.close(write_end)
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stderr[-2000:]}"
    assert "REFUSED BrokenPipeError" in r.stderr, r.stderr


@pytest.mark.parametrize("value", ["-1", "x"])
def test_cudnn_level_values_python_would_not_read_as_on_are_checked(fifo: str, value: str) -> None:
    r = _cudnn_child(CUDNN_LOGINFO_DBG=value, CUDNN_LOGDEST_DBG=fifo)
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stderr[-2000:]}"
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("REFUSED") and "FIFO" in line, line


def test_a_zero_or_empty_level_leaves_the_destination_unchecked(
    fifo: str, h100_props: object
) -> None:
    r = _cudnn_child(CUDNN_LOGINFO_DBG="0", CUDNN_LOGLEVEL_DBG="", CUDNN_LOGDEST_DBG=fifo)
    assert r.returncode == 0 and r.stdout.strip().endswith("BUILT"), r.stderr[-2000:]
