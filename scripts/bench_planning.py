#!/usr/bin/env python3
"""Planning speed: pycudnn beside NVIDIA's cudnn-frontend, deviceless plans for the H100.

    python scripts/bench_planning.py [--quick] [--graphs conv_fprop,layernorm_fwd] [--repeats 5]
        [--rounds 5]
        [--out DIR] [--frontend-python PATH] [--cold-runs 7] [--plot] [--write-docs]

For each graph of the list (the graphs of the project's planning-speed issue: conv fprop + bias +
ReLU, dgrad, wgrad, matmul 4096^3 bf16, matmul + bias + GELU, SDPA forward (causal) and backward,
layernorm and RMSnorm forward and backward, batchnorm training, conv -> genstats, max pooling,
slice -> matmul, RoPE -> SDPA, MoE grouped matmul) both libraries plan for the committed H100
properties without a GPU (``tests/data/deviceprops/h100-sxm-80gb.json``; needs ``libcuda.so.1``):

- **build**: describe the graph and build its plan (heuristics modes A then FALLBACK, the first
  config that finalizes, no plan cache), the median of ``--repeats`` after one warm-up, in
  ``--rounds`` rounds in which the two libraries take turns, each in a new process (the
  machine's speed drifts, and a process's own state moves its figures);
- **heuristics**: describe the graph and query heuristic mode A (the configs it returns);
- the engine each chose, side by side (they must be the same);
- **cold**: a new process to its first plan, import included (median of ``--cold-runs``, the
  two libraries' processes alternating);
- pycudnn's plan cache: a hit in memory, and a new process's first plan from a cache directory
  next to the time that process took to load libcudnn (``--warm-only`` leaves out these two
  and the cold figures).

A graph a library cannot plan is reported as such, with its error. The frontend (the
``nvidia-cudnn-frontend`` package, imported as ``cudnn``) runs in a child process with its own
environment: ``--frontend-python`` names that environment's interpreter (default: this one, if it
can import ``cudnn``); without it the frontend is reported absent. Its device properties come from
``cudnn.create_device_properties(json)`` and ``sm_version=90`` (without ``sm_version`` it asks
the CUDA runtime for a GPU and fails).

Writes ``DIR/bench_planning.json`` (machine, versions, every figure), with ``--plot``
``DIR/bench_planning.png`` (if matplotlib is installed), and with ``--write-docs`` the table into
the "Planning speed" section of ``docs/performance.md``. ``--quick`` runs two small graphs once
each, for CI: it checks that the script works, not how fast anything is. Nothing here is a test
of speed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planning_graphs import GRAPHS, PROPS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
SECTION = "## Planning speed beside cudnn-frontend"

QUICK_GRAPHS = ("layernorm_fwd", "conv_fprop_bias_relu")
COLD_GRAPHS = ("conv_fprop_bias_relu", "layernorm_fwd")


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)


def _median_ms(samples: list[float]) -> float:
    return _ms(statistics.median(samples))


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"


# --------------------------------------------------------------------------------------------------
# pycudnn, in this process
# --------------------------------------------------------------------------------------------------


def bench_pycudnn(names: list[str], repeats: int) -> dict[str, Any]:
    """Warm describe + build and describe + heuristics of each graph, and the engine chosen."""
    import pycudnn
    from pycudnn import DeviceProperties

    props = DeviceProperties.load(PROPS)
    out: dict[str, Any] = {}
    for name in names:
        builder = GRAPHS[name]

        def build(builder: Callable[[Any], None] = builder, name: str = name) -> Any:
            g = pycudnn.Graph(name)
            builder(g)
            return g.build(device_properties=props, cache=False)

        def heuristics(builder: Callable[[Any], None] = builder, name: str = name) -> Any:
            g = pycudnn.Graph(name)
            builder(g)
            return g.heuristics("a", device_properties=props)

        entry: dict[str, Any] = {}
        try:
            plan = build()  # the warm-up
        except Exception as exc:
            out[name] = {"error": _error(exc)}
            continue
        entry["engine"] = plan.engine_id
        entry["knobs"] = dict(plan.knobs)
        entry["report"] = plan.report.describe() if plan.report is not None else ""
        plan.close()
        entry["build_samples_ms"] = [_ms(t) for t in _timed(build, repeats)]
        res = heuristics()
        entry["heuristics_a_configs"] = [c.engine_id for c in res.configs]
        entry["heuristics_samples_ms"] = [_ms(t) for t in _timed(heuristics, repeats)]
        out[name] = entry
    return out


def bench_pycudnn_child(names: list[str], repeats: int) -> dict[str, Any]:
    """:func:`bench_pycudnn` in a new process: each round samples another process, as the
    frontend's rounds do (a process's own state moves its figures as much as the machine)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--pycudnn-round",
            json.dumps({"graphs": names, "repeats": repeats})]  # fmt: skip
    out = _run_child(argv, _child_env())
    if "error" in out:
        return {name: {"error": f"the pycudnn round failed: {out['error']}"} for name in names}
    return out


