"""The smoke-demo runner used by ``python -m pycudnn smoke`` and ``python -m pycutensor smoke``.

A smoke demo is a list of checks. Each returns a :class:`CheckResult`: ``ok`` with what it measured,
``skipped`` with the reason (typically: no GPU, no driver library), or ``failed`` with the error. The
runner prints one line per check (or one JSON document), and exits non-zero when a check failed,
or, with ``--require-gpu``, when a check that needs a GPU could not run (exit codes: see
:mod:`_nvbind.report`).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO, TypeVar

from .report import EXIT_CANNOT_RUN, EXIT_FAILED, EXIT_OK, devices_report, summarize

__all__ = ["Check", "CheckList", "CheckResult", "SkipCheck", "run_checks"]


class SkipCheck(Exception):
    """Raised by a check that cannot run here; ``needs_gpu`` marks skips caused by a missing GPU."""

    def __init__(self, reason: str, *, needs_gpu: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.needs_gpu = needs_gpu


@dataclass
class CheckResult:
    """The outcome of one smoke check: ``status`` is "ok", "skipped" or "failed"; ``detail`` the
    summary, the reason of a skip, or the error."""

    name: str
    status: str  # "ok", "skipped" or "failed"
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    needs_gpu: bool = False
    seconds: float = 0.0


Check = Callable[[], "dict[str, Any] | str | None"]
C = TypeVar("C", bound=Callable[[], Any])


class CheckList:
    """Smoke checks in the order they are declared, each named where it is defined::

    CHECKS = CheckList()


    @CHECKS.add("library")
    def _library() -> dict[str, Any]: ...
    """

    def __init__(self) -> None:
        self._checks: list[tuple[str, Check]] = []

    def add(self, name: str) -> Callable[[C], C]:
        """A decorator that appends the check it decorates, under ``name``."""

        def register(check: C) -> C:
            self._checks.append((name, check))
            return check

        return register

    def items(self) -> list[tuple[str, Check]]:
        """``(name, check)`` pairs in the order they were added (a new list)."""
        return list(self._checks)


def _run_one(name: str, check: Check, missing: CheckResult | None = None) -> CheckResult:
    """Run one check. ``missing`` is an earlier check that could not load a library: a check that
    fails with the same error is skipped (it depends on that library), so that a missing library
    is reported once, not by every check that needs it."""
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
        elapsed = time.perf_counter() - start
        if isinstance(exc, ImportError):
            # LibraryNotFoundError (or a missing optional package): nothing could run, nothing
            # is wrong. Its message says what to install; a traceback would add nothing.
            if missing is not None and detail == missing.detail:
                reason = f"needs what the {missing.name!r} check could not load"
                return CheckResult(name, "skipped", reason, seconds=elapsed)
            return CheckResult(name, "failed", detail, {"cannot_run": True}, seconds=elapsed)
        data: dict[str, Any] = {"traceback": traceback.format_exc(limit=4)}
        return CheckResult(name, "failed", detail, data, seconds=elapsed)
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
    """Run ``checks`` in order, report, and return the process exit code.

    The code is :data:`~_nvbind.report.EXIT_FAILED` when a check failed (unless every
    failure is an ``ImportError``, a library that is not installed:
    :data:`~_nvbind.report.EXIT_CANNOT_RUN`), ``EXIT_CANNOT_RUN`` when ``require_gpu``
    and a check that needs a GPU could not run, else ``EXIT_OK``. A library that cannot be loaded
    fails the first check that needs it (one line, no traceback); later checks that fail the same
    way are skipped, naming that check. With ``as_json`` the whole
    report is one JSON document: ``title``, ``exit_code``, ``summary`` (counts),
    ``cuda_driver``/``devices``/``devices_reason`` (the schema of ``info``) and ``checks`` (each
    skipped one with its ``reason``).
    """
    out = stream or sys.stdout
    results = []
    if not as_json:
        print(f"{title}", file=out)
    missing: CheckResult | None = None
    for name, check in checks:
        result = _run_one(name, check, missing)
        results.append(result)
        if missing is None and result.data.get("cannot_run"):
            missing = result
        if not as_json:
            mark = {"ok": "ok     ", "skipped": "SKIPPED", "failed": "FAILED "}[result.status]
            print(f"  [{mark}] {name}: {result.detail}", file=out)
            if result.status == "failed" and result.data.get("traceback"):
                print("    " + result.data["traceback"].rstrip().replace("\n", "\n    "), file=out)
    failed = [r for r in results if r.status == "failed"]
    gpu_skipped = [r for r in results if r.status == "skipped" and r.needs_gpu]
    if failed:
        cannot_run = all(r.data.get("cannot_run") for r in failed)
        code = EXIT_CANNOT_RUN if cannot_run else EXIT_FAILED
    else:
        code = EXIT_CANNOT_RUN if require_gpu and gpu_skipped else EXIT_OK
    counts = summarize(r.status for r in results)
    if as_json:
        checks_out = []
        for r in results:
            entry = asdict(r)
            if r.status == "skipped":
                entry["reason"] = r.detail
            checks_out.append(entry)
        document = {
            "title": title,
            "exit_code": code,
            "summary": {**counts, "gpu_skipped": len(gpu_skipped), "require_gpu": require_gpu},
            **devices_report(),
            "checks": checks_out,
        }
        json.dump(document, out, indent=2, default=str)
        print(file=out)
    else:
        print(
            f"  {counts['ok']} ok, {counts['skipped']} skipped, {counts['failed']} failed", file=out
        )
        if code == EXIT_CANNOT_RUN and failed:
            print(
                "  could not run here (exit code 3): a library could not be loaded, and the "
                "checks that need it were skipped",
                file=out,
            )
        if require_gpu and gpu_skipped:
            print(
                "  --require-gpu: these checks needed a GPU and did not run: "
                + ", ".join(r.name for r in gpu_skipped),
                file=out,
            )
    return code
