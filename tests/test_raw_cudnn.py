"""The raw cuDNN layer against the real library (CPU tier)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from children import run_python

import pycudnn
from _nvbind.cuda import driver_status
from _nvbind.resource import CResource
from pycudnn import raw


def test_cudnn_create_without_gpu_raises_not_initialized_with_cudnn_message() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU: cudnnCreate succeeds")
    handle = ctypes.c_void_p()
    with pytest.raises(pycudnn.CudnnNotInitializedError) as info:
        raw.cudnnCreate(ctypes.byref(handle))
    err = info.value
    assert err.status == 1001 and err.status_name == "CUDNN_STATUS_NOT_INITIALIZED"
    assert err.function == "cudnnCreate"
    # cuDNN's own explanation (cudnnGetLastErrorString) names the call that failed.
    assert "cudaGetDeviceCount" in err.message


def test_legacy_tensor_descriptor_round_trip() -> None:
    desc = ctypes.c_void_p()
    raw.cudnnCreateTensorDescriptor(ctypes.byref(desc))
    try:
        dims = (ctypes.c_int * 4)(2, 3, 8, 8)
        strides = (ctypes.c_int * 4)(192, 64, 8, 1)
        raw.cudnnSetTensorNdDescriptor(desc, raw.CUDNN_DATA_HALF, 4, dims, strides)
        dt, nb = ctypes.c_int(), ctypes.c_int()
        got_d, got_s = (ctypes.c_int * 8)(), (ctypes.c_int * 8)()
        raw.cudnnGetTensorNdDescriptor(desc, 8, ctypes.byref(dt), ctypes.byref(nb), got_d, got_s)
        assert (dt.value, nb.value) == (int(raw.cudnnDataType_t.HALF), 4)
        assert list(got_d[:4]) == [2, 3, 8, 8] and list(got_s[:4]) == [192, 64, 8, 1]
        size = ctypes.c_size_t()
        raw.cudnnGetTensorSizeInBytes(desc, ctypes.byref(size))
        assert size.value == 2 * 3 * 8 * 8 * 2
        # NHWC through the format-only setter: strides in NCHW order are [HWC, 1, WC, C].
        raw.cudnnSetTensorNdDescriptorEx(desc, raw.CUDNN_TENSOR_NHWC, raw.CUDNN_DATA_FLOAT, 4, dims)
        raw.cudnnGetTensorNdDescriptor(desc, 8, ctypes.byref(dt), ctypes.byref(nb), got_d, got_s)
        assert list(got_s[:4]) == [8 * 8 * 3, 1, 8 * 3, 3]
    finally:
        raw.cudnnDestroyTensorDescriptor(desc)


def test_bad_descriptor_reports_cudnn_reason() -> None:
    desc = ctypes.c_void_p()
    raw.cudnnCreateTensorDescriptor(ctypes.byref(desc))
    try:
        dims = (ctypes.c_int * 1)(4)
        strides = (ctypes.c_int * 1)(1)
        with pytest.raises(pycudnn.CudnnBadParamError) as info:
            raw.cudnnSetTensorNdDescriptor(desc, raw.CUDNN_DATA_FLOAT, 1, dims, strides)
        assert info.value.status == 2000
        assert "nbDims" in info.value.message
        assert isinstance(info.value, ValueError)
        # Nine dimensions exceed CUDNN_DIM_MAX (8): a not-supported status.
        dims9 = (ctypes.c_int * 9)(*[2] * 9)
        strides9 = (ctypes.c_int * 9)(*[2**i for i in range(8, -1, -1)])
        with pytest.raises(pycudnn.CudnnNotSupportedError):
            raw.cudnnSetTensorNdDescriptor(desc, raw.CUDNN_DATA_FLOAT, 9, dims9, strides9)
        assert raw.CUDNN_DIM_MAX == 8
    finally:
        raw.cudnnDestroyTensorDescriptor(desc)


def test_last_error_text_is_per_thread() -> None:
    # A failure on another thread must not leak its explanation into this thread's exception.
    from pycudnn._lib import last_error_string

    seen_there: list[str] = []

    def fail_elsewhere() -> None:
        d = ctypes.c_void_p()
        raw.cudnnCreateTensorDescriptor(ctypes.byref(d))
        lib = pycudnn._lib.LIB.function("cudnnSetTensorNdDescriptor")  # unchecked: leave text set
        status = lib(d, 0, 1, (ctypes.c_int * 1)(4), (ctypes.c_int * 1)(1))
        seen_there.append(f"{status} {last_error_string()}")
        raw.cudnnDestroyTensorDescriptor(d)

    last_error_string()  # start from a clean slate on this thread
    t = threading.Thread(target=fail_elsewhere)
    t.start()
    t.join()
    # The other thread did fail with an explanation (else this test would prove nothing) ...
    assert seen_there and seen_there[0].startswith("2000 ") and "nbDims" in seen_there[0]
    # ... and none of it is visible here.
    assert last_error_string() == ""


def test_wrong_argument_types_name_the_parameter() -> None:
    with pytest.raises(TypeError, match=r"cudnnSetTensorNdDescriptor: argument 3 \(nbDims\)"):
        raw.cudnnSetTensorNdDescriptor(None, raw.CUDNN_DATA_FLOAT, "four", None, None)


def test_closed_object_never_reaches_c() -> None:
    destroyed: list[int] = []
    obj = CResource(0x1234, destroyed.append)
    obj.close()
    assert destroyed == [0x1234]
    with pytest.raises(pycudnn.ClosedError, match="closed"):
        raw.cudnnDestroyTensorDescriptor(obj)
    assert isinstance(pycudnn.ClosedError("x"), ValueError)


def test_null_where_cudnn_writes_or_reads_without_checking_is_refused() -> None:
    """cudnnSetLRNDescriptor checks its numbers and then writes through the descriptor, and
    cudnnInitTransformDest reads its source descriptor: NULL there segfaulted with valid values
    elsewhere (cuDNN 9.28). The raw layer refuses it; run in a child, so that a regression fails
    this test instead of ending the run."""
    proc = run_python(
        """
        import ctypes
        from pycudnn import raw
        for call in (
            lambda: raw.cudnnSetLRNDescriptor(None, 3, 1.0, 0.75, 1.0),
            lambda: raw.cudnnInitTransformDest(None, None, None, ctypes.byref(ctypes.c_size_t())),
        ):
            try:
                call()
            except ValueError as exc:
                print(exc)
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    refusals = [line.split(" (the library", 1)[0] for line in proc.stdout.splitlines()]
    assert refusals == [
        "cudnnSetLRNDescriptor: argument 1 (normDesc) must not be NULL",
        "cudnnInitTransformDest: argument 2 (srcDesc) must not be NULL",
    ]


