"""Ragged (THD) tensors in ``Graph.sdpa`` / ``sdpa_backward`` (cudnn-frontend's
``set_ragged_offset`` and ``max_total_seq_len_q/kv``), planned deviceless for the committed H100
properties: the offsets become the tensors' ``TENSOR_RAGGED_OFFSET_DESC`` and inputs of the
operation (so that the variant pack carries them); the forward plans unified and composite, decode
included; the unified backward plans when the stats are ragged too, else ``"auto"`` takes the
composite backward; misuse is refused naming the tensor and the rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from versioned import skip_unless_cudnn

import pycudnn
from pycudnn.graph import Graph, GraphError
from pycudnn.verification import make_inputs

B, H, S, D = 2, 8, 256, 128


@pytest.fixture
def props(h100_props: pycudnn.DeviceProperties) -> pycudnn.DeviceProperties:
    return h100_props


def needs_unified(implementation: str = "unified") -> None:
    if implementation == "unified":
        skip_unless_cudnn((9, 15), "sequence lengths in the unified SDPA operation")


def thd(g: Graph, name: str, s: int = S, h: int = H) -> Any:
    """``[b, h, s, d]`` with the tokens of a sequence back to back (``[t, h, d]`` per batch)."""
    return g.tensor([B, h, s, D], [s * h * D, D, h * D, 1], dtype="bfloat16", name=name)


def ragged_graph(
    *,
    s_q: int = S,
    backward: bool = False,
    ragged_stats: bool = False,
    sink: bool = False,
    **options: Any,
) -> tuple[Graph, dict[str, Any]]:
    g = Graph("ragged")
    if sink:  # a learned logit per head in each softmax denominator
        options["sink_token"] = g.tensor([1, H, 1, 1], dtype="float32", name="sink")
    t: dict[str, Any] = {"q": thd(g, "q", s_q), "k": thd(g, "k", h=2), "v": thd(g, "v", h=2)}
    t["off_q"] = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off_q")
    t["off_kv"] = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off_kv")
    for role, off in (("q", "off_q"), ("k", "off_kv"), ("v", "off_kv")):
        t[role].set_ragged_offset(t[off])
    lens = {
        "seq_len_q": g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_q"),
        "seq_len_kv": g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_kv"),
    }
    if not backward:
        t["o"], t["stats"] = g.sdpa(t["q"], t["k"], t["v"], name="sdpa", **lens, **options)
        t["o"].set_ragged_offset(t["off_q"])
        return g, t
    o, do = thd(g, "o", s_q), thd(g, "do", s_q)
    o.set_ragged_offset(t["off_q"])
    do.set_ragged_offset(t["off_q"])
    if ragged_stats:  # [t, h, 1] per batch entry
        stats = g.tensor([B, H, s_q, 1], [H * s_q, 1, H, 1], dtype="float32", name="stats")
        stats.set_ragged_offset(g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off_stats"))
    else:
        stats = g.tensor([B, H, s_q, 1], dtype="float32", name="stats")
    grads = g.sdpa_backward(
        t["q"], t["k"], t["v"], o, do, stats=stats, name="sdpa_backward", **lens, **options
    )
    for grad, off in zip(grads, ("off_q", "off_kv", "off_kv"), strict=True):
        grad.set_ragged_offset(t[off])
    return g, t


def op_of(g: Graph) -> Any:
    return next(op for op in g.operations if op.kind.startswith("sdpa"))


@pytest.mark.parametrize("s_q", [1, S], ids=["decode", "prefill"])
@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_ragged_forward_plans(props: Any, s_q: int, implementation: str) -> None:
    needs_unified(implementation)
    g, t = ragged_graph(s_q=s_q, implementation=implementation, max_total_seq_len_q=B * s_q)
    op = op_of(g)
    assert op.attrs["lowering"] == implementation
    assert op.attrs["roles"] == ("q", "k", "v")
    assert op.attrs["max_total_seq_len_q"] == B * s_q
    # every offset is an input of the operation (the variant pack carries what it reads)
    for role, off in (("q", "off_q"), ("k", "off_kv"), ("v", "off_kv"), ("o", "off_q")):
        assert op.inputs["ragged_offset_" + role] is t[off]
    g.build(device_properties=props, cache=False)
    assert "(ragged by 'off_q')" in t["q"].describe()


def test_ragged_forward_with_stats_and_a_saved_plan(props: Any) -> None:
    needs_unified()  # a saved composite plan with sequence lengths does not load (known)
    g, _ = ragged_graph(generate_stats=True)
    plan = g.build(device_properties=props, cache=False)
    # cuDNN's plan JSON lists an offset inside its tensor's entry, not among the graph's tensors
    assert g.load_plan(plan.to_json(), device_properties=props).engine_id == plan.engine_id


def test_ragged_backward_lowering_follows_the_stats(props: Any) -> None:
    skip_unless_cudnn((9, 28), "the unified SDPA backward")
    g, _ = ragged_graph(backward=True)
    op = op_of(g)
    assert op.attrs["lowering"] == "composite"
    assert "stats that are not ragged" in op.attrs["lowering_note"]
    g.build(device_properties=props, cache=False)
    g, _ = ragged_graph(backward=True, ragged_stats=True, max_total_seq_len_kv=B * S)
    assert op_of(g).attrs["lowering"] == "unified"
    g.build(device_properties=props, cache=False)
    with pytest.raises(GraphError, match="stats that are not ragged have no unified backward"):
        ragged_graph(backward=True, implementation="unified")


def test_composite_backward_reads_k_for_dq_at_its_ragged_offsets(props: Any) -> None:
    # dQ = dS @ K reads K through a reshape of the K^T cuDNN is shown; NVIDIA's frontend
    # (CompositeSDPABackwardNode, "reshape_k") gives that view K's ragged offset, so that the
    # product reads each sequence's keys where they are, not at padded positions.
    g, t = ragged_graph(backward=True, implementation="composite")
    plan = g.build(device_properties=props, cache=False)
    graph = json.loads(plan.to_json())["operationGraph"]
    tensors = {x["name"]: x for x in graph["tensors"]}
    k_uid = str(t["k"].uid)
    (view,) = [
        tensors[n["Y"]]
        for n in graph["nodes"]
        if n["operation"].endswith("RESHAPE_DESCRIPTOR") and n["X"] == k_uid
    ]
    assert [o["name"] for o in view.get("isRagged", [])] == [str(t["off_kv"].uid)]


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"max_total_seq_len_q": S - 1}, r"max_total_seq_len_q = 255 is less than the longest"),
        ({"max_total_seq_len_kv": 0}, r"max_total_seq_len_kv must be in 1\.\.2147483647"),
        ({"max_total_seq_len_q": 1.5}, r"max_total_seq_len_q must be an int"),
    ],
)
def test_bad_totals_are_refused(options: dict[str, Any], pattern: str) -> None:
    with pytest.raises(GraphError, match=r"sdpa 'sdpa': " + pattern):
        ragged_graph(**options)


def test_misuse_is_refused_naming_the_tensor() -> None:
    g = Graph("bad")
    q = thd(g, "q")
    with pytest.raises(GraphError, match=r"'q': ragged offset 'f' must be a graph input of int"):
        q.set_ragged_offset(g.tensor([B + 1, 1, 1, 1], dtype="float32", name="f"))
    with pytest.raises(GraphError, match=r"must have dims \[b \+ 1, 1, 1, 1\] = \[3, 1, 1, 1\]"):
        q.set_ragged_offset(g.tensor([B, 1, 1, 1], dtype="int32", name="short"))
    with pytest.raises(TypeError, match="must be a Tensor of this graph"):
        q.set_ragged_offset(Graph("other").tensor([B + 1, 1, 1, 1], dtype="int32"))
    off = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off")
    assert q.set_ragged_offset(off) is q
    assert q.set_ragged_offset(off) is q  # the same offsets again: frontend code does that
    with pytest.raises(GraphError, match="takes one ragged offset"):
        q.set_ragged_offset(g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off2"))
    # one integer type for the offsets of one operation (cuDNN has no engine for a mix)
    wide = g.tensor([B + 1, 1, 1, 1], dtype="int64", name="wide")
    k64 = thd(g, "k64")
    k64.set_ragged_offset(wide)
    sl = g.tensor([B, 1, 1, 1], dtype="int32", name="sl")
    with pytest.raises(GraphError, match=r"offsets mix integer types \(q int32, k int64\)"):
        g.sdpa(q, k64, thd(g, "v64"), seq_len_q=sl, seq_len_kv=sl)
    o, _ = g.sdpa(q, thd(g, "k32"), thd(g, "v32"), seq_len_q=sl, seq_len_kv=sl)
    with pytest.raises(GraphError, match=r"'wide' is int64 but sdpa .* reads int32 offsets"):
        o.set_ragged_offset(wide)
    # the padding mask gives the lengths: required, as the frontend requires it
    with pytest.raises(GraphError, match=r"q are ragged \(THD\): give seq_len_q and seq_len_kv"):
        g.sdpa(q, thd(g, "k"), thd(g, "v"))
    with pytest.raises(GraphError, match=r"max_total_seq_len_kv bounds the tokens of ragged"):
        g.sdpa(q, thd(g, "k2"), thd(g, "v2"), seq_len_q=sl, seq_len_kv=sl, max_total_seq_len_kv=9)
    # only the attention operations take ragged tensors
    a = g.tensor([1, 64, 64], dtype="float16", name="a")
    g.matmul(a, g.tensor([1, 64, 64], dtype="float16", name="b"))
    with pytest.raises(GraphError, match=r"'a': matmul .* takes no ragged \(THD\) tensors"):
        a.set_ragged_offset(g.tensor([2, 1, 1, 1], dtype="int32", name="off_a"))
    assert a.ragged_offset is None


def test_verification_offsets_stay_inside_the_tensors() -> None:
    g, t = ragged_graph(s_q=16)
    g.signature()
    ins = make_inputs(g, seed=1)
    # each batch entry starts where a padded layout would put it: in bounds for every user
    assert list(ins[t["off_q"].uid].ravel()) == [0, 16 * H * D, 2 * 16 * H * D]
    assert list(ins[t["off_kv"].uid].ravel()) == [0, S * 2 * D, 2 * S * 2 * D]


@pytest.mark.parametrize(("loaded", "refused"), [(92500, True), (92600, False)])
def test_ragged_backward_with_a_sink_needs_9_26(
    monkeypatch: pytest.MonkeyPatch, loaded: int, refused: bool
) -> None:
    # Before 9.26 cuDNN's backward pre-pass reads out of bounds with ragged tensors and a sink
    # token (cudnn-frontend refuses it there); only the reported version is replaced.
    from pycudnn.opgraph import attention_common

    monkeypatch.setattr(attention_common, "_loaded_version", lambda: loaded)

    def build() -> Any:
        return ragged_graph(backward=True, implementation="composite", sink=True)

    if refused:
        with pytest.raises(GraphError, match=r"ragged tensors and a sink token.*9\.26"):
            build()
    else:
        build()
