"""Leaks, threads and faults for ``scripts/reliability.py``: what each worker process runs.

Each function here runs inside a child process started by ``reliability.py`` and prints one JSON
line with its figures; a crash or a hang of the child is counted by the parent.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import reliability_fuzz as fuzz

REPO = fuzz.REPO


# -- leaks -------------------------------------------------------------------------------------------
def rss_mib() -> float:
    """Resident memory now (not the peak): /proc/self/statm's second field."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def open_c_objects() -> int:
    """C objects owned by live wrappers (``CResource`` instances not closed)."""
    from _nvbind.resource import CResource

    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, CResource) and not o.closed)


def _leak_cycle(kind: str) -> Callable[[], None]:
    """One create/destroy cycle of ``kind`` (set-up that is not part of the cycle happens here)."""
    import pycudnn
    from pycudnn.backend import BackendDescriptor
    from pycudnn.plan import PlanCache
    from pycudnn.plan.building import _finalize_plan
    from pycudnn.plan.targets import _target

    props = pycudnn.DeviceProperties.from_json(json.loads(fuzz.PROPS_FILE.read_text()))
    if kind == "tensor_descriptor":
        return lambda: pycudnn.TensorDescriptor([2, 3, 4, 5], fmt="NHWC").close()
    if kind == "filter_descriptor":
        return lambda: pycudnn.FilterDescriptor([8, 3, 3, 3], "float16", "NHWC").close()
    if kind == "convolution_descriptor":
        return lambda: pycudnn.ConvolutionDescriptor([1, 1], [1, 1], [1, 1]).close()

    def backend() -> None:
        with BackendDescriptor("TENSOR") as t:
            t.set("TENSOR_DATA_TYPE", "FLOAT")
            t.set("TENSOR_DIMENSIONS", [1, 8, 4])
            t.set("TENSOR_STRIDES", [32, 4, 1])
            t.set("TENSOR_UNIQUE_ID", 1)
            t.set("TENSOR_BYTE_ALIGNMENT", 16)
            t.finalize()

    if kind == "backend_descriptor":
        return backend
    if kind == "graph":  # the graph with its backend descriptors (tensors, operations, graph)

        def graph() -> None:
            g = fuzz.conv_graph()
            g.finalize(None)
            g.close()

        return graph
    target = _target(props, None)
    if kind == "plan":  # an execution plan from an engine config, for the H100 properties
        g = fuzz.conv_graph()
        cfg = g.engine_configs(device_properties=props)[0]
        return lambda: _finalize_plan(cfg, target, g).close()
    if kind == "plan_with_heuristics":  # graph, heuristics, plan: everything build() makes
        return lambda: fuzz.conv_graph().build(device_properties=props, cache=False).close()
    text = fuzz.conv_graph().build(device_properties=props, cache=False).to_json()
    if kind == "deviceless_plan_from_json":
        return lambda: pycudnn.Plan.from_json(text, device_properties=props).close()
    if kind == "device_properties":

        def deviceprops() -> None:
            p = pycudnn.DeviceProperties.from_json(props.as_dict())
            p.descriptor  # noqa: B018 - finalizes the DEVICEPROP descriptor
            p.close()

        return deviceprops
    if kind == "plan_cache_round_trip":  # save a plan (atomic write), load it in a fresh cache
        directory = Path(tempfile.mkdtemp(prefix="pycudnn-leak-"))
        g = fuzz.conv_graph()
        first = g.build(device_properties=props, cache=PlanCache(directory))
        (path,) = directory.glob("*.json")

        def round_trip() -> None:
            PlanCache(directory)._store(path.stem, first, target)
            pc = PlanCache(directory)
            plan = g.build(device_properties=props, cache=pc)
            assert pc.stats["disk_hits"] == 1, pc.stats
            plan.close()

        return round_trip
    if kind in ("cutensor_descriptor", "cutensor_plan"):
        import pycutensor

        h = pycutensor.get_handle()
        if kind == "cutensor_descriptor":
            return lambda: pycutensor.TensorDescriptor(h, (8, 16, 4)).close()

        def cutensor_plan() -> None:
            a = pycutensor.TensorDescriptor(h, (8, 16))
            b = pycutensor.TensorDescriptor(h, (16, 4))
            c = pycutensor.TensorDescriptor(h, (8, 4))
            with pycutensor.Contraction(a, "ik", b, "kj", c, "ij") as op, pycutensor.Plan(op):
                pass
            for d in (a, b, c):
                d.close()

        return cutensor_plan
    if kind in ("matmul_build", "matmul_build_raw", "matmul_cached_build"):
        return _matmul_cycle(kind, props)
    raise ValueError(f"no leak cycle {kind!r}")


