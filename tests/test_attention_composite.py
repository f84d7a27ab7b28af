"""SDPA lowered to the composite graph (matmul, softmax, matmul), and cudnn-frontend's keyword
names, on CPU: real cuDNN plans for the committed H100 properties without a GPU.

The composite graph is what NVIDIA's frontend builds where cuDNN's unified SDPA operation does
not reach: the backward on Hopper before cuDNN 9.28 (its unified bprop is Blackwell-only there),
the training forward with dropout and stats, an RNG dump, dBias. ``implementation="auto"`` (the
default) picks the unified operation where the loaded cuDNN has every feature asked, else the
composite graph, and the plan's ``rewrite`` says which. Numerical results are the GPU tier's.
"""

from __future__ import annotations

from typing import Any

import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError, Tensor
from pycudnn.opgraph import attention_common as attention_module

B, H, S, D = 2, 6, 128, 64


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def bshd(g: Graph, name: str, h: int = H, s: int = S, d: int = D) -> Tensor:
    return g.tensor([B, h, s, d], [s * h * d, d, h * d, 1], dtype="bfloat16", name=name)


def rng_tensors(g: Graph) -> tuple[Tensor, Tensor]:
    return (
        g.tensor([1, 1, 1, 1], dtype="int64", name="seed"),
        g.tensor([1, 1, 1, 1], dtype="int64", name="offset"),
    )


def lengths(g: Graph) -> dict[str, Tensor]:
    return {
        "seq_len_q": g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_q"),
        "seq_len_kv": g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_kv"),
    }


def backward(hk: int = H, **options: Any) -> Graph:
    g = Graph("sdpa_bwd")
    q, k, v = bshd(g, "q"), bshd(g, "k", hk), bshd(g, "v", hk)
    o, do = bshd(g, "o"), bshd(g, "do")
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    if options.pop("dropout_", False):
        seed, offset = rng_tensors(g)
        options.update(dropout=0.1, seed=seed, offset=offset)
    if options.pop("padding_", False):
        options.update(lengths(g))
    if options.pop("bias_", False):
        options["bias"] = g.tensor([1, H, S, S], dtype="bfloat16", name="bias")
        options["dBias"] = g.tensor([1, H, S, S], dtype="bfloat16", name="dbias")
    g.sdpa_backward(q, k, v, o, do, stats=stats, name="attn_bwd", **options)
    return g


def lowering(g: Graph) -> str:
    return next(op for op in g.operations if op.kind.startswith("sdpa")).attrs["lowering"]


# -- planning ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"hk": 2},  # grouped-query: full-head dK/dV reduced onto the K/V heads
        {"hk": 1},  # multi-query
        {"use_causal_mask": True},
        {"dropout_": True},
        {"padding_": True},
        {"use_causal_mask_bottom_right": True, "padding_": True},
        {"use_causal_mask": True, "sliding_window_length": 32},
        {"diagonal_band_left_bound": 32},
        {"diagonal_band_right_bound": 5},
        {"bias_": True},
    ],
    ids=lambda o: ",".join(o) or "plain",
)
def test_composite_backward_plans_for_the_h100(
    props: pycudnn.DeviceProperties, options: dict[str, Any]
) -> None:
    g = backward(implementation="composite", **options)
    assert lowering(g) == "composite"
    plan = g.build(device_properties=props, cache=False)
    assert "composite graph" in plan.rewrite
    # every scalar of the composite graph is a graph tensor: the variant pack holds it
    assert set(plan.uids) == {t.uid for t in g.tensors if not t.is_virtual}


def test_composite_plan_round_trips_through_json(props: pycudnn.DeviceProperties) -> None:
    g = backward(implementation="composite", use_causal_mask=True)
    plan = g.build(device_properties=props, cache=False)
    again = g.load_plan(plan.to_json(), device_properties=props)
    assert again.engine_id == plan.engine_id and again.uids == plan.uids
    # What cuDNN was shown is said of the reloaded plan too (it was "" on a reload and a hit
    # from a disk cache), and so in describe().
    assert "lowered to the composite graph" in plan.rewrite
    assert again.rewrite == plan.rewrite and plan.rewrite in again.describe()


