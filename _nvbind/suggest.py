"""'Did you mean' for names looked up by the user: attributes, enum members, formats, dtypes."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(word: str, choices: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> str:
    """``"; did you mean 'a' or 'b'?"`` for the valid names closest to ``word`` (compared
    case-insensitively, shown as the caller spells ``choices``), or ``""`` when none is close.

    The text is meant to follow the error's own sentence: ``f"unknown format {fmt!r}{hint}"``.
    """
    import difflib  # only when a name was misspelt: not a cost of every import

    spelled = {c.upper(): c for c in choices}
    close = difflib.get_close_matches(word.strip().upper(), list(spelled), n=n, cutoff=cutoff)
    if not close:
        return ""
    names = [repr(spelled[c]) for c in close]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"; did you mean {listed}?"