def _matmul() -> Any:
    """A plain fp16 matmul: cuDNN has only runtime-compiled engines for it (4 and 7 in 9.28, 7 in
    9.19), so every plan finalize compiles kernels, unlike the conv graph above (precompiled)."""
    import pycudnn

    g = pycudnn.Graph("matmul")
    a = g.tensor([1, 64, 32], dtype="float16", name="a")
    b = g.tensor([1, 32, 48], dtype="float16", name="b")
    g.matmul(a, b)
    return g


def _matmul_cycle(kind: str, props: Any) -> Callable[[], None]:
    if kind == "matmul_build":  # graph, heuristics, plan (compiled), everything closed
        return lambda: _matmul().build(device_properties=props, cache=False).close()
    if kind == "matmul_cached_build":
        # A fresh graph each time, built through one cache and closed (`with g.build() as p:` in a
        # loop): one compilation in all; a cache that lost its plan on close compiled every time.
        from pycudnn.plan import PlanCache

        pc = PlanCache()
        return lambda: _matmul().build(device_properties=props, cache=pc).close()
    # matmul_build_raw: the same op graph, engine and knobs as matmul_build picks, through the C
    # API alone with every descriptor destroyed: what cuDNN itself keeps per compiled plan.
    plan = _matmul().build(device_properties=props, cache=False)
    engine, knobs = plan.engine_id, plan.knobs
    plan.close()
    return functools.partial(_raw_matmul_plan, props, engine, knobs)


