"""cuTENSORMp and cuTENSORMg raw layers: generated tables, lazy loading, checks before C, and the
errors of the real libraries (cuTENSORMp's own log text) where the CPU reaches them.

cuTENSORMp needs NCCL and the CUDA runtime of the cuTENSOR wheel's CUDA major; the tests that call
into it are skipped (with the loader's reason) where those are not installed.
"""

from __future__ import annotations

import ctypes

import pytest

import pycutensor
from pycutensor import _bindings_mg, _bindings_mp, raw_mg, raw_mp
from pycutensor._lib_ext import MG, MP
from tests.children import run_python


def _mp_loadable() -> str:
    """Empty when cuTENSORMp loads here, else the reason."""
    try:
        MP.cdll()
    except pycutensor.LibraryNotFoundError as exc:
        return str(exc)
    return ""


def test_importing_pycutensor_and_the_raw_layers_loads_neither_library() -> None:
    out = run_python(
        "import sys, pycutensor, pycutensor.raw_mp, pycutensor.raw_mg, pycutensor.distributed\n"
        "from pycutensor.distributed import mp, mg, blocksparse, comm, cost\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('libcutensorMp' in maps, 'libcutensorMg' in maps, 'libnccl' in maps)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "False"]


def test_every_declared_function_is_in_the_raw_layers() -> None:
    assert set(raw_mp.__all__) == set(_bindings_mp.FUNCTIONS)
    assert set(raw_mg.__all__) == set(_bindings_mg.FUNCTIONS)
    # the functions the documentation of each header describes (not a copy of the table)
    for name in ("cutensorMpCreate", "cutensorMpContract", "cutensorMpRedistribute",
                 "cutensorMpUnfold", "cutensorMpFold", "cutensorMpSetStream"):  # fmt: skip
        assert name in raw_mp.__all__
    for name in ("cutensorMgCreate", "cutensorMgCopy", "cutensorMgContraction"):
        assert name in raw_mg.__all__


def test_functions_are_dated_by_their_elf_symbol_versions() -> None:
    spec = _bindings_mp.FUNCTIONS
    assert spec["cutensorMpCreate"].since == (2, 4, 0)
    assert spec["cutensorMpCreateRedistribution"].since == (2, 6, 0)
    assert spec["cutensorMpCreateUnfolding"].since == (2, 7, 0)
    assert spec["cutensorMpClearOperationCache"].since == (2, 8, 0)
    # cuTENSORMg's nodes say 1.4.0; in cuTENSOR 2 it has been there since 2.0.0
    assert {s.since for s in _bindings_mg.FUNCTIONS.values()} == {(2, 0, 0)}


def test_enums_and_c_names() -> None:
    assert raw_mp.CUTENSORMP_TENSOR_DESCRIPTOR_LOCAL_STORAGE_SIZE == 5
    assert raw_mp.cutensorMpPlanAttribute_t(1) is raw_mp.CUTENSORMP_PLAN_REQUIRED_WORKSPACE_HOST
    assert raw_mg.CUTENSOR_MG_DEVICE_HOST == -1
    assert raw_mg.CUTENSORMG_ALGO_DEFAULT == -1
    assert raw_mg.CUTENSOR_COMPUTE_32F == 1 << 2
    with pytest.raises(AttributeError, match=r"pycutensor\.raw_mp"):
        raw_mp.cutensorMpNoSuchFunction  # noqa: B018


def test_mg_counts_beyond_the_arrays_are_refused_before_c() -> None:
    devices = (ctypes.c_int32 * 1)(0)
    with pytest.raises(ValueError, match=r"devices.*numDevices = 2"):
        raw_mg.cutensorMgCreate(ctypes.byref(ctypes.c_void_p()), 2, devices)
    extent = (ctypes.c_int64 * 2)(4, 4)
    with pytest.raises(ValueError, match=r"extent.*numModes = 3"):
        raw_mg.cutensorMgCreateTensorDescriptor(
            None, ctypes.byref(ctypes.c_void_p()), 3, extent, None, None, None, None, 0, None, 0
        )


def test_mp_counts_beyond_the_arrays_are_refused_before_c() -> None:
    reason = _mp_loadable()
    if reason:
        pytest.skip(reason)
    extent = (ctypes.c_int64 * 2)(4, 4)
    ranks = (ctypes.c_int32 * 1)(0)
    desc = ctypes.c_void_p()
    # `ranks` has nranks entries (the header's "size: nranks"), not numModes
    with pytest.raises(ValueError, match=r"ranks.*nranks = 2"):
        raw_mp.cutensorMpCreateTensorDescriptor(
            None, ctypes.byref(desc), 2, extent, None, None, None, None, 2, ranks, 0
        )
    with pytest.raises(ValueError, match=r"extent.*numModes = 3"):
        raw_mp.cutensorMpCreateTensorDescriptor(
            None, ctypes.byref(desc), 3, extent, None, None, None, None, 1, None, 0
        )


def test_wrong_argument_count_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="cutensorMgCreate"):
        raw_mg.cutensorMgCreate(None, 1)


def test_missing_nccl_or_runtime_is_named_with_the_extra_to_install() -> None:
    reason = _mp_loadable()
    if not reason:
        pytest.skip("NCCL and the CUDA runtime are installed here: nothing is missing")
    if "is not beside" in reason:  # cuTENSOR before 2.3 (the version matrix's oldest entries)
        pytest.skip(f"this cuTENSOR ships no cuTENSORMp: {reason[:120]}")
    assert "libnccl.so.2" in reason or "libcudart" in reason
    assert "cudnn-cutensor-ctypes[distributed]" in reason
    with pytest.raises(pycutensor.LibraryNotFoundError, match="cuTENSORMp"):
        raw_mp.cutensorMpCreate(ctypes.byref(ctypes.c_void_p()), None, 0, None)


def test_cutensor_mp_errors_carry_its_own_log_text() -> None:
    reason = _mp_loadable()
    if reason:
        pytest.skip(reason)
    with pytest.raises(pycutensor.CutensorInvalidValueError) as e:
        raw_mp.cutensorMpCreate(ctypes.byref(ctypes.c_void_p()), None, 0, None)
    assert e.value.function == "cutensorMpCreate"
    assert "'comm' cannot be null" in str(e.value)
    assert "/home/" not in str(e.value)  # the build machine's source path is dropped
    with pytest.raises(pycutensor.CutensorInvalidValueError) as e:
        extent = (ctypes.c_int64 * 1)(4)
        raw_mp.cutensorMpCreateTensorDescriptor(
            None, ctypes.byref(ctypes.c_void_p()), 1, extent, None, None, None, None, 1, None, 0
        )
    # the text of this call, not the previous one's
    assert "'handle' cannot be null" in str(e.value)
    assert "comm" not in str(e.value)


def test_cutensor_mg_refuses_null_handles_with_a_status() -> None:
    with pytest.raises(pycutensor.CutensorInvalidValueError, match="cutensorMgDestroy"):
        raw_mg.cutensorMgDestroy(None)
    # no version function of its own: the wheel's, read from libcutensor.so.2 beside it
    assert MG.version == pycutensor._lib.LIB.version