def _pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One entry a graph from the entries of every round: the first round's, with the medians
    (``build_ms``, ``heuristics_ms``) of all the rounds' samples; a graph that failed in any
    round is reported with that round's error."""
    out: dict[str, Any] = {}
    for name in rounds[0] if rounds else {}:
        entries = [r.get(name, {"error": "missing from a round"}) for r in rounds]
        failed = [e for e in entries if "error" in e or "absent" in e]
        if failed:
            out[name] = failed[0]
            continue
        entry = {k: v for k, v in entries[0].items() if not k.endswith("_samples_ms")}
        for key in ("build", "heuristics"):
            samples = [t for e in entries for t in e[f"{key}_samples_ms"]]
            entry[f"{key}_ms"] = round(statistics.median(samples), 3)
            entry[f"{key}_samples"] = len(samples)
        out[name] = entry
    return out


def _timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    # The result is released inside the timing, as the frontend child's graphs are (each is
    # dropped before its clock stops): both pay for tearing down what they made.
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        close = getattr(result, "close", None)
        if close is not None:
            close()
        del result
        samples.append(time.perf_counter() - t0)
    return samples


def bench_cache_memory(repeats: int) -> dict[str, Any]:
    """A hit in the in-memory plan cache: the same graph object again, and a new graph object
    describing the same graph (its key is computed once more)."""
    import pycudnn
    from pycudnn import DeviceProperties
    from pycudnn.plan import PlanCache

    props = DeviceProperties.load(PROPS)
    cache = PlanCache()
    name = "conv_fprop_bias_relu"

    def described() -> Any:
        g = pycudnn.Graph("hit")
        GRAPHS[name](g)
        return g

    g = described()
    g.build(device_properties=props, cache=cache)
    same = _timed(lambda: g.build(device_properties=props, cache=cache), repeats * 20)
    # As many samples as for the same object (a median of a handful moved by 2-3x run to run):
    # the graphs are described first, so that only the key and the lookup are timed.
    graphs = [described() for _ in range(repeats * 20)]
    fresh = []
    for g2 in graphs:
        t0 = time.perf_counter()
        g2.build(device_properties=props, cache=cache)
        fresh.append(time.perf_counter() - t0)
    return {
        "graph": name,
        "same_graph_ms": _median_ms(same),
        "new_graph_object_ms": _median_ms(fresh),
        "stats": dict(cache.stats),
    }


# A new process: import, (load libcudnn), describe, build; timed inside the child from before the
# import. argv: graph name, mode ("build" or "disk:<cache dir>").
PYCUDNN_COLD = r"""
import sys, time
t0 = time.perf_counter()
import json
import pycudnn
from pycudnn import DeviceProperties
sys.path.insert(0, sys.argv[3])
import planning_graphs as bp  # the graphs alone: the benchmark's own imports are not pycudnn's
name, mode = sys.argv[1], sys.argv[2]
out = {"import_ms": (time.perf_counter() - t0) * 1e3}
props = DeviceProperties.load(bp.PROPS)
if mode.startswith("disk:"):
    t1 = time.perf_counter()
    pycudnn.version()  # loads libcudnn (and its graph sublibrary)
    out["libcudnn_load_ms"] = (time.perf_counter() - t1) * 1e3
    cache = pycudnn.plan.PlanCache(mode[5:])
else:
    cache = False
g = pycudnn.Graph(name)
bp.GRAPHS[name](g)
plan = g.build(device_properties=props, cache=cache)
out["first_plan_ms"] = (time.perf_counter() - t0) * 1e3
out["engine"] = plan.engine_id
if cache is not False:
    t2 = time.perf_counter()
    again = pycudnn.plan.PlanCache(mode[5:])  # a second hit from disk: none from memory
    g = pycudnn.Graph(name)
    bp.GRAPHS[name](g)
    g.build(device_properties=props, cache=again)
    out["second_disk_hit_ms"] = (time.perf_counter() - t2) * 1e3
    out["stats"] = {k: v + again.stats[k] for k, v in cache.stats.items()}
print(json.dumps(out))
"""


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # Installed packages run from compiled bytecode; a checkout without __pycache__ would time
    # Python compiling the generated bindings instead.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _run_child(argv: list[str], env: dict[str, str], timeout: float = 600) -> dict[str, Any]:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    return dict(json.loads(lines[-1]))


def _frontend_env() -> dict[str, str]:
    # The frontend's environment is its own: nothing of this checkout is on its path.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _frontend_args(names: list[str], repeats: int) -> dict[str, Any]:
    return {"graphs": names, "repeats": repeats, "props": str(PROPS), "cold": None}