def _raw_matmul_plan(props: Any, engine: int, knobs: dict[str, int]) -> None:
    """TENSOR x3, MATMUL, OPERATION_MATMUL, OPERATIONGRAPH, ENGINE, KNOB_CHOICEs, ENGINECFG and an
    EXECUTION_PLAN with DEVICEPROP, finalized and destroyed: no pycudnn object in between."""
    import ctypes

    from pycudnn import raw
    from pycudnn._lib import LIB

    create = LIB.function("cudnnBackendCreateDescriptor")
    destroy = LIB.function("cudnnBackendDestroyDescriptor")
    set_attr = LIB.function("cudnnBackendSetAttribute")
    finalize = LIB.function("cudnnBackendFinalize")
    made: list[ctypes.c_void_p] = []

    def new(kind: str, attrs: list[tuple[str, str, list[Any]]]) -> ctypes.c_void_p:
        d = ctypes.c_void_p()
        assert create(getattr(raw, f"CUDNN_BACKEND_{kind}_DESCRIPTOR"), ctypes.byref(d)) == 0
        made.append(d)
        for attr, typ, vals in attrs:
            ctype = {"BACKEND_DESCRIPTOR": ctypes.c_void_p, "DATA_TYPE": ctypes.c_int,
                     "KNOB_TYPE": ctypes.c_int}.get(typ, ctypes.c_int64)  # fmt: skip
            arr = (ctype * len(vals))(
                *[v.value if isinstance(v, ctypes.c_void_p) else v for v in vals]
            )
            status = set_attr(d, getattr(raw, "CUDNN_ATTR_" + attr),
                              getattr(raw, "CUDNN_TYPE_" + typ), len(vals), arr)  # fmt: skip
            assert status == 0, (kind, attr, status)
        assert finalize(d) == 0, kind
        return d

    try:
        half = raw.CUDNN_DATA_HALF
        t = [new("TENSOR", [("TENSOR_UNIQUE_ID", "INT64", [uid]),
                            ("TENSOR_DATA_TYPE", "DATA_TYPE", [half]),
                            ("TENSOR_BYTE_ALIGNMENT", "INT64", [16]),
                            ("TENSOR_DIMENSIONS", "INT64", dims),
                            ("TENSOR_STRIDES", "INT64", [dims[1] * dims[2], dims[2], 1])])
             for uid, dims in ((1, [1, 64, 32]), (2, [1, 32, 48]), (3, [1, 64, 48]))]  # fmt: skip
        mm = new("MATMUL", [("MATMUL_COMP_TYPE", "DATA_TYPE", [raw.CUDNN_DATA_FLOAT])])
        op = new("OPERATION_MATMUL", [("OPERATION_MATMUL_ADESC", "BACKEND_DESCRIPTOR", [t[0]]),
                                      ("OPERATION_MATMUL_BDESC", "BACKEND_DESCRIPTOR", [t[1]]),
                                      ("OPERATION_MATMUL_CDESC", "BACKEND_DESCRIPTOR", [t[2]]),
                                      ("OPERATION_MATMUL_DESC", "BACKEND_DESCRIPTOR", [mm])])  # fmt: skip
        graph = new("OPERATIONGRAPH", [("OPERATIONGRAPH_OPS", "BACKEND_DESCRIPTOR", [op])])
        dp = ctypes.c_void_p(props.descriptor._as_parameter_.value)  # finalized once, shared
        eng = new("ENGINE", [("ENGINE_OPERATION_GRAPH", "BACKEND_DESCRIPTOR", [graph]),
                             ("ENGINE_GLOBAL_INDEX", "INT64", [engine]),
                             ("ENGINE_DEVICEPROP", "BACKEND_DESCRIPTOR", [dp])])  # fmt: skip
        choices = [new("KNOB_CHOICE", [("KNOB_CHOICE_KNOB_TYPE", "KNOB_TYPE",
                                        [getattr(raw, "CUDNN_KNOB_TYPE_" + name)]),
                                       ("KNOB_CHOICE_KNOB_VALUE", "INT64", [value])])
                   for name, value in knobs.items()]  # fmt: skip
        cfg_attrs = [("ENGINECFG_ENGINE", "BACKEND_DESCRIPTOR", [eng])]
        if choices:
            cfg_attrs.append(("ENGINECFG_KNOB_CHOICES", "BACKEND_DESCRIPTOR", choices))
        cfg = new("ENGINECFG", cfg_attrs)
        new("EXECUTION_PLAN", [("EXECUTION_PLAN_ENGINE_CONFIG", "BACKEND_DESCRIPTOR", [cfg]),
                               ("EXECUTION_PLAN_DEVICEPROP", "BACKEND_DESCRIPTOR", [dp])])  # fmt: skip
    finally:
        for d in reversed(made):
            assert destroy(d) == 0


#: The slow kinds first, so that two workers finish together.
LEAK_KINDS = ("deviceless_plan_from_json", "plan_with_heuristics", "graph", "plan_cache_round_trip",
              "device_properties", "plan", "backend_descriptor", "tensor_descriptor",
              "filter_descriptor", "convolution_descriptor", "cutensor_descriptor",
              "cutensor_plan", "matmul_build", "matmul_build_raw", "matmul_cached_build")  # fmt: skip
#: Cycles are divided by this for the slow kinds (heuristics take ~40 ms a graph on this CPU; a
#: runtime-compiled matmul plan ~0.5 s).
LEAK_DIVISORS = {"plan_with_heuristics": 50, "matmul_build": 200, "matmul_build_raw": 200,
                 "matmul_cached_build": 50}  # fmt: skip
