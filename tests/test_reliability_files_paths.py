"""Every path the library reads or writes refuses special files at once, naming the path and the
rule: a FIFO (which blocked ``open`` forever), ``/dev/zero`` (read until memory ran out), a
directory, a socket, a loop of links, a file over the size limit. Writes are atomic.

Each call runs under a time limit in a thread of its own, so a regression (a read that blocks on
a FIFO again) fails its test instead of hanging the session.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from _nvbind import files
from _nvbind.merge_smoke import main as merge_smoke_main
from pycudnn import known_bad
from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph
from pycudnn.plan import Plan, PlanCache
from pycudnn.verification import write_entries

# The plan-cache and plan-file cases plan for the committed H100 properties (cuDNN 9.10+ without
# a GPU); the older entries of the version matrix test the other readers through their own tests.
pytestmark = pytest.mark.usefixtures("h100_props")

REPO = Path(__file__).resolve().parent.parent
PROPS_FILE = REPO / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"
LIMIT_S = 20.0


def bounded(call: Callable[[], Any], seconds: float = LIMIT_S) -> BaseException | None:
    """Run ``call`` in a daemon thread; the exception it raised (None if it returned). Fails the
    test if it is still running after ``seconds`` (it blocked: the hang this file guards)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed to the test
            outcome.append(exc)
        else:
            outcome.append(None)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"{call!r} still running after {seconds} s: it blocked")
    return outcome[0]


@contextlib.contextmanager
def special(kind: str, where: Path) -> Iterator[Path]:
    """A path of ``kind`` in ``where`` (removed afterwards)."""
    path = where / f"special-{kind}"
    sock = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link_to_fifo":
        os.mkfifo(where / "the-fifo")
        path.symlink_to(where / "the-fifo")
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "link_loop":
        path.symlink_to(where / "special-loop-b")
        (where / "special-loop-b").symlink_to(path)
    elif kind == "sparse_huge":
        with open(path, "wb") as f:
            f.truncate(files.MAX_FILE_BYTES + 1)  # sparse: no disk space used
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(os.fspath(path))
    else:  # pragma: no cover - a typo in a parameter list
        raise AssertionError(kind)
    try:
        yield path
    finally:
        if sock is not None:
            sock.close()
        # A reader that did block (a regression) is released: a writer opens and closes the FIFO.
        fifo = where / "the-fifo" if kind == "link_to_fifo" else path
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        for p in (path, where / "the-fifo", where / "special-loop-b"):
            with contextlib.suppress(FileNotFoundError):
                p.rmdir() if p.is_dir() and not p.is_symlink() else p.unlink()


READ_KINDS = ["fifo", "link_to_fifo", "dev_zero", "directory", "link_loop", "sparse_huge", "socket"]
WRITE_KINDS = ["fifo", "link_to_fifo", "dev_zero", "directory", "socket"]


# -- the helper itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", READ_KINDS)
def test_read_refuses_special_files_naming_the_path_and_the_rule(kind: str, tmp_path: Path) -> None:
    with special(kind, tmp_path) as path:
        exc = bounded(lambda: files.read_bytes(path, what="test file"))
    assert isinstance(exc, OSError), exc
    assert "test file" in str(exc) and os.fspath(path) in str(exc)
    rule = {
        "fifo": "is a FIFO (named pipe), not a regular file",
        "link_to_fifo": "is a FIFO (named pipe), not a regular file",
        "dev_zero": "is a character device, not a regular file",
        "directory": "is a directory, not a regular file",
        "link_loop": "Too many levels of symbolic links",
        "sparse_huge": f"over the {files.MAX_FILE_BYTES}-byte limit",
        "socket": "No such device or address",
    }[kind]
    assert rule in str(exc)


def test_read_returns_a_regular_files_bytes_and_follows_links_only_when_asked(
    tmp_path: Path,
) -> None:
    data = bytes(range(256)) * 9000  # over one read chunk
    (tmp_path / "f").write_bytes(data)
    assert files.read_bytes(tmp_path / "f") == data
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert files.read_bytes(tmp_path / "link") == data
    with pytest.raises(files.UnsafeFileError, match="is a symbolic link: not followed"):
        files.read_bytes(tmp_path / "link", follow_symlinks=False)
    with pytest.raises(FileNotFoundError, match=r"cannot open file .*missing"):
        files.read_bytes(tmp_path / "missing")
    with pytest.raises(files.UnsafeFileError, match="over the 100-byte limit"):
        files.read_bytes(tmp_path / "f", max_bytes=100)


def test_a_file_longer_than_its_size_says_is_cut_at_the_limit() -> None:
    # /proc files report size 0 and hold more: the bounded reads stop at the limit all the same.
    with pytest.raises(files.UnsafeFileError, match="holds more than the 10-byte limit"):
        files.read_bytes("/proc/self/maps", max_bytes=10)


def _read_error(path: Path) -> str:
    """What ``files.read_bytes(path)`` raised, as "Type: message" ("" if it returned)."""
    try:
        files.read_bytes(path)
    except BaseException as exc:  # reported to the parent, which checks it
        return f"{type(exc).__name__}: {exc}"
    return ""


