"""The CLI's promises, in process: --json prints one document even when a command breaks, and the
exit codes are the documented ones."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from _nvbind import report


def test_an_unexpected_error_in_json_mode_is_still_one_json_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken() -> int:
        raise RuntimeError("the device fell off the bus")

    code = report.run_cli(broken, json_mode=True, command="smoke")
    doc = json.loads(capsys.readouterr().out)
    assert code == report.EXIT_FAILED == doc["exit_code"] == 1
    assert doc["command"] == "smoke" and "the device fell off the bus" in doc["error"]


def test_without_json_an_unexpected_error_propagates() -> None:
    def broken() -> int:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        report.run_cli(broken, json_mode=False, command="info")


def test_the_readme_documents_every_exit_code() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    table = readme.split("### Exit codes", 1)[1].split("\n\n", 3)[2]
    documented = {
        int(line.split("|")[1]) for line in table.splitlines()[2:] if line.startswith("|")
    }
    codes = {
        report.EXIT_OK,
        report.EXIT_FAILED,
        report.EXIT_USAGE,
        report.EXIT_CANNOT_RUN,
        report.EXIT_CLOSED_PIPE,
    }
    assert documented == codes
    assert report.EXIT_CLOSED_PIPE == 128 + signal.SIGPIPE


def test_device_record_has_the_one_schema() -> None:
    record = report.device_record(
        {"ordinal": 0, "name": "GPU", "compute_capability": (9, 0), "total_memory": 80 * 2**30}
    )
    assert record == {
        "ordinal": 0,
        "name": "GPU",
        "compute_capability": [9, 0],
        "sm": "sm_90",
        "total_memory": 80 * 2**30,
    }
