"""What both command lines share: the ``info`` report, one schema for a device, the exit codes,
and the rules of ``--json`` output (exactly one document; a closed pipe ends quietly).

Exit codes (documented in the README, so that a CI job can branch on them):

* ``0`` (:data:`EXIT_OK`): everything that was asked ran and passed.
* ``1`` (:data:`EXIT_FAILED`): something ran and failed (a wrong result, a cuDNN error).
* ``2`` (:data:`EXIT_USAGE`): the command line was wrong (argparse's own code).
* ``3`` (:data:`EXIT_CANNOT_RUN`): what was asked could not run here: no GPU (``--require-gpu``,
  ``verify``, ``deviceprops``) or the library is not installed.
* ``141`` (:data:`EXIT_CLOSED_PIPE`): the reader closed the pipe (``| head``); the command stops
  quietly, as a Unix tool killed by SIGPIPE does.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .cuda import DriverStatus, driver_status
from .ffi import DEPENDENCIES, not_importable
from .libinfo import wheel_of

__all__ = [
    "EXIT_CANNOT_RUN",
    "EXIT_CLOSED_PIPE",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "JSON_HELP",
    "CliParser",
    "StdoutError",
    "add_version_option",
    "device_record",
    "devices_report",
    "guard_main",
    "info_report",
    "parse_args",
    "plain_text",
    "print_json",
    "print_report",
    "report_error",
    "run_cli",
    "select_verify_cases",
    "summarize",
    "wheel_of",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANNOT_RUN = 3
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by a closed pipe

# The help of every command's ``--json`` option.
JSON_HELP = "print exactly one JSON document on stdout (its exit_code repeats the exit code)"


def device_record(device: Mapping[str, Any]) -> dict[str, Any]:
    """One device in the schema every command uses: ``ordinal``, ``name``,
    ``compute_capability`` ([major, minor]), ``sm`` ("sm_90") and ``total_memory`` (bytes)."""
    major, minor = device["compute_capability"]
    return {
        "ordinal": int(device["ordinal"]),
        "name": str(device["name"]),
        "compute_capability": [int(major), int(minor)],
        "sm": f"sm_{major}{minor}",
        "total_memory": int(device["total_memory"]),
    }


def devices_report(st: DriverStatus | None = None) -> dict[str, Any]:
    """``cuda_driver`` (its CUDA version, or "not installed"), ``devices`` (always a list of
    :func:`device_record`, empty without a GPU) and ``devices_reason`` (why it is empty, else "")."""
    st = st or driver_status()
    return {
        "cuda_driver": st.driver_version_text if st.library_found else "not installed",
        "devices": [device_record(d) for d in st.devices],
        "devices_reason": st.reason,
    }


def info_report(package: str, library: str) -> dict[str, Any]:
    """``package``'s version, then ``library``'s (``cudnn``/``cutensor``, from ``package._info``):
    version, the wheel it came from, path, how it was found, the supported range and what the
    loaded version lacks; then the driver and devices (:func:`devices_report`).

    A library that cannot be loaded is reported under ``<library>_error`` instead of raising.
    """
    report: dict[str, Any] = {package: importlib.import_module(package).__version__}
    try:
        info = importlib.import_module(f"{package}._info")
        path = info.library_path()
        report.update(
            {
                f"{library}_version": ".".join(map(str, info.version_tuple())),
                f"{library}_wheel": wheel_of(library, path),
                f"{library}_path": path,
                f"{library}_found_via": info.found_via(),
                f"{library}_supported": info.supported_range(),
                f"{library}_cudart_version": info.cudart_version(),
                "bindings_header_version": ".".join(map(str, info.header_version())),
                f"{library}_lacks": info.missing_features(),
            }
        )
    # LibraryNotFoundError: missing, not loadable, or below the floor; OSError: a log setting
    # the library would hang or fail on (a FIFO, a directory), refused before loading it
    except (ImportError, OSError) as exc:
        report[f"{library}_error"] = str(exc)
        lib = importlib.import_module(f"{package}._lib")
        report[f"{library}_supported"] = (
            f">= {'.'.join(map(str, lib.MINIMUM_VERSION[:2]))}, < {lib.MINIMUM_VERSION[0] + 1}"
        )
    report.update(devices_report())
    return report


def print_report(report: Mapping[str, Any]) -> None:
    """The human form of an :func:`info_report`: one ``key  value`` line each, lists indented."""
    width = max(len(k) for k in report)
    for key, value in report.items():
        if key == "devices_reason":
            continue  # shown on the devices line
        if key == "devices" and not value:
            print(f"{key:<{width}}  none ({report.get('devices_reason') or 'no CUDA device'})")
        elif key == "devices":
            print(f"{key:<{width}}  {len(value)} device(s)")
            for d in value:
                gib = d["total_memory"] / 2**30
                print(f"{'':<{width}}    {d['ordinal']}: {d['name']} ({d['sm']}, {gib:.0f} GiB)")
        elif isinstance(value, list):
            print(f"{key:<{width}}  {len(value)} item(s)" if value else f"{key:<{width}}  nothing")
            for item in value:
                print(f"{'':<{width}}    {item}")
        else:
            print(f"{key:<{width}}  {'-' if value is None else value}")


def print_json(document: Any) -> None:
    """Print one JSON document (the only thing a ``--json`` command writes to stdout)."""
    print(json.dumps(document, indent=2, default=str))


def report_error(
    json_mode: bool, command: str | None, code: int, message: str, **record: Any
) -> int:
    """Report a command's error and return its exit ``code``: in ``--json`` mode one document
    (``command``, the ``record`` fields, ``exit_code`` and ``error``), else ``error: message`` on
    stderr."""
    if json_mode:
        print_json({"command": command, **record, "exit_code": code, "error": message})
    else:
        print(f"error: {message}", file=sys.stderr)
    return code


def select_verify_cases(
    args: argparse.Namespace,
    all_cases: Sequence[Any],
    package: str,
    *,
    listed: Callable[[Any], dict[str, Any]],
    line: Callable[[Any], str],
    needs: str,
) -> list[Any] | int:
    """The start of both ``verify`` commands: the cases whose name contains ``args.filter``, to
    run; or the exit code when nothing is to run: :data:`EXIT_USAGE` when none matches, ``0``
    after ``--list`` printed them (each as ``listed(case)`` in the JSON document, ``line(case)``
    as text), :data:`EXIT_CANNOT_RUN` when no GPU is usable (``needs`` says what needs it)."""
    selected = [c for c in all_cases if args.filter in c.name]
    if not selected:
        message = (
            f"no case name contains {args.filter!r} "
            f"(`python -m {package} verify --list` shows them all)"
        )
        return report_error(args.json, "verify", EXIT_USAGE, message)
    if args.list:
        if args.json:
            print_json(
                {"command": "verify", "exit_code": EXIT_OK, "cases": [listed(c) for c in selected]}
            )
        else:
            for c in selected:
                print(line(c))
        return EXIT_OK
    st = driver_status()
    if not st.usable:
        message = f"{needs}, and none is usable here: {st.reason}"
        return report_error(args.json, "verify", EXIT_CANNOT_RUN, message)
    return selected


def run_cli(main: Callable[[], int], *, json_mode: bool, command: str) -> int:
    """Run a command's body and return its exit code, keeping the CLI's promises: a closed pipe
    ends quietly (:data:`EXIT_CLOSED_PIPE`, no traceback), and in ``--json`` mode an unexpected
    error still prints exactly one JSON document (``{"command", "exit_code", "error"}``)."""
    try:
        try:
            code = main()
        except (KeyboardInterrupt, BrokenPipeError, StdoutError):
            raise
        except Exception as exc:
            if not json_mode or _missing_dependency(exc):
                raise
            print_json(
                {
                    "command": command,
                    "exit_code": EXIT_FAILED,
                    "error": f"{type(exc).__name__}: {exc}",
                }
            )
            code = EXIT_FAILED
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return code
    except BrokenPipeError:
        return _closed_pipe()


def _missing_dependency(exc: BaseException) -> str | None:
    """The dependency whose import failed (``numpy``, ``cuda.core``, ...), else None."""
    name = getattr(exc, "name", None) or ""
    if isinstance(exc, ModuleNotFoundError) and name.split(".")[0] in DEPENDENCIES:
        return name
    return None


class StdoutError(OSError):
    """Writing to stdout failed (a full disk, an I/O error), told apart from the OSErrors of the
    command's own work; a closed pipe stays :class:`BrokenPipeError`."""


