"""The ``info`` report both command lines print: library versions and paths, driver, devices."""

from __future__ import annotations

import importlib
from typing import Any

from .cuda import driver_status

__all__ = ["info_report", "print_report"]


def info_report(package: str, library: str) -> dict[str, Any]:
    """``package``'s version, then ``library``'s (``cudnn``/``cutensor``, from ``package._info``).

    A library that cannot be loaded is reported under ``<library>_error`` instead of raising.
    """
    report: dict[str, Any] = {package: importlib.import_module(package).__version__}
    try:
        info = importlib.import_module(f"{package}._info")
        report.update(
            {
                f"{library}_version": ".".join(map(str, info.version_tuple())),
                f"{library}_path": info.library_path(),
                f"{library}_cudart_version": info.cudart_version(),
                "bindings_header_version": ".".join(map(str, info.header_version())),
            }
        )
    except ImportError as exc:
        report[f"{library}_error"] = str(exc)
    st = driver_status()
    report["cuda_driver"] = st.driver_version_text if st.library_found else "not installed"
    report["devices"] = list(st.devices) if st.usable else f"no CUDA device: {st.reason}"
    return report


def print_report(report: dict[str, Any]) -> None:
    width = max(len(k) for k in report)
    for key, value in report.items():
        if isinstance(value, list):
            print(f"{key:<{width}}  {len(value)} device(s)")
            for dev in value:
                print(f"{'':<{width}}    {dev}")
        else:
            print(f"{key:<{width}}  {value}")
