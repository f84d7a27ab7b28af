#!/usr/bin/env python3
"""Host overhead of executing a cached cuDNN plan, against the ctypes floor and PyTorch.

    python scripts/bench_cudnn.py [--out DIR] [--calls N] [--batches B]

The workload is a small convolution (1x32x16x16 input, 32 3x3 filters, padding 1, fp16, NHWC),
small enough that the per-call host cost is what matters. Measured, per call:

* ``plan.execute``: the public hot path (dict of arrays -> descriptions -> cached variant pack ->
  ``cudnnBackendExecute``), with ``pycudnn.DeviceArray`` operands and, when installed, with CuPy
  arrays and PyTorch tensors (each library's own type-specific read);
* ``plan.execute_raw``: pointers in unique-id order, cached variant pack;
* raw ctypes loop: ``cudnnBackendExecute(handle, plan, variant_pack)`` with everything prebuilt
  (the floor a ctypes binding can reach);
* ``torch.nn.functional.conv2d`` on channels-last fp16 tensors, when PyTorch is importable;
* NVIDIA's cudnn-frontend Python package (``nvidia-cudnn-frontend``, ``import cudnn``): the same
  convolution as a ``pygraph``, ``graph.execute({...}, workspace, handle=...)``, when importable;
* the kernel time of the convolution (CUDA events around a batch of executions).

Host time is taken around batches of ``--calls`` launches before synchronizing (the launch queue
does not fill), and the median over ``--batches`` batches is reported. Results go to
``DIR/bench_cudnn.json`` (with the GPU, driver, cuDNN, CUDA and Python versions, and the version of
every peer, or why it is absent) and, when matplotlib is installed, ``DIR/bench_cudnn.png``.
Without a GPU the script says so and exits 2. ``scripts/bench_host_cpu.py`` measures the Python
side of the same path without a GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import numpy as np


def _fail(message: str) -> int:
    print(f"bench_cudnn: {message}", file=sys.stderr)
    return 2


def _host_us_per_call(
    call: Callable[[], Any], sync: Callable[[], Any], calls: int, batches: int
) -> dict[str, float]:
    for _ in range(calls):  # warm up: variant packs, handles, caches
        call()
    sync()
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        t1 = time.perf_counter()
        sync()
        per_call.append((t1 - t0) / calls * 1e6)
    return {
        "median_us": statistics.median(per_call),
        "min_us": min(per_call),
        "max_us": max(per_call),
    }


def _bench_cupy(  # noqa: PLR0917
    results: dict[str, Any], peers: dict[str, Any], plan: Any, tensors: Any, host: Any,
    nhwc: Callable[[np.ndarray], np.ndarray], sync: Callable[[], Any], args: Any,
) -> None:  # fmt: skip
    """plan.execute on CuPy arrays (on CuPy's current stream, the null stream here)."""
    try:
        import cupy
    except Exception as exc:
        peers["cupy"] = f"absent ({type(exc).__name__}: {exc})"
        return
    peers["cupy"] = cupy.__version__
    x, w, y = tensors
    xc, wc = cupy.asarray(nhwc(host[0])), cupy.asarray(nhwc(host[1]))
    yc = cupy.empty((1, 16, 16, 32), cupy.float16).transpose(0, 3, 1, 2)
    arrays = {x: xc, w: wc, y: yc}
    results["plan.execute (CuPy arrays)"] = _host_us_per_call(
        lambda: plan.execute(arrays), sync, args.calls, args.batches
    )


def _bench_torch(  # noqa: PLR0917
    results: dict[str, Any], peers: dict[str, Any], plan: Any, tensors: Any, host: Any,
    sync: Callable[[], Any], args: Any,
) -> None:  # fmt: skip
    """plan.execute on PyTorch tensors, and torch's own conv2d on the same problem."""
    try:
        import torch
        import torch.nn.functional as F

        if not torch.cuda.is_available():
            raise RuntimeError("this PyTorch has no CUDA device")
    except Exception as exc:  # PyTorch absent or without CUDA: reported, not fatal
        peers["torch"] = f"absent ({type(exc).__name__}: {exc})"
        return
    peers["torch"] = torch.__version__
    peers["torch cudnn"] = torch.backends.cudnn.version()
    x, w, y = tensors
    xt = torch.from_numpy(host[0]).cuda().contiguous(memory_format=torch.channels_last)
    wt = torch.from_numpy(host[1]).cuda().contiguous(memory_format=torch.channels_last)
    yt = torch.empty((1, 32, 16, 16), dtype=torch.float16, device="cuda").contiguous(
        memory_format=torch.channels_last
    )
    arrays = {x: xt, w: wt, y: yt}

    def both() -> None:
        sync()
        torch.cuda.synchronize()

    results["plan.execute (PyTorch tensors)"] = _host_us_per_call(
        lambda: plan.execute(arrays), both, args.calls, args.batches
    )
    torch.backends.cudnn.benchmark = False
    results["torch conv2d"] = _host_us_per_call(
        lambda: F.conv2d(xt, wt, padding=1), both, args.calls, args.batches
    )


def _bench_frontend(results: dict[str, Any], peers: dict[str, Any], host: Any, args: Any) -> None:
    """NVIDIA's cudnn-frontend Python package (pygraph) on the same convolution, with PyTorch
    tensors (its samples' array library)."""
    try:
        import cudnn
        import torch
    except Exception as exc:
        peers["cudnn-frontend"] = f"absent ({type(exc).__name__}: {exc})"
        return
    try:
        peers["cudnn-frontend"] = getattr(cudnn, "__version__", "unknown")
        peers["cudnn-frontend backend"] = cudnn.backend_version()
        xt = torch.from_numpy(host[0]).cuda().contiguous(memory_format=torch.channels_last)
        wt = torch.from_numpy(host[1]).cuda().contiguous(memory_format=torch.channels_last)
        yt = torch.empty((1, 32, 16, 16), dtype=torch.float16, device="cuda").contiguous(
            memory_format=torch.channels_last
        )
        handle = cudnn.create_handle()
        g = cudnn.pygraph(
            io_data_type=cudnn.data_type.HALF,
            intermediate_data_type=cudnn.data_type.FLOAT,
            compute_data_type=cudnn.data_type.FLOAT,
            handle=handle,
        )
        X = g.tensor(name="X", dim=list(xt.shape), stride=list(xt.stride()),
                     data_type=cudnn.data_type.HALF)  # fmt: skip
        W = g.tensor(name="W", dim=list(wt.shape), stride=list(wt.stride()),
                     data_type=cudnn.data_type.HALF)  # fmt: skip
        Y = g.conv_fprop(image=X, weight=W, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        Y.set_output(True).set_dim(list(yt.shape)).set_stride(list(yt.stride()))
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
        pack = {X: xt, W: wt, Y: yt}
        results["cudnn-frontend pygraph execute"] = _host_us_per_call(
            lambda: g.execute(pack, ws, handle=handle), torch.cuda.synchronize, args.calls,
            args.batches,
        )  # fmt: skip
    except Exception as exc:  # an API this version lacks: reported with the reason
        results["cudnn-frontend pygraph execute"] = {"skipped": f"{type(exc).__name__}: {exc}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="bench-results/cudnn", help="output directory")
    parser.add_argument("--calls", type=int, default=200, help="launches per timed batch")
    parser.add_argument("--batches", type=int, default=50, help="timed batches")
    args = parser.parse_args(argv)
    if args.calls < 1 or args.batches < 1:
        return _fail("--calls and --batches must be positive")

    from _nvbind.cuda import driver_status

    st = driver_status()
    if not st.usable:
        return _fail(f"needs a CUDA GPU, and none is usable here: {st.reason}")
    try:
        import pycudnn
        from _nvbind.device_array import DeviceArray
        from _nvbind.memory import workspace
        from pycudnn import _info
        from pycudnn._lib import LIB

        cudnn_version = pycudnn.version()
    except ImportError as exc:  # LibraryNotFoundError is an ImportError
        return _fail(str(exc))

    import cuda.core
    from cuda.core import Device, EventOptions

    dev = Device(0)
    dev.set_current()
    stream = dev.default_stream
    handle = pycudnn.get_handle(0)

    g = pycudnn.Graph("bench_conv")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1, name="conv")
    plan = g.build(cache=False)

    rng = np.random.default_rng(0)

    def nhwc(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)

    xh = rng.standard_normal(x.dims).astype(np.float16)
    wh = (rng.standard_normal(w.dims) * 0.1).astype(np.float16)
    xd, wd = DeviceArray.from_numpy(nhwc(xh)), DeviceArray.from_numpy(nhwc(wh))
    yd = DeviceArray.empty(y.dims, np.float16, strides=y.strides)
    arrays = {x: xd, w: wd, y: yd}
    ws = workspace(plan.workspace_size, device=dev) if plan.workspace_size else 0
    plan.execute(arrays)
    stream.sync()

    results: dict[str, Any] = {}
    results["plan.execute"] = _host_us_per_call(
        lambda: plan.execute(arrays), stream.sync, args.calls, args.batches
    )
    pointers = [xd.ptr, wd.ptr, yd.ptr]
    results["plan.execute_raw"] = _host_us_per_call(
        lambda: plan.execute_raw(pointers, ws, handle=handle), stream.sync, args.calls, args.batches
    )

    # The floor: a prebuilt variant pack and one ctypes call per launch.
    vp = pycudnn.backend.BackendDescriptor("VARIANT_PACK")
    vp.set("VARIANT_PACK_UNIQUE_IDS", list(plan.uids))
    vp.set("VARIANT_PACK_DATA_POINTERS", pointers, attr_type="VOID_PTR")
    vp.set("VARIANT_PACK_WORKSPACE", ws or None, attr_type="VOID_PTR")
    vp.finalize()
    execute = LIB.function("cudnnBackendExecute")
    h_c, p_c, v_c = handle._as_parameter_, plan.descriptor._as_parameter_, vp._as_parameter_
    handle.use_stream(None)
    results["raw cudnnBackendExecute loop"] = _host_us_per_call(
        lambda: execute(h_c, p_c, v_c), stream.sync, args.calls, args.batches
    )

    peers: dict[str, Any] = {}
    _bench_cupy(results, peers, plan, (x, w, y), (xh, wh), nhwc, stream.sync, args)
    _bench_torch(results, peers, plan, (x, w, y), (xh, wh), stream.sync, args)
    _bench_frontend(results, peers, (xh, wh), args)

    opts = EventOptions(timing_enabled=True)
    e0 = stream.record(options=opts)
    for _ in range(args.calls):
        plan.execute(arrays)
    e1 = stream.record(options=opts)
    e1.sync()
    results["kernel time (events)"] = {"median_us": (e1 - e0) * 1e3 / args.calls}

    floor = results["raw cudnnBackendExecute loop"]["median_us"]
    overhead = results["plan.execute"]["median_us"] - floor
    d = st.devices[0]
    report = {
        "benchmark": "host overhead of a cached cuDNN plan (conv 1x32x16x16, 3x3, fp16 NHWC)",
        "gpu": d["name"],
        "compute_capability": list(d["compute_capability"]),
        "driver": st.driver_version_text,
        "cudnn": cudnn_version,
        "cudnn_cudart": _info.cudart_version(),
        "cuda_core": cuda.core.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "peers": peers,
        "engine_id": plan.engine_id,
        "workspace_bytes": plan.workspace_size,
        "calls_per_batch": args.calls,
        "batches": args.batches,
        "results": results,
        "plan.execute over the raw loop (us)": overhead,
        "plan.execute_raw over the raw loop (us)": results["plan.execute_raw"]["median_us"] - floor,
        "targets": "plan.execute within 1.5 us of the raw loop, execute_raw within 0.5 us",
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_cudnn.json").write_text(json.dumps(report, indent=2) + "\n")
    for name, r in results.items():
        shown = f"{r['median_us']:8.2f} us" if "median_us" in r else r.get("skipped", "")
        print(f"{name:32s} {shown}")
    print(f"plan.execute - raw loop: {overhead:.2f} us; written to {out / 'bench_cudnn.json'}")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return 0
    names = [n for n, r in results.items() if "median_us" in r]
    values = [results[n]["median_us"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.barh(names, values, color="#4c72b0")
    ax.set_xlabel("microseconds per call (median)")
    ax.set_title(f"cuDNN {cudnn_version} on {d['name']}: conv 1x32x16x16 3x3 fp16 NHWC")
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.2f}", va="center")
    fig.tight_layout()
    fig.savefig(out / "bench_cudnn.png", dpi=120)
    print(f"plot written to {out / 'bench_cudnn.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
