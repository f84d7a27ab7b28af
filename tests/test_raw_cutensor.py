"""The raw cuTENSOR layer against the real library (CPU tier)."""

from __future__ import annotations

import ctypes

import pytest

import pycutensor
from _nvbind.cuda import driver_status
from pycutensor import _bindings, raw


def test_compute_descriptors_are_readable_and_distinct() -> None:
    names = [s.removeprefix("CUTENSOR_COMPUTE_DESC_") for s in _bindings.COMPUTE_DESCRIPTOR_SYMBOLS]
    assert {"16F", "16BF", "TF32", "3XTF32", "32F", "64F"} <= set(names)
    # Descriptors newer than the loaded cuTENSOR (a version-matrix entry) are refused, dated.
    loaded = pycutensor.version_tuple()
    newer = [n for n in names if _bindings.COMPUTE_DESCRIPTOR_SINCE[f"CUTENSOR_COMPUTE_DESC_{n}"] > loaded]  # fmt: skip
    for n in newer:
        with pytest.raises(pycutensor.UnsupportedByLibraryError, match=f"COMPUTE_DESC_{n} needs"):
            raw.compute_descriptor(n)
    names = [n for n in names if n not in newer]
    ptrs = [raw.compute_descriptor(n) for n in names]
    assert all(ptrs) and len(set(ptrs)) == len(ptrs)
    # The value is what the exported data symbol holds (read independently with in_dll).
    from pycutensor._lib import LIB

    assert (
        raw.compute_descriptor("32F")
        == ctypes.c_void_p.in_dll(LIB.cdll(), "CUTENSOR_COMPUTE_DESC_32F").value
    )
    with pytest.raises(ValueError, match="unknown compute descriptor"):
        raw.compute_descriptor("12F")


def test_null_handle_is_invalid_value_with_the_logged_reason() -> None:
    desc = ctypes.c_void_p()
    extent = (ctypes.c_int64 * 2)(4, 4)
    with pytest.raises(pycutensor.CutensorInvalidValueError) as info:
        raw.cutensorCreateTensorDescriptor(
            None, ctypes.byref(desc), 2, extent, None, raw.CUTENSOR_R_32F, 128
        )
    err = info.value
    assert err.status == int(raw.cutensorStatus_t.INVALID_VALUE) == 7
    assert err.function == "cutensorCreateTensorDescriptor"
    assert "nullptr" in err.message  # cuTENSOR logs "handle must not be nullptr."
    assert desc.value is None


def test_create_without_gpu_raises_cuda_error_with_reason() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU: cutensorCreate succeeds")
    handle = ctypes.c_void_p()
    with pytest.raises(pycutensor.CutensorError) as info:
        raw.cutensorCreate(ctypes.byref(handle))
    assert info.value.status == int(raw.cutensorStatus_t.CUDA_ERROR) == 18
    assert "CUDA" in info.value.message


def test_destroy_null_is_success() -> None:
    raw.cutensorDestroyTensorDescriptor(None)
    raw.cutensorDestroyPlan(None)


def test_stale_error_line_is_not_attached_to_a_later_failure() -> None:
    from pycutensor._lib import LIB, record_error

    record_error("cutensorSomethingEarlier", "old message")
    with pytest.raises(pycutensor.CutensorError) as info:
        raw.cutensorCreatePlanPreference(None, ctypes.byref(ctypes.c_void_p()), -1, 0)
    assert "old message" not in info.value.message
    assert LIB.is_loaded


def test_version_and_constants() -> None:
    assert raw.CUTENSOR_R_16BF == _bindings.cutensorDataType_t.R_16BF == 14
    assert raw.CUTENSOR_OP_IDENTITY == 1
    assert raw.cutensorGetVersion() == pycutensor.version()


