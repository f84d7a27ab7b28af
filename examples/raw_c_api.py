"""cuDNN's C API from Python: every function under its C name, with C's arguments.

Each call checks the status and raises ``pycudnn.CudnnError`` with cuDNN's own message;
arguments that would crash C (a NULL where the header forbids it, a closed object) are refused
before the call. Here: a handle, two tensor descriptors for one NCHW tensor stored as NCHW and
as NHWC, and ``cudnnTransformTensor`` between them, all by hand as in C.

Without a GPU it reads the version and builds and reads back the descriptors, then says what
needs a GPU and exits 3. With a GPU it creates a cuDNN handle, converts NCHW to NHWC on the device
and compares with NumPy's transpose (exit status 1 on a mismatch).

    python examples/raw_c_api.py
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

import pycudnn
from pycudnn import layout, raw

# The exit status when the check against NumPy could not run here (no GPU): not 0, which says
# the results were checked (the README's exit-code table).
NOT_CHECKED = 3


def gpu_missing() -> str | None:
    """None when a CUDA GPU is usable here, else the driver's reason."""
    try:
        from cuda.core import Device

        Device(0).set_current()
    except Exception as e:  # no driver library, no device, ...
        return str(e) or type(e).__name__
    return None


print(pycudnn.version(), pycudnn.library_path())

# The C API, as in C (status checked, cuDNN's message attached to the exception):
desc = ctypes.c_void_p()
raw.cudnnCreateTensorDescriptor(ctypes.byref(desc))
raw.cudnnSetTensorNdDescriptorEx(
    desc, raw.CUDNN_TENSOR_NHWC, raw.CUDNN_DATA_FLOAT, 4, (ctypes.c_int * 4)(2, 3, 8, 8)
)
raw.cudnnDestroyTensorDescriptor(desc)

# Layout algebra, in logical dims order (N, C, H, W) with the memory format as a string:
layout.packed_strides((2, 3, 8, 8), "NHWC")  # (192, 1, 24, 3)

# Two descriptors of one tensor: NCHW and NHWC memory orders, read back from cuDNN.
dims = (ctypes.c_int * 4)(2, 3, 8, 8)
nchw, nhwc = ctypes.c_void_p(), ctypes.c_void_p()
for d, fmt in ((nchw, raw.CUDNN_TENSOR_NCHW), (nhwc, raw.CUDNN_TENSOR_NHWC)):
    raw.cudnnCreateTensorDescriptor(ctypes.byref(d))
    raw.cudnnSetTensorNdDescriptorEx(d, fmt, raw.CUDNN_DATA_FLOAT, 4, dims)
try:
    for name, d in (("NCHW", nchw), ("NHWC", nhwc)):
        dtype, nb = ctypes.c_int(), ctypes.c_int()
        got_dims, got_strides = (ctypes.c_int * 4)(), (ctypes.c_int * 4)()
        raw.cudnnGetTensorNdDescriptor(d, 4, ctypes.byref(dtype), ctypes.byref(nb), got_dims,
                                       got_strides)  # fmt: skip
        print(f"{name}: dims {list(got_dims)}, strides {list(got_strides)}")

    reason = gpu_missing()
    if reason:
        print(f"needs a GPU to transform the tensor and check it against NumPy ({reason})")
        sys.exit(NOT_CHECKED)

    from cuda.core import Device

    handle = ctypes.c_void_p()
    raw.cudnnCreate(ctypes.byref(handle))
    try:
        xh = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
        x = pycudnn.DeviceArray.from_numpy(xh)
        y = pycudnn.DeviceArray.empty((2, 8, 8, 3), np.float32)  # NHWC memory, C order
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        raw.cudnnTransformTensor(handle, ctypes.byref(one), nchw, x.ptr, ctypes.byref(zero), nhwc,
                                 y.ptr)  # fmt: skip
        Device().sync()
    finally:
        raw.cudnnDestroy(handle)
    same = np.array_equal(y.to_numpy(), xh.transpose(0, 2, 3, 1))
    print(f"cudnnTransformTensor NCHW -> NHWC equals NumPy's transpose: {same}")
    if not same:
        print("MISMATCH against NumPy")
        sys.exit(1)
    print("matches NumPy")
finally:
    raw.cudnnDestroyTensorDescriptor(nchw)
    raw.cudnnDestroyTensorDescriptor(nhwc)