def test_an_object_refused_for_what_it_depends_on_never_reaches_c() -> None:
    """An open object whose ``_as_parameter_`` refuses (a cuTENSORMp handle whose communicator
    was closed) gives the ClosedError it raised, naming the parameter, not ctypes' TypeError."""

    class Dependent(CResource):
        _kind = "dependent object"

        @property
        def _as_parameter_(self) -> ctypes.c_void_p:
            raise pycudnn.ClosedError("what this object depends on is closed")

    obj = Dependent(0x1234, None)
    with pytest.raises(
        pycudnn.ClosedError,
        match=r"cudnnDestroyTensorDescriptor: tensorDesc: what this object depends on is closed",
    ):
        raw.cudnnDestroyTensorDescriptor(obj)


def test_constants_and_enums_are_exposed() -> None:
    assert raw.CUDNN_STATUS_BAD_PARAM == raw.cudnnStatus_t.BAD_PARAM == 2000
    assert raw.CUDNN_BACKEND_TENSOR_DESCRIPTOR == 17
    assert "cudnnBackendExecute" in dir(raw)
    with pytest.raises(AttributeError):
        raw.cudnnNoSuchFunction  # noqa: B018


def test_backend_tensor_finalize(libcuda: None) -> None:
    desc = ctypes.c_void_p()
    raw.cudnnBackendCreateDescriptor(raw.CUDNN_BACKEND_TENSOR_DESCRIPTOR, ctypes.byref(desc))
    try:

        def set_i64(attr: int, *values: int) -> None:
            arr = (ctypes.c_int64 * len(values))(*values)
            raw.cudnnBackendSetAttribute(desc, attr, raw.CUDNN_TYPE_INT64, len(values), arr)

        set_i64(raw.CUDNN_ATTR_TENSOR_DIMENSIONS, 8, 64, 32, 32)
        set_i64(raw.CUDNN_ATTR_TENSOR_STRIDES, 65536, 1, 2048, 64)
        set_i64(raw.CUDNN_ATTR_TENSOR_UNIQUE_ID, 7)
        set_i64(raw.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16)
        dt = ctypes.c_int(raw.CUDNN_DATA_FLOAT)
        raw.cudnnBackendSetAttribute(
            desc, raw.CUDNN_ATTR_TENSOR_DATA_TYPE, raw.CUDNN_TYPE_DATA_TYPE, 1, ctypes.byref(dt)
        )
        raw.cudnnBackendFinalize(desc)
        count = ctypes.c_int64()
        out = (ctypes.c_int64 * 8)()
        raw.cudnnBackendGetAttribute(
            desc,
            raw.CUDNN_ATTR_TENSOR_DIMENSIONS,
            raw.CUDNN_TYPE_INT64,
            8,
            ctypes.byref(count),
            out,
        )
        assert list(out[: count.value]) == [8, 64, 32, 32]
        # Setting after finalize is refused by cuDNN.
        with pytest.raises(pycudnn.CudnnBadParamError):
            set_i64(raw.CUDNN_ATTR_TENSOR_UNIQUE_ID, 8)
    finally:
        raw.cudnnBackendDestroyDescriptor(desc)


