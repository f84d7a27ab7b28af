"""Every ```pycon block (an interactive session, ``>>>`` prompts and the output shown) in README.md
and docs/*.md runs and prints what it shows, checked by :mod:`doctest`.

The ```python blocks are run as scripts by ``test_docs_blocks.py``; a session shows output, so it
is checked here instead, line for line (the output is what the page states, written by hand, never
produced by this test). Sessions run on the host: one that needs a GPU belongs in a ```python block.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]
SESSION = re.compile(r"^```pycon\n(.*?)^```$", re.S | re.M)


def sessions() -> list[tuple[str, str]]:
    """(where, text) of each ```pycon block, where is ``path:line`` of its fence."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in SESSION.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append((f"{path.relative_to(REPO)}:{line}", m.group(1)))
    return found


SESSIONS = sessions()


def test_the_distributed_page_has_its_session() -> None:
    # The ownership example of docs/distributed.md is one; an empty list would check nothing.
    assert any(w.startswith("docs/distributed.md:") for w, _ in SESSIONS), SESSIONS


@pytest.mark.parametrize(("where", "text"), SESSIONS, ids=[w for w, _ in SESSIONS])
def test_the_session_prints_what_it_shows(where: str, text: str) -> None:
    test = doctest.DocTestParser().get_doctest(text, {}, where, where, 0)
    assert test.examples, f"{where}: a pycon block without a >>> prompt"
    out: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)
