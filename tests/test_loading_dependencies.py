"""cuDNN's runtime dependencies: cuDNN loads cuBLASLt (and NVRTC) by soname, through its
sublibraries' RUNPATH, when a plan first needs them, and aborts the process when that fails.
A cuDNN loaded without cuda.pathfinder (named by ``PYCUDNN_LIBRARY``, or taken from its wheel
directory) gets loaded for it, through cuda.pathfinder, the dependencies its own search path
misses (the CUDA 13 wheel of cuDNN 9.12 keeps ``nvidia/cu13/lib`` off its RUNPATH: the
cu13-oldest matrix entry runs that layout), and no others, so that a process loading a saved
convolution plan does not map cuBLASLt (about 55 ms).

The layouts are built as directories of symbolic links to the real libraries: cuDNN's files in
``nvidia/cudnn/lib``, with or without cuBLASLt in ``nvidia/cublas/lib`` beside it, where every
cuDNN 9 wheel's RUNPATH (``$ORIGIN/../../cublas/lib``) looks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from children import run_python
from conftest import H100_PROPS_FILE

import pycudnn
from _nvbind.search_path import (
    needed,
    search_path,
    site_packages,
    sublibraries,
    wheel_library,
)
from pycudnn.deviceprops import DeviceProperties

MATMUL = """
import sys
import pycudnn
from pycudnn.graph import Graph
from pycudnn._lib import LIB

