"""``python -m pycudnn verify``: every engine of the standard suite, checked on this GPU.

For each graph of :mod:`.suite`, every execution plan that finalizes (heuristics A and FALLBACK;
engines in the known-bad table are left out and listed, unless ``--no-known-bad``) is executed on
seeded inputs and compared with the NumPy reference. The exit status is 1 when any plan is wrong
or fails to execute, 3 when no GPU is usable (nothing could run), 2 when ``--filter`` matches no
case, else 0. ``--json`` prints the whole report as one JSON document (``--list`` too);
``--write-known-bad FILE`` adds an entry for every wrong engine to a table that
``PYCUDNN_KNOWN_BAD_ENGINES`` can name.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from _nvbind.cli import add_verify_arguments, progress_bar
from _nvbind.cuda import require_cuda_core
from _nvbind.files import check_write_target
from _nvbind.report import (
    EXIT_USAGE,
    devices_report,
    print_json,
    report_error,
    select_verify_cases,
)

from .. import known_bad
from .._info import version
from ..errors import CudnnError
from ..plan.report import GraphNotSupportedError
from .entries import entry_for, write_entries
from .run import verify_plans
from .suite import Case, cases

__all__ = ["add_arguments", "run", "run_suite"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the ``verify`` subcommand."""
    add_verify_arguments(
        parser,
        quick="the CI subset (engine-70 shapes + one graph per family)",
        listing="list the suite's cases and exit",
    )
    parser.add_argument(
        "--no-known-bad",
        action="store_true",
        help="also run the engines the known-bad table excludes (is a newer cuDNN fixed?)",
    )
    parser.add_argument(
        "--write-known-bad", metavar="FILE", default="", help="add wrong engines to this table file"
    )


def _run_case(case: Case, *, allow_known_bad: bool, seed: int) -> dict[str, Any]:

    entry: dict[str, Any] = {"name": case.name, "family": case.family, "plans": [], "excluded": []}
    try:
        graph = case.build()
    except (NotImplementedError, ValueError) as exc:  # e.g. the SDPA backward on cuDNN 9.10.0
        entry["status"], entry["error"] = "unsupported", str(exc).splitlines()[0]
        return entry
    try:
        plans = graph.build_all(allow_known_bad=allow_known_bad)
    except GraphNotSupportedError as exc:
        report = exc.report
        entry["status"] = "no plan"
        entry["error"] = exc.message.splitlines()[0]
        if report is not None:
            entry["excluded"] = sorted({e.describe() for e in report.known_bad})
            entry["advice"] = list(report.advice)
        return entry
    except CudnnError as exc:
        entry["status"], entry["error"] = "error", f"{exc.status_name}: {exc.message}"
        return entry
    report = plans[0].report
    if report is not None:
        entry["excluded"] = sorted({e.describe() for e in report.known_bad})
    results = verify_plans(plans, seed=seed)
    for p in plans:
        p.close()
    entry["plans"] = [r.to_dict() for r in results]
    entry["_results"] = results
    wrong = [r for r in results if r.status in ("fail", "error")]
    entry["status"] = "wrong" if wrong else "ok"
    return entry


def run_suite(
    *,
    quick: bool = False,
    allow_known_bad: bool = False,
    seed: int = 0,
    name_filter: str = "",
    progress: bool = True,
) -> dict[str, Any]:
    """Verify every plan of every case; the report as plain data (``passed`` says it all)."""

    selected = [c for c in cases(quick) if name_filter in c.name]
    bar = progress_bar(len(selected), progress)
    start = time.perf_counter()
    out = []
    for case in selected:
        out.append(_run_case(case, allow_known_bad=allow_known_bad, seed=seed))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    runs = sum(len(c["plans"]) for c in out)
    wrong = sum(1 for c in out for p in c["plans"] if p["status"] in ("fail", "error"))
    # Counted apart, never as right: runs without a reference to compare with, and graphs
    # nothing ran for (no engine on this GPU, or all of them known bad). A suite that compared
    # nothing has not passed: a CI job must not go green on it.
    skipped = sum(1 for c in out for p in c["plans"] if p["status"] == "skipped")
    no_plan = sum(1 for c in out if c["status"] in ("no plan", "unsupported"))
    checked = runs - skipped
    return {
        "cudnn": version(),
        **devices_report(),  # what the numbers were measured on (the cases run on device 0)
        "quick": quick,
        "known_bad_table": not allow_known_bad,
        "seed": seed,
        "cases": out,
        "plan_runs": runs,
        "checked": checked,
        "skipped": skipped,
        "graphs_without_plan": no_plan,
        "wrong": wrong,
        "seconds": round(time.perf_counter() - start, 2),
        "passed": wrong == 0 and checked > 0 and not any(c["status"] == "error" for c in out),
    }


