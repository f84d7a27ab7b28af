"""The command-line frame both packages share: the ``info`` and ``smoke`` commands, ``--json``
before or after the command, the exit codes (:mod:`.report`) and the ``verify`` progress bar.

Each package's ``cli`` module makes a :class:`LibraryCli`, adds its own commands to the parser it
gets from :meth:`LibraryCli.parser`, and hands the commands it does not know to
:meth:`LibraryCli.dispatch`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .report import (
    EXIT_CANNOT_RUN,
    EXIT_OK,
    EXIT_USAGE,
    JSON_HELP,
    CliParser,
    info_report,
    parse_args,
    print_json,
    print_report,
    run_cli,
)
from .smoke import run_checks

__all__ = ["LibraryCli", "add_verify_arguments", "progress_bar"]


@dataclasses.dataclass(frozen=True)
class LibraryCli:
    """``python -m <package>``: its ``info`` and ``smoke`` commands and the rules all share.

    ``package`` is ``pycudnn`` or ``pycutensor``, ``library`` the key of its report (``cudnn``,
    ``cutensor``: ``<library>_version``, ``<library>_error``) and ``title`` the library's name
    in help texts. The smoke checks are ``<package>.smoke.checks()``.
    """

    package: str
    library: str
    title: str

    def info(self) -> dict[str, Any]:
        """Versions, paths, driver and devices (what ``info`` prints)."""
        return info_report(self.package, self.library)

    def parser(self, description: str | None) -> tuple[CliParser, Any]:
        """The parser with ``--json`` and the ``info`` and ``smoke`` commands, and its
        subparsers, to which the package adds its own commands."""
        parser = CliParser(prog=f"python -m {self.package}", description=description)
        parser.add_argument("--json", dest="json_first", action="store_true", help=JSON_HELP)
        sub = parser.add_subparsers(dest="command", required=True)
        p_info = sub.add_parser("info", help="versions, library paths, driver and devices")
        p_info.add_argument("--json", action="store_true", help=JSON_HELP)
        p_smoke = sub.add_parser("smoke", help=f"run real {self.title} work against NumPy")
        p_smoke.add_argument("--json", action="store_true", help=JSON_HELP)
        p_smoke.add_argument(
            "--require-gpu", action="store_true", help="fail when checks that need a GPU cannot run"
        )
        return parser, sub

    def run(
        self,
        parser: argparse.ArgumentParser,
        argv: Sequence[str] | None,
        dispatch: Callable[[argparse.Namespace], int],
    ) -> int:
        """Parse ``argv`` and run ``dispatch(args)`` under the CLI's promises (one JSON document
        with ``--json``, a quiet closed pipe): the exit code."""
        args = parse_args(parser, argv)
        if isinstance(args, int):
            return args
        return run_cli(lambda: dispatch(args), json_mode=args.json, command=args.command)

    def dispatch(self, args: argparse.Namespace) -> int:
        """Run ``info`` or ``smoke``; :data:`EXIT_USAGE` for a command neither knows."""
        if args.command == "info":
            report = self.info()
            code = EXIT_CANNOT_RUN if f"{self.library}_error" in report else EXIT_OK
            if args.json:
                print_json({"command": "info", "exit_code": code, **report})
            else:
                print_report(report)
            return code
        if args.command == "smoke":
            checks = importlib.import_module(f"{self.package}.smoke").checks()
            return run_checks(
                f"{self.package} smoke", checks, as_json=args.json, require_gpu=args.require_gpu
            )
        return EXIT_USAGE  # pragma: no cover - argparse enforces the choices


def add_verify_arguments(parser: argparse.ArgumentParser, *, quick: str, listing: str) -> None:
    """The options both ``verify`` commands take: ``--quick`` (``quick`` is its help), ``--json``,
    ``--seed``, ``--filter``, ``--list`` (``listing`` is its help) and ``--no-progress``."""
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    parser.add_argument(
        "--filter", metavar="TEXT", default="", help="only cases whose name contains TEXT"
    )
    parser.add_argument("--list", action="store_true", help=listing)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def progress_bar(total: int, enabled: bool) -> Any:
    """A tqdm bar on stderr (units: cases), or None when disabled, not a terminal or no tqdm."""
    if not enabled or not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="verify", unit="case", leave=False)
