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

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from .cuda import DriverStatus, driver_status

__all__ = [
    "EXIT_CANNOT_RUN",
    "EXIT_CLOSED_PIPE",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "device_record",
    "devices_report",
    "info_report",
    "print_json",
    "print_report",
    "run_cli",
    "summarize",
    "wheel_of",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANNOT_RUN = 3
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by a closed pipe

# The wheels each library can come from (NVIDIA's names on PyPI).
_WHEELS = {
    "cudnn": ("nvidia-cudnn-cu12", "nvidia-cudnn-cu13"),
    "cutensor": ("cutensor-cu12", "cutensor-cu13"),
}


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


def wheel_of(library: str, path: str) -> str | None:
    """``"<wheel> <version>"`` of the installed wheel that holds the file ``path`` (the loaded
    ``library``, ``cudnn`` or ``cutensor``), or None when it came from elsewhere (system, conda).

    The wheel's version can differ from the library's own number: cutensor-cu12 2.8.1 ships a
    library that reports 2.8.0.
    """
    try:
        target = Path(path).resolve()
    except OSError:
        return None
    for name in _WHEELS.get(library, ()):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.name == target.name and Path(str(dist.locate_file(f))).resolve() == target:
                return f"{name} {dist.version}"
    return None


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
    except ImportError as exc:  # LibraryNotFoundError: missing, not loadable, or below the floor
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


def run_cli(main: Callable[[], int], *, json_mode: bool, command: str) -> int:
    """Run a command's body and return its exit code, keeping the CLI's promises: a closed pipe
    ends quietly (:data:`EXIT_CLOSED_PIPE`, no traceback), and in ``--json`` mode an unexpected
    error still prints exactly one JSON document (``{"command", "exit_code", "error"}``)."""
    try:
        try:
            code = main()
        except (KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as exc:
            if not json_mode:
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
        # Python would print "Exception ignored ... BrokenPipeError" at exit while flushing
        # stdout: point stdout at /dev/null so that the exit is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (captured in a test)
            pass
        finally:
            os.close(devnull)
        return EXIT_CLOSED_PIPE


def summarize(statuses: Iterable[str]) -> dict[str, int]:
    """Counts of ``ok``/``skipped``/``failed`` (the smoke summary)."""
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    for s in statuses:
        counts[s] = counts.get(s, 0) + 1
    return counts
