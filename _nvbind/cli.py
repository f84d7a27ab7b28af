"""What both packages' ``verify`` commands share: their options and the progress bar (the
command-line frame itself, exit codes and ``--json``, is :mod:`.report`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_verify_arguments", "progress_bar"]


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
