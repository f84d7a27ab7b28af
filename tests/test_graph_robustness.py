"""Robustness of the graph API: nothing crashes, nothing leaks, refusals say what is wrong, threads.

Every refusal tested here guards a crash observed with the real cuDNN 9.28 (a segfault, an abort
from an escaped C++ exception, SIGFPE or heap corruption): the test names what cuDNN did without
the guard. Fuzzing loops that reach cuDNN run in a subprocess, so that a crash fails the test
instead of killing the test run; they must end with exit code 0, and every Python exception they
meet must be one of the documented ones.

Tiers: the backend-descriptor and graph tests need libcuda.so.1 (fixture ``libcuda``); the JSON
and device-properties checks run anywhere (Python refuses before cuDNN is called); tests that need
execution plans use a device-properties JSON captured on a real GPU (``deviceprops_json``) or, on
the GPU tier, the GPU itself.

What may be shared between threads (NVIDIA: cuDNN is thread-safe as long as threads do not share
a handle at the same time; nothing says descriptors or plans may be shared): graphs can be built
and finalized on several threads at once (one graph per thread); a ``DeviceProperties`` may be
shared (its read-only DEVICEPROP descriptor is built once under a lock); a ``PlanCache`` may be
shared (it locks). A ``Plan`` and a ``BackendDescriptor`` must not be used from two threads at the
same time, and the default plan cache is per thread so that ``build`` never hands one plan to two
threads.
"""

from __future__ import annotations

import copy
import gc
import json
import logging
import pickle
import re
import subprocess
import threading
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from children import run_python
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from versioned import heuristics_run_here, skip_unless_cudnn_has, skip_unless_heuristics_run_here

import pycudnn
from _nvbind.resource import ClosedError
from pycudnn import log, raw
from pycudnn._versions import HEURISTICS_WITHOUT_TARGET_SINCE
from pycudnn.backend import BackendDescriptor, check_plan_json
from pycudnn.deviceprops import REQUIRED_KEYS, DeviceProperties, validate_json
from pycudnn.errors import CudnnBadParamError, CudnnError, CudnnNotSupportedError
from pycudnn.graph import MAX_RANK, MIN_RANK, Graph, GraphError
from pycudnn.plan import (
    GraphNotSupportedError,
    Plan,
    PlanCache,
    autotune,
    build,
    build_all,
    default_plan_cache,
    engine_configs,
    run_heuristics,
)

REPO = Path(__file__).resolve().parent.parent
INT64_MAX = 2**63 - 1

libcuda = pytest.mark.usefixtures("libcuda")


def assert_clean_exit(out: subprocess.CompletedProcess[str]) -> None:
    # A negative return code is the signal that killed the process (SIGSEGV -11, SIGABRT -6, ...).
    assert out.returncode == 0, (
        f"exit code {out.returncode}\nstdout: {out.stdout[-2000:]}\nstderr: {out.stderr[-4000:]}"
    )
    for sign in ("Traceback (most recent call last)", "Exception ignored", "Fatal Python error"):
        assert sign not in out.stderr, out.stderr[-4000:]


def tensor_descriptor(uid: int = 1, dims: tuple[int, ...] = (1, 8, 4, 4)) -> BackendDescriptor:
    strides: list[int] = []
    acc = 1
    for d in reversed(dims):
        strides.insert(0, acc)
        acc *= d
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_UNIQUE_ID", uid)
    t.set("TENSOR_DIMENSIONS", list(dims))
    t.set("TENSOR_STRIDES", strides)
    t.set("TENSOR_BYTE_ALIGNMENT", 16)
    t.set("TENSOR_DATA_TYPE", "FLOAT")
    t.finalize()
    return t


def relu_graph(name: str = "relu") -> Graph:
    g = Graph(name)
    x = g.tensor([1, 8, 4, 4], name="x")
    b = g.tensor([1, 8, 1, 1], name="b")
    g.relu(g.add(x, b, name="add"), name="relu")
    return g


def conv_graph(name: str = "conv") -> Graph:
    g = Graph(name)
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1, name="conv")
    return g


def conv_bias_relu() -> Graph:
    g = Graph("conv_bias_relu")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
    g.relu(g.add(g.conv_fprop(x, w, padding=1, name="conv"), b, name="bias_add"), name="relu")
    return g


def pointwise_op_graph() -> tuple[BackendDescriptor, list[BackendDescriptor]]:
    """A finalized OPERATIONGRAPH (ReLU) built from raw descriptors, and the descriptors in it."""
    x, y = tensor_descriptor(1), tensor_descriptor(2)
    pw = BackendDescriptor("POINTWISE")
    pw.set("POINTWISE_MODE", "RELU_FWD")
    pw.set("POINTWISE_MATH_PREC", "FLOAT")
    pw.finalize()
    op = BackendDescriptor("OPERATION_POINTWISE")
    for attr, value in (("PW_DESCRIPTOR", pw), ("XDESC", x), ("YDESC", y)):
        op.set("OPERATION_POINTWISE_" + attr, value, attr_type="BACKEND_DESCRIPTOR")
    op.finalize()
    g = BackendDescriptor("OPERATIONGRAPH")
    g.set("OPERATIONGRAPH_OPS", [op])
    g.finalize()
    return g, [x, y, pw, op]


# ==================================================================================================
# 1. Backend descriptors: what crashed cuDNN is refused in Python
# ==================================================================================================


@libcuda
@pytest.mark.parametrize(
    ("owner", "attr"),
    [
        # each of these segfaulted in cudnnBackendSetAttribute when given a TENSOR
        ("ENGINEHEUR", "ENGINEHEUR_OPERATION_GRAPH"),
        ("OPERATIONGRAPH", "OPERATIONGRAPH_OPS"),
        ("ENGINECFG", "ENGINECFG_ENGINE"),
        ("EXECUTION_PLAN", "EXECUTION_PLAN_DEVICEPROP"),
        ("EXECUTION_PLAN", "EXECUTION_PLAN_ENGINE_CONFIG"),
        ("ENGINE", "ENGINE_OPERATION_GRAPH"),
    ],
)
def test_descriptor_of_the_wrong_kind_is_refused(owner: str, attr: str) -> None:
    skip_unless_cudnn_has(f"CUDNN_ATTR_{attr}")
    d = BackendDescriptor(owner)
    with pytest.raises(TypeError) as info:
        d.set(attr, tensor_descriptor())
    text = str(info.value)
    assert f"CUDNN_ATTR_{attr}" in text and "CUDNN_BACKEND_TENSOR_DESCRIPTOR" in text


@libcuda
def test_descriptors_of_the_right_kind_are_still_accepted() -> None:
    skip_unless_heuristics_run_here()
    graph, _ = pointwise_op_graph()  # TENSORs, a POINTWISE and an OPERATION_POINTWISE above
    heur = BackendDescriptor("ENGINEHEUR")
    heur.set("ENGINEHEUR_OPERATION_GRAPH", graph)
    heur.set("ENGINEHEUR_MODE", raw.cudnnBackendHeurMode_t(int(raw.CUDNN_HEUR_MODE_FALLBACK)))
    heur.finalize()
    assert heur.is_finalized


@libcuda
@pytest.mark.parametrize(
    ("owner", "attr"),
    [
        ("OPERATIONGRAPH", "OPERATIONGRAPH_HANDLE"),
        ("DEVICEPROP", "DEVICEPROP_HANDLE"),
        ("EXECUTION_PLAN", "EXECUTION_PLAN_HANDLE"),
    ],
)
@pytest.mark.parametrize("value", [0x1234, 1, [0x1234], None])
def test_handle_attributes_take_handles_not_raw_pointers(owner: str, attr: str, value: Any) -> None:
    # cuDNN dereferences a HANDLE attribute: 0x1234 segfaulted finalizing a DEVICEPROP or an
    # OPERATIONGRAPH, and a NULL EXECUTION_PLAN_HANDLE finalizing a deserialized plan.
    skip_unless_cudnn_has(f"CUDNN_BACKEND_{owner}_DESCRIPTOR", f"CUDNN_ATTR_{attr}")
    d = BackendDescriptor(owner)
    with pytest.raises(TypeError, match=rf"CUDNN_ATTR_{attr} takes .*pycudnn\.Handle"):
        d.set(attr, value)


@libcuda
@pytest.mark.parametrize(
    ("kind", "attrs", "fragment"),
    [
        # each of these segfaulted in cudnnBackendFinalize
        ("ENGINECFG", {}, "CUDNN_ATTR_ENGINECFG_ENGINE is not set"),
        ("EXECUTION_PLAN", {}, "EXECUTION_PLAN_ENGINE_CONFIG"),
        (
            "EXECUTION_PLAN",
            {"EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS": 0},
            "EXECUTION_PLAN_ENGINE_CONFIG",
        ),
        # a deserialized plan with neither DEVICEPROP nor a handle (a known cuDNN crash)
        (
            "EXECUTION_PLAN",
            {"EXECUTION_PLAN_JSON_REPRESENTATION": '{"cudnnVersion": 1}'},
            "neither CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP nor a handle",
        ),
    ],
)
def test_finalizations_that_crash_cudnn_are_refused(
    kind: str, attrs: dict[str, Any], fragment: str
) -> None:
    d = BackendDescriptor(kind)
    for attr, value in attrs.items():
        d.set(attr, value, attr_type="CHAR" if "JSON" in attr else None)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        d.finalize()
    assert not d.is_finalized


