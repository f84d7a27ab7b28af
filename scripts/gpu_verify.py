#!/usr/bin/env python3
"""Everything a GPU run must check, in one command, within a time budget, with every log kept.

    python scripts/gpu_verify.py [--out DIR] [--budget SECONDS] [--only STEP,...] [--skip STEP,...]

Runs from a checkout (no install: the repository root is put on ``PYTHONPATH``), in this order,
most important first, so that a short lease of a GPU still gives the results that matter:

    info        python -m pycudnn info --json, python -m pycutensor info --json, nvidia-smi
    gpu-tier    pytest -m gpu (junit XML kept)
    examples    every script in examples/, each against NumPy
    smoke       python -m pycudnn smoke --require-gpu, python -m pycutensor smoke --require-gpu
    verify      python -m pycudnn verify --quick --no-known-bad (is engine 70 still wrong?)
    deviceprops python -m pycudnn deviceprops --save DIR/deviceprops.json
    bench       scripts/bench_cudnn.py, bench_cutensor.py --quick, bench_first_plan.py
    memcheck    compute-sanitizer --tool memcheck on the legacy-ops and graph GPU tests

Each step gets a timeout (its own, capped by what is left of ``--budget``); a step that needs a
GPU where none is usable is recorded as skipped with the driver's reason. Writes ``DIR/<step>.log``
for every command, ``DIR/summary.json`` (machine; Python, cuDNN and cuTENSOR versions; each step's
status, time and the last lines of its output) and ``DIR/summary.md`` (a table to paste into
docs/gpu-verification.md, headed by the GPU and the library versions).
Exit status 0 when every step ran and passed, 1 when one failed, 3 when none failed but some
could not run (no GPU, no compute-sanitizer): the exit codes of ``python -m pycudnn``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PYTEST = "-m pytest -q -p no:cacheprovider"
MEMCHECK = "compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99"
# Under memcheck the tier runs many times slower: the legacy operations and the graph executions,
# where a wrong pointer or extent would show.
MEMCHECK_TESTS = ("tests/test_ops_gpu.py", "tests/test_graph_gpu.py")


@dataclasses.dataclass
class Step:
    name: str
    timeout: int  # seconds, before the budget caps it
    commands: list[list[str]]
    needs_gpu: bool = True
    tool: str | None = None  # an executable that must be on PATH


def steps(out: Path) -> list[Step]:
    examples = sorted(p for p in (ROOT / "examples").glob("*.py"))
    bench = out / "bench"
    return [
        Step(
            "info",
            60,
            [
                [PY, "-m", "pycudnn", "info", "--json"],
                [PY, "-m", "pycutensor", "info", "--json"],
                *([["nvidia-smi"]] if shutil.which("nvidia-smi") else []),
            ],
            needs_gpu=False,
        ),
        Step(
            "gpu-tier",
            300,
            [[PY, *PYTEST.split(), "-m", "gpu", "-ra", "--junitxml", str(out / "gpu-tier.xml")]],
        ),
        Step("examples", 240, [[PY, str(p)] for p in examples]),
        Step(
            "smoke",
            120,
            [
                [PY, "-m", "pycudnn", "smoke", "--require-gpu"],
                [PY, "-m", "pycutensor", "smoke", "--require-gpu"],
            ],
        ),
        Step(
            "verify",
            240,
            [[PY, "-m", "pycudnn", "verify", "--quick", "--no-known-bad", "--no-progress"]],
        ),
        Step(
            "deviceprops",
            60,
            [[PY, "-m", "pycudnn", "deviceprops", "--save", str(out / "deviceprops.json")]],
        ),
        Step(
            "bench",
            300,
            [
                [PY, "scripts/bench_cudnn.py", "--out", str(bench)],
                # bench_cutensor.py's --out and --plot name files (bench_cudnn.py's, a folder)
                [
                    PY,
                    "scripts/bench_cutensor.py",
                    "--quick",
                    "--out",
                    str(bench / "bench_cutensor.json"),
                    "--plot",
                    str(bench / "bench_cutensor.png"),
                ],
                [PY, "scripts/bench_first_plan.py", "--repeats", "5", "--out", str(bench)],
            ],
        ),
        Step(
            "memcheck",
            600,
            [[*MEMCHECK.split(), PY, *PYTEST.split(), "-m", "gpu", "-x", *MEMCHECK_TESTS]],
            tool="compute-sanitizer",
        ),
    ]


def gpu_reason() -> str | None:
    """None when a CUDA GPU is usable, else the driver's reason (pycudnn's own probe)."""
    sys.path.insert(0, str(ROOT))
    from _nvbind.cuda import driver_status

    st = driver_status()
    return None if st.usable else st.reason


def library_versions(env: dict[str, str]) -> dict[str, str]:
    """The cuDNN and cuTENSOR versions the steps load (each package's ``info --json``, run as the
    steps run), or why there is none."""
    versions = {}
    for package, library in (("pycudnn", "cudnn"), ("pycutensor", "cutensor")):
        try:
            proc = subprocess.run(
                [PY, "-m", package, "info", "--json"], cwd=ROOT, env=env, capture_output=True,
                text=True, timeout=60, check=False,
            )  # fmt: skip
            report = json.loads(proc.stdout)
            versions[library] = str(
                report.get(f"{library}_version")
                or f"not loadable: {report.get(f'{library}_error', proc.stderr.strip())}"
            )
        except (subprocess.TimeoutExpired, OSError, ValueError, AttributeError) as exc:
            versions[library] = f"unknown ({type(exc).__name__}: {exc})"
    return versions


def run_step(step: Step, out: Path, deadline: float, env: dict[str, str]) -> dict[str, object]:
    started = time.monotonic()
    record: dict[str, object] = {"step": step.name, "commands": []}
    failed = False
    for i, argv in enumerate(step.commands):
        left = deadline - time.monotonic()
        if left < 5:
            record["commands"].append({"argv": argv, "status": "not run: budget spent"})  # type: ignore[attr-defined]
            failed = True
            continue
        log = out / f"{step.name}{'' if len(step.commands) == 1 else f'-{i}'}.log"
        t0 = time.monotonic()
        try:
            proc = subprocess.run(
                argv, cwd=ROOT, env=env, capture_output=True, text=True,
                timeout=min(step.timeout, left), check=False,
            )  # fmt: skip
            text, rc = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            text = _text(exc.stdout) + _text(exc.stderr) + "\n[timed out]"
            rc = 124
        except FileNotFoundError as exc:
            text, rc = str(exc), 127
        log.write_text(f"$ {' '.join(argv)}\n{text}", encoding="utf-8")
        failed |= rc != 0
        record["commands"].append({  # type: ignore[attr-defined]
            "argv": argv, "rc": rc, "seconds": round(time.monotonic() - t0, 1),
            "log": log.name, "tail": text.strip().splitlines()[-5:],
        })  # fmt: skip
    record["status"] = "failed" if failed else "passed"
    record["seconds"] = round(time.monotonic() - started, 1)
    return record


def _text(data: object) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data if isinstance(data, str) else ""


def markdown(summary: dict[str, object]) -> str:
    lines = [
        f"gpu_verify.py, {summary['date']}, {summary['gpu']}, cuDNN {summary['cudnn']}, "
        f"cuTENSOR {summary['cutensor']}",
        "",
        "| step | status | seconds | last line |",
        "|---|---|---|---|",
    ]
    for rec in summary["steps"]:  # type: ignore[attr-defined]
        tails = [c.get("tail", [c.get("status", "")]) for c in rec.get("commands", [])]
        last = next((t[-1] for t in reversed(tails) if t), rec.get("reason", ""))
        lines.append(f"| {rec['step']} | {rec['status']} | {rec.get('seconds', '')} | {last} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "gpu-verify")
    ap.add_argument("--budget", type=float, default=570.0, help="seconds for all steps together")
    ap.add_argument("--only", default="", help="comma-separated steps to run")
    ap.add_argument("--skip", default="", help="comma-separated steps to leave out")
    args = ap.parse_args()
    if not math.isfinite(args.budget) or args.budget <= 0:  # nan would turn the budget off
        ap.error(f"--budget must be a positive number of seconds, got {args.budget}")
    out: Path = args.out
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    all_steps = steps(out)
    names = {s.name for s in all_steps}
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}
    unknown = (only | skip) - names
    if unknown:
        ap.error(f"unknown step(s) {sorted(unknown)}; the steps are {[s.name for s in all_steps]}")
    if not [s for s in all_steps if (not only or s.name in only) and s.name not in skip]:
        ap.error("--only and --skip leave no step to run")  # a run of nothing is no pass
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    deadline = time.monotonic() + args.budget
    reason = gpu_reason()
    summary: dict[str, object] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": "no GPU usable: " + reason if reason else _gpu_name(),
        "python": sys.version.split()[0],
        **library_versions(env),
        "steps": [],
    }
    for step in all_steps:
        if (only and step.name not in only) or step.name in skip:
            continue
        if step.needs_gpu and reason:
            rec: dict[str, object] = {
                "step": step.name,
                "status": "skipped",
                "reason": f"needs a GPU: {reason}",
            }
        elif step.tool and shutil.which(step.tool) is None:
            rec = {"step": step.name, "status": "skipped", "reason": f"{step.tool} is not on PATH"}
        else:
            rec = run_step(step, out, deadline, env)
        summary["steps"].append(rec)  # type: ignore[attr-defined]
        print(f"{step.name:12} {rec['status']:8} {rec.get('seconds', '')} {rec.get('reason', '')}")
        (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (out / "summary.md").write_text(markdown(summary), encoding="utf-8")
    print(f"logs and summary in {out}")
    statuses = {r["status"] for r in summary["steps"]}  # type: ignore[attr-defined]
    return 1 if "failed" in statuses else 3 if "skipped" in statuses else 0


def _gpu_name() -> str:
    from _nvbind.cuda import driver_status

    st = driver_status()
    names = [d.get("name", "?") for d in st.devices]
    return f"{', '.join(names)} (driver {st.driver_version})"


if __name__ == "__main__":
    sys.exit(main())
