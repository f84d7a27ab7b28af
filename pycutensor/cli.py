"""Command line: ``python -m pycutensor info | smoke [--require-gpu] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["info", "main"]


def info() -> dict[str, Any]:
    """Versions, paths, driver and devices (what ``python -m pycutensor info`` prints)."""
    from pycudnn._shared.cuda import driver_status

    from . import __version__

    report: dict[str, Any] = {"pycutensor": __version__}
    try:
        from . import _info

        report.update(
            cutensor_version=".".join(map(str, _info.version_tuple())),
            cutensor_path=_info.library_path(),
            cutensor_cudart_version=_info.cudart_version(),
            bindings_header_version=".".join(map(str, _info.header_version())),
        )
    except ImportError as exc:
        report["cutensor_error"] = str(exc)
    st = driver_status()
    report["cuda_driver"] = st.driver_version_text if st.library_found else "not installed"
    report["devices"] = list(st.devices) if st.usable else f"no CUDA device: {st.reason}"
    return report


def main(argv: Sequence[str] | None = None) -> int:
    from pycudnn.cli import _print_report

    parser = argparse.ArgumentParser(prog="python -m pycutensor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="versions, library paths, driver and devices")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_smoke = sub.add_parser("smoke", help="run real cuTENSOR work against NumPy")
    p_smoke.add_argument("--json", action="store_true", help="print JSON")
    p_smoke.add_argument(
        "--require-gpu", action="store_true", help="fail when checks that need a GPU cannot run"
    )
    args = parser.parse_args(argv)
    if args.command == "info":
        report = info()
        if args.json:
            print(json.dumps(report, indent=2, default=str))
        else:
            _print_report(report)
        return 1 if "cutensor_error" in report else 0
    if args.command == "smoke":
        from pycudnn._shared.smoke import run_checks

        from .smoke import checks

        return run_checks(
            "pycutensor smoke", checks(), as_json=args.json, require_gpu=args.require_gpu
        )
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