@libcuda
def test_cuda_graph_retention_alone_does_not_reach_finalize() -> None:
    if "EXECUTION_PLAN_CUDA_GRAPH_RETENTION" not in raw.cudnnBackendAttributeName_t.__members__:
        pytest.skip("the headers have no CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION")
    since = raw.ENUMERATOR_SINCE["CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION"]
    d = BackendDescriptor("EXECUTION_PLAN")
    if pycudnn.version_tuple() < since:
        # An older cuDNN answers it with CUDNN_STATUS_BAD_PARAM: it is refused before C instead.
        with pytest.raises(pycudnn.UnsupportedByLibraryError, match="CUDA_GRAPH_RETENTION") as e:
            d.set("EXECUTION_PLAN_CUDA_GRAPH_RETENTION", 0, attr_type="CUDA_GRAPH_RETENTION")
        assert e.value.required == since and e.value.loaded == pycudnn.version_tuple()
        return
    d.set("EXECUTION_PLAN_CUDA_GRAPH_RETENTION", 0, attr_type="CUDA_GRAPH_RETENTION")
    with pytest.raises(ValueError, match="EXECUTION_PLAN_ENGINE_CONFIG"):
        d.finalize()


@libcuda
def test_reading_an_unset_descriptor_attribute_is_refused() -> None:
    # TENSOR_RAGGED_OFFSET_DESC, never set, counts 1 element; reading it segfaulted.
    t = tensor_descriptor()
    with pytest.raises(ValueError, match="CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC"):
        t.get("TENSOR_RAGGED_OFFSET_DESC")
    with pytest.raises(ValueError, match="not set through this object"):
        t.element_count("TENSOR_RAGGED_OFFSET_DESC")


@libcuda
def test_reading_a_non_descriptor_attribute_as_descriptors_is_refused() -> None:
    # A count query of OPERATIONGRAPH_IS_SAME_TOPOLOGY as BACKEND_DESCRIPTOR segfaulted.
    skip_unless_cudnn_has("CUDNN_ATTR_OPERATIONGRAPH_IS_SAME_TOPOLOGY")
    graph, _ = pointwise_op_graph()
    for call in (graph.get, graph.element_count):
        with pytest.raises(ValueError, match="OPERATIONGRAPH_IS_SAME_TOPOLOGY"):
            call("OPERATIONGRAPH_IS_SAME_TOPOLOGY", attr_type="BACKEND_DESCRIPTOR")


@libcuda
def test_descriptor_reads_use_the_kind_the_attribute_holds() -> None:
    skip_unless_heuristics_run_here()
    graph, _ = pointwise_op_graph()
    heur = BackendDescriptor("ENGINEHEUR")
    heur.set("ENGINEHEUR_OPERATION_GRAPH", graph)
    heur.set("ENGINEHEUR_MODE", raw.cudnnBackendHeurMode_t(int(raw.CUDNN_HEUR_MODE_FALLBACK)))
    heur.finalize()
    # Reading ENGINEHEUR_OPERATION_GRAPH into TENSOR (or any other kind) segfaulted.
    for wrong in ("TENSOR", "ENGINECFG", "VARIANT_PACK"):
        with pytest.raises(TypeError, match="CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR"):
            heur.get("ENGINEHEUR_OPERATION_GRAPH", descriptor_type=wrong)
    # Without descriptor_type= the kind that was set is used; cuDNN answers as it does.
    try:
        back = heur.get("ENGINEHEUR_OPERATION_GRAPH")
    except CudnnError:
        pass
    else:
        assert back is None or back.type_name == "CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR"


@libcuda
@pytest.mark.parametrize(
    ("attr", "value", "attr_type"),
    [
        ("TENSOR_DIMENSIONS", [2**64 + 4, 1, 1], None),  # ctypes stored 4
        ("TENSOR_UNIQUE_ID", 2**63, None),
        ("TENSOR_UNIQUE_ID", -(2**63) - 1, None),
        ("TENSOR_STRIDES", [1, 2**70], None),
    ],
)
def test_integers_that_do_not_fit_are_refused_not_wrapped(
    attr: str, value: Any, attr_type: Any
) -> None:
    t = BackendDescriptor("TENSOR")
    with pytest.raises(ValueError, match=rf"CUDNN_ATTR_{attr} .*out of range"):
        t.set(attr, value, attr_type=attr_type)
    t.set("TENSOR_UNIQUE_ID", INT64_MAX)  # the largest int64 is fine
    t.set("TENSOR_UNIQUE_ID", -(2**63))


@libcuda
def test_int32_and_pointer_ranges() -> None:
    heur = BackendDescriptor("ENGINEHEUR")
    with pytest.raises(ValueError, match=r"INT32.*out of range"):
        heur.set("ENGINEHEUR_SM_COUNT_TARGET", 2**31, attr_type="INT32")
    heur.set("ENGINEHEUR_SM_COUNT_TARGET", 2**31 - 1, attr_type="INT32")
    vp = BackendDescriptor("VARIANT_PACK")
    with pytest.raises(ValueError, match=r"VARIANT_PACK_DATA_POINTERS.*out of range"):
        vp.set("VARIANT_PACK_DATA_POINTERS", [2**64])
    with pytest.raises(TypeError, match="VARIANT_PACK_DATA_POINTERS"):
        vp.set("VARIANT_PACK_DATA_POINTERS", [-1])
    vp.set("VARIANT_PACK_DATA_POINTERS", [2**64 - 1])


@libcuda
def test_axis_attributes_are_dimension_indices() -> None:
    # OPERATION_CONCAT_AXIS = 2**31 segfaulted finalizing (cuDNN indexes the dims with it).
    concat = BackendDescriptor("OPERATION_CONCAT")
    for bad in (2**31, 8, -2, [1, 9]):
        with pytest.raises(ValueError, match=r"CUDNN_ATTR_OPERATION_CONCAT_AXIS is a dimension"):
            concat.set("OPERATION_CONCAT_AXIS", bad)
    concat.set("OPERATION_CONCAT_AXIS", 7)
    pw = BackendDescriptor("POINTWISE")
    pw.set("POINTWISE_AXIS", -1)  # the documented default, "no axis"


@libcuda
def test_get_count_is_bounded() -> None:
    t = tensor_descriptor()
    with pytest.raises(ValueError, match="count must be at most"):
        t.get("TENSOR_DIMENSIONS", count=2**40)
    assert t.get("TENSOR_DIMENSIONS", count=3) == [1, 8, 4]  # a short read is allowed


@libcuda
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.one_of(
        st.none(),
        st.booleans(),
        st.floats(allow_nan=True),
        st.text(max_size=5),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.lists(
            st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.floats(), st.text()),
            max_size=10,
        ),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    )
)
def test_any_python_value_is_stored_exactly_or_refused(value: Any) -> None:
    t = BackendDescriptor("TENSOR")
    try:
        t.set("TENSOR_DIMENSIONS", value)
    except (TypeError, ValueError) as exc:
        assert "CUDNN_ATTR_TENSOR_DIMENSIONS" in str(exc)
        return
    # Accepted: exactly ints in the int64 range (a lone int counts as one element) ...
    items = value if isinstance(value, list) else [value]
    assert all(
        isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v <= INT64_MAX for v in items
    )
    t.set("TENSOR_STRIDES", [1] * len(items))
    t.set("TENSOR_UNIQUE_ID", 1)
    t.set("TENSOR_DATA_TYPE", "FLOAT")
    t.set("TENSOR_BYTE_ALIGNMENT", 4)
    # ... and cuDNN keeps what was stored: read back, when it accepts the tensor at all.
    try:
        t.finalize()
    except CudnnError:
        return
    assert t.get("TENSOR_DIMENSIONS", many=True) == items


@libcuda
def test_closed_descriptors_never_reach_cudnn() -> None:
    t = tensor_descriptor()
    t.close()
    t.close()  # idempotent
    for call in (
        lambda: t.set("TENSOR_UNIQUE_ID", 3),
        lambda: t.get("TENSOR_DIMENSIONS"),
        lambda: t.element_count("TENSOR_DIMENSIONS"),
        t.finalize,
    ):
        with pytest.raises(ClosedError):
            call()
    op = BackendDescriptor("OPERATION_POINTWISE")
    with pytest.raises(ClosedError):
        op.set("OPERATION_POINTWISE_XDESC", t, attr_type="BACKEND_DESCRIPTOR")
    assert issubclass(ClosedError, ValueError)


@libcuda
def test_raw_graph_mixing_matmul_and_convolution_is_refused() -> None:
    # cuDNN's heuristics segfaulted materializing configs for such graphs (with DEVICEPROP or on
    # a GPU): refused when the OPERATIONGRAPH is finalized.
    g = Graph("mm")
    a = g.tensor([1, 8, 8], name="a")
    g.matmul(a, g.tensor([1, 8, 8], name="b"))
    c = conv_graph()
    g.finalize()
    c.finalize()
    mixed = BackendDescriptor("OPERATIONGRAPH")
    mixed.set("OPERATIONGRAPH_OPS", [*g._descriptors["ops"], *c._descriptors["ops"]])  # type: ignore[index]
    with pytest.raises(ValueError, match="mixes OPERATION_MATMUL with OPERATION_CONVOLUTION"):
        mixed.finalize()