def test_compute_descriptors_under_their_c_names() -> None:
    # A port of C code writes CUTENSOR_COMPUTE_DESC_32F; it is the value of that exported global.
    from pycutensor._lib import LIB

    symbols = _bindings.COMPUTE_DESCRIPTOR_SYMBOLS
    assert {"CUTENSOR_COMPUTE_DESC_32F", "CUTENSOR_COMPUTE_DESC_TF32", "CUTENSOR_COMPUTE_DESC_64F",
            "CUTENSOR_COMPUTE_DESC_16F", "CUTENSOR_COMPUTE_DESC_16BF",
            "CUTENSOR_COMPUTE_DESC_3XTF32"} <= set(symbols)  # fmt: skip
    present = []
    for symbol in symbols:
        assert symbol in dir(raw)
        since = _bindings.COMPUTE_DESCRIPTOR_SINCE[symbol]
        if LIB.lacks(since):
            # newer than the loaded cuTENSOR (the version matrix: 2.0.0 lacks 9X16BF, 2.3.0
            # 8XINT8, both 4X16F): the library does not export it, and the name is refused
            # naming the release that has it
            assert since is not None
            with pytest.raises(ValueError, match="undefined symbol"):
                ctypes.c_void_p.in_dll(LIB.cdll(), symbol)
            need = f"needs cuTENSOR >= {'.'.join(map(str, since))}"
            with pytest.raises(pycutensor.UnsupportedByLibraryError, match=need):
                getattr(raw, symbol)
            with pytest.raises(pycutensor.UnsupportedByLibraryError, match=need):
                raw.compute_descriptor(symbol.removeprefix("CUTENSOR_COMPUTE_DESC_"))
            continue
        value = getattr(raw, symbol)
        assert value == ctypes.c_void_p.in_dll(LIB.cdll(), symbol).value
        assert value == raw.compute_descriptor(symbol.removeprefix("CUTENSOR_COMPUTE_DESC_"))
        present.append(value)
    assert len(set(present)) == len(present)
    with pytest.raises(AttributeError, match="CUTENSOR_COMPUTE_DESC_12F"):
        raw.CUTENSOR_COMPUTE_DESC_12F  # noqa: B018


def test_compute_descriptor_names_load_nothing_at_import() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import pycutensor.raw as raw\n"
        "from pycutensor._lib import LIB\n"
        "names = [n for n in dir(raw) if n.startswith('CUTENSOR_COMPUTE_DESC_')]\n"
        "before = LIB.is_loaded\n"
        "value = raw.CUTENSOR_COMPUTE_DESC_32F\n"
        "print(len(names), before, LIB.is_loaded, value != 0)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.returncode == 0, out.stderr
    count = len(_bindings.COMPUTE_DESCRIPTOR_SYMBOLS)
    assert out.stdout.split() == [str(count), "False", "True", "True"]


@pytest.mark.gpu
def test_c_code_with_a_c_named_compute_descriptor_runs(gpu_device: int) -> None:
    # What a port of C code writes: a permutation B[j,i] = A[i,j] created with the C global.
    handle = pycutensor.get_handle(gpu_device)
    desc, op = ctypes.c_void_p(), ctypes.c_void_p()
    extent = (ctypes.c_int64 * 2)(4, 6)
    raw.cutensorCreateTensorDescriptor(
        handle, ctypes.byref(desc), 2, extent, None, raw.CUTENSOR_R_32F, 128
    )
    modes_a = (ctypes.c_int32 * 2)(ord("i"), ord("j"))
    modes_b = (ctypes.c_int32 * 2)(ord("j"), ord("i"))
    out = ctypes.c_void_p()
    try:
        out_extent = (ctypes.c_int64 * 2)(6, 4)
        raw.cutensorCreateTensorDescriptor(
            handle, ctypes.byref(out), 2, out_extent, None, raw.CUTENSOR_R_32F, 128
        )
        raw.cutensorCreatePermutation(
            handle, ctypes.byref(op), desc, modes_a, raw.CUTENSOR_OP_IDENTITY, out, modes_b,
            raw.CUTENSOR_COMPUTE_DESC_32F,
        )  # fmt: skip
        scalar = ctypes.c_int32(-1)
        raw.cutensorOperationDescriptorGetAttribute(
            handle, op, raw.CUTENSOR_OPERATION_DESCRIPTOR_SCALAR_TYPE,
            ctypes.byref(scalar), ctypes.sizeof(scalar),
        )  # fmt: skip
        assert scalar.value == raw.CUTENSOR_R_32F  # the guide's table: 32F data, 32F scalars
    finally:
        raw.cutensorDestroyOperationDescriptor(op)
        raw.cutensorDestroyTensorDescriptor(out)
        raw.cutensorDestroyTensorDescriptor(desc)
