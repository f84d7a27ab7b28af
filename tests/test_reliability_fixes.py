"""Regression tests for what the reliability campaigns found (``scripts/reliability.py``).

Inputs that once crashed the process run in a child process, so that a regression fails this test
with the child's signal instead of ending the test session.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from children import run_python
from versioned import skip_unless_cudnn, skip_unless_cudnn_has

import pycudnn
from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph, GraphError
from pycudnn.plan import Plan, PlanCache, PlanVersionError
from pycudnn.plan.cache import _write_atomically

REPO = Path(__file__).resolve().parent.parent
PROPS_FILE = REPO / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"
run_child = functools.partial(run_python, timeout=180)  # these children plan and reload


def conv_bias_relu() -> Graph:
    g = Graph("conv_bias_relu")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
    g.relu(g.add(g.conv_fprop(x, w, padding=1, name="conv"), b, name="bias_add"), name="relu")
    return g


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> DeviceProperties:
    return DeviceProperties.from_json(deviceprops_json)


@pytest.fixture
def plan_json(props: DeviceProperties) -> dict[str, Any]:
    # cuDNN's own JSON: the edits below are of what cuDNN reads (pycudnn's integrity digest
    # would refuse any of them first)
    with conv_bias_relu().build(device_properties=props, cache=False) as plan:
        data = json.loads(plan.to_json())
        return {k: v for k, v in data.items() if not k.startswith("pycudnn")}


# -- graph scale factors and clips -----------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400])
@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda g, x, w, v: g.conv_fprop(x, w, alpha=v), "alpha"),
        (lambda g, x, w, v: g.conv_fprop(x, w, beta=v), "beta"),
        (lambda g, x, w, v: g.relu(x, upper_clip=v), "relu_upper_clip"),
        (lambda g, x, w, v: g.relu(x, lower_clip=v), "relu_lower_clip"),
        (lambda g, x, w, v: g.add(x, x, alpha1=v), "alpha1"),
        (lambda g, x, w, v: g.add(x, x, alpha2=v), "alpha2"),
        (lambda g, x, w, v: g.elu(x, alpha=v), "elu_alpha"),
    ],
)
def test_graph_scale_factors_must_be_finite(call: Any, name: str, value: Any) -> None:
    g = Graph()
    x = g.tensor([1, 8, 4, 4], name="x")
    w = g.tensor([8, 8, 1, 1], name="w")
    with pytest.raises(ValueError, match="must be a finite real number") as info:
        call(g, x, w, value)
    assert name in str(info.value)
    assert not isinstance(info.value, OverflowError)
    assert not isinstance(info.value, GraphError) or "finite" in str(info.value)


def test_graph_scale_factors_still_take_large_finite_values() -> None:
    g = Graph()
    x = g.tensor([1, 8, 4, 4], name="x")
    y = g.relu(x, upper_clip=10**300, lower_clip=-1.5e308)
    assert y.producer is not None
    assert y.producer.attrs["relu_upper_clip"] == 1e300


# -- device properties ------------------------------------------------------------------------------


def _props_data() -> dict[str, Any]:
    return dict(json.loads(PROPS_FILE.read_text()))


@pytest.mark.parametrize("key", ["multiProcessorCount", "isTccDriver", "l2CacheSize", "driverVer"])
@pytest.mark.parametrize("value", [2**31, 2**32 + 5, 2**63])
def test_deviceprops_32_bit_keys_refuse_values_cuDNN_cannot_read(key: str, value: int) -> None:
    data = _props_data()
    data[key] = value
    with pytest.raises(ValueError, match=f"'{key}' must fit a signed 32-bit int"):
        DeviceProperties.from_json(data)


_PLAN_ONE = """
import json, sys
sys.path.insert(0, {tests!r})
import pycudnn, plan_kinds
data = json.loads({data!r})
try:
    props = pycudnn.DeviceProperties.from_json(data)
except ValueError as exc:
    print("refused:", exc)
    raise SystemExit(0)
