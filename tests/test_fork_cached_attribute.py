"""Lazily computed attributes survive ``os.fork()``.

Before Python 3.12, ``functools.cached_property`` computes under one lock per property shared by
every instance: a planning thread inside ``EngineConfig.knobs`` at the moment of a fork left that
lock held in the child, whose first build then blocked forever (tests/fork_while_planning.py
caught it). The packages use :class:`cached_attribute`, which holds no lock.
"""

from __future__ import annotations

import ast
import os
import threading
import time
from pathlib import Path

import pytest

from _nvbind.lazy import cached_attribute

ROOT = Path(__file__).resolve().parent.parent


class Slow:
    entered = threading.Event()
    release = threading.Event()

    def __init__(self, value: int) -> None:
        self.value = value
        self.computed = 0

    @cached_attribute
    def doubled(self) -> int:
        """Twice the value."""
        self.computed += 1
        if self.value == 1:  # the first instance blocks inside the computation
            Slow.entered.set()
            Slow.release.wait()
        return 2 * self.value


def test_computed_once_then_kept() -> None:
    s = Slow(3)
    assert (s.doubled, s.doubled, s.computed) == (6, 6, 1)
    assert Slow.doubled.__doc__ == "Twice the value."


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_during_a_computation_leaves_the_attribute_usable_in_the_child() -> None:
    t = threading.Thread(target=lambda: Slow(1).doubled, daemon=True)
    t.start()
    assert Slow.entered.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # another instance's attribute, while the parent's thread is inside one
            os._exit(0 if Slow(5).doubled == 10 else 1)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0
                return
            time.sleep(0.02)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child blocked on the attribute a parent thread was computing")
    finally:
        Slow.release.set()
        t.join()


@pytest.mark.parametrize("package", ["pycudnn", "pycutensor"])
def test_no_package_module_uses_functools_cached_property(package: str) -> None:
    users = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "cached_property":
                users.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and any(
                a.name == "cached_property" for a in node.names
            ):
                users.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert users == [], "use _nvbind.lazy.cached_attribute (fork-safe)"
