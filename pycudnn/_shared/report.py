"""The ``info`` report both command lines print: library versions and paths, driver, devices."""

from __future__ import annotations

import importlib
from typing import Any

from .cuda import driver_status

__all__ = ["info_report", "print_report"]


def info_report(package: str, library: str) -> dict[str, Any]:
    """``package``'s version, then ``library``'s (``cudnn``/``cutensor``, from ``package._info``):
    version, path, how it was found, the supported range and what the loaded version lacks.

    A library that cannot be loaded is reported under ``<library>_error`` instead of raising.
    """
    report: dict[str, Any] = {package: importlib.import_module(package).__version__}
    try:
        info = importlib.import_module(f"{package}._info")
        report.update(
            {
                f"{library}_version": ".".join(map(str, info.version_tuple())),
                f"{library}_path": info.library_path(),
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
    st = driver_status()
    report["cuda_driver"] = st.driver_version_text if st.library_found else "not installed"
    report["devices"] = list(st.devices) if st.usable else f"no CUDA device: {st.reason}"
    return report


def print_report(report: dict[str, Any]) -> None:
    width = max(len(k) for k in report)
    for key, value in report.items():
        if isinstance(value, list):
            what = "device(s)" if key == "devices" else "item(s)"
            print(f"{key:<{width}}  {len(value)} {what}" if value else f"{key:<{width}}  nothing")
            for item in value:
                print(f"{'':<{width}}    {item}")
        else:
            print(f"{key:<{width}}  {value}")
