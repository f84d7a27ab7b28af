"""``pycutensor.einsum``: NumPy's einsum on the GPU, computed by cuTENSOR.

NumPy's semantics: the string and the sublist forms, implicit and explicit outputs, ``...``
broadcasting, traces and diagonals (a label repeated in one operand), NumPy's dtype promotion,
``optimize=`` and ``out=``. The first call for a problem plans it; the plan is cached, so a
repeated call only executes.

Without a GPU it parses the expressions and shows the contraction path einsum takes, then says
what needs a GPU and exits 3. With a GPU it runs them on ``pycutensor.DeviceArray`` operands
and compares each with ``numpy.einsum`` (exit status 1 on a mismatch). With CuPy or PyTorch
arrays the calls are the same and the result is a CuPy array or a torch tensor.

    python examples/einsum.py
"""

from __future__ import annotations

import sys

import numpy as np

import pycutensor

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


# Parsing needs no GPU: NumPy's rules and messages, the output shape, what is summed.
for subscripts, shapes in [
    ("mhkn,ukvh->munv", [(96, 64, 64, 96), (96, 64, 96, 64)]),  # the user guide's contraction
    ("bii->b", [(8, 5, 5)]),  # a batch of traces
    ("ii->i", [(5, 5)]),  # a diagonal: a strided view, no copy
    ("...ij,...jk", [(4, 1, 2, 3), (7, 3, 5)]),  # broadcast batch dims
]:
    spec = pycutensor.parse_einsum(subscripts, *shapes)
    print(f"{spec.explicit:24} -> {spec.output_shape}, summed {spec.contracted}, {spec.kind}")
# Three operands or more are contracted pairwise along numpy.einsum_path's greedy path.
shapes = [(2, 300), (300, 400), (400, 3)]
path = np.einsum_path("ij,jk,kl->il", *(np.empty(s) for s in shapes), optimize="greedy")[0]
print(f"ij,jk,kl->il for {shapes}: pairwise order {path[1:]}")

reason = gpu_missing()
if reason:
    print(f"needs a GPU to run the einsums and check them against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

rng = np.random.default_rng(0)
a, b = rng.standard_normal((16, 8, 8, 16)), rng.standard_normal((12, 8, 10, 8))
x, y = rng.standard_normal((8, 5, 5)), rng.standard_normal((5,)).astype(np.float32)
a_gpu, b_gpu = pycutensor.DeviceArray.from_numpy(a), pycutensor.DeviceArray.from_numpy(b)
x_gpu, y_gpu = pycutensor.DeviceArray.from_numpy(x), pycutensor.DeviceArray.from_numpy(y)

c = pycutensor.einsum("mhkn,ukvh->munv", a_gpu, b_gpu)  # the user guide's 4-mode contraction
traces = pycutensor.einsum("bii->b", x_gpu)  # a trace: a strided view, then a reduction
mixed = pycutensor.einsum("bij,j->bi", x_gpu, y_gpu)  # float64 with float32 gives float64
sub = pycutensor.einsum(x_gpu, [0, 1, 2], y_gpu, [2], [0, 1])  # NumPy's sublist form
out = pycutensor.DeviceArray.zeros((8,), np.float64)
pycutensor.einsum("bii->b", x_gpu, out=out, alpha=2.0, beta=1.0)  # out = 2 * trace + out

failed = False
for name, got, want in [
    ("contraction", c, np.einsum("mhkn,ukvh->munv", a, b)),
    ("traces", traces, np.einsum("bii->b", x)),
    ("promotion", mixed, np.einsum("bij,j->bi", x, y)),
    ("sublist form", sub, np.einsum(x, [0, 1, 2], y, [2], [0, 1])),
    ("out, alpha, beta", out, 2.0 * np.einsum("bii->b", x)),
]:
    host = got.to_numpy()
    err = float(np.max(np.abs(host - want)))
    tol = 1e-10 * max(1.0, float(np.max(np.abs(want))))
    print(f"{name:17} {host.dtype} {host.shape}: max |error| {err:.3g} (tolerance {tol:.3g})")
    failed = failed or host.dtype != want.dtype or not err <= tol
if failed:
    print("MISMATCH against NumPy")
    sys.exit(1)
print("matches NumPy")