g = pycudnn.Graph({kind!r})
plan_kinds.CATALOGUE[{kind!r}](g)
g.build(device_properties=props, cache=False).close()
print("planned")
"""


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize(
    ("key", "value", "kind", "rule"),
    [
        ("warpSize", 2**31 - 1, "rmsnorm_backward", "from 1 to 1024"),  # SIGFPE in cuDNN 9.28
        ("warpSize", 0, "rmsnorm_backward", "from 1 to 1024"),
        ("l2CacheSize", 2**31 - 1, "layernorm", "from 0 to 1073741824"),  # abort in cuDNN 9.28
    ],
)
def test_deviceprops_values_cudnn_dies_planning_with_are_refused(
    key: str, value: int, kind: str, rule: str
) -> None:
    skip_unless_cudnn((9, 10), "execution plans for device properties without a GPU")
    data = {**_props_data(), key: value}
    code = _PLAN_ONE.format(tests=str(REPO / "tests"), data=json.dumps(data), kind=kind)
    proc = run_python(code, timeout=300)  # a child: before the check, cuDNN killed the process
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert f"refused: device-properties key '{key}' must be {rule}" in proc.stdout, proc.stdout


@pytest.mark.usefixtures("libcuda")
def test_deviceprops_of_a_gpu_without_sms_are_refused() -> None:
    # cuDNN 9.28 plans for multiProcessorCount 0 without a word: a plan for no GPU there is.
    skip_unless_cudnn((9, 10), "execution plans for device properties without a GPU")
    data = {**_props_data(), "multiProcessorCount": 0}
    code = _PLAN_ONE.format(tests=str(REPO / "tests"), data=json.dumps(data), kind="conv_bias_relu")
    proc = run_python(code, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    rule = "'multiProcessorCount' must be from 1 to 2147483647 (a GPU has at least one SM)"
    assert rule in proc.stdout, proc.stdout


@pytest.mark.parametrize("key", ["supportCoopLaunch", "isTccDriver", "warpSize", "totalGlobalMem"])
def test_deviceprops_refuse_bools(key: str) -> None:
    data = _props_data()
    data[key] = True
    with pytest.raises(ValueError, match=f"'{key}' must be a non-negative int, got True"):
        DeviceProperties.from_json(data)


def test_deviceprops_grid_entries_are_32_bit() -> None:
    data = _props_data()
    data["maxGridSize"] = [2**31, 65535, 65535]
    with pytest.raises(ValueError, match="'maxGridSize' must fit a signed 32-bit int"):
        DeviceProperties.from_json(data)


@pytest.mark.usefixtures("libcuda")
def test_deviceprops_total_memory_is_64_bit() -> None:
    skip_unless_cudnn_has("CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR")
    # cuDNN reads totalGlobalMem as a 64-bit int: 2**40 (1 TiB) finalizes, 2**63 does not fit.
    data = _props_data()
    data["totalGlobalMem"] = 2**40
    with DeviceProperties.from_json(data) as p:
        assert not p.descriptor.closed
    data["totalGlobalMem"] = 2**63
    with pytest.raises(ValueError, match="'totalGlobalMem' must fit a signed 64-bit int"):
        DeviceProperties.from_json(data)


@pytest.mark.usefixtures("libcuda")
def test_deviceprops_largest_32_bit_value_reaches_cudnn() -> None:
    skip_unless_cudnn_has("CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR")
    # The bound is cuDNN's, not a guess: 2**31 - 1 finalizes.
    data = _props_data()
    data["smClockRateKHz"] = 2**31 - 1
    with DeviceProperties.from_json(data) as p:
        assert not p.descriptor.closed


# -- plan JSON --------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["stride", "pad", "dilation"])
@pytest.mark.parametrize("length", [0, 1, 3, 8, 9, 16])
def test_plan_json_spatial_arrays_need_one_entry_per_spatial_dim(
    plan_json: dict[str, Any], props: DeviceProperties, key: str, length: int
) -> None:
    plan_json["operationGraph"]["nodes"][0][key] = [1] * length
    with pytest.raises(ValueError, match=rf"nodes\[0\]\.{key} must be a list of 2 entries"):
        Plan.from_json(plan_json, device_properties=props)


def test_plan_json_with_8_entry_stride_does_not_crash_a_child(
    plan_json: dict[str, Any], tmp_path: Path
) -> None:
    # cuDNN 9.27/9.28 segfault deserializing this; the check must come first, also through a
    # PlanCache directory that holds such a file.
    plan_json["operationGraph"]["nodes"][0]["stride"] = [1] * 8
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(plan_json))
    out = run_child(
        f"""
        import json, pathlib, shutil
        import pycudnn
        from pycudnn.plan import PlanCache
        props = pycudnn.DeviceProperties.load({str(PROPS_FILE)!r})
        try:
            pycudnn.Plan.load({str(bad)!r}, device_properties=props)
        except ValueError as exc:
            print("REFUSED", exc)
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_reliability_fixes import conv_bias_relu
        pc = PlanCache({str(tmp_path / "cache")!r})
        conv_bias_relu().build(device_properties=props, cache=pc)
        (path,) = pathlib.Path({str(tmp_path / "cache")!r}).glob("*.json")
        shutil.copy({str(bad)!r}, path)
        fresh = PlanCache(path.parent)
        plan = conv_bias_relu().build(device_properties=props, cache=fresh)
        print("REBUILT", fresh.stats["disk_errors"], fresh.stats["stores"], plan.engine_id)
        """
    )
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-2000:]}"
    assert "REFUSED" in out.stdout and "stride must be a list of 2 entries" in out.stdout
    assert "REBUILT 1 1" in out.stdout


def test_plan_schema_version_mismatch_is_a_version_error(
    plan_json: dict[str, Any], props: DeviceProperties
) -> None:
    plan_json["schemaVersion"] = 99
    with pytest.raises(PlanVersionError, match="schemaVersion 99") as info:
        Plan.from_json(plan_json, device_properties=props)
    assert not isinstance(info.value, pycudnn.CudnnError)


# -- the plan cache ---------------------------------------------------------------------------------


def test_plan_cache_on_a_regular_file_says_so(tmp_path: Path) -> None:
    f = tmp_path / "plans"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="exists and is not a directory"):
        PlanCache(f)


def test_plan_cache_under_an_unwritable_parent_says_so(tmp_path: Path) -> None:
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        target = parent / "plans"
        if os.access(parent, os.W_OK):  # root ignores the mode: use a read-only file system
            target = Path("/sys/pycudnn-plan-cache-test/plans")
        try:
            PlanCache(target)
        except PermissionError as exc:
            assert "cannot be created" in str(exc) and "choose a writable location" in str(exc)
        else:
            pytest.skip(f"{target} was writable here: no unwritable location to test with")
    finally:
        parent.chmod(0o700)


def test_atomic_write_is_safe_for_threads_storing_the_same_key(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    errors: list[BaseException] = []
    texts = [json.dumps({"writer": i, "pad": "x" * 20000}) for i in range(8)]

    def store(i: int) -> None:
        try:
            for _ in range(50):
                _write_atomically(path, texts[i])
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=store, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_text() in texts  # one writer's whole text, never a mix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json"]  # no temporary left


def test_atomic_write_leaves_nothing_when_a_directory_is_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "k.json").mkdir()
    with pytest.raises(OSError):
        _write_atomically(tmp_path / "k.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json"]


def test_plan_cache_store_with_a_directory_in_the_way(
    props: DeviceProperties, tmp_path: Path
) -> None:
    pc = PlanCache(tmp_path)
    g = conv_bias_relu()
    key_path = None
    plan = g.build(device_properties=props, cache=pc)
    (key_path,) = tmp_path.glob("*.json")
    key_path.unlink()
    key_path.mkdir()
    fresh = PlanCache(tmp_path)
    plan = conv_bias_relu().build(device_properties=props, cache=fresh)
    assert plan.engine_id is not None
    # Two disk errors: the directory is refused when read (not a regular file) and when written.
    assert fresh.stats["disk_errors"] == 2 and fresh.stats["stores"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [key_path.name]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("null", "holds a JSON NoneType"),
        ("[1, 2]", "holds a JSON list"),
        ('{"cudnnVersion": "92700"}', "no valid cudnnVersion ('92700')"),
        ('{"cudnnVersion": true}', "no valid cudnnVersion (True)"),
        ("\xff\xfe", "unreadable"),
    ],
)
def test_plan_cache_names_what_is_wrong_with_a_file(
    props: DeviceProperties,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    content: str,
    fragment: str,
) -> None:
    conv_bias_relu().build(device_properties=props, cache=PlanCache(tmp_path))
    (path,) = tmp_path.glob("*.json")
    path.write_bytes(content.encode("latin-1"))
    fresh = PlanCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pycudnn"):
        plan = conv_bias_relu().build(device_properties=props, cache=fresh)
    assert plan.engine_id is not None and fresh.stats["disk_errors"] == 1
    assert any(fragment in r.getMessage() for r in caplog.records), caplog.text
    assert "written by cuDNN None" not in caplog.text
    assert json.loads(path.read_text())["cudnnVersion"] == pycudnn.version()  # rewritten


# -- loading and the raw layer (found with the loader and raw-layer work merged) ----------------------


def _load_with_override(path: Path) -> subprocess.CompletedProcess[str]:
    code = """
        import pycudnn
        try:
            pycudnn.version()
        except pycudnn.LibraryNotFoundError as exc:
            print("REFUSED", exc)
        """
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYCUDNN_LIBRARY": str(path)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_a_truncated_library_is_refused_before_the_loader_maps_it(tmp_path: Path) -> None:
    # The dynamic loader maps a cut libcudnn.so.9 beyond its end: SIGBUS on first access.
    data = Path(pycudnn.library_path()).read_bytes()
    for fraction in (2, 4):
        lib = tmp_path / f"cut{fraction}" / "libcudnn.so.9"
        lib.parent.mkdir()
        lib.write_bytes(data[: len(data) // fraction])
        out = _load_with_override(lib)
        assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-1000:]}"
        assert "REFUSED" in out.stdout and "truncated" in out.stdout, out.stdout


def test_a_lone_copy_of_the_dispatcher_is_refused_before_it_aborts(tmp_path: Path) -> None:
    # cuDNN 9's libcudnn.so.9 loads libcudnn_graph.so.9 (and the rest) from its own directory;
    # without them its first function call aborts the process.
    lib = tmp_path / "libcudnn.so.9"
    lib.write_bytes(Path(pycudnn.library_path()).read_bytes())
    out = _load_with_override(lib)
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-1000:]}"
    assert "REFUSED" in out.stdout and "libcudnn_graph.so.9" in out.stdout, out.stdout


def test_a_library_with_its_sublibraries_still_loads(tmp_path: Path) -> None:
    real = Path(pycudnn.library_path()).parent
    copy = tmp_path / "lib"
    copy.mkdir()
    for f in real.glob("libcudnn*.so.*"):
        (copy / f.name).symlink_to(f)
    out = subprocess.run(
        [sys.executable, "-c", "import pycudnn; print('VERSION', pycudnn.version())"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYCUDNN_LIBRARY": str(copy / "libcudnn.so.9")},
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-1000:]
    assert f"VERSION {pycudnn.version()}" in out.stdout


@pytest.mark.parametrize("buffer", [b"x", "x"])
def test_an_immutable_buffer_for_a_written_string_is_refused(buffer: Any) -> None:
    # cudnnGetLastErrorString(b"x", 2**62) wrote the message into Python's heap (SIGSEGV).
    out = run_child(
        f"""
        from pycudnn import raw
        try:
            raw.cudnnGetLastErrorString({buffer!r}, 2**62)
        except TypeError as exc:
            print("REFUSED", exc)
        """
    )
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-1000:]}"
    assert "REFUSED" in out.stdout and "create_string_buffer" in out.stdout


def test_a_mutable_buffer_for_a_written_string_still_works() -> None:
    import ctypes

    from pycudnn import raw

    buf = ctypes.create_string_buffer(256)
    raw.cudnnGetLastErrorString(buf, 256)
    assert isinstance(buf.value, bytes)


def test_the_backend_layer_checks_spatial_arrays_too(
    plan_json: dict[str, Any], tmp_path: Path
) -> None:
    # The same crash through BackendDescriptor.set, without Plan.from_json.
    plan_json["operationGraph"]["nodes"][0]["dilation"] = [1] * 9
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(plan_json))
    out = run_child(
        f"""
        import pathlib
        import pycudnn
        from pycudnn.backend import BackendDescriptor
        props = pycudnn.DeviceProperties.load({str(PROPS_FILE)!r})
        d = BackendDescriptor("EXECUTION_PLAN")
        d.set("EXECUTION_PLAN_DEVICEPROP", props.descriptor)
        try:
            d.set("EXECUTION_PLAN_JSON_REPRESENTATION", pathlib.Path({str(bad)!r}).read_text(),
                  attr_type="CHAR")
            d.finalize()
        except ValueError as exc:
            print("REFUSED", exc)
        """
    )
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-2000:]}"
    assert "REFUSED" in out.stdout and "dilation must be a list of 2 entries" in out.stdout


def test_a_cudnn_8_library_is_named_by_its_own_version(tmp_path: Path) -> None:
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler to build a stand-in cuDNN 8 library")
    src = tmp_path / "stub.c"
    src.write_text("unsigned long cudnnGetVersion(void) { return 8906; }\n")  # cuDNN 8.9.6's value
    lib = tmp_path / "libcudnn.so.8"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    (tmp_path / "libcudnn_graph.so.9").write_bytes(b"")  # so that only the version is wrong
    out = _load_with_override(lib)
    assert out.returncode == 0, out.stderr[-1000:]
    assert "is cuDNN 8.9.6" in out.stdout and "major version 9" in out.stdout, out.stdout


# -- vectorized tensors -----------------------------------------------------------------------------

_VECTORIZED_REDUCTION = """
import json, sys
from pycudnn.backend import BackendDescriptor as B