@pytest.mark.parametrize(
    "options",
    [
        {"generate_stats": True, "dropout_": True},  # the training forward with dropout
        {"generate_stats": True, "dropout_": True, "rng_dump_": True},
        {"generate_stats": False},  # inference: stats made virtual (cuDNN needs them)
        {"generate_stats": True, "use_causal_mask_bottom_right": True, "padding_": True},
        {"generate_stats": True, "hk": 2, "diagonal_band_left_bound": 16},
    ],
    ids=lambda o: ",".join(k for k, v in o.items() if v) or "plain",
)
def test_composite_forward_plans_for_the_h100(
    props: pycudnn.DeviceProperties, options: dict[str, Any]
) -> None:
    g = Graph("sdpa_fwd")
    hk = options.pop("hk", H)
    q, k, v = bshd(g, "q"), bshd(g, "k", hk), bshd(g, "v", hk)
    if options.pop("dropout_", False):
        seed, offset = rng_tensors(g)
        options["dropout"] = (0.1, seed, offset)  # the frontend's tuple form
    if options.pop("padding_", False):
        options.update(lengths(g))
    if options.pop("rng_dump_", False):
        options["rng_dump"] = g.tensor([B, H, S, S], dtype="float32", name="rng_dump")
    options.setdefault("implementation", "composite")
    o, stats = g.sdpa(q, k, v, name="attn", **options)
    assert (stats is not None) == options["generate_stats"]
    assert lowering(g) == "composite"
    plan = g.build(device_properties=props, cache=False)
    assert set(plan.uids) == {t.uid for t in g.tensors if not t.is_virtual}
    assert o.uid in plan.uids


def test_auto_picks_the_composite_graph_for_dropout_with_stats() -> None:
    g = Graph("train")
    q, k, v = (bshd(g, n) for n in "qkv")
    seed, offset = rng_tensors(g)
    g.sdpa(q, k, v, generate_stats=True, dropout=0.2, seed=seed, offset=offset)
    op = g.operations[-1]
    assert op.attrs["implementation"] == "auto" and op.attrs["lowering"] == "composite"
    assert "dropout with stats" in op.attrs["lowering_note"]
    # without dropout the unified operation serves (where the loaded cuDNN has it)
    g.sdpa(q, k, v, generate_stats=True, name="plain")
    want = "unified" if pycudnn.version_tuple() >= (9, 13, 1) else "composite"
    assert g.operations[-1].attrs["lowering"] == want


def test_auto_backward_follows_the_unified_operation_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the reported version is replaced: the rule under test is the choice and its note.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92700)
    g = backward()
    op = g.operations[-1]
    assert op.attrs["lowering"] == "composite"
    assert "sdpa_backward needs cuDNN 9.28.0" in op.attrs["lowering_note"]
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    assert lowering(backward()) == "unified"
    assert lowering(backward(implementation="composite")) == "composite"


def test_auto_backward_with_dropout_is_composite_as_its_forward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The training forward with dropout is the composite graph; its backward redraws the mask the
    # same way only as the composite graph (cudnn-frontend's backward always is), so "auto" takes
    # it even where the unified backward has dropout. Asked for, "unified" is still given.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    op = backward(dropout_=True).operations[-1]
    assert op.attrs["lowering"] == "composite"
    assert "pairs with the composite training forward" in op.attrs["lowering_note"]
    assert lowering(backward(dropout_=True, implementation="unified")) == "unified"


def test_unified_refuses_what_only_the_composite_graph_has() -> None:
    g = Graph("unified")
    q = bshd(g, "q")
    seed, offset = rng_tensors(g)
    with pytest.raises(GraphError, match=r"dropout with stats .*implementation='composite'"):
        g.sdpa(q, q, q, generate_stats=True, dropout=(0.1, seed, offset), implementation="unified")
    dump = g.tensor([B, H, S, S], dtype="float32", name="dump")
    with pytest.raises(GraphError, match=r"rng_dump .* composite graph only"):
        g.sdpa(q, q, q, dropout=(0.1, seed, offset), rng_dump=dump, implementation="UNIFIED")
    with pytest.raises(GraphError, match="implementation must be one of auto, composite, unified"):
        g.sdpa(q, q, q, implementation="fast")
    assert g.operations == []


