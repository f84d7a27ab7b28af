"""The command line both packages share: ``python -m pycudnn`` and ``python -m pycutensor`` are one
:class:`LibraryCommandLine` each (``info``, ``smoke``, ``--version``, ``--json`` before or after the
command), with the commands only one library has added; and what both ``verify`` commands share,
their options and the progress bar. The promises every command keeps (exit codes, one JSON
document on stdout with ``--json``) are :mod:`.report`'s."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .report import (
    EXIT_CANNOT_RUN,
    EXIT_OK,
    JSON_HELP,
    CliParser,
    add_version_option,
    guard_main,
    info_report,
    parse_args,
    print_json,
    print_report,
    run_cli,
)
from .smoke import run_checks

__all__ = [
    "Command",
    "LibraryCommandLine",
    "add_verify_arguments",
    "progress_bar",
    "verify_command",
]

#: A subcommand: its parsed arguments -> the exit code.
Command = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class LibraryCommandLine:
    """One package's command line: ``info`` and ``smoke`` (alike in both packages) and the
    commands ``add_commands`` adds.

    ``package`` is ``pycudnn`` or ``pycutensor``, ``library`` the C library's prefix (``cudnn``,
    ``cutensor``: the keys of the ``info`` report), ``title`` its display name and ``doc`` the
    description ``--help`` shows. ``add_commands(subparsers)`` adds the package's own subcommands
    and returns their runners by name; it is called each time a parser is built, so that their
    modules are imported only when a command line is parsed.
    """

    package: str
    library: str
    title: str
    doc: str | None
    add_commands: Callable[[argparse._SubParsersAction[Any]], Mapping[str, Command]]

    def info(self) -> dict[str, Any]:
        """Versions, paths, driver and devices (what ``python -m <package> info`` prints)."""
        return info_report(self.package, self.library)

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Run the command line ``argv`` (default ``sys.argv[1:]``) and return its exit code."""
        return guard_main(self._main, argv)

    def parser(self) -> CliParser:
        """The command line's parser (every subcommand and option; ``parse_args`` reports
        errors)."""
        return self._build()[0]

    def _build(self) -> tuple[CliParser, dict[str, Command]]:
        parser = CliParser(prog=f"python -m {self.package}", description=self.doc)
        parser.add_argument("--json", dest="json_first", action="store_true", help=JSON_HELP)
        add_version_option(parser, self.package)
        sub = parser.add_subparsers(dest="command", required=True)
        p_info = sub.add_parser("info", help="versions, library paths, driver and devices")
        p_info.add_argument("--json", action="store_true", help=JSON_HELP)
        p_smoke = sub.add_parser("smoke", help=f"run real {self.title} work against NumPy")
        p_smoke.add_argument("--json", action="store_true", help=JSON_HELP)
        p_smoke.add_argument(
            "--require-gpu", action="store_true", help="fail when checks that need a GPU cannot run"
        )
        commands = {"info": self._info, "smoke": self._smoke, **self.add_commands(sub)}
        return parser, commands

    def _main(self, argv: list[str]) -> int:
        parser, commands = self._build()
        args = parse_args(parser, argv)
        if isinstance(args, int):
            return args
        command = commands[args.command]  # argparse enforces the choices
        return run_cli(lambda: command(args), json_mode=args.json, command=args.command)

    def _info(self, args: argparse.Namespace) -> int:
        report = self.info()
        code = EXIT_CANNOT_RUN if f"{self.library}_error" in report else EXIT_OK
        if args.json:
            print_json({"command": "info", "exit_code": code, **report})
        else:
            print_report(report)
        return code

    def _smoke(self, args: argparse.Namespace) -> int:
        # The package's checks import what they exercise: only when the command runs.
        checks = importlib.import_module(f"{self.package}.smoke").checks()
        return run_checks(
            f"{self.package} smoke", checks, as_json=args.json, require_gpu=args.require_gpu
        )


def verify_command(
    sub: argparse._SubParsersAction[Any], module: Any, summary: str, description: str | None
) -> Command:
    """Add the ``verify`` command of ``module`` (its ``add_arguments(parser)`` and ``run(args)``)
    to ``sub``, the subcommands of a :class:`LibraryCommandLine`, with ``summary`` as its help in
    the command list; return its runner."""
    module.add_arguments(sub.add_parser("verify", help=summary, description=description))
    run: Command = module.run
    return run


def add_verify_arguments(parser: argparse.ArgumentParser, *, quick: str, listing: str) -> None:
    """The options both ``verify`` commands take: ``--quick`` (``quick`` is its help), ``--json``,
    ``--seed``, ``--filter``, ``--list`` (``listing`` is its help) and ``--no-progress``."""
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--seed", type=_seed, default=0, help="seed of the generated inputs (an int >= 0)"
    )
    parser.add_argument(
        "--filter", metavar="TEXT", default="", help="only cases whose name contains TEXT"
    )
    parser.add_argument("--list", action="store_true", help=listing)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _seed(text: str) -> int:
    """``--seed``: NumPy's generators take seeds from 0 (a negative one failed in the first case,
    after the GPU check)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an int: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; seeds start at 0")
    return value


def progress_bar(total: int, enabled: bool) -> Any:
    """A tqdm bar on stderr (units: cases), or None when disabled, not a terminal or no tqdm."""
    if not enabled or not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="verify", unit="case", leave=False)
