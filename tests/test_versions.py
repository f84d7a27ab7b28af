"""Versions: the supported floor, symbols newer than the loaded library, one copy per process.

Most refusals are exercised twice: against the library really loaded (whatever the version-matrix
entry installed), and with the loaded version *declared* older (``LIB._version`` lowered, the real
library untouched). The second makes every environment test the refusal path: the real library
accepts these symbols, so an exception proves the call never reached C.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
from children import run_python

import pycudnn
import pycutensor
from _nvbind.cuda import driver_status
from _nvbind.ffi import LibraryNotFoundError, NativeLibrary, UnsupportedByLibraryError
from pycudnn import _bindings as cb
from pycudnn import raw
from pycudnn._lib import LIB as CUDNN
from pycudnn._versions import enum_since, missing_features
from pycudnn.backend import BackendDescriptor
from pycutensor import _bindings as tb
from pycutensor._lib import LIB as CUTENSOR

ROOT = Path(__file__).resolve().parent.parent
FLOOR = CUDNN.minimum_version


@pytest.fixture
def cudnn_at(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Declare the loaded cuDNN to be an older version (never a newer one than it is)."""

    def declare(version: tuple[int, int, int]) -> tuple[int, int, int]:
        real = CUDNN.version
        declared = min(version, real)
        monkeypatch.setattr(CUDNN, "_version", declared)
        return declared

    return declare


def _since(c_name: str) -> tuple[int, int, int]:
    return cb.ENUMERATOR_SINCE[c_name]


# -- the floor ------------------------------------------------------------------------------------


def test_loaded_versions_are_within_the_supported_range() -> None:
    assert CUDNN.minimum_version <= pycudnn.version_tuple() < (CUDNN.minimum_version[0] + 1,)
    assert CUTENSOR.minimum_version <= pycutensor.version_tuple() < (3,)


def test_a_library_below_the_floor_is_refused_at_load() -> None:
    # The real library, with a floor above it: the loader must refuse it and say why.
    lib = NativeLibrary(
        display_name="cuDNN",
        pathfinder_name="cudnn",
        env_var="PYCUDNN_LIBRARY_UNUSED_IN_THIS_TEST",
        install_hint="Install it",
        expected_major=9,
        functions=cb.FUNCTIONS,
        read_version=lambda c: pycudnn.version_tuple(),
        minimum_version=(9, 99, 0),
        version_symbol="cudnnGetVersion",
    )
    with pytest.raises(LibraryNotFoundError, match=r"older than the oldest supported 9\.99"):
        lib.cdll()
    assert not lib.is_loaded


# -- cuDNN: refused before C ----------------------------------------------------------------------


