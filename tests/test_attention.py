"""Scaled dot-product attention graphs on CPU: real cuDNN plans for the H100 without a GPU.

With the committed H100 device properties, cuDNN (9.28 here) builds execution plans for
``OPERATION_SDPA_FWD`` / ``OPERATION_SDPA_BWD`` deviceless; these tests check that each variant the
graph offers (layouts, dtypes, grouped-query heads, masks, bias, padding, dropout) gets one, that
plans round-trip through JSON, and that bad arguments are refused in Python with the argument and
the rule. Numerical results are the GPU tier's (``tests/test_attention_gpu.py``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import pycudnn
from _nvbind.ffi import UnsupportedByLibraryError
from pycudnn.graph import Graph, GraphError, Tensor
from pycudnn.opgraph import attention_common as attention_module
from pycudnn.plan import GraphNotSupportedError


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def qkv_tensor(
    g: Graph, name: str, dims: tuple[int, int, int, int], layout: str, dtype: str
) -> Tensor:
    _, h, s, d = dims
    strides = [s * h * d, d, h * d, 1] if layout == "bshd" else [h * s * d, s * d, d, 1]
    return g.tensor(list(dims), strides, dtype=dtype, name=name)


def attention_graph(
    *,
    b: int = 2,
    hq: int = 8,
    hk: int = 8,
    sq: int = 128,
    skv: int = 128,
    d: int = 64,
    layout: str = "bshd",
    dtype: str = "float16",
    **options: Any,
) -> tuple[Graph, Tensor, Tensor | None]:
    g = Graph("attention")
    q = qkv_tensor(g, "q", (b, hq, sq, d), layout, dtype)
    k = qkv_tensor(g, "k", (b, hk, skv, d), layout, dtype)
    v = qkv_tensor(g, "v", (b, hk, skv, d), layout, dtype)
    o, stats = g.sdpa(q, k, v, name="attn", **options)
    return g, o, stats


@pytest.mark.parametrize(
    ("shape", "layout", "dtype"),
    [
        ({}, "bshd", "float16"),
        ({"hk": 2, "sq": 127, "skv": 129}, "bhsd", "bfloat16"),  # grouped-query, odd lengths
        ({"hk": 1, "d": 128}, "bshd", "bfloat16"),  # multi-query
    ],
)
def test_sdpa_forward_plans_for_the_h100(
    props: pycudnn.DeviceProperties, shape: dict[str, int], layout: str, dtype: str
) -> None:
    opts: dict[str, Any] = {"layout": layout, "dtype": dtype, "return_stats": True, **shape}
    g, o, stats = attention_graph(**opts)
    q = g["q"]
    # O: Q's dims with V's head dim, Q's layout and dtype; stats: float32 [b, h, s_q, 1].
    assert o.dims == q.dims and o.strides == q.strides and o.dtype == q.dtype
    assert stats is not None
    assert stats.dims == (*q.dims[:3], 1) and str(stats.dtype) == "float32"
    plan = g.build(device_properties=props, cache=False)
    data = json.loads(plan.to_json())
    assert int(data["engine"]["smVersion"]) == 900  # sm_90, as cuDNN writes it
    assert set(plan.uids) == {t.uid for t in g.tensors if not t.is_virtual}


def test_sdpa_masks_bias_and_padding_plan(props: pycudnn.DeviceProperties) -> None:
    g = Graph("masked")
    q = qkv_tensor(g, "q", (2, 4, 96, 64), "bshd", "bfloat16")
    k = qkv_tensor(g, "k", (2, 2, 80, 64), "bshd", "bfloat16")
    v = qkv_tensor(g, "v", (2, 2, 80, 64), "bshd", "bfloat16")
    bias = g.tensor([1, 4, 96, 80], dtype="bfloat16", name="bias")
    slq = g.tensor([2, 1, 1, 1], dtype="int32", name="seq_len_q")
    slkv = g.tensor([2, 1, 1, 1], dtype="int32", name="seq_len_kv")
    opts = {"causal": True, "bias": bias, "seq_len_q": slq, "seq_len_kv": slkv, "scale": 0.1}
    o, _ = g.sdpa(q, k, v, name="attn", **opts)
    text = g.describe()
    assert "sdpa 'attn'" in text and "causal=True" in text and "scale=0.1" in text
    # -inf for the mask and the scale are by-value scalars of the graph, not inputs to pass.
    assert g["attn.neg_inf"].by_value and g["attn.neg_inf"].value == float("-inf")
    assert g["attn.scale"].value == 0.1
    plan = g.build(device_properties=props, cache=False)
    assert {bias.uid, slq.uid, slkv.uid, o.uid} <= set(plan.uids)
    # cuDNN's plan JSON lists the operation graph's tensors, not the score subgraph's (bias, -inf):
    # the plan still matches its graph when loaded.
    # (cuDNN's plan JSON names a padded matmul's override roles 'mOverride'/'nOverride', as 9.19
    # lowers this graph; they map to the graph's GEMM_M/N_OVERRIDE roles.)
    again = g.load_plan(plan.to_json(), device_properties=props)
    assert again.uids == plan.uids


def test_sdpa_sliding_window_plan_and_key(props: pycudnn.DeviceProperties) -> None:
    g, _, _ = attention_graph(sliding_window=32)
    g.build(device_properties=props, cache=False)
    causal, _, _ = attention_graph(causal=True)
    plain, _, _ = attention_graph()
    # Every mask changes what is computed, so every one is part of the plan-cache key.
    assert len({g.key(), causal.key(), plain.key()}) == 3


@pytest.mark.parametrize("implementation", ["auto", "composite"])
def test_sdpa_dropout_plans(props: pycudnn.DeviceProperties, implementation: str) -> None:
    g = Graph("dropout")
    q, k, v = (qkv_tensor(g, n, (2, 8, 128, 64), "bshd", "float16") for n in "qkv")
    seed = g.tensor([1, 1, 1, 1], dtype="int64", name="seed")
    offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    g.sdpa(q, k, v, dropout=0.1, seed=seed, offset=offset, implementation=implementation)
    plan = g.build(device_properties=props, cache=False)
    # The plan JSON is cuDNN's own record of the operation graph it was given: the dropout is in it.
    nodes = json.loads(plan.to_json())["operationGraph"]["nodes"]
    uids = (str(seed.uid), str(offset.uid))
    if g.operations[-1].attrs["lowering"] == "unified":
        (node,) = (n for n in nodes if n["operation"].endswith("_SDPA_FWD_DESCRIPTOR"))
        assert node["dropoutProbability"] == pytest.approx(0.1)  # a float32 0.1
        assert (node["dropoutSeed"], node["dropoutOffset"]) == uids
    else:  # a Bernoulli mask keeping each probability with 1 - 0.1
        (node,) = (n for n in nodes if n["operation"].endswith("_RNG_DESCRIPTOR"))
        assert node["distribution"] == "CUDNN_RNG_DISTRIBUTION_BERNOULLI"
        assert node["bernoulli_dist_probability"] == pytest.approx(0.9)
        assert (node["seedTensor"], node["offset"]) == uids


def backward_graph(*, hk: int = 8, **options: Any) -> Graph:
    g = Graph("attention_backward")
    q = qkv_tensor(g, "q", (2, 8, 128, 64), "bshd", "bfloat16")
    k = qkv_tensor(g, "k", (2, hk, 128, 64), "bshd", "bfloat16")
    v = qkv_tensor(g, "v", (2, hk, 128, 64), "bshd", "bfloat16")
    o = qkv_tensor(g, "o", (2, 8, 128, 64), "bshd", "bfloat16")
    do = qkv_tensor(g, "do", (2, 8, 128, 64), "bshd", "bfloat16")
    stats = g.tensor([2, 8, 128, 1], dtype="float32", name="stats")
    dq, dk, dv = g.sdpa_backward(q, k, v, o, do, stats=stats, **options)
    for grad, src in ((dq, q), (dk, k), (dv, v)):
        assert grad.dims == src.dims and grad.strides == src.strides and grad.dtype == src.dtype
    return g


@pytest.mark.parametrize("options", [{}, {"causal": True, "hk": 1}])
def test_sdpa_backward_plans(props: pycudnn.DeviceProperties, options: dict[str, Any]) -> None:
    g = backward_graph(**options)
    plan = g.build(device_properties=props, cache=False)
    again = g.load_plan(plan.to_json(), device_properties=props)
    assert again.engine_id == plan.engine_id and again.uids == plan.uids


# -- refusals ----------------------------------------------------------------------------------


def test_bad_arguments_name_the_operation_and_rule() -> None:
    g = Graph("bad")
    q = qkv_tensor(g, "q", (2, 8, 16, 64), "bshd", "float16")
    k3 = qkv_tensor(g, "k3", (2, 3, 16, 64), "bshd", "float16")
    f32 = qkv_tensor(g, "f32", (2, 8, 16, 64), "bshd", "float32")
    with pytest.raises(GraphError, match=r"sdpa 'a': q's 8 heads must be a multiple of k/v's 3"):
        g.sdpa(q, k3, k3, name="a")
    with pytest.raises(GraphError, match=r"sdpa 'b': q 'f32': SDPA takes float16 or bfloat16"):
        g.sdpa(f32, f32, f32, name="b")
    with pytest.raises(
        GraphError, match=r"dropout with stats .* no unified SDPA operation.*'auto'"
    ):
        g.sdpa(q, q, q, dropout=0.1, return_stats=True, implementation="unified")
    with pytest.raises(GraphError, match="dropout needs a seed"):
        g.sdpa(q, q, q, dropout=0.1)
    other = Graph("other")
    foreign = qkv_tensor(other, "k", (2, 8, 16, 64), "bshd", "float16")
    with pytest.raises(GraphError, match="belongs to graph 'other'"):
        g.sdpa(q, foreign, foreign)
    with pytest.raises(TypeError, match="k must be a Tensor of this graph"):
        g.sdpa(q, "k", q)  # type: ignore[arg-type]
    # Nothing was added by the refused calls: the graph has no operation and no stray scalars.
    assert g.operations == [] and len(g.tensors) == 3


def test_backward_needs_the_forward_stats() -> None:
    g = Graph("bwd")
    q = qkv_tensor(g, "q", (2, 8, 16, 64), "bshd", "float16")
    st = g.tensor([2, 8, 16, 1], dtype="float16", name="st")
    with pytest.raises(GraphError, match=r"stats 'st': .*float32.*return_stats=True"):
        g.sdpa_backward(q, q, q, q, q, stats=st)


def test_backward_stats_strides_before_cudnn_9_26(monkeypatch: pytest.MonkeyPatch) -> None:
    # cuDNN before 9.26 reads a stats input that is not ragged at packed [b, h, s, 1] offsets
    # whatever its strides (NVIDIA's frontend refuses other strides there): refused, not read wrong
    b, h, s = 2, 8, 16
    q_dims = (b, h, s, 64)

    def backward(strides: list[int]) -> None:
        g = Graph("bwd_stats")
        q, k, v, o, do = (
            qkv_tensor(g, n, q_dims, "bshd", "float16") for n in ("q", "k", "v", "o", "do")
        )
        st = g.tensor([b, h, s, 1], strides, dtype="float32", name="st")
        g.sdpa_backward(q, k, v, o, do, stats=st, causal=True)

    bsh = [s * h, 1, h, 1]
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 91900)
    with pytest.raises(GraphError, match=r"stats 'st': strides \[128, 1, 8, 1\] .*9\.26\.0"):
        backward(bsh)
    backward([h * s, s, 1, 1])  # packed: as sdpa returns the stats
    backward([h * s, s, 1, 7])  # the extent-1 dim's stride addresses nothing
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92600)
    backward(bsh)


def test_older_cudnn_is_refused_with_the_version_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the reported version is replaced: the rule under test is the comparison and the message.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 91900)
    g = Graph("old")
    q = qkv_tensor(g, "q", (2, 8, 16, 64), "bshd", "float16")
    g.sdpa(q, q, q, name="plain")  # 9.13.1 is enough for the operation itself
    assert g.operations[-1].attrs["lowering"] == "unified"
    with pytest.raises(
        UnsupportedByLibraryError,
        match=r"sdpa 'masked': sdpa score modifiers .* needs cuDNN 9.21.0 or newer; the loaded "
        r"cuDNN is 9.19.0",
    ):
        g.sdpa(q, q, q, causal=True, name="masked", implementation="unified")
    # implementation="auto" (the default) lowers to the composite graph instead, and says why
    k, v = (
        qkv_tensor(g, "k", (2, 8, 16, 64), "bshd", "float16"),
        qkv_tensor(g, "v", (2, 8, 16, 64), "bshd", "float16"),
    )
    g.sdpa(q, k, v, causal=True, name="auto")
    assert g.operations[-1].attrs["lowering"] == "composite"
    assert "needs cuDNN 9.21.0" in g.operations[-1].attrs["lowering_note"]
    # 9.19 declares OPERATION_SDPA_BWD but cannot finalize a graph holding it (measured): the
    # refusal names 9.28, the oldest release measured to plan it, and says why
    st = g.tensor([2, 8, 16, 1], dtype="float32", name="st")
    with pytest.raises(
        UnsupportedByLibraryError,
        match=r"sdpa_backward needs cuDNN 9.28.0 or newer; the loaded cuDNN is 9.19.0 .*buildDAG",
    ):
        g.sdpa_backward(q, q, q, q, q, stats=st, implementation="unified")
    g.sdpa_backward(q, k, v, q, q, stats=st, name="composite_bwd")
    assert g.operations[-1].attrs["lowering"] == "composite"


def test_sdpa_plans_are_cached(props: pycudnn.DeviceProperties) -> None:
    g, _, _ = attention_graph()
    assert g.build(device_properties=props) is g.build(device_properties=props)


def test_pointwise_epilogue_has_no_engine(props: pycudnn.DeviceProperties) -> None:
    # Measured with cuDNN 9.28 for the H100: the SDPA engines take no fused pointwise neighbour
    # ("KERNEL_CFG knob must be set"); the graph says so instead of planning something else.
    g, o, _ = attention_graph()
    g.mul(o, g.scalar(2.0), out_dtype="float16")
    with pytest.raises(GraphNotSupportedError, match="no engine supports graph 'attention'"):
        g.build(device_properties=props, cache=False)


_F32, _I32 = "float32", "int32"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"scale": 0.125, "causal": True}, {"scale": (_F32, 0.125), "neg_inf": (_F32, -math.inf)}),
        # a window, a shifted right bound: the composite graph's int32 bounds
        (
            {"sliding_window": 16, "diagonal_band_right_bound": 3, "implementation": "composite"},
            {
                "scale": (_F32, 0.125),
                "neg_inf": (_F32, -math.inf),
                "right_bound": (_I32, 3),
                "left_bound": (_I32, 16),
            },
        ),
        # ALiBi over 6 heads (not a power of two): its slopes' rate, one, heads and shift
        (
            {"use_alibi_mask": True, "causal": True},
            {
                "scale": (_F32, 0.125),
                "neg_inf": (_F32, -math.inf),
                "alibi_rate": (_F32, -8.0 * math.log(2.0) / 4),
                "alibi_one": (_F32, 1.0),
                "alibi_heads": (_I32, 4),
                "alibi_shift": (_F32, 0.5 - 4),
            },
        ),
    ],
)
def test_the_scalars_an_sdpa_adds_are_what_graph_scalar_makes(
    options: dict[str, Any], expected: dict[str, tuple[str, float]]
) -> None:
    # The operation makes its own by-value scalars without scalar()'s checks of a caller's
    # request: each must be the tensor scalar() makes of the value and type the rules give.
    g, _, _ = attention_graph(hq=6, hk=6, **options)
    own = {r: t for r, t in g.operations[-1].inputs.items() if t.by_value}
    assert set(own) == set(expected)
    for role, (dtype, value) in expected.items():
        t = own[role]
        ref = Graph("reference").scalar(value, dtype=dtype, name=f"attn.{role}")
        seen = (t.name, t.dims, t.strides, t.dtype, t.value, t.alignment, t.is_virtual)
        want = (ref.name, ref.dims, ref.strides, ref.dtype, ref.value, ref.alignment,
                ref.is_virtual)  # fmt: skip
        assert seen == want, role
