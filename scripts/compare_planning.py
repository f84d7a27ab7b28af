#!/usr/bin/env python3
"""Warm planning times of pycudnn (two checkouts, or this one) and cudnn-frontend, sample by sample.

    python scripts/compare_planning.py [--before DIR] [--frontend-python PATH]
        [--graphs conv_genstats,rope_sdpa|all] [--samples 41] [--what build,heuristics]

On a shared machine the load moves between two runs of ``bench_planning.py`` more than a change
of the code does. Here each library plans in a worker process of its own, started once and warmed
up, and the driver asks them in turn for one timed plan at a time (the order rotating), so that
every library meets the same moments of the machine. ``--before`` is another checkout (its
directory is put first on the worker's ``PYTHONPATH``), compared with this one ("after");
without it this checkout alone ("pycudnn") meets the frontend, the interleaved counterpart of
``bench_planning.py``'s warm table (``--graphs all``: every graph of it); the frontend
worker runs the graphs of ``bench_planning.py`` through ``--frontend-python``. What is timed is
what ``bench_planning.py`` times: describe + build (heuristics A then FALLBACK, no plan cache), or
describe + the heuristics query of mode A. Prints the median of ``--samples`` per library and
graph, ms, with the ratio to the frontend and the load average before and after. Nothing here is
a test of speed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# A pycudnn worker: one line in ("build NAME" or "heuristics NAME"), one line out (ms, engine).
PYCUDNN_WORKER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import bench_planning as bp
import pycudnn
print(pycudnn.__file__, flush=True)
props = pycudnn.DeviceProperties.load(bp.PROPS)

def run(what, name):
    g = pycudnn.Graph(name)
    bp.GRAPHS[name](g)
    if what == "build":
        p = g.build(device_properties=props, cache=False)
        return p, p.engine_id
    r = g.heuristics("a", device_properties=props)
    return r, (r.configs[0].engine_id if r.configs else None)

last = None
for line in sys.stdin:
    what, name = line.split()
    t0 = time.perf_counter()
    last, engine = run(what, name)  # the previous result is released inside, as bench does
    print(f"{(time.perf_counter() - t0) * 1e3} {engine}", flush=True)
"""

# The frontend worker: the graphs of bench_planning.py's frontend child, the same protocol.
FRONTEND_WORKER = r"""
import json, sys, textwrap, time
src = open(sys.argv[1]).read()
body = src[src.index("FRONTEND_CHILD = textwrap.dedent("):].split("r'''", 1)[1].split("'''", 1)[0]
head = textwrap.dedent(body).split("def build(name):")[0]
sys.argv = ["worker", json.dumps({"graphs": [], "repeats": 1, "props": sys.argv[2], "cold": None})]
ns = {}
exec(head, ns)
cudnn = ns["cudnn"]

def run(what, name):
    g = ns["GRAPHS"][name]()
    if what == "build":
        g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        return g, int(g.get_engine_and_knobs_at_index(getattr(g, "_plan_index", 0))[0])
    g.validate(); g.build_operation_graph(); g.create_execution_plans([cudnn.heur_mode.A])
    return g, int(g.get_engine_and_knobs_at_index(0)[0]) if g.get_execution_plan_count() else None

last = None
for line in sys.stdin:
    what, name = line.split()
    t0 = time.perf_counter()
    try:
        last, engine = run(what, name)
    except NotImplementedError:
        print("absent None", flush=True)
        continue
    print(f"{(time.perf_counter() - t0) * 1e3} {engine}", flush=True)
"""


class Worker:
    """A library planning in its own process, asked for one timed plan at a time."""

    def __init__(self, argv: list[str], env: dict[str, str], *, says_where: bool = False) -> None:
        # Started in this directory: ``python -c`` puts the working directory first on the
        # path, where a checkout's root would win over the PYTHONPATH given.
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=HERE
        )
        assert self.proc.stdout is not None
        #: the pycudnn package the worker imported (checked against the checkout asked for)
        self.where = self.proc.stdout.readline().strip() if says_where else ""

    def ask(self, what: str, name: str) -> tuple[float | None, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{what} {name}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if not line:
            raise RuntimeError(f"a worker ended ({self.proc.poll()})")
        return (None if line[0] == "absent" else float(line[0])), line[1]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(60)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    import bench_planning as bench

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="another checkout, to compare with this one")
    ap.add_argument("--frontend-python", help="an interpreter that can import cudnn")
    ap.add_argument("--graphs", default="conv_fprop_bias_relu,conv_genstats")
    ap.add_argument("--samples", type=int, default=41)
    ap.add_argument("--what", default="build,heuristics")
    ap.add_argument("--json", type=Path, help="write every sample here")
    args = ap.parse_args(argv)
    names = list(bench.GRAPHS) if args.graphs == "all" else [n for n in args.graphs.split(",") if n]
    whats = [w for w in args.what.split(",") if w]
    if any(n not in bench.GRAPHS for n in names) or any(
        w not in ("build", "heuristics") for w in whats
    ):
        ap.error("unknown graph or --what (bench_planning.py --list names the graphs)")
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    checkouts = (
        (("before", args.before.resolve()), ("after", ROOT))
        if args.before
        else (("pycudnn", ROOT),)
    )
    workers = {
        side: Worker(
            [sys.executable, "-c", PYCUDNN_WORKER, str(HERE)],
            {**base_env, "PYTHONPATH": str(path)},
            says_where=True,
        )
        for side, path in checkouts
    }
    for side, path in checkouts:
        if not workers[side].where.startswith(str(path)):
            ap.error(f"the {side} worker imported {workers[side].where}, not {path}'s pycudnn")
    if args.frontend_python:
        workers["frontend"] = Worker(
            [
                args.frontend_python,
                "-c",
                FRONTEND_WORKER,
                str(HERE / "bench_planning.py"),
                str(bench.PROPS),
            ],
            base_env,
        )
    load = [os.getloadavg()[0]]
    samples: dict[str, dict[str, list[float]]] = {}
    engines: dict[str, dict[str, str]] = {}
    try:
        for what in whats:
            for name in names:
                key = f"{what} {name}"
                samples[key] = {side: [] for side in workers}
                engines[key] = {side: w.ask(what, name)[1] for side, w in workers.items()}
                sides = list(workers)
                for i in range(args.samples):
                    for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
                        ms, _ = workers[side].ask(what, name)
                        if ms is not None:
                            samples[key][side].append(ms)
    finally:
        for w in workers.values():
            w.close()
    load.append(os.getloadavg()[0])
    print(f"load average {load[0]:.2f} before, {load[1]:.2f} after; medians of {args.samples}, ms")
    print("| what | graph | " + " | ".join(workers) + " | engines |")
    print("|---" * (len(workers) + 3) + "|")
    for key, by_side in samples.items():
        fe = statistics.median(by_side["frontend"]) if by_side.get("frontend") else None
        cells = []
        for side in workers:
            if not by_side[side]:
                cells.append("absent")
                continue
            ms = statistics.median(by_side[side])
            ratio = f" ({ms / fe:.2f}x)" if fe and side != "frontend" else ""
            cells.append(f"{ms:.3g}{ratio}")
        same = "same" if len(set(engines[key].values())) == 1 else json.dumps(engines[key])
        print(f"| {key.replace(' ', ' | ')} | " + " | ".join(cells) + f" | {same} |")
    if args.json:
        args.json.write_text(
            json.dumps({"load": load, "samples": samples, "engines": engines}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
