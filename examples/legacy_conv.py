"""cuDNN's legacy API as in C: descriptors, then cudnnConvolutionForward and
cudnnConvolutionBackwardData under their C names, with device pointers.

Code written against the C API ports line by line: ``pycudnn.raw`` has every C function with its
C arguments (status checked, cuDNN's message on the exception), and the descriptor objects pass
where C takes a descriptor (they own it and destroy it when closed).

Without a GPU it creates the descriptors and asks cuDNN for the output shape, then says what
needs a GPU and exits 3. With a GPU it runs the forward and backward-data convolutions and
compares both with NumPy (exit status 1 on a mismatch).

    python examples/legacy_conv.py
"""

from __future__ import annotations

import ctypes
import sys
import warnings

import numpy as np

import pycudnn
from pycudnn import raw

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


warnings.simplefilter("ignore", DeprecationWarning)  # cuDNN 9 deprecates the legacy API

x_desc = pycudnn.TensorDescriptor([2, 8, 12, 12], dtype="float32", fmt="NCHW")
w_desc = pycudnn.FilterDescriptor([16, 8, 3, 3], dtype="float32", fmt="NCHW")
conv = pycudnn.ConvolutionDescriptor(pads=[1, 1], strides=[1, 1], math_type="fma")  # no TF32
dims = (ctypes.c_int * 4)()
raw.cudnnGetConvolutionNdForwardOutputDim(conv, x_desc, w_desc, 4, dims)
y_desc = pycudnn.TensorDescriptor(list(dims), dtype="float32", fmt="NCHW")
print(f"x {x_desc.dims} * w {w_desc.dims} (pad 1) -> y {tuple(dims)}")

reason = gpu_missing()
if reason:
    print(f"needs a GPU to run the convolutions and check them against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

from cuda.core import Device  # noqa: E402 - only with a GPU

rng = np.random.default_rng(0)
xh = rng.standard_normal(x_desc.dims).astype(np.float32)
wh = rng.standard_normal(w_desc.dims).astype(np.float32)
dyh = rng.standard_normal(y_desc.dims).astype(np.float32)
x, w, dy = (pycudnn.DeviceArray.from_numpy(a) for a in (xh, wh, dyh))
y = pycudnn.DeviceArray.empty(y_desc.dims, np.float32)
dx = pycudnn.DeviceArray.empty(x_desc.dims, np.float32)
handle = pycudnn.get_handle()  # cudnnHandle_t for this thread and device
one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)

fwd = raw.CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
size = ctypes.c_size_t()
raw.cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc, w_desc, conv, y_desc, fwd,
                                            ctypes.byref(size))  # fmt: skip
ws = pycudnn.DeviceArray.empty(max(size.value, 1), np.uint8)
raw.cudnnConvolutionForward(handle, ctypes.byref(one), x_desc, x.ptr, w_desc, w.ptr, conv, fwd,
                            ws.ptr, size.value, ctypes.byref(zero), y_desc, y.ptr)  # fmt: skip

bwd = raw.CUDNN_CONVOLUTION_BWD_DATA_ALGO_1
raw.cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w_desc, y_desc, conv, x_desc, bwd,
                                                 ctypes.byref(size))  # fmt: skip
ws = pycudnn.DeviceArray.empty(max(size.value, 1), np.uint8)
raw.cudnnConvolutionBackwardData(handle, ctypes.byref(one), w_desc, w.ptr, y_desc, dy.ptr, conv,
                                 bwd, ws.ptr, size.value, ctypes.byref(zero), x_desc,
                                 dx.ptr)  # fmt: skip
Device().sync()

# NumPy references in float64: cross-correlation, and its adjoint with respect to x
xp = np.pad(xh.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
y_ref = np.einsum("nchwrs,kcrs->nkhw", windows, wh.astype(np.float64))
dx_pad = np.zeros(xp.shape)
for r in range(3):
    for s in range(3):
        dx_pad[:, :, r : r + 12, s : s + 12] += np.einsum("nkhw,kc->nchw", dyh, wh[:, :, r, s])
dx_ref = dx_pad[:, :, 1:-1, 1:-1]
ok = True
for name, got, want in (("forward", y, y_ref), ("backward data", dx, dx_ref)):
    err = float(np.max(np.abs(got.to_numpy() - want)))
    tol = 1e-4 * max(1.0, float(np.max(np.abs(want))))
    print(f"{name}: max |error| {err:.3g} against NumPy (tolerance {tol:.3g})")
    ok = ok and err <= tol
if not ok:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("matches NumPy")
