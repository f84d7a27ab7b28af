#!/usr/bin/env python3
"""Benchmark pycutensor.einsum against torch.einsum and cupy.einsum; write JSON and a plot.

    python scripts/bench_cutensor.py [--out bench-cutensor.json] [--plot bench-cutensor.png]
                                     [--repeat 20] [--quick]

The suite: GEMM-like 4096^3 contractions in fp32 (32F compute), tf32 (TF32 compute) and bf16;
a batched GEMM; the cuTENSOR user guide's 4-mode contraction C[m,u,n,v] = A[m,h,k,n] B[u,k,v,h]
(extents of NVIDIA's contraction sample); a tensor-network contraction over many small modes; a
transpose-heavy 6-mode permutation (in GB/s); and the host overhead of a cached einsum call
(64x64 fp32 ``ij,jk->ik``, so the call itself dominates) on every array library installed, next to
``Plan.launch``, a raw ctypes loop calling ``cutensorContract`` with everything prebuilt (the floor),
``torch.einsum`` and ``cupy.einsum``.

Operands are PyTorch tensors when PyTorch with CUDA is installed, else CuPy arrays, else
pycutensor.DeviceArray. CuPy is run with ``CUPY_ACCELERATORS=cutensor`` unless the variable is
already set. Times come from the wall clock around ``repeat`` calls after warm-up calls (the first
call plans, and the guide's advice is to exclude a few), with the stream synchronised before and
after. Without a GPU the script says so and exits with status 2. ``--quick`` uses smaller sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

os.environ.setdefault("CUPY_ACCELERATORS", "cutensor")

import numpy as np

from _nvbind.cuda import driver_status


def _optional(name: str) -> Any:
    try:
        return __import__(name)
    except Exception:
        return None


class Backend:
    """Allocation and synchronisation for one array library."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.torch = _optional("torch") if name == "torch" else None
        self.cupy = _optional("cupy") if name == "cupy" else None

    def random(self, shape: tuple[int, ...], dtype: str) -> Any:
        if self.torch is not None:
            t = self.torch
            return t.rand(shape, dtype=getattr(t, dtype), device="cuda") - 0.5
        if self.cupy is not None:
            cp = self.cupy
            return (cp.random.random(shape, dtype=np.float32) - 0.5).astype(_np_dtype(dtype))
        from _nvbind.device_array import DeviceArray

        rng = np.random.default_rng(0)
        return DeviceArray.from_numpy((rng.random(shape) - 0.5).astype(_np_dtype(dtype)))

    def sync(self) -> None:
        from pycutensor.handle import synchronize_stream

        synchronize_stream(0)
        if self.torch is not None:
            self.torch.cuda.synchronize()
        if self.cupy is not None:
            self.cupy.cuda.Device().synchronize()


def _np_dtype(name: str) -> np.dtype:
    from _nvbind.dtypes import as_numpy_dtype

    return as_numpy_dtype("bf16" if name == "bfloat16" else name)


def timed(call: Callable[[], Any], sync: Callable[[], None], repeat: int, warmup: int = 3) -> float:
    """Seconds per call: ``warmup`` untimed calls, then the mean of ``repeat`` calls."""
    for _ in range(warmup):
        call()
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    sync()
    return (time.perf_counter() - start) / repeat


def _flops(subscripts: str, shapes: list[tuple[int, ...]], complex_: bool = False) -> float:
    extents: dict[str, int] = {}
    lhs = subscripts.split("->")[0]
    for term, shape in zip(lhs.split(","), shapes, strict=True):
        extents.update(zip(term, shape, strict=True))
    total = 1.0
    for n in extents.values():
        total *= n
    return total * (8.0 if complex_ else 2.0)


def suite(quick: bool) -> list[dict[str, Any]]:
    n = 1024 if quick else 4096
    s = 32 if quick else 96
    t = 4 if quick else 8
    p = 8 if quick else 16
    return [
        {"name": f"GEMM {n}^3 fp32", "subscripts": "ik,kj->ij", "shapes": [(n, n), (n, n)],
         "dtype": "float32", "compute": "32F"},
        {"name": f"GEMM {n}^3 tf32", "subscripts": "ik,kj->ij", "shapes": [(n, n), (n, n)],
         "dtype": "float32", "compute": "TF32"},
        {"name": f"GEMM {n}^3 bf16", "subscripts": "ik,kj->ij", "shapes": [(n, n), (n, n)],
         "dtype": "bfloat16", "compute": "32F"},
        {"name": "batched GEMM 32x1024^3 fp32" if not quick else "batched GEMM 8x256^3 fp32",
         "subscripts": "bik,bkj->bij",
         "shapes": [(32, 1024, 1024), (32, 1024, 1024)] if not quick else [(8, 256, 256)] * 2,
         "dtype": "float32", "compute": "32F"},
        {"name": "guide 4-mode contraction fp32", "subscripts": "mhkn,ukvh->munv",
         "shapes": [(s, 64 if not quick else 16, 64 if not quick else 16, s),
                    (s, 64 if not quick else 16, 64 if not quick else 16, 64 if not quick else 16)],
         "dtype": "float32", "compute": "32F"},
        {"name": f"tensor network 12 modes of {t} fp32", "subscripts": "abcdefgh,efghijkl->abcdijkl",
         "shapes": [(t,) * 8, (t,) * 8], "dtype": "float32", "compute": "32F"},
        {"name": f"permutation 6 modes of {p} fp32", "subscripts": "abcdef->fedcba",
         "shapes": [(p,) * 6], "dtype": "float32", "compute": None, "bandwidth": True},
    ]  # fmt: skip


