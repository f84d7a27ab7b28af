"""A batched matmul graph, autotuned on the GPU, with its timing table and a plan cache on disk.

Autotuning times every plan cuDNN's heuristics offer (CUDA events, median of repeats) and keeps
the fastest; ``plan.autotune_results`` is the table. A ``PlanCache`` with a directory stores each
plan as cuDNN's JSON under a key of everything that changes a plan (graph, dims, strides, dtypes,
device, cuDNN version, options), so the next process loads it instead of planning again.

Without a GPU it builds the graph, plans it for an H100 from the committed device properties into
an on-disk cache, shows that a second cache (another process, in effect) loads the plan from disk,
then says what needs a GPU and exits 3. With a GPU it autotunes, prints the table, reuses the
cached winner and compares the product with NumPy (exit status 1 on a mismatch).

    python examples/matmul_autotune.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import pycudnn

H100 = Path(__file__).resolve().parent.parent / "tests/data/deviceprops/h100-sxm-80gb.json"
B, M, K, N = 4, 128, 64, 96


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


def matmul_graph() -> tuple[pycudnn.Graph, pycudnn.graph.Tensor, pycudnn.graph.Tensor,
                            pycudnn.graph.Tensor]:  # fmt: skip
    g = pycudnn.Graph("matmul")
    a = g.tensor([B, M, K], dtype="float16", name="a")
    b = g.tensor([B, K, N], dtype="float16", name="b")
    c = g.matmul(a, b, name="mm")
    c.set_output(dtype="float32")  # accumulate and store in float32
    return g, a, b, c


scratch = tempfile.TemporaryDirectory()  # the cache directory; removed at exit
cache_dir = Path(scratch.name) / "plans"
g, a, b, c = matmul_graph()
print(g.describe())

why_not = pycudnn.DeviceProperties.why_no_plans()  # no libcuda.so.1, or too old a cuDNN
if why_not:
    print(f"deviceless planning skipped: {why_not}")
else:
    h100 = pycudnn.DeviceProperties.load(H100)
    first = pycudnn.PlanCache(cache_dir)
    plan = g.build(device_properties=h100, cache=first)
    print(f"planned for {h100.device_name}: engine {plan.engine_id}; cache {first.stats}")
    again = pycudnn.PlanCache(cache_dir)  # what a later process would open
    g2, *_ = matmul_graph()
    plan2 = g2.build(device_properties=h100, cache=again)
    print(f"a new cache on the same directory: engine {plan2.engine_id}; cache {again.stats}")

reason = gpu_missing()
if reason:
    print(f"needs a GPU to autotune, time the candidates and check against NumPy ({reason})")
    sys.exit(NOT_CHECKED)

rng = np.random.default_rng(0)
ah = rng.standard_normal((B, M, K)).astype(np.float16)
bh = rng.standard_normal((B, K, N)).astype(np.float16)
a_gpu, b_gpu = pycudnn.DeviceArray.from_numpy(ah), pycudnn.DeviceArray.from_numpy(bh)
c_gpu = pycudnn.DeviceArray.empty((B, M, N), np.float32)

cache = pycudnn.PlanCache(cache_dir)
plan = g.autotune({a: a_gpu, b: b_gpu, c: c_gpu}, cache=cache, progress=False)
print(plan.autotune_results)  # every candidate, fastest first
g2, a2, b2, c2 = matmul_graph()
reused = g2.autotune({a2: a_gpu, b2: b_gpu, c2: c_gpu}, cache=pycudnn.PlanCache(cache_dir))
print(f"the autotuned winner from disk: engine {reused.engine_id} (was {plan.engine_id})")
reused.execute({a2: a_gpu, b2: b_gpu, c2: c_gpu})

want = np.einsum("bmk,bkn->bmn", ah.astype(np.float64), bh.astype(np.float64))
err = float(np.max(np.abs(c_gpu.to_numpy() - want)))
tol = 1e-5 * K * max(1.0, float(np.max(np.abs(want))))
print(f"matmul: max |error| {err:.3g} against NumPy (tolerance {tol:.3g})")
if not err <= tol or reused.engine_id != plan.engine_id:
    print("MISMATCH against NumPy (or the cached plan is not the autotuned one)")
    sys.exit(1)
print("matches NumPy")