FUZZ_BACKEND = r"""
import random
import sys
from fractions import Fraction

from pycudnn import _bindings as b
from pycudnn.backend import ENUM_OF_TYPE, BackendDescriptor
from pycudnn.errors import CudnnError, UnsupportedByLibraryError

seed, rounds = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
T = b.cudnnBackendAttributeType_t
D = b.cudnnBackendDescriptorType_t
# UnsupportedByLibraryError: a symbol newer than the loaded cuDNN, refused before C.
EXPECTED = (TypeError, ValueError, CudnnError, UnsupportedByLibraryError)


def tensor(uid):
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_UNIQUE_ID", uid)
    t.set("TENSOR_DIMENSIONS", [1, 8, 4, 4])
    t.set("TENSOR_STRIDES", [128, 16, 4, 1])
    t.set("TENSOR_BYTE_ALIGNMENT", 16)
    t.set("TENSOR_DATA_TYPE", "FLOAT")
    t.finalize()
    return t


pool = [tensor(i + 1) for i in range(3)]
pw = BackendDescriptor("POINTWISE")
pw.set("POINTWISE_MODE", "RELU_FWD")
pw.set("POINTWISE_MATH_PREC", "FLOAT")
pw.finalize()
op = BackendDescriptor("OPERATION_POINTWISE")
for attr, value in (("PW_DESCRIPTOR", pw), ("XDESC", pool[0]), ("YDESC", pool[1])):
    op.set("OPERATION_POINTWISE_" + attr, value, attr_type="BACKEND_DESCRIPTOR")
op.finalize()
graph = BackendDescriptor("OPERATIONGRAPH")
graph.set("OPERATIONGRAPH_OPS", [op])
graph.finalize()
heur = BackendDescriptor("ENGINEHEUR")
heur.set("ENGINEHEUR_OPERATION_GRAPH", graph)
heur.set("ENGINEHEUR_MODE", "MODE_FALLBACK")
heur.finalize()
pool += [pw, op, graph, heur]
closed = BackendDescriptor("TENSOR")
closed.close()
unfinalized = BackendDescriptor("TENSOR")
owners = {}
for attr, spec in b.ATTRIBUTES.items():
    if spec.descriptor_type is not None:
        owners.setdefault(int(spec.descriptor_type), []).append(attr)
kinds = sorted(owners)
types = list(T)
wrong = [None, "abc", "", 1.5, -1, 2**64 + 3, -(2**63) - 1, [1, "x"], {}, object(), True,
         [2**70], Fraction(1, 3), b"\x00", closed, unfinalized]


def value_for(ty):
    if rng.random() < 0.15:
        return rng.choice(wrong)
    if ty == T.BACKEND_DESCRIPTOR:
        return rng.choice(pool) if rng.random() < 0.6 else rng.sample(pool, rng.randint(1, 3))
    if ty in (T.INT64, T.INT32):
        n = rng.choice([1, 1, 2, 4, 9, 40])
        return [rng.choice([0, 1, -1, 3, 16, 2**31 - 1, 2**62, -(2**63)]) for _ in range(n)]
    if ty in (T.FLOAT, T.DOUBLE):
        return rng.choice([0.0, 1.0, -1e300, float("nan"), float("inf"), [1.0] * 9])
    if ty == T.BOOLEAN:
        return rng.choice([True, False, [True] * 9])
    if ty == T.CHAR:
        return rng.choice(["", "{}", "[]", "{not json", '{"deviceName": 1}', "x" * 5000,
                           '{"deviceName": "' + "x" * 300 + '"}'])
    if ty == T.FRACTION:
        return rng.choice([Fraction(1, 3), (1, 0), (2**62, 1)])
    if ty == T.VOID_PTR:
        return [rng.choice([0, 256, 2**40, 2**64 - 1]) for _ in range(rng.randint(1, 4))]
    if ty == T.HANDLE:
        return rng.choice([None, 0x1234, 1])
    if int(ty) in ENUM_OF_TYPE:
        return rng.choice(list(ENUM_OF_TYPE[int(ty)]) + [-1, 10**6, 2**40])
    return rng.randint(-5, 5)


def some_type(attr, p):
    documented = b.ATTRIBUTES[attr].attr_type
    return documented if documented is not None and rng.random() < p else rng.choice(types)


for _ in range(rounds):
    kind = rng.choice(kinds)
    try:
        d = BackendDescriptor(kind)
    except EXPECTED:
        continue
    for _ in range(rng.randint(0, 5)):
        attr = rng.choice(owners[kind])
        try:
            d.set(attr, value_for(some_type(attr, 0.7)), attr_type=some_type(attr, 1.0))
        except EXPECTED:
            pass
    try:
        d.finalize()
    except EXPECTED:
        d.close()
        continue
    if rng.random() < 0.3:
        pool.append(d)
    for _ in range(rng.randint(1, 6)):
        attr = rng.choice(owners[kind])
        kw = {}
        if rng.random() < 0.3:
            kw["descriptor_type"] = rng.choice(list(D)[:20])
        if rng.random() < 0.3:
            kw["many"] = rng.random() < 0.5
        if rng.random() < 0.1:
            kw["count"] = rng.choice([1, 3, 2**40])
        try:
            if rng.random() < 0.2:
                d.element_count(attr, attr_type=some_type(attr, 0.5))
            else:
                d.get(attr, attr_type=some_type(attr, 0.5), **kw)
        except EXPECTED:
            pass
print("fuzzed", rounds)
"""


@libcuda
@pytest.mark.parametrize("seed", [1, 2])
def test_backend_descriptor_fuzz_never_crashes(seed: int) -> None:
    # Random descriptors, attributes, Python values of right and wrong types, finalize, reads.
    # Before the guards above, each of these seeds crashed within 1,500 rounds.
    out = run_python(FUZZ_BACKEND, str(seed), "8000")
    assert_clean_exit(out)
    assert "fuzzed 8000" in out.stdout


# ==================================================================================================
# 2. Graphs: refusals before cuDNN, with the operation and the tensor named
# ==================================================================================================


def test_an_operation_cannot_write_its_own_input() -> None:
    # cuDNN only refused this cycle at the OPERATIONGRAPH ("outputGraph.buildDAG()").
    g = Graph("loop")
    x = g.tensor([1, 4, 4, 4], name="x")
    with pytest.raises(GraphError, match=r"relu_fwd 'r': out \('x'\) is also an input"):
        g.relu(x, out=x, name="r")
    with pytest.raises(GraphError, match=r"add 'a': out \('x'\) is also an input"):
        g.add(x, g.tensor([1, 4, 1, 1], name="b"), out=x, name="a")
    assert x.producer is None and not x.consumers  # nothing was recorded


def test_a_tensor_produced_after_it_is_read_is_refused() -> None:
    g = Graph("late")
    x = g.tensor([1, 4, 4, 4], name="x")
    t = g.tensor([1, 4, 4, 4], name="t")
    g.exp(t, name="reads_t")
    with pytest.raises(GraphError, match=r"out \('t'\) is already read by exp 'reads_t'"):
        g.relu(x, out=t)


def test_tensors_of_another_graph_are_refused() -> None:
    g1, g2 = Graph("one"), Graph("two")
    a = g1.tensor([1, 4, 4, 4], name="a")
    b = g2.tensor([1, 4, 4, 4], name="b")
    with pytest.raises(GraphError, match=r"X \('a'\) belongs to graph 'one', not 'two'"):
        g2.relu(a)
    with pytest.raises(GraphError, match="out must be a Tensor of this graph"):
        g1.relu(a, out=b)
    with pytest.raises(TypeError, match="must be a Tensor of this graph, not ndarray"):
        import numpy as np

        g1.relu(np.zeros((1, 4, 4, 4)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "exc", "fragment"),
    [
        ({"dims": [4]}, GraphError, "rank 1; graph tensors have 3 to 8 dims"),
        ({"dims": [4, 4]}, GraphError, "rank 2"),
        ({"dims": [1] * 9}, GraphError, "rank 9"),
        ({"dims": [1, 0, 4]}, GraphError, "dims[1] is 0; extents must be positive"),
        ({"dims": [1, -2, 4]}, GraphError, "dims[1] is -2"),
        ({"dims": [1, 2.0, 4]}, TypeError, "dims[1] must be an int"),
        ({"dims": "abc"}, TypeError, "dims must be a sequence of ints"),
        ({"dims": [1, 2, 4], "strides": [8, 4, -1]}, GraphError, "strides[2] is -1"),
        ({"dims": [1, 2, 4], "strides": [8, 0, 1]}, GraphError, "strides[1] is 0"),
        ({"dims": [1, 2, 4], "strides": [8, 4]}, GraphError, "has 2 entries but dims"),
        ({"dims": [1, 2, 4], "fmt": "NHWC"}, GraphError, "tensor 't'"),
        ({"dims": [1, 2, 4], "alignment": 3}, GraphError, "alignment 3 must be a power of two"),
        # cuDNN takes the alignment as an int64: 2**64 would reach it as 0
        ({"dims": [1, 2, 4], "alignment": 2**64}, GraphError, "power of two up to 2**62"),
        ({"dims": [1, 2, 4], "dtype": "complex256"}, (TypeError, ValueError), "complex256"),
        # the byte extent must fit in an int64 (cuDNN computes offsets in int64)
        ({"dims": [2**32, 2**32, 2**32]}, GraphError, "more than an int64 can address"),
        ({"dims": [1, 4, 4], "strides": [2**62, 2**60, 1]}, GraphError, "int64"),
        ({"dims": [1, 2**31, 2**31]}, GraphError, "int64"),
    ],
)
def test_tensor_refusals_name_the_tensor_and_the_rule(
    kwargs: dict[str, Any], exc: Any, fragment: str
) -> None:
    g = Graph("g")
    with pytest.raises(exc) as info:
        g.tensor(name="t", **kwargs)
    assert fragment in str(info.value)
    if not isinstance(info.value, TypeError):
        assert "'t'" in str(info.value) or "complex256" in str(info.value)