def bench_cold(
    names: list[str], runs: int, frontend: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new process to its first plan, import included, for pycudnn and (with ``frontend``, its
    interpreter) the frontend, and pycudnn's first plan from a cache directory another process
    filled, beside the time it took to load libcudnn. The two libraries' processes alternate, run
    by run, so that both meet the same load on a shared machine."""
    env, fe_env = _child_env(), _frontend_env()
    script_dir = str(Path(__file__).resolve().parent)
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    for name in names:
        argv = [sys.executable, "-c", PYCUDNN_COLD, name, "build", script_dir]
        fe_args = json.dumps({**_frontend_args(names, 1), "cold": name})
        fe_argv = [frontend, "-c", FRONTEND_CHILD, fe_args] if frontend else []
        _run_child(argv, env)  # writes the bytecode once, outside the figures
        if fe_argv:
            _run_child(fe_argv, fe_env)  # its bytecode and the page cache, likewise
        samples: list[dict[str, Any]] = []
        fe_samples: list[dict[str, Any]] = []
        for _ in range(runs):
            samples.append(_run_child(argv, env))
            if fe_argv:
                fe_samples.append(_run_child(fe_argv, fe_env))
        ours[name] = _summarise(samples, "first_plan_ms")
        if fe_argv:
            theirs[name] = _summarise(fe_samples, "first_plan_ms")
    with tempfile.TemporaryDirectory(prefix="bench-planning-") as cache_dir:
        name = names[0]
        argv = [sys.executable, "-c", PYCUDNN_COLD, name, f"disk:{cache_dir}", script_dir]
        fe_disk = {"graph": name, "path": os.path.join(cache_dir, "frontend.plan")}
        fe_args = json.dumps({**_frontend_args(names, 1), "disk": fe_disk})
        fe_argv = [frontend, "-c", FRONTEND_CHILD, fe_args] if frontend else []
        _run_child(argv, env)  # fills the directory
        if fe_argv:
            _run_child(fe_argv, fe_env)  # stores the frontend's serialized plan
        samples, fe_samples = [], []
        for _ in range(runs):
            samples.append(_run_child(argv, env))
            if fe_argv:
                fe_samples.append(_run_child(fe_argv, fe_env))
        disk = _summarise(samples, "first_plan_ms")
        disk["libcudnn_load_ms"] = _median_of(samples, "libcudnn_load_ms")
        disk["second_disk_hit_ms"] = _median_of(samples, "second_disk_hit_ms")
        disk["disk_hits"] = sum(s.get("stats", {}).get("disk_hits", 0) for s in samples)
        disk["graph"] = name
        ours["from_disk"] = disk
        if fe_argv:
            theirs["from_disk"] = {**_summarise(fe_samples, "first_plan_ms"), "graph": name}
    return ours, theirs


def _median_of(samples: list[dict[str, Any]], key: str) -> float | None:
    values = [s[key] for s in samples if key in s]
    return round(statistics.median(values), 3) if values else None


def _summarise(samples: list[dict[str, Any]], key: str) -> dict[str, Any]:
    errors = [s["error"] for s in samples if "error" in s]
    if errors and len(errors) == len(samples):
        return {"error": errors[0]}
    return {
        key: _median_of(samples, key),
        "import_ms": _median_of(samples, "import_ms"),
        "engine": next((s.get("engine") for s in samples if "engine" in s), None),
        "runs": len(samples) - len(errors),
    }


# --------------------------------------------------------------------------------------------------
# cudnn-frontend, in a child process with its own environment
# --------------------------------------------------------------------------------------------------

# The same graphs through cudnn-frontend's Python API. argv: JSON {"graphs", "repeats", "props",
# "cold": graph or null, "disk": {"graph", "path"} or absent}. Prints one JSON line.
FRONTEND_CHILD = textwrap.dedent(
    r'''
    import json, statistics, sys, time
    t0 = time.perf_counter()
    import cudnn
    import_s = time.perf_counter() - t0
    args = json.loads(sys.argv[1])
    dp = cudnn.create_device_properties(open(args["props"]).read())
    dt = cudnn.data_type
    BF16, HALF, FLOAT, INT32 = dt.BFLOAT16, dt.HALF, dt.FLOAT, dt.INT32

    def new_graph(io=HALF):
        return cudnn.pygraph(io_data_type=io, intermediate_data_type=FLOAT,
                             compute_data_type=FLOAT, device_property=dp, sm_version=90)

    def nhwc(g, n, c, h, w, dtype=HALF, name=None):
        return g.tensor(name=name, dim=[n, c, h, w], stride=[c * h * w, 1, c * w, c], data_type=dtype)

    def packed(g, dims, dtype, name):
        strides, acc = [], 1
        for d in reversed(dims):
            strides.insert(0, acc)
            acc *= d
        return g.tensor(name=name, dim=list(dims), stride=strides, data_type=dtype)

    def conv_fprop_bias_relu():
        g = new_graph()
        x = nhwc(g, 8, 64, 56, 56, name="x"); w = nhwc(g, 64, 64, 3, 3, name="w")
        b = nhwc(g, 1, 64, 1, 1, name="b")
        y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        y = g.relu(g.add(y, b)); y.set_output(True).set_data_type(HALF)
        return g

    def conv_dgrad():
        g = new_graph()
        dy = nhwc(g, 8, 64, 56, 56, name="dy"); w = nhwc(g, 64, 64, 3, 3, name="w")
        dx = g.conv_dgrad(loss=dy, filter=w, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        dx.set_dim([8, 64, 56, 56]).set_output(True).set_data_type(HALF)
        return g

    def conv_wgrad():
        g = new_graph()
        x = nhwc(g, 8, 64, 56, 56, name="x"); dy = nhwc(g, 8, 64, 56, 56, name="dy")
        dw = g.conv_wgrad(image=x, loss=dy, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        dw.set_dim([64, 64, 3, 3]).set_output(True).set_data_type(HALF)
        return g

    def _mm(g):
        a = packed(g, [1, 4096, 4096], BF16, "a"); b = packed(g, [1, 4096, 4096], BF16, "b")
        return g.matmul(a, b)

    def matmul_bf16_4096():
        g = new_graph(BF16); c = _mm(g); c.set_output(True).set_data_type(BF16)
        return g

    def matmul_bias_gelu():
        g = new_graph(BF16); c = _mm(g)
        bias = packed(g, [1, 1, 4096], BF16, "bias")
        y = g.gelu(g.add(c, bias)); y.set_output(True).set_data_type(BF16)
        return g

    B, H, S, D = 4, 16, 2048, 128

    def bshd(g, name):
        return g.tensor(name=name, dim=[B, H, S, D], stride=[S * H * D, D, H * D, 1], data_type=BF16)

    def sdpa_fwd_causal():
        g = new_graph(BF16)
        q, k, v = (bshd(g, n) for n in "qkv")
        o, stats = g.sdpa(q=q, k=k, v=v, generate_stats=True, attn_scale=D ** -0.5,
                          use_causal_mask=True)
        o.set_output(True).set_dim([B, H, S, D]).set_stride([S * H * D, D, H * D, 1])
        stats.set_output(True).set_data_type(FLOAT)
        return g

    def sdpa_bwd_causal():
        g = new_graph(BF16)
        q, k, v, o, do = (bshd(g, n) for n in ("q", "k", "v", "o", "do"))
        stats = packed(g, [B, H, S, 1], FLOAT, "stats")
        dq, dk, dv = g.sdpa_backward(q=q, k=k, v=v, o=o, dO=do, stats=stats,
                                     attn_scale=D ** -0.5, use_causal_mask=True)
        for t in (dq, dk, dv):
            t.set_output(True).set_dim([B, H, S, D]).set_stride([S * H * D, D, H * D, 1])
        return g

    ROWS, COLS = 8192, 4096

    def norm_inputs(g):
        x = packed(g, [ROWS, COLS, 1, 1], BF16, "x")
        scale = packed(g, [1, COLS, 1, 1], FLOAT, "scale")
        bias = packed(g, [1, COLS, 1, 1], FLOAT, "bias")
        eps = g.tensor(name="eps", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=FLOAT,
                       is_pass_by_value=True)
        return x, scale, bias, eps

    def layernorm_fwd():
        g = new_graph(BF16); x, scale, bias, eps = norm_inputs(g)
        y, mean, inv = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING,
                                   input=x, scale=scale, bias=bias, epsilon=eps)
        y.set_output(True).set_data_type(BF16)
        mean.set_output(True).set_data_type(FLOAT); inv.set_output(True).set_data_type(FLOAT)
        return g

    def rmsnorm_fwd():
        g = new_graph(BF16); x, scale, _, eps = norm_inputs(g)
        y, inv = g.rmsnorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING,
                           input=x, scale=scale, epsilon=eps)
        y.set_output(True).set_data_type(BF16); inv.set_output(True).set_data_type(FLOAT)
        return g

    def layernorm_bwd():
        g = new_graph(BF16); x, scale, _, _ = norm_inputs(g)
        dy = packed(g, [ROWS, COLS, 1, 1], BF16, "dy")
        mean = packed(g, [ROWS, 1, 1, 1], FLOAT, "mean")
        inv = packed(g, [ROWS, 1, 1, 1], FLOAT, "inv")
        dx, dscale, dbias = g.layernorm_backward(grad=dy, input=x, scale=scale, mean=mean,
                                                 inv_variance=inv)
        dx.set_output(True).set_data_type(BF16)
        dscale.set_output(True).set_data_type(FLOAT); dbias.set_output(True).set_data_type(FLOAT)
        return g

    def rmsnorm_bwd():
        g = new_graph(BF16); x, scale, _, _ = norm_inputs(g)
        dy = packed(g, [ROWS, COLS, 1, 1], BF16, "dy")
        inv = packed(g, [ROWS, 1, 1, 1], FLOAT, "inv")
        dx, dscale, dbias = g.rmsnorm_backward(grad=dy, input=x, scale=scale, inv_variance=inv,
                                               has_dbias=False)
        dx.set_output(True).set_data_type(BF16); dscale.set_output(True).set_data_type(FLOAT)
        return g

    def batchnorm_train():
        g = new_graph()
        x = nhwc(g, 8, 64, 56, 56, name="x")
        pc = [nhwc(g, 1, 64, 1, 1, FLOAT, n) for n in ("scale", "bias", "rm", "rv")]
        eps = g.tensor(name="eps", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=FLOAT,
                       is_pass_by_value=True)
        mom = g.tensor(name="mom", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=FLOAT,
                       is_pass_by_value=True)
        y, mean, inv, nrm, nrv = g.batchnorm(input=x, scale=pc[0], bias=pc[1], in_running_mean=pc[2],
                                             in_running_var=pc[3], epsilon=eps, momentum=mom)
        y.set_output(True).set_data_type(HALF)
        for t in (mean, inv, nrm, nrv):
            t.set_output(True).set_data_type(FLOAT)
        return g

    def conv_genstats():
        g = new_graph()
        x = nhwc(g, 8, 64, 56, 56, name="x"); w = nhwc(g, 64, 64, 3, 3, name="w")
        y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        y.set_output(True).set_data_type(HALF)
        s, sq = g.genstats(input=y)
        s.set_output(True).set_data_type(FLOAT); sq.set_output(True).set_data_type(FLOAT)
        return g

    def slice_matmul():
        g = new_graph(BF16)
        a = packed(g, [16, 64, 128], BF16, "a"); b = packed(g, [16, 128, 64], BF16, "b")
        a_s = g.slice(a, [slice(0, 16), slice(8, 40), slice(0, 128)])
        y = g.relu(g.matmul(a_s, b)); y.set_output(True).set_data_type(FLOAT)
        return g

    def rope_sdpa():
        g = new_graph(BF16)
        q, k, v = (bshd(g, n) for n in "qkv")
        freqs = packed(g, [S, 1, 1, D], FLOAT, "freqs")
        q_rot, k_rot = g.rope(input=q, freqs=freqs), g.rope(input=k, freqs=freqs)
        for t in (q_rot, k_rot):
            t.set_output(True).set_data_type(BF16).set_dim([B, H, S, D]).set_stride([S * H * D, D, H * D, 1])
        o, stats = g.sdpa(q=q_rot, k=k_rot, v=v, generate_stats=True, attn_scale=D ** -0.5,
                          use_causal_mask=True)
        o.set_output(True).set_dim([B, H, S, D]).set_stride([S * H * D, D, H * D, 1])
        stats.set_output(True).set_data_type(FLOAT)
        return g

    def moe_grouped_matmul():
        g = new_graph(BF16)
        t = packed(g, [1, 2048, 1024], BF16, "token"); w = packed(g, [8, 1024, 512], BF16, "weight")
        f = packed(g, [8, 1, 1], INT32, "first_token_offset")
        y = g.moe_grouped_matmul(t, w, f); y.set_output(True).set_data_type(BF16)
        return g

    def missing(reason):
        def graph():
            raise NotImplementedError(reason)
        return graph

    GRAPHS = {
        "conv_fprop_bias_relu": conv_fprop_bias_relu, "conv_dgrad": conv_dgrad,
        "conv_wgrad": conv_wgrad, "matmul_bf16_4096": matmul_bf16_4096,
        "matmul_bias_gelu": matmul_bias_gelu, "sdpa_fwd_causal": sdpa_fwd_causal,
        "sdpa_bwd_causal": sdpa_bwd_causal, "layernorm_fwd": layernorm_fwd,
        "layernorm_bwd": layernorm_bwd, "rmsnorm_fwd": rmsnorm_fwd, "rmsnorm_bwd": rmsnorm_bwd,
        "batchnorm_train": batchnorm_train, "conv_genstats": conv_genstats,
        "maxpool": missing("the frontend's Python API has no resample (pooling) method"),
        "slice_matmul": slice_matmul,
        "rope_sdpa": rope_sdpa,
        "moe_grouped_matmul": moe_grouped_matmul,
    }

    def build(name):
        g = GRAPHS[name]()
        g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        return g

    def heuristics(name):
        g = GRAPHS[name]()
        g.validate(); g.build_operation_graph(); g.create_execution_plans([cudnn.heur_mode.A])
        return g

    def engine_of(g):
        """The engine of the plan build() chose (the frontend ranks one list of configs and
        builds the first that finalizes; _plan_index is where that walk stopped)."""
        return int(g.get_engine_and_knobs_at_index(getattr(g, "_plan_index", 0))[0])

    def heur_engines(g):
        return [int(g.get_engine_and_knobs_at_index(i)[0]) for i in range(g.get_execution_plan_count())]

    out = {"version": getattr(cudnn, "__version__", "?"), "import_ms": import_s * 1e3,
           "cudnn_backend_version": cudnn.backend_version(), "graphs": {}}
    if args.get("cold"):
        t = time.perf_counter(); g = build(args["cold"])
        out["first_plan_ms"] = (time.perf_counter() - t0) * 1e3
        print(json.dumps(out)); sys.exit(0)
    if args.get("disk"):  # {"graph", "path"}: the plan serialized there, or stored first
        path = args["disk"]["path"]
        try:
            data = open(path, "rb").read()
        except FileNotFoundError:
            open(path, "wb").write(build(args["disk"]["graph"]).serialize(as_bytes=True))
            print(json.dumps(out)); sys.exit(0)
        new_graph().deserialize(data)  # the frontend's plan needs no described graph
        out["first_plan_ms"] = (time.perf_counter() - t0) * 1e3
        print(json.dumps(out)); sys.exit(0)
    for name in args["graphs"]:
        entry = {}
        try:
            g = build(name)
        except NotImplementedError as exc:  # the frontend cannot express the graph
            out["graphs"][name] = {"absent": str(exc)}
            continue
        except Exception as exc:
            out["graphs"][name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"}
            continue
        entry["engine"] = engine_of(g)
        samples = []
        for _ in range(args["repeats"]):
            t = time.perf_counter(); build(name); samples.append(time.perf_counter() - t)
        entry["build_samples_ms"] = [t * 1e3 for t in samples]
        h = heuristics(name)
        entry["heuristics_a_configs"] = heur_engines(h)
        samples = []
        for _ in range(args["repeats"]):
            t = time.perf_counter(); heuristics(name); samples.append(time.perf_counter() - t)
        entry["heuristics_samples_ms"] = [t * 1e3 for t in samples]
        out["graphs"][name] = entry
    print(json.dumps(out))
    '''
)


def frontend_python(given: str | None) -> str | None:
    """The interpreter to run the frontend with: ``given``, else this one when it can import
    ``cudnn`` (the frontend), else None (reported absent)."""
    if given:
        return given
    try:
        import importlib.util

        return sys.executable if importlib.util.find_spec("cudnn") is not None else None
    except (ImportError, ValueError):
        return None


def bench_frontend(python: str, names: list[str], repeats: int) -> dict[str, Any]:
    """Run the frontend child: its warm figures for ``names``."""
    argv = [python, "-c", FRONTEND_CHILD, json.dumps(_frontend_args(names, repeats))]
    out = _run_child(argv, _frontend_env())
    if "error" in out:
        return {"absent": f"the frontend at {python} failed: {out['error']}"}
    out["python"] = python
    return out


# --------------------------------------------------------------------------------------------------
# Machine, table, plot
# --------------------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy

    import pycudnn
    from _nvbind.cuda import driver_status

    st = driver_status()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "pycudnn": getattr(pycudnn, "__version__", "?"),
        "cudnn": ".".join(map(str, pycudnn.version_tuple())),
        "driver": st.driver_version_text,
        "gpu": st.devices[0]["name"] if st.devices else f"none ({st.reason})",
        "target": "H100 SXM 80GB device properties (deviceless)",
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if value < 10 else f"{value:.0f}"
    return str(value)


def _ratio(ours: Any, theirs: Any) -> str:
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and theirs > 0:
        return f"{ours / theirs:.2f}x"
    return "-"


def table(result: dict[str, Any]) -> str:
    """The Markdown table of the warm figures and engines, and a line per other figure."""
    fe = result["frontend"]
    fe_graphs = fe.get("graphs", {}) if "absent" not in fe else {}
    rows = [
        "| graph | build ms: frontend | pycudnn | ratio | heuristics A ms: frontend | pycudnn "
        "| engine: frontend | pycudnn |",
        "|---|---|---|---|---|---|---|---|",
    ]
    # In the order of GRAPHS (a JSON file read back has its keys sorted).
    for name in sorted(result["pycudnn"], key=lambda n: list(GRAPHS).index(n)):
        ours, theirs = result["pycudnn"][name], fe_graphs.get(name, {})
        if "error" in ours:
            ours_cells = ["cannot plan", "-", "-", "-"]
        else:
            ours_cells = [
                _fmt(ours["build_ms"]),
                _ratio(ours["build_ms"], theirs.get("build_ms")),
                "",
                _fmt(ours["heuristics_ms"]),
            ]
        # A graph the frontend's API cannot express is absent, one it fails to plan "cannot plan".
        fe_build = _fmt(theirs.get("build_ms"))
        if "absent" in theirs or "error" in theirs:
            fe_build = "absent" if "absent" in theirs else "cannot plan"
        row = [
            name,
            fe_build if fe_graphs else "absent",
            ours_cells[0],
            ours_cells[1],
            _fmt(theirs.get("heuristics_ms")),
            ours_cells[3],
            _fmt(theirs.get("engine")),
            _fmt(ours.get("engine")),
        ]
        rows.append("| " + " | ".join(row) + " |")
    lines = ["\n".join(rows), ""]
    for name, theirs in fe_graphs.items():
        if "absent" in theirs:
            lines.append(f"- {name}, absent from the frontend: {theirs['absent']}")
    cold = result.get("cold", {})
    for name in COLD_GRAPHS:
        if name in cold and "error" not in cold[name]:
            theirs = fe.get("cold", {}).get(name, {}) if "absent" not in fe else {}
            lines.append(
                f"- new process to its first plan, import included, {name}: pycudnn "
                f"{_fmt(cold[name]['first_plan_ms'])} ms, frontend "
                f"{_fmt(theirs.get('first_plan_ms'))} ms "
                f"({_ratio(cold[name]['first_plan_ms'], theirs.get('first_plan_ms'))})"
            )
    mem = result.get("cache_memory", {})
    if mem:
        lines.append(
            f"- plan-cache hit in memory ({mem['graph']}): {mem['same_graph_ms']} ms for the same "
            f"graph object, {mem['new_graph_object_ms']} ms for a new one describing the same graph"
        )
    disk = cold.get("from_disk", {})
    if disk and "error" not in disk:
        lines.append(
            f"- a new process's first plan from a cache directory ({disk['graph']}, import "
            f"included): {_fmt(disk['first_plan_ms'])} ms, of which import "
            f"{_fmt(disk['import_ms'])} ms and loading libcudnn {_fmt(disk['libcudnn_load_ms'])} "
            f"ms; a second hit from disk in that process (a new cache object) "
            f"{_fmt(disk.get('second_disk_hit_ms'))} ms, the rest of the first being cuDNN's "
            f"initialisation on first use, which a first build pays alike (disk hits: "
            f"{disk['disk_hits']})"
        )
        theirs = fe.get("cold", {}).get("from_disk", {}) if "absent" not in fe else {}
        if theirs.get("first_plan_ms") is not None:
            lines.append(
                f"- the same, cudnn-frontend deserializing its own serialized plan into a new "
                f"graph (import included): {_fmt(theirs['first_plan_ms'])} ms "
                f"({_ratio(disk['first_plan_ms'], theirs['first_plan_ms'])})"
            )
    bullets = [
        textwrap.fill(line, width=100, subsequent_indent="  ", break_on_hyphens=False)
        for line in lines[2:]
    ]
    return "\n".join(lines[:2] + bullets) + "\n"


def plot(result: dict[str, Any], path: Path) -> bool:
    """A bar chart of the warm build times, both libraries, log scale; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [n for n in GRAPHS if "build_ms" in result["pycudnn"].get(n, {})]  # GRAPHS' order
    fe = result["frontend"].get("graphs", {})
    ours = [result["pycudnn"][n]["build_ms"] for n in names]
    theirs = [fe.get(n, {}).get("build_ms", 0) or 0 for n in names]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], theirs, width=0.4, label="cudnn-frontend")
    ax.bar([x + 0.2 for x in xs], ours, width=0.4, label="pycudnn")
    ax.set_xticks(list(xs), names, rotation=60, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("describe + build, warm median (ms)")
    ax.set_title(f"Deviceless H100 plans, cuDNN {result['machine']['cudnn']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_docs(result: dict[str, Any], doc: Path = DOC) -> None:
    """Replace (or append) the planning-speed section of ``doc`` with this run's table."""
    m = result["machine"]
    fe = result["frontend"]
    fe_text = f"cudnn-frontend {fe['version']}" if "absent" not in fe else "cudnn-frontend absent"
    intro = textwrap.fill(
        "`python scripts/bench_planning.py --frontend-python PATH --out docs/benchmarks --plot "
        "--write-docs` (the run's JSON and plot: `docs/benchmarks/bench_planning.{json,png}`): "
        "each graph described and built (heuristics A then FALLBACK, no plan cache) for the "
        "committed H100 properties without a GPU, median of "
        f"{result['repeats']} after a warm-up, taken in {result.get('rounds', 1)} rounds in "
        "which the two libraries take turns; the heuristics column describes the graph and "
        "queries mode A. Run "
        f"{m['date']}, {m['cpu']} ({m['cpus']} CPUs, load average {m['load_average'][0]} when "
        "it started; a shared machine), Python "
        f"{m['python']}, cuDNN {m['cudnn']}, {fe_text}. No figure here is asserted by a test.",
        width=100,
        break_on_hyphens=False,
    )
    body = f"{SECTION}\n\n{intro}\n\n" + table(result)
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if SECTION in text:
        start = text.index(SECTION)
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + body + (text[nxt + 1 :] if nxt != -1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    doc.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="two graphs, one run each (CI)")
    ap.add_argument("--graphs", help="comma-separated graph names (default: all)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="the libraries take turns this many times, each round a new process of each; "
        "--repeats samples are split among them",
    )
    ap.add_argument("--cold-runs", type=int, default=7)
    ap.add_argument(
        "--warm-only",
        action="store_true",
        help="only the warm figures: no new processes, no plan-cache figures",
    )
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument(
        "--frontend-python", help="the interpreter of an environment with cudnn-frontend"
    )
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--write-docs", action="store_true", help=f"write the table into {DOC.name}")
    ap.add_argument("--list", action="store_true", help="list the graphs and exit")
    ap.add_argument("--pycudnn-round", help=argparse.SUPPRESS)  # a round's child: JSON in, out
    args = ap.parse_args(argv)
    if args.pycudnn_round:
        asked = json.loads(args.pycudnn_round)
        print(json.dumps(bench_pycudnn(asked["graphs"], asked["repeats"])))
        return 0
    if args.list:
        print("\n".join(GRAPHS))
        return 0
    if args.graphs:
        names = [n.strip() for n in args.graphs.split(",") if n.strip()]
        unknown = [n for n in names if n not in GRAPHS]
        if unknown:
            ap.error(f"unknown graph(s) {', '.join(unknown)}; --list names them")
    else:
        names = list(QUICK_GRAPHS if args.quick else GRAPHS)
    repeats, runs = (1, 1) if args.quick else (args.repeats, args.cold_runs)
    if repeats < 1 or runs < 1 or args.rounds < 1:
        ap.error("--repeats, --rounds and --cold-runs must be at least 1")
    cold = [n for n in COLD_GRAPHS if n in names][: 1 if args.quick else None] or names[:1]
    rounds = 1 if args.quick else args.rounds
    result: dict[str, Any] = {
        "machine": machine(), "repeats": repeats, "rounds": rounds, "quick": args.quick
    }  # fmt: skip
    python = frontend_python(args.frontend_python)
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    # The machine's speed drifts over seconds, and a process's own state moves its figures too
    # (the same query's median moved by a third from one process to the next here): the two
    # libraries take turns, a new process of each a round, the first to go alternating, and
    # each figure is the median of all its rounds' samples.
    for r in range(rounds):
        per_round = -(-repeats // rounds)
        for library in ("pycudnn", "frontend")[:: 1 if r % 2 == 0 else -1]:
            if library == "pycudnn":  # in a process of its own each round, as the frontend
                ours.append(bench_pycudnn_child(names, per_round))
            elif python is not None:
                theirs.append(bench_frontend(python, names, per_round))
                if "absent" in theirs[-1]:
                    python = None  # no more rounds, nor cold figures, from a frontend that fails
    result["pycudnn"] = _pooled(ours)
    if theirs and "absent" not in theirs[-1]:
        result["frontend"] = {**theirs[0], "graphs": _pooled([t["graphs"] for t in theirs])}
    elif theirs:
        result["frontend"] = theirs[-1]
    else:
        result["frontend"] = {"absent": "cudnn-frontend is not installed here (--frontend-python)"}
    if args.warm_only:  # for comparing two checkouts quickly, run after run
        result["cache_memory"], result["cold"] = {}, {}
    else:
        result["cache_memory"] = bench_cache_memory(repeats)
        result["cold"], frontend_cold = bench_cold(cold, runs, python)
        if python is not None:
            result["frontend"]["cold"] = frontend_cold
    fe = result["frontend"].get("graphs", {})
    result["engines_differ"] = sorted(
        n
        for n, e in result["pycudnn"].items()
        if "engine" in e and fe.get(n, {}).get("engine") not in (None, e["engine"])
    )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench_planning.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(table(result))
    print(f"wrote {path}")
    if args.plot:
        png = args.out / "bench_planning.png"
        print(f"wrote {png}" if plot(result, png) else "no plot: matplotlib is not installed")
    if args.write_docs:
        write_docs(result)
        print(f"wrote the table into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