#: Kinds whose growth is (partly) cuDNN's, and the raw C sequence that measures cuDNN's part: the
#: library is judged on the difference. Measured (docs/reliability.md): finalizing a plan for a
#: runtime-compiled engine keeps ~210 KiB in cuDNN 9.19 and 9.28 after every descriptor is destroyed.
CUDNN_BASELINES = {"matmul_build": "matmul_build_raw"}
#: Kinds that measure cuDNN alone (reported, never counted against the library).
CUDNN_ONLY = ("matmul_build_raw",)
#: Kinds whose Python heap is traced (``tracemalloc``) over the measured cycles: the baseline kinds,
#: whose RSS difference from their raw twin is too noisy to judge (see ``leak``'s caller).
HEAP_JUDGED = tuple(CUDNN_BASELINES)
GPU_ONLY = ("cutensor_descriptor", "cutensor_plan")


def leak(kind: str, cycles: int) -> dict[str, Any]:
    """RSS and open C objects before and after ``cycles`` cycles, after a warm-up of a tenth (at
    least 20, at most 1,000) so that one-time allocations (library state, caches) are not counted.
    At least 20: on cuDNN 9.12 a matmul build's process grows 4 MiB once, between the 5th and the
    20th build, and not after (measured: 50 and 200 builds after 20 grow nothing)."""
    fuzz.quiet()
    cycle = _leak_cycle(kind)
    for _ in range(min(1000, max(20, cycles // 10))):
        cycle()
    heap = kind in HEAP_JUDGED
    if heap:
        tracemalloc.start()
    gc.collect()
    before, open_before, t0 = rss_mib(), open_c_objects(), time.monotonic()
    heap_before = tracemalloc.get_traced_memory()[0] if heap else 0
    for _ in range(cycles):
        cycle()
    gc.collect()
    after, open_after = rss_mib(), open_c_objects()
    figures = {
        "cycles": cycles, "rss_before_mib": round(before, 2), "rss_after_mib": round(after, 2),
        "growth_mib": round(after - before, 2), "open_before": open_before,
        "open_after": open_after, "seconds": round(time.monotonic() - t0, 1),
    }  # fmt: skip
    if heap:
        figures["heap_growth_kib"] = round(
            (tracemalloc.get_traced_memory()[0] - heap_before) / 1024, 1
        )
        tracemalloc.stop()
    return figures


# -- threads -----------------------------------------------------------------------------------------
def threads(nthreads: int, iters: int) -> dict[str, Any]:
    """``nthreads`` threads build graphs and plans through one shared on-disk PlanCache, check that
    each plan is for their own graph (tensors and JSON), use their own handle and, on a GPU,
    execute and compare with NumPy."""
    fuzz.quiet()
    import pycudnn
    from _nvbind.cuda import driver_status
    from pycudnn.plan import PlanCache
    from pycudnn.plan.serialization import _check_json_matches_graph

    gpu = driver_status().usable
    props = (
        None if gpu else pycudnn.DeviceProperties.from_json(json.loads(fuzz.PROPS_FILE.read_text()))
    )
    directory = Path(tempfile.mkdtemp(prefix="pycudnn-threads-"))
    cache = PlanCache(directory, max_size=16)
    errors: list[str] = []
    wrong = [0]
    lock = threading.Lock()

    def graph(variant: int) -> Any:  # 6 shapes: threads share some keys, not all
        g = pycudnn.Graph(f"v{variant}")
        x = g.tensor([2, 8 * (1 + variant % 3), 16 * (1 + variant // 3)], dtype="float32", name="x")
        g.mul(g.sigmoid(x), g.scalar(2.0, rank=3))
        return g

    def work(tid: int) -> None:
        handles = set()
        for i in range(iters):
            try:
                g = graph((tid + i) % 6)
                plan = g.build(device_properties=props, cache=cache)
                own = {t.uid for t in g.tensors if not t.is_virtual}
                if plan.graph is not g or set(plan.uids) != own:
                    with lock:
                        wrong[0] += 1
                if i % 10 == 0:
                    _check_json_matches_graph(json.loads(plan.to_json()), g)
                if gpu:
                    handles.add(id(pycudnn.get_handle()))
                    x = np.random.default_rng(i).standard_normal(g["x"].dims, dtype=np.float32)
                    xd = pycudnn.DeviceArray.from_numpy(x)
                    out = next(t for t in g.tensors if t.is_output)
                    yd = pycudnn.DeviceArray.empty(out.dims, np.float32)
                    plan.execute({g["x"]: xd, out: yd})
                    expected = 2.0 / (1.0 + np.exp(-x))
                    if not np.allclose(yd.to_numpy(), expected, rtol=1e-5, atol=1e-6):
                        with lock:
                            wrong[0] += 1
                g.close()
            except Exception as exc:
                with lock:
                    errors.append(f"thread {tid} iteration {i}: {type(exc).__name__}: {exc}")
        if len(handles) > 1:
            with lock:
                errors.append(f"thread {tid} saw {len(handles)} handles for one device")

    t0 = time.monotonic()
    workers = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stray = sorted(p.name for p in directory.iterdir() if not p.name.endswith(".json"))
    if stray:
        errors.append(f"files left in the plan cache: {stray}")
    shutil.rmtree(directory, ignore_errors=True)
    return {
        "threads": nthreads, "iterations": iters, "errors": len(errors),
        "wrong_results": wrong[0], "first_error": errors[0] if errors else None,
        "executed": gpu, "stats": cache.stats, "seconds": round(time.monotonic() - t0, 1),
        "note": "" if gpu else " (CPU: planning only, no execution)",
    }  # fmt: skip


# -- faults ------------------------------------------------------------------------------------------
def _python(code: str, env: dict[str, str] | None = None, prefix: list[str] | None = None,
            **kw: Any) -> tuple[str, str]:  # fmt: skip
    """Run ``code`` in a fresh interpreter; (its result line, how it ended)."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    out = subprocess.run([*(prefix or []), sys.executable, "-c", code], capture_output=True,
                         text=True, env=full, timeout=300, check=False, **kw)  # fmt: skip
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), "")
    ended = f"exit status {out.returncode}" if out.returncode >= 0 else f"signal {-out.returncode}"
    return line.removeprefix("RESULT "), f"{ended}: {out.stderr.strip()[-300:]}"


_CATCH = """
import logging, warnings; warnings.simplefilter("ignore")
import pycudnn
try:
    {body}
    print("RESULT no error")
except Exception as exc:
    print("RESULT", type(exc).__name__ + ":", str(exc).replace("\\n", " "))
"""


def _expect(result: tuple[str, str], error: str, fragment: str) -> dict[str, Any]:
    line, ended = result
    ok = line.startswith(error + ":") and fragment in line
    return {"ok": ok, "got": line or ended, "expected": f"{error} naming {fragment!r}"}


def _small_graph_build() -> str:
    return _CATCH.format(body=(
        f"p = pycudnn.DeviceProperties.load({str(fuzz.PROPS_FILE)!r})\n"
        "    g = pycudnn.Graph(); x = g.tensor([1, 8, 4], name='x'); g.relu(x)\n"
        "    g.build(device_properties=p, cache=False)"
    ))  # fmt: skip


def fault(name: str) -> dict[str, Any]:
    import pycudnn

    tmp = Path(tempfile.mkdtemp(prefix="pycudnn-fault-"))
    try:
        if name == "missing_library":
            code = _CATCH.format(body="pycudnn.version()")
            return _expect(_python(code, {"PYCUDNN_LIBRARY": str(tmp / "libcudnn.so.9")}),
                           "LibraryNotFoundError", "PYCUDNN_LIBRARY")  # fmt: skip
        if name == "wrong_major_version":
            cc = shutil.which("cc") or shutil.which("gcc")
            if cc is None:
                return {"not_run": "needs a C compiler to build a stand-in cuDNN 8 library"}
            src = tmp / "stub.c"
            src.write_text("unsigned long cudnnGetVersion(void) { return 8906; }\n")
            lib = tmp / "libcudnn.so.8"
            subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
            (tmp / "libcudnn_graph.so.9").write_bytes(b"")  # a complete-looking installation
            return _expect(_python(_CATCH.format(body="pycudnn.version()"), {"PYCUDNN_LIBRARY": str(lib)}),
                           "LibraryNotFoundError", "major version 9")  # fmt: skip
        if name in ("truncated_library", "library_without_sublibraries"):
            # The first half of libcudnn.so.9, or all of it alone in a directory (cuDNN 9's
            # libcudnn.so.9 is a dispatcher that loads its sublibraries from beside itself).
            lib = tmp / "libcudnn.so.9"
            data = Path(pycudnn.library_path()).read_bytes()
            lib.write_bytes(data[: len(data) // 2] if name == "truncated_library" else data)
            return _expect(_python(_CATCH.format(body="pycudnn.version()"), {"PYCUDNN_LIBRARY": str(lib)}),
                           "LibraryNotFoundError", "PYCUDNN_LIBRARY")  # fmt: skip
        if name == "no_driver_library":
            return _no_driver(tmp)
        if name == "no_gpu":
            code = _CATCH.format(body="pycudnn.get_handle()")
            return _expect(_python(code, {"CUDA_VISIBLE_DEVICES": ""}), "CudnnNotInitializedError",
                           "no usable CUDA device")  # fmt: skip
        if name in ("corrupt_plan_cache", "unreadable_plan_cache", "directory_in_plan_cache"):
            return _damaged_cache(name, tmp)
        if name == "full_disk_plan_cache":
            return _full_disk(tmp)
        if name == "device_out_of_memory":
            from _nvbind.cuda import driver_status

            if not driver_status().usable:
                return {"not_run": "needs a GPU"}
            code = _CATCH.format(
                body="from _nvbind.memory import workspace\n    workspace(2**56, device=0)"
            )
            line, ended = _python(code)
            ok = "OUT_OF_MEMORY" in line.upper().replace(" ", "_")
            return {"ok": ok, "got": line or ended, "expected": "an error naming out-of-memory"}
        raise ValueError(f"no fault scenario {name!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _no_driver(tmp: Path) -> dict[str, Any]:
    """libcuda.so.1 made unloadable for one child: an empty file bind-mounted over it, in a mount
    namespace of that child alone (needs root and ``unshare``)."""
    candidates = [
        Path(p) for p in ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1")
    ]
    found = next((p.resolve() for p in candidates if p.exists()), None)
    if found is None or os.geteuid() != 0 or shutil.which("unshare") is None:
        return {"not_run": f"needs root, unshare and a libcuda.so.1 to hide (found: {found})"}
    empty = tmp / "empty"
    empty.write_bytes(b"")
    child = tmp / "child.py"
    child.write_text(_small_graph_build())
    script = f"mount --bind {empty} {found} && exec {sys.executable} {child}"
    line, ended = _python_shell(script)
    return {"ok": line.startswith(("CudnnError", "Cudnn", "RuntimeError")) and "libcuda" in line,
            "got": line or ended, "expected": "an error naming libcuda.so.1"}  # fmt: skip


def _python_shell(script: str) -> tuple[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                         capture_output=True, text=True, env=env, timeout=300, check=False)  # fmt: skip
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), "")
    return line.removeprefix(
        "RESULT "
    ), f"exit status {out.returncode}: {out.stderr.strip()[-300:]}"


def _cache_child(directory: Path, extra: str = "") -> str:
    return f"""
import logging, warnings, sys, json; warnings.simplefilter("ignore")
sys.path.insert(0, {str(Path(__file__).parent)!r})
records = []
class H(logging.Handler):
    def emit(self, r): records.append(r.getMessage())
logging.getLogger("pycudnn").addHandler(H()); logging.getLogger("pycudnn").setLevel(logging.WARNING)
import pycudnn, reliability_fuzz as F
from pycudnn.plan import PlanCache
props = pycudnn.DeviceProperties.load({str(fuzz.PROPS_FILE)!r})
{extra}
pc = PlanCache({str(directory)!r})
try:
    plan = F.conv_graph().build(device_properties=props, cache=pc)
    print("RESULT", json.dumps({{"engine": plan.engine_id, "stats": pc.stats, "log": records}}))
except Exception as exc:
    print("RESULT", json.dumps({{"error": type(exc).__name__ + ": " + str(exc), "log": records}}))
"""


def _prime_cache(directory: Path) -> Path:
    line, ended = _python(_cache_child(directory))
    files = list(directory.glob("*.json"))
    if len(files) != 1:
        raise RuntimeError(f"priming the plan cache failed: {line or ended}")
    return files[0]


def _damaged_cache(name: str, tmp: Path) -> dict[str, Any]:
    directory = tmp / "plans"
    directory.mkdir()
    os.chmod(tmp, 0o755)
    path = _prime_cache(directory)
    if name == "corrupt_plan_cache":
        path.write_bytes(path.read_bytes()[:100] + b"\x00garbage")
        fragment = "unreadable"
    elif name == "directory_in_plan_cache":
        path.unlink()
        path.mkdir()
        fragment = "could not write"
    elif os.geteuid() != 0:
        path.chmod(0)
        fragment = "unreadable"
    else:  # root reads any file whatever its mode: a file whose read fails with EIO instead
        path.unlink()
        path.symlink_to("/proc/self/mem")
        fragment = "unreadable"
    line, ended = _python(_cache_child(directory))
    if not line:
        return {
            "ok": False,
            "got": ended,
            "expected": f"a rebuilt plan and a warning naming {fragment!r}",
        }
    got = json.loads(line)
    log = " | ".join(got.get("log", []))
    stray = sorted(p.name for p in directory.iterdir() if p.name != path.name)
    ok = (
        "engine" in got
        and got["stats"]["disk_errors"] >= 1
        and fragment in log
        and path.name in log
    )
    ok = ok and not stray
    return {"ok": ok, "got": (got.get("error") or log)[:300] + (f"; stray files {stray}" if stray else ""),
            "expected": f"a rebuilt plan and a warning naming the file and {fragment!r}"}  # fmt: skip


def _full_disk(tmp: Path) -> dict[str, Any]:
    """A tmpfs of 64 KiB, filled, as the plan cache: the plan is still returned, the store fails
    with a warning naming the cause, and neither the plan file nor a temporary file is left."""
    mount = tmp / "full"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                                           capture_output=True, check=False).returncode:  # fmt: skip
        return {"not_run": "needs root to mount a size-limited tmpfs"}
    try:
        with contextlib.suppress(OSError), open(mount / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        line, ended = _python(_cache_child(mount))
        if not line:
            return {
                "ok": False,
                "got": ended,
                "expected": "a plan and a warning naming the full disk",
            }
        got = json.loads(line)
        log = " | ".join(got.get("log", []))
        left = sorted(p.name for p in mount.iterdir() if p.name != "filler")
        ok = "engine" in got and "No space left on device" in log and not left
        return {"ok": ok, "got": (got.get("error") or log)[:300] + (f"; left {left}" if left else ""),
                "expected": "a plan, a warning naming 'No space left on device', no file left"}  # fmt: skip
    finally:
        subprocess.run(["umount", str(mount)], check=False)


FAULTS = ("missing_library", "wrong_major_version", "truncated_library",
          "library_without_sublibraries", "no_driver_library", "no_gpu",
          "corrupt_plan_cache", "unreadable_plan_cache", "directory_in_plan_cache",
          "full_disk_plan_cache", "device_out_of_memory")  # fmt: skip


def worker(args: list[str], fuzz_worker: Callable[..., None]) -> int:
    """The child side: ``fuzz TARGET SEED START STOP INCLUDE_KNOWN``, ``leak KIND CYCLES``,
    ``threads N ITERS`` or ``fault NAME``; prints its result."""
    kind, rest = args[0], args[1:]
    logging.disable(logging.CRITICAL)
    if kind == "fuzz":
        fuzz_worker(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), rest[4] == "1")
        return 0
    if kind == "leak":
        result = leak(rest[0], int(rest[1]))
    elif kind == "threads":
        result = threads(int(rest[0]), int(rest[1]))
    else:
        logging.disable(logging.NOTSET)
        result = fault(rest[0])
    print(json.dumps(result), flush=True)
    return 0
