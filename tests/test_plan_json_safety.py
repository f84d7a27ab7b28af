"""JSON headed for cuDNN is checked as cuDNN reads it; plans load only for the graph they were built
for; objects that own cuDNN objects or shared state are not copied.

Inputs that crashed the process (cuDNN 9.28) run in a child process, so that a regression fails the
test with the child's signal instead of ending the session.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from children import run_python
from plan_kinds import resealed as _resealed

from pycudnn.backend import BackendDescriptor
from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph
from pycudnn.plan import Plan, PlanCache, canonical

REPO = Path(__file__).resolve().parent.parent
PROPS_FILE = REPO / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"
run_child = functools.partial(run_python, timeout=180)

# The child's preamble: an H100's properties and a convolution plan's JSON.
CHILD = f"""
import json, pycudnn
from pycudnn.backend import BackendDescriptor
props = pycudnn.DeviceProperties.load({str(PROPS_FILE)!r})
g = pycudnn.Graph("conv")
x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
g.conv_fprop(x, w, padding=1)
conv = g.build(device_properties=props, cache=False).to_json()
conv = json.dumps(json.loads(conv), separators=(",", ":"))
def attempt(label, load):
    try:
        load()
        print(label, "ACCEPTED")
    except Exception as exc:
        print(label, type(exc).__name__, str(exc).replace(chr(10), " ")[:300])
"""


def _results(proc: Any) -> dict[str, str]:
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    out = {}
    for line in proc.stdout.splitlines():
        label, _, rest = line.partition(" ")
        out[label] = rest
    return out


def test_repeated_keys_in_plan_json_are_refused_on_every_path(
    deviceprops_json: dict[str, Any], tmp_path: Path
) -> None:
    # Python keeps the last copy of a repeated key, cuDNN the first: a valid last copy hid a
    # crashing first one from the checks (SIGSEGV or SIGABRT in cuDNN 9.28).
    path = tmp_path / "dup.json"
    proc = run_child(
        CHILD
        + f"""
cases = {{
    "stride": ('"stride":[1,1]', '"stride":[1,1,1,1,1,1,1,1,1],"stride":[1,1]'),
    "nodes": ('"nodes":[', '"nodes":5,"nodes":['),
    "name": ('"name":"1"', '"name":"abc","name":"1"'),
    "deviceName": ('"deviceName":"', '"deviceName":"' + "A" * 5000 + '","deviceName":"'),
}}
for key, (old, new) in cases.items():
    assert old in conv, old
    bad = conv.replace(old, new, 1)
    attempt("from_json:" + key, lambda: pycudnn.Plan.from_json(bad, device_properties=props))
    open({str(path)!r}, "w").write(bad)
    attempt("load:" + key, lambda: pycudnn.Plan.load({str(path)!r}, device_properties=props))
    attempt("load_plan:" + key, lambda: g.load_plan({str(path)!r}, device_properties=props))
    def backend():
        d = BackendDescriptor("EXECUTION_PLAN")
        d.set("EXECUTION_PLAN_DEVICEPROP", props.descriptor)
        d.set("EXECUTION_PLAN_JSON_REPRESENTATION", bad, attr_type="CHAR")
        d.finalize()
    attempt("backend:" + key, backend)
"""
    )
    results = _results(proc)
    assert len(results) == 16, results
    for label, result in results.items():
        key = label.partition(":")[2]
        assert result.startswith("ValueError"), (label, result)
        assert f"the key {key!r} twice" in result, (label, result)


def test_repeated_device_name_in_deviceprop_json_is_refused(
    deviceprops_json: dict[str, Any],
) -> None:
    proc = run_child(
        CHILD
        + """
dp = json.loads(props.to_json()); dp.pop("cudnnVersion", None)
text = json.dumps(dp, separators=(",", ":"))
text = text.replace('"deviceName":"', '"deviceName":"' + "A" * 3000 + '","deviceName":"', 1)
def backend():
    d = BackendDescriptor("DEVICEPROP")
    d.set("DEVICEPROP_JSON_REPRESENTATION", text, attr_type="CHAR")
    d.finalize()
    d.close()