# -- the frontend's keyword names ----------------------------------------------------------------


def test_sdpa_returns_the_frontend_pair() -> None:
    # As cudnn-frontend's pygraph.sdpa: always (O, stats), stats None when none is asked.
    g = Graph("pair")
    q, k, v = (bshd(g, n) for n in "qkv")
    o, stats = g.sdpa(q, k, v)
    assert stats is None and o.dims == q.dims
    _, stats2 = g.sdpa(q, k, v, generate_stats=True, name="train")
    assert stats2 is not None and stats2.dims == (B, H, S, 1)
    _, none = g.sdpa(q, k, v, is_inference=True, name="inference")
    assert none is None


def test_frontend_mask_names_set_the_band() -> None:
    g = Graph("masks")
    q = bshd(g, "q")
    k, v = bshd(g, "k", s=S + 32), bshd(g, "v", s=S + 32)  # s_kv - s_q = 32: bottom-right shift
    cases = [
        ({"use_causal_mask": True}, (None, 0)),
        ({"causal": True, "sliding_window": 16}, (16, 0)),
        ({"diagonal_band_left_bound": 16}, (16, None)),
        ({"diagonal_band_right_bound": 3}, (None, 3)),
        ({"use_causal_mask": True, "sliding_window_length": 8}, (8, 0)),
    ]
    for i, (opts, band) in enumerate(cases):
        g.sdpa(q, k, v, name=f"m{i}", **opts)
        a = g.operations[-1].attrs
        assert a["band"] == band and (a["left_bound"], a["right_bound"]) == band
    # bottom-right: the diagonal ends at the last key; fixed lengths fold the shift into bounds
    g.sdpa(q, k, v, name="br", use_causal_mask_bottom_right=True)
    a = g.operations[-1].attrs
    assert a["alignment"] == "bottom_right" and a["right_bound"] == 32 and not a["causal"]
    g.sdpa(q, k, v, name="br2", diagonal_alignment="BOTTOM_RIGHT", diagonal_band_left_bound=4)
    assert g.operations[-1].attrs["left_bound"] == 4 - 32


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scale": 0.1, "attn_scale": 0.2}, "scale and attn_scale are the same setting"),
        ({"attn_scale": float("nan")}, "scale must be a finite number"),
        ({"use_causal_mask": True, "diagonal_band_right_bound": 2}, "causal mask is .*=0"),
        ({"sliding_window": 4, "diagonal_band_left_bound": 4}, "each set the left bound"),
        ({"diagonal_band_left_bound": 0}, r"left_bound must be in 1\.\."),
        ({"diagonal_band_right_bound": -1}, r"right_bound must be in 0\.\."),
        ({"diagonal_alignment": "middle"}, "diagonal_alignment must be one of"),
        ({"use_causal_mask": 1}, "use_causal_mask must be a bool"),
        ({"return_stats": True, "generate_stats": False}, "disagree about the stats output"),
        ({"use_padding_mask": True}, "use_padding_mask=True but seq_len_q/seq_len_kv are missing"),
        ({"use_alibi_mask": 1}, "use_alibi_mask must be a bool"),
        (
            {"paged_attention_max_seq_len_kv": 512},
            r"paged_attention_max_seq_len_kv is the logical key length of paged K/V caches; "
            "give paged_attention_k_table/v_table too",
        ),
        (
            {"dropout": (0.1, 1.0)},
            r"dropout as a pair is the frontend.s \(mask, scale\) of two tensors",
        ),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\)"),
    ],
)
def test_bad_frontend_keywords_are_refused(options: dict[str, Any], message: str) -> None:
    g = Graph("bad")
    q = bshd(g, "q")
    with pytest.raises((GraphError, TypeError), match=message):
        g.sdpa(q, q, q, **options)
    assert g.operations == [] and len(g.tensors) == 1


def test_attn_scale_as_a_tensor() -> None:
    g = Graph("scale")
    q, k, v = (bshd(g, n) for n in "qkv")
    scale = g.tensor([1, 1, 1, 1], dtype="float32", name="attn_scale")
    g.sdpa(q, k, v, attn_scale=scale)
    op = g.operations[-1]
    assert op.inputs["scale"] is scale and op.attrs["scale"] is None
    wrong = g.tensor([1, 1, 1, 1], dtype="float16", name="half_scale")
    with pytest.raises(GraphError, match="attn_scale tensor 'half_scale' must be float32"):
        g.sdpa(q, k, v, attn_scale=wrong, name="bad")


