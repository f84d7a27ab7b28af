"""Code run in a fresh interpreter with the repository importable: for tests that need a clean
process (what an import loads, a crash that must not take the test run with it, variables read
when a library loads)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class ChildHung(AssertionError):
    """The child ran past its time limit; the message holds every thread's stack at that moment."""


def child_env(**env: str) -> dict[str, str]:
    """This environment with the repository importable, ``env`` added, and faulthandler on: it
    prints every thread's stack on SIGABRT, which :func:`stop_hung` sends, so that a failure
    says where each thread was instead of only that time ran out. Start the child with
    ``start_new_session=True`` (its own process group: what it forks is stopped with it)."""
    return {"PYTHONFAULTHANDLER": "1", **os.environ, "PYTHONPATH": str(REPO), **env}


def _run(argv: list[str], timeout: float, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    with subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(**env),
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out, err = stop_hung(proc)
            raise ChildHung(
                f"the child ran past {timeout} s and was stopped; its output:\n{out[-2000:]}\n"
                f"its stderr (the threads' stacks last):\n{err[-8000:]}"
            ) from None
        except BaseException:  # Ctrl-C of the test run: its own session does not get the terminal's
            _kill_group(proc)
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # nothing of the group is left
        pass


def stop_hung(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Stop a child that hung, its stacks printed first; then whatever it forked, which would
    otherwise hold its pipes open. Returns what it wrote."""
    proc.send_signal(signal.SIGABRT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(proc)
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        return "", "(its output could not be read: a process outside its group holds the pipes)"


def run_python(
    code: str, *args: str, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -c code *args`` with ``PYTHONPATH`` set to the repository and ``env`` added."""
    return _run(["-c", textwrap.dedent(code), *args], timeout, env)


def run_module(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m *args`` (a command line: ``run_module("pycudnn", "info")``) with
    ``PYTHONPATH`` set to the repository and ``env`` added."""
    return _run(["-m", *args], timeout, env)
