"""Checks run by ``python -m pycudnn smoke``: real cuDNN work, or a plain account of what could not run.

Each check returns a summary (and data for ``--json``) or raises ``SkipCheck`` with the reason.
Feature modules contribute their own checks through ``smoke_checks()`` functions, listed in
:func:`checks`.
"""

from __future__ import annotations

import ctypes
from typing import Any

from _nvbind.cuda import driver_status
from _nvbind.libinfo import library_check
from _nvbind.report import devices_report
from _nvbind.smoke import Check, CheckList, SkipCheck

from . import _info
from .handle import Handle
from .ops import smoke_checks as ops_checks
from .plan import smoke_checks as graph_checks

__all__ = ["checks"]

# This module's checks, in the order they run (each added where it is defined).
_CHECKS = CheckList()


@_CHECKS.add("library")
def _library() -> dict[str, Any]:

    return library_check("pycudnn", "cudnn", built=f", newest SM {_info.max_device_version()}")


@_CHECKS.add("driver")
def _driver() -> dict[str, Any]:
    st = driver_status()
    if not st.library_found:
        raise SkipCheck(st.reason)
    records = devices_report(st)["devices"]
    devices = ", ".join(
        f"{d['ordinal']}: {d['name']} ({d['sm']}, {d['total_memory'] / 2**30:.0f} GiB)"
        for d in records
    )
    return {
        "summary": f"driver CUDA {st.driver_version_text}; "
        + (devices if st.usable else f"no CUDA device ({st.reason})"),
        "driver_version": st.driver_version,
        "devices": records,
    }


@_CHECKS.add("legacy tensor descriptor")
def _legacy_descriptor() -> str:
    from . import raw

    desc = ctypes.c_void_p()
    raw.cudnnCreateTensorDescriptor(ctypes.byref(desc))
    try:
        dims = (ctypes.c_int * 4)(2, 3, 8, 8)
        raw.cudnnSetTensorNdDescriptorEx(desc, raw.CUDNN_TENSOR_NHWC, raw.CUDNN_DATA_FLOAT, 4, dims)
        size = ctypes.c_size_t()
        raw.cudnnGetTensorSizeInBytes(desc, ctypes.byref(size))
        n, dt = ctypes.c_int(), ctypes.c_int()
        got_dims, got_strides = (ctypes.c_int * 4)(), (ctypes.c_int * 4)()
        raw.cudnnGetTensorNdDescriptor(
            desc, 4, ctypes.byref(dt), ctypes.byref(n), got_dims, got_strides
        )
    finally:
        raw.cudnnDestroyTensorDescriptor(desc)
    expected = [192, 1, 24, 3]  # NHWC strides of a [2,3,8,8] tensor, in NCHW order
    if list(got_strides) != expected or size.value != 2 * 3 * 8 * 8 * 4:
        raise AssertionError(f"unexpected strides {list(got_strides)} / size {size.value}")
    return (
        f"legacy NHWC tensor descriptor [2,3,8,8]: strides {list(got_strides)}, {size.value} bytes"
    )


@_CHECKS.add("backend tensor descriptor")
def _backend_tensor() -> str:
    from . import raw

    st = driver_status()
    if not st.library_found:
        raise SkipCheck("cuDNN's backend needs libcuda.so.1 (Debian: libcuda1), not installed")
    desc = ctypes.c_void_p()
    raw.cudnnBackendCreateDescriptor(raw.CUDNN_BACKEND_TENSOR_DESCRIPTOR, ctypes.byref(desc))
    try:
        i64 = raw.CUDNN_TYPE_INT64

        def set_i64(attr: int, *values: int) -> None:
            arr = (ctypes.c_int64 * len(values))(*values)
            raw.cudnnBackendSetAttribute(desc, attr, i64, len(values), arr)

        set_i64(raw.CUDNN_ATTR_TENSOR_DIMENSIONS, 1, 32, 16, 16)
        set_i64(raw.CUDNN_ATTR_TENSOR_STRIDES, 8192, 1, 512, 32)
        set_i64(raw.CUDNN_ATTR_TENSOR_UNIQUE_ID, 1)
        set_i64(raw.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16)
        dtype = ctypes.c_int(raw.CUDNN_DATA_HALF)
        raw.cudnnBackendSetAttribute(
            desc, raw.CUDNN_ATTR_TENSOR_DATA_TYPE, raw.CUDNN_TYPE_DATA_TYPE, 1, ctypes.byref(dtype)
        )
        raw.cudnnBackendFinalize(desc)
    finally:
        raw.cudnnBackendDestroyDescriptor(desc)
    return "backend TENSOR descriptor (fp16 NHWC 1x32x16x16) finalized"


@_CHECKS.add("handle")
def _handle() -> str:
    ok, reason = driver_status().usable, driver_status().reason
    if not ok:
        raise SkipCheck(f"cudnnCreate needs a GPU: {reason}", needs_gpu=True)

    with Handle() as handle:
        return f"cudnnCreate on device {handle.device_id}"


def checks() -> list[tuple[str, Check]]:
    """The smoke checks in the order they run: this module's, then the feature modules'."""
    return [*_CHECKS.items(), *ops_checks(), *graph_checks()]