def test_dbias_needs_a_bias() -> None:
    g = Graph("dbias")
    q = bshd(g, "q")
    st = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    db = g.tensor([1, H, S, S], dtype="bfloat16", name="dbias")
    with pytest.raises(GraphError, match="dBias is the gradient of a bias: give bias= too"):
        g.sdpa_backward(q, q, q, q, q, stats=st, dBias=db)


def test_composite_needs_k_apart_from_q() -> None:
    # K is shown to cuDNN transposed under its unique id: one tensor cannot be Q and K^T at once
    g = Graph("alias")
    q = bshd(g, "q")
    with pytest.raises(GraphError, match=r"k \('q'\) is also another operand.*tensor of its own"):
        g.sdpa(q, q, q, implementation="composite")
    assert g.operations == []


@pytest.mark.parametrize("heads", [8, 6])  # a power of two, and not (two slope series)
def test_alibi_is_composite_and_plans(props: pycudnn.DeviceProperties, heads: int) -> None:
    g = Graph("alibi")
    q, k, v = (bshd(g, n, h=heads) for n in "qkv")
    g.sdpa(q, k, v, use_alibi_mask=True, use_causal_mask=True, generate_stats=True)
    op = g.operations[-1]
    assert op.attrs["alibi"] and op.attrs["lowering"] == "composite"
    assert "use_alibi_mask" in op.attrs["lowering_note"]
    # the slopes are computed in the graph from the head index: two series when h_q is not a
    # power of two, as the frontend's get_alibi_slope
    assert ("alibi_heads" in op.inputs) == (heads == 6)
    with pytest.raises(GraphError, match="use_alibi_mask is lowered by the composite graph only"):
        g.sdpa(q, k, v, use_alibi_mask=True, implementation="unified", name="unified")
    g.build(device_properties=props, cache=False)


def test_alibi_reference_slopes() -> None:
    from pycudnn.verification.reference_attention import alibi_slopes

    # the frontend's get_alibi_slope: 2^(-8 a / n), n = 4 for 6 heads, a = 1..4 then 0.5, 1.5
    want = [2.0 ** (-8 * a / 4) for a in (1, 2, 3, 4, 0.5, 1.5)]
    assert alibi_slopes(6) == pytest.approx(want)
    assert alibi_slopes(8) == pytest.approx([2.0 ** (-(i + 1)) for i in range(8)])


def test_unplanned_unified_graph_suggests_the_composite_one(
    props: pycudnn.DeviceProperties,
) -> None:
    from pycudnn.plan import GraphNotSupportedError

    if pycudnn.version_tuple() < (9, 28, 0):
        pytest.skip("the unified backward plans from cuDNN 9.28")
    g = backward(implementation="unified")
    # the unified backward needs a workspace (engine 13, cuDNN 9.28): none allowed, no plan
    with pytest.raises(GraphNotSupportedError, match="implementation='composite' builds the"):
        g.build(device_properties=props, cache=False, max_workspace=0)


def test_composite_refuses_a_k_other_operations_use(props: pycudnn.DeviceProperties) -> None:
    # K shown transposed would change what the other operation computes: refused at build
    g = Graph("shared_k")
    q, k, v = (bshd(g, n) for n in "qkv")
    g.sdpa(q, k, v, implementation="composite")
    g.mul(k, g.scalar(2.0), out_dtype="bfloat16")
    with pytest.raises(
        GraphError, match=r"k \('k'\) is also used by mul .*implementation='unified'"
    ):
        g.build(device_properties=props, cache=False)


