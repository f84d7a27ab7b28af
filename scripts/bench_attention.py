#!/usr/bin/env python3
"""Fused attention throughput: ``Graph.sdpa`` against PyTorch's SDPA and cudnn-frontend's ``sdpa``.

    python scripts/bench_attention.py [--out DIR] [--shape B H S D] [--dtype bf16|fp16] [--iters N]

The default shape is a training-sized one (batch 4, 16 heads, sequence 2048, head dim 128, bf16,
``bshd``), non-causal and causal (causal needs cuDNN 9.21 in this library; below that the row
says so). Each candidate runs ``--iters`` times between two CUDA events after a warm-up; the
throughput counts the two matmuls, ``4 * b * h * s_q * s_kv * d`` FLOPs, halved when causal.
Candidates:

* ``pycudnn Graph.sdpa``: a plan from heuristics mode A, executed with ``plan.execute``;
* ``torch sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` (whatever backend PyTorch
  picks; reported with its version), when PyTorch with CUDA is importable;
* ``cudnn-frontend sdpa``: NVIDIA's ``cudnn`` Python package, when installed.

Results go to ``DIR/bench_attention.json`` with the GPU, driver, cuDNN and package versions.
Without a GPU the script says so and exits 2.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import numpy as np


def _fail(message: str) -> int:
    print(f"bench_attention: {message}", file=sys.stderr)
    return 2


def _time_ms(run: Callable[[], Any], stream: Any, iters: int) -> float:
    """Mean milliseconds per call between two CUDA events (after a warm-up)."""
    from cuda.core import EventOptions

    for _ in range(3):
        run()
    stream.sync()
    opts = EventOptions(timing_enabled=True)
    e0 = stream.record(options=opts)
    for _ in range(iters):
        run()
    e1 = stream.record(options=opts)
    e1.sync()
    return float(e1 - e0) / iters


def _row(name: str, ms: float, flops: float) -> dict[str, Any]:
    return {"candidate": name, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12}


def _pycudnn(q_h: np.ndarray, shape: tuple[int, ...], causal: bool, iters: int) -> float:
    from cuda.core import Device

    import pycudnn
    from _nvbind.device_array import DeviceArray

    b, h, s, d = shape
    strides = [s * h * d, d, h * d, 1]  # bshd
    g = pycudnn.Graph("bench_sdpa")
    q = g.tensor([b, h, s, d], strides, dtype=q_h.dtype, name="q")
    k = g.tensor([b, h, s, d], strides, dtype=q_h.dtype, name="k")
    v = g.tensor([b, h, s, d], strides, dtype=q_h.dtype, name="v")
    o, _ = g.sdpa(q, k, v, causal=causal)
    plan = g.build(cache=False)
    bshd = np.ascontiguousarray(q_h.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    qd = DeviceArray.from_numpy(bshd)
    od = DeviceArray.empty(o.dims, o.dtype, strides=o.strides)
    arrays = {q: qd, k: qd, v: qd, o: od}
    return _time_ms(lambda: plan.execute(arrays), Device(0).default_stream, iters)


def _torch(q_h: np.ndarray, causal: bool, iters: int) -> tuple[float, str]:
    import torch
    import torch.nn.functional as F

    dtype = torch.bfloat16 if q_h.dtype.name == "bfloat16" else torch.float16
    q = torch.from_numpy(q_h.astype(np.float32)).to("cuda", dtype)
    for _ in range(3):
        F.scaled_dot_product_attention(q, q, q, is_causal=causal)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        F.scaled_dot_product_attention(q, q, q, is_causal=causal)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters, torch.__version__


def _frontend(q_h: np.ndarray, causal: bool, iters: int) -> tuple[float, str]:
    import cudnn  # NVIDIA's cudnn-frontend Python package
    import torch

    d = q_h.shape[3]
    dt = cudnn.data_type.BFLOAT16 if q_h.dtype.name == "bfloat16" else cudnn.data_type.HALF
    tdt = torch.bfloat16 if q_h.dtype.name == "bfloat16" else torch.float16
    q = torch.from_numpy(q_h.astype(np.float32)).to("cuda", tdt)
    o = torch.empty_like(q)
    graph = cudnn.pygraph(
        io_data_type=dt,
        intermediate_data_type=cudnn.data_type.FLOAT,
        compute_data_type=cudnn.data_type.FLOAT,
    )
    qt = graph.tensor_like(q)
    kt = graph.tensor_like(q)
    vt = graph.tensor_like(q)
    ot, _ = graph.sdpa(
        q=qt,
        k=kt,
        v=vt,
        is_inference=True,
        attn_scale=1 / math.sqrt(d),
        use_causal_mask=causal,
    )
    ot.set_output(True).set_dim(o.size()).set_stride(o.stride())
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A])
    graph.build_plans()
    ws = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
    pack = {qt: q, kt: q, vt: q, ot: o}
    for _ in range(3):
        graph.execute(pack, ws)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        graph.execute(pack, ws)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters, str(getattr(cudnn, "__version__", "unknown"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="bench-results/attention", help="output directory")
    parser.add_argument("--shape", type=int, nargs=4, default=[4, 16, 2048, 128], metavar="N")
    parser.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    parser.add_argument("--iters", type=int, default=50, help="timed calls per candidate")
    args = parser.parse_args(argv)
    if args.iters < 1 or any(n < 1 for n in args.shape):
        return _fail("--iters and --shape must be positive")

    from _nvbind.cuda import driver_status

    st = driver_status()
    if not st.usable:
        return _fail(f"needs a CUDA GPU, and none is usable here: {st.reason}")
    try:
        import pycudnn

        cudnn_version = pycudnn.version()
    except ImportError as exc:  # LibraryNotFoundError is an ImportError
        return _fail(str(exc))
    import cuda.core
    import ml_dtypes
    from cuda.core import Device

    Device(0).set_current()
    dtype = np.dtype(ml_dtypes.bfloat16) if args.dtype == "bf16" else np.dtype(np.float16)
    shape = tuple(args.shape)
    b, h, s, d = shape
    q_h = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    rows: list[dict[str, Any]] = []
    versions: dict[str, str | None] = {"torch": None, "cudnn_frontend": None}
    for causal in (False, True):
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        try:
            rows.append(
                {
                    "causal": causal,
                    **_row("pycudnn Graph.sdpa", _pycudnn(q_h, shape, causal, args.iters), flops),
                }
            )
        except Exception as exc:  # a refusal (older cuDNN) or no engine: reported, not fatal
            rows.append(
                {
                    "causal": causal,
                    "candidate": "pycudnn Graph.sdpa",
                    "skipped": f"{type(exc).__name__}: {exc}",
                }
            )
        for name, bench, key in (
            ("torch sdpa", _torch, "torch"),
            ("cudnn-frontend sdpa", _frontend, "cudnn_frontend"),
        ):
            try:
                ms, version = bench(q_h, causal, args.iters)
                versions[key] = version
                rows.append({"causal": causal, **_row(name, ms, flops)})
            except Exception as exc:  # not installed, or no CUDA build
                rows.append(
                    {"causal": causal, "candidate": name, "skipped": f"{type(exc).__name__}: {exc}"}
                )
    dev = st.devices[0]
    report = {
        "benchmark": f"SDPA forward, shape [b, h, s, d] = {list(shape)}, {dtype.name}, bshd",
        "gpu": dev["name"],
        "compute_capability": list(dev["compute_capability"]),
        "driver": st.driver_version_text,
        "cudnn": cudnn_version,
        "cuda_core": cuda.core.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        **versions,
        "iters": args.iters,
        "results": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_attention.json").write_text(json.dumps(report, indent=2) + "\n")
    for r in rows:
        what = f"{r['tflops']:7.1f} TFLOP/s ({r['ms']:.3f} ms)" if "ms" in r else r["skipped"]
        print(f"{'causal' if r['causal'] else 'full  '} {r['candidate']:24s} {what}")
    print(f"written to {out / 'bench_attention.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
