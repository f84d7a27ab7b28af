"""The fuzz inputs of ``scripts/reliability.py``: one seeded generator per target.

Each generator takes a ``random.Random`` seeded from (seed, target, input number), so any input is
reproduced alone (``reliability.py --replay TARGET N``), and calls the library with it. A Python
exception of the kinds a caller is promised (``ValueError``, ``TypeError``, ``KeyError``,
``OSError``, the libraries' own errors) is an expected refusal; any other exception is counted as
unexpected (it names no argument and no rule); a crash or a hang is counted by the parent.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import random
import shutil
import tempfile
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
PROPS_FILE = REPO / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"

INTS = [0, 1, 2, 3, 4, 7, 8, 9, 16, 1000, -1, -2, 2**31 - 1, 2**31, 2**32 + 1, 2**62,
        2**63 - 1, 2**63, -(2**63), 2**64, 10**30]  # fmt: skip
DTYPES = ["float32", "float16", "bfloat16", "int8", "int32", "float64", "uint8", "int64", "bool",
          "float8_e4m3fn", "complex64", np.float32, "half"]  # fmt: skip
FORMATS = [None, "NCHW", "NHWC", "CHWN", "NCDHW", "NDHWC", "CDHWN", "NC/32HW32", "NC/4HW4", "BMN",
           "nchw", "NCHW ", "NCHW/"]  # fmt: skip
JSON_JUNK = [-1, 0, 1.5, 1e308, math.nan, math.inf, "", "x", "CUDNN_DATA_HALF", "1", "-1",
             "99999999999999999999", None, True, False, [], {}, {"a": 1}, "x" * 300]  # fmt: skip


class KnownOpen(Exception):
    """An input that reaches an open finding (listed in ``KNOWN``): not run unless asked."""


class SetupFailure(Exception):
    """The fixed plans the mutations start from could not be built (never an expected refusal)."""


class CacheFailure(Exception):
    """A plan cache let a damaged file stop a build (it must rebuild instead)."""


#: Open findings whose fix is pending elsewhere: inputs that reach them are not run (counted as
#: "known excluded") unless --include-known. Empty: the three found so far are fixed.
KNOWN: dict[str, tuple[str, ...]] = {}


def junk(rng: random.Random) -> Any:
    """Any Python value, of a type an API may or may not expect."""
    return rng.choice([
        None, True, False, 1.5, -0.0, math.nan, math.inf, "", "x", "NHWC", b"ab", [], {}, (),
        object(), np.int64(3), np.float32(2.5), 1j, rng.choice(INTS),
        [rng.choice(INTS)] * rng.randint(0, 10), "\u00e9" * 300,
    ])  # fmt: skip


def pick(rng: random.Random, good: list[Any], p: float = 0.85) -> Any:
    return rng.choice(good) if rng.random() < p else junk(rng)


def small(rng: random.Random) -> int:
    return rng.choice([1, 1, 1, 2, 2, 3, 4, 5, 8, 16, 32])


def dims(rng: random.Random, lo: int = 0, hi: int = 10) -> Any:
    if rng.random() < 0.1:
        return junk(rng)
    return [
        small(rng) if rng.random() < 0.93 else rng.choice(INTS) for _ in range(rng.randint(lo, hi))
    ]


class Context:
    """What every input of a worker shares: device properties, plans to mutate, a directory."""

    def __init__(self) -> None:
        import pycudnn

        self.props_data: dict[str, Any] = json.loads(PROPS_FILE.read_text())
        self.props = pycudnn.DeviceProperties.from_json(self.props_data)
        self.tmp = Path(tempfile.mkdtemp(prefix="pycudnn-reliability-"))
        self._bases: list[tuple[Callable[[], Any], str, str]] | None = None
        self.include_known = False

    def bases(self) -> list[tuple[Callable[[], Any], str, str]]:
        """(graph factory, plan JSON, plan-cache file name) for three graphs, built once."""
        if self._bases is None:
            from pycudnn.plan import PlanCache

            bases = []  # assigned when complete
            try:
                for i, factory in enumerate((conv_graph, matmul_graph, pointwise_graph)):
                    pc = PlanCache(self.tmp / f"base{i}")
                    plan = factory().build(device_properties=self.props, cache=pc)
                    (path,) = (self.tmp / f"base{i}").glob("*.json")
                    bases.append((factory, plan.to_json(), path.name))
            except Exception as exc:  # not a refusal of an input: counted as unexpected
                raise SetupFailure(f"building the base plans failed: {exc!r}") from None
            self._bases = bases
        return self._bases

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def conv_graph() -> Any:
    import pycudnn

    g = pycudnn.Graph("conv_bias_relu")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
    g.relu(g.add(g.conv_fprop(x, w, padding=1), b))
    return g


def matmul_graph() -> Any:
    import pycudnn

    g = pycudnn.Graph("matmul")
    a = g.tensor([2, 64, 32], dtype="float16", name="a")
    b = g.tensor([2, 32, 48], dtype="float16", name="b")
    g.gelu(g.matmul(a, b))
    return g


def pointwise_graph() -> Any:
    import pycudnn

    g = pycudnn.Graph("pointwise")
    x = g.tensor([4, 8, 16], dtype="float32", name="x")
    g.mul(g.sigmoid(x), g.scalar(2.0, rank=3))
    return g


# -- the targets -------------------------------------------------------------------------------------
def legacy(rng: random.Random, ctx: Context) -> None:
    import pycudnn

    k = rng.randrange(4)
    if k == 0:
        strides = None if rng.random() < 0.5 else dims(rng)
        pycudnn.TensorDescriptor(dims(rng), strides, pick(rng, DTYPES), pick(rng, FORMATS)).close()
    elif k == 1:
        pycudnn.FilterDescriptor(dims(rng), pick(rng, DTYPES), pick(rng, FORMATS[1:])).close()
    else:
        n = rng.randint(0, 4)
        conv = pycudnn.ConvolutionDescriptor(
            dims(rng, n, n),
            None if rng.random() < 0.3 else dims(rng, n, n),
            None if rng.random() < 0.3 else dims(rng, n, n),
            mode=pick(rng, ["cross_correlation", "convolution"]),
            compute_type=pick(rng, DTYPES),
            math_type=pick(rng, ["default", "tensor_op", "tensor_op_allow_conversion", "fma"]),
            groups=pick(rng, [1, 2, 4]),
        )
        if k == 3:
            x = pycudnn.TensorDescriptor(dims(rng, n + 1, n + 3), dtype=pick(rng, DTYPES))
            w = pycudnn.FilterDescriptor(dims(rng, n + 1, n + 3), pick(rng, DTYPES))
            conv.output_dims(x, w)


def layout(rng: random.Random, ctx: Context) -> None:
    from pycudnn import layout as L

    d, s, fmt = dims(rng, 0, 9), dims(rng, 0, 9), pick(rng, FORMATS)
    if rng.random() < 0.4 and isinstance(d, list):
        try:
            s = list(L.packed_strides(d, fmt))
            s[rng.randrange(len(s))] += rng.choice([-1, 1, 0])
        except (ValueError, TypeError, IndexError):
            pass
    fn = rng.randrange(7)
    if fn == 0:
        L.packed_strides(d, fmt)
    elif fn == 1:
        L.is_fully_packed(d, s, fmt)
    elif fn == 2:
        L.is_packed(d, s, fmt, pick(rng, ["CH", "HW", "C", "NCHW", "", "X", "hw", "CC"]))
    elif fn == 3:
        L.is_spatially_packed(d, s, fmt)
    elif fn == 4:
        L.is_overlapping(d, s)
    elif fn == 5:
        shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 6))]
        L.to_format(np.zeros(shape, np.float32) if rng.random() < 0.9 else junk(rng), fmt)
    else:
        L.from_format(np.zeros(rng.randint(0, 300), np.float32), d, fmt)


def graph(rng: random.Random, ctx: Context) -> None:
    import pycudnn

    def pick(rng: random.Random, good: list[Any], p: float = 0.95) -> Any:  # mostly well-formed
        return rng.choice(good) if rng.random() < p else junk(rng)

    g = pycudnn.Graph(pick(rng, ["g", "", "x" * 300]))
    dt = pick(rng, ["float16", "bfloat16", "float32", "int8", "float8_e4m3fn"])
    rank = rng.choice([3, 4, 4, 4, 5])
    sp = rank - 2
    fmt = pick(rng, [None, {4: "NHWC", 5: "NDHWC"}.get(rank)])

    def t(shape: Any, name: str) -> Any:
        return g.tensor(shape, fmt=fmt, dtype=dt, name=name)

    n, c, k = small(rng), rng.choice([4, 8, 16, 32]), rng.choice([4, 8, 16, 32])
    spatial = [rng.choice([1, 3, 4, 8, 16]) for _ in range(sp)]
    filt = [rng.choice([1, 3]) for _ in range(sp)]
    conv_kw = {
        "padding": pick(rng, [0, 1, [1] * sp]), "stride": pick(rng, [1, 2, [1] * sp]),
        "dilation": pick(rng, [1, [1] * sp, 2]), "groups": pick(rng, [1, 1, 2]),
        "alpha": pick(rng, [1.0, 0.5]), "beta": pick(rng, [0.0, 1.0]),
    }  # fmt: skip
    kind = rng.choice(
        ["conv_fprop", "conv_dgrad", "conv_wgrad", "matmul", "pointwise", "reduction"]
    )
    if kind == "conv_fprop":
        y = g.conv_fprop(t([n, c, *spatial], "x"), t([k, c, *filt], "w"), **conv_kw)
    elif kind == "conv_dgrad":
        y = g.conv_dgrad(
            t([n, k, *spatial], "dy"), t([k, c, *filt], "w"), dx_dims=[n, c, *spatial], **conv_kw
        )
    elif kind == "conv_wgrad":
        y = g.conv_wgrad(
            t([n, c, *spatial], "x"), t([n, k, *spatial], "dy"), dw_dims=[k, c, *filt], **conv_kw
        )
    elif kind == "matmul":
        batch = [small(rng) for _ in range(rank - 2)]
        m, kk, nn = small(rng) * 8, small(rng) * 8, small(rng) * 8
        y = g.matmul(t([*batch, m, kk], "a"), t([*batch, kk, nn], "b"))
    else:
        y = t([n, c, *spatial], "x")
        if kind == "reduction":
            y = g.reduction(
                y,
                op=pick(rng, ["add", "max", "min", "mul", "amax", "avg"]),
                axes=pick(rng, [[1], [2], [0, 1]]),
            )
    for _ in range(rng.randint(0, 3)):
        op = rng.choice(["relu", "gelu", "sigmoid", "tanh", "exp", "abs", "add", "scale"])
        if op == "relu":
            y = g.relu(y, upper_clip=pick(rng, [None, 6.0, 10**400, math.nan], 0.7))
        elif op == "add":
            y = g.add(y, y, alpha1=pick(rng, [1.0, 2.0]))
        elif op == "scale":
            y = g.scale(y, g.scalar(pick(rng, [2.0, 0.5]), rank=rank))
        else:
            y = getattr(g, op)(y)
    if rng.random() < 0.6:
        plan = g.build(
            device_properties=ctx.props, cache=False, deterministic=pick(rng, [False, True])
        )
        if rng.random() < 0.3:
            pycudnn.Plan.from_json(plan.to_json(), device_properties=ctx.props, graph=g).close()
        plan.close()
    g.close()


def _mutate_tree(rng: random.Random, data: Any) -> Any:
    """One random change somewhere in a JSON tree: a new value, a deletion, a resized array."""
    spots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for key, value in list(items):
            spots.append((node, key))
            walk(value)

    walk(data)
    if not spots:
        return rng.choice(JSON_JUNK)
    parent, key = rng.choice(spots)
    value, op = parent[key], rng.randrange(4)
    if op == 0 and isinstance(parent, dict):
        del parent[key]
    elif op == 1 and isinstance(value, list):
        parent[key] = (value * 16)[: rng.randint(0, 16)] if value else [1] * rng.randint(0, 16)
    elif op == 2 and isinstance(value, int) and not isinstance(value, bool):
        parent[key] = rng.choice(INTS)
    else:
        parent[key] = rng.choice(
            [*JSON_JUNK, rng.choice(INTS), [rng.choice(INTS)] * rng.randint(0, 16)]
        )
    return data


def _mutate_text(rng: random.Random, text: str) -> str:
    m = rng.randrange(6)
    if m == 0:
        return text[: rng.randrange(len(text) + 1)]
    if m == 1:
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice('{}[],:"0123456789-eE.tfn \\x\x00')
        return "".join(chars)
    data = json.loads(text)
    for _ in range(rng.randint(1, 3)):
        data = _mutate_tree(rng, data)
    return json.dumps(data)


def plan_json(rng: random.Random, ctx: Context) -> None:
    import pycudnn

    factory, text, _ = rng.choice(ctx.bases())
    graph_arg = factory() if rng.random() < 0.3 else None
    source: Any = _mutate_text(rng, text)
    if rng.random() < 0.2:
        with_junk = junk(rng)
        source = with_junk if not isinstance(with_junk, float) else source.encode()
    pycudnn.Plan.from_json(source, device_properties=ctx.props, graph=graph_arg).close()


def plan_cache(rng: random.Random, ctx: Context) -> None:
    from pycudnn.plan import PlanCache

    i = rng.randrange(3)
    factory, text, name = ctx.bases()[i]
    directory = ctx.tmp / f"cache{i}"
    directory.mkdir(exist_ok=True)
    path = directory / name
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    m = rng.randrange(8)
    if m == 0:
        path.mkdir()
    elif m == 1:
        path.symlink_to(rng.choice([ctx.tmp, ctx.tmp / "missing", Path("/dev/null")]))
    elif m == 2:
        path.write_bytes(rng.choice([b"", b"\xff\xfe\x00", b"null", b"[]", b'"x"', b"0" * 10000]))
    else:
        path.write_text(_mutate_text(rng, text))
    try:
        plan = factory().build(device_properties=ctx.props, cache=PlanCache(directory))
    except Exception as exc:
        raise CacheFailure(f"{type(exc).__name__}: {exc}") from None
    plan.close()


def deviceprops(rng: random.Random, ctx: Context) -> None:
    import pycudnn

    data: Any = json.loads(json.dumps(ctx.props_data))
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.6:
            key = rng.choice([*data, "cudnnVersion", "extra"]) if isinstance(data, dict) else 0
            value = rng.choice(JSON_JUNK + INTS + [[rng.choice(INTS)] * rng.randint(0, 4)])
            if isinstance(data, dict):
                data[key] = value
        else:
            data = _mutate_tree(rng, data)
    source = json.dumps(data) if rng.random() < 0.5 else data
    p = pycudnn.DeviceProperties.from_json(source)
    p.descriptor  # noqa: B018 - builds and finalizes the DEVICEPROP descriptor
    if rng.random() < 0.1:
        pointwise_graph().build(device_properties=p, cache=False).close()
    p.close()


EINSUM_ALPHABET = ["a", "b", "c", "i", "j", "k", "A", "Z", ".", "...", ",", "->", "-", ">", " ",
                   "\t", "\u00e9", "1", "\u00df", "\u3000"]  # fmt: skip


def einsum(rng: random.Random, ctx: Context) -> None:
    import pycutensor

    values = [1, 2, 3, 4, 0, -1, 2**40, 2**63]
    if rng.random() < 0.5:  # well-formed, mostly: operands of distinct letters, extents per letter
        extent = {c: rng.randint(1, 5) for c in "ijklmn"}
        terms = ["".join(rng.sample("ijklmn", rng.randint(0, 4))) for _ in range(rng.randint(1, 3))]
        used = sorted(set("".join(terms)))
        out = "".join(rng.sample(used, rng.randint(0, len(used))))
        subs: Any = ",".join(terms) + (f"->{out}" if rng.random() < 0.7 else "")
        shapes: list[Any] = [tuple(extent[c] for c in term) for term in terms]
        if rng.random() < 0.3:
            i = rng.randrange(len(shapes))
            shapes[i] = tuple(rng.choice(values) for _ in shapes[i]) + (
                (2,) if rng.random() < 0.3 else ()
            )
    else:
        subs = "".join(rng.choice(EINSUM_ALPHABET) for _ in range(rng.randint(0, 14)))
        if rng.random() < 0.05:
            subs = junk(rng)
        nops = (
            subs.count(",") + 1
            if isinstance(subs, str) and rng.random() < 0.8
            else rng.randint(0, 4)
        )
        shapes = [
            tuple(rng.choice(values) if rng.random() < 0.2 else rng.randint(1, 5) for _ in range(rng.randint(0, 6)))
            if rng.random() < 0.95 else junk(rng)
            for _ in range(nops)
        ]  # fmt: skip
    pycutensor.parse_einsum(subs, *shapes)


def cutensor(rng: random.Random, ctx: Context) -> None:
    import pycutensor
    from pycutensor.operations import check_operation
    from pycutensor.tensor import TensorSpec

    dtypes = [
        "float32",
        "float16",
        "bfloat16",
        "float64",
        "complex64",
        "complex128",
        "int8",
        "uint8",
        "int32",
    ]
    k = rng.randrange(4)
    if k == 0:
        TensorSpec.create(dims(rng, 0, 12), None if rng.random() < 0.5 else dims(rng, 0, 12),
                          pick(rng, dtypes), pick(rng, [256, 128, 16, 4, 0, 3, -1]))  # fmt: skip
    elif k == 1:
        kind = pick(rng, ["contraction", "contraction_trinary", "reduction", "elementwise_binary",
                          "elementwise_trinary", "permutation"])  # fmt: skip
        ntens = rng.randint(1, 4)
        modes = [
            "".join(rng.choice("ijklm") for _ in range(rng.randint(0, 4))) for _ in range(ntens)
        ]
        specs = [
            TensorSpec.create([rng.randint(1, 4) for _ in m], dtype=pick(rng, dtypes))
            for m in modes
        ]
        check_operation(
            kind, specs, [pick(rng, [m]) for m in modes],
            unary=[pick(rng, ["identity", "sqrt", "relu", "conj", "abs"]) for _ in range(rng.randint(0, 3))],
            binary=[pick(rng, ["add", "mul", "max", "min"]) for _ in range(rng.randint(0, 2))],
            compute_type=pick(rng, [None, "32F", "16F", "TF32", "3xTF32", "64F", "16BF", "x"]),
        )  # fmt: skip
    elif k == 2:
        keys = [
            "algo",
            "jit",
            "autotune",
            "incremental_count",
            "cache_mode",
            "kernel_rank",
            "gpu_arch",
            "tag",
        ]
        good = {"algo": "default", "jit": "none", "autotune": "none", "incremental_count": 4,
                "cache_mode": "pedantic", "kernel_rank": 0, "gpu_arch": 90, "tag": 1}  # fmt: skip
        pycutensor.PlanPreference(
            **{key: pick(rng, [good[key]], 0.5) for key in rng.sample(keys, rng.randint(0, 4))}
        )
    else:
        shapes = [tuple(rng.randint(1, 3) for _ in range(2)) for _ in range(3)]
        arrays = [
            np.zeros(s, rng.choice(dtypes)) if rng.random() < 0.9 else junk(rng) for s in shapes
        ]
        pycutensor.contract(arrays[0], pick(rng, ["ik"]), arrays[1], pick(rng, ["kj"]), arrays[2], pick(rng, ["ij"]),
                            alpha=pick(rng, [1.0, 2]), beta=pick(rng, [0.0]))  # fmt: skip


_POINTER_JUNK = [None, 0, None, 0, "x", 1.5, [], object(), b"x", True]


def raw(rng: random.Random, ctx: Context) -> None:
    """A C function of either raw layer with NULL pointers, out-of-range ints and wrong types and
    counts (never a non-NULL address: any C function may read one, by its contract)."""
    import pycudnn
    import pycutensor
    from pycudnn import _bindings as cudnn_b
    from pycutensor import _bindings as cutensor_b

    lib = rng.choice(["cudnn"] * 4 + ["cutensor"])
    specs = (cudnn_b if lib == "cudnn" else cutensor_b).FUNCTIONS
    name = rng.choice(sorted(specs))
    spec = specs[name]
    n = len(spec.argtypes)
    count = n if rng.random() < 0.85 else max(0, n + rng.choice([-1, 1, 3]))
    args = []
    for i in range(count):
        t = spec.argtypes[i] if i < n else None
        code = getattr(t, "_type_", None)
        if isinstance(code, str) and code in "bBhHiIlLqQ" and t is not ctypes.c_void_p:
            args.append(rng.choice(INTS + list(range(12))) if rng.random() < 0.9 else junk(rng))
        elif t in (ctypes.c_float, ctypes.c_double):
            args.append(rng.choice([0.0, 1.0, math.nan, math.inf, "x", None]))
        else:  # pointers, callbacks, structs: NULL or a wrong type
            args.append(rng.choice(_POINTER_JUNK))
    logged = lib == "cudnn" and rng.random() < 0.2
    for finding, functions in KNOWN.items():
        if count == n and not ctx.include_known and name in functions:
            raise KnownOpen(finding)
    mod = pycudnn if lib == "cudnn" else pycutensor
    if logged:
        mod.enable_logging(logging.DEBUG)
    try:
        getattr(mod.raw, name)(*args)
    finally:
        if logged:
            mod.disable_logging()


#: The slow targets first, so that two workers finish together.
TARGETS: dict[str, Callable[[random.Random, Context], None]] = {
    "plan_cache": plan_cache, "graph": graph, "plan_json": plan_json, "deviceprops": deviceprops,
    "legacy": legacy, "layout": layout, "einsum": einsum, "cutensor": cutensor, "raw": raw,
}  # fmt: skip
#: Inputs per target, in units of --fuzz: cheap targets get more. Planning a graph costs 30 ms to
#: 0.5 s on a CPU (cuDNN builds the plan's kernels), and a damaged plan-cache file means a rebuild.
WEIGHTS = {"legacy": 4, "layout": 4, "graph": 1, "plan_json": 2, "plan_cache": 0.5,
           "deviceprops": 2, "einsum": 4, "cutensor": 4, "raw": 4}  # fmt: skip
# Targets kept in modules of their own, one surface each (they import names defined above).
import reliability_fuzz_attention  # noqa: E402
import reliability_fuzz_cli  # noqa: E402
import reliability_fuzz_distributed  # noqa: E402
import reliability_fuzz_files  # noqa: E402
import reliability_fuzz_plans  # noqa: E402
import reliability_fuzz_runtime  # noqa: E402
import reliability_fuzz_surfaces  # noqa: E402

for _module in (
    reliability_fuzz_attention,
    reliability_fuzz_cli,
    reliability_fuzz_distributed,
    reliability_fuzz_files,
    reliability_fuzz_plans,
    reliability_fuzz_runtime,
    reliability_fuzz_surfaces,
):
    TARGETS.update(_module.TARGETS)
    WEIGHTS.update(_module.WEIGHTS)


def selftest(rng: random.Random, ctx: Context) -> None:
    """Not a campaign: checks the harness. Input 3 crashes (reads address 0), input 5 hangs."""
    n = getattr(rng, "n", 0)
    if n == 3:
        ctypes.string_at(0)
    if n == 5:
        import time

        time.sleep(3600)
    if n == 6:
        raise ZeroDivisionError("an unexpected exception")
    if n % 2:
        raise ValueError("an expected refusal")


def _expected() -> tuple[type[BaseException], ...]:
    import pycudnn
    import pycutensor

    # NotImplementedError: a valid request the library says it does not support, and why (an
    # einsum trace, for one).
    return (ValueError, TypeError, KeyError, OSError, NotImplementedError, pycudnn.CudnnError,
            pycutensor.CutensorError, BufferError)  # fmt: skip  # BufferError: DLPack's refusal


ALL_TARGETS = {**TARGETS, "selftest": selftest}
#: Targets whose inputs are split between the workers (they plan graphs: ~0.1 to 0.5 s an input).
SLOW = ("plan_cache", "graph")


def quiet() -> None:
    """Workers print only their protocol: the libraries' warnings and logs go nowhere."""
    warnings.simplefilter("ignore")
    for name in ("pycudnn", "pycutensor"):
        logging.getLogger(name).addHandler(logging.NullHandler())
        logging.getLogger(name).propagate = False


class InputRandom(random.Random):
    """A ``random.Random`` that knows which input it is for (the harness self-test reads it)."""

    def __new__(cls, seed: int, target: str, n: int) -> InputRandom:
        # Python 3.10's random.Random.__new__ refuses more than one argument (3.11 lifted that).
        return super().__new__(cls)

    def __init__(self, seed: int, target: str, n: int) -> None:
        super().__init__(f"{seed}/{target}/{n}")
        self.n = n


def run_one(
    gen: Callable[[random.Random, Context], None], rng: random.Random, ctx: Context
) -> tuple[str, str]:
    """Run one input: ("ok" | "exc" | "known" | "unexpected", detail)."""
    try:
        gen(rng, ctx)
    except KnownOpen as exc:
        return "known", str(exc)
    except _expected():
        return "exc", ""
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        return "unexpected", text[:300]
    return "ok", ""


def replay(target: str, index: int, seed: int) -> int:
    """Run one input in this process and show what it raised, with its traceback."""
    ctx = Context()
    ctx.include_known = True
    try:
        ALL_TARGETS[target](InputRandom(seed, target, index), ctx)
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        ctx.close()
    print(f"{target} input {index}: accepted")
    return 0