def test_duplicate_names_are_refused() -> None:
    g = Graph("dup")
    x = g.tensor([1, 4, 4, 4], name="x")
    with pytest.raises(GraphError, match="already has a tensor named 'x'"):
        g.tensor([1, 4, 4, 4], name="x")
    g.relu(x, name="r")
    with pytest.raises(GraphError, match="already has an operation named 'r'"):
        g.relu(x, name="r")


def test_largest_addressable_tensor_is_accepted() -> None:
    g = Graph("big")
    # 2**62 float16 elements: 2**63 bytes would not fit; one element less does.
    t = g.tensor([1, 2**31, 2**31 - 1], dtype="float16")
    assert t.dims == (1, 2**31, 2**31 - 1)


@settings(max_examples=50, deadline=None)
@given(
    dims=st.lists(st.integers(min_value=-3, max_value=2**40), min_size=0, max_size=10),
    strides=st.one_of(
        st.none(), st.lists(st.integers(min_value=-3, max_value=2**62), min_size=0, max_size=10)
    ),
    dtype=st.sampled_from(["float32", "float16", "int8", "float64"]),
)
def test_any_dims_and_strides_give_a_valid_tensor_or_a_graph_error(
    dims: list[int], strides: list[int] | None, dtype: str
) -> None:
    g = Graph("h")
    try:
        t = g.tensor(dims, strides, dtype=dtype)
    except GraphError as exc:
        assert str(exc).startswith("tensor")
        return
    assert MIN_RANK <= len(t.dims) <= MAX_RANK
    assert all(d >= 1 for d in t.dims) and all(s >= 1 for s in t.strides)
    span = sum((d - 1) * s for d, s in zip(t.dims, t.strides, strict=True)) + 1
    assert span * t.dtype.itemsize <= INT64_MAX  # type: ignore[union-attr]


@libcuda
def test_convolution_settings_must_fit_in_int64() -> None:
    g = Graph("pad")
    x = g.tensor([1, 4, 8, 8], name="x")
    w = g.tensor([4, 4, 3, 3], name="w")
    with pytest.raises(GraphError, match=r"conv_fprop 'c': padding\[0\] is .*fit in an int64"):
        g.conv_fprop(x, w, padding=2**63, name="c")
    # A padding that fits but makes the output too large is refused when the graph is built,
    # naming the operation and its output.
    g.conv_fprop(x, w, padding=2**61, name="huge")
    with pytest.raises(GraphError, match=r"conv_fprop 'huge': output 'huge\.y'.*int64 can address"):
        g.finalize()


def test_matmul_and_convolution_cannot_share_a_graph() -> None:
    # cuDNN's heuristics segfault on such graphs once configs can be materialized.
    g = Graph("mixed")
    x = g.tensor([1, 8, 8, 8], name="x")
    w = g.tensor([8, 8, 3, 3], name="w")
    y = g.conv_fprop(x, w, padding=1, name="conv")
    with pytest.raises(GraphError, match=r"matmul 'mm': graph 'mixed' already has conv_fprop"):
        g.matmul(y, g.tensor([1, 8, 8, 8], name="b"), name="mm")
    m = Graph("mixed2")
    a = m.tensor([1, 8, 8, 8], name="a")
    c = m.matmul(a, m.tensor([1, 8, 8, 8], name="b"), name="mm")
    with pytest.raises(GraphError, match=r"conv_dgrad 'd': graph 'mixed2' already has matmul"):
        m.conv_dgrad(c, m.tensor([8, 8, 3, 3], name="w"), padding=1, name="d")


@pytest.mark.parametrize("fn", [run_heuristics, engine_configs, build, build_all, autotune])
def test_planning_functions_take_graphs_only(fn: Any) -> None:
    args: tuple[Any, ...] = ({},) if fn is autotune else ()
    with pytest.raises(TypeError, match=r"graph must be a pycudnn\.Graph, not GraphBuilder"):
        fn(type("GraphBuilder", (), {})(), *args)


@libcuda
def test_a_refused_graph_can_be_fixed_and_built() -> None:
    # A virtual output nobody reads (cuDNN found no engine, "NOT_SUPPORTED_LAYOUT") is refused;
    # the refusal leaves the graph as it was, so the output can still be kept.
    g = Graph("fixable")
    x = g.tensor([1, 4, 4, 4], name="x")
    y = g.relu(x, name="r")
    y.set_output(False)
    with pytest.raises(GraphError, match=r"relu_fwd 'r': output 'r.y' is virtual and read by no"):
        g.finalize()
    assert y.is_virtual is None and y.dtype is None  # nothing decided by the failed attempt
    y.set_output(True)
    g.finalize()
    assert y.is_virtual is False and y.is_output


@libcuda
def test_virtual_input_without_producer_is_refused() -> None:
    g = Graph("v")
    t = g.tensor([1, 4, 4, 4], name="t", virtual=True)
    g.relu(t)
    with pytest.raises(GraphError, match="tensor 't' is virtual but no operation writes it"):
        g.finalize()


@libcuda
def test_graph_error_classes() -> None:
    assert issubclass(GraphError, ValueError)
    assert issubclass(CudnnBadParamError, ValueError) and issubclass(CudnnBadParamError, CudnnError)
    assert issubclass(GraphNotSupportedError, CudnnNotSupportedError)
    # What only cuDNN judges is its own error class, naming the operation and the descriptor:
    # cuDNN finalizes only ADD, MUL, MIN, MAX and AMAX reductions.
    g = Graph("avg")
    g.reduction(g.tensor([8, 64, 32, 32], fmt="NHWC", name="x"), op="avg", axes=[2, 3], name="red")
    with pytest.raises(CudnnNotSupportedError) as cudnn_info:
        g.finalize()
    text = str(cudnn_info.value)
    assert cudnn_info.value.function == "cudnnBackendFinalize"
    assert "CUDNN_STATUS_NOT_SUPPORTED (3000)" in text and "reduction 'red'" in text
    assert "operator avg" in text and "CUDNN_BACKEND_REDUCTION_DESCRIPTOR" in text
    # and a graph mistake is never a CudnnError
    with pytest.raises(GraphError) as info:
        Graph("e").tensor([0, 1, 1])
    assert not isinstance(info.value, CudnnError)


FUZZ_GRAPH = r"""
import random
import sys

from pycudnn import Graph
from pycudnn.errors import CudnnError, UnsupportedByLibraryError
from pycudnn.graph import POINTWISE_ARITY

seed, rounds = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
# GraphError is a ValueError; UnsupportedByLibraryError: a mode newer than the loaded cuDNN
EXPECTED = (TypeError, ValueError, KeyError, CudnnError, UnsupportedByLibraryError)
DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "bool", "float64", "uint8"]
MODES = sorted(POINTWISE_ARITY)


def dims(rank):
    if rng.random() < 0.15:
        return [rng.choice([1, 2, 0, -1, 2**31, 2**40, 2**63]) for _ in range(rank)]
    return [rng.choice([1, 1, 2, 3, 8, 16]) for _ in range(rank)]


def random_tensor(g):
    rank = rng.choice([1, 2, 3, 3, 4, 4, 4, 4, 5, 8, 9])
    kw = {"dtype": rng.choice(DTYPES)}
    r = rng.random()
    if r < 0.3 and rank in (4, 5):
        kw["fmt"] = "NHWC" if rank == 4 else "NDHWC"
    elif r < 0.4:
        kw["strides"] = [rng.choice([1, 2, 7, 64, 0, -1, 2**62]) for _ in range(rank)]
    if rng.random() < 0.1:
        kw["alignment"] = rng.choice([1, 3, 4, 8, 256])
    if rng.random() < 0.05:
        kw["virtual"] = True
    return g.tensor(dims(rank), **kw)


finalized = 0
for i in range(rounds):
    g = Graph(f"g{i}")
    tensors = []
    for _ in range(rng.randint(1, 4)):
        try:
            tensors.append(random_tensor(g))
        except EXPECTED:
            pass
    if not tensors:
        continue
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        kw = {}
        if rng.random() < 0.15:
            kw["out"] = rng.choice(tensors)
        if rng.random() < 0.2:
            kw["out_dtype"] = rng.choice(DTYPES)
        try:
            if kind < 0.45:
                mode = rng.choice(MODES)
                args = [rng.choice(tensors) for _ in range(POINTWISE_ARITY[mode])]
                tensors.append(g.pointwise(mode, *args, **kw))
            elif kind < 0.6:
                tensors.append(g.matmul(rng.choice(tensors), rng.choice(tensors), **kw))
            elif kind < 0.8:
                op = rng.choice([g.conv_fprop, g.conv_dgrad, g.conv_wgrad])
                tensors.append(
                    op(rng.choice(tensors), rng.choice(tensors),
                       padding=rng.choice([0, 1, 2, 2**40]), stride=rng.choice([1, 2, 3]),
                       dilation=rng.choice([1, 2]), **kw)
                )
            else:
                x = rng.choice(tensors)
                tensors.append(
                    g.reduction(x, op=rng.choice(["add", "max", "min", "mul", "amax", "norm2"]),
                                axes=rng.sample(range(x.ndim), rng.randint(1, x.ndim)), **kw)
                )
        except EXPECTED:
            pass
    if rng.random() < 0.2 and len(tensors) > 1:
        try:
            tensors[-1].set_output(rng.random() < 0.5)
        except EXPECTED:
            pass
    try:
        g.finalize()
        finalized += 1
        g.engine_count
        g.heuristics(rng.choice(["a", "fallback", "b"]))
    except EXPECTED:
        pass
    g.close()
print("fuzzed", rounds, "finalized", finalized)
"""