def tensor(uid, dims, vector=None, order=("dims", "count", "dim")):
    t = B("TENSOR")
    t.set("TENSOR_UNIQUE_ID", uid)
    strides, s = [], 1
    for d in reversed(dims):
        strides.insert(0, s)
        s = s * d % 2**62
    for what in order:
        if what == "dims":
            t.set("TENSOR_DIMENSIONS", dims)
        elif vector is not None and what == "count":
            t.set("TENSOR_VECTOR_COUNT", vector[0])
        elif vector is not None:
            t.set("TENSOR_VECTORIZED_DIMENSION", vector[1])
    t.set("TENSOR_STRIDES", strides)
    t.set("TENSOR_BYTE_ALIGNMENT", 16)
    t.set("TENSOR_DATA_TYPE", "FLOAT")
    t.finalize()
    return t

def reduction(x_dims, y_dims, vector, order):
    x, y = tensor(1, x_dims), tensor(2, y_dims, vector, order)
    r = B("REDUCTION"); r.set("REDUCTION_OPERATOR", "AMAX"); r.set("REDUCTION_COMP_TYPE", "FLOAT")
    r.finalize()
    op = B("OPERATION_REDUCTION")
    for k, v in (("XDESC", x), ("YDESC", y), ("DESC", r)):
        op.set("OPERATION_REDUCTION_" + k, v)
    op.finalize()