def run_case(case: dict[str, Any], backend: Backend, repeat: int) -> dict[str, Any]:
    import pycutensor

    ops = [backend.random(shape, case["dtype"]) for shape in case["shapes"]]
    out = pycutensor.einsum(case["subscripts"], *ops, compute_type=case["compute"])
    result: dict[str, Any] = {"name": case["name"], "subscripts": case["subscripts"],
                              "shapes": case["shapes"], "dtype": case["dtype"],
                              "compute": case["compute"], "seconds": {}}  # fmt: skip
    result["seconds"]["pycutensor"] = timed(
        lambda: pycutensor.einsum(case["subscripts"], *ops, out=out, compute_type=case["compute"]),
        backend.sync, repeat,
    )  # fmt: skip
    # NumPy-style einsums return a view for a pure permutation; the copy is what is measured.
    materialise = bool(case.get("bandwidth"))
    if backend.torch is not None:
        torch = backend.torch
        tf32 = case["compute"] == "TF32"
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32

        def torch_call() -> Any:
            r = torch.einsum(case["subscripts"], *ops)
            return r.contiguous() if materialise else r

        try:
            result["seconds"]["torch.einsum"] = timed(torch_call, backend.sync, repeat)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
    cp = _optional("cupy")
    if cp is not None and case["dtype"] != "bfloat16" and case["compute"] != "TF32":
        cops = [x if backend.cupy is not None else cp.from_dlpack(x) for x in ops]

        def cupy_call() -> Any:
            r = cp.einsum(case["subscripts"], *cops)
            return cp.ascontiguousarray(r) if materialise else r

        label = f"cupy.einsum (CUPY_ACCELERATORS={os.environ.get('CUPY_ACCELERATORS', '')})"
        result["seconds"][label] = timed(cupy_call, backend.sync, repeat)
    if case.get("bandwidth"):
        nbytes = 2 * int(np.prod(case["shapes"][0])) * _np_dtype(case["dtype"]).itemsize
        result["GB/s"] = {k: nbytes / v / 1e9 for k, v in result["seconds"].items()}
    else:
        flops = _flops(case["subscripts"], case["shapes"])
        result["TFLOP/s"] = {k: flops / v / 1e12 for k, v in result["seconds"].items()}
    return result


