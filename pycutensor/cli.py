"""Command line: ``python -m pycutensor info | smoke [--require-gpu] | verify [--quick]
[--filter TEXT] [--list]``, each with ``--json`` (before or after the command): exactly one JSON
document on stdout, whatever happens, its ``exit_code`` repeating the exit code. ``--version``
prints the package's version.

Exit codes: 0 everything passed; 1 something failed; 2 bad command line; 3 could not run here
(no GPU where one is needed, library not installed); 141 the reader closed the pipe.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from _nvbind.report import (
    EXIT_CANNOT_RUN,
    EXIT_OK,
    EXIT_USAGE,
    JSON_HELP,
    CliParser,
    add_version_option,
    guard_main,
    parse_args,
    print_json,
    print_report,
    run_cli,
)

__all__ = ["info", "main", "parser"]


def info() -> dict[str, Any]:
    """Versions, paths, driver and devices (what ``python -m pycutensor info`` prints)."""
    from _nvbind.report import info_report

    return info_report("pycutensor", "cutensor")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``) and return its exit code."""
    return guard_main(_main, argv)


def parser() -> CliParser:
    """The command line's parser (every subcommand and option; ``parse_args`` reports errors)."""
    parser = CliParser(prog="python -m pycutensor", description=__doc__)
    parser.add_argument("--json", dest="json_first", action="store_true", help=JSON_HELP)
    add_version_option(parser, "pycutensor")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="versions, library paths, driver and devices")
    p_info.add_argument("--json", action="store_true", help=JSON_HELP)
    p_smoke = sub.add_parser("smoke", help="run real cuTENSOR work against NumPy")
    p_smoke.add_argument("--json", action="store_true", help=JSON_HELP)
    p_smoke.add_argument(
        "--require-gpu", action="store_true", help="fail when checks that need a GPU cannot run"
    )
    from . import verification

    verification.add_arguments(
        sub.add_parser(
            "verify",
            help="check every algorithm against NumPy",
            description=verification.run.__doc__,
        )
    )
    return parser


def _main(argv: list[str]) -> int:
    args = parse_args(parser(), argv)
    if isinstance(args, int):
        return args
    return run_cli(lambda: _dispatch(args), json_mode=args.json, command=args.command)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "info":
        report = info()
        code = EXIT_CANNOT_RUN if "cutensor_error" in report else EXIT_OK
        if args.json:
            print_json({"command": "info", "exit_code": code, **report})
        else:
            print_report(report)
        return code
    if args.command == "smoke":
        from _nvbind.smoke import run_checks

        from .smoke import checks

        return run_checks(
            "pycutensor smoke", checks(), as_json=args.json, require_gpu=args.require_gpu
        )
    if args.command == "verify":
        from .verification import run as run_verify

        return run_verify(args)
    return EXIT_USAGE  # pragma: no cover - argparse enforces the choices


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