def test_backend_wrong_attribute_type_is_reported(libcuda: None) -> None:
    desc = ctypes.c_void_p()
    raw.cudnnBackendCreateDescriptor(raw.CUDNN_BACKEND_TENSOR_DESCRIPTOR, ctypes.byref(desc))
    try:
        arr = (ctypes.c_int32 * 4)(1, 2, 3, 4)
        with pytest.raises(pycudnn.CudnnBadParamError) as info:
            raw.cudnnBackendSetAttribute(
                desc, raw.CUDNN_ATTR_TENSOR_DIMENSIONS, raw.CUDNN_TYPE_INT32, 4, arr
            )
        assert info.value.status == 2010  # CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE
    finally:
        raw.cudnnBackendDestroyDescriptor(desc)


# The filter descriptor is deprecated in cuDNN 9: the raw layer says so, which is not under test.
@pytest.mark.filterwarnings("ignore:cudnn.*FilterDescriptor is deprecated:DeprecationWarning")
def test_null_for_an_out_parameter_is_refused_before_c() -> None:
    # cudnnGetFilterSizeInBytes writes through `size` without checking it: NULL there crashed the
    # process. The header documents no NULL for it, so the raw layer refuses it.
    assert "size" in raw.cudnnGetFilterSizeInBytes.__doc__
    from pycudnn import _bindings

    assert _bindings.FUNCTIONS["cudnnGetFilterSizeInBytes"].nonnull == ("size",)
    desc = ctypes.c_void_p()
    raw.cudnnCreateFilterDescriptor(ctypes.byref(desc))
    try:
        for null in (None, 0, ctypes.POINTER(ctypes.c_size_t)()):
            with pytest.raises(ValueError, match=r"argument 2 \(size\) must not be NULL"):
                raw.cudnnGetFilterSizeInBytes(desc, null)
    finally:
        raw.cudnnDestroyFilterDescriptor(desc)