for x_dims, y_dims, vector, order in json.loads(sys.argv[1]):
    try:
        reduction(x_dims, y_dims, vector, order)
    except ValueError as exc:
        print("REFUSED", exc)
    except Exception as exc:
        print("ERROR", type(exc).__name__)
    else:
        print("FINALIZED")
"""


@pytest.mark.parametrize(
    ("order", "named"),
    [
        (["dims", "count", "dim"], "TENSOR_VECTORIZED_DIMENSION"),
        (["count", "dim", "dims"], "TENSOR_DIMENSIONS"),
        (["dim", "dims", "count"], "TENSOR_VECTOR_COUNT"),
    ],
)
def test_a_vectorized_extent_past_int64_is_refused_before_cudnn_divides_by_it(
    order: list[str], named: str
) -> None:
    # A [2**62, 1, 1] output vectorized along dim 0 by 4 (or [2**60, ...] by 16, 32): cuDNN 9.28
    # multiplies the extent by the count in 64 bits, gets 0, and the reduction's finalize divides
    # by it (SIGFPE; found by fuzzing, `backend_typed` input 168717 of seed 202612082).
    cases = [
        ([2**62, 4, 8], [2**62, 1, 1], [4, 0], order),
        ([2, 2**60, 8], [2, 2**60, 1], [16, 1], order),
        ([2, 4, 8], [2, 1, 1], [4, 1], order),  # 4 elements along dim 1: finalizes
        ([2**62, 4, 8], [2**62, 1, 1], [1, 0], order),  # a count of 1 multiplies nothing
    ]
    proc = run_python(_VECTORIZED_REDUCTION, json.dumps(cases))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stdout.splitlines()
    assert len(lines) == 4, proc.stdout
    for line in lines[:2]:
        assert line.startswith(f"REFUSED CUDNN_ATTR_{named}: "), line
        assert "must be at most 9223372036854775807" in line, line
    assert lines[2:] == ["FINALIZED", "FINALIZED"], proc.stdout


_VECTORIZED_PLAN = """
import json, sys
sys.path.insert(0, {tests!r})
import pycudnn, plan_kinds
props = pycudnn.DeviceProperties.load({props!r})
g = pycudnn.Graph("reduction")
plan_kinds.CATALOGUE["reduction"](g)
with g.build(device_properties=props, cache=False) as plan:
    data = json.loads(plan.to_json())
