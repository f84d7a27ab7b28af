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
from collections.abc import Mapping
from typing import Any

from _nvbind.cli import Command, LibraryCommandLine, verify_command

__all__ = ["info", "main", "parser"]


def _add_commands(sub: argparse._SubParsersAction[Any]) -> Mapping[str, Command]:
    # ``info`` and ``smoke`` are the shared frame's; ``verify`` is imported only when a command
    # line is parsed, so that ``import pycutensor.cli`` stays cheap.
    from . import verification

    summary = "check every algorithm against NumPy"
    return {"verify": verify_command(sub, verification, summary, verification.run.__doc__)}


_CLI = LibraryCommandLine("pycutensor", "cutensor", "cuTENSOR", __doc__, _add_commands)
# The module's public functions are the frame's (the console script is pycutensor.cli:main).
info, main, parser = _CLI.info, _CLI.main, _CLI.parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