@libcuda
def test_random_graphs_never_crash() -> None:
    out = run_python(FUZZ_GRAPH, "7", "400")
    assert_clean_exit(out)
    finalized = int(out.stdout.split()[-1])
    assert finalized > 40, out.stdout  # the fuzz reaches cuDNN, not only Python's refusals


# ==================================================================================================
# 3. Plan JSON: what crashed cuDNN is refused before it sees the text
# ==================================================================================================


def plan_skeleton() -> dict[str, Any]:
    """The shape of a plan JSON as cuDNN writes it (conv forward), for Python-side checks only:
    every test below is refused in Python, so nothing of it reaches cuDNN."""
    return {
        "cudnnVersion": pycudnn.version(),
        "schemaVersion": 4,
        "operationGraph": {
            "finalizeMode": "CONV_FORWARD",
            "tensors": [
                {
                    "name": str(uid),
                    "dataType": "CUDNN_DATA_HALF",
                    "dim": [1, 32, 16, 16],
                    "stride": [8192, 1, 512, 32],
                    "isVirtual": False,
                    "isByValue": False,
                }
                for uid in (1, 2, 3)
            ],
            "nodes": [
                {
                    "operation": "CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR",
                    "mode": "CUDNN_CROSS_CORRELATION",
                    "mathPrec": "CUDNN_DATA_FLOAT",
                    "X": "1",
                    "W": "2",
                    "Y": "3",
                }
            ],
        },
        "GPUProfile": {"deviceName": "x"},
        "engine": {"engineId": 0, "knobChoices": {}},
    }


def _edit(path: str, value: Any) -> dict[str, Any]:
    data = plan_skeleton()
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return data


_DELETE = object()

# Each of these crashed cuDNN 9.28 finalizing the deserialized plan (with DEVICEPROP): SIGSEGV (11),
# SIGABRT from std::stoll's exception (6), SIGFPE (8) or heap corruption.
CRASHING_PLAN_EDITS = [
    ("operationGraph.tensors", "====", "operationGraph.tensors must be an array"),  # 11
    ("operationGraph.tensors", 1, "operationGraph.tensors must be an array"),  # 11
    ("operationGraph.nodes", "x", "operationGraph.nodes must be an array"),  # 11
    ("operationGraph.nodes", -1, "operationGraph.nodes must be an array"),  # 11
    ("operationGraph.tensors.1.name", "", "tensors[1].name must be a unique id"),  # 6
    ("operationGraph.tensors.1.name", "abc", "tensors[1].name must be a unique id"),  # 6
    ("operationGraph.tensors.1.name", "9" * 23, "tensors[1].name must be a unique id"),  # 6
    ("operationGraph.nodes.0.X", "", "nodes[0].X must name a tensor"),  # 6
    ("operationGraph.nodes.0.Y", "CUDNN_X", "nodes[0].Y must name a tensor"),  # 6
    ("operationGraph.nodes.0.W", "zz", "nodes[0].W must name a tensor"),  # 6
    ("operationGraph.tensors.1.dim", [0, 32, 3, 3], "tensors[1].dim must be an array of positive"),
    ("operationGraph.tensors.1.dim", [True, 32, 3, 3], "tensors[1].dim must be"),  # 8
    ("operationGraph.tensors.1.dim", [None, 32, 3, 3], "tensors[1].dim must be"),  # 8
    ("operationGraph.tensors.1.dim", [2**64 - 1, 1, 1, 1], "tensors[1].dim must be"),  # 8
    ("GPUProfile.deviceName", "x" * 300, "GPUProfile.deviceName must be at most 255 bytes"),
    ("GPUProfile.deviceName", "é" * 128, "GPUProfile.deviceName must be at most 255 bytes"),
]


@pytest.mark.parametrize(("path", "value", "fragment"), CRASHING_PLAN_EDITS)
def test_plan_json_that_crashed_cudnn_is_refused_first(
    path: str, value: Any, fragment: str
) -> None:
    data = _edit(path, value)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        check_plan_json(data)
    # Through the public entry points: refused before any device properties are needed, with
    # the key named (also when no GPU or properties are available here).
    with pytest.raises(ValueError, match=re.escape(fragment)):
        Plan.from_json(json.dumps(data))
    with pytest.raises(ValueError, match=re.escape(fragment)):
        Plan.from_json(data, graph=conv_graph())


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("92800", "'cudnnVersion' must be an int"),
        (True, "must be an int"),
        (None, "must be an int"),
    ],
)
def test_plan_version_must_be_an_int(value: Any, fragment: str) -> None:
    data = plan_skeleton()
    data["cudnnVersion"] = value
    with pytest.raises(ValueError, match=fragment):
        Plan.from_json(data)


def test_plan_json_checks_accept_what_cudnn_writes() -> None:
    check_plan_json(plan_skeleton())
    check_plan_json(_edit("GPUProfile.deviceName", "é" * 127))  # 254 bytes
    check_plan_json(_edit("operationGraph.nodes.0.alpha", 1.0))
    check_plan_json(_edit("operationGraph", _DELETE))  # missing members: cuDNN reports them


@libcuda
def test_raw_execution_plan_json_is_checked_too() -> None:
    plan = BackendDescriptor("EXECUTION_PLAN")
    with pytest.raises(ValueError, match=r"operationGraph\.nodes must be an array"):
        plan.set(
            "EXECUTION_PLAN_JSON_REPRESENTATION",
            json.dumps(_edit("operationGraph.nodes", "x")),
            attr_type="CHAR",
        )
    skip_unless_cudnn_has("CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR")
    dp = BackendDescriptor("DEVICEPROP")
    # a 5000-character name corrupted the heap when the DEVICEPROP was used (segfault/abort)
    with pytest.raises(ValueError, match="deviceName' must be at most 255 bytes"):
        dp.set(
            "DEVICEPROP_JSON_REPRESENTATION",
            json.dumps({"deviceName": "x" * 5000}),
            attr_type="CHAR",
        )


# ==================================================================================================
# 4. Device properties: refused in Python, the key named (synthetic dicts never reach cuDNN)
# ==================================================================================================


def complete_props() -> dict[str, Any]:
    """Syntactically complete, NOT a real GPU's values: for Python-side validation only."""
    data: dict[str, Any] = dict.fromkeys(REQUIRED_KEYS, 1)
    data.update(
        maxGridSize=[2, 3, 4], maxBlockSize=[5, 6, 7], deviceVer=900, deviceName="synthetic"
    )
    return data


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("deviceName", "x" * 256, "must be at most 255 bytes"),  # heap corruption in cuDNN
        ("deviceName", "é" * 128, "must be at most 255 bytes"),  # 256 bytes in UTF-8
        ("deviceName", 7, "must be a string"),
        ("regsPerBlock", "65536", "must be a non-negative int"),
        ("regsPerBlock", -1, "must be a non-negative int"),
        ("regsPerBlock", 1.0, "must be a non-negative int"),
        ("regsPerBlock", None, "must be a non-negative int"),
        ("maxGridSize", [1, 2], "must be a list of 3 positive ints"),
        ("maxGridSize", [1, 2, 0], "must be a list of 3 positive ints"),
        ("maxGridSize", "1,2,3", "must be a list of 3 positive ints"),
        ("deviceVer", 905, "major*100 + minor*10"),
        ("deviceVer", 90, "major*100 + minor*10"),
    ],
)
def test_device_properties_values_are_checked(key: str, value: Any, fragment: str) -> None:
    data = complete_props()
    data[key] = value
    with pytest.raises(ValueError) as info:
        DeviceProperties.from_json(data)
    assert repr(key) in str(info.value) and fragment in str(info.value)


def test_device_properties_structure() -> None:
    bad: Any
    for bad in ([], "[]", 3, None):
        with pytest.raises(TypeError):
            DeviceProperties.from_json(bad)
    data = complete_props()
    data["deviceName"] = "x" * 255  # the longest name that fits
    data["extraKeyFromANewerDriver"] = {"nested": [1, 2]}
    props = DeviceProperties.from_json(data)
    assert json.loads(props.to_json())["extraKeyFromANewerDriver"] == {"nested": [1, 2]}


@settings(max_examples=50, deadline=None)
@given(
    key=st.sampled_from(REQUIRED_KEYS),
    value=st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(),
        st.text(max_size=300),
        st.lists(st.integers(min_value=-5, max_value=2**40), max_size=4),
    ),
)
def test_any_device_property_value_is_accepted_or_named(key: str, value: Any) -> None:
    data = complete_props()
    data[key] = value
    try:
        validate_json(data)
    except ValueError as exc:
        assert repr(key) in str(exc)
        return
    if key == "deviceName":
        assert isinstance(value, str) and len(value.encode()) <= 255
    elif key in ("maxGridSize", "maxBlockSize"):
        assert isinstance(value, list) and len(value) == 3 and all(v > 0 for v in value)
    else:
        assert isinstance(value, int) and value >= 0


