"""Loading, versions, the lazy import and the missing-library errors (CPU tier)."""

from __future__ import annotations

import ctypes
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from children import run_python

import pycudnn
import pycutensor
from _nvbind.ffi import FunctionSpec, NativeLibrary, UnsupportedByLibraryError

ROOT = Path(__file__).resolve().parent.parent


def test_import_loads_no_shared_library() -> None:
    out = run_python(
        """
        import sys
        import pycudnn, pycutensor, pycudnn.layout, pycudnn.raw, pycutensor.raw
        maps = open("/proc/self/maps").read()
        print("cudnn" in maps, "cutensor" in maps, "cuda.core" in sys.modules)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "False"]


def test_import_leaves_numpy_and_the_bindings_for_later() -> None:
    """``import pycudnn, pycutensor`` imports neither NumPy, nor the generated bindings, nor
    cuda-python's packages: each is imported by the first call that needs it (the import target is
    under 150 ms; these are most of what a process that uses the libraries then pays)."""
    out = run_python(
        """
        import sys
        import pycudnn, pycutensor
        later = ("numpy", "ml_dtypes", "pycudnn._bindings", "pycutensor._bindings", "cuda.core",
                 "cuda.pathfinder")
        print([m for m in later if m in sys.modules])
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


#: Modules imported on first use only: building a plan for a graph in NumPy's own types, or
#: loading it from a plan-cache directory, needs none of them (the verification package itself is
#: imported, its modules are not).
_PLANNING_EXTRAS = (
    "pycudnn.plan.autotuning",
    "pycudnn.plan.selection",
    "pycudnn.plan.smoke",
    "pycudnn.verification.",
    "ml_dtypes",
)


def test_a_plan_from_a_cache_directory_imports_no_autotuning_or_verification(
    tmp_path: Path, deviceprops_json: dict[str, Any]
) -> None:
    props = tmp_path / "props.json"
    props.write_text(json.dumps(deviceprops_json))
    code = f"""
        import json, sys
        import pycudnn
        from pycudnn.plan import PlanCache

        props = pycudnn.DeviceProperties.from_json(json.loads(open({str(props)!r}).read()))
        g = pycudnn.Graph("first_plan")
        x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
        w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
        g.conv_fprop(x, w, padding=1, name="conv")
        cache = PlanCache({str(tmp_path / "plans")!r})
        g.build(device_properties=props, cache=cache)
        extras = [m for m in sys.modules if m.startswith({_PLANNING_EXTRAS!r})]
        print(json.dumps({{"stats": cache.stats, "extras": extras}}))
        """
    runs = []
    for _ in range(2):  # the first process plans and stores, the second loads from the directory
        out = run_python(code)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["stats"]["stores"] for r in runs] == [1, 0]
    assert [r["stats"]["disk_hits"] for r in runs] == [0, 1]
    assert [r["extras"] for r in runs] == [[], []]


