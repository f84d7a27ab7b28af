"""Smoke checks of the graph API (``python -m pycudnn smoke``)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from _nvbind.cuda import driver_status
from _nvbind.device_array import DeviceArray
from _nvbind.smoke import Check, CheckList, SkipCheck

from ..deviceprops import DeviceProperties
from ..opgraph import OperationGraph
from .building import build
from .heuristics import run_heuristics

__all__ = ["smoke_checks"]

_log = logging.getLogger("pycudnn")

# The checks, in the order they run (each added where it is defined).
_CHECKS = CheckList()


# --------------------------------------------------------------------------------------------------
# Smoke checks (python -m pycudnn smoke)
# --------------------------------------------------------------------------------------------------


def _smoke_graphs() -> dict[str, OperationGraph]:
    g = OperationGraph("conv_bias_relu")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
    g.relu(g.add(g.conv_fprop(x, w, padding=1, name="conv"), b, name="bias_add"), name="relu")
    m = OperationGraph("matmul")
    a = m.tensor([1, 64, 32], dtype="float16", name="a")
    bb = m.tensor([1, 32, 48], dtype="float16", name="b")
    m.matmul(a, bb, name="mm", out_dtype="float32")
    return {"conv_bias_relu": g, "matmul": m}


def checkout_deviceprops_dir(package_dir: Path | None = None) -> Path | None:
    """``tests/data/deviceprops/`` of the source checkout that holds the ``pycudnn`` package
    (``package_dir``, default this one), or None for an installed package (no checkout)."""
    package_dir = package_dir or Path(__file__).resolve().parent.parent
    root = package_dir.parent
    # pyproject.toml marks a checkout: site-packages has no such file, and may hold some other
    # distribution's stray top-level tests/ folder.
    folder = root / "tests" / "data" / "deviceprops"
    return folder if (root / "pyproject.toml").is_file() and folder.is_dir() else None


def _smoke_deviceprops() -> tuple[DeviceProperties | None, str]:
    """The properties the smoke demo plans against without a GPU, and where they came from (or,
    when there are none, why)."""
    env = os.environ.get("PYCUDNN_DEVICEPROPS")
    if env:
        return DeviceProperties.load(env), env
    folder = checkout_deviceprops_dir()
    hint = (
        "set PYCUDNN_DEVICEPROPS to a file captured with `python -m pycudnn deviceprops --save "
        "FILE` on a GPU"
    )
    if folder is None:
        return (
            None,
            f"no device-properties JSON: not a source checkout (no tests/data/deviceprops/); {hint}",
        )
    files = sorted(folder.glob("*.json"))
    if not files:
        return None, f"no device-properties JSON in {folder}; {hint}, or add one there"
    return DeviceProperties.load(files[0]), str(files[0])


@_CHECKS.add("graph heuristics (conv+bias+ReLU, matmul)")
def _smoke_heuristics() -> dict[str, Any]:

    st = driver_status()
    if not st.library_found:
        raise SkipCheck("cuDNN's backend needs libcuda.so.1 (Debian: libcuda1), not installed")
    # Heuristics need a target to return configs: the GPU, else device properties. With neither,
    # cuDNN counts configs but returns none (it cannot materialize them), which proves nothing.
    props: DeviceProperties | None = None
    target = "this GPU"
    if not st.usable:
        why = DeviceProperties.why_no_plans()
        props, where = _smoke_deviceprops() if why is None else (None, why)
        if props is None:
            raise SkipCheck(
                f"heuristics return engine configs for a target: no GPU ({st.reason}) and no "
                f"usable device properties ({where})"
            )
        target = f"{props.device_name} (device properties from {where})"
    out: dict[str, Any] = {"target": target}
    parts = []
    for name, g in _smoke_graphs().items():
        counts = {}
        for mode in ("a", "fallback"):
            res = run_heuristics(g, mode, device_properties=props)
            if res.error:
                raise AssertionError(f"{name}: heuristics {res.describe()}")
            counts[mode] = [res.count, res.returned]
        if not any(returned for _, returned in counts.values()):
            raise AssertionError(
                f"{name}: no heuristic mode returned an engine config for {target} "
                f"({', '.join(f'{m} {c[0]} counted/0 returned' for m, c in counts.items())})"
            )
        out[name] = {"engines": g.engine_count, "heuristics": counts}
        parts.append(
            f"{name}: {g.engine_count} engines, "
            + ", ".join(f"{m} {c[0]} counted/{c[1]} returned" for m, c in counts.items())
        )
    out["summary"] = f"graphs finalized; engine configs for {target}: " + "; ".join(parts)
    return out


@_CHECKS.add("deviceless plans from device properties")
def _smoke_deviceless() -> dict[str, Any]:

    why = DeviceProperties.why_no_plans()
    if why is not None:
        raise SkipCheck(why)
    props, where = _smoke_deviceprops()
    if props is None:
        raise SkipCheck(where)
    parts: list[str] = []
    data: dict[str, Any] = {"deviceprops": where}
    for name, g in _smoke_graphs().items():
        plan = build(g, device_properties=props, cache=False)
        text = plan.to_json()
        data[name] = {
            "engine_id": plan.engine_id,
            "workspace": plan.workspace_size,
            "json_bytes": len(text),
        }
        parts.append(f"{name}: engine {plan.engine_id}, {len(text)} B JSON")
        plan.close()
    data["summary"] = f"plans for {props.device_name} (from {where}): " + "; ".join(parts)
    return data


@_CHECKS.add("graph conv+bias+ReLU on the GPU vs NumPy")
def _smoke_gpu_conv() -> dict[str, Any]:
    return _smoke_gpu("conv_bias_relu")


@_CHECKS.add("graph matmul on the GPU vs NumPy")
def _smoke_gpu_matmul() -> dict[str, Any]:
    return _smoke_gpu("matmul")


def _smoke_gpu(which: str) -> dict[str, Any]:

    st = driver_status()
    if not st.usable:
        raise SkipCheck(f"executing a plan needs a GPU: {st.reason}", needs_gpu=True)

    rng = np.random.default_rng(0)
    g = _smoke_graphs()[which]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype[Any]
    plan = build(g, cache=False)
    if which == "conv_bias_relu":
        x = rng.standard_normal((1, 32, 16, 16)).astype(np.float16)
        w = (rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float16)
        b = rng.standard_normal((1, 32, 1, 1)).astype(np.float16)
        ref = np.maximum(
            _conv2d_reference(x.astype(np.float32), w.astype(np.float32), 1) + b.astype(np.float32),
            0,
        )
        arrays = {"x": _nhwc(x), "w": _nhwc(w), "bias": _nhwc(b)}
        out_name, out_shape, out_dtype = "relu.y", (1, 32, 16, 16), np.dtype(np.float16)
    else:
        a = rng.standard_normal((1, 64, 32)).astype(np.float16)
        bm = rng.standard_normal((1, 32, 48)).astype(np.float16)
        ref = a.astype(np.float32) @ bm.astype(np.float32)
        arrays = {"a": a, "b": bm}
        out_name, out_shape, out_dtype = "mm.c", (1, 64, 48), np.dtype(np.float32)
    dev = {k: DeviceArray.from_numpy(v) for k, v in arrays.items()}
    out_tensor = g[out_name]
    y = DeviceArray.empty(out_shape, out_dtype, strides=out_tensor.strides)
    dev[out_name] = y
    plan.execute(dev)
    plan.execute(dev)
    t0 = time.perf_counter()
    n = 20
    for _ in range(n):
        plan.execute(dev)
    got = y.to_numpy().astype(np.float32)
    ms = (time.perf_counter() - t0) / n * 1e3
    err = float(np.max(np.abs(got - ref)))
    tol = 2e-2 * max(1.0, float(np.max(np.abs(ref))))
    if not err <= tol:
        raise AssertionError(f"{which}: max error {err:.3g} exceeds {tol:.3g}")
    plan.close()
    return {
        "summary": f"{which} on GPU: engine {plan.engine_id}, max |error| {err:.3g} vs NumPy, "
        f"{ms:.3f} ms per call (host-timed, incl. sync once)",
        "engine_id": plan.engine_id,
        "max_error": err,
        "ms_per_call": ms,
    }


def _nhwc(a: np.ndarray) -> np.ndarray:
    """A logical-NCHW array stored channels-last (NHWC memory)."""
    out: np.ndarray = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    return out


def _conv2d_reference(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Cross-correlation, stride 1, symmetric padding (NumPy, float32)."""
    n, _, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - r + 1, wd + 2 * pad - s + 1
    out = np.zeros((n, k, oh, ow), dtype=np.float32)
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i : i + oh, j : j + ow]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return out


def smoke_checks() -> list[tuple[str, Check]]:
    """The graph API's checks for ``python -m pycudnn smoke``."""
    return _CHECKS.items()