pycudnn.version()
maps = open("/proc/self/maps").read()
print("CUBLASLT", "libcublasLt.so" in maps)
print("PATHFINDER", "cuda.pathfinder" in sys.modules)
print("FOUND", LIB.found_via)
g = Graph("mm")
a = g.tensor([1, 64, 32], dtype="float16", name="a")
b = g.tensor([1, 32, 48], dtype="float16", name="b")
g.matmul(a, b)
props = pycudnn.DeviceProperties.load({props!r})
print("ENGINE", g.build(device_properties=props, cache=False).engine_id is not None)
print("CUBLASLT AFTER", "libcublasLt.so" in open("/proc/self/maps").read())
"""


def _cublaslt() -> Path:
    from cuda import pathfinder

    return Path(pathfinder.load_nvidia_dynamic_lib("cublasLt").abs_path)


def _layout(root: Path, *, with_cublaslt: bool) -> Path:
    """A wheel-like tree of links to the real cuDNN (and cuBLASLt); returns the libcudnn.so.9."""
    real = Path(pycudnn.library_path()).parent
    lib = root / "nvidia" / "cudnn" / "lib"
    lib.mkdir(parents=True)
    for f in real.iterdir():
        if f.name.startswith("libcudnn"):
            (lib / f.name).symlink_to(f)
    if with_cublaslt:
        cublas = root / "nvidia" / "cublas" / "lib"
        cublas.mkdir(parents=True)
        target = _cublaslt()
        (cublas / target.name).symlink_to(target)
    return lib / "libcudnn.so.9"


def _runpath_has_cublas_dir() -> None:
    subs = sublibraries(pycudnn.library_path(), "cudnn", 9)
    origin = os.path.dirname(os.path.abspath(subs[0])) if subs else ""
    want = os.path.normpath(os.path.join(origin, "..", "..", "cublas", "lib"))
    if not subs or not all(want in search_path(s) for s in subs):
        pytest.skip("this cuDNN's sublibraries do not search $ORIGIN/../../cublas/lib")


def test_a_named_cudnn_plans_a_matmul(h100_props: DeviceProperties) -> None:
    out = run_python(
        MATMUL.format(props=str(H100_PROPS_FILE)), PYCUDNN_LIBRARY=pycudnn.library_path()
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "ENGINE True" in out.stdout, out.stdout
    assert "CUBLASLT AFTER True" in out.stdout, out.stdout  # the matmul engine needs it


def test_a_cudnn_that_reaches_cublaslt_itself_loads_it_only_for_a_plan(
    tmp_path: Path, h100_props: DeviceProperties
) -> None:
    _runpath_has_cublas_dir()
    path = _layout(tmp_path, with_cublaslt=True)
    out = run_python(MATMUL.format(props=str(H100_PROPS_FILE)), PYCUDNN_LIBRARY=str(path))
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "CUBLASLT False" in out.stdout, out.stdout  # not mapped with cuDNN
    assert "ENGINE True" in out.stdout, out.stdout
    assert "CUBLASLT AFTER True" in out.stdout, out.stdout  # cuDNN found it on its own


def test_a_cudnn_that_misses_cublaslt_gets_it_loaded_first(
    tmp_path: Path, h100_props: DeviceProperties
) -> None:
    # The links' $ORIGIN/../../cublas/lib does not exist: without cuBLASLt loaded first, cuDNN
    # would abort the process at the matmul plan.
    path = _layout(tmp_path, with_cublaslt=False)
    out = run_python(MATMUL.format(props=str(H100_PROPS_FILE)), PYCUDNN_LIBRARY=str(path))
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "CUBLASLT True" in out.stdout, out.stdout  # loaded with cuDNN, before any plan
    assert "PATHFINDER True" in out.stdout, out.stdout
    assert "ENGINE True" in out.stdout, out.stdout


def test_a_cudnn_without_a_reachable_or_findable_cublaslt_is_refused_not_aborted(
    tmp_path: Path, h100_props: DeviceProperties
) -> None:
    # cuda.pathfinder made to find no cuBLASLt (the library itself is real): refused at load,
    # naming what is missing, instead of cuDNN aborting the process at the first matmul.
    path = _layout(tmp_path, with_cublaslt=False)
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
    out = run_python(code, PYCUDNN_LIBRARY=str(path))
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "REFUSED" in out.stdout and "needs cublasLt" in out.stdout, out.stdout
    assert "aborts the process without it" in out.stdout
    assert "PYCUDNN_LIBRARY=" in out.stdout  # the message says which setting chose the library


def test_the_default_search_plans_a_matmul(h100_props: DeviceProperties) -> None:
    out = run_python(MATMUL.format(props=str(H100_PROPS_FILE)), PYCUDNN_LIBRARY="")
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "ENGINE True" in out.stdout, out.stdout


def test_a_wheel_cudnn_is_the_file_cuda_pathfinder_finds() -> None:
    # The wheel directory is taken where cuda.pathfinder looks first, so both name one file.
    code = """
        from cuda import pathfinder
        found = pathfinder.load_nvidia_dynamic_lib("cudnn")
        print(found.found_via, found.abs_path)
    """
    out = run_python(code, PYCUDNN_LIBRARY="")
    assert out.returncode == 0, out.stderr[-2000:]
    via, path = out.stdout.split()
    ours = wheel_library(("nvidia/cudnn/lib",), "libcudnn.so.9")
    if via != "site-packages":
        assert ours is None, (via, path, ours)
    else:
        assert ours is not None and os.path.samefile(ours, path), (path, ours)
    assert site_packages()  # the environment has site-packages to search


def test_search_path_reads_runpath_and_rpath(tmp_path: Path) -> None:
    wheel = wheel_library(("nvidia/cudnn/lib",), "libcudnn.so.9")
    if wheel is None:
        pytest.skip("no cuDNN wheel in site-packages (its dispatcher's RPATH is $ORIGIN)")
    lib = Path(wheel)
    # The dispatcher's RPATH is $ORIGIN: its own directory, as given (a link's, not the target's).
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    (link_dir / lib.name).symlink_to(lib)
    assert str(lib.parent) in search_path(str(lib))
    assert str(link_dir) in search_path(str(link_dir / lib.name))
    # What cannot be read as ELF has no search path (its dependencies are then loaded for it).
    (tmp_path / "text.so").write_text("not a library")
    cut = tmp_path / "cut.so"
    with open(lib, "rb") as f:
        cut.write_bytes(f.read(200))
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    os.mkfifo(tmp_path / "fifo.so")  # would block a plain open() for a writer
    for bad in ("text.so", "cut.so", "empty.so", "missing.so", "fifo.so"):
        assert search_path(str(tmp_path / bad)) == (), bad


def test_search_path_handles_a_library_without_one() -> None:
    # the C library has neither RUNPATH nor RPATH
    libc = next(
        (p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6") if os.path.isfile(p)),
        None,
    )
    if libc is None:
        pytest.skip("no libc.so.6 at the usual paths")
    assert search_path(libc) == ()


def _readelf_needed(path: str) -> tuple[str, ...]:
    """binutils' reading of the DT_NEEDED entries: the reference the reader here is held to."""
    tool = shutil.which("readelf")
    if tool is None:
        pytest.skip("readelf (binutils) is not installed: no second reading to compare with")
    out = subprocess.run([tool, "-d", path], capture_output=True, text=True, check=True).stdout
    return tuple(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))


def _cutensor_library_dir() -> Path:
    import pycutensor

    return Path(pycutensor.library_path()).parent


