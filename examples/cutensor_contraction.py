"""A cuTENSOR contraction with plan preferences and incremental autotuning.

The user guide's contraction ``C[m,u,n,v] = alpha A[m,h,k,n] B[u,k,v,h] + beta C[m,u,n,v]``:
first as one call on arrays (``pycutensor.contract``), with a ``PlanPreference`` choosing the
algorithm, then as objects (descriptors, operation, plan) autotuned over a few kernels and
executed many times with only the pointers changing.

Without a GPU it checks the contraction against cuTENSOR's documented rules (modes, extents,
the data/compute-type table) in Python, shows a request the table refuses, then says what needs
a GPU and exits 3. With a GPU it runs both ways and compares with NumPy (exit status 1 on a
mismatch).

    python examples/cutensor_contraction.py
"""

from __future__ import annotations

import sys

import numpy as np

import pycutensor
from pycutensor.operations import check_operation

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


extent = {"m": 32, "u": 24, "n": 16, "v": 12, "h": 8, "k": 10}
shape = {name: tuple(extent[c] for c in name) for name in ("mhkn", "ukvh", "munv")}

# What cuTENSOR's documentation requires, checked in Python (no GPU, no library call):
specs = [pycutensor.TensorSpec.create(shape[n], dtype=np.float32) for n in ("mhkn", "ukvh", "munv")]
labels, _, _, compute = check_operation("contraction", specs, ["mhkn", "ukvh", "munv"],
                                        compute_type="3XTF32")  # fmt: skip
a_modes, b_modes, c_modes = (",".join(m) for m in labels)  # the mode labels check_operation read
print(f"contraction C[{c_modes}] = A[{a_modes}] B[{b_modes}] of float32, compute type {compute}: "
      "allowed")  # fmt: skip
try:
    half = [pycutensor.TensorSpec.create(s.extents, dtype=np.float16) for s in specs]
    check_operation("contraction", half, ["mhkn", "ukvh", "munv"], compute_type="TF32")
except ValueError as e:
    print(f"float16 with TF32 is refused before cuTENSOR: {e}")
print(pycutensor.PlanPreference(algo="default_patient"))

reason = gpu_missing()
if reason:
    print(f"needs a GPU to run the contraction and check it against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

rng = np.random.default_rng(0)
a, b, c = (rng.uniform(-1, 1, shape[n]).astype(np.float32) for n in ("mhkn", "ukvh", "munv"))
a_gpu, b_gpu, c_gpu = (pycutensor.DeviceArray.from_numpy(x) for x in (a, b, c))

# One call on arrays: C = 1.5 A B - 0.5 C, with cuTENSOR's more patient heuristic.
pycutensor.contract(a_gpu, "mhkn", b_gpu, "ukvh", c_gpu, "munv", alpha=1.5, beta=-0.5,
                    preference=pycutensor.PlanPreference(algo="default_patient"))  # fmt: skip
want = 1.5 * np.einsum("mhkn,ukvh->munv", a.astype(np.float64), b.astype(np.float64)) - 0.5 * c
errors = {"contract()": float(np.max(np.abs(c_gpu.to_numpy() - want)))}

# Objects: build once, autotune over 4 kernels (cuTENSOR times them), execute many times.
handle = pycutensor.get_handle()
d_gpu = pycutensor.DeviceArray.zeros(shape["munv"], np.float32)
op = pycutensor.Contraction(
    pycutensor.TensorDescriptor.from_array(handle, a_gpu), "mhkn",
    pycutensor.TensorDescriptor.from_array(handle, b_gpu), "ukvh",
    pycutensor.TensorDescriptor.from_array(handle, d_gpu), "munv",
)  # fmt: skip
preference = pycutensor.PlanPreference(autotune="incremental", incremental_count=4)
plan, seconds = pycutensor.autotune(op, a_gpu, b_gpu, d_gpu, preference=preference)
print("autotuning, seconds per candidate:", ", ".join(f"{t:.2e}" for t in seconds))
for _ in range(3):
    plan.execute(a_gpu, b_gpu, d_gpu, d_gpu)  # D = A B: beta is 0 by default
want = np.einsum("mhkn,ukvh->munv", a.astype(np.float64), b.astype(np.float64))
errors["autotuned plan"] = float(np.max(np.abs(d_gpu.to_numpy() - want)))

failed = False
for name, err in errors.items():
    tol = 1e-5 * extent["h"] * extent["k"]  # float32 sums of h*k products of terms <= 1
    print(f"{name}: max |error| {err:.3g} against NumPy (tolerance {tol:.3g})")
    failed = failed or not err <= tol
if failed:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("matches NumPy")
