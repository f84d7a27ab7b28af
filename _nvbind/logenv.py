"""NVIDIA's own logging variables, checked before cuDNN or cuTENSOR is loaded.

Both libraries write their own log where environment variables say, and neither survives a
destination it cannot write: cuDNN 9 crashes (SIGSEGV) at its first log line when
``CUDNN_LOGDEST_DBG`` names a file it cannot create, cuTENSOR 2 aborts (SIGABRT, an uncaught
``fmt::system_error``) when its log goes to a closed pipe or a full disk, and both block forever at
load when the destination is a FIFO nobody reads. The variables are honoured as documented, so a
destination that cannot take the log is refused when the library is about to load, with an
``OSError`` (``FileNotFoundError``, ``NotADirectoryError``, ``PermissionError``,
``BrokenPipeError``, ``ENOSPC``, ...) that names the variable, the destination and how to fix it.
Refused rather than silently switched off: a user who turned the log on wants it, and a warning
about a missing log is easily lost; the next library call after the variable is fixed loads the
library as usual.

Only what can be known without writing is checked (a pipe whose reader leaves later, or a disk that
fills later, still ends the process inside the library: NVIDIA's behaviour, not avoidable from
here). Pure Python: nothing is loaded.
"""

from __future__ import annotations

import errno
import os
import select
import stat

from .ffi import LibraryNotFoundError

__all__ = [
    "check_cudnn_environment",
    "check_cutensor_environment",
    "cudnn_logging_on",
    "cutensor_logging_on",
    "is_stdout",
]

_CUDNN_LEVELS = ("CUDNN_LOGLEVEL_DBG", "CUDNN_LOGERR_DBG", "CUDNN_LOGWARN_DBG", "CUDNN_LOGINFO_DBG")
_DEV_FULL = (1, 7)  # Linux's /dev/full: every write fails with ENOSPC


def _may_log(text: str | None) -> bool:
    """Whether a level or mask variable may turn the library's log on: set to anything but 0.

    The libraries parse these themselves, and not as Python would: a negative mask is every bit
    (``CUTENSOR_LOG_MASK=-1`` logs everything), ``CUDNN_LOGINFO_DBG=-1`` opens the destination, and
    a value that is not a number may still be read in part. So anything but an empty value or a
    plain 0 counts as on, and the destination is checked; checking one that would not be used
    costs nothing, a destination that blocks or aborts the process costs the process."""
    value = (text or "").strip()
    if not value:
        return False
    try:
        return int(value) != 0
    except ValueError:
        return True


def cudnn_logging_on() -> bool:
    """Whether cuDNN's own log may be on (``CUDNN_LOGLEVEL_DBG``, or a legacy switch, set to
    anything but 0)."""
    return any(_may_log(os.environ.get(v)) for v in _CUDNN_LEVELS)


def cutensor_logging_on() -> bool:
    """Whether cuTENSOR may write its own log (``CUTENSOR_LOG_LEVEL`` or ``CUTENSOR_LOG_MASK`` set
    to anything but 0); without ``CUTENSOR_LOG_FILE`` it goes to stdout."""
    return any(_may_log(os.environ.get(v)) for v in ("CUTENSOR_LOG_LEVEL", "CUTENSOR_LOG_MASK"))


def _refuse(code: int, setting: str, rule: str) -> OSError:
    return OSError(code, f"{setting}: {rule}")


