"""A cuDNN named by ``PYCUDNN_LIBRARY`` gets its runtime dependencies loaded first, as one found by
``cuda.pathfinder`` does: cuDNN loads cuBLASLt by soname when a plan first needs it and aborts the
process when it cannot (the CUDA 13 wheels keep cuBLASLt where cuDNN's RUNPATH does not reach:
the matrix entries on cu13 exercise that layout)."""

from __future__ import annotations

from children import run_python
from conftest import H100_PROPS_FILE

import pycudnn
from pycudnn.deviceprops import DeviceProperties

MATMUL = """
import pycudnn
from pycudnn.graph import Graph

pycudnn.version()  # loads the library named by PYCUDNN_LIBRARY
maps = open("/proc/self/maps").read()
print("CUBLASLT", "libcublasLt.so" in maps)
g = Graph("mm")
a = g.tensor([1, 64, 32], dtype="float16", name="a")
b = g.tensor([1, 32, 48], dtype="float16", name="b")
g.matmul(a, b)
props = pycudnn.DeviceProperties.load({props!r})
print("ENGINE", g.build(device_properties=props, cache=False).engine_id is not None)
"""


def test_a_named_cudnn_plans_a_matmul_with_cublaslt_loaded_first(
    h100_props: DeviceProperties,
) -> None:
    out = run_python(
        MATMUL.format(props=str(H100_PROPS_FILE)), PYCUDNN_LIBRARY=pycudnn.library_path()
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "CUBLASLT True" in out.stdout, out.stdout  # loaded with cuDNN, before any plan
    assert "ENGINE True" in out.stdout, out.stdout


def test_a_named_cudnn_without_cublaslt_is_refused_not_aborted(
    h100_props: DeviceProperties,
) -> None:
    # cuda.pathfinder made to find no cuBLASLt (the library itself is real): refused at load,
    # naming what is missing, instead of cuDNN aborting the process at the first matmul.
    code = """
        from cuda import pathfinder
        found = pathfinder.load_nvidia_dynamic_lib

        def without_cublaslt(name):
            if name == "cublasLt":
                raise pathfinder.DynamicLibNotFoundError("no cuBLASLt here")
            return found(name)

        pathfinder.load_nvidia_dynamic_lib = without_cublaslt
        import pycudnn
        try:
            pycudnn.version()
        except pycudnn.LibraryNotFoundError as exc:
            print("REFUSED", exc)
    """
    out = run_python(code, PYCUDNN_LIBRARY=pycudnn.library_path())
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "REFUSED" in out.stdout and "needs cublasLt" in out.stdout, out.stdout
    assert "aborts the process without it" in out.stdout


def test_the_default_search_loads_cublaslt_with_cudnn_too() -> None:
    code = 'import pycudnn; pycudnn.version(); print("libcublasLt.so" in open("/proc/self/maps").read())'
    out = run_python(code, PYCUDNN_LIBRARY="")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"
