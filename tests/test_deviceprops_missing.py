"""A device-properties file that does not exist: the error lists the JSON files that do."""

from __future__ import annotations

from pathlib import Path

import pytest

from pycudnn.deviceprops import DeviceProperties


def test_a_misspelt_name_lists_the_files_in_its_folder(tmp_path: Path) -> None:
    for name in ("h100-sxm-80gb.json", "a100.json"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    (tmp_path / "sub.json").mkdir()  # a folder, not a file: not offered
    with pytest.raises(OSError, match="cannot read device properties") as info:
        DeviceProperties.load(tmp_path / "h100-sxm.json")
    assert str(info.value).endswith(
        f"; the JSON files in {str(tmp_path)!r} are: a100.json, h100-sxm-80gb.json"
    ), info.value


def test_an_empty_folder_and_a_missing_folder_say_so(tmp_path: Path) -> None:
    with pytest.raises(OSError) as info:
        DeviceProperties.load(tmp_path / "h100.json")
    assert str(info.value).endswith("are: none"), info.value
    with pytest.raises(OSError) as info:
        DeviceProperties.load(tmp_path / "nowhere" / "h100.json")
    assert "does not exist either" in str(info.value), info.value


def test_a_long_folder_is_cut_short(tmp_path: Path) -> None:
    for i in range(13):
        (tmp_path / f"gpu{i:02d}.json").write_text("{}", encoding="utf-8")
    with pytest.raises(OSError) as info:
        DeviceProperties.load(tmp_path / "h100.json")
    assert "gpu09.json and 3 more" in str(info.value) and "gpu10" not in str(info.value)


def test_the_committed_readme_names_a_file_that_exists() -> None:
    # tests/data/deviceprops/README.md loaded h100-sxm.json, which was never committed.
    folder = Path(__file__).parent / "data" / "deviceprops"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    loaded = [line for line in readme.splitlines() if "DeviceProperties.load(" in line]
    assert loaded, "the README shows no load"
    for line in loaded:
        name = line.split('load("', 1)[1].split('"', 1)[0]
        assert (Path(__file__).parent.parent / name).is_file(), line
