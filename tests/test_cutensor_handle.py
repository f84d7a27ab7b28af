"""Handles, error mapping and the logger: what the real libcutensor does without a GPU."""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pycutensor
from _nvbind.cuda import driver_status
from pycutensor import raw
from pycutensor.errors import CutensorError, CutensorInvalidValueError
from pycutensor.handle import DEFAULT_PLAN_CACHE_SIZE, _path_bytes, get_handle

NO_GPU = not driver_status().usable


def test_error_line_reaches_python_logging_and_the_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A NULL handle is refused by cuTENSOR itself (INVALID_VALUE) and logged at level 1: a real,
    # GPU-free path through the logger callback.
    pycutensor.enable_logging(1)
    try:
        desc = ctypes.c_void_p()
        extents = (ctypes.c_int64 * 2)(2, 3)
        with (
            caplog.at_level(logging.ERROR, logger="pycutensor.cutensor"),
            pytest.raises(CutensorInvalidValueError) as info,
        ):
            raw.cutensorCreateTensorDescriptor(
                None, ctypes.byref(desc), 2, extents, None, raw.CUTENSOR_R_32F, 256
            )
    finally:
        pycutensor.disable_logging()
    err = info.value
    assert err.status == 7 and err.status_name == "CUTENSOR_STATUS_INVALID_VALUE"
    assert err.function == "cutensorCreateTensorDescriptor"
    assert "handle must not be nullptr." in err.message
    assert isinstance(err, ValueError)  # INVALID_VALUE is also a ValueError
    records = [r for r in caplog.records if r.name == "pycutensor.cutensor"]
    assert any("handle must not be nullptr." in r.getMessage() for r in records)
    assert all(r.levelno == logging.ERROR for r in records)
    assert desc.value is None


def test_error_line_is_attached_even_without_forwarding(caplog: pytest.LogCaptureFixture) -> None:
    pref = ctypes.c_void_p()
    with (
        caplog.at_level(logging.DEBUG, logger="pycutensor.cutensor"),
        pytest.raises(CutensorInvalidValueError, match="handle must not be nullptr"),
    ):
        raw.cutensorCreatePlanPreference(None, ctypes.byref(pref), -1, 0)
    assert not [r for r in caplog.records if r.name == "pycutensor.cutensor"]


@pytest.mark.skipif(not NO_GPU, reason="on a GPU machine cutensorCreate succeeds")
def test_create_without_gpu_is_cuda_error_18_with_the_logged_reason() -> None:
    handle = ctypes.c_void_p()
    with pytest.raises(CutensorError) as info:
        raw.cutensorCreate(ctypes.byref(handle))
    assert info.value.status == 18
    assert info.value.status_name == "CUTENSOR_STATUS_CUDA_ERROR"
    assert "CUDA" in info.value.message  # "Initial CUDA call failed with ..."
    assert handle.value is None


@pytest.mark.skipif(not NO_GPU, reason="needs a machine without a GPU")
@pytest.mark.parametrize("make", [pycutensor.Handle, get_handle, lambda: pycutensor.Handle(0)])
def test_handle_without_gpu_raises_cutensors_error_with_the_reason(make: object) -> None:
    with pytest.raises(CutensorError) as info:
        make()  # type: ignore[operator]
    err = info.value
    assert err.status == 18 and err.function == "cutensorCreate"
    assert "Initial CUDA call failed" in err.message  # the line cuTENSOR logged
    assert driver_status().reason in err.message  # and why, from the driver


def test_get_handle_argument_checks() -> None:
    with pytest.raises(ValueError, match="non-negative ordinal"):
        get_handle(-1)
    with pytest.raises(TypeError, match="device must be None, an int ordinal"):
        get_handle(True)
    with pytest.raises(TypeError):
        get_handle("0")


def test_cache_file_paths_are_validated() -> None:
    assert _path_bytes("/tmp/plans.bin", "path") == b"/tmp/plans.bin"
    with pytest.raises(TypeError, match=r"str, bytes or os\.PathLike"):
        _path_bytes(3, "path")
    with pytest.raises(ValueError, match="must not be empty"):
        _path_bytes("", "path")
    with pytest.raises(ValueError, match="NUL"):
        _path_bytes("a\0b", "path")


def test_default_plan_cache_size_is_cutensors() -> None:
    assert DEFAULT_PLAN_CACHE_SIZE == 64  # cutensorCreate: "its default capacity is 64"