def _line(case: dict[str, Any]) -> str:
    plans = case["plans"]
    if case["status"] in ("no plan", "error", "unsupported"):
        text = f"{case['name']:<40} {case['status'].upper()}: {case.get('error', '')}"
    else:
        ok = sum(1 for p in plans if p["status"] == "pass")
        bad = [p for p in plans if p["status"] in ("fail", "error")]
        worst = max(
            (p["max_rel_error"] for p in plans if isinstance(p["max_rel_error"], float)),
            default=0.0,
        )
        text = f"{case['name']:<40} {ok:>3} ok"
        if bad:
            text += ", WRONG: " + "; ".join(
                f"engine {p['engine_id']} rel {p['max_rel_error']} (tol {p['tolerance']:.2g})"
                if p["status"] == "fail"
                else f"engine {p['engine_id']} error {p['error'][:60]}"
                for p in bad
            )
        else:
            text += f" (worst rel {worst:.2g})"
    for e in case["excluded"]:
        text += f"\n{'':<40} excluded as known bad: {e.split(' (seen')[0]}"
    return text


def _write_known_bad(path: str, report: dict[str, Any]) -> str:
    """Add an entry for each wrong engine of ``report`` to the table at ``path``; returns what
    to say on stderr ("error: ..." when the table could not be written). A graph whose wrong
    engine has no single operation to blame (an SDPA or norm graph) is noted, not entered."""
    device, notes, entries = _device_name(), [], []
    for case in report["cases"]:
        for r in case.get("_results", []):
            if r.status != "fail":
                continue
            graph = next(c for c in cases() if c.name == case["name"]).build()
            try:
                entries.append(entry_for(r, graph, cudnn_version=report["cudnn"], device=device,
                                         date=time.strftime("%Y-%m-%d")))  # fmt: skip
            except ValueError as exc:
                notes.append(f"not entered: engine {r.engine_id} of {case['name']}: {exc}")
    for note in notes:
        print(note, file=sys.stderr)
    try:
        added = write_entries(path, entries)
    except (OSError, ValueError) as exc:
        message = f"error: --write-known-bad: {exc}"
        print(message, file=sys.stderr)
        return message
    text = f"added {added} known-bad entr{'y' if added == 1 else 'ies'} to {path}"
    print(text, file=sys.stderr)
    return text


def _verdict(report: dict[str, Any]) -> str:
    if report["wrong"]:
        return f"{report['wrong']} WRONG"
    if report["checked"] == 0:
        return "NOTHING COMPARED (no plan ran against a reference)"
    return "all right" if report["passed"] else "ERRORS (see above)"


def _on(report: dict[str, Any]) -> str:
    """The device the report's cases ran on (device 0), for its last line."""
    devices = report.get("devices") or []
    return str(devices[0]["name"]) if devices else "no GPU"


def _device_name() -> str:

    try:
        return str(require_cuda_core().Device(0).name)
    except Exception:  # pragma: no cover - only for the entry's text
        return ""


def run(args: argparse.Namespace) -> int:
    """The ``verify`` subcommand; returns the exit status."""

    selected = select_verify_cases(
        args,
        cases(args.quick),
        "pycudnn",
        listed=lambda c: {"name": c.name, "family": c.family, "quick": c.quick},
        line=lambda c: f"{c.name:<40} {c.family:<12} {'quick' if c.quick else ''}".rstrip(),
        needs="verify executes plans on a GPU",
    )
    if isinstance(selected, int):
        return selected
    if args.write_known_bad:  # refused now, not after the whole suite ran
        try:
            check_write_target(args.write_known_bad, what="known-bad engine table")
            folder = os.path.dirname(os.path.abspath(args.write_known_bad))
            if not os.path.isdir(folder):
                raise FileNotFoundError(f"the directory {folder!r} does not exist")
            if os.path.exists(args.write_known_bad):
                known_bad.load_table(args.write_known_bad)
        except (OSError, ValueError) as exc:
            return report_error(args.json, "verify", EXIT_USAGE, f"--write-known-bad: {exc}")
    report = run_suite(
        quick=args.quick,
        allow_known_bad=args.no_known_bad,
        seed=args.seed,
        name_filter=args.filter,
        progress=not args.no_progress and not args.json,
    )
    written = _write_known_bad(args.write_known_bad, report) if args.write_known_bad else ""
    for case in report["cases"]:
        case.pop("_results", None)
    code = 0 if report["passed"] else 1
    if written.startswith("error"):  # the report is printed all the same
        code = max(code, 1)
        report["write_known_bad_error"] = written
    if args.json:
        print_json({"command": "verify", "exit_code": code, **report})
    else:
        for case in report["cases"]:
            print(_line(case))
        print(
            f"\ncuDNN {report['cudnn']} on {_on(report)}: {report['plan_runs']} plan runs in "
            f"{len(report['cases'])} graphs ({report['checked']} compared, {report['skipped']} "
            f"without a reference; {report['graphs_without_plan']} graphs without a plan), "
            f"{_verdict(report)} ({report['seconds']} s; known-bad table "
            f"{'on' if report['known_bad_table'] else 'off'})"
        )
    return code