def _read_error_unprivileged(path: Path) -> str:
    """:func:`_read_error` in a forked child that has given up root: root opens a file whatever
    its mode, and containers run the tests as root (a skip for root left the test run nowhere).
    The child opens ``path`` relative to its directory, so only the file's own mode refuses it."""
    path.parent.chmod(0o711)  # searchable by the unprivileged child, not listable
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(r)
            os.chdir(path.parent)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, _read_error(Path(path.name)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        report = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, report
    return report


def test_unreadable_file_is_a_permission_error_naming_it(tmp_path: Path) -> None:
    p = tmp_path / "secret"
    p.write_text("{}")
    p.chmod(0)
    report = _read_error_unprivileged(p) if os.geteuid() == 0 else _read_error(p)
    want = r"PermissionError: \[Errno 13\] cannot open file '\S*secret': Permission denied"
    assert re.fullmatch(want, report), report


@pytest.mark.parametrize("kind", WRITE_KINDS)
def test_write_refuses_a_special_target(kind: str, tmp_path: Path) -> None:
    with special(kind, tmp_path) as path:
        before = os.lstat(path)
        exc = bounded(lambda: files.write_text(path, "x", what="test file"))
        assert isinstance(exc, OSError) and "not a regular file" in str(exc), exc
        assert os.lstat(path).st_ino == before.st_ino  # left in place
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_write_is_atomic_and_keeps_umask_permissions(tmp_path: Path) -> None:
    p = tmp_path / "out.json"
    files.write_text(p, "first")
    old = os.umask(0o022)
    os.umask(old)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~old
    files.write_text(p, "second")
    assert p.read_text() == "second"

    def failing(tmp: str) -> None:
        Path(tmp).write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        files.write_atomically(p, failing)
    assert p.read_text() == "second"  # untouched by the failed write
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.json"]  # no temporary left


# -- every reader and writer of the library --------------------------------------------------------


@pytest.fixture(scope="module")
def plan(h100_props_module: DeviceProperties) -> Plan:
    g = Graph("relu")
    x = g.tensor([1, 8, 4, 4], dtype="float16", name="x")
    g.relu(x, name="relu")
    return g.build(device_properties=h100_props_module, cache=False)


@pytest.fixture(scope="module")
def h100_props_module() -> DeviceProperties:
    why_not = DeviceProperties.why_no_plans()  # a module fixture: runs before h100_props
    if why_not is not None:
        pytest.skip(why_not)
    return DeviceProperties.load(PROPS_FILE)


def _readers(path: Path) -> dict[str, Callable[[], Any]]:
    return {
        "known_bad.load_table": lambda: known_bad.load_table(path),
        "DeviceProperties.load": lambda: DeviceProperties.load(path),
        "Plan.load": lambda: Plan.load(path),
        "merge_smoke": lambda: merge_smoke_main([os.fspath(path), "0"]),
    }


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize("kind", READ_KINDS)
@pytest.mark.parametrize(
    "reader", ["known_bad.load_table", "DeviceProperties.load", "Plan.load", "merge_smoke"]
)
def test_every_reader_refuses_special_files_at_once(reader: str, kind: str, tmp_path: Path) -> None:
    with special(kind, tmp_path) as path:
        exc = bounded(_readers(path)[reader])
    # OSError (unreadable) or ValueError (the table loader's promise): naming the path.
    assert isinstance(exc, (OSError, ValueError)), exc
    assert os.fspath(path) in str(exc)


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "sparse_huge"])
def test_the_known_bad_variable_naming_a_special_file_is_a_clear_error(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with special(kind, tmp_path) as path:
        monkeypatch.setenv(known_bad.ENV_VAR, os.fspath(path))
        exc = bounded(known_bad.table)
    assert isinstance(exc, ValueError) and "known-bad engine table" in str(exc), exc


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize("kind", WRITE_KINDS)
def test_every_writer_refuses_a_special_target(
    plan: Plan, h100_props_module: DeviceProperties, kind: str, tmp_path: Path
) -> None:
    writers: dict[str, Callable[[Path], Any]] = {
        "Plan.save": plan.save,
        "DeviceProperties.save": h100_props_module.save,
        "write_entries": lambda p: write_entries(p, []),
    }
    for name, write in writers.items():
        with special(kind, tmp_path) as path:
            exc = bounded(lambda write=write, path=path: write(path))
        assert isinstance(exc, OSError), (name, exc)
        assert "not a regular file" in str(exc) or "Too many" in str(exc), (name, exc)


@pytest.mark.usefixtures("libcuda")
def test_saved_files_load_back(
    plan: Plan, h100_props_module: DeviceProperties, tmp_path: Path
) -> None:
    plan.save(tmp_path / "p.json")
    loaded = Plan.load(tmp_path / "p.json", device_properties=h100_props_module)
    assert loaded.engine_id == plan.engine_id
    h100_props_module.save(tmp_path / "d.json")
    assert DeviceProperties.load(tmp_path / "d.json").as_dict() == h100_props_module.as_dict()
    assert write_entries(tmp_path / "t.json", []) == 0
    assert known_bad.load_table(tmp_path / "t.json") == []


# -- the plan cache --------------------------------------------------------------------------------


def _graph() -> Graph:
    g = Graph("relu")
    x = g.tensor([1, 8, 4, 4], dtype="float16", name="x")
    g.relu(x, name="relu")
    return g


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory", "sparse_huge", "link_loop"])
def test_a_special_file_in_the_plan_cache_is_rebuilt_not_waited_on(
    h100_props_module: DeviceProperties, kind: str, tmp_path: Path
) -> None:
    first = PlanCache(tmp_path)
    _graph().build(device_properties=h100_props_module, cache=first)
    (cached,) = tmp_path.glob("*.json")
    cached.unlink()
    with special(kind, tmp_path) as path:
        if kind == "link_loop":
            cached.symlink_to(path)
        else:
            os.replace(path, cached)  # the special file takes the cache file's name
        fresh = PlanCache(tmp_path)
        out: list[Plan] = []
        exc = bounded(
            lambda: out.append(_graph().build(device_properties=h100_props_module, cache=fresh))
        )
    assert exc is None and out and out[0].engine_id is not None
    assert fresh.stats["disk_hits"] == 0 and fresh.stats["disk_errors"] >= 1


@pytest.mark.usefixtures("libcuda")
def test_a_plan_cache_file_swapped_for_a_fifo_while_threads_read_never_blocks(
    h100_props_module: DeviceProperties, tmp_path: Path
) -> None:
    """The check-then-open race: a thread swaps the cache file for a FIFO and back while others
    load it. The opened descriptor is what is checked, so a load sees a file or refuses a FIFO."""
    _graph().build(device_properties=h100_props_module, cache=PlanCache(tmp_path))
    (cached,) = tmp_path.glob("*.json")
    good = cached.read_bytes()
    stop = threading.Event()

    def vandal() -> None:
        i = 0
        while not stop.is_set():
            tmp = tmp_path / f"swap{i % 2}"
            with contextlib.suppress(OSError):
                if i % 2:
                    tmp.write_bytes(good)
                else:
                    os.mkfifo(tmp)
                os.replace(tmp, cached)
            i += 1

    def builds() -> None:
        for _ in range(8):  # each load that meets the FIFO rebuilds (~1 s)
            plan = _graph().build(device_properties=h100_props_module, cache=PlanCache(tmp_path))
            assert plan.engine_id is not None

    v = threading.Thread(target=vandal, daemon=True)
    v.start()
    try:
        exc = bounded(builds, seconds=120)
    finally:
        stop.set()
        v.join(5)
    assert exc is None, exc


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory", "socket"])
def test_the_library_override_check_refuses_special_files_at_once(
    kind: str, tmp_path: Path
) -> None:
    from _nvbind.ffi import LibraryNotFoundError, check_elf

    with special(kind, tmp_path) as path:
        exc = bounded(lambda: check_elf(os.fspath(path), "PYCUDNN_LIBRARY", "a hint"))
    assert isinstance(exc, LibraryNotFoundError) and "cannot be read" in str(exc), exc


# -- cuTENSOR's cache files (cuTENSOR opens the path itself) --------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "link_to_fifo", "dev_zero", "directory", "sparse_huge"])
def test_cutensor_cache_files_are_checked_before_cutensor_opens_them(
    kind: str, tmp_path: Path
) -> None:
    from pycutensor.handle import _opened_regular

    def use() -> None:
        with _opened_regular(os.fsencode(path), "plan-cache file"):
            pass

    with special(kind, tmp_path) as path:
        exc = bounded(use)
    assert isinstance(exc, OSError) and os.fspath(path) in str(exc), exc


def test_cutensor_is_handed_the_opened_file_not_the_path(tmp_path: Path) -> None:
    from pycutensor.handle import _opened_regular

    path = tmp_path / "plans.bin"
    path.write_bytes(b"first")
    with _opened_regular(os.fsencode(path), "plan-cache file") as name:
        assert name.startswith(b"/proc/self/fd/")
        path.unlink()
        os.mkfifo(path)  # swapped after the check: what cuTENSOR opens is still the file
        with open(name, "rb") as f:
            assert f.read() == b"first"


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_cutensor_cache_writes_refuse_a_special_target(kind: str, tmp_path: Path) -> None:
    from pycutensor.handle import write_atomically

    written: list[bytes] = []
    with special(kind, tmp_path) as path:
        exc = bounded(lambda: write_atomically(os.fsencode(path), written.append))
    assert isinstance(exc, OSError) and "not a regular file" in str(exc), exc
    assert written == []  # refused before cuTENSOR was asked to write anything


def test_a_link_is_written_through_except_in_the_plan_cache(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    files.write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    files.write_text(link, "own", follow_symlinks=False)
    assert not link.is_symlink() and link.read_text() == "own" and real.read_text() == "new"
