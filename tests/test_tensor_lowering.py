"""A graph's plain tensors are lowered without ``BackendDescriptor.set``'s general checks (one
ctypes call per attribute): the descriptors must read back, from cuDNN, what the graph describes
and what the general path gives, record what ``set`` records, and leave values the description
does not guarantee to the general path, which refuses them by name."""

from __future__ import annotations

from typing import Any

import pytest

import pycudnn
from pycudnn.backend import BackendDescriptor
from pycudnn.graph import Graph
from pycudnn.opgraph.lowering import build_descriptors
from pycudnn.opgraph.tensor_lowering import set_tensor, set_virtual


def _graph() -> Graph:
    # an input, a filter, a virtual intermediate, a by-value scalar, an output of another type
    g = Graph("lowered")
    x = g.tensor([2, 8, 6, 6], dtype="float16", name="x", fmt="NHWC")
    w = g.tensor([8, 8, 3, 3], dtype="float16", name="w", fmt="NHWC", alignment=64)
    y = g.conv_fprop(x, w, padding=1)
    g.mul(y, g.scalar(2.0, name="two"), name="scaled").set_output(True, dtype="bfloat16")
    g._resolve()
    return g


def _read(d: BackendDescriptor) -> dict[str, Any]:
    # cuDNN does not give TENSOR_BYTE_ALIGNMENT back (NOT_SUPPORTED, 9.28)
    return {
        "uid": d.get("TENSOR_UNIQUE_ID"),
        "dims": d.get("TENSOR_DIMENSIONS"),
        "strides": d.get("TENSOR_STRIDES"),
        "dtype": d.get("TENSOR_DATA_TYPE"),
        "virtual": d.get("TENSOR_IS_VIRTUAL", attr_type="BOOLEAN"),
        "by_value": d.get("TENSOR_IS_BY_VALUE", attr_type="BOOLEAN"),
    }


def test_each_tensor_reads_back_what_the_graph_describes_and_the_general_path_gives() -> None:
    g = _graph()
    made = build_descriptors(g)
    assert {t.uid for t in g._tensors} == set(made["tensors"])
    kinds = {bool(t.is_virtual) for t in g._tensors} | {2 + t.by_value for t in g._tensors}
    assert kinds == {False, True, 2, 3}  # virtual and by-value tensors are among them
    for t in g._tensors:
        fast = made["tensors"][t.uid]
        assert fast.is_finalized
        seen = _read(fast)
        assert seen["uid"] == t.uid
        assert list(seen["dims"]) == list(t.dims)
        assert list(seen["strides"]) == list(t.strides)
        assert bool(seen["virtual"]) == bool(t.is_virtual)
        general = BackendDescriptor("TENSOR")
        set_tensor(general, t, t.dims, t.strides)
        general.finalize()
        assert seen == _read(general), t.name
        assert fast._set_kinds == general._set_kinds, t.name  # what finalize() and get() consult


def test_the_lowered_graph_plans_as_before(h100_props: pycudnn.DeviceProperties) -> None:
    plan = _graph().build(device_properties=h100_props, cache=False)
    assert plan.engine_id is not None


@pytest.mark.parametrize(
    ("view", "error", "match"),
    [
        # beyond int64: a ctypes int64 array would keep only the low bits
        (
            ((2, 8, 6, 6), (2**63, 1, 48, 8)),
            ValueError,
            "CUDNN_ATTR_TENSOR_STRIDES .* out of range",
        ),
        # no dims at all: cuDNN refuses the attribute when it is set
        (((), ()), pycudnn.CudnnError, "setting CUDNN_ATTR_TENSOR_DIMENSIONS"),
        # a bool is no extent
        (((True, 8, 6, 6), (288, 1, 48, 8)), TypeError, "CUDNN_ATTR_TENSOR_DIMENSIONS"),
    ],
)
def test_values_the_description_does_not_guarantee_take_the_general_checks(
    view: Any, error: type[Exception], match: str
) -> None:
    g = _graph()
    with pytest.raises(error, match=match):
        build_descriptors(g, views={g["x"].uid: view})


def test_a_refusal_on_the_direct_path_names_the_tensor() -> None:
    g = _graph()
    nine = (1,) * 9  # one more dim than cuDNN takes: refused at the tensor's finalize
    with pytest.raises(pycudnn.CudnnError, match=r"tensor 'w' \[1, 1, 1, 1, 1, 1, 1, 1, 1\]"):
        build_descriptors(g, views={g["w"].uid: (nine, nine)})