class _GuardedStdout:
    """``sys.stdout`` whose write errors other than a closed pipe raise :class:`StdoutError`."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _c_stdout_to_stderr() -> Any:
    """Send what C code writes to file descriptor 1 to stderr, keeping ``sys.stdout`` on the real
    stdout through a duplicate; return the new ``sys.stdout`` (None when nothing was changed).

    In ``--json`` mode stdout holds one JSON document and nothing else, but cuDNN's log goes to
    descriptor 1 with ``CUDNN_LOGDEST_DBG=stdout`` and cuTENSOR's whenever ``CUTENSOR_LOG_LEVEL``
    or ``_MASK`` is set without ``CUTENSOR_LOG_FILE``: at the descriptor it reaches stderr
    whichever library, variable or version writes it."""
    try:
        sys.stdout.flush()
        if sys.stdout.fileno() != 1:
            return None
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # not a real file (captured in a test)
        return None
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: leave stdout as it is
        os.close(saved)
        return None
    stream = os.fdopen(saved, "w", encoding=sys.stdout.encoding, errors=sys.stdout.errors)
    sys.stdout = stream
    return stream


def _restore_stdout(stream: Any, original: Any) -> None:
    """Undo :func:`_c_stdout_to_stderr` (for callers that run ``main`` in their own process)."""
    sys.stdout = original
    try:
        stream.flush()
    except OSError:
        pass  # reported already; what is left goes nowhere
    try:
        os.dup2(stream.fileno(), 1)
    finally:
        try:
            stream.close()
        except OSError:
            pass


def guard_main(main: Callable[[list[str]], int], argv: Sequence[str] | None) -> int:
    """Run a command line's ``main(argv)`` (default ``sys.argv[1:]``) and return its exit code,
    keeping the promises no single command can keep alone:

    * with ``--json`` on the line, the libraries' own output to stdout goes to stderr
      (:func:`_c_stdout_to_stderr`): stdout holds the one JSON document;
    * stdout that cannot be written (a full disk, an I/O error) is one line on stderr and
      :data:`EXIT_FAILED`, not a traceback and another at exit; a closed pipe ends quietly
      (:data:`EXIT_CLOSED_PIPE`);
    * a dependency this Python cannot import (the command run outside the environment the
      package was installed in) is one clear message, not a traceback: :data:`EXIT_CANNOT_RUN`.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in args
    if sys.stdout is None:  # started with stdout closed (``>&-``): nowhere to report to
        print("error: stdout is closed", file=sys.stderr)
        return EXIT_FAILED
    original = sys.stdout
    swapped = _c_stdout_to_stderr() if json_mode else None
    sys.stdout = _GuardedStdout(sys.stdout)
    try:
        try:
            code = main(args)
        except ImportError as exc:
            name = _missing_dependency(exc)
            if name is None:
                raise
            command = next((a for a in args if not a.startswith("-")), None)
            code = report_error(json_mode, command, EXIT_CANNOT_RUN, not_importable(name, exc))
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except StdoutError as exc:
        print(f"error: cannot write to stdout: {exc.strerror or exc}", file=sys.stderr)
        _discard_stdout()
        return EXIT_FAILED
    finally:
        if swapped is None:
            sys.stdout = original
        else:
            _restore_stdout(swapped, original)