# ==================================================================================================
# 5. Plans (need execution plans: a captured device-properties JSON, or the GPU itself)
# ==================================================================================================


@pytest.fixture(scope="module", params=["captured", pytest.param("device", marks=pytest.mark.gpu)])
def target(request: pytest.FixtureRequest) -> DeviceProperties:
    """Device properties to build plans with: captured on a GPU (CPU tier) or queried (GPU tier)."""
    if request.param == "device":
        return DeviceProperties.for_device(0)
    return DeviceProperties.from_json(request.getfixturevalue("deviceprops_json"))


@pytest.fixture(scope="module")
def plan_texts(target: DeviceProperties) -> dict[str, str]:
    out = {}
    for name, make in (("conv", conv_graph), ("conv_bias_relu", conv_bias_relu)):
        plan = make().build(device_properties=target, cache=False)
        out[name] = plan.to_json()
        plan.close()
    return out


def test_plan_outlives_its_graph(target: DeviceProperties) -> None:
    g = conv_graph()
    plan = g.build(device_properties=target, cache=False)
    alive = weakref.ref(g)
    g.close()
    del g
    gc.collect()
    assert alive() is not None  # the plan holds its graph (and through it the descriptors)
    text = plan.to_json()
    assert json.loads(text)["cudnnVersion"] == pycudnn.version()
    plan.close()
    del plan
    gc.collect()
    assert alive() is None


def test_plan_survives_its_device_properties_being_closed(target: DeviceProperties) -> None:
    props = DeviceProperties.from_json(target.as_dict())
    plan = conv_graph().build(device_properties=props, cache=False)
    props.close()
    assert json.loads(plan.to_json())["engine"]["engineId"] == plan.engine_id
    again = Plan.from_json(plan.to_json(), device_properties=props)  # rebuilt on demand
    assert again.engine_id == plan.engine_id
    again.close()
    plan.close()


def test_closed_plans_and_cache_views(target: DeviceProperties) -> None:
    pc = PlanCache(max_size=4)
    first = conv_graph().build(device_properties=target, cache=pc)
    view = conv_graph().build(device_properties=target, cache=pc)  # another graph object
    assert view is not first and view.descriptor is first.descriptor
    first.close()  # closes that object; the cache keeps the execution plan for the view
    assert first.closed and not view.closed and not first.descriptor.closed
    with pytest.raises(ClosedError):
        first.to_json()
    with pytest.raises(ClosedError):
        first.execute({})
    with pytest.raises(ClosedError):
        first.execute_raw([0, 0, 0])
    again = conv_graph().build(device_properties=target, cache=pc)
    assert again.descriptor is first.descriptor and pc.stats["misses"] == 1
    first.descriptor.close()  # the execution plan itself destroyed: every view refuses
    for plan in (view, again):
        assert plan.closed
        with pytest.raises(ClosedError):
            plan.to_json()
        with pytest.raises(ClosedError):
            plan.execute({})
    view.close()  # closing a view of a closed plan is fine
    # the cache notices and builds a new plan instead of handing out the closed one
    fresh = conv_graph().build(device_properties=target, cache=pc)
    assert not fresh.closed and pc.stats["misses"] == 2
    fresh.close()


def test_execute_takes_a_mapping(target: DeviceProperties) -> None:
    plan = conv_graph().build(device_properties=target, cache=False)
    for wrong in ([1, 2, 3], None, "x"):
        with pytest.raises(TypeError, match="tensors must be a mapping"):
            plan.execute(wrong)  # type: ignore[arg-type]
    plan.close()


def test_execute_raw_checks_pointers_before_any_gpu_work(target: DeviceProperties) -> None:
    g = Graph("scaled")
    x = g.tensor([1, 8, 4, 4], fmt="NHWC", name="x")
    s = g.scalar(2.0, name="s")
    g.mul(x, s, name="m")
    plan = g.build(device_properties=target, cache=False)
    uids = dict(zip(plan.tensor_names(), plan.uids, strict=True))
    order = [name for name in plan.tensor_names()]
    good: list[Any] = [None if name == "s" else 256 * (i + 1) for i, name in enumerate(order)]
    with pytest.raises(ValueError, match=r"execute_raw takes 3 pointers .* got 2"):
        plan.execute_raw(good[:2])
    # a host pointer for the by-value scalar would be read on the host: only None is taken
    bad: list[Any] = [0x1234 if name == "s" else p for name, p in zip(order, good, strict=True)]
    with pytest.raises(ValueError, match=rf"tensor 's' \(uid {uids['s']}\) is a by-value"):
        plan.execute_raw(bad)
    for wrong in (-1, 2**64, 1.5, "0x10"):
        bad = [wrong if name == "x" else p for name, p in zip(order, good, strict=True)]
        with pytest.raises(TypeError, match="tensor 'x'"):
            plan.execute_raw(bad)
    with pytest.raises(TypeError, match="workspace must be a device address"):
        plan.execute_raw(good, workspace=-5)
    with pytest.raises(TypeError, match=r"handle must be a pycudnn\.Handle"):
        plan.execute_raw(good, handle=object())
    plan.close()


@pytest.mark.gpu
def test_closed_handles_never_reach_cudnn(gpu_device: int) -> None:
    plan = conv_graph().build(
        device_properties=DeviceProperties.for_device(gpu_device), cache=False
    )
    handle = pycudnn.Handle(gpu_device)
    handle.close()
    workspace = 1 << 20 if plan.workspace_size else 0  # never used: refused before execution
    with pytest.raises(ClosedError):
        plan.execute_raw([256, 512, 768], workspace, handle=handle)
    # a handle set on a descriptor and closed afterwards would be dereferenced by finalize
    desc = BackendDescriptor("EXECUTION_PLAN")
    other = pycudnn.Handle(gpu_device)
    desc.set("EXECUTION_PLAN_HANDLE", other)
    desc.set("EXECUTION_PLAN_JSON_REPRESENTATION", plan.to_json(), attr_type="CHAR")
    other.close()
    with pytest.raises(ValueError, match="Handle set on it has been closed"):
        desc.finalize()
    plan.close()


def test_deserialized_gradient_plans_know_their_outputs(target: DeviceProperties) -> None:
    # The JSON names a dgrad output "dX" (a wgrad's "dW", a matmul's "matC"): without the graph,
    # the plan must still know it writes that tensor (read-only arrays are refused for outputs).
    g = Graph("dgrad")
    dy = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="dy")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    dx = g.conv_dgrad(dy, w, padding=1, name="dgrad")
    plan = g.build(device_properties=target, cache=False)
    loaded = Plan.from_json(plan.to_json(), device_properties=target)
    outputs = {s.uid for s in loaded._slots if s.is_output}
    assert outputs == {dx.uid}
    loaded.close()
    plan.close()


FUZZ_PLAN_JSON = r"""
import copy
import json
import random
import sys

from pycudnn import DeviceProperties
from pycudnn.errors import CudnnError
from pycudnn.plan import Plan

props = DeviceProperties.load(sys.argv[1])
base = json.loads(open(sys.argv[2]).read())
rng = random.Random(int(sys.argv[3]))
rounds = int(sys.argv[4])
VALUES = [None, True, False, 0, -1, 1, 2**31, 2**63 - 1, -(2**63), 2**64, 10**30, 1.5, 1e308,
          "", "x" * 1000, "abc", "CUDNN_X", "CUDNN_DATA_HALF", [], [1] * 20, {}, {"a": 1},
          "AAAA", "===="]


def paths(o, pre=()):
    yield pre
    if isinstance(o, dict):
        for k, v in o.items():
            yield from paths(v, pre + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from paths(v, pre + (i,))


every = [p for p in paths(base) if p and p[0] != "cudnnVersion"]
loaded = 0
for _ in range(rounds):
    d = copy.deepcopy(base)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(every)
        parent = d
        try:
            for k in path[:-1]:
                parent = parent[k]
            old = parent[path[-1]]
            r = rng.random()
            if r < 0.2 and isinstance(parent, dict):
                del parent[path[-1]]
            elif r < 0.35 and isinstance(old, str) and len(old) > 4:  # truncate or pad
                cut = rng.randint(0, len(old))
                parent[path[-1]] = old[:cut] + "".join(
                    rng.choice("ABCD+/=") for _ in range(rng.randint(0, 40)))
            elif r < 0.45 and isinstance(old, int) and not isinstance(old, bool):
                parent[path[-1]] = old + rng.choice([-1, 1, 7, -1000, 2**32])
            else:
                parent[path[-1]] = rng.choice(VALUES)
        except (KeyError, IndexError, TypeError):
            pass
    try:
        plan = Plan.from_json(json.dumps(d), device_properties=props)
    except (ValueError, CudnnError):
        continue
    loaded += 1
    plan.to_json()
    plan.close()
print("loaded", loaded, "of", rounds)
"""


@pytest.mark.parametrize("which", ["conv", "conv_bias_relu"])
def test_corrupted_plan_json_never_crashes(
    target: DeviceProperties, plan_texts: dict[str, str], tmp_path: Path, which: str
) -> None:
    # Random edits of a real plan (tensors, nodes, engine, knobs, GPU profile, compiled kernels):
    # cuDNN must refuse or load each one, and never take the process down.
    props_file, plan_file = tmp_path / "props.json", tmp_path / "plan.json"
    target.save(props_file)
    plan_file.write_text(plan_texts[which])
    out = run_python(FUZZ_PLAN_JSON, str(props_file), str(plan_file), "3", "150", timeout=300)
    assert_clean_exit(out)
    assert "of 150" in out.stdout


