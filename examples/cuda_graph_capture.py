"""A cuDNN plan and a cuTENSOR plan captured into one CUDA graph, then replayed.

Capture records the kernels a stream would run; replaying the graph launches them all with one
call, which removes the per-call host overhead of a small training or inference step. Everything
that is not a kernel launch happens before the capture: planning (cuTENSOR forbids capturing
``cutensorCreatePlan`` with JIT, and autotuning times kernels), the workspaces and the first
execute of each plan (which builds its variant pack). The captured graph keeps using the same
device pointers, so new data is copied into the same arrays before each replay.

Here ``y = relu(x @ w)`` by cuDNN, then ``z = y @ v`` by a cuTENSOR contraction, captured with
cuda.core's ``GraphBuilder``. Without a GPU it builds the cuDNN graph and plans it for an H100
from the committed device properties, checks the cuTENSOR contraction against cuTENSOR's
rules, then says what needs a GPU and exits 3. With a GPU it captures, replays twice with new
data and compares with NumPy (exit status 1 on a mismatch).

    python examples/cuda_graph_capture.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import pycudnn
import pycutensor
from pycutensor.operations import check_operation

H100 = Path(__file__).resolve().parent.parent / "tests/data/deviceprops/h100-sxm-80gb.json"
M, K, N, P = 64, 32, 48, 16


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


g = pycudnn.Graph("matmul_relu")
x = g.tensor([1, M, K], dtype="float32", name="x")
w = g.tensor([1, K, N], dtype="float32", name="w")
y = g.relu(g.matmul(x, w), name="relu")
specs = [pycutensor.TensorSpec.create(s) for s in ((N, M), (P, N), (P, M))]  # column-major
check_operation("contraction", specs, ["nm", "pn", "pm"])
print("cuTENSOR contraction z[m,p] = y[m,n] v[n,p]: valid")

why_not = pycudnn.DeviceProperties.why_no_plans()  # no libcuda.so.1, or too old a cuDNN
if why_not:
    print(f"deviceless planning skipped: {why_not}")
else:
    h100 = pycudnn.DeviceProperties.load(H100)
    aot = g.build(device_properties=h100, allow_reduced_precision=False, cache=False)
    print(f"cuDNN plan for {h100.device_name}: engine {aot.engine_id}, knobs {aot.knobs}")

reason = gpu_missing()
if reason:
    print(f"needs a GPU to capture the CUDA graph, replay it and check it against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

from cuda.core import Device  # noqa: E402 - only with a GPU

device = Device(0)
stream = device.create_stream()
x_gpu = pycudnn.DeviceArray.empty((1, M, K), np.float32, stream=stream)
w_gpu = pycudnn.DeviceArray.empty((1, K, N), np.float32, stream=stream)
y_gpu = pycudnn.DeviceArray.empty((1, M, N), np.float32, stream=stream)
v_gpu = pycutensor.DeviceArray.empty((N, P), np.float32, stream=stream)
z_gpu = pycutensor.DeviceArray.empty((M, P), np.float32, stream=stream)

# Planned and run once before the capture: plans, variant packs, workspaces.
cudnn_plan = g.build(allow_reduced_precision=False)
cudnn_ws = pycudnn.DeviceArray.empty((max(cudnn_plan.workspace_size, 1),), np.uint8, stream=stream)
handle = pycutensor.get_handle()
op = pycutensor.Contraction(
    pycutensor.TensorDescriptor.from_spec(handle, pycutensor.TensorSpec.create((N, M))), "nm",
    pycutensor.TensorDescriptor.from_spec(handle, pycutensor.TensorSpec.create((P, N))), "pn",
    pycutensor.TensorDescriptor.from_spec(handle, pycutensor.TensorSpec.create((P, M))), "pm",
)  # fmt: skip
cutensor_plan = op.plan()
cutensor_ws = pycutensor.DeviceArray.empty((max(cutensor_plan.required_workspace, 1),), np.uint8,
                                           stream=stream)  # fmt: skip


def step(on: object) -> None:
    cudnn_plan.execute({x: x_gpu, w: w_gpu, y: y_gpu}, workspace=cudnn_ws, stream=on)
    # raw pointers: y (C order M x N) is y[n, m] column-major, v (N x P) is v[p, n], z is z[p, m]
    cutensor_plan.execute(y_gpu.ptr, v_gpu.ptr, z_gpu.ptr, stream=on, workspace=cutensor_ws)


step(stream)  # the first execute of each plan, outside the capture
builder = stream.create_graph_builder().begin_building()
step(builder)
graph = builder.end_building().complete()

rng = np.random.default_rng(0)
failed = False
for replay in range(2):
    xh = rng.standard_normal((1, M, K)).astype(np.float32)
    wh = rng.standard_normal((1, K, N)).astype(np.float32)
    vh = rng.standard_normal((N, P)).astype(np.float32)
    for dev, host in ((x_gpu, xh), (w_gpu, wh), (v_gpu, vh)):
        dev.copy_from_numpy(host, stream=stream)
    graph.launch(stream)
    stream.sync()
    want = np.maximum(xh[0].astype(np.float64) @ wh[0], 0) @ vh
    err = float(np.max(np.abs(z_gpu.to_numpy(stream=stream) - want)))
    tol = 1e-4 * max(1.0, float(np.max(np.abs(want))))
    print(f"replay {replay}: max |error| {err:.3g} against NumPy (tolerance {tol:.3g})")
    failed = failed or not err <= tol
graph.close()
builder.close()
if failed:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("matches NumPy")