def test_importing_loads_no_library() -> None:
    code = (
        "import sys, pycutensor, pycutensor.operations, pycutensor.plan, pycutensor._einsum, "
        "pycutensor.tensor, pycutensor.handle, pycutensor.tables, pycutensor.checks, "
        "pycutensor.operation, pycutensor.preference\n"
        "from pycutensor._lib import LIB\n"
        "assert not LIB.is_loaded, 'libcutensor loaded at import'\n"
        "assert 'cuda.core' not in sys.modules, 'cuda.core imported at import'\n"
        "assert 'cuda.bindings.driver' not in sys.modules, 'cuda.bindings imported at import'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_einsum_is_the_function_whatever_is_imported_first() -> None:
    # The implementation lives in the private module ``pycutensor._einsum`` so that no submodule
    # named ``einsum`` can shadow the public function on the package.
    import pycutensor._einsum as module

    assert pycutensor.einsum is module.einsum
    assert pycutensor.parse_einsum is module.parse_einsum


# -- the driver calls a handle makes (cuda.bindings.driver, no private libcuda binding) ----------
@pytest.mark.skipif(not NO_GPU, reason="needs a machine without a GPU")
def test_without_a_gpu_no_device_is_current() -> None:
    from _nvbind.context import current_device_ordinal

    # cuCtxGetDevice answers CUDA_ERROR_NOT_INITIALIZED (or NO_DEVICE): no context, so -1
    assert current_device_ordinal() == -1
    pycutensor.Handle.restore(None)  # nothing was made current: nothing to restore
    pycutensor.Handle.restore(0)


@pytest.mark.skipif(not NO_GPU, reason="needs a machine without a GPU")
def test_synchronize_stream_raises_the_drivers_error() -> None:
    from cuda.bindings import driver

    from pycutensor.handle import synchronize_stream

    (status,) = driver.cuStreamSynchronize(0)  # what the driver itself answers here
    assert status != 0
    with pytest.raises(RuntimeError, match=f"CUresult {int(status)}"):
        synchronize_stream(0)


@pytest.mark.gpu
def test_handles_restore_the_callers_context(gpu_device: int) -> None:
    from cuda.bindings import driver

    from _nvbind.context import current_device_ordinal

    handle = pycutensor.Handle(gpu_device)
    assert current_device_ordinal() == gpu_device  # cuda.core's Device.set_current left it current
    assert handle.activate() is None  # already current: nothing to do, nothing to restore
    status, ctx = driver.cuCtxGetCurrent()
    assert status == 0 and int(ctx) != 0
    handle.restore(int(ctx))
    assert current_device_ordinal() == gpu_device
    handle.close()


# -- cache files are written atomically ------------------------------------------------------------
def test_cache_files_replace_the_old_one_only_when_complete(tmp_path: Path) -> None:
    from pycutensor.handle import write_atomically

    target = tmp_path / "plans.bin"
    target.write_bytes(b"old")

    def writes(data: bytes) -> Any:
        def write(temporary: bytes) -> None:
            assert os.path.dirname(temporary) == os.fsencode(tmp_path)  # same file system
            assert target.read_bytes() == b"old"  # the old file is intact while writing
            Path(os.fsdecode(temporary)).write_bytes(data)

        return write

    write_atomically(os.fsencode(target), writes(b"new"))
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plans.bin"]

    def fails(temporary: bytes) -> None:
        Path(os.fsdecode(temporary)).write_bytes(b"half")
        raise CutensorError(21, "cutensorHandleWritePlanCacheToFile", "disk full")

    with pytest.raises(CutensorError, match="disk full"):
        write_atomically(os.fsencode(target), fails)
    assert target.read_bytes() == b"new"  # untouched, and no temporary file left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plans.bin"]
    with pytest.raises(OSError, match="created no file"):
        write_atomically(os.fsencode(target), lambda temporary: None)
    assert target.read_bytes() == b"new"


@pytest.mark.gpu
def test_a_failed_plan_cache_write_keeps_the_old_file(gpu_device: int, tmp_path: Path) -> None:
    import threading

    from pycutensor.operations import Contraction
    from pycutensor.tensor import TensorDescriptor

    if os.environ.get("CUTENSOR_DISABLE_PLAN_CACHE"):
        pytest.skip("CUTENSOR_DISABLE_PLAN_CACHE is set: there is no plan cache to write")
    target = tmp_path / "plans.bin"
    target.write_bytes(b"an older cache")
    # A directory where the temporary file would go: cuTENSOR cannot open it, even as root.
    blocker = tmp_path / f".plans.bin.{os.getpid()}-{threading.get_ident()}.tmp"
    blocker.mkdir()
    with pycutensor.Handle(gpu_device) as handle:
        a, b = TensorDescriptor(handle, (32, 16)), TensorDescriptor(handle, (16, 8))
        plan = Contraction(a, "mk", b, "kn", TensorDescriptor(handle, (32, 8)), "mn").plan()
        with pytest.raises((CutensorError, OSError)):
            handle.write_plan_cache(target)
        assert target.read_bytes() == b"an older cache"
        blocker.rmdir()
        handle.write_plan_cache(target)  # and once it can, the file is replaced
        plan.close()
    assert target.read_bytes() != b"an older cache"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plans.bin"]
