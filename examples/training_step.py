"""One training step of a convolution layer with cuDNN graphs: forward, data and weight gradients.

For ``y = conv(x, w)`` and the loss ``0.5 * |y - target|^2``: a forward graph computes the loss
gradient ``dy = conv(x, w) - target`` (the convolution output stays virtual, fused with the
subtraction), a dgrad graph computes ``dx`` from ``dy`` and ``w``, and a wgrad graph computes
``dw`` from ``x`` and ``dy``; then SGD updates ``w``. Each graph is planned once; a training loop
executes the same three plans every step.

Without a GPU it builds the three graphs and plans each for an H100 from the committed device
properties (needs libcuda.so.1, not a GPU), then says what needs a GPU and exits 3. With a GPU it
runs one step and compares ``dx`` and ``dw`` with NumPy (exit status 1 on a mismatch).

    python examples/training_step.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import pycudnn

H100 = Path(__file__).resolve().parent.parent / "tests/data/deviceprops/h100-sxm-80gb.json"
N, C, K, H, W = 2, 8, 16, 12, 12  # batch, in channels, out channels, height, width


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


# fprop and the loss gradient: dy = conv(x, w) - target
fprop = pycudnn.Graph("fprop")
x = fprop.tensor([N, C, H, W], fmt="NHWC", dtype="float32", name="x")
w = fprop.tensor([K, C, 3, 3], fmt="NHWC", dtype="float32", name="w")
target = fprop.tensor([N, K, H, W], fmt="NHWC", dtype="float32", name="target")
dy = fprop.sub(fprop.conv_fprop(x, w, padding=1), target, name="loss_grad")
# dgrad: dx = conv_dgrad(dy, w)
dgrad = pycudnn.Graph("dgrad")
dy_in = dgrad.tensor([N, K, H, W], fmt="NHWC", dtype="float32", name="dy")
w_in = dgrad.tensor([K, C, 3, 3], fmt="NHWC", dtype="float32", name="w")
dx = dgrad.conv_dgrad(dy_in, w_in, padding=1, dx_dims=[N, C, H, W])
# wgrad: dw = conv_wgrad(x, dy)
wgrad = pycudnn.Graph("wgrad")
x_in = wgrad.tensor([N, C, H, W], fmt="NHWC", dtype="float32", name="x")
dy_w = wgrad.tensor([N, K, H, W], fmt="NHWC", dtype="float32", name="dy")
dw = wgrad.conv_wgrad(x_in, dy_w, padding=1, dw_dims=[K, C, 3, 3])
graphs = (fprop, dgrad, wgrad)

why_not = pycudnn.DeviceProperties.why_no_plans()  # no libcuda.so.1, or too old a cuDNN
if why_not:
    print(f"deviceless planning skipped: {why_not}")
else:
    h100 = pycudnn.DeviceProperties.load(H100)
    for g in graphs:
        # allow_reduced_precision=False: no TF32 for float32 data, so NumPy's float64 agrees
        p = g.build(device_properties=h100, allow_reduced_precision=False, cache=False)
        print(f"{g.name}: engine {p.engine_id} for {h100.device_name}, knobs {p.knobs}")

reason = gpu_missing()
if reason:
    print(f"needs a GPU to run the training step and check it against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

plans = [g.build(allow_reduced_precision=False) for g in graphs]  # once, before the loop
rng = np.random.default_rng(0)
host = {
    "x": rng.standard_normal((N, C, H, W)).astype(np.float32),
    "w": (0.2 * rng.standard_normal((K, C, 3, 3))).astype(np.float32),
    "target": rng.standard_normal((N, K, H, W)).astype(np.float32),
}
gpu = {}
for name, dims in (("x", x.dims), ("w", w.dims), ("target", target.dims), ("dy", dy.dims),
                   ("dx", dx.dims), ("dw", dw.dims)):  # fmt: skip
    gpu[name] = pycudnn.DeviceArray.empty(dims, np.float32, fmt="NHWC")
for name in ("x", "w", "target"):
    gpu[name].copy_from_numpy(host[name])

plans[0].execute({x: gpu["x"], w: gpu["w"], target: gpu["target"], dy: gpu["dy"]})
plans[1].execute({dy_in: gpu["dy"], w_in: gpu["w"], dx: gpu["dx"]})
plans[2].execute({x_in: gpu["x"], dy_w: gpu["dy"], dw: gpu["dw"]})
w_next = host["w"] - 0.01 * gpu["dw"].to_numpy()  # SGD, learning rate 0.01

# NumPy in float64: the convolution, its gradient with respect to x and to w
x64, w64 = host["x"].astype(np.float64), host["w"].astype(np.float64)
xp = np.pad(x64, ((0, 0), (0, 0), (1, 1), (1, 1)))
windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n c h w r s
dy_ref = np.einsum("nchwrs,kcrs->nkhw", windows, w64) - host["target"]
dw_ref = np.einsum("nkhw,nchwrs->kcrs", dy_ref, windows)
dx_pad = np.zeros(xp.shape)
for r in range(3):
    for s in range(3):
        dx_pad[:, :, r : r + H, s : s + W] += np.einsum("nkhw,kc->nchw", dy_ref, w64[:, :, r, s])
dx_ref = dx_pad[:, :, 1:-1, 1:-1]

failed = False
for name, got, want in (("dy", gpu["dy"], dy_ref), ("dx", gpu["dx"], dx_ref),
                        ("dw", gpu["dw"], dw_ref)):  # fmt: skip
    err = float(np.max(np.abs(got.to_numpy() - want)))
    tol = 1e-4 * max(1.0, float(np.max(np.abs(want))))
    print(f"{name}: max |error| {err:.3g} against NumPy (tolerance {tol:.3g})")
    failed = failed or not err <= tol
print(f"SGD step: |w| {np.linalg.norm(host['w']):.4f} -> {np.linalg.norm(w_next):.4f}")
if failed:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("matches NumPy")