attempt("backend", backend)
attempt("from_json", lambda: pycudnn.DeviceProperties.from_json(text))
"""
    )
    results = _results(proc)
    assert set(results) == {"backend", "from_json"}, results
    for label, result in results.items():
        assert result.startswith("ValueError"), (label, result)
        assert "the key 'deviceName' twice" in result, (label, result)


def test_nul_in_json_attribute_is_refused(deviceprops_json: dict[str, Any]) -> None:
    # cuDNN reads the value as a C string: the text after a NUL made Python's parse fail, and the
    # check then left the (crashing) prefix to cuDNN.
    proc = run_child(
        CHILD
        + """
bad9 = conv.replace('"stride":[1,1]', '"stride":[1,1,1,1,1,1,1,1,1]')
def plan():
    d = BackendDescriptor("EXECUTION_PLAN")
    d.set("EXECUTION_PLAN_DEVICEPROP", props.descriptor)
    d.set("EXECUTION_PLAN_JSON_REPRESENTATION", bad9 + "\\0x", attr_type="CHAR")
    d.finalize()
attempt("plan", plan)
dp = json.loads(props.to_json()); dp.pop("cudnnVersion", None); dp["deviceName"] = "A" * 3000
def deviceprop():
    d = BackendDescriptor("DEVICEPROP")
    d.set("DEVICEPROP_JSON_REPRESENTATION", json.dumps(dp) + "\\0x", attr_type="CHAR")
    d.finalize()
