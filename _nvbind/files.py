"""Reading and writing the files a user names: never blocking, never unbounded, never half-written.

Every path the libraries read or write on a caller's behalf (plan-cache files, plan JSON, the
known-bad engine table, device-properties files, the tables the CLIs write, cuTENSOR's cache
files) goes through here. A plain ``open(path).read()`` blocks forever on a FIFO (``open(2)``
waits for a writer), reads ``/dev/zero`` until memory runs out, and reads a directory or a
socket with an error that names neither the path nor the rule. So:

* reads open with ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer), optionally
  ``O_NOFOLLOW``, then ``fstat`` the *opened descriptor*: it must be a regular file. Checking the
  descriptor, not the path, closes the check-then-open race (a file swapped for a FIFO between a
  ``path.is_file()`` and the ``open``);
* reads are capped at :data:`MAX_FILE_BYTES` and done in bounded chunks, so a file that lies
  about its size (``/proc``) or grows while read cannot exhaust memory;
* writes refuse a target that exists and is not a regular file (a FIFO, a device, a directory),
  and go to a temporary file in the same directory that is renamed over the target once complete
  (``os.replace``, atomic on POSIX): a reader sees the old file or the new one, never a part.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "MAX_FILE_BYTES",
    "UnsafeFileError",
    "check_write_target",
    "open_regular",
    "read_bytes",
    "read_text",
    "write_atomically",
    "write_text",
]

#: The largest file read on a caller's behalf (64 MiB). The biggest file these libraries read is a
#: plan JSON with runtime-compiled kernels (a few MiB); a larger one is refused, not read.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Bytes read per ``os.read``.
_CHUNK = 1024 * 1024


class UnsafeFileError(OSError):
    """A path that is not a regular file of a sane size (a FIFO, a device, a directory, a socket,
    a file over :data:`MAX_FILE_BYTES`). An ``OSError``, as any other unreadable path is."""


def _kind(mode: int) -> str:
    """What a file of ``st_mode`` is, in words."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _text(path: Any) -> str:
    try:
        return repr(os.fsdecode(path))
    except (TypeError, ValueError):
        return repr(path)


def _not_regular(path: Any, what: str, mode: int) -> UnsafeFileError:
    return UnsafeFileError(
        f"{what} {_text(path)} is {_kind(mode)}, not a regular file: only regular files are "
        "read or written (a FIFO or a device would block or never end)"
    )


@contextlib.contextmanager
def open_regular(
    path: str | bytes | os.PathLike[Any],
    *,
    what: str = "file",
    follow_symlinks: bool = True,
    max_bytes: int = MAX_FILE_BYTES,
) -> Iterator[int]:
    """Open ``path`` for reading and yield the descriptor, once it is known to be a regular file
    of at most ``max_bytes`` bytes.

    ``open(2)`` gets ``O_NONBLOCK`` (a FIFO opens without waiting for a writer), ``O_NOCTTY`` (a
    terminal does not become the controlling one) and, with ``follow_symlinks=False``,
    ``O_NOFOLLOW`` (a symbolic link as the last component is refused: for files a library keeps
    in a directory of its own). Then the *descriptor* is checked with ``fstat``. ``what`` names
    the file in messages ("plan-cache file", "known-bad engine table", ...).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_symlinks and os.path.islink(path):
            raise UnsafeFileError(
                f"{what} {_text(path)} is a symbolic link: not followed here (a link can point at "
                "a FIFO, a device or another user's file)"
            ) from None
        raise type(exc)(exc.errno, f"cannot open {what} {_text(path)}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, what, st.st_mode)
        if st.st_size > max_bytes:
            raise UnsafeFileError(
                f"{what} {_text(path)} is {st.st_size} bytes, over the {max_bytes}-byte limit on "
                "files read here"
            )
        # A regular file reads the same with or without O_NONBLOCK; cleared for whoever reads
        # through the descriptor next (cuTENSOR, through /proc/self/fd).
        os.set_blocking(fd, True)
        yield fd
    finally:
        os.close(fd)


def read_bytes(
    path: str | bytes | os.PathLike[Any],
    *,
    what: str = "file",
    follow_symlinks: bool = True,
    max_bytes: int = MAX_FILE_BYTES,
) -> bytes:
    """The contents of the regular file ``path``, at most ``max_bytes`` (see :func:`open_regular`);
    ``UnsafeFileError`` for anything else, ``OSError`` naming the path when it cannot be read."""
    with open_regular(path, what=what, follow_symlinks=follow_symlinks, max_bytes=max_bytes) as fd:
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            except OSError as exc:  # EISDIR and EIO land here: name the path
                raise type(exc)(
                    exc.errno, f"cannot read {what} {_text(path)}: {exc.strerror}"
                ) from None
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # grew while read, or its size was not its length (/proc)
                raise UnsafeFileError(
                    f"{what} {_text(path)} holds more than the {max_bytes}-byte limit on files "
                    "read here"
                )


def read_text(
    path: str | bytes | os.PathLike[Any], *, what: str = "file", follow_symlinks: bool = True
) -> str:
    """:func:`read_bytes` decoded as UTF-8 (``UnicodeDecodeError``, a ``ValueError``, if it is
    not): the project's JSON files, at most :data:`MAX_FILE_BYTES`."""
    return read_bytes(path, what=what, follow_symlinks=follow_symlinks).decode("utf-8")


