"""Merge the ``--json`` smoke reports of both packages into one document (``scripts/demo.sh --json``).

``python -m _nvbind.merge_smoke FILE CODE [FILE CODE ...]`` reads each package's report and
the exit code its command returned, prints ``{"exit_code", "summary", "<package>": report, ...}``
and exits with the worst code: a failure (1) above could-not-run (3) above success (0). A report
that is not one JSON document is kept as text under ``error`` and counts as a failure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .files import read_text
from .report import EXIT_CANNOT_RUN, EXIT_FAILED, EXIT_OK, guard_main, print_json

__all__ = ["merge", "worst"]

_RANK = {EXIT_OK: 0, EXIT_CANNOT_RUN: 1}  # anything else is a failure


def worst(codes: Sequence[int]) -> int:
    """The exit code that tells most: any failure, else could-not-run, else success."""
    failures = [c for c in codes if c not in _RANK]
    if failures:
        return EXIT_FAILED if EXIT_FAILED in failures else failures[0]
    return max(codes, key=_RANK.__getitem__, default=EXIT_OK)


def merge(reports: Sequence[tuple[str, str, int]]) -> dict[str, Any]:
    """``reports``: (package, the text its smoke command printed, its exit code)."""
    document: dict[str, Any] = {"exit_code": EXIT_OK, "summary": {}}
    codes = []
    for package, text, code in reports:
        try:
            report = json.loads(text)
        except json.JSONDecodeError as exc:
            report = {"exit_code": code, "error": f"not one JSON document ({exc})", "output": text}
        codes.append(code if "error" not in report or code not in _RANK else EXIT_FAILED)
        document[package] = report
        for key, count in report.get("summary", {}).items():
            if isinstance(count, int) and not isinstance(count, bool):
                document["summary"][key] = document["summary"].get(key, 0) + count
    document["exit_code"] = worst(codes)
    return document


def main(argv: Sequence[str]) -> int:
    if len(argv) % 2 or not argv:
        print("usage: merge_smoke FILE CODE [FILE CODE ...]", file=sys.stderr)
        return 2
    reports = [
        (Path(argv[i]).stem, read_text(argv[i], what="smoke report"), int(argv[i + 1]))
        for i in range(0, len(argv), 2)
    ]
    document = merge(reports)
    print_json(document)
    return int(document["exit_code"])


if __name__ == "__main__":  # pragma: no cover
    # A full disk or a closed pipe on stdout: one line or a quiet exit, no traceback.
    sys.exit(guard_main(main, sys.argv[1:]))