def _batched_us(
    call: Callable[[], Any], sync: Callable[[], None], calls: int, batches: int = 20
) -> float:
    """Median host microseconds per call over batches of ``calls`` launches, each batch timed
    before synchronising (the launch queue does not fill for these sizes)."""
    for _ in range(min(calls, 200)):
        call()
    sync()
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        per_call.append((time.perf_counter() - t0) / calls * 1e6)
        sync()
    per_call.sort()
    return per_call[len(per_call) // 2]


def _einsum_overhead(
    name: str, lib: Backend, calls: int, figures: dict[str, Any]
) -> tuple[Any, ...]:
    import pycutensor

    a, b = lib.random((64, 64), "float32"), lib.random((64, 64), "float32")
    out = pycutensor.einsum("ij,jk->ik", a, b)
    figures[f"pycutensor.einsum, {name}, out given (us)"] = _batched_us(
        lambda: pycutensor.einsum("ij,jk->ik", a, b, out=out), lib.sync, calls
    )
    figures[f"pycutensor.einsum, {name}, new output (us)"] = _batched_us(
        lambda: pycutensor.einsum("ij,jk->ik", a, b), lib.sync, calls
    )
    if name == "torch":
        torch: Any = lib.torch
        figures["torch.einsum (us)"] = _batched_us(
            lambda: torch.einsum("ij,jk->ik", a, b), lib.sync, calls
        )
    if name == "cupy":
        cp: Any = lib.cupy
        accel = os.environ.get("CUPY_ACCELERATORS", "")
        figures[f"cupy.einsum, CUPY_ACCELERATORS={accel} (us)"] = _batched_us(
            lambda: cp.einsum("ij,jk->ik", a, b), lib.sync, calls
        )
    return a, b, out


def overhead(calls: int) -> dict[str, Any]:
    """Host microseconds per call of a cached ``ij,jk->ik`` on 64x64 fp32 operands (the GPU work
    is a few microseconds, below the host time), for every array library installed, next to the
    floor: ``cutensorContract`` called through ctypes with everything prebuilt."""
    from pycutensor.handle import get_handle

    figures: dict[str, Any] = {}
    libraries = [("DeviceArray", Backend("devicearray"))]
    for name in ("cupy", "torch"):
        module = _optional(name)
        if module is None:
            figures[f"{name} operands"] = "absent"
        else:
            libraries.append((name, Backend(name)))
    floor_ops = None
    for name, lib in libraries:
        floor_ops = (*_einsum_overhead(name, lib, calls, figures), lib)
    assert floor_ops is not None
    a, b, out, lib = floor_ops  # the last library's operands
    from _nvbind.arrays import as_array_view
    from _nvbind.memory import workspace

    handle = get_handle()
    program = next(p for k, p in reversed(handle._operations.items()) if k[1] == "ij,jk->ik")
    plan = program.steps[0].plan
    ptrs = [as_array_view(x, stream_ptr=0).ptr for x in (a, b, out, out)]
    ws = program.workspace_size
    ws_ptr = workspace(ws, device=handle.device, stream=0) if ws else 0
    figures["Plan.launch, raw pointers (us)"] = _batched_us(
        lambda: plan.launch(ptrs, (1.0, 0.0), 0, ws_ptr, ws), lib.sync, calls
    )
    # The floor: the C function with its arguments prebuilt, one ctypes call per launch.
    plan.launch(ptrs, (1.0, 0.0), 0, ws_ptr, ws)  # sets the scalars
    fn = plan._fn
    c_args = plan._args(plan._handle_ptr, plan._plan_ptr, plan._scalar_ptrs, ptrs, ws_ptr, ws, 0)
    previous = handle.activate()
    try:
        figures[f"raw {plan.operation.execute_function} ctypes loop (us)"] = _batched_us(
            lambda: fn(*c_args), lib.sync, calls
        )
    finally:
        handle.restore(previous)
    figures["targets"] = (
        "a cached einsum on CuPy or PyTorch operands within 6 us of the raw loop and below "
        "torch.einsum; per operand reading under 2 us"
    )
    return figures


def machine() -> dict[str, Any]:
    import pycutensor

    st = driver_status()
    info: dict[str, Any] = {
        "gpu": [d["name"] for d in st.devices],
        "compute_capability": [list(d["compute_capability"]) for d in st.devices],
        "driver": st.driver_version_text,
        "cutensor": ".".join(map(str, pycutensor.version_tuple())),
        "pycutensor": pycutensor.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "host": platform.node(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    for name in ("torch", "cupy"):
        module = _optional(name)
        if module is not None:
            info[name] = getattr(module, "__version__", None)
    try:
        from importlib.metadata import version

        info["cuda-core"] = version("cuda-core")
        info["cuda-bindings"] = version("cuda-bindings")
    except Exception:
        pass
    return info


def plot(results: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return False
    cases = [r for r in results if "TFLOP/s" in r]
    libraries = sorted({k for r in cases for k in r["TFLOP/s"]})
    fig, ax = plt.subplots(figsize=(10, 5))
    width = 0.8 / max(len(libraries), 1)
    for i, lib in enumerate(libraries):
        values = [r["TFLOP/s"].get(lib, 0.0) for r in cases]
        ax.bar([x + i * width for x in range(len(cases))], values, width, label=lib)
    ax.set_xticks([x + width * (len(libraries) - 1) / 2 for x in range(len(cases))])
    ax.set_xticklabels([r["name"] for r in cases], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("TFLOP/s")
    ax.set_title("einsum throughput")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-cutensor.json"))
    parser.add_argument("--plot", type=Path, default=Path("bench-cutensor.png"))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000, help="calls for the overhead figure")
    parser.add_argument("--quick", action="store_true", help="smaller problems")
    parser.add_argument("--backend", choices=("torch", "cupy", "devicearray"), default=None)
    args = parser.parse_args(argv)
    for option, value in (("--repeat", args.repeat), ("--calls", args.calls)):
        if value < 1:  # no timed call: a division by zero, or negative seconds
            print(f"bench_cutensor: {option} must be at least 1, got {value}", file=sys.stderr)
            return 2

    st = driver_status()
    if not st.usable:
        print(f"bench_cutensor: needs a CUDA GPU, and none is usable: {st.reason}", file=sys.stderr)
        return 2
    name = args.backend
    if name is None:
        torch = _optional("torch")
        name = "torch" if torch is not None and torch.cuda.is_available() else (
            "cupy" if _optional("cupy") is not None else "devicearray")  # fmt: skip
    backend = Backend(name)
    results = []
    for case in suite(args.quick):
        try:
            results.append(run_case(case, backend, args.repeat))
        except Exception as exc:  # a case cuTENSOR refuses here is reported, not fatal
            results.append({"name": case["name"], "error": f"{type(exc).__name__}: {exc}"})
        print(json.dumps(results[-1], default=str), flush=True)
    report = {
        "machine": machine(),
        "backend": name,
        "repeat": args.repeat,
        "results": results,
        "overhead": overhead(args.calls),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out}")
    if plot(results, args.plot):
        print(f"wrote {args.plot}")
    else:
        print("matplotlib is not installed: no plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