def test_a_padded_composite_plan_loads_back(props: pycudnn.DeviceProperties) -> None:
    # The padded matmuls carry M/N override tensors, which cuDNN's plan JSON names 'mOverride' and
    # 'nOverride': the saved plan must load for its own graph (and for no other).
    def padded(name: str = "attn") -> Graph:
        g = Graph("padded_composite")
        q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
        g.sdpa(q, k, v, implementation="composite", use_padding_mask=True, name=name, **lengths(g))
        return g

    plan = padded().build(device_properties=props, cache=False)
    again = padded().load_plan(plan.to_json(), device_properties=props)
    assert (again.engine_id, again.uids) == (plan.engine_id, plan.uids)
    unpadded = Graph("padded_composite")
    q, k, v = bshd(unpadded, "q"), bshd(unpadded, "k"), bshd(unpadded, "v")
    unpadded.sdpa(q, k, v, implementation="composite", name="attn")
    with pytest.raises(ValueError, match="built for another graph"):
        unpadded.load_plan(plan.to_json(), device_properties=props)


@pytest.mark.parametrize(
    ("shape", "options", "match"),
    [
        # cudnn-frontend's use_causal_mask is top-left whatever the alignment: pycudnn lowered a
        # bottom-right mask for this pair, another mask than the frontend's for the same call
        ({}, {"use_causal_mask": True, "diagonal_alignment": "bottom_right"}, "top-left causal"),
        # more queries than keys: the first queries see no key (the frontend refuses both)
        ({"s_q": 256}, {"use_causal_mask_bottom_right": True}, "needs s_q <= s_kv"),
        ({"s_q": 256}, {"sliding_window_length": 32}, "sliding-window mask needs s_q <= s_kv"),
        ({}, {"use_alibi_mask": True}, "ALiBi needs a causal mask"),
    ],
)
def test_masks_the_frontend_refuses_are_refused(
    shape: dict[str, int], options: dict[str, Any], match: str
) -> None:
    g = Graph("masks")
    q = bshd(g, "q", s=shape.get("s_q", S))
    k, v = bshd(g, "k"), bshd(g, "v")
    with pytest.raises(GraphError, match=match):
        g.sdpa(q, k, v, **options)


def kv_tail_backward(s_kv: int, padded: bool = False) -> Graph:
    """An SDPA backward with s_q = 128 and the given s_kv; with ``padded``, seq_len_q/_kv."""
    g = Graph("kv_tail")
    q, o, do = bshd(g, "q"), bshd(g, "o"), bshd(g, "do")
    k, v = bshd(g, "k", s=s_kv), bshd(g, "v", s=s_kv)
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    options = lengths(g) if padded else {}
    g.sdpa_backward(q, k, v, o, do, stats=stats, name="attn_bwd", **options)
    return g


def test_backward_with_a_kv_tail_is_refused_where_cudnn_gets_it_wrong(
    props: pycudnn.DeviceProperties,
) -> None:
    # cuDNN 9.15.0 and older give wrong (NaN) gradients for the fused backward when s_kv is not a
    # multiple of 128 and there is no padding mask; NVIDIA's frontend quietly adds a padding mask
    # of full lengths there. The plain graph plans (9.10.2, 9.12), so it is refused, and the way
    # around it the refusal names (full-length seq_len tensors) plans.
    if pycudnn.version_tuple() > (9, 15, 0):
        pytest.skip("cuDNN 9.15.1 and newer compute this backward without a padding mask")
    with pytest.raises(GraphError, match=r"s_kv \(200\) is not a multiple of 128.*seq_len_q"):
        kv_tail_backward(200)
    kv_tail_backward(200, padded=True).build(device_properties=props, cache=False)
    kv_tail_backward(256).build(device_properties=props, cache=False)


@pytest.mark.parametrize(("loaded", "refused"), [(91200, True), (91500, True), (91501, False)])
def test_kv_tail_rule_follows_the_frontend_versions(
    monkeypatch: pytest.MonkeyPatch, loaded: int, refused: bool
) -> None:
    # Only the reported version is replaced: the rule under test is which versions are refused.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: loaded)
    if refused:
        with pytest.raises(GraphError, match=r"cuDNN 9\.15\.1 or newer"):
            kv_tail_backward(200)
    else:
        assert lowering(kv_tail_backward(200)) == "composite"
    assert lowering(kv_tail_backward(200, padded=True)) == "composite"
    assert lowering(kv_tail_backward(384)) == "composite"


