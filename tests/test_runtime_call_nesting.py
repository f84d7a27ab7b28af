"""Library calls made inside another on the same thread (``_nvbind.shutdown.library_call``).

A graph's lowering is one library call for exit and fork, its C calls nested in it: they must
count once, never be held back by a fork waiting for the outer call (the thread would wait for
itself), still raise a Ctrl-C a log callback deferred, and leave the counts right in a child
forked from inside a call.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from children import run_python

from _nvbind import shutdown
from _nvbind.interrupts import defer
from _nvbind.shutdown import library_call

_OUTER = library_call("outer")
_INNER = library_call("inner")


def test_nested_calls_count_once() -> None:
    before = shutdown._State.in_progress
    with _OUTER:
        assert shutdown._State.in_progress == before + 1
        with _INNER, _INNER:
            assert shutdown._State.in_progress == before + 1
            assert shutdown._thread.depth == 3
        assert shutdown._State.in_progress == before + 1
    assert shutdown._State.in_progress == before
    assert shutdown._thread.depth == 0


def test_a_deferred_interrupt_is_raised_by_the_nested_call_and_the_counts_recover() -> None:
    before = shutdown._State.in_progress
    with pytest.raises(KeyboardInterrupt), _OUTER, _INNER:
        defer(KeyboardInterrupt())  # as a log callback does during a C call
    assert (shutdown._State.in_progress, shutdown._thread.depth) == (before, 0)


def _wait_child(pid: int, limit: float = 30.0) -> int:
    deadline = time.monotonic() + limit
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the child hung")
        time.sleep(0.01)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_waits_for_a_sequence_whose_nested_calls_go_on() -> None:
    entered, nested_done = threading.Event(), threading.Event()

    def sequence() -> None:
        with _OUTER:
            entered.set()
            time.sleep(0.3)  # the fork starts waiting meanwhile
            for _ in range(100):
                with _INNER:  # held back by the waiting fork, this thread would wait for itself
                    pass
            nested_done.set()

    t = threading.Thread(target=sequence)
    t.start()
    try:
        assert entered.wait(10)
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the sequence had ended before the fork: no call in progress here
            os._exit(0 if shutdown._State.in_progress == 0 and nested_done.is_set() else 1)
        waited = time.monotonic() - t0
        assert _wait_child(pid) == 0
        assert waited < shutdown.EXIT_WAIT_S / 2, waited  # the sequence ended; no timeout
    finally:
        t.join(60)
    assert not t.is_alive()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_from_inside_a_call_waits_for_no_one_and_the_child_ends_the_call() -> None:
    before = shutdown._State.in_progress
    with _OUTER:
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child continues the call: counted until it ends, then none
            inside = shutdown._State.in_progress
            shutdown._State.lock.acquire()  # free in the child
            shutdown._State.lock.release()
            code = 0 if inside == 1 else 1
        else:
            code = -1
            waited = time.monotonic() - t0
    if pid == 0:
        os._exit(code if shutdown._State.in_progress == 0 else 2)
    assert _wait_child(pid) == 0
    assert waited < shutdown.EXIT_WAIT_S / 2, waited  # it did not wait for its own call
    assert shutdown._State.in_progress == before


@pytest.mark.usefixtures("deviceprops_json")
def test_a_graphs_lowering_is_one_library_call() -> None:
    import pycudnn
    from pycudnn.backend import BackendDescriptor
    from pycudnn.opgraph.lowering import build_descriptors

    g = pycudnn.Graph("nested")
    x = g.tensor([1, 8, 4, 4], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([8, 8, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.relu(g.conv_fprop(x, w, padding=1)).set_output(True, dtype="float16")
    g._resolve()
    depths: list[int] = []

    def factory(kind: str) -> BackendDescriptor:
        depths.append(shutdown._thread.depth)
        return BackendDescriptor(kind)

    made = build_descriptors(g, factory=factory)
    try:
        assert made["graph"].is_finalized
        assert len(depths) == len(made["all"]) > 5
        assert all(d == 1 for d in depths), depths  # inside the lowering's call, not another
        assert shutdown._thread.depth == 0
    finally:
        for d in made["all"]:
            d.close()


def test_a_call_made_while_its_thread_holds_the_runtime_lock_goes_through() -> None:
    """A garbage collection inside the runtime's own locked section (``Condition.notify_all``
    allocates) may run a finalizer that destroys a C object: a library call on the thread that
    holds the lock, which must not wait for itself. In a child process: a hang fails there."""
    out = run_python(
        """
        from _nvbind import shutdown
        from _nvbind.shutdown import library_call
        with shutdown._State.lock, library_call("a finalizer's destroy"):
            print("inside", shutdown._State.in_progress)
        print("after", shutdown._State.in_progress)
        """,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["inside", "1", "after", "0"]
