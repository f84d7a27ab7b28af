"""Reading cuDNN's log message (NUL-ended lines, then an empty line) from the callback's pointer:
the same text as before, and never a byte past the empty line."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

from pycudnn.log import _MAX_LINES, _read_message


def _message(*lines: bytes) -> ctypes.Array[ctypes.c_char]:
    return ctypes.create_string_buffer(b"".join(line + b"\0" for line in lines) + b"\0")


def test_lines_joined_by_newlines() -> None:
    buf = _message(b"CuDNN (v92800 42) function cudnnBackendFinalize() called:", b"    Warning: x")
    assert _read_message(ctypes.addressof(buf)) == (
        "CuDNN (v92800 42) function cudnnBackendFinalize() called:\n    Warning: x"
    )


def test_empty_and_null() -> None:
    assert _read_message(None) == ""
    assert _read_message(0) == ""
    assert _read_message(ctypes.addressof(_message())) == ""


def test_bad_bytes_are_replaced_per_line() -> None:
    buf = _message(b"a\xe2\x82", b"\xffb", "é".encode())
    assert _read_message(ctypes.addressof(buf)) == "a\ufffd\n\ufffdb\né"


def test_a_message_without_its_end_stops_at_the_line_limit() -> None:
    buf = _message(*[b"x"] * (_MAX_LINES + 10))
    assert _read_message(ctypes.addressof(buf)) == "\n".join(["x"] * _MAX_LINES)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap/mprotect layout (Linux)")
def test_nothing_past_the_empty_line_is_read() -> None:
    # The message ends on the last byte of a page whose next page is inaccessible: reading one
    # byte further would kill the process (a child, so that a failure is reported, not a crash).
    code = textwrap.dedent(
        """
        import ctypes, mmap
        from pycudnn.log import _read_message
        page = mmap.PAGESIZE
        m = mmap.mmap(-1, 2 * page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(m))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        lines = [b"line %d" % i for i in range(300)]
        data = b"".join(line + b"\\0" for line in lines) + b"\\0"
        start = page - len(data)
        m[start:page] = data
        assert libc.mprotect(base + page, page, 0) == 0, ctypes.get_errno()  # PROT_NONE
        text = _read_message(base + start)
        assert text == "\\n".join(x.decode() for x in lines), text[-50:]
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr)
