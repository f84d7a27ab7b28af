#!/usr/bin/env python3
"""Where a plan's time goes: cuDNN's own time against pycudnn's Python, per graph.

    python scripts/profile_planning.py [--graphs conv_fprop_bias_relu,layernorm_fwd]
        [--repeats 30] [--cprofile 25] [--first-plan [--runs 5]] [--json PATH]

For each graph of ``scripts/bench_planning.py`` (the same descriptions, deviceless plans for the
committed H100 properties; needs ``libcuda.so.1``), after one warm-up:

- **build**: describe + build (no plan cache), median and minimum of ``--repeats``; with
  ``--heuristics``, describe + the heuristics query of mode A instead (``Graph.heuristics``, the
  heuristics column of ``bench_planning.py``);
- **cuDNN**: the time spent inside libcudnn's functions during those builds, per function with its
  call count: every C function pycudnn bound is wrapped in a timer for these builds only (the
  timer costs about 0.2 µs a call, charged to cuDNN), then unwrapped;
- **Python**: build less cuDNN, per build (the median of the differences), and by phase:
  describing the graph, lowering it to descriptors, the heuristics queries, making the plan.

``--cprofile N`` adds cProfile's top N functions by own time over the same builds (the time inside
libcudnn shows as ``inside_libcudnn``; cProfile slows Python about threefold: read proportions).
``--first-plan`` times a new process to its first plan by phase (importing pycudnn, importing the
graph layer (which imports no NumPy), loading libcudnn, describing, building), median of ``--runs``, and lists the
imports that cost most (``python -X importtime``). Nothing here is a test of speed; it says where
to look. ``scripts/bench_planning.py`` compares the totals with cudnn-frontend.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_planning as bench  # the graphs and the child environment

DEFAULT_GRAPHS = ("conv_fprop_bias_relu", "conv_wgrad", "layernorm_fwd", "batchnorm_train")


def _timed_library(acc: dict[str, list[float]]) -> tuple[Callable[[], None], Callable[[], None]]:
    """Wrap every bound libcudnn function in a timer adding to ``acc[name] = [calls, seconds]``;
    returns (install, restore): functions that put the timed ones in place and take them out.
    Both tables are wrapped: the functions with argument types and those called without
    (``NativeLibrary.unconverted_function``), counted under one name."""
    from pycudnn._lib import LIB

    tables = (LIB._bound, LIB._unconverted)
    originals = [dict(table) for table in tables]

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def inside_libcudnn(*args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                entry = acc.setdefault(name, [0, 0.0])
                entry[0] += 1
                entry[1] += time.perf_counter() - t0

        return inside_libcudnn

    wrapped = [{k: wrap(k, f) for k, f in original.items()} for original in originals]

    def install() -> None:
        for table, timed in zip(tables, wrapped, strict=True):
            table.update(timed)

    def restore() -> None:
        for table, original in zip(tables, originals, strict=True):
            table.update(original)

    return install, restore


# The phases of a build, by the function that does each: (label, module, function name). The
# graph's lowering runs inside the first heuristics query, and is not counted again there.
PHASES = (
    ("lowering", "pycudnn.opgraph.descriptors", "build_descriptors"),
    ("heuristics", "pycudnn.plan.heuristics", "_run_heuristics"),
    ("plan", "pycudnn.plan.building", "_finalize_plan"),
)


def _phase_timers(
    acc: dict[str, list[float]], phases: dict[str, list[float]]
) -> list[tuple[Any, str, Any]]:
    """Wrap each function of PHASES so that ``phases[label] += [seconds, seconds in cuDNN]``
    (cuDNN's from ``acc``); returns what to restore. A phase inside another is taken out of it."""
    import importlib

    stack: list[list[float]] = []  # [own seconds, own cuDNN seconds] of the phases in progress
    restore = []
    for label, module_name, fn_name in PHASES:
        module = importlib.import_module(module_name)
        real = getattr(module, fn_name)

        def timed(*a: Any, _real: Any = real, _label: str = label, **k: Any) -> Any:
            c0, t0 = sum(v[1] for v in acc.values()), time.perf_counter()
            stack.append([0.0, 0.0])
            try:
                return _real(*a, **k)
            finally:
                inner = stack.pop()
                dt = time.perf_counter() - t0
                dc = sum(v[1] for v in acc.values()) - c0
                entry = phases.setdefault(_label, [0.0, 0.0])
                entry[0] += dt - inner[0]
                entry[1] += dc - inner[1]
                if stack:
                    stack[-1][0] += dt
                    stack[-1][1] += dc

        setattr(module, fn_name, timed)
        restore.append((module, fn_name, real))
    return restore


def profile_graph(name: str, repeats: int, top: int, *, query: bool = False) -> dict[str, Any]:
    """The build, cuDNN and Python times of ``name`` (see the module), and cProfile's top;
    with ``query``, of describing it and querying heuristic mode A instead of building."""
    import pycudnn
    from pycudnn import DeviceProperties

    props = DeviceProperties.load(bench.PROPS)
    describe_s: list[float] = []

    def build() -> Any:
        t0 = time.perf_counter()
        g = pycudnn.Graph(name)
        bench.GRAPHS[name](g)
        describe_s.append(time.perf_counter() - t0)
        if query:  # what bench_planning.py's heuristics column times
            g.heuristics("a", device_properties=props)
            return g
        return g.build(device_properties=props, cache=False)

    build().close()  # the warm-up: every function bound, every table filled
    acc: dict[str, list[float]] = {}
    phases: dict[str, list[float]] = {}
    install, restore_library = _timed_library(acc)
    plain, totals, c_times = [], [], []
    profile_text = ""
    try:
        # Plain and timed builds alternate, so that both meet the same moments of a busy machine.
        for _ in range(repeats):
            plain.extend(bench._timed(build, 1))
            install()
            restore = _phase_timers(acc, phases)
            before = sum(v[1] for v in acc.values())
            t0 = time.perf_counter()
            build().close()
            totals.append(time.perf_counter() - t0)
            c_times.append(sum(v[1] for v in acc.values()) - before)
            for module, fn_name, real in restore:
                setattr(module, fn_name, real)
            restore_library()
        if top:
            install()
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(repeats):
                build().close()
            prof.disable()
            out = _Capture()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)  # type: ignore[arg-type]
            profile_text = out.text()
    finally:
        restore_library()
    runs = repeats * (2 if top else 1)
    return {
        "build_ms": bench._median_ms(plain),
        "build_min_ms": bench._ms(min(plain)),
        "cudnn_ms": bench._median_ms(c_times),
        "python_ms": bench._median_ms([t - c for t, c in zip(totals, c_times, strict=True)]),
        "cudnn_calls": {
            k: {
                "calls_per_build": round(v[0] / runs, 1),
                "ms_per_build": round(v[1] / runs * 1e3, 3),
            }
            for k, v in sorted(acc.items(), key=lambda kv: -kv[1][1])
        },
        "cprofile": profile_text,
        # Per timed build: each phase's time and its Python (less cuDNN's), ms; describing the
        # graph is all Python.
        "phases_ms": {
            "describe": {
                "total": bench._median_ms(describe_s),
                "python": bench._median_ms(describe_s),
            },
            **{
                k: {
                    "total": round(t / repeats * 1e3, 3),
                    "python": round((t - c) / repeats * 1e3, 3),
                }
                for k, (t, c) in phases.items()
            },
        },
    }