def _check_node(st: os.stat_result, setting: str, free_of: str) -> None:
    """A destination that exists: a regular file with room, or a character device but /dev/full."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise _refuse(errno.EISDIR, setting, "is a directory; name a file")
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise _refuse(
            errno.EINVAL,
            setting,
            "is a FIFO or socket; the library blocks forever opening one at load. Name a file",
        )
    if stat.S_ISCHR(mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == _DEV_FULL:
        raise _refuse(errno.ENOSPC, setting, "is /dev/full, which takes no writes")
    if stat.S_ISREG(mode) and os.statvfs(free_of).f_bavail == 0:
        raise _refuse(
            errno.ENOSPC, setting, "its file system is full, and the library dies on a failed write"
        )


def check_log_file(var: str, value: str) -> None:
    """OSError unless ``value`` (the path in ``var``; ``%i`` stands for the process id) names a
    file the library can create or append to: an existing directory, writable, with room."""
    path = os.path.abspath(value.replace("%i", str(os.getpid())))
    setting = f"{var}={value!r}"
    if "\0" in value:
        raise _refuse(errno.EINVAL, setting, "holds a NUL character")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a loop of links, a component that is a file, a name too long
        raise _refuse(
            exc.errno or errno.EINVAL, setting, f"cannot be looked up: {exc.strerror}"
        ) from None
    parent = os.path.dirname(path)
    if st is not None:
        _check_node(st, setting, path)
        if not os.access(path, os.W_OK):
            raise PermissionError(errno.EACCES, f"{setting}: the file is not writable")
        return
    if not os.path.isdir(parent):
        raise FileNotFoundError(
            errno.ENOENT,
            f"{setting}: its directory {parent} does not exist, and the library crashes when it "
            "cannot create its log file; create the directory or change the variable",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(
            errno.EACCES,
            f"{setting}: its directory {parent} is not writable, so the file cannot be created",
        )
    if os.statvfs(parent).f_bavail == 0:
        raise _refuse(errno.ENOSPC, setting, "its file system is full")


def check_stream(fd: int, setting: str) -> None:
    """OSError unless file descriptor ``fd`` (1: stdout, 2: stderr) can take a log line: open, not
    a pipe whose reader has gone (``BrokenPipeError``), not /dev/full or a full file system."""
    try:
        st = os.fstat(fd)
    except OSError:
        raise _refuse(errno.EBADF, setting, f"file descriptor {fd} is closed") from None
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        # A pipe with no reader left reports POLLERR for writing (Linux, macOS), without a write.
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        for _, events in poller.poll(0):
            if events & (select.POLLERR | select.POLLHUP):
                raise BrokenPipeError(
                    errno.EPIPE,
                    f"{setting}: the pipe's reader has gone, and the library dies on the write",
                )
        return
    _check_node(st, setting, f"/proc/self/fd/{fd}" if os.path.exists("/proc/self/fd") else ".")


def is_stdout(destination: str) -> bool:
    """Whether a log destination (a keyword or a path) writes to this process's stdout."""
    if destination.strip().lower() == "stdout":
        return True
    try:
        return os.path.samestat(os.stat(destination), os.fstat(1))
    except (OSError, ValueError):
        return False


def check_cudnn_environment() -> None:
    """Called before cuDNN loads: ``PYCUDNN_LIBRARY`` must name ``libcudnn.so.9`` itself, and where
    cuDNN's own log is on (``CUDNN_LOGLEVEL_DBG``, or the legacy ``CUDNN_LOG{ERR,WARN,INFO}_DBG``)
    its destination ``CUDNN_LOGDEST_DBG`` (``stdout``, ``stderr`` or a file; cuDNN's default is
    stderr) must be writable. See the module docstring for why these are refused."""
    override = os.environ.get("PYCUDNN_LIBRARY")
    if override:
        for name in {os.path.basename(override), os.path.basename(os.path.realpath(override))}:
            if name.startswith("libcudnn_"):
                # Sublibraries export cudnnGetVersion too, so they load and report a version, but
                # each holds only part of the API (and the dispatcher loads them itself).
                raise LibraryNotFoundError(
                    f"PYCUDNN_LIBRARY={override!r} names {name}, one of cuDNN's sublibraries; it "
                    "must name the dispatcher libcudnn.so.9 (in the same directory), which loads "
                    "them itself"
                )
    if not cudnn_logging_on():
        return
    dest = os.environ.get("CUDNN_LOGDEST_DBG", "stderr")
    keyword = dest.strip().lower()
    if keyword in ("stdout", "stderr"):
        check_stream(1 if keyword == "stdout" else 2, f"CUDNN_LOGDEST_DBG={dest!r}")
    else:
        check_log_file("CUDNN_LOGDEST_DBG", dest)


def check_cutensor_environment() -> None:
    """Called before cuTENSOR loads: ``CUTENSOR_LOG_FILE``, when set, must be a writable file
    (cuTENSOR opens it at load), and with ``CUTENSOR_LOG_LEVEL``/``CUTENSOR_LOG_MASK`` on and no
    file, stdout must take the log. See the module docstring for why these are refused."""
    path = os.environ.get("CUTENSOR_LOG_FILE")
    if path:
        check_log_file("CUTENSOR_LOG_FILE", path)
    elif cutensor_logging_on():
        check_stream(1, "CUTENSOR_LOG_LEVEL/CUTENSOR_LOG_MASK (cuTENSOR's log goes to stdout)")
