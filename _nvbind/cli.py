"""The command-line frame both packages share: the ``info`` and ``smoke`` commands, ``--json``,
the exit codes (:mod:`.report`) and the ``verify`` progress bar; each package adds its own commands."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["progress_bar"]


def progress_bar(total: int, enabled: bool) -> Any:
    """A tqdm bar on stderr (units: cases), or None when disabled, not a terminal or no tqdm."""
    if not enabled or not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="verify", unit="case", leave=False)
