"""Fuzz target over every ``Graph`` method (``graph_ops``).

It calls one to three ``Graph`` methods, chosen among all of them, with arguments drawn from what
each parameter's annotation asks for (tensors of hostile shapes and types, integers at the edges
of C's types, non-finite and huge floats, wrong types) and plans a quarter of the graphs that
describe without error.

It follows ``reliability_fuzz``'s protocol: an input either completes or raises an exception a
caller is promised; anything else is counted by the harness.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable
from typing import Any

#: Graph methods that are not operations (planning, description, lifetime, tensor creation).
NOT_OPS = frozenset({
    "autotune", "build", "build_all", "close", "describe", "engine_configs", "finalize",
    "heuristics", "key", "load_plan", "signature", "tensor", "tensor_like", "scalar",
})  # fmt: skip
EDGE_INTS = [0, 1, 2, 3, 4, 8, 16, 64, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**64, 10**30]
EDGE_FLOATS = [0.0, 1.0, 0.5, -1.0, 1e-5, 0.1, math.nan, math.inf, -math.inf, 1e308, 10**400, 5.0]
WORDS = ["none", "add", "max", "min", "mul", "avg", "amax", "maxpool", "avgpool",
         "avgpool_include_padding", "bernoulli", "uniform", "normal", "set", "tanh", "cmp_ge",
         "float32", "float16", "bfloat16", "int32", "NHWC", "", "x" * 200, "CUDNN_DATA_FLOAT"]  # fmt: skip
DTYPES = ["float16", "bfloat16", "float32", "float32", "int32", "int8", "float8_e4m3fn", "int64"]


def _graph_ops_methods() -> list[str]:
    import pycudnn

    return sorted(
        n
        for n in dir(pycudnn.Graph)
        if not n.startswith("_") and n not in NOT_OPS and callable(getattr(pycudnn.Graph, n))
    )


def _junk(rng: random.Random) -> Any:
    return rng.choice([None, True, 1.5, math.nan, "x", b"ab", [], {}, (), [1, "a"], object(), -7])


def _dims(rng: random.Random, rank: int, hostile: float = 0.1) -> list[Any]:
    """Mostly small positive extents; with probability ``hostile`` one is 0, negative, huge or
    not an integer."""
    out = [rng.choice([1, 2, 4, 8, 16, 32, 64]) for _ in range(rank)]
    if out and rng.random() < hostile:
        out[rng.randrange(rank)] = rng.choice(EDGE_INTS) if rng.random() < 0.7 else _junk(rng)
    return out


def _tensor(rng: random.Random, g: Any, pool: list[Any], i: int, base: list[int]) -> Any:
    """A tensor of the input's base shape most of the time (so that operations can meet), with
    broadcast axes, another rank, or hostile extents, strides and types otherwise."""
    r = rng.random()
    if r < 0.6:
        dims: list[Any] = list(base)
    elif r < 0.8:
        dims = [d if rng.random() < 0.6 else 1 for d in base]
    else:
        dims = _dims(rng, rng.choice([1, 2, 3, 4, 4, 5, 9]), hostile=0.5)
    dtype = rng.choice(DTYPES) if rng.random() < 0.3 else "float16"
    strides = _dims(rng, len(dims), hostile=0.5) if rng.random() < 0.05 else None
    t = g.tensor(dims, strides, dtype=dtype, name=f"t{i}", virtual=rng.random() < 0.03)
    pool.append(t)
    return t


def _value(
    rng: random.Random, annotation: str, pool: list[Any], g: Any, default: Any, *, base: list[int]
) -> Any:
    """A value for one parameter, from what its annotation says it takes."""
    a = annotation
    if rng.random() < 0.04:
        return _junk(rng)
    if "Tensor" in a and "Sequence[Tensor]" not in a:
        if "None" in a and rng.random() < 0.5:
            return None
        if pool and rng.random() < 0.7:
            return rng.choice(pool)
        return _tensor(rng, g, pool, len(pool), base)
    if "Sequence[Tensor]" in a:
        return [
            rng.choice(pool) if pool else _tensor(rng, g, pool, 0, base)
            for _ in range(rng.randint(0, 3))
        ]
    if a.startswith("bool"):
        return rng.random() < 0.5
    if "Sequence[int]" in a or "Iterable[int]" in a or "Sequence[Any]" in a:
        if "None" in a and rng.random() < 0.4:
            return None
        return _dims(rng, rng.randint(0, 5))
    if a.startswith("int"):
        if "None" in a and rng.random() < 0.4:
            return None
        return rng.choice(EDGE_INTS) if rng.random() < 0.2 else rng.randint(-1, 4)
    if a.startswith("float"):
        if "None" in a and rng.random() < 0.4:
            return None
        return rng.choice(EDGE_FLOATS) if rng.random() < 0.4 else rng.choice([0.5, 1.0, 1e-5, 2.0])
    if a.startswith("str"):
        return rng.choice(WORDS) if rng.random() < 0.8 else None
    # Any: a mode name, a number or a list, as the method's callers pass.
    if default is not inspect.Parameter.empty and rng.random() < 0.6:
        return default
    return rng.choice([rng.choice(WORDS), rng.choice(EDGE_INTS), rng.choice(EDGE_FLOATS),
                       _dims(rng, rng.randint(1, 3)), rng.randint(1, 4)])  # fmt: skip


def _call(rng: random.Random, g: Any, name: str, pool: list[Any], base: list[int]) -> Any:
    method = getattr(g, name)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for p in inspect.signature(method).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            continue
        ann = str(p.annotation)
        optional = p.default is not inspect.Parameter.empty
        if optional and rng.random() < 0.5:
            continue  # the default
        v = _value(rng, ann, pool, g, p.default, base=base)
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = v
        else:
            args.append(v)
    return method(*args, **kwargs)


def graph_ops(rng: random.Random, ctx: Any) -> None:
    """One to three Graph methods with hostile arguments; a quarter of the graphs planned."""
    import pycudnn
    from pycudnn.graph import Tensor

    methods = _graph_ops_methods()
    g = pycudnn.Graph("graph_ops")
    try:
        pool: list[Any] = []
        base = [
            rng.choice([1, 2, 4]),
            *(rng.choice([8, 16, 32, 64]) for _ in range(rng.choice([2, 2, 3]))),
        ]
        for i in range(rng.randint(1, 3)):
            _tensor(rng, g, pool, i, base)
        for _ in range(rng.randint(1, 3)):
            out = _call(rng, g, rng.choice(methods), pool, base)
            for t in (
                out if isinstance(out, tuple) else out.values() if isinstance(out, dict) else (out,)
            ):
                if isinstance(t, Tensor):
                    pool.append(t)
        if rng.random() < 0.25:
            plan = g.build(device_properties=ctx.props, cache=False)
            try:
                if rng.random() < 0.3:
                    pycudnn.Plan.from_json(
                        plan.to_json(), device_properties=ctx.props, graph=g
                    ).close()
            finally:
                plan.close()
    finally:
        g.close()


TARGETS: dict[str, Callable[[random.Random, Any], None]] = {"graph_ops": graph_ops}
#: graph_ops plans a quarter of its inputs (30 ms to 0.5 s each).
WEIGHTS = {"graph_ops": 4}
