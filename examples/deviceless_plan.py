"""A cuDNN execution plan built ahead of time for another GPU, from its device properties.

This is the CI use: capture a GPU once (``python -m pycudnn deviceprops --save h100.json`` on that
GPU), then on any machine with the NVIDIA driver library (libcuda.so.1) but no GPU, build and
save the plans for it. Here the target is the H100 whose properties the repository commits.

Without a GPU it plans a matmul + bias + GELU graph for the H100, prints the heuristics and the
candidates, saves the plan as JSON and loads it back, then says what needs a GPU and exits 3.
With a GPU it does the same for that GPU's own properties, loads the saved plan on the GPU, runs
it and compares with NumPy (exit status 1 on a mismatch).

    python examples/deviceless_plan.py
"""

from __future__ import annotations

import math
import sys
import tempfile
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


def matmul_bias_gelu() -> tuple[pycudnn.Graph, dict[str, object]]:
    g = pycudnn.Graph("matmul_bias_gelu")
    a = g.tensor([1, 64, 32], dtype="float16", name="a")
    b = g.tensor([1, 32, 48], dtype="float16", name="b")
    bias = g.tensor([1, 1, 48], dtype="float16", name="bias")
    y = g.gelu(g.add(g.matmul(a, b), bias), name="gelu")
    return g, {"a": a, "b": b, "bias": bias, "y": y}


why_not = pycudnn.DeviceProperties.why_no_plans()  # no libcuda.so.1, or too old a cuDNN
if why_not:
    print(f"needs a GPU to run, and cannot plan for device properties here: {why_not}")
    sys.exit(NOT_CHECKED)

scratch = tempfile.TemporaryDirectory()  # removed at exit
folder = Path(scratch.name)
g, t = matmul_bias_gelu()
target = pycudnn.DeviceProperties.load(H100)  # captured on the target GPU
print(f"target: {target.device_name}")
print(g.heuristics("a", device_properties=target).describe())
for config in g.engine_configs(device_properties=target)[:3]:
    print("  candidate:", config.describe())
plan = g.build(device_properties=target, cache=False)
plan.save(folder / "matmul_bias_gelu.plan.json")  # ship this file with the job
again = g.load_plan(folder / "matmul_bias_gelu.plan.json", device_properties=target)
print(f"plan: engine {plan.engine_id}, knobs {plan.knobs}, workspace {plan.workspace_size} bytes;"
      f" reloaded: engine {again.engine_id}")  # fmt: skip

reason = gpu_missing()
if reason:
    print(f"needs a GPU to load the plan on it, run it and check it against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

# On a GPU: plan from this GPU's properties as if ahead of time, then load the file on the GPU.
local = pycudnn.DeviceProperties.from_device(0)
g, t = matmul_bias_gelu()
g.build(device_properties=local, cache=False).save(folder / "local.plan.json")
plan = g.load_plan(folder / "local.plan.json")  # no device_properties: this GPU

rng = np.random.default_rng(0)
host = {name: rng.standard_normal(t[name].dims).astype(np.float16) for name in ("a", "b", "bias")}
arrays = {t[name]: pycudnn.DeviceArray.from_numpy(host[name]) for name in host}
y_gpu = pycudnn.DeviceArray.empty(t["y"].dims, np.float16)
plan.execute({**arrays, t["y"]: y_gpu})

z = host["a"].astype(np.float64) @ host["b"].astype(np.float64) + host["bias"].astype(np.float64)
want = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))  # GELU, the exact form
err = float(np.max(np.abs(y_gpu.to_numpy().astype(np.float64) - want)))
tol = 2e-2 * max(1.0, float(np.max(np.abs(want))))
print(f"matmul + bias + GELU from the saved plan: max |error| {err:.3g} (tolerance {tol:.3g})")
if not err <= tol:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("matches NumPy")
