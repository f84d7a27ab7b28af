"""Fuzz target for ``scripts/reliability.py``: the command lines' argv (``python -m pycudnn`` and
``python -m pycutensor``), run in the worker's process through their ``main(argv)``.

Every input is a command line built from the real subcommands and options, their abbreviations,
misplaced values and junk. Whatever the line, the command must keep its contract: an exit code
of the README's table (0, 1, 2, 3), no exception out of ``main``, with ``--json`` exactly one
JSON document on stdout whose ``exit_code`` is the exit code, and an abbreviated option refused
(``--jso`` must not be taken for ``--json``). A broken promise is raised as ``ContractBroken``,
which the harness counts as unexpected.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from collections.abc import Callable
from typing import Any

#: What every command line may be made of: the real words first, then their near misses.
SUBCOMMANDS = ["info", "smoke", "deviceprops", "verify"]
OPTIONS = ["--json", "--help", "-h", "--version", "--require-gpu", "--list", "--quick",
           "--no-known-bad", "--no-progress", "--filter", "--save", "--device"]  # fmt: skip
#: Strict prefixes of real options: argparse would accept them unless told not to.
ABBREVIATIONS = ["--jso", "--js", "--hel", "--vers", "--require", "--lis", "--qui", "--filt",
                 "--sav", "--dev"]  # fmt: skip
JUNK = ["", "-", "--", "x", "matmul", "conv", "0", "-1", "99", "1e9", "--bogus", "--json=1",
        "--filter=", "--device=abc", "-jh", "INFO", "\u00e9" * 40, "x" * 300, "--=",
        "--save=-"]  # fmt: skip
EXIT_CODES = {0, 1, 2, 3}


class ContractBroken(Exception):
    """The command line broke a promise of the README (never an expected refusal)."""


def _token(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.35:
        return rng.choice(OPTIONS)
    if kind < 0.55:
        return rng.choice(SUBCOMMANDS)
    if kind < 0.75:
        return rng.choice(ABBREVIATIONS)
    return rng.choice(JUNK)


def argv_for(rng: random.Random, gpu: bool, tmp: str) -> list[str]:
    """A command line: mostly a subcommand with options, sometimes anything at all."""
    args = [_token(rng) for _ in range(rng.randint(0, 5))]
    if rng.random() < 0.7:
        args.insert(rng.randint(0, len(args)), rng.choice(SUBCOMMANDS))
    for i, a in enumerate(args[:-1]):
        if a == "--save":  # only ever a file of the worker's own folder (or stdout)
            args[i + 1] = rng.choice(["-", f"{tmp}/props.json", f"{tmp}/no/dir.json"])
    # smoke runs real work and verify on a GPU the whole suite (minutes): ask for their help or
    # list instead.
    runs = [a for a in args if a in SUBCOMMANDS]
    if runs and runs[0] == "smoke":
        args.append("--help")
    if runs and runs[0] == "verify" and gpu:
        args.append("--list")
    return args


def check(argv: list[str], code: Any, out: str, err: str) -> None:
    """Raise :class:`ContractBroken` when a command's result breaks the README's promises."""
    where = f"argv {argv!r}: exit {code!r}, stdout {out[:200]!r}, stderr {err[:300]!r}"
    if code not in EXIT_CODES:
        raise ContractBroken(f"an exit code outside the README's table: {where}")
    if "--json" in argv:
        try:
            doc = json.loads(out)
        except ValueError:
            raise ContractBroken(f"--json printed no single JSON document: {where}") from None
        if not isinstance(doc, dict) or doc.get("exit_code") != code:
            raise ContractBroken(f"the document's exit_code is not the exit code: {where}")
    asks_help = any(a in ("-h", "--help", "--version") for a in argv)
    if any(a in ABBREVIATIONS for a in argv) and not asks_help and code != 2:
        raise ContractBroken(f"an abbreviated option was accepted: {where}")


def cli_argv(rng: random.Random, ctx: Any) -> None:
    """One command line for one of the two packages, its contract checked."""
    from _nvbind.cuda import driver_status

    if rng.random() < 0.5:
        from pycudnn.cli import main
    else:
        from pycutensor.cli import main
    argv = argv_for(rng, driver_status().usable, str(ctx.tmp))
    out, err = io.StringIO(), io.StringIO()
    # StringIO has no file descriptor: the worker's own stdout (its protocol) is never touched.
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except BaseException as exc:  # any escape from main is the finding
            message = f"argv {argv!r}: main raised {type(exc).__name__}: {exc}"
            raise ContractBroken(message) from None
    check(argv, code, out.getvalue(), err.getvalue())


TARGETS: dict[str, Callable[[random.Random, Any], None]] = {"cli_argv": cli_argv}
WEIGHTS: dict[str, float] = {"cli_argv": 2}