attempt("deviceprop", deviceprop)
attempt("from_json", lambda: pycudnn.Plan.from_json(bad9 + "\\0", device_properties=props))
"""
    )
    results = _results(proc)
    assert set(results) == {"plan", "deviceprop", "from_json"}, results
    for label, result in results.items():
        assert result.startswith("ValueError"), (label, result)
        assert "NUL character" in result, (label, result)


def test_json_attribute_python_cannot_parse_is_refused(libcuda: None) -> None:
    # Unchecked text is not passed on: a BOM, a truncated object, trailing data.
    for text in ("\ufeff{}", '{"a":', "{} {}"):
        with pytest.raises(ValueError, match="EXECUTION_PLAN_JSON_REPRESENTATION does not parse"):
            BackendDescriptor("EXECUTION_PLAN").set(
                "EXECUTION_PLAN_JSON_REPRESENTATION", text, attr_type="CHAR"
            )


def test_dict_keys_that_json_writes_alike_are_refused(deviceprops_json: dict[str, Any]) -> None:
    data = dict(deviceprops_json)
    data[1] = 0
    data["1"] = 0  # json.dumps writes both as "1"
    with pytest.raises(ValueError, match="the key '1' twice"):
        DeviceProperties.from_json(data)


# -- deep nesting, encodings, lone surrogates ------------------------------------------------------


def test_deeply_nested_json_is_a_value_error(deviceprops_json: dict[str, Any]) -> None:
    deep = "[" * 100000
    with pytest.raises(ValueError, match="the plan JSON is nested too deeply"):
        Plan.from_json(deep, device_properties=DeviceProperties.from_json(deviceprops_json))
    with pytest.raises(ValueError, match="device-properties JSON is nested too deeply"):
        DeviceProperties.from_json(deep)
    nested: list[Any] = []
    for _ in range(5000):
        nested = [nested]
    with pytest.raises(ValueError, match="cannot be written as JSON"):
        DeviceProperties.from_json({**deviceprops_json, "zz": nested})


def test_plan_cache_file_nested_too_deeply_is_rebuilt(
    deviceprops_json: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    props = DeviceProperties.from_json(deviceprops_json)

    def graph() -> Graph:
        g = Graph("mm")
        g.matmul(g.tensor([1, 64, 32], dtype="float16"), g.tensor([1, 32, 48], dtype="float16"))
        return g

    graph().build(device_properties=props, cache=PlanCache(tmp_path))
    (file,) = tmp_path.glob("*.json")
    file.write_text("[" * 100000)
    cache = PlanCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pycudnn"):
        plan = graph().build(device_properties=props, cache=cache)
    assert plan is not None
    assert cache.stats["disk_errors"] == 1
    assert "nested too deeply" in caplog.text


def test_plan_load_of_a_file_that_is_not_utf8_names_the_file(
    deviceprops_json: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(b'{"cudnnVersion": \xff\xfe}')
    with pytest.raises(ValueError, match=r"plan\.json'.*not UTF-8"):
        Plan.load(path, device_properties=DeviceProperties.from_json(deviceprops_json))


def test_lone_surrogate_device_name_is_a_value_error(deviceprops_json: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="'deviceName' must be valid Unicode"):
        DeviceProperties.from_json({**deviceprops_json, "deviceName": "\ud800abc"})
    props = DeviceProperties.from_json(deviceprops_json)
    g = Graph("mm")
    g.matmul(g.tensor([1, 64, 32], dtype="float16"), g.tensor([1, 32, 48], dtype="float16"))
    data = json.loads(g.build(device_properties=props, cache=False).to_json())
    data["GPUProfile"]["deviceName"] = "\ud800"
    data = {k: v for k, v in data.items() if not k.startswith("pycudnn")}  # as cuDNN writes it
    with pytest.raises(ValueError, match=r"GPUProfile\.deviceName must be valid Unicode"):
        Plan.from_json(json.dumps(data), device_properties=props)


# -- copies ----------------------------------------------------------------------------------------


def test_copy_of_objects_with_shared_state_is_refused(deviceprops_json: dict[str, Any]) -> None:
    props = DeviceProperties.from_json(deviceprops_json)
    g = Graph("mm")
    g.matmul(g.tensor([1, 64, 32], dtype="float16"), g.tensor([1, 32, 48], dtype="float16"))
    config = g.engine_configs(device_properties=props)[0]
    fresh = Graph("fresh")
    fresh.tensor([1, 8, 8])
    for obj, what in [
        (fresh, "a Graph cannot be copied"),
        (g, "a Graph cannot be copied"),
        (props, "DeviceProperties own a cuDNN descriptor"),
        (PlanCache(), "a PlanCache cannot be copied"),
        (config, "an EngineConfig owns a cuDNN descriptor"),
        (g.tensors[0], "belongs to graph 'mm' and cannot be copied or pickled"),
    ]:
        with pytest.raises(TypeError, match=what):
            copy.copy(obj)
        with pytest.raises(TypeError):
            copy.deepcopy(obj)


# -- a plan for another graph ----------------------------------------------------------------------


def _matmul(dtype: str) -> Graph:
    g = Graph("mm")
    g.matmul(g.tensor([1, 64, 32], dtype=dtype), g.tensor([1, 32, 48], dtype=dtype))
    return g


def _pointwise(op: str) -> Graph:
    g = Graph("pw")
    getattr(g, op)(g.tensor([1, 64, 64], name="a"), g.tensor([1, 64, 64], name="b"))
    return g


def test_plan_for_another_dtype_is_refused(deviceprops_json: dict[str, Any]) -> None:
    # Dims and strides match: the float32 plan loaded and was then handed float16 arrays.
    props = DeviceProperties.from_json(deviceprops_json)
    text = _matmul("float32").build(device_properties=props, cache=False).to_json()
    with pytest.raises(ValueError, match="dataType 'CUDNN_DATA_FLOAT' in the plan but"):
        _matmul("float16").load_plan(text, device_properties=props)
    assert _matmul("float32").load_plan(text, device_properties=props).graph is not None


def test_plan_for_another_operation_is_refused(deviceprops_json: dict[str, Any]) -> None:
    props = DeviceProperties.from_json(deviceprops_json)
    text = _pointwise("add").build(device_properties=props, cache=False).to_json()
    with pytest.raises(
        ValueError,
        match=r"does not compute graph 'pw'.*'pointwiseMode' is 'CUDNN_POINTWISE_ADD' in the "
        r"plan but CUDNN_POINTWISE_MUL",
    ):
        Plan.from_json(text, graph=_pointwise("mul"), device_properties=props)
    Plan.from_json(text, graph=_pointwise("add"), device_properties=props).close()


def test_plan_with_other_tensor_kinds_is_refused(deviceprops_json: dict[str, Any]) -> None:
    props = DeviceProperties.from_json(deviceprops_json)
    data = json.loads(_matmul("float16").build(device_properties=props, cache=False).to_json())
    for key, value in [("ptrAlignment", 4), ("isByValue", True), ("vectCount", 4)]:
        changed = copy.deepcopy(data)
        changed["operationGraph"]["tensors"][0][key] = value
        _resealed(changed)
        with pytest.raises(ValueError, match=f"has {key} {value!r} in the plan but"):
            Plan.from_json(changed, graph=_matmul("float16"), device_properties=props)


def _dilated_conv(pad: int) -> Graph:
    # Padding p with dilation p keeps a 3x3 convolution's output 6x6 for every p: the plans for
    # two such graphs have the same tensors, dtypes and operation kinds.
    g = Graph("c")
    x = g.tensor([1, 8, 6, 6], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([8, 8, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=pad, dilation=pad)
    return g


@pytest.fixture
def h100(deviceprops_json: dict[str, Any]) -> DeviceProperties:
    return DeviceProperties.from_json(deviceprops_json)


def test_a_plan_for_other_padding_is_refused_by_its_graph_key(h100: DeviceProperties) -> None:
    saved = _dilated_conv(1).build(device_properties=h100, cache=False).to_json()
    with _dilated_conv(1).load_plan(saved, device_properties=h100) as plan:
        assert plan.to_json() == saved
    with pytest.raises(
        ValueError, match=r"does not compute graph 'c'.*'pad' is \[1, 1\] in the plan but \[2, 2\]"
    ):
        _dilated_conv(2).load_plan(saved, device_properties=h100)
    # Loaded without its graph, the plan writes the same key: it is computed from the JSON.
    with Plan.from_json(saved, device_properties=h100) as plan:
        assert json.loads(plan.to_json())["pycudnnGraphKey"] == json.loads(saved)["pycudnnGraphKey"]


def test_the_graph_key_must_be_a_string(h100: DeviceProperties) -> None:
    data = json.loads(_dilated_conv(1).build(device_properties=h100, cache=False).to_json())
    data["pycudnnGraphKey"] = 5
    data["pycudnnDigest"] = canonical.content_digest(data, "pycudnnDigest")
    with pytest.raises(ValueError, match="must be a str"):
        Plan.from_json(data, graph=_dilated_conv(1), device_properties=h100)


def test_a_by_value_tensor_of_several_elements_is_refused_without_the_graph(
    h100: DeviceProperties,
) -> None:
    """A plan loaded without its graph takes its tensors from the JSON. pycudnn gives a by-value
    tensor a host buffer of one element (a graph refuses any other dims), but cuDNN finalizes a
    by-value 1-D vector: one of 64 elements had execute hand cuDNN that buffer to read 64 from."""
    g = Graph("pw")
    g.add(g.tensor([1, 1, 64], name="a"), g.tensor([1, 1, 64], name="b"))
    data = json.loads(g.build(device_properties=h100, cache=False).to_json())
    changed = copy.deepcopy(data)
    changed["operationGraph"]["tensors"][0]["isByValue"] = True
    _resealed(changed)
    with pytest.raises(ValueError, match=r"tensor 1 .*by-value.*dims \[1, 1, 64\]"):
        Plan.from_json(changed, device_properties=h100)
    Plan.from_json(data, device_properties=h100).close()


def test_an_integer_past_pythons_digit_limit_names_the_json(
    h100: DeviceProperties, tmp_path: Path
) -> None:
    """Python's parser refuses an integer of more than 4300 digits with a ValueError of its own,
    which named neither the plan JSON nor the device properties."""
    big = "{" + '"cudnnVersion": ' + "9" * 5000 + "}"
    with pytest.raises(ValueError, match="the plan JSON does not parse as JSON"):
        Plan.from_json(big, device_properties=h100)
    path = tmp_path / "big.json"
    path.write_text(big)
    with pytest.raises(ValueError, match="the plan JSON does not parse as JSON"):
        Plan.load(path, device_properties=h100)
    with pytest.raises(ValueError, match="device-properties JSON does not parse as JSON"):
        DeviceProperties.from_json(big)
