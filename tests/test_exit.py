"""Interpreter exit while daemon threads are inside cuDNN (CPU tier: deviceless planning)."""

from __future__ import annotations

import pytest
from children import REPO, run_python

PROPS = REPO / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"

_WORKERS = f"""
import sys, threading, time
import pycudnn

props = pycudnn.DeviceProperties.load({str(PROPS)!r})

def matmul():
    # Runtime-compiled engines: each plan compiles kernels for about a second.
    g = pycudnn.Graph("mm")
    a = g.tensor([1, 64, 32], dtype="float16", name="a")
    b = g.tensor([1, 32, 48], dtype="float16", name="b")
    g.matmul(a, b)
    return g

def plans():
    while True:
        matmul().build(device_properties=props, cache=False)

def heuristics():
    g = matmul()
    while True:
        g.engine_configs(device_properties=props)

work = plans if sys.argv[1] == "plans" else heuristics
for _ in range(8 if work is plans else 4):
    threading.Thread(target=work, daemon=True).start()
time.sleep(1.5)
print("main thread returns")
"""


@pytest.mark.usefixtures("deviceprops_json")
@pytest.mark.parametrize("work", ["plans", "heuristics"])
def test_exit_with_daemon_threads_inside_cudnn_does_not_crash(work: str) -> None:
    # Without the exit hook of _nvbind.shutdown, eight threads planning crashed the exit
    # in six runs of six (SIGSEGV, cuDNN 9.28), four on the heuristics in one of six (9.28 and
    # 9.19; on 9.19 also with only finalize and attribute reads waited for): cuDNN's static
    # destructors ran under a thread inside the library.
    for attempt in range(3):
        done = run_python(_WORKERS, work, timeout=180)
        assert done.returncode == 0, (
            f"run {attempt + 1}: exit status {done.returncode}\n{done.stderr[-2000:]}"
        )
        assert "main thread returns" in done.stdout
        # The workers stop at their next long call, with the reason. Their tracebacks print
        # while the process ends and can be cut off (or interleave); every final line that did
        # print whole gives the reason. A line whose message starts with blanks is two threads'
        # output run together: the exception's name from one, a traceback's source line from the
        # other (seen: "InterpreterExitingError:     count = heur.element_count(...)").
        reasons = [
            line
            for line in done.stderr.splitlines(keepends=True)
            if "InterpreterExitingError: " in line
            and line.endswith("\n")
            and not line.split("InterpreterExitingError: ", 1)[1][:1].isspace()
        ]
        for line in reasons:
            assert "join worker threads" in line, line