def check_write_target(path: str | bytes | os.PathLike[Any], *, what: str = "file") -> None:
    """Refuse to write ``path`` when it exists and is not a regular file (or a symbolic link to
    one): a FIFO would block the writer, a device would take the bytes, a directory cannot be
    replaced. A missing path is fine (it is created)."""
    try:
        st = os.stat(path)  # follows links: a link to a FIFO is refused like the FIFO
    except FileNotFoundError:
        return
    except OSError as exc:  # a loop of links, a file used as a directory, no permission, ...
        raise type(exc)(exc.errno, f"cannot write {what} {_text(path)}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, what, st.st_mode)


def write_atomically(
    path: str | bytes | os.PathLike[Any],
    write: Callable[[str], None],
    *,
    what: str = "file",
    follow_symlinks: bool = True,
) -> None:
    """Have ``write(temporary)`` create the file at ``temporary`` (a fresh name in ``path``'s
    directory), then rename it over ``path``; on any failure the temporary file is removed and an
    existing ``path`` is left as it was. ``path`` must not be a FIFO, device or directory.

    A symbolic link at ``path`` is written through (the file it names is replaced, the link
    stays), as a plain ``open(path, "w")`` would; with ``follow_symlinks=False`` the link itself
    is replaced (for files a library keeps in a directory of its own)."""
    check_write_target(path, what=what)
    target = os.fsdecode(os.path.abspath(path))
    if follow_symlinks and os.path.islink(target):
        target = os.path.realpath(target)
    directory, base = os.path.split(target)
    # A name of this call's own (process, thread, random): two threads or processes writing the
    # same path never share a temporary file. It is not created here, so that ``write`` creates
    # it with the permissions the umask gives, as a plain open() would (mkstemp's are 0600).
    tmp = os.path.join(
        directory,
        f".{base}.{os.getpid()}-{threading.get_ident()}-{os.urandom(4).hex()}.tmp",
    )
    try:
        write(tmp)
        if not os.path.isfile(tmp):
            raise OSError(f"writing {what} {_text(path)} reported success but created no file")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(
    path: str | bytes | os.PathLike[Any],
    text: str,
    *,
    what: str = "file",
    fsync: bool = True,
    follow_symlinks: bool = True,
) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`write_atomically`)."""

    def write(tmp: str) -> None:
        with open(tmp, "x", encoding="utf-8") as f:  # "x": O_EXCL, never an existing file
            f.write(text)
            f.flush()
            if fsync:
                os.fsync(f.fileno())

    write_atomically(path, write, what=what, follow_symlinks=follow_symlinks)
