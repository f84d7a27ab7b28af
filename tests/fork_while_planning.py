"""Child script of tests/test_reliability_runtime_fork.py: fork while threads plan, and check that
every forked child plans once and exits quickly.

Prints one JSON line: {"children": [[exit status, seconds from the fork's return to the child's
end], ...], "fork_waits": [seconds os.fork() took, ...]}. Threads build cuDNN plans
without the plan cache, probe the driver and use pycutensor's objects; the main thread forks
``FORKS`` times while they run. Each child builds a plan, then leaves through ``sys.exit(0)`` (so
that the interpreter's exit hooks run, as in a multiprocessing worker).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pycudnn
from _nvbind.cuda import driver_status

FORKS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
CHILD_LIMIT_S = 60.0
PROPS = pycudnn.DeviceProperties.load("tests/data/deviceprops/h100-sxm-80gb.json")


def build(i: int) -> None:
    # Convolutions: cuDNN has precompiled engines for them, so a build takes well under a second
    # (runtime-compiled matmuls take seconds each under load).
    g = pycudnn.Graph(f"g{i}")
    c = 8 * (1 + i % 3)
    x = g.tensor([1, c, 8, 8], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([c, c, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1, name="conv")
    g.build(device_properties=PROPS, cache=False).close()


stop = threading.Event()


def planner(k: int) -> None:
    i = k
    while not stop.is_set():
        build(i)
        driver_status()
        i += 1


def main() -> None:
    build(0)  # the library is loaded and has planned before the threads start
    threads = [threading.Thread(target=planner, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    results, waits = [], []
    for _ in range(FORKS):
        time.sleep(0.2)
        before = time.monotonic()
        pid = os.fork()
        start = time.monotonic()
        if pid:
            waits.append(start - before)
        if pid == 0:
            try:
                driver_status()
                build(99)
            except BaseException as exc:  # report, never fall back into the parent's loop
                print(f"child failed: {exc!r}", file=sys.stderr)
                os._exit(3)
            sys.exit(0)
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                results.append([os.waitstatus_to_exitcode(status), time.monotonic() - start])
                break
            if time.monotonic() - start > CHILD_LIMIT_S:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                results.append(["hung", time.monotonic() - start])
                break
            time.sleep(0.02)
    stop.set()
    for t in threads:
        t.join()
    print(json.dumps({"children": results, "fork_waits": waits}))


if __name__ == "__main__":
    main()