def _closed_pipe() -> int:
    _discard_stdout()
    return EXIT_CLOSED_PIPE


def _discard_stdout() -> None:
    # Python would print "Exception ignored ... BrokenPipeError" (or OSError) at exit while
    # flushing what stdout still buffers: point stdout at /dev/null so that the exit is quiet.
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (captured in a test)
        pass
    finally:
        os.close(devnull)


_ROLE = re.compile(r":[a-z]+:`~?\.?([^`]+)`")  # :func:`name`, :mod:`~.suite`, ...


def plain_text(text: str | None) -> str:
    """A docstring as terminal text: reStructuredText roles become their target's name and
    ````literal```` becomes ```literal``` (argparse prints descriptions as they are)."""
    return _ROLE.sub(r"\1", inspect.cleandoc(text or "")).replace("``", "`")


class _UsageError(Exception):
    def __init__(self, usage: str, message: str) -> None:
        super().__init__(message)
        self.usage = usage
        self.message = message


class _HelpRequested(Exception):
    def __init__(self, text: str, key: str = "help", value: str | None = None) -> None:
        super().__init__(text)
        self.text = text  # as printed without --json
        self.key = key  # the JSON document's field: "help" or "version"
        self.value = text if value is None else value


class _VersionAction(argparse.Action):
    """``--version``: the package's version, as text or (with ``--json``) a JSON document."""

    def __init__(self, option_strings: Sequence[str], dest: str, version: str, **kw: Any) -> None:
        kw.setdefault("help", "print the package's version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)
        self.version = version

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        text = f"{parser.prog.split()[-1]} {self.version}\n"
        raise _HelpRequested(text, "version", self.version)


def add_version_option(parser: argparse.ArgumentParser, package: str) -> None:
    """``--version`` on ``parser``: ``package.__version__`` (one source, pyproject.toml reads it)."""
    version = importlib.import_module(package).__version__
    parser.add_argument("--version", action=_VersionAction, version=version)


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors and help come back to :func:`parse_args` (which
    prints them as text or as one JSON document) instead of being printed and exiting. Its
    subparsers are of this class too (argparse makes them with the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The descriptions are docstrings, already wrapped; argparse would refill their lists.
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        # No abbreviations: `--jso` would be taken for --json, so a typo would change the output.
        kwargs.setdefault("allow_abbrev", False)
        if "description" in kwargs:
            kwargs["description"] = plain_text(kwargs["description"])
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:  # argparse's contract: does not return
        raise _UsageError(self.format_usage(), f"{self.prog}: error: {message}")

    def print_help(self, file: Any = None) -> None:
        raise _HelpRequested(self.format_help())

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("parser_class", _SubcommandParser)
        return super().add_subparsers(**kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and isinstance(self, _SubcommandParser):
            # argparse hands a subcommand's unknown options back to the main parser, which would
            # refuse them with its own usage: the subcommand's usage is the one that helps.
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


class _SubcommandParser(CliParser):
    """A subcommand's parser (``info``, ``smoke``, ...): refuses what it does not know itself."""


def parse_args(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> argparse.Namespace | int:
    """Parse ``argv`` (default ``sys.argv[1:]``) with a :class:`CliParser`: the namespace, or the
    exit code after printing help (0) or a usage error (:data:`EXIT_USAGE`). With ``--json``
    anywhere on the line either is one JSON document on stdout (``command``, ``exit_code`` and
    ``help`` or ``error`` with ``usage``), as every ``--json`` command promises."""
    argv = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in argv
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        try:
            args = parser.parse_args(argv)
        except _HelpRequested as exc:
            if json_mode:
                print_json({"command": command, "exit_code": EXIT_OK, exc.key: exc.value})
            else:
                print(exc.text, end="")
            sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
            return EXIT_OK
        except _UsageError as exc:
            if json_mode:
                print_json(
                    {
                        "command": command,
                        "exit_code": EXIT_USAGE,
                        "error": exc.message,
                        "usage": exc.usage.strip(),
                    }
                )
                sys.stdout.flush()
            else:
                print(exc.usage + exc.message, file=sys.stderr)
            return EXIT_USAGE
    except BrokenPipeError:
        return _closed_pipe()
    # ``--json`` is accepted before the subcommand too (``python -m pycudnn --json info``); the
    # main parser stores it apart, as a subcommand's own default would overwrite it.
    args.json = bool(getattr(args, "json", False) or getattr(args, "json_first", False))
    return args


def summarize(statuses: Iterable[str]) -> dict[str, int]:
    """Counts of ``ok``/``skipped``/``failed`` (the smoke summary)."""
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    for s in statuses:
        counts[s] = counts.get(s, 0) + 1
    return counts
