#!/usr/bin/env python3
"""The Python side of the execute paths, measured without a GPU. EXCLUDES THE C CALL.

    python scripts/bench_host_cpu.py [--out DIR] [--calls N] [--batches B]

What a developer without a GPU can see: whether a change made the per-call Python work of
``Plan.execute`` / ``Plan.execute_raw`` and of a cached ``pycutensor.einsum`` faster or slower. The
arrays are ``pycudnn.DeviceArray`` objects around made-up, 256-byte aligned device addresses: they go
through the view and variant-pack code without any memory being touched. The cuDNN plan is built for
the committed H100 device properties (deviceless planning, needs ``libcuda.so.1``), and its
``cudnnBackendExecute`` call is replaced by a Python no-op, the handle by a stand-in on device 0
(``cudnnCreate`` needs a GPU). So every figure here EXCLUDES the C call (and, for einsum, the handle
lookup, the output allocation and the cuTENSOR calls): compare them with each other and across
commits, never with the GPU figures of ``bench_cudnn.py`` / ``bench_cutensor.py``.

Measured per call (median and minimum of ``--batches`` batches of ``--calls`` calls; on a shared
machine the minimum is the steadier figure):

* ``plan.execute (dict of 3 DeviceArrays)``: the public path, cached variant pack (and again
  with a ``workspace=`` array given);
* ``plan.execute, new array objects at the same addresses``: what a pooled allocator does;
* ``plan.execute_raw``: pointers in unique-id order;
* ``array_view(DeviceArray)`` and ``as_array_view(DeviceArray)``: one operand, the fast and the
  general path;
* ``einsum front (3 views + cache key)``: what a cached ``einsum`` does in Python before its
  handle lookup and C calls.

Writes ``DIR/bench_host_cpu.json`` with the machine, Python, NumPy, cuDNN and cuda.core versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout

import numpy as np  # noqa: E402 - after the checkout is on the path

LABEL = "CPU only: excludes the C call (made-up device pointers, no GPU)"


def _per_call_us(call: Callable[[], Any], calls: int, batches: int) -> dict[str, float]:
    for _ in range(calls):
        call()
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        per_call.append((time.perf_counter() - t0) / calls * 1e6)
    return {
        "median_us": statistics.median(per_call),
        "min_us": min(per_call),
        "max_us": max(per_call),
    }


def _fake_handle() -> Any:
    """A stand-in for this thread's cuDNN handle on device 0: the C call is a no-op here."""
    from _nvbind.resource import CResource
    from pycudnn.handle import Handle

    h = Handle.__new__(Handle)
    # never reaches C (plan._exec is replaced), and nothing destroys it
    CResource.__init__(h, 0x1000, None, owned=False)
    h.device_id = 0
    h._device = None
    h._stream_obj = None
    h._stream_ptr = 0
    h._several_devices = False  # one GPU: the execute path asks the driver nothing
    return h


def _fake_array(ptr: int, shape: tuple[int, ...], dtype: Any, strides: Any = None) -> Any:
    from _nvbind.device_array import DeviceArray
    from _nvbind.strides import c_strides

    st = c_strides(shape) if strides is None else tuple(strides)
    return DeviceArray.__new__(DeviceArray)._init(None, ptr, tuple(shape), st, np.dtype(dtype), 0)


