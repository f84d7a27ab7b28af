"""Command line: ``python -m pycudnn info | smoke [--require-gpu] | deviceprops [--save FILE] |
verify [--quick] [--no-known-bad] [--filter TEXT] [--list]``, each with ``--json`` (before or
after the command): exactly one JSON document on stdout, whatever happens, its ``exit_code``
repeating the exit code. ``--version`` prints the package's version.

Exit codes: 0 everything passed; 1 something failed; 2 bad command line; 3 could not run here
(no GPU where one is needed, library not installed); 141 the reader closed the pipe.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from _nvbind.cli import Command, LibraryCommandLine, verify_command
from _nvbind.report import (
    EXIT_CANNOT_RUN,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    JSON_HELP,
    devices_report,
    print_json,
    report_error,
)

__all__ = ["info", "main", "parser"]


def _add_commands(sub: argparse._SubParsersAction[Any]) -> Mapping[str, Command]:
    # ``info`` and ``smoke`` are the shared frame's; ``verify`` is imported only when a command
    # line is parsed, so that ``import pycudnn.cli`` stays cheap.
    p_dev = sub.add_parser(
        "deviceprops",
        help="capture this GPU's properties for deviceless plans",
        description=_deviceprops.__doc__,
    )
    p_dev.add_argument(
        "--save",
        metavar="FILE",
        default="-",
        help="where to write the properties JSON (default -: stdout)",
    )
    p_dev.add_argument("--device", type=int, default=0, help="device ordinal (default 0)")
    p_dev.add_argument("--json", action="store_true", help=JSON_HELP)
    from .verification import cli as verify_cli

    verify = verify_command(sub, verify_cli, "check every engine against NumPy", verify_cli.__doc__)
    return {"deviceprops": _deviceprops, "verify": verify}


def _deviceprops(args: argparse.Namespace) -> int:
    """Capture a GPU's properties for execution plans built without one (deviceless plans).

    ``--save FILE`` writes them to FILE; without it (or with ``--save -``) the properties JSON is
    printed on stdout, so ``python -m pycudnn deviceprops > h100.json`` works too. With ``--json``
    stdout has the report instead (the device in the schema of ``info``, and the properties under
    ``properties`` when they were not saved to a file). Needs a GPU: exit code 3 without one.
    """
    from _nvbind.cuda import driver_status

    to_stdout = args.save == "-"
    st = driver_status()
    record: dict[str, Any] = {"saved": None, **devices_report(st)}

    def fail(code: int, message: str) -> int:
        return report_error(args.json, "deviceprops", code, message, **record)

    if not st.usable:
        return fail(EXIT_CANNOT_RUN, f"capturing device properties needs a GPU: {st.reason}")
    if not any(d["ordinal"] == args.device for d in record["devices"]):
        ordinals = ", ".join(str(d["ordinal"]) for d in record["devices"])
        return fail(EXIT_USAGE, f"no device {args.device} (devices here: {ordinals})")
    from .deviceprops import DeviceProperties

    try:
        props = DeviceProperties.from_device(args.device)
        if not to_stdout:
            props.save(args.save)
    except Exception as exc:  # report, don't dump a traceback on the command line
        return fail(EXIT_FAILED, f"{type(exc).__name__}: {exc}")
    if args.json:
        device = [d for d in record["devices"] if d["ordinal"] == args.device]
        extra = {"properties": props.as_dict()} if to_stdout else {"saved": args.save}
        print_json(
            {"command": "deviceprops", **record, "exit_code": EXIT_OK, "device": device[0], **extra}
        )
    elif to_stdout:
        print(props.to_json(indent=2))
    else:
        print(f"saved the properties of device {args.device} ({props.device_name}) to {args.save}")
    return EXIT_OK


_CLI = LibraryCommandLine("pycudnn", "cudnn", "cuDNN", __doc__, _add_commands)
# The module's public functions are the frame's (the console script is pycudnn.cli:main).
info, main, parser = _CLI.info, _CLI.main, _CLI.parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
