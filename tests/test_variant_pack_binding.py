"""Every execute binds each array to its own tensor's unique id (CPU tier, adversarial).

A variant pack that binds an array to another tensor's unique id (two equal-shape inputs swapped, a
cached pack reused for other arrays, a stale pointer, a scalar's host buffer holding another value,
a plan-cache view mapping another graph's tensor) makes the GPU compute a silent wrong result. cuDNN
answers ``CUDNN_STATUS_NOT_SUPPORTED`` to reading ``VARIANT_PACK_UNIQUE_IDS`` and
``VARIANT_PACK_DATA_POINTERS`` back, so the pack is recorded where the library hands it to cuDNN:
``cudnnBackendSetAttribute`` (``pycudnn.backend._SET_CALL``) records the unique ids, data pointers
and workspace set on each pack descriptor and forwards the call, and the launch
(``cudnnBackendExecute``, which needs a GPU) is replaced by a recorder that looks up the pack it is
given, reads its workspace back from cuDNN (``VARIANT_PACK_WORKSPACE`` reads) and reads each
by-value scalar's value at the host address the pack holds, as cuDNN would. The plans are built by
cuDNN for the committed H100 properties; the arrays are DeviceArrays around made-up addresses.

What this proves, for random pointwise graphs and many calls each (tensors keyed by Tensor, name or
unique id in any order; arrays swapped between equal-shape tensors, new objects at old addresses,
fresh addresses; scalars given per call, left out, or set with ``set_scalar``; a workspace given or
not): at every launch each unique id of the plan is bound to exactly the pointer of the array the
caller gave for that tensor, each by-value scalar to host memory holding the value that call runs
with, and the workspace to the one given. The same holds for plan-cache views of other graph objects
(each its own arrays and scalar values), for a plan made through a rewrite, for ``execute_raw``
mixed with ``execute``, across variant-pack evictions, and for addresses reused by another layout.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import numpy as np
import pytest
from standins import fake_device_array as fake
from standins import stand_in_handle

import pycudnn
from pycudnn import backend
from pycudnn.backend import attribute_name
from pycudnn.plan import PlanCache

_UIDS, _PTRS, _WS = (
    int(attribute_name(n))
    for n in ("VARIANT_PACK_UNIQUE_IDS", "VARIANT_PACK_DATA_POINTERS", "VARIANT_PACK_WORKSPACE")
)


class _SetRecorder:
    """``cudnnBackendSetAttribute`` as the library calls it, recording the variant-pack attributes
    set on each descriptor (by its address) before forwarding the call to cuDNN."""

    def __init__(self, real: Any, sets: dict[int, dict[int, list[int]]]) -> None:
        self.real, self.sets = real, sets

    def run(self, fn: Any, desc: Any, key: int, *args: Any) -> int:
        _atype, count, arr = args  # the count as C takes it, a c_int64
        if key in (_UIDS, _PTRS, _WS):
            values = [0 if arr[i] is None else int(arr[i]) for i in range(count.value)]
            self.sets.setdefault(int(desc.value), {})[key] = values
        return int(self.real.run(fn, desc, key, *args))


@pytest.fixture
def sets(monkeypatch: pytest.MonkeyPatch, libcuda: None) -> dict[int, dict[int, list[int]]]:
    recorded: dict[int, dict[int, list[int]]] = {}
    monkeypatch.setattr(backend, "_SET_CALL", _SetRecorder(backend._SET_CALL, recorded))
    return recorded


@pytest.fixture
def props(h100_props: Any) -> Any:
    return h100_props


def _arm(plan: Any, sets: dict[int, dict[int, list[int]]]) -> list[dict[str, Any]]:
    """Replace the plan's launch with a recorder of what cuDNN would read: per launch, ``binding``
    (unique id -> pointer, as set on the pack), ``ws`` (read back from cuDNN) and ``scalars``
    (unique id -> the value at the host address the pack holds for each by-value tensor)."""
    launches: list[dict[str, Any]] = []

    def launch(handle: Any, plan_ptr: Any, vpack: Any) -> int:
        recorded = sets[int(vpack.value)]
        desc = next(e[2] for e in plan._packs.entries.values() if e[0].value == vpack.value)
        ws = desc.get("VARIANT_PACK_WORKSPACE", attr_type="VOID_PTR") or 0
        assert ws == (recorded[_WS] or [0])[0]
        binding = dict(zip(recorded[_UIDS], recorded[_PTRS], strict=True))
        assert len(binding) == len(recorded[_UIDS])  # no unique id twice
        scalars = {}
        for s in plan._slots:
            if s.by_value:
                ctype = np.ctypeslib.as_ctypes_type(s.scalar.dtype)
                scalars[s.uid] = ctype.from_address(binding[s.uid]).value
        launches.append({"binding": binding, "ws": ws, "scalars": scalars})
        return 0

    plan._exec = launch
    plan._handles[threading.get_ident()] = stand_in_handle()
    return launches


def _array_for(t: Any, **kw: Any) -> Any:
    return fake(tuple(t.array_shape), t.dtype, strides=t.array_strides, **kw)


def _check(
    plan: Any, launch: dict[str, Any], arrays: dict[int, Any], scalars: dict[int, float]
) -> None:
    """The launch bound each unique id to the array given for it (by uid), each scalar to host
    memory holding its value; nothing else."""
    assert sorted(launch["binding"]) == sorted(plan.uids)
    for uid, array in arrays.items():
        assert launch["binding"][uid] == array.ptr, f"uid {uid}"
    device = {a.ptr for a in arrays.values()}
    for uid, value in scalars.items():
        assert launch["binding"][uid] not in device
        assert launch["scalars"][uid] == pytest.approx(value), f"scalar uid {uid}"


# --------------------------------------------------------------------------------------------------
# Random graphs, random calls
# --------------------------------------------------------------------------------------------------


def _random_graph(rng: random.Random, name: str) -> pycudnn.Graph:
    g = pycudnn.Graph(name)
    fmt = rng.choice(["NCHW", "NHWC"])
    dtype = rng.choice(["float32", "float16"])
    shape = [2, 8, 5, 6]
    operands = [
        g.tensor(shape, fmt=fmt, dtype=dtype, name=f"in{i}") for i in range(rng.randint(2, 4))
    ]
    if rng.random() < 0.5:
        operands.append(g.tensor([1, 8, 1, 1], fmt=fmt, dtype=dtype, name="bias"))
    for i in range(rng.randint(0, 2)):
        operands.append(g.scalar(rng.choice([None, 0.5 + i, -2.0]), name=f"s{i}"))
    acc, rest = operands[0], operands[1:]
    rng.shuffle(rest)
    ops = [g.add, g.mul, g.sub]
    for i, operand in enumerate(rest):
        acc = rng.choice(ops)(acc, operand, name=f"op{i}")
        if i == 0 and len(rest) > 1 and rng.random() < 0.5:
            acc.set_output(True, dtype=dtype)  # a second output, of the first op
    acc.set_output(True, dtype=dtype)
    return g


def _random_calls(
    rng: random.Random, g: Any, plan: Any, launches: list[dict[str, Any]], calls: int
) -> None:
    tensors = [t for t in g.tensors if not t.is_virtual]
    arrays_of = [t for t in tensors if not t.by_value]
    scalars_of = [t for t in tensors if t.by_value]
    defaults = {t.uid: t.value for t in scalars_of}
    pool: dict[Any, list[Any]] = {}  # layout -> arrays made so far
    wss = [fake((max(plan.workspace_size, 1) + 64,), np.uint8) for _ in range(2)]
    made: list[tuple[Any, ...]] = []
    for _ in range(calls):
        given: dict[Any, Any] = {}
        arrays: dict[int, Any] = {}
        read, written = set(), set()  # the addresses this call's inputs and outputs took
        for t in arrays_of:
            layout = (tuple(t.array_shape), tuple(t.array_strides), str(t.dtype))
            # an output may not share memory with another array of the call (refused)
            taken = read | written if t.is_output else written
            same = [a for a in pool.setdefault(layout, []) if a.ptr not in taken]
            pick = rng.random()
            if same and pick < 0.6:  # one seen before, maybe bound to another tensor then
                a = rng.choice(same)
            elif same and pick < 0.8:  # a new object at an address seen before
                old = rng.choice(same)
                a = _array_for(t, ptr=old.ptr)
            else:
                a = _array_for(t)
                pool[layout].append(a)
            (written if t.is_output else read).add(a.ptr)
            arrays[t.uid] = a
            given[rng.choice([t, t.name, t.uid])] = a
        if rng.random() < 0.15 and scalars_of:
            t = rng.choice(scalars_of)
            defaults[t.uid] = value = rng.choice([1.5, -3.0, 7.0])
            plan.set_scalar(rng.choice([t, t.name, t.uid]), value)
        passed = {}
        for t in scalars_of:
            if defaults[t.uid] is None or rng.random() < 0.5:
                passed[t.uid] = value = rng.choice([0.25, 4.0, -1.0, 11.0])
                given[rng.choice([t, t.name, t.uid])] = value
        items = list(given.items())
        rng.shuffle(items)
        ws = rng.choice([None, *wss]) if plan.workspace_size == 0 else rng.choice(wss)
        made.append((dict(items), ws, arrays, passed))
        _call(plan, launches, made[-1], defaults)
    builds = plan.variant_pack_builds
    for call in made[-10:]:  # the last ten again: their packs come from the cache
        _call(plan, launches, call, defaults)
    assert plan.variant_pack_builds == builds


def _call(plan: Any, launches: Any, call: tuple[Any, ...], defaults: dict[int, Any]) -> None:
    given, ws, arrays, passed = call
    plan.execute(given, workspace=ws)
    _check(plan, launches[-1], arrays, {**defaults, **passed})
    assert launches[-1]["ws"] == (0 if ws is None else ws.ptr)


@pytest.mark.parametrize("seed", range(4))
def test_random_graphs_bind_each_array_at_its_tensors_uid(seed: int, sets: Any, props: Any) -> None:
    rng = random.Random(seed)
    g = _random_graph(rng, f"random{seed}")
    with g.build(device_properties=props, cache=False) as plan:
        launches = _arm(plan, sets)
        _random_calls(rng, g, plan, launches, 60)


# --------------------------------------------------------------------------------------------------
# Plan-cache views: each graph object binds its own tensors and scalar values
# --------------------------------------------------------------------------------------------------


def _scaled_sum(name: str, scale: float, *, names: tuple[str, str] = ("a", "b")) -> Any:
    g = pycudnn.Graph(name)
    a = g.tensor([2, 8, 5, 6], name=names[0])
    b = g.tensor([2, 8, 5, 6], name=names[1])
    g.mul(g.add(a, b, name="sum"), g.scalar(scale, name="s"), name="out")
    return g


def test_plan_cache_views_bind_each_graphs_own_tensors(sets: Any, props: Any) -> None:
    cache = PlanCache()
    g1 = _scaled_sum("one", 2.0)
    g2 = _scaled_sum("two", 3.0, names=("p", "q"))  # the same structure, other names and scale
    p1 = g1.build(device_properties=props, cache=cache)
    p2 = g2.build(device_properties=props, cache=cache)
    assert cache.stats["memory_hits"] == 1 and p2.descriptor is p1.descriptor and p2 is not p1
    l1, l2 = _arm(p1, sets), _arm(p2, sets)
    t1 = [t for t in g1.tensors if not t.is_virtual and not t.by_value]
    t2 = [t for t in g2.tensors if not t.is_virtual and not t.by_value]
    a1 = {t.uid: _array_for(t) for t in t1}
    a2 = {t.uid: _array_for(t) for t in t2}
    s = g1["s"].uid
    p1.execute({t: a1[t.uid] for t in t1})
    p2.execute({t: a2[t.uid] for t in t2})
    _check(p1, l1[-1], a1, {s: 2.0})
    _check(p2, l2[-1], a2, {s: 3.0})
    p2.set_scalar("s", 9.0)  # the view's default, not the original's
    p1.execute({t.name: a1[t.uid] for t in t1})
    p2.execute({t.name: a2[t.uid] for t in t2})
    _check(p1, l1[-1], a1, {s: 2.0})
    _check(p2, l2[-1], a2, {s: 9.0})
    # the same arrays, crossed: each plan binds what it is given
    p1.execute({t.uid: a2[t.uid] for t in t1})
    p2.execute({t.uid: a1[t.uid] for t in t2})
    _check(p1, l1[-1], a2, {s: 2.0})
    _check(p2, l2[-1], a1, {s: 9.0})
    with pytest.raises(KeyError, match="belongs to"):
        p2.execute({t: a1[t.uid] for t in t1})  # another graph's tensors are no keys of p2
    # a third graph object: a fresh view, with its own scale
    g3 = _scaled_sum("three", -1.0)
    p3 = g3.build(device_properties=props, cache=cache)
    l3 = _arm(p3, sets)
    p3.execute({t.name: a1[t.uid] for t in t1})
    _check(p3, l3[-1], a1, {s: -1.0})


# --------------------------------------------------------------------------------------------------
# A plan made through a rewrite
# --------------------------------------------------------------------------------------------------


def test_a_rewritten_plan_binds_the_graphs_arrays_at_their_uids(sets: Any, props: Any) -> None:
    cache = PlanCache()
    graphs, plans = [], []
    for name in ("rewritten", "rewritten_too"):
        g = pycudnn.Graph(name)
        a = g.tensor([2, 8, 5, 6], fmt="NCHW", dtype="float32", name="a")
        b = g.tensor([1, 8, 1, 1], fmt="NCHW", dtype="float32", name="b")
        g.add(a, b, name="add")
        graphs.append(g)
        plans.append(g.build(device_properties=props, cache=cache))
    assert "rank-3" in plans[0].rewrite and plans[1].rewrite == plans[0].rewrite
    for g, plan in zip(graphs, plans, strict=True):
        launches = _arm(plan, sets)
        ts = [t for t in g.tensors if not t.is_virtual]
        arrays = {t.uid: _array_for(t) for t in ts}
        plan.execute({t: arrays[t.uid] for t in ts})
        _check(plan, launches[-1], arrays, {})
        plan.execute({t.name: arrays[t.uid] for t in reversed(ts)})
        _check(plan, launches[-1], arrays, {})


# --------------------------------------------------------------------------------------------------
# Addresses reused, raw pointers, CUDA graphs, a plan loaded without its graph
# --------------------------------------------------------------------------------------------------


def _bias_add(name: str) -> Any:
    """``y = x * s + bias`` in NHWC: x and y of one layout, bias [1, 8, 1, 1], s a scalar."""
    g = pycudnn.Graph(name)
    x = g.tensor([2, 8, 5, 6], fmt="NHWC", name="x")
    bias = g.tensor([1, 8, 1, 1], fmt="NHWC", name="bias")
    g.add(g.mul(x, g.scalar(2.0, name="s")), bias, name="y").set_output(True)
    return g


def test_an_address_reused_by_another_array_binds_the_new_one(sets: Any, props: Any) -> None:
    g = _bias_add("reuse")
    x, bias, y = g["x"], g["bias"], g["y.y"]
    with g.build(device_properties=props, cache=False) as plan:
        launches = _arm(plan, sets)
        ax, ab, ay = _array_for(x), _array_for(bias), _array_for(y)
        plan.execute({x: ax, bias: ab, y: ay})
        _check(plan, launches[-1], {x.uid: ax, bias.uid: ab, y.uid: ay}, {g["s"].uid: 2.0})
        # x's memory freed and its address given to a bias-shaped array; x moved elsewhere
        old = ax.ptr
        ax._ptr = None  # what DeviceArray.close() leaves
        ab2 = _array_for(bias, ptr=old)
        ax2 = _array_for(x)
        plan.execute({x: ax2, bias: ab2, y: ay})
        _check(plan, launches[-1], {x.uid: ax2, bias.uid: ab2, y.uid: ay}, {g["s"].uid: 2.0})
        with pytest.raises(ValueError, match="closed"):
            plan.execute({x: ax, bias: ab, y: ay})
        # the old address with another dtype or shape is checked, not bound
        for wrong in (
            fake((2, 5, 6, 8), np.float16, ptr=old),
            fake((2, 5, 6, 7), np.float32, ptr=old),
        ):
            with pytest.raises((TypeError, ValueError), match="tensor 'x'"):
                plan.execute({x: wrong, bias: ab, y: ay})
        # the input given as the output and the output as the input: bound as given
        ay2 = _array_for(y, ptr=ax2.ptr)
        ax3 = _array_for(x, ptr=ay.ptr)
        plan.execute({"y.y": ay2, "x": ax3, "bias": ab})
        _check(plan, launches[-1], {x.uid: ax3, bias.uid: ab, y.uid: ay2}, {g["s"].uid: 2.0})
        with pytest.raises(ValueError, match="read-only"):
            plan.execute({x: ax3, bias: ab, y: _array_for(y, readonly=True, ptr=ay2.ptr)})


def test_execute_raw_and_execute_share_packs_by_pointers_only(sets: Any, props: Any) -> None:
    g = _bias_add("raw")
    with g.build(device_properties=props, cache=False) as plan:
        launches = _arm(plan, sets)
        ts = {t.uid: t for t in g.tensors if not t.is_virtual and not t.by_value}
        s = g["s"].uid
        a = {u: _array_for(t) for u, t in ts.items()}
        b = {u: _array_for(t) for u, t in ts.items()}
        for arrays in (a, b, a):
            plan.execute_raw([arrays[u].ptr if u in arrays else None for u in plan.uids])
            _check(plan, launches[-1], arrays, {s: 2.0})
            plan.execute({u: arr for u, arr in arrays.items()} | {s: 5.0})
            _check(plan, launches[-1], arrays, {s: 5.0})
            plan.execute_raw([arrays[u].ptr if u in arrays else None for u in plan.uids])
            _check(plan, launches[-1], arrays, {s: 2.0})  # raw calls run with the default
        plan.set_scalar(s, -4.0)
        plan.execute_raw([a[u].ptr if u in a else None for u in plan.uids])
        _check(plan, launches[-1], a, {s: -4.0})
        plan.execute({ts[u].name: arr for u, arr in b.items()})
        _check(plan, launches[-1], b, {s: -4.0})
        assert plan.variant_pack_builds == 2


def test_cuda_graph_calls_bind_as_execute_does(sets: Any, props: Any) -> None:
    g = _bias_add("cuda_graph")
    with g.build(device_properties=props, cache=False) as plan:
        _arm(plan, sets)
        given: list[Any] = []

        class Graphs:  # cudnnBackendPopulateCudaGraph / UpdateCudaGraph need a GPU
            def prepare(self, function: str, cuda_graph: Any) -> tuple[Any, int]:
                return None, 0x1234

            def call(self, fn: Any, function: str, handle: Any, entry: Any, ptr: int) -> None:
                given.append(sets[int(entry[0].value)])

        plan._graphs = Graphs()
        ts = [t for t in g.tensors if not t.is_virtual and not t.by_value]
        a = {t.uid: _array_for(t) for t in ts}
        b = {t.uid: _array_for(t) for t in ts}
        for arrays in (a, b):
            plan.populate_cuda_graph({t: arrays[t.uid] for t in ts}, 0x1234)
            binding = dict(zip(given[-1][_UIDS], given[-1][_PTRS], strict=True))
            assert {u: binding[u] for u in arrays} == {u: x.ptr for u, x in arrays.items()}


def test_a_plan_loaded_without_its_graph_binds_by_uid_and_name(sets: Any, props: Any) -> None:
    g = _bias_add("loaded")
    with g.build(device_properties=props, cache=False) as built:
        plan = pycudnn.Plan.from_json(built.to_json(), device_properties=props)
    with plan:
        launches = _arm(plan, sets)
        ts = [t for t in g.tensors if not t.is_virtual and not t.by_value]
        arrays = {t.uid: _array_for(t) for t in ts}
        s = g["s"].uid
        plan.execute({t.name: arrays[t.uid] for t in ts})
        _check(plan, launches[-1], arrays, {s: 2.0})
        plan.execute({t.uid: arrays[t.uid] for t in reversed(ts)} | {"s": 0.5})
        _check(plan, launches[-1], arrays, {s: 0.5})


def test_a_scalar_value_reassigned_on_the_graph_is_the_plans_default(sets: Any, props: Any) -> None:
    """The graph's value was read into the scalar's buffer once: reassigned after a call (and
    rebuilt, a memory hit handing back the same plan), the plan ran with the old value while
    to_json saved the new one; after a call that gave a value, with the new one."""
    cache = PlanCache()
    g = _bias_add("reassigned")
    s = g["s"]
    plan = g.build(device_properties=props, cache=cache)
    launches = _arm(plan, sets)
    ts = [t for t in g.tensors if not t.is_virtual and not t.by_value]
    arrays = {t.uid: _array_for(t) for t in ts}
    plan.execute({t: arrays[t.uid] for t in ts})
    _check(plan, launches[-1], arrays, {s.uid: 2.0})
    s.value = 3.0
    assert g.build(device_properties=props, cache=cache) is plan
    plan.execute({t: arrays[t.uid] for t in ts})
    _check(plan, launches[-1], arrays, {s.uid: 3.0})
    plan.execute_raw([arrays[u].ptr if u in arrays else None for u in plan.uids])
    _check(plan, launches[-1], arrays, {s.uid: 3.0})
    s.value = "6"  # checked as any scalar is, not converted by NumPy
    with pytest.raises(TypeError):
        plan.execute({t: arrays[t.uid] for t in ts})
    plan.set_scalar(s, 4.0)  # set_scalar's default comes before the graph's
    s.value = 5.0
    plan.execute({t: arrays[t.uid] for t in ts})
    _check(plan, launches[-1], arrays, {s.uid: 4.0})


# --------------------------------------------------------------------------------------------------
# Outputs that meet another array's memory
# --------------------------------------------------------------------------------------------------


def _two_outputs(name: str) -> Any:
    """``y = x + b`` and ``z = x * b`` (NCHW float32 [2, 8, 5, 6]): two inputs, two outputs."""
    g = pycudnn.Graph(name)
    x = g.tensor([2, 8, 5, 6], name="x")
    b = g.tensor([2, 8, 5, 6], name="b")
    g.add(x, b, name="y").set_output(True)
    g.mul(x, b, name="z").set_output(True)
    return g


def test_an_output_meeting_an_input_or_another_output_is_refused(sets: Any, props: Any) -> None:
    """cuDNN reads the inputs while it writes the outputs: an output whose memory meets an
    input's (or another output's) computes from values already overwritten, silently."""
    g = _two_outputs("overlap")
    x, b, y, z = g["x"], g["b"], g["y.y"], g["z.y"]
    with g.build(device_properties=props, cache=False) as plan:
        launches = _arm(plan, sets)
        ax, ab, ay, az = (_array_for(t) for t in (x, b, y, z))
        plan.execute({x: ax, b: ab, y: ay, z: az})
        arrays = {x.uid: ax, b.uid: ab, y.uid: ay, z.uid: az}
        _check(plan, launches[-1], arrays, {})
        n = len(launches)
        for given in (
            {x: ax, b: ab, y: _array_for(y, ptr=ax.ptr + 64), z: az},  # y inside x
            {x: ax, b: ab, y: _array_for(y, ptr=ax.ptr), z: az},  # y exactly x
            {x: ax, b: _array_for(b, ptr=az.ptr), y: ay, z: az},  # b exactly z
            {x: ax, b: ab, y: ay, z: _array_for(z, ptr=ay.ptr + 16)},  # the outputs meet
        ):
            with pytest.raises(ValueError, match="overlaps"):
                plan.execute(given)
        assert len(launches) == n
        # two inputs may share memory; outputs interleaved with an input without meeting it
        # (even and odd elements of one buffer) are apart
        plan.execute({x: ax, b: _array_for(b, ptr=ax.ptr), y: ay, z: az})
        base = fake((2, 8, 5, 6, 2), np.float32)
        even = fake((2, 8, 5, 6), np.float32, ptr=base.ptr, strides=(480, 60, 12, 2))
        odd = fake((2, 8, 5, 6), np.float32, ptr=base.ptr + 4, strides=(480, 60, 12, 2))
        g2 = pycudnn.Graph("interleaved")
        x2 = g2.tensor([2, 8, 5, 6], strides=[480, 60, 12, 2], name="x", alignment=4)
        y2 = g2.tensor([2, 8, 5, 6], strides=[480, 60, 12, 2], name="y", alignment=4)
        g2.add(x2, x2, name="sum", out=y2)
        with g2.build(device_properties=props, cache=False) as plan2:
            launches2 = _arm(plan2, sets)
            plan2.execute({"x": even, "y": odd})
            assert launches2[-1]["binding"][y2.uid] == odd.ptr
            with pytest.raises(ValueError, match="overlaps"):
                plan2.execute({"x": even, "y": even})


def _in_place_concat() -> Any:
    """A convolution's output joined with ``o`` along C (NHWC half [2, 64, 8, 8]), ``o`` named the
    in-place input: its memory already is the channel slice [32, 64) of the output."""
    g = pycudnn.Graph("in_place_concat")
    x = g.tensor([2, 32, 8, 8], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1, name="conv")
    o = g.tensor([2, 32, 8, 8], strides=[4096, 1, 512, 64], dtype="float16", name="o")
    g.concatenate([y, o], axis=1, in_place_index=1, name="cat").set_output(True)
    return g


def test_the_in_place_input_of_a_concatenation_may_lie_in_its_output(sets: Any, props: Any) -> None:
    """``concatenate(in_place_index=k)`` tells cuDNN that input ``k`` already is its slice of the
    output: that input inside the output is the arrangement it describes, not an overlap to
    refuse. Any other input meeting the output still is, with or without the graph."""
    g = _in_place_concat()
    x, w, o, out = g["x"], g["w"], g["o"], g["cat.y"]
    with g.build(device_properties=props, cache=False) as plan:
        text = plan.to_json()
        plans = [plan, pycudnn.Plan.from_json(text, device_properties=props)]
        for p in plans:
            launches = _arm(p, sets)
            ax, aw, aout = (_array_for(t) for t in (x, w, out))
            slice_ = fake(tuple(o.array_shape), o.dtype, strides=o.array_strides, ptr=aout.ptr + 64)
            p.execute({"x": ax, "w": aw, "o": slice_, "cat.y": aout})
            assert launches[-1]["binding"][o.uid] == slice_.ptr
            n = len(launches)
            inside = fake(tuple(x.array_shape), x.dtype, strides=x.array_strides, ptr=aout.ptr)
            with pytest.raises(ValueError, match="overlaps the input array of tensor 'x'"):
                p.execute({"x": inside, "w": aw, "o": slice_, "cat.y": aout})
            assert len(launches) == n
        plans[1].close()


def test_a_workspace_meeting_an_array_is_refused(sets: Any, props: Any) -> None:
    """cuDNN writes the workspace while it reads the inputs and writes the outputs: a
    ``workspace=`` whose memory meets an array's corrupts it, silently."""
    from pycudnn.plan import build_engine

    g = pycudnn.Graph("ws_meets")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1, name="conv")
    with build_engine(g, 1, device_properties=props) as plan:  # engine 1 needs a workspace
        assert plan.workspace_size > 0
        launches = _arm(plan, sets)
        arrays = {t: _array_for(t) for t in (x, w, y)}
        ws = fake((plan.workspace_size,), np.uint8)
        plan.execute(arrays, workspace=ws)
        n = len(launches)
        for t in (x, w, y):
            inside = fake((plan.workspace_size,), np.uint8, ptr=arrays[t].ptr + 256)
            with pytest.raises(
                ValueError, match=f"workspace overlaps the array of tensor '{t.name}'"
            ):
                plan.execute(arrays, workspace=inside)
        assert len(launches) == n
