"""Command line: ``python -m pycutensor info | smoke [--require-gpu] | verify [--quick]
[--filter TEXT] [--list]``, each with ``--json`` (before or after the command): exactly one JSON
document on stdout, whatever happens, its ``exit_code`` repeating the exit code.

Exit codes: 0 everything passed; 1 something failed; 2 bad command line; 3 could not run here
(no GPU where one is needed, library not installed); 141 the reader closed the pipe.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from _nvbind.cli import LibraryCli

__all__ = ["info", "main"]

_CLI = LibraryCli("pycutensor", "cutensor", "cuTENSOR")


def info() -> dict[str, Any]:
    """Versions, paths, driver and devices (what ``python -m pycutensor info`` prints)."""
    return _CLI.info()


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = _CLI.parser(__doc__)
    from . import verification

    verification.add_arguments(
        sub.add_parser(
            "verify",
            help="check every algorithm against NumPy",
            description=verification.run.__doc__,
        )
    )
    return _CLI.run(parser, argv, _dispatch)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "verify":
        from .verification import run as run_verify

        return run_verify(args)
    return _CLI.dispatch(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