@pytest.mark.usefixtures("libcuda")
def test_cuda_graph_retention_on_9_27_is_refused_without_calling_cudnn(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    declared = cudnn_at((9, 27, 0))
    since = _since("CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION")
    assert since > declared
    plan = BackendDescriptor("EXECUTION_PLAN")
    with pytest.raises(UnsupportedByLibraryError) as e:
        plan.set("EXECUTION_PLAN_CUDA_GRAPH_RETENTION", 0, attr_type="CUDA_GRAPH_RETENTION")
    assert e.value.symbol == "CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION"
    assert e.value.required == since and e.value.loaded == declared
    text = str(e.value)
    assert ".".join(map(str, since)) in text and ".".join(map(str, declared)) in text
    with pytest.raises(UnsupportedByLibraryError, match="CUDA_GRAPH_RETENTION"):
        plan.get("EXECUTION_PLAN_CUDA_GRAPH_RETENTION")


def _newer_attributes(than: tuple[int, int, int]) -> list[tuple[str, str]]:
    """(attribute, owning descriptor type) for attributes newer than ``than`` whose owner is not."""
    out = []
    for value, spec in cb.ATTRIBUTES.items():
        if spec.since is None or spec.since <= than or spec.descriptor_type is None:
            continue
        owner = cb.cudnnBackendDescriptorType_t(spec.descriptor_type)
        if _since(f"CUDNN_BACKEND_{owner.name}") <= than:
            out.append((cb.cudnnBackendAttributeName_t(value).name, owner.name))
    return out


@pytest.mark.usefixtures("libcuda")
def test_every_attribute_newer_than_the_library_is_refused(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    declared = cudnn_at(FLOOR)
    attributes = _newer_attributes(declared)
    if declared < cb.HEADER_VERSION:
        assert attributes  # at least CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION (9.28)
    for attr, owner in attributes:
        d = BackendDescriptor(owner)
        with pytest.raises(UnsupportedByLibraryError, match=f"CUDNN_ATTR_{attr} needs"):
            d.set(attr, 0, attr_type="INT64")
        d.close()


@pytest.mark.usefixtures("libcuda")
def test_descriptor_types_newer_than_the_library_are_refused(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    declared = cudnn_at(FLOOR)
    newer = [
        m.name
        for m in cb.cudnnBackendDescriptorType_t
        if _since(f"CUDNN_BACKEND_{m.name}") > declared
    ]
    for kind in newer:
        with pytest.raises(UnsupportedByLibraryError, match=f"CUDNN_BACKEND_{kind}"):
            BackendDescriptor(kind)
        assert any(kind in line for line in missing_features()) or not kind.startswith("OPERATION_")


@pytest.mark.usefixtures("libcuda")
def test_enum_values_inside_attribute_values_are_refused(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    since = _since("CUDNN_POINTWISE_FLOOR_MOD")
    declared = cudnn_at((since[0], since[1] - 1, 0))
    pw = BackendDescriptor("POINTWISE")
    with pytest.raises(UnsupportedByLibraryError, match="CUDNN_POINTWISE_FLOOR_MOD") as e:
        pw.set("POINTWISE_MODE", "FLOOR_MOD")
    assert e.value.symbol == "CUDNN_POINTWISE_FLOOR_MOD"
    assert "CUDNN_ATTR_POINTWISE_MODE" in str(e.value)  # where it was used
    assert e.value.required == since and e.value.loaded == declared
    pw.set("POINTWISE_MODE", "ADD")  # as old as cuDNN 9.0: accepted, by the real library
    assert "CUDNN_POINTWISE_FLOOR_MOD: needs" in " ".join(missing_features())


@pytest.mark.usefixtures("libcuda")
def test_attribute_types_newer_than_the_library_are_refused(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    since = _since("CUDNN_TYPE_CUDA_GRAPH_RETENTION")
    cudnn_at((since[0], since[1] - 1, 0))
    t = BackendDescriptor("TENSOR")  # an attribute as old as cuDNN 9.0, with a type that is not
    with pytest.raises(
        UnsupportedByLibraryError,
        match=r"CUDNN_TYPE_CUDA_GRAPH_RETENTION \(the type of CUDNN_ATTR_TENSOR_UNIQUE_ID\)",
    ):
        t.set("TENSOR_UNIQUE_ID", 1, attr_type="CUDA_GRAPH_RETENTION")


def test_enum_since_takes_the_oldest_name_of_a_value() -> None:
    member = cb.cudnnBackendAttributeName_t.EXECUTION_PLAN_CUDA_GRAPH_RETENTION
    name, since = enum_since(type(member), int(member))  # type: ignore[misc]
    assert name == "CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION"
    assert since == cb.ENUMERATOR_SINCE[name]
    assert enum_since(type(member), 10**6) is None


@pytest.mark.usefixtures("libcuda")
def test_raw_layer_refuses_newer_enum_arguments_and_attribute_values(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    since = _since("CUDNN_BACKEND_OPERATION_ROPE_FWD_DESCRIPTOR")
    cudnn_at((since[0], since[1] - 1, 0))
    out = ctypes.c_void_p()
    with pytest.raises(UnsupportedByLibraryError, match="OPERATION_ROPE_FWD_DESCRIPTOR"):
        raw.cudnnBackendCreateDescriptor(
            raw.CUDNN_BACKEND_OPERATION_ROPE_FWD_DESCRIPTOR, ctypes.byref(out)
        )
    assert out.value is None  # cuDNN was never asked
    cudnn_at(FLOOR)
    plan = BackendDescriptor("EXECUTION_PLAN")
    value = (ctypes.c_int * 1)(0)
    with pytest.raises(UnsupportedByLibraryError, match="CUDA_GRAPH_RETENTION"):
        raw.cudnnBackendSetAttribute(
            plan,
            raw.CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION,
            raw.CUDNN_TYPE_CUDA_GRAPH_RETENTION,
            1,
            value,
        )
    pw = BackendDescriptor("POINTWISE")
    mode = (ctypes.c_int * 1)(int(raw.CUDNN_POINTWISE_FLOOR_MOD))
    if _since("CUDNN_POINTWISE_FLOOR_MOD") > CUDNN.version:
        with pytest.raises(UnsupportedByLibraryError, match="CUDNN_POINTWISE_FLOOR_MOD"):
            raw.cudnnBackendSetAttribute(
                pw, raw.CUDNN_ATTR_POINTWISE_MODE, raw.CUDNN_TYPE_POINTWISE_MODE, 1, mode
            )


def test_require_version() -> None:
    pycudnn.require_version((9, 0), "anything cuDNN 9 has")
    with pytest.raises(UnsupportedByLibraryError, match=r"deviceless dreams needs cuDNN >= 99\.1"):
        pycudnn.require_version((99, 1), "deviceless dreams")
    for bad in ([9, 8], (), (9, 8, 0, 1), "9.8"):
        with pytest.raises(TypeError, match="version"):
            pycudnn.require_version(bad, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="feature"):
        pycudnn.require_version((9, 8), "")


# -- planning for device properties, by version ----------------------------------------------------

H100 = ROOT / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"


def _matmul() -> pycudnn.Graph:
    g = pycudnn.Graph("versions_matmul")
    g.matmul(g.tensor([1, 64, 32], dtype="float16"), g.tensor([1, 32, 48], dtype="float16"))
    return g


def _no_gpu() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU: plans for device properties are built on it")


@pytest.mark.usefixtures("libcuda")
def test_planning_for_device_properties_follows_the_loaded_cudnn() -> None:
    # The real library: before 9.8 no device properties at all; 9.8 and 9.9 run heuristics for
    # them but build no plan without a GPU; from 9.10 plans are built (and tested everywhere else).
    _no_gpu()
    props = pycudnn.DeviceProperties.load(H100)
    loaded = pycudnn.version_tuple()
    why_not = pycudnn.DeviceProperties.why_no_plans()
    g = _matmul()
    if loaded >= (9, 10):
        assert why_not is None
        assert g.build(device_properties=props, cache=False).engine_id >= 0
        return
    with pytest.raises(UnsupportedByLibraryError) as e:
        g.build(device_properties=props, cache=False)
    if loaded < (9, 8):
        assert why_not is not None and "need cuDNN 9.8 or later" in why_not
        assert e.value.required == (9, 8, 0) and e.value.loaded == loaded
        with pytest.raises(UnsupportedByLibraryError, match=r"DEVICEPROP.* needs cuDNN >= 9\.8"):
            g.heuristics("a", device_properties=props)
    else:
        assert why_not is not None and "need cuDNN 9.10 or later" in why_not
        assert e.value.required == (9, 10, 0)
        assert g.heuristics("a", device_properties=props).count > 0


@pytest.mark.usefixtures("libcuda")
def test_deviceless_plans_are_refused_before_9_10_without_calling_cudnn(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    # The same refusals with the loaded version declared older, so every environment runs them.
    _no_gpu()
    props = pycudnn.DeviceProperties.load(H100)
    declared = cudnn_at((9, 9, 0))
    g = _matmul()
    with pytest.raises(UnsupportedByLibraryError) as e:
        g.build(device_properties=props, cache=False)
    # (declaring never raises the version: a real cuDNN before 9.8 stays what it is)
    need, why = ((9, 10), "9.10") if declared >= (9, 8, 0) else ((9, 8), "9.8")
    assert e.value.required == (*need, 0) and e.value.loaded == declared
    with pytest.raises(UnsupportedByLibraryError, match=rf"needs cuDNN >= {why}"):
        g.build_all(device_properties=props)
    why_not = pycudnn.DeviceProperties.why_no_plans()
    assert why_not is not None and f"need cuDNN {why} or later" in why_not
    declared = cudnn_at((9, 7, 0))
    with pytest.raises(UnsupportedByLibraryError) as e:
        g.heuristics("a", device_properties=props)
    assert e.value.required == (9, 8, 0) and e.value.loaded == declared
    why_not = pycudnn.DeviceProperties.why_no_plans()
    assert why_not is not None and "9.8" in why_not


@pytest.mark.usefixtures("libcuda")
def test_heuristics_without_a_target_are_not_run_before_9_9(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    # cuDNN before 9.9 runs them on uninitialized device properties without a GPU (9.0: counts
    # change from call to call, finalize fails at random): pycudnn does not call it there.
    _no_gpu()
    cudnn_at((9, 8, 0))
    res = _matmul().heuristics("a")
    assert (res.count, res.configs) == (0, [])
    assert res.error.startswith("not run: cuDNN before 9.9")


def test_unsupported_error_pickles_with_its_fields() -> None:
    e = UnsupportedByLibraryError("m", symbol="s", required=(9, 28, 0), loaded=(9, 19, 0))
    back = pickle.loads(pickle.dumps(e))
    assert (str(back), back.symbol, back.required, back.loaded) == (
        "m",
        "s",
        (9, 28, 0),
        (9, 19, 0),
    )


# -- raw cudnnBackendSetAttribute element counts (reliability audit) -------------------------------


@pytest.mark.usefixtures("libcuda")
def test_element_counts_the_array_cannot_hold_are_refused() -> None:
    pycudnn.enable_logging(10)  # with logging on, cuDNN formatted 2**63 - 1 entries and hung
    try:
        with pytest.raises(ValueError, match="arrayOfElements is NULL but elementCount"):
            raw.cudnnBackendSetAttribute(None, 0, 0, 2**63 - 1, None)
    finally:
        pycudnn.disable_logging()
    t = BackendDescriptor("TENSOR")
    dims = (ctypes.c_int64 * 2)(1, 2)
    with pytest.raises(ValueError, match=r"elementCount = 3 but arrayOfElements holds 2 INT64"):
        raw.cudnnBackendSetAttribute(
            t, raw.CUDNN_ATTR_TENSOR_DIMENSIONS, raw.CUDNN_TYPE_INT64, 3, dims
        )
    with pytest.raises(ValueError, match="elementCount must be >= 0"):
        raw.cudnnBackendSetAttribute(
            t, raw.CUDNN_ATTR_TENSOR_DIMENSIONS, raw.CUDNN_TYPE_INT64, -1, dims
        )
    raw.cudnnBackendSetAttribute(  # a count the array holds reaches cuDNN, which takes it
        t, raw.CUDNN_ATTR_TENSOR_DIMENSIONS, raw.CUDNN_TYPE_INT64, 2, dims
    )
    count = ctypes.c_int64()
    with pytest.raises(ValueError, match="requestedElementCount = 5 but arrayOfElements holds 2"):
        raw.cudnnBackendGetAttribute(
            t, raw.CUDNN_ATTR_TENSOR_DIMENSIONS, raw.CUDNN_TYPE_INT64, 5, ctypes.byref(count), dims
        )


def test_null_inputs_that_crashed_cudnn_are_refused() -> None:
    with pytest.raises(ValueError, match=r"argument 1 \(derivedBnDesc\) must not be NULL"):
        raw.cudnnDeriveBNTensorDescriptor(None, None, 0)
    with pytest.raises(ValueError, match=r"\(derivedNormScaleBiasDesc\) must not be NULL"):
        raw.cudnnDeriveNormTensorDescriptor(None, None, None, 0, 1)
    with pytest.raises(ValueError, match=r"argument 1 \(handle\) must not be NULL"):
        raw.cudnnCTCLoss(*([None] * 9), 0, None, None, 0)


# -- one copy per process ---------------------------------------------------------------------------


def test_a_cudnn_already_in_the_process_is_the_one_used() -> None:
    # Another package (PyTorch, cudnn-frontend) loaded libcudnn.so.9 first, from its own path.
    out = run_python(
        f"""
        import ctypes
        ctypes.CDLL({pycudnn.library_path()!r})
        import pycudnn
        from pycudnn import _info
        print(pycudnn.library_path())
        print(_info.found_via())
        """,
        PYCUDNN_LIBRARY="",  # no override: the loaded copy is found as such
    )
    assert out.returncode == 0, out.stderr
    path, via = out.stdout.strip().splitlines()
    assert os.path.samefile(path, pycudnn.library_path())
    assert via == "already loaded in this process"


def test_an_override_naming_another_copy_than_the_loaded_one_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "libcudnn.so.9"
    shutil.copy(pycudnn.library_path(), copy)
    out = run_python(
        f"""
        import ctypes
        ctypes.CDLL({pycudnn.library_path()!r})
        import pycudnn
        try:
            pycudnn.version()
        except pycudnn.LibraryNotFoundError as exc:
            print("MSG", exc)
        """,
        PYCUDNN_LIBRARY=str(copy),
    )
    assert out.returncode == 0, out.stderr
    assert "MSG" in out.stdout and "already loaded" in out.stdout and "two copies" in out.stdout
    # The same file as the loaded one is fine.
    same = run_python(
        f"""
        import ctypes
        ctypes.CDLL({pycudnn.library_path()!r})
        import pycudnn
        print(pycudnn.version())
        """,
        PYCUDNN_LIBRARY=pycudnn.library_path(),
    )
    assert same.returncode == 0, same.stderr
    assert int(same.stdout) == pycudnn.version()


def test_a_cutensor_already_in_the_process_is_the_one_used() -> None:
    # CuPy loaded it first (through cuda.pathfinder, which also loads its cuBLAS dependency).
    out = run_python(
        """
        from cuda import pathfinder
        pathfinder.load_nvidia_dynamic_lib("cutensor")
        import pycutensor
        from pycutensor import _info
        print(_info.found_via())
        """,
        PYCUTENSOR_LIBRARY="",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "already loaded in this process"


# -- cuTENSOR ----------------------------------------------------------------------------------------


def test_cutensor_symbols_are_dated_by_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    # Release facts (cuTENSOR release notes): trinary contractions 2.1, block-sparse 2.3, the
    # 4X16F compute descriptor 2.5. The generator reads them from the ELF symbol versions.
    assert tb.FUNCTIONS["cutensorContractTrinary"].since[:2] == (2, 1)  # type: ignore[index]
    assert tb.FUNCTIONS["cutensorBlockSparseContract"].since == (2, 3, 0)
    assert tb.COMPUTE_DESCRIPTOR_SINCE["CUTENSOR_COMPUTE_DESC_4X16F"] == (2, 5, 0)
    assert tb.FUNCTIONS["cutensorCreate"].since == (2, 0, 0)
    CUTENSOR.cdll()
    monkeypatch.setattr(CUTENSOR, "_version", min((2, 0, 0), CUTENSOR.version))
    monkeypatch.setattr(CUTENSOR, "_bound", {})
    from pycutensor import _lib

    monkeypatch.setattr(_lib, "_compute_descriptors", {})
    with pytest.raises(
        UnsupportedByLibraryError, match=r"CUTENSOR_COMPUTE_DESC_4X16F needs cuTENSOR >= 2\.5\.0"
    ):
        pycutensor.raw.compute_descriptor("4X16F")
    with pytest.raises(
        UnsupportedByLibraryError, match=r"cutensorBlockSparseContract needs cuTENSOR >= 2\.3\.0"
    ):
        CUTENSOR.function("cutensorBlockSparseContract")
    lacks = _lib.missing_symbols()
    assert "cutensorContractTrinary: needs 2.1.1" in lacks
    assert "CUTENSOR_COMPUTE_DESC_32F" not in " ".join(lacks)


@pytest.mark.gpu
def test_pytorch_imported_first_shares_its_cudnn() -> None:
    # The GPU machines have PyTorch with its own cuDNN wheel: pycudnn must use that copy.
    out = run_python(
        """
        import torch
        v = torch.backends.cudnn.version()  # loads PyTorch's libcudnn.so.9
        import pycudnn
        from pycudnn import _info
        print(v, pycudnn.version(), _info.found_via())
        maps = {line.split()[-1] for line in open("/proc/self/maps") if "libcudnn.so.9" in line}
        print(len(maps))
        """,
        PYCUDNN_LIBRARY="",
    )
    if out.returncode != 0 and "No module named 'torch'" in out.stderr:
        pytest.skip("PyTorch is not installed")
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    torch_version, ours, via = first.split(" ", 2)
    assert int(torch_version) == int(ours) and via == "already loaded in this process"
    assert second == "1"  # one libcudnn.so.9 mapped in the process


def test_cutensor_enumerators_are_dated_by_the_older_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pycutensor import _lib
    from pycutensor._enum_history import ENUMERATOR_SINCE

    names = {n for n in vars(tb) if n.startswith("CUTENSOR_") and n in ENUMERATOR_SINCE}
    assert names == set(ENUMERATOR_SINCE)  # every dated name is an enumerator of the bindings
    assert all((2, 0, 0) <= v <= tb.HEADER_VERSION for v in ENUMERATOR_SINCE.values())
    since = ENUMERATOR_SINCE["CUTENSOR_PLAN_PREFERENCE_GPU_ARCH"]
    assert since > (2, 0, 2)  # absent from the 2.0.2 headers
    CUTENSOR.cdll()
    monkeypatch.setattr(CUTENSOR, "_version", min((since[0], since[1] - 1, 0), CUTENSOR.version))
    # Refused before C: the real library would answer this NULL handle with an error status.
    with pytest.raises(UnsupportedByLibraryError, match="CUTENSOR_PLAN_PREFERENCE_GPU_ARCH"):
        pycutensor.raw.cutensorPlanPreferenceSetAttribute(
            None, None, int(tb.CUTENSOR_PLAN_PREFERENCE_GPU_ARCH), None, 0
        )
    with pytest.raises(UnsupportedByLibraryError, match="GPU_ARCH"):
        _lib.check_enum(tb.cutensorPlanPreferenceAttribute_t, 6)
    _lib.check_enum(tb.cutensorOperator_t, int(tb.CUTENSOR_OP_IDENTITY))  # as old as 2.0
    assert any(
        line.startswith("CUTENSOR_PLAN_PREFERENCE_GPU_ARCH") for line in _lib.missing_symbols()
    )
    # pycutensor's own plan preferences check what they pass to C the same way (before any call:
    # PlanPreferenceObject runs this check before cutensorCreatePlanPreference).
    from pycutensor.preference import PlanPreference, _check_versions

    with pytest.raises(UnsupportedByLibraryError, match=r"GPU_ARCH \(PlanPreference\) needs"):
        _check_versions(PlanPreference(gpu_arch=90))
    _check_versions(PlanPreference(autotune="incremental", cache_mode="pedantic", kernel_rank=1))


@pytest.mark.parametrize("wrap", [np.int32, ctypes.c_int], ids=["numpy", "c_int"])
def test_newer_enum_arguments_in_every_integer_form_are_refused(
    cudnn_at,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    wrap: type,
) -> None:
    # ctypes passes np.int32(v) and ctypes.c_int(v) on to C as v; the @since check looked at
    # Python ints only, so these reached a library that does not know the value.
    since = _since("CUDNN_BACKEND_OPERATION_ROPE_FWD_DESCRIPTOR")
    cudnn_at((since[0], since[1] - 1, 0))
    out = ctypes.c_void_p()
    with pytest.raises(UnsupportedByLibraryError, match="OPERATION_ROPE_FWD_DESCRIPTOR"):
        raw.cudnnBackendCreateDescriptor(
            wrap(raw.CUDNN_BACKEND_OPERATION_ROPE_FWD_DESCRIPTOR), ctypes.byref(out)
        )
    assert out.value is None  # cuDNN was never asked
    from pycutensor._enum_history import ENUMERATOR_SINCE

    arch = ENUMERATOR_SINCE["CUTENSOR_PLAN_PREFERENCE_GPU_ARCH"]
    CUTENSOR.cdll()
    monkeypatch.setattr(CUTENSOR, "_version", min((arch[0], arch[1] - 1, 0), CUTENSOR.version))
    with pytest.raises(UnsupportedByLibraryError, match="CUTENSOR_PLAN_PREFERENCE_GPU_ARCH"):
        pycutensor.raw.cutensorPlanPreferenceSetAttribute(
            None, None, wrap(tb.CUTENSOR_PLAN_PREFERENCE_GPU_ARCH), None, 0
        )


def test_newer_enum_values_behind_any_ctypes_pointer_are_refused(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    # The values inside an attribute's array were read only from a ctypes array: the usual
    # ctypes.byref(ctypes.c_int(value)) for a single enum value reached cuDNN unchecked.
    since = _since("CUDNN_DATA_UINT32")
    cudnn_at((since[0], since[1] - 1, 0))
    desc = ctypes.c_void_p()
    raw.cudnnBackendCreateDescriptor(raw.CUDNN_BACKEND_TENSOR_DESCRIPTOR, ctypes.byref(desc))
    try:
        value = int(raw.CUDNN_DATA_UINT32)
        forms = [
            ctypes.byref(ctypes.c_int(value)),
            ctypes.pointer(ctypes.c_int(value)),
            np.array([value], np.int32).ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
            ctypes.byref((ctypes.c_int * 2)(int(raw.CUDNN_DATA_FLOAT), value), 4),
        ]
        for form in forms:
            with pytest.raises(UnsupportedByLibraryError, match="CUDNN_DATA_UINT32"):
                raw.cudnnBackendSetAttribute(
                    desc, raw.CUDNN_ATTR_TENSOR_DATA_TYPE, raw.CUDNN_TYPE_DATA_TYPE, 1, form
                )
        older = ctypes.byref(ctypes.c_int(int(raw.CUDNN_DATA_FLOAT)))
        raw.cudnnBackendSetAttribute(
            desc, raw.CUDNN_ATTR_TENSOR_DATA_TYPE, raw.CUDNN_TYPE_DATA_TYPE, 1, older
        )
    finally:
        raw.cudnnBackendDestroyDescriptor(desc)