data = {{k: v for k, v in data.items() if not k.startswith("pycudnn")}}
x, y = data["operationGraph"]["tensors"]
x["dim"][0] = y["dim"][0] = 2**62
y["vectCount"], y["vectDim"] = 4, 0
try:
    pycudnn.Plan.from_json(json.dumps(data), device_properties=props).close()
except ValueError as exc:
    print("REFUSED", exc)
else:
    print("LOADED")
"""


@pytest.mark.usefixtures("libcuda")
def test_a_plan_json_vectorized_extent_past_int64_is_refused() -> None:
    # The same product, read from a plan's JSON: SIGFPE in Plan.from_json before the check.
    skip_unless_cudnn((9, 10), "execution plans for device properties without a GPU")
    code = _VECTORIZED_PLAN.format(tests=str(REPO / "tests"), props=str(PROPS_FILE))
    proc = run_python(code, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "REFUSED not a valid cuDNN execution-plan JSON: operationGraph.tensors[1]" in (
        proc.stdout
    ), proc.stdout
    assert "must be at most 9223372036854775807" in proc.stdout, proc.stdout


@pytest.mark.usefixtures("libcuda")
@pytest.mark.parametrize("where", ["rank", -2])
def test_a_plan_json_vectorized_dimension_naming_no_dim_is_refused(where: Any) -> None:
    # cuDNN 9.28 loads a tensor whose vectDim is its rank (one past its last dim) without a word,
    # reading a dim the tensor does not have (found by fuzzing, `plan_json_kinds` after seed
    # 202612084): -1 (none) or the index of one of its dims.
    skip_unless_cudnn((9, 10), "execution plans for device properties without a GPU")
    sys.path.insert(0, str(REPO / "tests"))
    import plan_kinds

    props = DeviceProperties.load(PROPS_FILE)
    g = Graph("reduction")
    plan_kinds.CATALOGUE["reduction"](g)
    with g.build(device_properties=props, cache=False) as plan:
        data = json.loads(plan.to_json())
    data = {k: v for k, v in data.items() if not k.startswith("pycudnn")}  # cuDNN's own JSON
    y = data["operationGraph"]["tensors"][1]
    y["vectDim"] = len(y["dim"]) if where == "rank" else where
    with pytest.raises(ValueError, match=r"tensors\[1\]\.vectDim must be -1 or the index of one"):
        Plan.from_json(json.dumps(data), device_properties=props)
    y["vectDim"] = -1
    Plan.from_json(json.dumps(data), device_properties=props).close()


@pytest.mark.parametrize("vdim", [4, -2])
@pytest.mark.parametrize("last", ["TENSOR_VECTORIZED_DIMENSION", "TENSOR_DIMENSIONS"])
def test_a_backend_tensor_vectorized_along_no_dim_is_refused(vdim: int, last: str) -> None:
    # The typed backend layer, as the plan JSON above: cuDNN 9.28 finalizes a TENSOR whose
    # TENSOR_VECTORIZED_DIMENSION is its rank or below -1, a dimension it does not have.
    from pycudnn.backend import BackendDescriptor

    t = BackendDescriptor("TENSOR_DESCRIPTOR")
    t.set("TENSOR_DATA_TYPE", "FLOAT")
    t.set("TENSOR_STRIDES", [128, 16, 4, 1])
    first, then = ("TENSOR_DIMENSIONS", "TENSOR_VECTORIZED_DIMENSION")
    if last == "TENSOR_DIMENSIONS":
        first, then = then, first
    values = {"TENSOR_DIMENSIONS": [2, 8, 4, 4], "TENSOR_VECTORIZED_DIMENSION": vdim}
    t.set(first, values[first])
    with pytest.raises(ValueError, match=f"CUDNN_ATTR_{last}: .*must be -1 or the index of one"):
        t.set(then, values[then])
    t.close()


# -- distributed layouts ----------------------------------------------------------------------------

_GLOBAL_INDICES = """
import resource
from pycutensor.distributed.layout import Distribution
# Before the check, these listed a billion indices a mode (8 GiB each, a minute of page faults):
# with the address space capped that is a MemoryError instead of a ValueError.
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.RLIM_INFINITY))
for extents, grid, blocks in [
    ([2**31 - 1, 2**31 - 1], [2, 4], None),  # contiguous slices of 2**30 indices
    ([2**31 - 1], [2], [2**20]),  # 1,024 blocks of 2**20: few blocks, many indices
    ([2**28 + 2], [2], None),  # one past the cap on rank 0
]:
    try:
        Distribution(extents, grid, blocks).global_indices(0)
    except ValueError as exc:
        print("REFUSED", exc)
    except Exception as exc:
        print("ERROR", type(exc).__name__, exc)
    else:
        print("LISTED")
