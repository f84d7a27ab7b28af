"""pycudnn.DeviceProperties: validation (anywhere), the DEVICEPROP descriptor (libcuda.so.1), and
the full round trip with a device-properties JSON captured on a real GPU (``deviceprops_json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pycudnn
from _nvbind.cuda import driver_status
from pycudnn.deviceprops import REQUIRED_KEYS, VERSION_KEY, DeviceProperties


def test_public_name() -> None:
    assert pycudnn.DeviceProperties is DeviceProperties


# The 23 keys cuDNN 9.19 wrote for an H100 (the raw capture of 2026-11-24); every cuDNN with
# DEVICEPROP requires them, and finalize fails with "!json_object.HasMember(key)" for one missing.
# Written out here from that capture, not from pycudnn.deviceprops. Later versions require more
# (cuDNN 9.27: memoryBusWidth), which is why the loaded cuDNN is asked (tests below).
DOCUMENTED_KEYS = {
    "maxGridSize", "maxBlockSize", "regsPerBlock", "multiProcessorCount", "warpSize",
    "maxSharedMemoryPerBlock", "maxSharedMemoryPerBlockOptin", "reservedSharedMemoryPerBlock",
    "maxRegistersPerSM", "maxCtasPerSM", "maxThreadsPerBlock", "maxThreadsPerSM", "pciDeviceId",
    "isTccDriver", "supportCoopLaunch", "totalGlobalMem", "smClockRateKHz", "memClockRateKHz",
    "l2CacheSize", "cudaDeviceId", "deviceVer", "driverVer", "deviceName",
}  # fmt: skip


@pytest.fixture
def complete_json() -> dict[str, Any]:
    """A syntactically complete description for the checks done in Python only.

    The values are NOT a real GPU's: nothing built from this dict may reach cuDNN (a DEVICEPROP
    descriptor must come from a capture on the device). Validation, JSON round trips and
    fingerprints need no more than a complete dict, so they run on every machine.
    """
    data: dict[str, Any] = {key: 1 for key in DOCUMENTED_KEYS}
    data.update(
        maxGridSize=[2, 3, 4], maxBlockSize=[5, 6, 7], deviceVer=900, deviceName="not a real GPU"
    )
    return data


def test_required_keys_are_the_documented_set() -> None:
    assert len(REQUIRED_KEYS) == len(set(REQUIRED_KEYS))
    assert set(REQUIRED_KEYS) == DOCUMENTED_KEYS


@pytest.mark.parametrize(
    ("source", "exc", "fragment"),
    [
        ("{not json", ValueError, "does not parse"),
        ("[1, 2]", TypeError, "JSON object"),
        (42, TypeError, "JSON string or a dict"),
        ({}, ValueError, "lacks the key 'maxGridSize' (and 22 more"),
        ({"maxGridSize": [1, 2, 3]}, ValueError, "lacks the key 'maxBlockSize'"),
    ],
)
def test_incomplete_or_malformed_json_is_refused_before_cudnn(
    source: Any, exc: type, fragment: str
) -> None:
    with pytest.raises(exc) as info:
        DeviceProperties.from_json(source)
    assert fragment in str(info.value)


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="cannot read device properties"):
        DeviceProperties.load(tmp_path / "absent.json")


def test_load_names_the_file_on_bad_content(tmp_path: Path) -> None:
    path = tmp_path / "partial.json"
    path.write_text('{"deviceName": "partial"}')
    with pytest.raises(ValueError, match=r"partial\.json: device-properties JSON lacks the key"):
        DeviceProperties.load(path)


@pytest.mark.parametrize("text", ["[]", "null", "42", '"props"'])
def test_load_names_the_file_when_it_is_not_a_json_object(text: str, tmp_path: Path) -> None:
    path = tmp_path / "not-an-object.json"
    path.write_text(text)
    with pytest.raises(TypeError) as info:
        DeviceProperties.load(path)
    assert str(path) in str(info.value) and "must be a JSON object" in str(info.value)


def test_from_device_without_gpu_says_how_to_capture() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="deviceprops --save"):
        DeviceProperties.from_device(0)


@pytest.mark.parametrize(
    ("ordinal", "exc"), [(-1, ValueError), (True, TypeError), ("0", TypeError)]
)
def test_from_device_argument_checks(ordinal: Any, exc: type) -> None:
    with pytest.raises(exc):
        DeviceProperties.from_device(ordinal)


# -- with a captured JSON --------------------------------------------------------------------------


def test_properties_and_descriptor(deviceprops_json: dict[str, Any]) -> None:
    props = DeviceProperties.from_json(deviceprops_json)
    ver = deviceprops_json["deviceVer"]
    assert props.device_name == deviceprops_json["deviceName"]
    assert props.compute_capability == (ver // 100, ver % 100 // 10)
    assert props.sm_version == props.compute_capability[0] * 10 + props.compute_capability[1]
    assert props.multiprocessor_count == deviceprops_json["multiProcessorCount"]
    assert props.total_memory == deviceprops_json["totalGlobalMem"]
    desc = props.descriptor
    assert desc.is_finalized and props.descriptor is desc  # built once
    # cuDNN hands the description back through the same attribute
    back = json.loads(desc.get("DEVICEPROP_JSON_REPRESENTATION", attr_type="CHAR"))
    assert back["deviceName"] == props.device_name
    assert back["multiProcessorCount"] == props.multiprocessor_count
    props.close()
    assert desc.closed
    assert props.descriptor.is_finalized  # rebuilt on demand


# -- Python-side checks (a complete but synthetic dict: no cuDNN call) ---------------------------


def test_json_round_trips(tmp_path: Path, complete_json: dict[str, Any]) -> None:
    props = DeviceProperties.from_json(json.dumps(complete_json))
    assert json.loads(props.to_json()) == complete_json
    path = tmp_path / "props.json"
    props.save(path)
    again = DeviceProperties.load(path)
    assert again == props and again.as_dict() == complete_json
    assert again.fingerprint == props.fingerprint
    assert props.compute_capability == (9, 0) and props.sm_version == 90  # deviceVer 900


def test_the_properties_share_no_list_with_the_caller(
    tmp_path: Path, complete_json: dict[str, Any]
) -> None:
    # The grid and block sizes are lists: the dict given, as_dict() and props[key] were the
    # properties' own, so changing one changed what save() wrote and what compared equal, but
    # not what cuDNN was given (nor the fingerprint plans are cached under).
    given = json.loads(json.dumps(complete_json))
    props = DeviceProperties.from_json(given)
    fingerprint, text = props.fingerprint, props.to_json()
    given["maxGridSize"][0] = 1
    props.as_dict()["maxBlockSize"][2] = 0
    props["maxBlockSize"][1] = 0
    assert props.as_dict() == complete_json and props.to_json() == text
    props.save(tmp_path / "p.json")
    again = DeviceProperties.load(tmp_path / "p.json")
    assert again == props and again.as_dict() == complete_json
    assert again.fingerprint == fingerprint


def test_fingerprint_ignores_the_ordinal_but_not_the_device(
    complete_json: dict[str, Any],
) -> None:
    base = DeviceProperties.from_json(complete_json)
    other_ordinal = DeviceProperties.from_json({**complete_json, "cudaDeviceId": 7})
    more_sms = DeviceProperties.from_json(
        {**complete_json, "multiProcessorCount": complete_json["multiProcessorCount"] + 1}
    )
    assert other_ordinal.fingerprint == base.fingerprint
    assert more_sms.fingerprint != base.fingerprint


@pytest.mark.parametrize("key", sorted(DOCUMENTED_KEYS))
def test_each_missing_key_is_named(key: str, complete_json: dict[str, Any]) -> None:
    partial = {k: v for k, v in complete_json.items() if k != key}
    with pytest.raises(ValueError, match=f"lacks the key '{key}'"):
        DeviceProperties.from_json(partial)


@pytest.mark.parametrize(
    ("key", "value"),
    [("maxGridSize", [1, 2]), ("deviceName", 5), ("warpSize", -32), ("deviceVer", 95)],
)
def test_wrong_value_types_are_named(key: str, value: Any, complete_json: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=key):
        DeviceProperties.from_json({**complete_json, key: value})


def test_the_writing_version_is_recorded_but_not_given_to_cudnn(
    complete_json: dict[str, Any], tmp_path: Path
) -> None:
    props = DeviceProperties.from_json({**complete_json, VERSION_KEY: 91900})
    assert props.cudnn_version == 91900
    assert VERSION_KEY not in json.loads(props._text)  # what cuDNN is given
    # the same GPU captured under another cuDNN keys the same plans
    assert props.fingerprint == DeviceProperties.from_json(complete_json).fingerprint
    path = tmp_path / "p.json"
    props.save(path)
    assert DeviceProperties.load(path).cudnn_version == 91900
    assert DeviceProperties.from_json(complete_json).cudnn_version is None


@pytest.mark.parametrize("indent", [None, 2])
def test_to_json_keeps_the_writing_version(
    indent: int | None, complete_json: dict[str, Any]
) -> None:
    # The compact text left the version out (the indented one kept it): a copy made from it
    # was not equal to the original and no longer knew which cuDNN wrote the properties.
    props = DeviceProperties.from_json({**complete_json, VERSION_KEY: 91900})
    again = DeviceProperties.from_json(props.to_json(indent=indent))
    assert again == props and again.cudnn_version == 91900
    assert again.as_dict() == props.as_dict()


@pytest.mark.parametrize("bad", ["9.19", 919, True, -1])
def test_a_bad_writing_version_is_refused(bad: Any, complete_json: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=VERSION_KEY):
        DeviceProperties.from_json({**complete_json, VERSION_KEY: bad})


def test_the_committed_h100_file_says_which_cudnn_wrote_it(
    deviceprops_json: dict[str, Any],
) -> None:
    assert deviceprops_json[VERSION_KEY] == 91900
    assert set(deviceprops_json) == DOCUMENTED_KEYS | {"memoryBusWidth", VERSION_KEY}


def test_a_key_the_loaded_cudnn_needs_is_named_with_both_versions(
    deviceprops_json: dict[str, Any],
) -> None:
    """The file as cuDNN 9.19 wrote it (no memoryBusWidth): accepted by 9.19 (measured on the
    H100), refused by 9.27 and later (measured here) with the key and both versions named."""
    as_written = {k: v for k, v in deviceprops_json.items() if k != "memoryBusWidth"}
    props = DeviceProperties.from_json(as_written)
    loaded = pycudnn.version()
    if loaded < 92700:
        assert props.descriptor.is_finalized
        return
    with pytest.raises(ValueError) as info:
        props.descriptor  # noqa: B018 - building the descriptor is the point
    text = str(info.value)
    assert "'memoryBusWidth'" in text
    assert "written by cuDNN 9.19.0" in text
    assert f"loaded cuDNN {loaded // 10000}.{loaded % 10000 // 100}.{loaded % 100}" in text


# -- GPU -------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_from_device_captures_this_gpu(tmp_path: Path, gpu_device: int) -> None:
    props = DeviceProperties.from_device(gpu_device)
    st = driver_status()
    assert props.device_name == st.devices[gpu_device]["name"]
    assert props.compute_capability == tuple(st.devices[gpu_device]["compute_capability"])
    assert props.multiprocessor_count > 0
    assert set(props.as_dict()) >= DOCUMENTED_KEYS  # what cuDNN itself wrote
    path = tmp_path / "captured.json"
    props.save(path)
    assert DeviceProperties.load(path) == props
    assert props.cudnn_version == pycudnn.version()
    assert DeviceProperties.for_device(gpu_device) is DeviceProperties.for_device(gpu_device)