def bench_cudnn(calls: int, batches: int) -> dict[str, Any]:
    import pycudnn
    from _nvbind.arrays import as_array_view
    from pycudnn.deviceprops import DeviceProperties

    props_file = ROOT / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"
    props = DeviceProperties.from_json(json.loads(props_file.read_text()))
    g = pycudnn.Graph("bench_conv")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1, name="conv")
    plan = g.build(device_properties=props, cache=False)
    plan._exec = lambda handle, plan_ptr, vpack: 0  # EXCLUDES THE C CALL
    plan._handles[__import__("threading").get_ident()] = _fake_handle()
    base = 0x7F00_0000_0000
    xd = _fake_array(base, tuple(x.dims), np.float16, x.strides)
    wd = _fake_array(base + 0x10_0000, tuple(w.dims), np.float16, w.strides)
    yd = _fake_array(base + 0x20_0000, tuple(y.dims), np.float16, y.strides)
    ws = _fake_array(base + 0x30_0000, (max(plan.workspace_size, 1),), np.uint8)
    arrays = {x: xd, w: wd, y: yd}
    out: dict[str, Any] = {}
    out["plan.execute (dict of 3 DeviceArrays)"] = _per_call_us(
        lambda: plan.execute(arrays), calls, batches
    )
    out["plan.execute (dict of 3 DeviceArrays), workspace= given"] = _per_call_us(
        lambda: plan.execute(arrays, workspace=ws), calls, batches
    )

    def fresh() -> None:
        # a pooled allocator hands out the same addresses in new array objects
        new = {
            x: _fake_array(xd.ptr, xd.shape, xd.dtype, xd.strides),
            w: _fake_array(wd.ptr, wd.shape, wd.dtype, wd.strides),
            y: _fake_array(yd.ptr, yd.shape, yd.dtype, yd.strides),
        }
        plan.execute(new, workspace=ws)

    out["plan.execute, new array objects at the same addresses (incl. creating them)"] = (
        _per_call_us(fresh, calls, batches)
    )
    out["creating 3 DeviceArray objects (subtract from the line above)"] = _per_call_us(
        lambda: [_fake_array(a.ptr, a.shape, a.dtype, a.strides) for a in (xd, wd, yd)],
        calls,
        batches,
    )
    pointers = [xd.ptr, wd.ptr, yd.ptr]
    order = {u: p for u, p in zip((x.uid, w.uid, y.uid), pointers, strict=True)}
    raw = [order[u] for u in plan.uids]
    h = plan._handles[__import__("threading").get_ident()]
    out["plan.execute_raw"] = _per_call_us(
        lambda: plan.execute_raw(raw, ws.ptr, handle=h), calls, batches
    )
    try:
        from _nvbind.arrays import array_view

        out["array_view(DeviceArray), one operand"] = _per_call_us(
            lambda: array_view(xd, "x", 0), calls, batches
        )
    except ImportError:
        out["array_view(DeviceArray), one operand"] = {"absent": "no array_view in this version"}
    out["as_array_view(DeviceArray), one operand"] = _per_call_us(
        lambda: as_array_view(xd, name="x", stream_ptr=0), calls, batches
    )
    out["variant packs built"] = plan.variant_pack_builds
    plan.close()
    return out


def bench_einsum_front(calls: int, batches: int) -> dict[str, Any]:
    from pycutensor import _einsum

    front = getattr(_einsum, "_inspect", None)
    if front is None:
        return {"absent": "no _einsum._inspect in this version"}
    base = 0x7F10_0000_0000
    a = _fake_array(base, (64, 64), np.float32)
    b = _fake_array(base + 0x10_0000, (64, 64), np.float32)
    c = _fake_array(base + 0x20_0000, (64, 64), np.float32)
    return {
        "einsum front ij,jk->ik (3 views + cache key), out given": _per_call_us(
            lambda: front("ij,jk->ik", (a, b), c, 0, None, 0.0, "greedy", None), calls, batches
        )
    }


def machine() -> dict[str, Any]:
    import cuda.core

    import pycudnn

    info: dict[str, Any] = {
        "label": LABEL,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "cuda_core": cuda.core.__version__,
        "cudnn": pycudnn.version(),
    }
    try:
        import subprocess

        info["commit"] = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="bench-results/host-cpu", help="output directory")
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed batch")
    parser.add_argument("--batches", type=int, default=30, help="timed batches")
    args = parser.parse_args(argv)
    if args.calls < 1 or args.batches < 1:
        print("bench_host_cpu: --calls and --batches must be positive", file=sys.stderr)
        return 2
    results = {
        **bench_cudnn(args.calls, args.batches),
        **bench_einsum_front(args.calls, args.batches),
    }
    report = {"benchmark": "host Python time per call, " + LABEL, **machine(), "results": results}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_host_cpu.json").write_text(json.dumps(report, indent=2) + "\n")
    print(LABEL)
    for name, r in results.items():
        shown = (
            f"median {r['median_us']:7.3f} us, min {r['min_us']:7.3f} us"
            if isinstance(r, dict) and "median_us" in r
            else r
        )
        print(f"  {name:78s} {shown}")
    print(f"written to {out / 'bench_host_cpu.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