import pycutensor.distributed.layout as layout
layout.MAX_LISTED = 8  # the boundary, without listing 2**27 indices
print("AT CAP", [len(i) for i in Distribution([16, 3], [2, 1]).global_indices(1)] == [8, 3])
"""


def test_global_indices_past_the_host_listing_cap_are_refused() -> None:
    # Found by fuzzing (seed 202612083, `distribution` input 94753): a hang of the campaign's 60 s.
    proc = run_python(_GLOBAL_INDICES)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stdout.splitlines()
    assert len(lines) == 4, proc.stdout
    for line in lines[:3]:
        assert line.startswith("REFUSED rank 0 holds "), line
        assert "the host lists at most 134217728 (use local_extents" in line, line
    assert "indices of mode 0" in lines[0] and "indices of mode 0" in lines[1], proc.stdout
    assert lines[3] == "AT CAP True", proc.stdout


# -- plans for their graph --------------------------------------------------------------------------


@pytest.mark.usefixtures("libcuda")
def test_an_sdpa_plan_with_another_subgraph_output_is_refused_for_its_graph(
    props: DeviceProperties,
) -> None:
    # The band mask's output one uid earlier is its first comparison: the window's left bound is
    # gone. Integer attributes were compared with float32's tolerance, so a uid of 2**40 edited
    # by 1 (resealed, as a deliberate editor would) loaded for the sliding-window graph (found by
    # fuzzing, seed 202612084, `plan_json_kinds` input 1872).
    skip_unless_cudnn_has("CUDNN_ATTR_OPERATION_SDPA_FWD_SUBGRAPH_OUTPUT_UID")
    import plan_kinds

    def graph() -> Graph:
        g = Graph("sdpa_window")
        plan_kinds.sdpa_window(g)
        return g

    with graph().build(device_properties=props, cache=False) as plan:
        data = json.loads(plan.to_json())
    (node,) = data["operationGraph"]["nodes"]
    key, change = "subgraphOutputUid", -1  # (another input uid cuDNN refuses itself)
    assert node[key] > 2**24  # past float32's precision, where the tolerance swallowed 1
    node[key] += change
    text = json.dumps(plan_kinds.resealed(data))
    with pytest.raises(ValueError, match=f"does not compute graph.*'{key}' is"):
        Plan.from_json(text, graph=graph(), device_properties=props)
    node[key] -= change
    Plan.from_json(json.dumps(plan_kinds.resealed(data)), graph=graph(), device_properties=props)


def test_integer_attributes_compare_exactly_and_float_scalars_with_float32s_precision() -> None:
    from pycudnn.plan.canonical import _same

    assert not _same(2**40 + 1, 2**40)
    assert not _same([5, 2**40 + 1], [5, 2**40])
    assert not _same(2**62 + 1, 2**62)
    assert _same(2**40, 2**40) and _same([3], 3)
    assert _same(0.1, float(__import__("numpy").float32(0.1)))  # cuDNN keeps it as a float32
    assert _same(2, 2.0000001)  # a float scalar given as an int
