"""Command line: ``python -m pycudnn info | smoke [--require-gpu] [--json] | deviceprops --save FILE |
verify [--quick] [--no-known-bad] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ._shared.report import print_report

__all__ = ["info", "main"]


def info() -> dict[str, Any]:
    """Versions, paths, driver and devices (what ``python -m pycudnn info`` prints)."""
    from ._shared.report import info_report

    return info_report("pycudnn", "cudnn")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pycudnn", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="versions, library paths, driver and devices")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_smoke = sub.add_parser("smoke", help="run real cuDNN work against NumPy")
    p_smoke.add_argument("--json", action="store_true", help="print JSON")
    p_smoke.add_argument(
        "--require-gpu", action="store_true", help="fail when checks that need a GPU cannot run"
    )
    p_dev = sub.add_parser("deviceprops", help="capture this GPU's properties for deviceless plans")
    p_dev.add_argument("--save", metavar="FILE", required=True, help="where to write the JSON")
    p_dev.add_argument("--device", type=int, default=0, help="device ordinal (default 0)")
    from .verification.cli import add_arguments as add_verify_arguments

    add_verify_arguments(sub.add_parser("verify", help="check every engine against NumPy"))
    args = parser.parse_args(argv)

    if args.command == "info":
        report = info()
        if args.json:
            print(json.dumps(report, indent=2, default=str))
        else:
            print_report(report)
        return 1 if "cudnn_error" in report else 0
    if args.command == "smoke":
        from ._shared.smoke import run_checks
        from .smoke import checks

        return run_checks(
            "pycudnn smoke", checks(), as_json=args.json, require_gpu=args.require_gpu
        )
    if args.command == "verify":
        from .verification.cli import run as run_verify

        return run_verify(args)
    if args.command == "deviceprops":
        from ._shared.cuda import driver_status

        st = driver_status()
        if not st.usable:
            print(f"error: capturing device properties needs a GPU: {st.reason}", file=sys.stderr)
            return 1
        from .deviceprops import DeviceProperties

        try:
            props = DeviceProperties.from_device(args.device)
            props.save(args.save)
        except Exception as exc:  # report, don't dump a traceback on the command line
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        print(f"saved the properties of device {args.device} ({props.device_name}) to {args.save}")
        return 0
    return 2  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
