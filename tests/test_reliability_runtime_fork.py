"""``os.fork()`` while other threads use the library (multiprocessing's default start method on
Linux before Python 3.14).

The child used to block forever in its first ``Graph.build()`` (a module lock a parent thread held
at the fork; then cuInit or cuDNN's own locks, held by a thread the child does not have), and a
child that exited normally waited 30 s for the parent threads' calls in progress. Locks are now
renewed in the child, the fork waits until no other thread is inside a cuDNN backend call or the
CUDA driver probe (new ones held back meanwhile, so that the fork cannot starve), and the child
starts with no call in progress. Each scenario runs in a child process with a time limit.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from children import run_python

from _nvbind.forksafe import fork_safe_lock

# Every scenario plans for the committed H100 properties (cuDNN 9.10+ without a GPU).
pytestmark = pytest.mark.usefixtures("h100_props")


def test_fork_while_threads_plan_children_plan_and_exit_quickly() -> None:
    r = run_python(
        "import runpy, sys; sys.argv = ['fork_while_planning', '3']; "
        "runpy.run_path('tests/fork_while_planning.py', run_name='__main__')",
        timeout=240,
    )
    assert r.returncode == 0, f"the parent failed ({r.returncode}): {r.stderr[-3000:]}"
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(result["children"]) == 3
    for status, seconds in result["children"]:
        # A child that planned once and exited: seconds, not the 30 s exit wait or a hang.
        assert status == 0, (result, r.stderr[-3000:])
        assert seconds < 25, result
    assert all(wait < 25 for wait in result["fork_waits"]), result


def test_a_lock_held_by_another_thread_at_the_fork_is_free_in_the_child() -> None:
    class Owner:
        pass

    owner = Owner()
    owner.lock = fork_safe_lock(owner, "lock")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with owner.lock:
            held.set()
            release.wait()

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    try:
        pid = os.fork()
        if pid == 0:  # the child: the holder thread does not exist here
            got = owner.lock.acquire(timeout=5)
            os._exit(0 if got else 1)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            assert time.monotonic() < deadline, "the child hung"
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(status) == 0
        assert owner.lock.locked()  # the parent's lock is the parent's, still held
    finally:
        release.set()
        t.join()


def test_a_driver_probe_in_the_parent_does_not_block_the_childs() -> None:
    r = run_python(
        """
        import os, sys, threading, time
        from _nvbind import cuda
        stop = threading.Event()
        def probe():
            while not stop.is_set():
                cuda._Kept.answer = None  # probe again and again, as before the answer was kept
                cuda.driver_status()
        threads = [threading.Thread(target=probe) for _ in range(4)]
        for t in threads:
            t.start()
        codes = []
        for _ in range(5):
            time.sleep(0.05)
            pid = os.fork()
            if pid == 0:
                cuda._Kept.answer = None
                cuda.driver_status()
                os._exit(0)
            deadline = time.monotonic() + 20
            while not os.waitpid(pid, os.WNOHANG)[0]:
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    codes.append("hung")
                    break
                time.sleep(0.01)
            else:
                codes.append(0)
        stop.set()
        for t in threads:
            t.join()
        print(codes)
        """,
        timeout=200,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[0, 0, 0, 0, 0]", r.stdout


def test_a_fork_holds_back_the_log_callback_and_error_reads() -> None:
    """cudnnSetCallback (twice per plan, on every planning thread), cudnnGetLastErrorString
    (after each failed call), cudnnCreate (here without a GPU: it returns its error) and a
    legacy descriptor's destroy are waited for by a fork like the backend calls: a thread inside
    one at the fork would leave cuDNN's lock taken in the child. While a fork is being prepared,
    a thread making any of them waits until the fork is done."""
    r = run_python(
        """
        import ctypes, threading, time
        import pycudnn
        from _nvbind import shutdown
        from pycudnn import _lib, handle, log

        pycudnn.version()  # loaded before the simulated fork
        results = {}

        def call(name, fn):
            fn()  # cudnnCreate without a GPU returns its error status
            results[name] = time.monotonic()

        legacy = pycudnn.TensorDescriptor([2, 3, 4, 5])  # made before the fork: its destroy

        shutdown._before_fork()  # what os.fork() runs first: new calls are held back
        held = time.monotonic()
        threads = [
            threading.Thread(target=call, args=("callback", lambda: log._set_callback(2, log._CALLBACK))),
            threading.Thread(target=call, args=("error", _lib.last_error_string)),
            threading.Thread(target=call, args=("handle", lambda: handle._create(ctypes.c_void_p()))),
            threading.Thread(target=call, args=("legacy", legacy.close)),
        ]
        for t in threads:
            t.start()
        time.sleep(0.5)
        during = sorted(results)
        shutdown._after_fork_in_parent()  # the fork is done: they go on
        released = time.monotonic()
        for t in threads:
            t.join(10)
        print(during, sorted(results), all(v >= released for v in results.values()), released - held > 0.4)
        """,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == [
        "[]",
        "['callback',",
        "'error',",
        "'handle',",
        "'legacy']",
        "True",
        "True",
    ], r.stdout


@pytest.mark.gpu
def test_a_child_of_a_parent_that_initialised_cuda_is_told_cuda_is_unusable() -> None:
    """CUDA does not survive a fork: the child's answer says so (with the reason) at once, with
    no probe of its own, while the parent's still lists its devices."""
    r = run_python(
        """
        import json, os
        from _nvbind import cuda
        parent = cuda.driver_status()
        assert parent.usable and parent.device_count > 0, parent
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            st = cuda.driver_status()
            os.write(write, json.dumps([st.usable, st.device_count, st.reason]).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            print(f.read())
        os.waitpid(pid, 0)
        assert cuda.driver_status().usable
        """,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    usable, count, reason = json.loads(r.stdout.strip().splitlines()[-1])
    assert (usable, count) == (False, 0)
    assert "os.fork()" in reason and "spawn" in reason, reason