def test_needed_reads_the_sonames_the_loader_loads_with_a_library() -> None:
    paths = [pycudnn.library_path(), *sublibraries(pycudnn.library_path(), "cudnn", 9)[:2]]
    paths += [str(p) for p in sorted(_cutensor_library_dir().glob("libcutensor*.so.2"))]
    for path in paths:
        want = _readelf_needed(path)
        assert want, path  # every one of them needs at least the C library
        assert needed(path) == want, path


def test_the_cutensor_extension_is_given_the_cuda_runtime_it_names() -> None:
    from pycutensor._lib_ext import _needed

    mp = _cutensor_library_dir() / "libcutensorMp.so.2"
    if not mp.is_file():
        pytest.skip("this cuTENSOR wheel has no libcutensorMp.so.2")
    runtime = [n for n in _readelf_needed(str(mp)) if n.startswith("libcudart.so.")]
    assert len(runtime) == 1, runtime
    assert _needed(str(mp), "libcudart.so") == runtime[0]
    assert _needed(str(mp), "libnccl.so.2") == "libnccl.so.2"  # a full soname is kept as given
    assert _needed(str(mp), "libnotthere.so") == "libnotthere.so"  # not named: the stem


def test_needed_of_what_is_not_a_readable_library_is_empty(tmp_path: Path) -> None:
    (tmp_path / "text.so").write_text("not a library")
    (tmp_path / "empty.so").write_bytes(b"")
    cut = tmp_path / "cut.so"
    with open(pycudnn.library_path(), "rb") as f:
        cut.write_bytes(f.read(200))
    os.mkfifo(tmp_path / "fifo.so")
    for bad in ("text.so", "empty.so", "cut.so", "missing.so", "fifo.so"):
        assert needed(str(tmp_path / bad)) == (), bad


def _nvrtc_findable() -> bool:
    from cuda import pathfinder

    try:
        pathfinder.load_nvidia_dynamic_lib("nvrtc")
    except Exception:  # DynamicLibNotFoundError and friends: NVRTC is optional
        return False
    return True


def test_nvrtc_is_loaded_once_not_around_every_plan(h100_props: DeviceProperties) -> None:
    # cuDNN 9.19 loads NVRTC and unloads it again around every plan build unless something holds
    # it (6 ms and about 130 KiB never returned, each time): held from cuDNN's load, it is
    # initialised once. The loader's own log counts the initialisations.
    if not _nvrtc_findable():
        pytest.skip("no NVRTC in this environment (an optional dependency of cuDNN)")
    code = f"""
        import pycudnn
        from pycudnn.graph import Graph

        props = pycudnn.DeviceProperties.load({str(H100_PROPS_FILE)!r})
        for _ in range(3):
            g = Graph("conv")
            x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
            w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
            g.relu(g.conv_fprop(x, w, padding=1))
            g.build(device_properties=props, cache=False).close()
        print("NVRTC", "libnvrtc.so" in open("/proc/self/maps").read())
    """
    out = run_python(code, PYCUDNN_LIBRARY="", LD_DEBUG="files")
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "NVRTC True" in out.stdout, out.stdout  # held
    inits = [
        line
        for line in out.stderr.splitlines()
        if "calling init:" in line and "libnvrtc.so" in line
    ]
    assert len(inits) == 1, inits


def test_a_cutensor_extension_is_located_once_and_given_its_dependencies_before_it_loads() -> None:
    # In a child: a new ExtensionLibrary (cuTENSORMg, which needs nothing beyond cuTENSOR) loads
    # once; the path its dependencies are loaded for is the one it then opens, and the hook that
    # prepares what the library reads at load runs first.
    code = r"""
import json
from pycutensor import _bindings_mg
from pycutensor._lib_ext import ExtensionLibrary

seen = []

class Watched(ExtensionLibrary):
    def _locate(self):
        found = super()._locate()
        seen.append(("locate", found[0]))
        return found

    def _before_open(self, path):
        seen.append(("before_open", path))
        super()._before_open(path)

lib = Watched(_bindings_mg, "cuTENSORMg", "PYCUTENSOR_MG_LIBRARY", "cutensorMgCreate",
              before_load=lambda: seen.append(("before_load", "")))
lib.cdll()
print(json.dumps({"seen": seen, "path": lib.path}))
"""
    result = run_python(code)
    if result.returncode and "LibraryNotFoundError" in result.stderr:
        pytest.skip(f"cuTENSORMg not loadable here: {result.stderr.strip().splitlines()[-1]}")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    steps = [s[0] for s in out["seen"]]
    assert steps == ["before_load", "locate", "before_open"], out["seen"]
    assert out["seen"][1][1] == out["seen"][2][1] == out["path"]