def test_ml_dtypes_types_are_known_once_named() -> None:
    """The dtype tables answer NumPy's own types without ml_dtypes, and import it for the first
    ml_dtypes name or type: bf16 aliases, names only NumPy resolves once ml_dtypes is imported."""
    out = run_python(
        """
        import sys
        import numpy as np
        from _nvbind.dtypes import CUDNN_DATA_TYPE_NAMES, CUDA_DATA_TYPE_NAMES, as_numpy_dtype

        assert CUDNN_DATA_TYPE_NAMES[as_numpy_dtype("half")] == "HALF"
        assert CUDA_DATA_TYPE_NAMES.get(np.dtype(np.int16)) == "R_16I"
        assert "ml_dtypes" not in sys.modules
        assert as_numpy_dtype("float8_e4m3fnuz").name == "float8_e4m3fnuz"  # no alias: NumPy's
        assert "ml_dtypes" in sys.modules
        assert CUDNN_DATA_TYPE_NAMES[as_numpy_dtype("bf16")] == "BFLOAT16"
        assert CUDA_DATA_TYPE_NAMES.get(np.dtype(np.int16)) == "R_16I"
        print(len(CUDNN_DATA_TYPE_NAMES), CUDNN_DATA_TYPE_NAMES.get(np.dtype(np.int16)))
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["18", "None"]


def test_the_planning_names_imported_on_first_use_resolve() -> None:
    import pycudnn.plan as plan
    from pycudnn.plan import autotuning, selection, smoke

    assert plan.autotune is autotuning.autotune
    assert plan.AutotuneResult is autotuning.AutotuneResult
    assert plan.AutotuneResults is autotuning.AutotuneResults
    assert plan.build_engine is selection.build_engine
    assert plan.engine_config is selection.engine_config
    assert plan.smoke_checks is smoke.smoke_checks
    assert set(plan.__all__) <= set(dir(plan))
    with pytest.raises(AttributeError, match="no attribute 'autotuner'"):
        _ = plan.autotuner


def _independent_version(libname: str, symbol: str) -> int:
    from cuda import pathfinder

    lib = ctypes.CDLL(pathfinder.load_nvidia_dynamic_lib(libname).abs_path)
    fn = getattr(lib, symbol)
    fn.restype = ctypes.c_size_t
    return int(fn())


def test_cudnn_version_and_path() -> None:
    v = pycudnn.version()
    assert v == _independent_version("cudnn", "cudnnGetVersion")
    assert v // 10000 == 9
    path = pycudnn.library_path()
    assert os.path.isfile(path) and os.path.basename(path).startswith("libcudnn.so.9")


def test_cutensor_version_and_path() -> None:
    v = pycutensor.version()
    assert v == _independent_version("cutensor", "cutensorGetVersion")
    assert v // 10000 == 2
    assert os.path.basename(pycutensor.library_path()).startswith("libcutensor.so.2")


def _macro(header: Path, name: str) -> int:
    m = re.search(rf"#define\s+{name}\s+(\d+)", header.read_text())
    assert m, f"{name} not in {header}"
    return int(m.group(1))


def test_header_versions_recorded() -> None:
    from cuda import pathfinder

    inc = Path(pathfinder.find_nvidia_header_directory("cudnn"))
    expected = tuple(
        _macro(inc / "cudnn_version.h", n)
        for n in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")
    )
    # The bindings come from the newest headers; a version-matrix entry installs older ones, or a
    # newer patch release (9.28.1's headers differ from 9.28.0's only in the patch macros).
    assert pycudnn.header_version()[:2] >= expected[:2]
    assert pycudnn.header_version() == expected or pycudnn.version_tuple()[:2] == expected[:2]
    inc_t = Path(pathfinder.find_nvidia_header_directory("cutensor"))
    text = (inc_t / "cutensor.h").read_text()
    expected_t = tuple(
        int(re.search(rf"#define\s+{n}\s+(\d+)", text).group(1))  # type: ignore[union-attr]
        for n in ("CUTENSOR_MAJOR", "CUTENSOR_MINOR", "CUTENSOR_PATCH")
    )
    assert pycutensor.header_version() >= expected_t


@pytest.mark.parametrize(
    ("package", "env_var", "extra"),
    [("pycudnn", "PYCUDNN_LIBRARY", "cu12"), ("pycutensor", "PYCUTENSOR_LIBRARY", "cu12")],
)
def test_override_to_missing_file_raises_library_not_found(
    package: str, env_var: str, extra: str
) -> None:
    out = run_python(
        f"""
        import {package}
        try:
            {package}.version()
        except {package}.LibraryNotFoundError as exc:
            assert isinstance(exc, ImportError)
            print("MSG", exc)
        """,
        **{env_var: "/nonexistent/libnothing.so"},
    )
    assert out.returncode == 0, out.stderr
    assert "MSG" in out.stdout and env_var in out.stdout and f"[{extra}]" in out.stdout
    assert "or install " in out.stdout  # one sentence, no stray capital ("or Install")


def test_override_to_a_file_that_is_not_a_library(tmp_path: Path) -> None:
    bogus = tmp_path / "libcudnn.so.9"
    bogus.write_text("not an ELF file")
    out = run_python(
        """
        import pycudnn
        try:
            pycudnn.version()
        except pycudnn.LibraryNotFoundError as exc:
            print("MSG", exc)
        """,
        PYCUDNN_LIBRARY=str(bogus),
    )
    assert out.returncode == 0, out.stderr
    assert "could not be loaded" in out.stdout


def test_override_to_another_library_is_refused() -> None:
    # libcutensor exports no cudnnGetVersion: the loader must say it is not cuDNN.
    out = run_python(
        """
        import pycudnn, pycutensor
        path = pycutensor.library_path()
        import os
        os.environ["PYCUDNN_LIBRARY"] = path
        try:
            pycudnn.version()
        except pycudnn.LibraryNotFoundError as exc:
            print("MSG", exc)
        """
    )
    assert out.returncode == 0, out.stderr
    assert "does not look like cuDNN" in out.stdout


def test_override_to_the_real_library_works() -> None:
    out = run_python(
        "import pycudnn; print(pycudnn.library_path())", PYCUDNN_LIBRARY=pycudnn.library_path()
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == pycudnn.library_path()


def _loader_of_a_newer_get_version() -> NativeLibrary:
    """A loader of the real cuDNN whose table claims cudnnGetVersion appeared in cuDNN 99.1.0."""
    spec = FunctionSpec(
        "cudnnGetVersion", ctypes.c_size_t, (), (), (99, 1, 0), False, False, "cudnn_graph.h"
    )
    return NativeLibrary(
        display_name="cuDNN",
        pathfinder_name="cudnn",
        env_var="PYCUDNN_LIBRARY_UNUSED_IN_THIS_TEST",
        install_hint="install it",
        expected_major=9,
        functions={"cudnnGetVersion": spec},
        read_version=lambda c: pycudnn.version_tuple(),
        minimum_version=(9, 0, 0),
        version_symbol="cudnnGetVersion",
    )


def test_function_newer_than_loaded_library_names_the_version() -> None:
    # The real 9.x library must be refused for that symbol, naming the version needed.
    lib = _loader_of_a_newer_get_version()
    with pytest.raises(UnsupportedByLibraryError, match=r"needs cuDNN >= 99\.1\.0") as e:
        lib.function("cudnnGetVersion")
    assert e.value.symbol == "cudnnGetVersion" and e.value.required == (99, 1, 0)
    assert e.value.loaded == pycudnn.version_tuple()
    assert isinstance(UnsupportedByLibraryError("x"), NotImplementedError)


def test_an_unconverted_function_is_refused_alike_and_keeps_the_bound_one_typed() -> None:
    with pytest.raises(UnsupportedByLibraryError, match=r"needs cuDNN >= 99\.1\.0"):
        _loader_of_a_newer_get_version().unconverted_function("cudnnGetVersion")

    from pycudnn._lib import LIB

    fast = LIB.unconverted_function("cudnnBackendSetAttribute")
    bound = LIB.function("cudnnBackendSetAttribute")
    assert fast is not bound and fast.argtypes is None and fast.restype is bound.restype
    assert bound.argtypes is not None and len(bound.argtypes) == 5  # still converts its arguments
    assert LIB.unconverted_function("cudnnBackendSetAttribute") is fast


def test_int64_arguments_carry_the_whole_count_through_an_unconverted_call() -> None:
    from _nvbind.ffi import int64_arg
    from pycudnn.backend import BackendDescriptor

    assert int64_arg(3) is int64_arg(3) and int64_arg(3).value == 3
    assert int64_arg(2**40 + 5).value == 2**40 + 5 and int64_arg(-1).value == -1
    # A count set through the unconverted call is read back whole: 8 dims (a shared count).
    d = BackendDescriptor("TENSOR")
    d.set("TENSOR_DIMENSIONS", [2, 3, 4, 5, 6, 7, 8, 9], attr_type="INT64")
    d.set("TENSOR_STRIDES", [1] * 8, attr_type="INT64")
    d.set("TENSOR_UNIQUE_ID", 7, attr_type="INT64")
    d.set("TENSOR_DATA_TYPE", "FLOAT", attr_type="DATA_TYPE")
    d.set("TENSOR_BYTE_ALIGNMENT", 16, attr_type="INT64")
    d.finalize()
    assert d.get("TENSOR_DIMENSIONS") == [2, 3, 4, 5, 6, 7, 8, 9]
    assert d.get("TENSOR_UNIQUE_ID") == 7


@pytest.mark.skipif(
    pycudnn.version_tuple() < (9, 8, 0), reason="DEVICEPROP descriptors are cuDNN 9.8 and newer"
)
def test_a_long_text_goes_through_an_unconverted_call_whole() -> None:
    # 717 characters: a count made for the call, not a shared one; cuDNN parses all of it.
    path = Path(__file__).parent / "data" / "deviceprops" / "h100-sxm-80gb.json"
    props = pycudnn.DeviceProperties.load(path)
    assert props.descriptor.is_finalized
    assert len(path.read_text()) > 16


def test_every_declared_function_resolves_in_the_loaded_library() -> None:
    from pycudnn import _bindings as cb
    from pycudnn._lib import LIB as CUDNN
    from pycutensor import _bindings as tb
    from pycutensor._lib import LIB as CUTENSOR

    # What the loaded library is not older than must resolve; newer functions must be refused
    # (cuDNN by @since; cuTENSOR, whose headers carry no @since, by their absence from the library).
    for lib, table in ((CUDNN, cb.FUNCTIONS), (CUTENSOR, tb.FUNCTIONS)):
        for name, spec in table.items():
            if lib.lacks(spec.since) or (spec.since is None and not hasattr(lib.cdll(), name)):
                with pytest.raises(UnsupportedByLibraryError, match=name):
                    lib.function(name)
            else:
                lib.function(name)  # binds argtypes/restype without error


def test_modules_do_not_import_each_other_in_a_cycle() -> None:
    # backend sits below deviceprops (which builds on it), and cuTENSOR's loader below its log.
    out = run_python(
        """
        import sys
        import pycudnn.backend, pycutensor._lib
        print("pycudnn.deviceprops" in sys.modules, "pycutensor.log" in sys.modules)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