def test_null_stays_allowed_where_the_header_allows_it() -> None:
    from pycudnn import _bindings

    # "Runtime tag (unused, may be NULL)" in cudnn_graph.h; cudnnSetCallback(0, NULL, NULL)
    # unregisters the callback.
    assert "tag" not in _bindings.FUNCTIONS["cudnnQueryRuntimeError"].nonnull
    assert _bindings.FUNCTIONS["cudnnSetCallback"].nonnull == ()
    raw.cudnnSetCallback(0, None, None)


def test_no_cudnn_function_crashes_when_every_argument_is_null() -> None:
    # Each function with NULL for every parameter: cuDNN must answer with a status (or the raw
    # layer refuse first). Run in a child process, so that a crash fails this test instead of
    # killing the test run; cudnnCreate is left out (it needs a device and is tested above).
    code = textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("ignore")
        from pycudnn import _bindings, raw
        for name, spec in sorted(_bindings.FUNCTIONS.items()):
            if name == "cudnnCreate":
                continue
            print(name, flush=True)
            try:
                getattr(raw, name)(*[None] * len(spec.argtypes))
            except Exception:
                pass
        print("DONE")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    last = proc.stdout.strip().splitlines()[-1:] or ["<nothing>"]
    assert proc.returncode == 0 and last == ["DONE"], f"crashed in {last[0]} ({proc.returncode})"


def test_a_null_handle_is_refused_before_cudnn() -> None:
    # cudnnGetConvolutionForwardAlgorithm_v7 dereferences its handle without a check (SIGSEGV
    # with cuDNN 9.28): no cuDNN function takes a NULL handle, so the raw layer refuses it.
    done = run_python(
        """
        import ctypes
        from pycudnn import raw
        perf = (raw.cudnnConvolutionFwdAlgoPerf_t * 1)()
        returned = ctypes.c_int()
        try:
            raw.cudnnGetConvolutionForwardAlgorithm_v7(
                None, None, None, None, None, 1, ctypes.byref(returned), perf
            )
        except ValueError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "argument 1 (handle) must not be NULL" in done.stdout
    from pycudnn import _bindings

    with_handle = [f for f, s in _bindings.FUNCTIONS.items() if "handle" in s.argnames[:1]]
    assert with_handle and all("handle" in _bindings.FUNCTIONS[f].nonnull for f in with_handle)


@pytest.mark.parametrize("wrap", [np.int64, ctypes.c_int64], ids=["numpy", "c_int64"])
def test_backend_attribute_counts_in_every_integer_form_are_checked(wrap: type) -> None:
    # ctypes passes a NumPy or ctypes integer on as the int64 count; the element-count check
    # skipped them, so cuDNN read past a 1-element array (with logging on it formatted 10**8
    # elements from there and the process died with SIGSEGV).
    desc = ctypes.c_void_p()
    raw.cudnnBackendCreateDescriptor(raw.CUDNN_BACKEND_TENSOR_DESCRIPTOR, ctypes.byref(desc))
    try:
        one = (ctypes.c_int64 * 1)(4)
        name, kind = raw.CUDNN_ATTR_TENSOR_STRIDES, raw.CUDNN_TYPE_INT64
        with pytest.raises(ValueError, match=r"elementCount = 5 but arrayOfElements holds 1"):
            raw.cudnnBackendSetAttribute(desc, name, kind, wrap(5), one)
        with pytest.raises(ValueError, match=r"arrayOfElements is NULL but elementCount is 5"):
            raw.cudnnBackendSetAttribute(desc, name, wrap(kind), wrap(5), None)
        with pytest.raises(ValueError, match=r"elementCount must be >= 0, got -1"):
            raw.cudnnBackendSetAttribute(desc, wrap(name), kind, wrap(-1), one)
        count = ctypes.c_int64()
        with pytest.raises(ValueError, match=r"requestedElementCount = 5 but arrayOfElements"):
            raw.cudnnBackendGetAttribute(desc, name, wrap(kind), wrap(5), ctypes.byref(count), one)
    finally:
        raw.cudnnBackendDestroyDescriptor(desc)
