"""The reliability campaign's targets for files, known-bad tables, the typed backend layer and
tolerances, run briefly through the campaign's own harness (each input in a worker process: a
crash or a hang is counted, with its input, instead of ending this test run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

import reliability  # noqa: E402 - the script, importable from scripts/
import reliability_fuzz  # noqa: E402

pytestmark = pytest.mark.usefixtures("libcuda")

TARGETS = ("special_files", "known_bad_tables", "backend_typed", "tolerance")


def test_the_targets_are_registered_with_a_weight() -> None:
    for name in TARGETS:
        assert name in reliability_fuzz.TARGETS and reliability_fuzz.WEIGHTS[name] > 0


@pytest.mark.parametrize(("target", "count"), [
    ("special_files", 30), ("known_bad_tables", 150), ("backend_typed", 150), ("tolerance", 150),
])  # fmt: skip
def test_a_short_run_has_no_crash_hang_or_unexpected_outcome(
    target: str, count: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reliability, "_TMP", [str(tmp_path)])
    fig = reliability.fuzz_target(target, count, 20261129, 60.0, False)
    assert fig["inputs"] == count
    bad = {k: fig[k] for k in ("crashes", "hangs", "unexpected") if fig[k]}
    assert not bad, (bad, fig["examples"])
    assert fig["exceptions"] > 0  # the hostile inputs were refused, not all accepted