class _Capture:
    """A stream pstats can print to."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return len(s)

    def text(self) -> str:
        return "".join(self.parts)


# A new process to its first plan, timed by phase from before the first import. argv: graph, the
# directory of bench_planning.py.
FIRST_PLAN = r"""
import sys, time, json
t = [time.perf_counter()]
import pycudnn
from pycudnn import DeviceProperties
t.append(time.perf_counter())
import pycudnn.opgraph  # the graph layer (NumPy is imported only by what needs it)
t.append(time.perf_counter())
import pycudnn.plan
t.append(time.perf_counter())
from pycudnn._lib import LIB
LIB.version  # locate and load libcudnn (pycudnn.version() would import the report modules too)
t.append(time.perf_counter())
sys.path.insert(0, sys.argv[2])
import planning_graphs as bp  # the graphs alone: the benchmark's own imports are not pycudnn's
props = DeviceProperties.load(bp.PROPS)
g = pycudnn.Graph(sys.argv[1])
t0 = time.perf_counter()
bp.GRAPHS[sys.argv[1]](g)
t.append(time.perf_counter())
g.build(device_properties=props, cache=False)
t.append(time.perf_counter())
names = ["import pycudnn", "import the graph layer", "import pycudnn.plan",
         "load libcudnn", "describe", "first build"]
