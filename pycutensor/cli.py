"""Command line: ``python -m pycutensor info | smoke [--require-gpu] [--json] | verify [--quick] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from pycudnn._shared.report import print_report

__all__ = ["info", "main"]


def info() -> dict[str, Any]:
    """Versions, paths, driver and devices (what ``python -m pycutensor info`` prints)."""
    from pycudnn._shared.report import info_report

    return info_report("pycutensor", "cutensor")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pycutensor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="versions, library paths, driver and devices")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_smoke = sub.add_parser("smoke", help="run real cuTENSOR work against NumPy")
    p_smoke.add_argument("--json", action="store_true", help="print JSON")
    p_smoke.add_argument(
        "--require-gpu", action="store_true", help="fail when checks that need a GPU cannot run"
    )
    from .verification import add_arguments as add_verify_arguments

    add_verify_arguments(sub.add_parser("verify", help="check every algorithm against NumPy"))
    args = parser.parse_args(argv)
    if args.command == "info":
        report = info()
        if args.json:
            print(json.dumps(report, indent=2, default=str))
        else:
            print_report(report)
        return 1 if "cutensor_error" in report else 0
    if args.command == "smoke":
        from pycudnn._shared.smoke import run_checks

        from .smoke import checks

        return run_checks(
            "pycutensor smoke", checks(), as_json=args.json, require_gpu=args.require_gpu
        )
    if args.command == "verify":
        from .verification import run as run_verify

        return run_verify(args)
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
