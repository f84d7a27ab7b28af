"""Known-bad engine tables are parsed strictly: an entry that would apply more widely than meant,
or to nothing at all, is refused with a ValueError naming the file, the entry and the rule."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pycudnn import known_bad

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "pycudnn" / "data" / "known_bad_engines.json"
GOOD: dict[str, Any] = {
    "engine_id": 10,
    "operation": "conv_fprop",
    "layouts": ["NHWC"],
    "input_dtypes": ["float16"],
    "cudnn_min": "9.0.0",
    "cudnn_max": None,
    "seen_wrong_in": ["9.19.0"],
    "found": "a test",
    "advice": "",
}


def _table(*entries: dict[str, Any], **top: Any) -> str:
    return json.dumps({"schema": 1, "entries": list(entries), **top})


def test_the_shipped_table_is_valid_under_the_strict_rules() -> None:
    entries = known_bad.load_table(SHIPPED)
    assert entries, "the shipped table has entries"
    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert len(entries) == len(raw["entries"])
    assert len(known_bad._shipped()) == len(entries)


def test_a_well_formed_entry_loads_with_every_field() -> None:
    (e,) = known_bad.load_table(text=_table({**GOOD, "cudnn_max": "9.19"}))
    assert (e.engine_id, e.layouts, e.input_dtypes) == (10, ("NHWC",), ("float16",))
    assert (e.cudnn_min, e.cudnn_max) == (90000, 91999)  # "9.19" as a maximum: all of 9.19


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"layout": ["NHWC"]},
            r"entries\[1\] has the unknown key 'layout'; did you mean 'layouts'",
        ),
        ({"cudnn_maximum": "9.1"}, r"entries\[1\] has the unknown key 'cudnn_maximum'"),
        ({"layouts": ["nchw"]}, r"entries\[1\]\.layouts\[0\] 'nchw' is no operand's layout"),
        ({"layouts": ["N C H W"]}, r"'N C H W' is no operand's layout"),
        ({"layouts": ["NCHWX"]}, r"'NCHWX' is no operand's layout"),
        ({"layouts": ["NC/1HW1"]}, "a vector count of 1 is no vectorized layout"),
        ({"layouts": ["BMN"]}, "rank-3 layouts never match"),
        ({"input_dtypes": ["fp16"]}, r"input_dtypes\[0\] 'fp16' is no tensor's data type"),
        ({"input_dtypes": ["Float16"]}, r"'Float16' is no tensor's data type"),
        ({"input_dtypes": ["half"]}, r"'half' is no tensor's data type"),
        ({"cudnn_min": "9.20.0", "cudnn_max": "9.19.0"}, "cudnn_max 9.19.0 is below cudnn_min"),
        ({"engine_id": 2**63}, r"engine_id must be an int from 0 to 2\*\*63-1"),
        ({"engine_id": -1}, "engine_id must be an int"),
        ({"engine_id": True}, "engine_id must be an int"),
        ({"engine_id": 10.0}, "engine_id must be an int"),
        ({"found": 3}, r"entries\[1\]\.found must be a string, got int"),
        ({"advice": ["x"]}, r"entries\[1\]\.advice must be a string"),
        ({"layouts": "NHWC"}, r"layouts must be a list of strings"),
        ({"seen_wrong_in": [1]}, r"seen_wrong_in must be a list of strings"),
        ({"operation": "conv"}, r"operation must be one of"),
        ({"cudnn_min": 9}, r"cudnn_min must be a version string"),
        # minor and patch past 99 wrapped into the next version ("9.27.100" applied to 9.28.0)
        ({"cudnn_max": "9.27.100"}, r"cudnn_max must be .*minor and patch 0 to 99"),
        ({"cudnn_min": "9.100.0"}, r"cudnn_min must be .*minor and patch 0 to 99"),
    ],
)
def test_malformed_entries_are_refused_naming_the_entry(
    change: dict[str, Any], message: str
) -> None:
    other = {**GOOD, "engine_id": 11}
    with pytest.raises(ValueError, match=message):
        known_bad.load_table(text=_table(other, {**GOOD, **change}))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema": true, "entries": []}', r'"schema": 1 \(an int\)'),
        ('{"schema": 1.0, "entries": []}', r'"schema": 1 \(an int\)'),
        ('{"schema": "1", "entries": []}', r'"schema": 1'),
        ('{"schema": 1, "entries": [], "comment": "x"}', "the table has the unknown key 'comment'"),
        ('{"schema": 1, "entries": {}}', '"entries" must be a list'),
        ('{"schema": 1, "entries": [{"engine_id": 1, "engine_id": 70, "operation": "matmul"}]}',
         "the key 'engine_id' appears twice"),
        ("[]", '"schema": 1'),
        ("{", "does not parse"),
    ],
)  # fmt: skip
def test_malformed_tables_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        known_bad.load_table(text=text)


def test_a_repeated_entry_is_refused_but_one_engine_in_two_scopes_is_not() -> None:
    with pytest.raises(ValueError, match=r"entries\[1\] repeats entries\[0\]"):
        known_bad.load_table(text=_table(GOOD, GOOD))
    two = known_bad.load_table(text=_table(GOOD, {**GOOD, "layouts": ["NCHW"]}))
    assert [e.layouts for e in two] == [("NHWC",), ("NCHW",)]


@pytest.mark.parametrize("depth", [17, 1000, 100_000])
def test_deep_nesting_is_a_value_error_naming_the_entry(depth: int) -> None:
    nested = "[" * depth + "]" * depth
    text = '{"schema": 1, "entries": [' + json.dumps(GOOD) + ', {"found": ' + nested + "}]}"
    with pytest.raises(ValueError, match=r"<text>: entries\[1\] nests more than 16 levels"):
        known_bad.load_table(text=text)
    # Brackets inside strings are text, not nesting.
    deep_string = {**GOOD, "found": "[" * 1000}
    assert known_bad.load_table(text=_table(deep_string))[0].found == "[" * 1000


def test_the_environment_variable_table_is_held_to_the_same_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mine.json"
    path.write_text(_table({**GOOD, "layout": ["NHWC"]}))
    monkeypatch.setenv(known_bad.ENV_VAR, os.fspath(path))
    with pytest.raises(ValueError, match=rf"{path}: entries\[0\] has the unknown key 'layout'"):
        known_bad.table()
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema": 1, "entries": [' + "[" * 50_000 + "]" * 50_000 + "]}")
    monkeypatch.setenv(known_bad.ENV_VAR, os.fspath(deep))
    with pytest.raises(ValueError, match=r"entries\[0\] nests more than"):
        known_bad.table()


def test_a_partial_cudnn_max_covers_the_versions_it_names() -> None:
    """cudnn_max "9.19" meant 9.19.0 only, so 9.19.1 was left out of the entry."""
    (entry,) = known_bad.load_table(text=_table({**GOOD, "cudnn_min": "9.19", "cudnn_max": "9.19"}))
    assert entry.applies_to_version(91900) and entry.applies_to_version(91901)
    assert not entry.applies_to_version(91800) and not entry.applies_to_version(92000)


def test_an_integer_past_pythons_digit_limit_is_refused_naming_the_table() -> None:
    # json raised Python's own ValueError, naming neither the table nor the environment variable
    text = '{"schema": 1, "entries": [{"engine_id": ' + "9" * 5000 + "}]}"
    with pytest.raises(ValueError, match=r"^<text>: the known-bad engine table does not parse"):
        known_bad.load_table(text=text)