phases = {n: (b - a) * 1e3 for n, a, b in zip(names, t, t[1:])}
phases["describe"] = (t[5] - t0) * 1e3  # without importing the graphs and the properties
phases["total"] = (t[-1] - t[0]) * 1e3
print(json.dumps(phases))
"""


def first_plan(name: str, runs: int) -> dict[str, Any]:
    """A new process to its first plan of ``name``: the median of each phase over ``runs``, and
    the imports that cost most in one more run (``-X importtime``, cumulative)."""
    env = bench._child_env()
    argv = [sys.executable, "-c", FIRST_PLAN, name, str(Path(bench.__file__).resolve().parent)]
    bench._run_child(argv, env)  # writes the bytecode, outside the figures
    samples = [bench._run_child(argv, env) for _ in range(runs)]
    good = [s for s in samples if "error" not in s]
    if not good:
        return {"error": samples[0]["error"]}
    phases = {k: round(statistics.median(s[k] for s in good), 1) for k in good[0]}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    imports = []
    for line in proc.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            depth = (len(parts[2]) - len(parts[2].lstrip())) // 2
            imports.append((int(parts[1]) / 1e3, depth, parts[2].strip()))
    shallow = sorted((i for i in imports if i[1] <= 2), reverse=True)[:15]
    return {
        "phases_ms": phases,
        "runs": len(good),
        "top_imports_ms": [{"module": m, "cumulative_ms": round(ms, 1)} for ms, _, m in shallow],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default=",".join(DEFAULT_GRAPHS))
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--cprofile", type=int, default=0, metavar="N", help="cProfile's top N")
    ap.add_argument("--first-plan", action="store_true", help="a new process, by phase")
    ap.add_argument("--runs", type=int, default=5, help="new processes for --first-plan")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument(
        "--heuristics",
        action="store_true",
        help="describe + heuristics query (mode A) instead of describe + build",
    )
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.graphs.split(",") if n.strip()]
    unknown = [n for n in names if n not in bench.GRAPHS]
    if unknown:
        ap.error(f"unknown graph(s) {', '.join(unknown)}; scripts/bench_planning.py --list")
    if args.repeats < 1 or args.runs < 1:
        ap.error("--repeats and --runs must be at least 1")
    result: dict[str, Any] = {"load_average": os.getloadavg()[0], "graphs": {}}
    print(f"{'graph':24} {'build ms':>9} {'cuDNN ms':>9} {'Python ms':>10}  cuDNN calls per build")
    for name in names:
        entry = profile_graph(name, args.repeats, args.cprofile, query=args.heuristics)
        result["graphs"][name] = entry
        calls = ", ".join(
            f"{k.removeprefix('cudnnBackend')} {v['calls_per_build']:g}"
            for k, v in entry["cudnn_calls"].items()
        )
        print(
            f"{name:24} {entry['build_ms']:9.2f} {entry['cudnn_ms']:9.2f} "
            f"{entry['python_ms']:10.2f}  {calls}"
        )
        print(
            f"{'':24} Python by phase: "
            + ", ".join(f"{k} {v['python']:.2f}" for k, v in entry["phases_ms"].items())
        )
        if entry["cprofile"]:
            print(entry["cprofile"])
    if args.first_plan:
        fp = first_plan(names[0], args.runs)
        result["first_plan"] = {"graph": names[0], **fp}
        if "error" in fp:
            print(f"first plan: {fp['error']}")
        else:
            print(f"\na new process to its first plan of {names[0]} (median of {fp['runs']}, ms):")
            for phase, ms in fp["phases_ms"].items():
                print(f"  {phase:32} {ms:8.1f}")
            print("the costliest imports (cumulative, one run with -X importtime):")
            for imp in fp["top_imports_ms"]:
                print(f"  {imp['module']:40} {imp['cumulative_ms']:8.1f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
