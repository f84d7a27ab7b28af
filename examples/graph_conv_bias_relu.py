"""A fused convolution + bias + ReLU, built with cuDNN's graph API and checked against NumPy.

Without a GPU it builds the graph, plans it ahead of time for an H100 from the committed device
properties (cuDNN needs the NVIDIA driver library libcuda.so.1 for that, not a GPU), prints the
plan, says what needs a GPU and exits 3. With a GPU it plans for that GPU, runs the plan on
``pycudnn.DeviceArray`` operands and compares with NumPy (exit status 1 on a mismatch).

    python examples/graph_conv_bias_relu.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import pycudnn

H100 = Path(__file__).resolve().parent.parent / "tests/data/deviceprops/h100-sxm-80gb.json"


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


def conv2d(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """NumPy's cross-correlation, NCHW x KCRS -> NKHW, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwrs,kcrs->nkhw", windows, w.astype(np.float64))


g = pycudnn.Graph("conv_bias_relu")
x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
y = g.relu(g.add(g.conv_fprop(x, w, padding=1), b))  # intermediates become virtual
print(g.describe())

why_not = pycudnn.DeviceProperties.why_no_plans()  # no libcuda.so.1, or too old a cuDNN
if why_not:
    print(f"deviceless planning skipped: {why_not}")
else:
    h100 = pycudnn.DeviceProperties.load(H100)
    print(g.heuristics("a", device_properties=h100).describe())
    aot = g.build(device_properties=h100, cache=False)
    print(aot.describe())  # engine, knobs, notes, workspace, and any rewrite cuDNN was shown
    print(aot.report.describe())  # heuristics tried, configs filtered out and why, cuDNN's log
    print(f"plan for {h100.device_name} without a GPU: engine {aot.engine_id}, "
          f"knobs {aot.knobs}, workspace {aot.workspace_size} bytes")  # fmt: skip

reason = gpu_missing()
if reason:
    print(f"needs a GPU to run the plan and check it against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

rng = np.random.default_rng(0)
xh = rng.standard_normal(x.dims).astype(np.float16)
wh = (0.2 * rng.standard_normal(w.dims)).astype(np.float16)
bh = rng.standard_normal(b.dims).astype(np.float16)
# DeviceArray.empty(..., fmt="NHWC") lays the logical NCHW dims out as NHWC in memory. The same
# with CuPy: cupy.asarray(xh.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2); with PyTorch:
# torch.from_numpy(xh).cuda().contiguous(memory_format=torch.channels_last). Any of them can be
# passed to plan.execute.
x_gpu = pycudnn.DeviceArray.empty(x.dims, np.float16, fmt="NHWC")
w_gpu = pycudnn.DeviceArray.empty(w.dims, np.float16, fmt="NHWC")
b_gpu = pycudnn.DeviceArray.empty(b.dims, np.float16, fmt="NHWC")
y_gpu = pycudnn.DeviceArray.empty(y.dims, np.float16, fmt="NHWC")
for dev, host in ((x_gpu, xh), (w_gpu, wh), (b_gpu, bh)):
    dev.copy_from_numpy(host)

plan = g.build()  # or g.autotune(...) to time every candidate on the GPU
plan.execute({x: x_gpu, w: w_gpu, b: b_gpu, y: y_gpu})  # repeated calls: one cudnnBackendExecute

want = np.maximum(conv2d(xh, wh, 1) + bh.astype(np.float64), 0)
err = float(np.max(np.abs(y_gpu.to_numpy().astype(np.float64) - want)))
tol = 2e-2 * max(1.0, float(np.max(np.abs(want))))
print(f"conv + bias + ReLU on the GPU: max |error| {err:.3g} against NumPy (tolerance {tol:.3g})")
if not err <= tol:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("matches NumPy")