@pytest.mark.parametrize(("path", "value", "fragment"), CRASHING_PLAN_EDITS)
def test_crashing_edits_of_a_real_plan_are_refused(
    target: DeviceProperties, plan_texts: dict[str, str], path: str, value: Any, fragment: str
) -> None:
    data = json.loads(plan_texts["conv"])
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[int(last) if last.isdigit() else last] = value
    with pytest.raises(ValueError, match=re.escape(fragment)):
        Plan.from_json(data, device_properties=target)


def test_truncated_plan_json_is_refused(
    target: DeviceProperties, plan_texts: dict[str, str]
) -> None:
    text = plan_texts["conv"]
    for cut in (0, 1, len(text) // 3, len(text) - 1):
        with pytest.raises(ValueError):
            Plan.from_json(text[:cut], device_properties=target)


def test_corrupted_plan_cache_file_is_rebuilt(target: DeviceProperties, tmp_path: Path) -> None:
    plan = conv_graph().build(device_properties=target, cache=PlanCache(tmp_path))
    (path,) = tmp_path.glob("*.json")
    data = json.loads(path.read_text())
    data["operationGraph"]["tensors"] = "===="  # crashed cuDNN (segfault) before the checks
    path.write_text(json.dumps(data))
    pc = PlanCache(tmp_path)
    again = conv_graph().build(device_properties=target, cache=pc)
    assert pc.stats["disk_errors"] == 1 and pc.stats["stores"] == 1
    assert again.engine_id == plan.engine_id
    assert json.loads(path.read_text())["operationGraph"]["tensors"] != "===="  # rewritten
    again.close()
    plan.close()


HUGE_DEVICE_PROPERTIES = r"""
import json
import sys

from pycudnn import DeviceProperties, Graph
from pycudnn.errors import CudnnError

base = json.loads(open(sys.argv[1]).read())
refused = 0
for key in base:
    if not isinstance(base[key], int) or isinstance(base[key], bool):
        continue
    for value in (2**64 + 5, 0):
        g = Graph("conv")
        x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16")
        w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16")
        g.conv_fprop(x, w, padding=1)
        try:
            props = DeviceProperties.from_json({**base, key: value})
            g.build(device_properties=props, cache=False).to_json()
        except (CudnnError, ValueError):
            refused += 1
print("refused", refused)
"""


def test_out_of_range_device_properties_never_crash(
    target: DeviceProperties, tmp_path: Path
) -> None:
    # Values Python accepts (non-negative ints) but no GPU has: cuDNN must refuse them or plan
    # with them, never crash.
    props_file = tmp_path / "props.json"
    target.save(props_file)
    out = run_python(HUGE_DEVICE_PROPERTIES, str(props_file), timeout=300)
    assert_clean_exit(out)
    assert "refused" in out.stdout


def test_threads_share_device_properties_and_a_plan_cache(
    target: DeviceProperties, plan_texts: dict[str, str]
) -> None:
    props = DeviceProperties.from_json(target.as_dict())  # its descriptor built by a thread
    pc = PlanCache(max_size=8)
    errors: list[BaseException] = []
    engines: list[int | None] = []

    def work() -> None:
        try:
            for _ in range(2):
                plan = conv_graph().build(device_properties=props, cache=pc)
                engines.append(plan.engine_id)
                loaded = Plan.from_json(plan_texts["conv"], device_properties=props)
                engines.append(loaded.engine_id)
                loaded.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(set(engines)) == 1 and len(engines) == 8


# ==================================================================================================
# 6. Nothing leaks
# ==================================================================================================

_CREATE = re.compile(
    r"cudnnBackendCreateDescriptor\(\) called:\s+descriptorType: type=\w+; val=(CUDNN_BACKEND_\w+)"
)
_DESTROY = re.compile(
    r"cudnnBackendDestroyDescriptor\(\) called:\s+descriptor: type=(CUDNN_BACKEND_\w+)"
)
_FAILED_DESTROY = re.compile(
    r"cudnnBackendDestroyDescriptor\(\) called:\s+status: .*val=(?!CUDNN_STATUS_SUCCESS)"
)


def _descriptor_traffic(records: list[Any]) -> tuple[Counter[str], Counter[str], int]:
    created, destroyed, failed = Counter[str](), Counter[str](), 0
    for rec in records:
        text = str(rec.message)
        if m := _CREATE.search(text):
            created[m.group(1)] += 1
        if m := _DESTROY.search(text):
            destroyed[m.group(1)] += 1
        if _FAILED_DESTROY.search(text):
            failed += 1
    return created, destroyed, failed


@libcuda
def test_every_descriptor_is_destroyed_exactly_once() -> None:
    # cuDNN logs each create (with the type asked for) and each destroy (with the type of the
    # object); per type the two must balance once everything is released.
    gc.collect()  # descriptors other tests left to the collector are not counted
    with log.capture(logging.DEBUG) as records:
        g = conv_bias_relu()
        g.finalize()
        res = g.heuristics("a")
        fallback = g.heuristics("fallback")
        assert res.count + fallback.count > 0 or not heuristics_run_here()
        # explicit close, garbage collection, and a graph dropped in a reference cycle
        relu = relu_graph()
        relu.finalize()
        relu.close()
        cyclic = relu_graph("cyclic")
        cyclic.finalize()
        cyclic.self_reference = cyclic  # type: ignore[attr-defined]
        raw_graph, parts = pointwise_op_graph()
        raw_graph.close()
        raw_graph.close()  # a second close destroys nothing
        del g, res, fallback, relu, cyclic, raw_graph, parts
        gc.collect()
    created, destroyed, failed = _descriptor_traffic(records)
    assert sum(created.values()) >= 20, created
    assert created == destroyed
    assert failed == 0


@libcuda
def test_children_keep_their_parents_alive() -> None:
    graph, parts = pointwise_op_graph()  # TENSORs x, y, POINTWISE, OPERATION_POINTWISE
    heur = BackendDescriptor("ENGINEHEUR")
    heur.set("ENGINEHEUR_OPERATION_GRAPH", graph)
    heur.set("ENGINEHEUR_MODE", raw.cudnnBackendHeurMode_t(int(raw.CUDNN_HEUR_MODE_FALLBACK)))
    # Before 9.9, heuristics without a GPU or device properties read device properties cuDNN
    # never set, and finalizing fails at random (docs/versions.md): the references are what is
    # checked here, and setting the attributes made them.
    finalized = pycudnn.version_tuple() >= HEURISTICS_WITHOUT_TARGET_SINCE
    if finalized:
        heur.finalize()
    parents = [weakref.ref(d) for d in (*parts, graph)]
    del graph, parts
    gc.collect()
    assert all(r() is not None for r in parents)  # all reachable from the heuristics
    if finalized:
        assert heur.element_count("ENGINEHEUR_RESULTS") >= 0  # and still usable
    del heur
    gc.collect()
    assert all(r() is None for r in parents)


@libcuda
def test_graph_close_keeps_descriptors_that_are_still_used() -> None:
    g = relu_graph()
    op_graph = g.operation_graph
    tensors = [weakref.ref(d) for d in g._descriptors["tensors"].values()]  # type: ignore[index]
    g.close()
    gc.collect()
    assert all(r() is not None for r in tensors)
    assert not op_graph.closed and op_graph.get("OPERATIONGRAPH_ENGINE_GLOBAL_COUNT") >= 0
    with pytest.raises(ClosedError, match="is closed"):
        g.finalize()  # a closed graph keeps its word: no new descriptors behind the user's back


LEAK_CYCLES = r"""
import gc
import os

from pycudnn import Graph


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cycle():
    g = Graph("leak")
    x = g.tensor([1, 8, 4, 4])
    y = g.relu(g.add(x, g.tensor([1, 8, 1, 1])))
    g.finalize()
    g.close()


for _ in range(300):
    cycle()
gc.collect()
before = rss()
for _ in range(2000):
    cycle()
gc.collect()
print(rss() - before)
"""


@libcuda
def test_build_close_cycles_do_not_grow_memory() -> None:
    # 2,000 graphs of 2 operations: 18,000 descriptors created and destroyed. A leak of the
    # descriptors (cuDNN's objects are ~1-20 KB each) or of the Python objects would add tens of
    # megabytes; allocator noise stays well under 8 MiB.
    out = run_python(LEAK_CYCLES, timeout=180)
    assert_clean_exit(out)
    growth = int(out.stdout.split()[-1])
    assert growth < 8 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over 2,000 cycles"


EXIT_WITHOUT_CLOSING = r"""
import logging
import sys

import pycudnn
from pycudnn import Graph, log
from pycudnn.backend import BackendDescriptor

logging.basicConfig(level=logging.DEBUG, stream=sys.stdout)
log.enable_logging(logging.DEBUG)  # the callback is still registered at exit
graphs = []
for i in range(3):
    g = Graph(f"g{i}")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16")
    g.conv_fprop(x, w, padding=1)
    g.finalize()
    g.heuristics("a")
    graphs.append(g)
cycle = [graphs[0]]
cycle.append(cycle)
orphan = BackendDescriptor("TENSOR")  # never finalized
results = graphs[1].heuristics("fallback")
try:
    graphs[2].build(cache=False)
except pycudnn.CudnnError:
    pass
print("leaving", len(graphs))
"""


@libcuda
def test_interpreter_exit_without_closing_is_clean() -> None:
    out = run_python(EXIT_WITHOUT_CLOSING)
    assert_clean_exit(out)
    assert "leaving 3" in out.stdout


# ==================================================================================================
# 7. Errors that cuDNN decides: the modes tried and cuDNN's own reason
# ==================================================================================================


@libcuda
def test_not_supported_error_names_modes_counts_and_reason() -> None:
    g = Graph("unsupported_here")
    x = g.tensor([4, 32, 16, 16], fmt="NCHW", dtype="float32", name="x")
    g.reduction(x, op="add", out_dims=[1, 32, 1, 1])  # no engine: measured on 9.19 and 9.28
    props = DeviceProperties.load(REPO / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json")
    why_not = DeviceProperties.why_no_plans()
    if why_not is not None:
        pytest.skip(why_not)
    with pytest.raises(GraphNotSupportedError) as info:
        g.build(heuristics=["a", "fallback"], device_properties=props, cache=False)
    err = info.value
    text = str(err)
    assert err.status == 3000 and isinstance(err, CudnnNotSupportedError)
    # the step that left no plan: the heuristics returned no config (not a failed finalize)
    assert err.function == "cudnnBackendGetAttribute"
    assert "no engine supports graph 'unsupported_here': the heuristics returned no" in text
    # each mode tried, with the count query and what it returned
    assert re.search(r"heuristics tried: a: \d+ counted, 0 returned; fallback: \d+ counted", text)
    assert [h.mode for h in err.report.heuristics] == ["a", "fallback"]
    # why (cuDNN's log), and what would work
    assert "cuDNN said:" in text and "Reason:" in text
    assert "what would work: " in text and "fmt='NHWC'" in text


# ==================================================================================================
# 8. Threads (CPU tier)
# ==================================================================================================


@libcuda
def test_threads_build_and_finalize_different_graphs_concurrently() -> None:
    def summary(g: Graph) -> tuple[int, int]:
        g.finalize()
        return g.engine_count, g.heuristics("a").count

    expected = {"conv": summary(conv_graph()), "relu": summary(relu_graph())}
    errors: list[BaseException] = []
    seen: list[tuple[str, tuple[int, int]]] = []
    barrier = threading.Barrier(3)

    def work(kind: str) -> None:
        try:
            barrier.wait()
            for i in range(8):
                g = conv_graph(f"conv{i}") if kind == "conv" else relu_graph(f"relu{i}")
                seen.append((kind, summary(g)))
                g.close()
                try:  # failures are reported per thread, with this thread's graph
                    (conv_graph if kind == "conv" else relu_graph)(f"{kind}_x{i}").build(
                        cache=False
                    )
                except GraphNotSupportedError as exc:
                    assert f"graph '{kind}_x{i}'" in str(exc)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in ("conv", "relu", "conv")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(seen) == 24
    assert all(result == expected[kind] for kind, result in seen), (expected, seen)


def test_the_default_plan_cache_is_per_thread() -> None:
    caches: list[PlanCache] = []
    t = threading.Thread(target=lambda: caches.append(default_plan_cache()))
    t.start()
    t.join()
    assert caches[0] is not default_plan_cache()
    assert default_plan_cache() is default_plan_cache()


@libcuda
def test_descriptors_cannot_be_copied_or_pickled() -> None:
    # copy.copy() made a second owner of the C pointer: after closing the original, using the
    # copy segfaulted (use after free).
    t = tensor_descriptor()
    for dup in (copy.copy, copy.deepcopy, lambda d: pickle.loads(pickle.dumps(d))):
        with pytest.raises(TypeError, match="owns a cuDNN object and cannot be copied"):
            dup(t)
    g = relu_graph()
    g.finalize()
    with pytest.raises(TypeError, match="cannot be copied"):
        copy.deepcopy(g)  # its descriptors cannot be duplicated either


def test_plans_cannot_be_copied(target: DeviceProperties) -> None:
    plan = conv_graph().build(device_properties=target, cache=False)
    for dup in (copy.copy, copy.deepcopy, lambda d: pickle.loads(pickle.dumps(d))):
        with pytest.raises(TypeError, match="use to_json"):
            dup(plan)
    plan.close()


# -- numbers cuDNN would get as something else (found by a review) ------------------------------


@pytest.mark.parametrize(
    ("describe", "match"),
    [
        (lambda g, x: g.scalar(1e39), "1e.39 is out of the range of float32 .*inf"),
        (lambda g, x: g.scalar(1e-50), "out of the range of float32 .*would get 0"),
        (lambda g, x: g.scalar(3.7, dtype="int32"), "int32 scalars take integers, not 3.7"),
        (lambda g, x: g.scalar(2**31, dtype="int32"), "out of the range of int32"),
        # ints past a double's range: float() raised OverflowError, naming nothing
        (lambda g, x: g.scalar(10**400), "scalar: 1000.* is out of the range of float32"),
        (lambda g, x: g.scalar(-(10**400), dtype="int64"), "out of the range of int64"),
        (lambda g, x: g.tensor([1, 1, 1], by_value=1e39, name="s"), "out of the range of float32"),
        (
            lambda g, x: g.layernorm(
                x,
                g.tensor([1, 4, 64, 64], name="s"),
                g.tensor([1, 4, 64, 64], name="b"),
                epsilon=1e-50,
            ),
            "epsilon: 1e-50 is out of the range",
        ),
        (
            lambda g, x: g.sdpa(
                x,
                g.tensor(x.dims, dtype="bfloat16"),
                g.tensor(x.dims, dtype="bfloat16"),
                scale=1e39,
            ),
            "scale.: 1e.39 is out of the range",
        ),
    ],
)
def test_a_number_cudnn_would_get_as_inf_zero_or_another_is_refused(
    describe: Any, match: str
) -> None:
    g = Graph("numbers")
    x = g.tensor([2, 4, 64, 64], dtype="bfloat16", name="x")
    with pytest.raises((ValueError, GraphError), match=match):
        describe(g, x)


@pytest.mark.parametrize(
    ("describe", "match"),
    [
        (lambda g, x: g.add(x, x, alpha1=1e39), "'add0': alpha1: 1e.39 is out of the range"),
        (lambda g, x: g.add(x, x, alpha2=-1e39), "alpha2: -1e.39 is out of the range"),
        (lambda g, x: g.relu(x, negative_slope=1e-50), "relu_lower_clip_slope: 1e-50 is out"),
        (lambda g, x: g.elu(x, alpha=1e-50), "elu_alpha: 1e-50 is out of the range"),
        (lambda g, x: g.swish(x, beta=1e39), "swish_beta: 1e.39 is out of the range"),
        (lambda g, x: g.softplus(x, beta=1e-50), "softplus_beta: 1e-50 is out of the range"),
    ],
)
def test_a_pointwise_parameter_cudnn_would_get_as_inf_or_zero_is_refused(
    describe: Any, match: str
) -> None:
    """Pointwise scales and activation parameters go to cuDNN as floats unless the math is
    double: a leaky ReLU slope of 1e-50 reached it as 0 and alpha1=1e39 as inf, silently, where
    a convolution's alpha and a by-value scalar were refused. (A clip past float range is the
    same clip of float data, and passes.)"""
    g = Graph("pointwise numbers")
    x = g.tensor([2, 4, 8, 8], dtype="float32", name="x")
    with pytest.raises(ValueError, match=match):
        describe(g, x)
    assert not g.operations  # nothing half-added


def test_a_pointwise_parameter_beyond_float_range_goes_as_double_with_double_math() -> None:
    g = Graph("pointwise double")
    x = g.tensor([2, 4, 8, 8], dtype="float64", name="x")
    y = g.relu(x, negative_slope=1e-50, compute_dtype="float64", alpha1=1e39)
    y.set_output(True)
    g.finalize(None)  # real cuDNN takes the DOUBLE parameters
    (op,) = g.operations
    assert op.attrs["relu_lower_clip_slope"] == 1e-50 and op.attrs["alpha1"] == 1e39


def test_a_scalar_of_a_bool_value_is_a_by_value_scalar_holding_it() -> None:
    """scalar(False) was a device tensor, and scalar(True) lost its value: tensor()'s by_value
    reads a bool as its own flag."""
    g = Graph("bools")
    for value in (False, True):
        t = g.scalar(value, dtype="bool")
        assert t.by_value and t.value is value
    assert g.scalar(float("-inf")).value == float("-inf")  # infinities pass as given


def test_a_tensor_is_not_re_typed_behind_the_checks() -> None:
    """`transpose(x_fp32, out=o_fp16)` made `o` float32, and `set_dtype` on an input after its
    operations checked it changed what cuDNN gets (a scalar 2.5 re-typed int32 was 2)."""
    g = Graph("retype")
    x = g.tensor([2, 4, 8], dtype="float32", name="x")
    s = g.scalar(2.5, rank=3)
    g.mul(x, s)
    with pytest.raises(GraphError, match=r"tensor '.*' is an input of mul"):
        s.set_dtype("int32")
    if pycudnn.version_tuple() < (9, 22, 0):
        return  # OPERATION_TRANSPOSE is cuDNN 9.22's: refused before, naming the version
    o = g.tensor([2, 8, 4], dtype="float16", name="o")
    with pytest.raises(GraphError, match=r"out \('o'\) is float16 but the operation writes"):
        g.transpose(x, [0, 2, 1], out=o)
    o32 = g.transpose(x, [0, 2, 1], out=g.tensor([2, 8, 4], name="o32"))
    assert o32.element_type.name == "float32"