def test_a_data_type_newer_than_the_loaded_cudnn_is_refused_before_c(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from _nvbind.ffi import UnsupportedByLibraryError
    from pycudnn._lib import LIB

    pycudnn.version()  # loaded: the version declared below is the one every check reads
    g = Graph("e8m0")
    g.identity(g.tensor([1, 8, 4, 4], dtype="float8_e8m0fnu", name="x")).set_output(
        True, dtype="float32"
    )
    g._resolve()
    # Declared older (never newer; the real library is untouched, so the refusal proves C never
    # saw it): CUDNN_DATA_FP8_E8M0 is cuDNN 9.7's.
    monkeypatch.setattr(LIB, "_version", min((9, 6, 0), LIB.version))
    needs = r"CUDNN_DATA_FP8_E8M0 .* needs cuDNN >= 9\.7"
    with pytest.raises(UnsupportedByLibraryError, match=needs):
        build_descriptors(g)


@pytest.mark.parametrize(
    ("attribute", "value", "error", "match"),
    [
        ("dims", (True, 8, 6, 6), TypeError, "CUDNN_ATTR_TENSOR_DIMENSIONS"),
        (
            "strides",
            (288, 1, 48, 2**64 + 8),
            ValueError,
            "CUDNN_ATTR_TENSOR_STRIDES .* out of range",
        ),
        ("alignment", 2**64, ValueError, "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT .* out of range"),
    ],
)
def test_an_attribute_reassigned_after_the_checks_is_checked_again(
    attribute: str, value: Any, error: type[Exception], match: str
) -> None:
    # A Tensor's attributes are plain attributes: the graph's checks ran before this assignment,
    # and a ctypes int64 array would wrap the value silently (2**64 + 8 to 8).
    g = _graph()
    setattr(g["x"], attribute, value)
    with pytest.raises(error, match=match):
        build_descriptors(g)


# -- the lowering's own virtual tensors (an SDPA's score subgraph, its softmax, a composite graph)


def _finalize(d: BackendDescriptor, what: str) -> None:
    d.finalize()


def _virtual_general(uid: int, dtype: str, dims: Any, strides: Any) -> BackendDescriptor:
    d = BackendDescriptor("TENSOR")
    d.set("TENSOR_UNIQUE_ID", uid, attr_type="INT64")
    d.set("TENSOR_DATA_TYPE", dtype, attr_type="DATA_TYPE")
    d.set("TENSOR_BYTE_ALIGNMENT", 16, attr_type="INT64")
    d.set("TENSOR_DIMENSIONS", dims, attr_type="INT64")
    d.set("TENSOR_STRIDES", strides, attr_type="INT64")
    d.set("TENSOR_IS_VIRTUAL", True, attr_type="BOOLEAN")
    d.finalize()
    return d


@pytest.mark.parametrize("dtype", ["FLOAT", "INT32", "BOOLEAN", "HALF", "BFLOAT16", "DOUBLE"])
def test_a_virtual_tensor_of_the_lowering_reads_back_as_the_general_path_sets_it(
    dtype: str,
) -> None:
    # DOUBLE is not among the types set directly: it takes the general path, with the same result
    uid, dims, strides = 2**40 + 7, (2, 4, 16, 32), (2048, 512, 32, 1)
    direct = BackendDescriptor("TENSOR")
    set_virtual(direct, uid, dtype, dims, strides, finalize=_finalize, what="score tensor")
    general = _virtual_general(uid, dtype, dims, strides)
    assert direct.is_finalized
    seen = _read(direct)
    assert seen == _read(general)
    assert (seen["uid"], list(seen["dims"]), list(seen["strides"])) == (uid, [*dims], [*strides])
    assert seen["virtual"] is True
    assert str(seen["dtype"].name).removeprefix("CUDNN_DATA_") == dtype
    assert direct._set_kinds == general._set_kinds


def test_a_virtual_tensor_beyond_int64_is_refused_by_the_general_checks() -> None:
    d = BackendDescriptor("TENSOR")
    with pytest.raises(ValueError, match=r"CUDNN_ATTR_TENSOR_UNIQUE_ID .* out of range"):
        set_virtual(d, 2**64 + 3, "FLOAT", (1, 2, 4, 4), (32, 16, 4, 1),
                    finalize=_finalize, what="score tensor")  # fmt: skip
    assert not d.is_finalized


def test_a_refused_virtual_tensor_is_named_as_the_lowering_names_it() -> None:
    nine = (1,) * 9  # one more dim than cuDNN takes: refused at finalize
    with pytest.raises(pycudnn.CudnnError, match=r"sdpa0 \(score subgraph tensor\)"):
        set_virtual(BackendDescriptor("TENSOR"), 2**40, "FLOAT", nine, nine,
                    finalize=_finalize, what="sdpa0 (score subgraph tensor)")  # fmt: skip


def test_a_recording_descriptor_sees_each_attribute_of_a_virtual_tensor() -> None:
    # The plan loader compares a plan's JSON with what the graph gives cuDNN: its descriptors
    # record every set(), so the direct path must not bypass them.
    from pycudnn.plan.canonical import recording_descriptor

    d = recording_descriptor()("TENSOR")
    set_virtual(d, 2**40 + 1, "FLOAT", (1, 2, 4, 4), (32, 16, 4, 1),
                finalize=_finalize, what="score tensor")  # fmt: skip
    assert d.is_finalized
    assert d.recorded["TENSOR_UNIQUE_ID"] == [2**40 + 1]
    assert d.recorded["TENSOR_DIMENSIONS"] == [1, 2, 4, 4]
    assert d.recorded["TENSOR_IS_VIRTUAL"] == [True]


def test_an_sdpa_score_subgraph_plans_as_before(h100_props: pycudnn.DeviceProperties) -> None:
    # causal SDPA: its score subgraph holds virtual tensors set directly
    g = Graph("causal")
    bshd = [128 * 4 * 64, 64, 4 * 64, 1]
    q, k, v = (g.tensor([2, 4, 128, 64], bshd, dtype="bfloat16", name=n) for n in "qkv")
    g.sdpa(q, k, v, scale=0.125, causal=True)
    made = build_descriptors(g)
    own = {t.uid for t in g._tensors}
    virtual = [d for d in made["all"] if d.type_name.endswith("TENSOR_DESCRIPTOR")
               and d.get("TENSOR_UNIQUE_ID") not in own]  # fmt: skip
    assert virtual, "no score-subgraph tensor was made"
    assert all(d.get("TENSOR_IS_VIRTUAL", attr_type="BOOLEAN") for d in virtual)
    plan = g.build(device_properties=h100_props, cache=False)
    assert plan.engine_id is not None
