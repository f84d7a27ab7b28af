"""The smoke-demo runner used by ``python -m pycudnn smoke`` and ``python -m pycutensor smoke``.

A smoke demo is a list of checks. Each returns a :class:`CheckResult`: ``ok`` with what it measured,
``skipped`` with the reason (typically: no GPU, no driver library), or ``failed`` with the error. The
runner prints one line per check (or JSON), and exits non-zero when a check failed, or, with
``--require-gpu``, when a check that needs a GPU could not run.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

__all__ = ["CheckResult", "SkipCheck", "run_checks"]


class SkipCheck(Exception):
    """Raised by a check that cannot run here; ``needs_gpu`` marks skips caused by a missing GPU."""

    def __init__(self, reason: str, *, needs_gpu: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.needs_gpu = needs_gpu


@dataclass
class CheckResult:
    name: str
    status: str  # "ok", "skipped" or "failed"
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    needs_gpu: bool = False
    seconds: float = 0.0


Check = Callable[[], "dict[str, Any] | str | None"]


def _run_one(name: str, check: Check) -> CheckResult:
    start = time.perf_counter()
    try:
        out = check()
    except SkipCheck as skip:
        return CheckResult(
            name,
            "skipped",
            skip.reason,
            needs_gpu=skip.needs_gpu,
            seconds=time.perf_counter() - start,
        )
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        tb = traceback.format_exc(limit=4)
        return CheckResult(
            name, "failed", detail, {"traceback": tb}, seconds=time.perf_counter() - start
        )
    elapsed = time.perf_counter() - start
    if isinstance(out, dict):
        detail = str(out.pop("summary", ""))
        return CheckResult(name, "ok", detail, out, seconds=elapsed)
    return CheckResult(name, "ok", out or "", seconds=elapsed)


def run_checks(
    title: str,
    checks: Sequence[tuple[str, Check]],
    *,
    as_json: bool = False,
    require_gpu: bool = False,
    stream: TextIO | None = None,
) -> int:
    """Run ``checks`` in order, report, and return the process exit code."""
    out = stream or sys.stdout
    results = []
    if not as_json:
        print(f"{title}", file=out)
    for name, check in checks:
        result = _run_one(name, check)
        results.append(result)
        if not as_json:
            mark = {"ok": "ok     ", "skipped": "SKIPPED", "failed": "FAILED "}[result.status]
            print(f"  [{mark}] {name}: {result.detail}", file=out)
            if result.status == "failed" and result.data.get("traceback"):
                print("    " + result.data["traceback"].rstrip().replace("\n", "\n    "), file=out)
    failed = [r for r in results if r.status == "failed"]
    gpu_skipped = [r for r in results if r.status == "skipped" and r.needs_gpu]
    code = 1 if failed or (require_gpu and gpu_skipped) else 0
    if as_json:
        json.dump(
            {"title": title, "exit_code": code, "checks": [asdict(r) for r in results]},
            out,
            indent=2,
            default=str,
        )
        print(file=out)
    else:
        counts = {s: sum(r.status == s for r in results) for s in ("ok", "skipped", "failed")}
        print(
            f"  {counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed", file=out
        )
        if require_gpu and gpu_skipped:
            print(
                "  --require-gpu: these checks needed a GPU and did not run: "
                + ", ".join(r.name for r in gpu_skipped),
                file=out,
            )
    return code
