"""Shared fixtures and the tiers.

CPU tier: everything the real libraries do without a GPU; tests needing a part that is absent skip
with a reason naming it. GPU tier: tests marked ``gpu``, skipped with the driver's reason when no
device is usable, selected with ``pytest -m gpu``.
"""

from __future__ import annotations

import ctypes.util
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from versioned import skip_unless_cudnn

if TYPE_CHECKING:
    from pycudnn.deviceprops import DeviceProperties

DATA = Path(__file__).parent / "data"
DEVICEPROPS_DIR = DATA / "deviceprops"
H100_PROPS_FILE = DEVICEPROPS_DIR / "h100-sxm-80gb.json"

# JAX (imported by a few GPU interop tests) grabs 75% of the GPU's memory on first use by default,
# which would starve the cuDNN and cuTENSOR tests that run after it in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def _gpu_status() -> tuple[bool, str]:
    from _nvbind.cuda import driver_status

    st = driver_status()
    return st.usable, st.reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    usable, reason = _gpu_status()
    if usable:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


GPU_SKIP_PREFIX = "needs a CUDA GPU: "


def skip_summary(reasons: list[str]) -> list[str]:
    """One line per reason a test was skipped, most frequent first; every GPU test skipped for
    want of a GPU counts under one line whatever the wording after "needs a CUDA GPU"."""
    counts: dict[str, int] = {}
    for reason in reasons:
        if reason.startswith(GPU_SKIP_PREFIX):
            reason = f"no GPU ({reason.removeprefix(GPU_SKIP_PREFIX)})"
        counts[reason] = counts.get(reason, 0) + 1
    lines = []
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        what = "GPU test" if reason.startswith("no GPU (") else "test"
        lines.append(f"{n} {what}{'s' if n != 1 else ''} skipped: {reason}")
    return lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The skips in a few lines grouped by reason, instead of one line per test (``-rs`` still
    lists each)."""
    if "s" in (config.option.reportchars or "") or "a" in (config.option.reportchars or ""):
        return  # asked for the full list: pytest prints it
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons.append(str(longrepr[2]).removeprefix("Skipped: "))
    if reasons:
        terminalreporter.section("skipped, by reason", sep="-")
        for line in skip_summary(reasons):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def libcuda() -> None:
    """Skip unless the NVIDIA driver library is present (cuDNN's backend needs it to finalize)."""
    from _nvbind.cuda import driver_status

    if not driver_status().library_found:
        pytest.skip(
            "cuDNN's backend API needs libcuda.so.1 (Debian: libcuda1 from non-free; "
            "scripts/install_libcuda.sh installs it)"
        )


@pytest.fixture(scope="session")
def gpu_device() -> int:
    """Ordinal 0 when a GPU is usable, else skip."""
    usable, reason = _gpu_status()
    if not usable:
        pytest.skip(f"needs a CUDA GPU: {reason}")
    return 0


def deviceprops_files() -> list[Path]:
    """Device-properties JSON files captured on real GPUs (``python -m pycudnn deviceprops``)."""
    return sorted(DEVICEPROPS_DIR.glob("*.json")) if DEVICEPROPS_DIR.is_dir() else []


@pytest.fixture(scope="session")
def deviceprops_json(libcuda: None) -> dict[str, Any]:
    """A device-properties JSON captured on a real GPU, or skip until one is committed (or when
    the loaded cuDNN cannot plan for device properties here)."""
    if not _gpu_status()[0]:
        skip_unless_cudnn((9, 10), "execution plans for device properties without a GPU")
    files = deviceprops_files()
    if not files:
        pytest.skip(
            f"no device-properties JSON captured on a real GPU in {DEVICEPROPS_DIR.relative_to(DATA.parent.parent)} "
            "(capture one with `python -m pycudnn deviceprops --save FILE` on the target GPU)"
        )
    return json.loads(files[0].read_text())


@pytest.fixture
def h100_props(libcuda: None) -> DeviceProperties:
    """The committed H100 SXM 80GB properties (``DeviceProperties``), for tests whose numbers were
    measured for that GPU; skip with ``DeviceProperties.why_no_plans()`` where this process cannot
    plan for device properties (tests/test_versions.py asserts those refusals)."""
    from pycudnn.deviceprops import DeviceProperties

    why_not = DeviceProperties.why_no_plans()
    if why_not is not None:
        pytest.skip(why_not)
    return DeviceProperties.load(H100_PROPS_FILE)


def has_library(name: str) -> bool:
    return ctypes.util.find_library(name) is not None or os.path.exists(name)