@pytest.mark.parametrize(("loaded", "refused"), [(90000, True), (90900, True), (91002, False)])
def test_padded_backward_before_9_10_is_refused(
    monkeypatch: pytest.MonkeyPatch, loaded: int, refused: bool
) -> None:
    # NVIDIA's frontend masks the padding again after the stats on cuDNN 9.0 to 9.9; the
    # composite graph here masks once, so those versions are refused with a padding mask.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: loaded)
    if refused:
        with pytest.raises(GraphError, match=r"applied again after the stats.*9\.10\.2"):
            kv_tail_backward(256, padded=True)
    else:
        assert lowering(kv_tail_backward(256, padded=True)) == "composite"


def test_padded_backward_is_refused_on_the_loaded_cudnn_before_9_10() -> None:
    if pycudnn.version_tuple() >= (9, 10, 0):
        pytest.skip("cuDNN 9.10 and newer keep the padding mask through the stats")
    with pytest.raises(GraphError, match=r"applied again after the stats"):
        kv_tail_backward(256, padded=True)


def window_backward(s_kv: int, **masks: Any) -> Graph:
    """An SDPA backward over ``s_kv`` keys with the given mask keywords."""
    g = Graph("window")
    q, o, do = bshd(g, "q"), bshd(g, "o"), bshd(g, "do")
    k, v = bshd(g, "k", s=s_kv), bshd(g, "v", s=s_kv)
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    g.sdpa_backward(q, k, v, o, do, stats=stats, name="attn_bwd", **masks)
    return g


def single_row_backward(b: int, h: int, s_q: int, s_kv: int, **options: Any) -> Graph:
    g = Graph("one_row")

    def t(name: str, s: int) -> Tensor:
        return g.tensor([b, h, s, 64], [s * h * 64, 64, h * 64, 1], dtype="float16", name=name)

    q, o, do, k, v = t("q", s_q), t("o", s_q), t("do", s_q), t("k", s_kv), t("v", s_kv)
    stats = g.tensor([b, h, s_q, 1], dtype="float32", name="stats")
    g.sdpa_backward(q, k, v, o, do, stats=stats, **options)
    return g


def test_a_composite_backward_of_one_score_row_is_refused() -> None:
    # b * h_q * s_q == 1: cuDNN 9.28's heuristics crashed the process (SIGSEGV) on the composite
    # backward (found by fuzzing); the refusal names the unified operation instead.
    # (s_kv 128: shorter key tails are refused for a bug of cuDNN 9.15.0 and older)
    with pytest.raises(GraphError, match=r"single score row.*implementation='unified'"):
        single_row_backward(1, 1, 1, 128, implementation="composite")
    for dims in ((2, 1, 1, 128), (1, 2, 1, 128), (1, 1, 2, 128)):  # more rows: described
        assert lowering(single_row_backward(*dims, implementation="composite")) == "composite"
    if pycudnn.version_tuple() >= (9, 28, 0):
        assert lowering(single_row_backward(1, 1, 1, 128)) == "unified"  # "auto"


@pytest.mark.parametrize(
    ("loaded", "build", "refused"),
    [
        (91000, lambda: kv_tail_backward(256), r"9\.10\.0 has known bugs.*9\.10\.2 or newer"),
        (91001, lambda: kv_tail_backward(256, padded=True), r"9\.10\.1 has known bugs"),
        (91002, lambda: kv_tail_backward(256), None),
        (91400, lambda: window_backward(2048, sliding_window_length=64), r"9\.14\.0.*s_kv > 1024"),
        (91400, lambda: window_backward(1024, sliding_window_length=64), None),
        (91400, lambda: window_backward(2048, sliding_window=64), None),  # causal: right bound 0
        (91401, lambda: window_backward(2048, sliding_window_length=64), None),
    ],
)  # fmt: skip
def test_backward_versions_the_frontend_refuses_for_known_bugs(
    monkeypatch: pytest.MonkeyPatch, loaded: int, build: Any, refused: str | None
) -> None:
    # cudnn-frontend's CompositeSDPABackwardNode refuses these fp16/bf16 backwards on these cuDNN
    # versions ("Bug workarounds for known problematic versions"); only the reported version is
    # replaced here.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: loaded)
    if refused:
        with pytest.raises(GraphError, match=refused):
            build()
    else:
        assert lowering(build()) == "composite"
