#!/usr/bin/env python3
"""Time from a new process to its first plan loaded from a plan-cache directory (target: the first
result in under 100 ms).

    python scripts/bench_first_plan.py [--repeats 10] [--out DIR] [--deviceprops FILE]

A plan for a small convolution (1x32x16x16, 32 3x3 filters, fp16 NHWC) is built once into a
:class:`pycudnn.plan.PlanCache` directory. Then each of ``--repeats`` fresh interpreters imports
pycudnn, describes the same graph and builds it with that cache, which loads cuDNN's plan JSON
instead of running heuristics; on a GPU it also executes the plan once and synchronises (its first
result). Measured inside the child, from before ``import pycudnn`` to the end, and reported with
the cache statistics (a disk hit is required, else the figure is not what it claims).

Without a GPU the plans target the committed H100 device properties (deviceless, needs
``libcuda.so.1``) and the figure stops at the loaded plan: it EXCLUDES the first execution and
whatever a real GPU adds (context creation, cuDNN's handle, module loading). Writes
``DIR/bench_first_plan.json`` with the machine and versions, and whether the children found
pycudnn's compiled bytecode: without it (``PYTHONDONTWRITEBYTECODE`` set in a checkout that has no
``__pycache__``) every process compiles the sources, the generated bindings above all, which an
installed package never does.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.util import cache_from_source
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROPS = ROOT / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"

CHILD = r"""
import sys, time
t0 = time.perf_counter()
import json
import pycudnn
from pycudnn.plan import PlanCache
phases = {"import": time.perf_counter() - t0}
pycudnn.version()  # loads libcudnn
phases["library load"] = time.perf_counter() - t0 - sum(phases.values())
cache_dir, props_file, on_gpu = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
g = pycudnn.Graph("first_plan")
x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
y = g.conv_fprop(x, w, padding=1, name="conv")
cache = PlanCache(cache_dir)
phases["graph"] = time.perf_counter() - t0 - sum(phases.values())
if on_gpu:
    plan = g.build(cache=cache)
    phases["plan from disk (and the GPU's context, handle)"] = (
        time.perf_counter() - t0 - sum(phases.values()))
    from pycudnn import DeviceArray
    import numpy as np
    arrays = {t: DeviceArray.zeros(t.dims, np.float16, strides=t.strides) for t in (x, w, y)}
    plan.execute(arrays)
    from cuda.core import Device
    Device().sync()
    phases["first execution"] = time.perf_counter() - t0 - sum(phases.values())
else:
    from pycudnn.deviceprops import DeviceProperties
    props = DeviceProperties.from_json(json.loads(open(props_file).read()))
    plan = g.build(device_properties=props, cache=cache)
    phases["plan from disk"] = time.perf_counter() - t0 - sum(phases.values())
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "phases": phases, "stats": cache.stats}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default="bench-results/first-plan")
    parser.add_argument("--deviceprops", default=str(PROPS), help="device properties (no GPU)")
    args = parser.parse_args(argv)
    if args.repeats < 1:  # no run: no figure (statistics.median of nothing)
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    sys.path.insert(0, str(ROOT))
    from _nvbind.cuda import driver_status

    st = driver_status()
    on_gpu = st.usable
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as cache_dir:
        # The first process builds and stores the plan; the following ones load it.
        cmd = [sys.executable, "-c", CHILD, cache_dir, args.deviceprops, "1" if on_gpu else "0"]
        first = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if first.returncode:
            print(first.stderr, file=sys.stderr)
            return 2
        runs = []
        for _ in range(args.repeats):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            if r.returncode:
                print(r.stderr, file=sys.stderr)
                return 2
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    if any(run["stats"]["disk_hits"] != 1 for run in runs):
        print(f"bench_first_plan: a run did not load the plan from disk: {runs}", file=sys.stderr)
        return 2
    import pycudnn

    ms = [run["seconds"] * 1e3 for run in runs]
    report = {
        "benchmark": "new process to its first plan from a plan-cache directory",
        "measures": (
            "import, graph, plan loaded from disk, one execution and a sync (GPU)"
            if on_gpu
            else "CPU only: import, graph, plan loaded from disk for the H100 properties; "
            "EXCLUDES the execution and the GPU's context and handle creation"
        ),
        "gpu": [d["name"] for d in st.devices] or None,
        "driver": st.driver_version_text,
        "cudnn": pycudnn.version(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "bytecode_cached": Path(
            cache_from_source(str(ROOT / "pycudnn" / "_bindings.py"))
        ).is_file(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "median_ms": statistics.median(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "target_ms": 100,
        "phases_median_ms": {
            k: statistics.median(run["phases"][k] * 1e3 for run in runs) for k in runs[0]["phases"]
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_first_plan.json").write_text(json.dumps(report, indent=2) + "\n")
    for phase, value in report["phases_median_ms"].items():
        print(f"  {phase:50s} {value:7.1f} ms (median)")
    print(
        f"{report['measures']}: median {report['median_ms']:.1f} ms, min {report['min_ms']:.1f} ms"
    )
    if not report["bytecode_cached"]:
        print("pycudnn had no compiled bytecode (.pyc): every run compiled its sources first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
