"""Fuzz targets for plan JSON of every operation kind (registered in reliability_fuzz.py).

``plan_json_kinds``: a saved plan of a kind from tests/plan_kinds.py (every kind a Graph method
builds that cuDNN plans for the H100 properties) is changed: two roles swapped, an attribute
edited, a reference spelled as an enumerator or a non-id, a key dropped, a value's type changed, a
huge number, deep nesting, a random change anywhere; sometimes with pycudnn's digests recomputed,
as a deliberate editor would. It is then loaded for its graph or without one. A changed plan that
loads for its graph, or a damaged one (digests not recomputed) that loads at all, is a wrong plan
taken as right: :class:`WrongPlanAccepted`, counted as unexpected.

``plan_cache_kinds``: the same changes through a plan-cache file, which must be rebuilt (a damaged
file served as a disk hit is a wrong plan taken as right).
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


class WrongPlanAccepted(Exception):
    """A changed plan JSON was loaded as if it computed its graph."""


def _kinds() -> Any:
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import plan_kinds

    return plan_kinds


def _saved(ctx: Any, name: str) -> str:
    """The saved JSON of a plan of kind ``name``, built once per worker."""
    plans: dict[str, str] = ctx.__dict__.setdefault("_plans_by_kind", {})
    if name not in plans:
        from pycudnn.graph import Graph

        g = Graph(name)
        _kinds().CATALOGUE[name](g)
        with g.build(device_properties=ctx.props, cache=False) as plan:
            plans[name] = plan.to_json()
    return plans[name]


def _graph(name: str) -> Any:
    from pycudnn.graph import Graph

    g = Graph(name)
    _kinds().CATALOGUE[name](g)
    return g


def _deep(depth: int) -> Any:
    value: Any = "1"
    for _ in range(depth):
        value = [value]
    return value


def _change(rng: random.Random, data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """One change of a plan JSON; True when it is one a graph's comparison must see (a role or
    an attribute of a node), False for the rest (which only the digests or cuDNN refuse)."""
    from reliability_fuzz import INTS, JSON_JUNK, _mutate_tree

    pk = _kinds()
    nodes = pk.all_nodes(data["operationGraph"])
    node = rng.choice(nodes)
    refs = pk.reference_keys(node)
    attrs = [k for k in node if k != "operation" and k not in refs]
    m = rng.randrange(9)
    if m == 0 and len(refs) >= 2:
        a, b = rng.sample(refs, 2)
        if node[a] != node[b]:
            node[a], node[b] = node[b], node[a]
            return data, True
    if m == 1 and attrs:
        key = rng.choice(attrs)
        value = node[key]
        if isinstance(value, bool):
            node[key] = not value
        elif isinstance(value, (int, float)):
            node[key] = value + rng.choice([1, -1, 0.5, 10**6])
        elif isinstance(value, list) and value and isinstance(value[0], int):
            node[key] = [value[0] + 1, *value[1:]]
        else:
            node[key] = rng.choice(JSON_JUNK)
            return data, False
        return data, True
    if m == 2 and refs:
        node[rng.choice(refs)] = rng.choice(
            ["CUDNN_DATA_FLOAT", "CUDNN_", "CUDNN_POINTWISE_ADD", "zz", "", "99999", "1e3"]
        )
        return data, False
    if m == 3:
        parent = rng.choice(
            [data, data["operationGraph"], node, *data["operationGraph"]["tensors"]]
        )
        if parent:
            del parent[rng.choice(list(parent))]
        return data, False
    if m == 4:
        key = rng.choice(list(node))
        node[key] = rng.choice([[node[key]], {"v": node[key]}, str(node[key]), None, 1.5])
        return data, False
    if m == 5:
        key = rng.choice(list(node))
        node[key] = rng.choice([*INTS, 10**400 // 10**300, -(10**30), 1e308])
        return data, False
    if m == 6:
        node[rng.choice(list(node))] = _deep(rng.choice([5, 50, 500, 5000]))
        return data, False
    return _mutate_tree(rng, data), False


def _load(rng: random.Random, ctx: Any, name: str, text: str, with_graph: bool) -> None:
    from pycudnn.plan import Plan

    graph = _graph(name) if with_graph else None
    Plan.from_json(text, graph=graph, device_properties=ctx.props).close()


def plan_json_kinds(rng: random.Random, ctx: Any) -> None:
    pk = _kinds()
    name = rng.choice(sorted(pk.CATALOGUE))
    original = json.loads(_saved(ctx, name))
    data, seen_by_graph = _change(rng, copy.deepcopy(original))
    resealed = rng.random() < 0.5
    if resealed:
        try:
            pk.resealed(data)
        except (TypeError, ValueError, RecursionError, AttributeError, KeyError):
            resealed = False  # a change that leaves no digest to recompute (not JSON any more)
    try:
        text = json.dumps(data)
    except (TypeError, ValueError, RecursionError):
        return  # not JSON: nothing a file could hold
    with_graph = rng.random() < 0.6
    _load(rng, ctx, name, text, with_graph)
    # Loaded: wrong unless nothing that matters changed.
    if json.loads(text) == original:
        return
    if not resealed:
        raise WrongPlanAccepted(f"{name}: a damaged plan JSON loaded (graph={with_graph})")
    if with_graph and seen_by_graph:
        raise WrongPlanAccepted(f"{name}: an edited node loaded for its graph")


def plan_cache_kinds(rng: random.Random, ctx: Any) -> None:
    from pycudnn.plan import PlanCache

    pk = _kinds()
    name = rng.choice(sorted(pk.CATALOGUE))
    directory = ctx.tmp / f"kinds-{name}"
    if not directory.is_dir() or not list(directory.glob("*.json")):
        _graph(name).build(device_properties=ctx.props, cache=PlanCache(directory))
    (path,) = directory.glob("*.json")
    original = json.loads(_saved(ctx, name))
    data, seen_by_graph = _change(rng, copy.deepcopy(original))
    resealed = rng.random() < 0.5
    if resealed:
        try:
            pk.resealed(data)
        except (TypeError, ValueError, RecursionError, AttributeError, KeyError):
            resealed = False
    try:
        written = json.dumps(data)
    except (TypeError, ValueError, RecursionError):
        written = "{"
    path.write_text(written)
    cache = PlanCache(directory)
    try:
        plan = _graph(name).build(device_properties=ctx.props, cache=cache)
    except Exception as exc:
        from reliability_fuzz import CacheFailure

        raise CacheFailure(f"{name}: {type(exc).__name__}: {exc}") from None
    plan.close()
    # Served from the changed file: wrong unless the change was resealed and is one the graph's
    # comparison does not need to see (a knob, say: another plan for the same graph).
    changed = written == "{" or json.loads(written) != original
    if cache.stats["disk_hits"] and changed and (not resealed or seen_by_graph):
        raise WrongPlanAccepted(f"{name}: a plan cache served a changed file")


TARGETS: dict[str, Callable[[random.Random, Any], None]] = {
    "plan_cache_kinds": plan_cache_kinds,
    "plan_json_kinds": plan_json_kinds,
}
#: Inputs per target in units of --fuzz: a load is cheap once the kind's plan is built (a worker
#: builds each kind once); a cache input rebuilds a plan.
WEIGHTS: dict[str, float] = {"plan_json_kinds": 2, "plan_cache_kinds": 0.25}
