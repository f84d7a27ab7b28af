"""Paged K/V caches in ``Graph.sdpa`` (cudnn-frontend's ``paged_attention_k_table``,
``paged_attention_v_table``, ``paged_attention_max_seq_len_kv``), planned deviceless for the
committed H100 properties: decode (s_q = 1) and prefill, through cuDNN's unified SDPA operation
(page tables as ``SDPA_FWD_PAGE_TABLE_K/VDESC``) and the composite graph
(``OPERATION_PAGED_CACHE_LOAD`` gathering each cache); the refusals name the argument and the
rule, and an older cuDNN is refused with the version the lowering needs before any C call."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from versioned import skip_unless_cudnn

import pycudnn
from _nvbind.ffi import UnsupportedByLibraryError
from pycudnn.graph import Graph, GraphError
from pycudnn.opgraph import attention_common as attention_module
from pycudnn.verification import evaluate, make_inputs

B, H, D, BLOCK, S_KV = 2, 8, 128, 64, 512


@pytest.fixture
def props(h100_props: pycudnn.DeviceProperties) -> pycudnn.DeviceProperties:
    return h100_props


def needs_unified(implementation: str = "unified") -> None:
    """The unified operation takes page tables from cuDNN 9.15 (older ones plan the composite
    graph, which ``"auto"`` then builds)."""
    if implementation == "unified":
        skip_unless_cudnn((9, 15), "the unified SDPA operation with page tables")


def paged_graph(
    *,
    s_q: int = 1,
    h_k: int = H,
    block: int = BLOCK,
    s_kv: int = S_KV,
    sides: tuple[str, ...] = ("k", "v"),
    max_seq_len_kv: int | None = S_KV,
    padded: bool = True,
    **options: Any,
) -> tuple[Graph, dict[str, Any]]:
    """Q ``bshd``; each paged side a ``[num_blocks, h_k, block, d]`` container with its page
    table ``[b, 1, ceil(s_kv / block), 1]``; the other side a ``bshd`` ``[b, h_k, s_kv, d]``."""
    g = Graph("paged")
    q = g.tensor([B, H, s_q, D], [s_q * H * D, D, H * D, 1], dtype="bfloat16", name="q")
    pages = -(-s_kv // block)
    t: dict[str, Any] = {"q": q}
    for side in ("k", "v"):
        if side in sides:
            t[side] = g.tensor([B * pages, h_k, block, D], dtype="bfloat16", name=f"{side}_cache")
            t[f"{side}_table"] = g.tensor([B, 1, pages, 1], dtype="int32", name=f"{side}_table")
        else:
            strides = [s_kv * h_k * D, D, h_k * D, 1]
            t[side] = g.tensor([B, h_k, s_kv, D], strides, dtype="bfloat16", name=side)
            t[f"{side}_table"] = None
    if padded:
        t["seq_len_q"] = g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_q")
        t["seq_len_kv"] = g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_kv")
    o, stats = g.sdpa(
        q,
        t["k"],
        t["v"],
        seq_len_q=t.get("seq_len_q"),
        seq_len_kv=t.get("seq_len_kv"),
        paged_attention_k_table=t["k_table"],
        paged_attention_v_table=t["v_table"],
        paged_attention_max_seq_len_kv=max_seq_len_kv,
        name="sdpa",
        **options,
    )
    t["o"], t["stats"] = o, stats
    return g, t


def lowering(g: Graph) -> str:
    return str(next(op for op in g.operations if op.kind == "sdpa").attrs["lowering"])


def check_paged_plan(
    plan: Any,
    t: dict[str, Any],
    *,
    unified: bool,
    s_q: int = 1,
    h_k: int = H,
    block: int = BLOCK,
    s_kv: int = S_KV,
    sides: tuple[str, ...] = ("k", "v"),
    max_seq_len_kv: int | None = S_KV,
    use_causal_mask: bool = False,
    diagonal_band_left_bound: int | None = None,
    generate_stats: bool = False,
    **_: Any,
) -> None:
    """The paged caches as cuDNN's own plan JSON records them, against :func:`paged_graph`'s
    arguments: the unified operation's ``pageTableK``/``V`` (only for the paged sides), or the
    composite graph's ``PAGED_CACHE_LOAD`` per paged side (its container, table and lengths, a
    ``[b, h_k, d, s_kv]`` K^T / ``[b, h_k, s_kv, d]`` V with the logical ``s_kv``, read by the
    matmuls); the causal and band masks and the stats."""
    data = json.loads(plan.to_json())
    nodes = data["operationGraph"]["nodes"]
    dims = {x["name"]: x["dim"] for x in data["operationGraph"]["tensors"]}
    scalars = {uid: value[0] for uid, value in data["pycudnnScalarValues"].items()}

    def uid(name: str) -> str:
        return str(t[name].uid)

    if max_seq_len_kv is None:  # the frontend's rule: the other side's length, else the pages
        max_seq_len_kv = s_kv if len(sides) < 2 else -(-s_kv // block) * block
    if unified:
        (node,) = nodes
        assert node["operation"] == "CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR"
        assert (node["K"], node["V"], node["seqLenKV"]) == (uid("k"), uid("v"), uid("seq_len_kv"))
        for side in ("k", "v"):
            table = uid(f"{side}_table") if side in sides else None
            assert node.get(f"pageTable{side.upper()}") == table, side
        masks = [m for m in node.get("subgraph", {}).get("nodes", [])]
        assert all(m["operation"].endswith("_DIAGONAL_BAND_MASK_DESCRIPTOR") for m in masks)
        modes = [m["comparisonMode"] for m in masks]
        assert ("CUDNN_POINTWISE_CMP_GE" in modes) == use_causal_mask
        bands = [m for m in masks if m["comparisonMode"] == "CUDNN_POINTWISE_CMP_GT"]
        assert [scalars[m["leftBoundDesc"]] for m in bands] == (
            [str(diagonal_band_left_bound)] if diagonal_band_left_bound is not None else []
        )
        assert node.get("stats") == (uid("stats") if generate_stats else None)
        return
    loads = {
        n["container"]: n for n in nodes if n["operation"].endswith("_PAGED_CACHE_LOAD_DESCRIPTOR")
    }
    assert set(loads) == {uid(side) for side in sides}
    shapes = {"k": [B, h_k, D, max_seq_len_kv], "v": [B, h_k, max_seq_len_kv, D]}
    read = {}
    for side in ("k", "v"):
        if side in sides:
            load = loads[uid(side)]
            assert (load["pageTable"], load["sequence"]) == (
                uid(f"{side}_table"),
                uid("seq_len_kv"),
            )
            assert dims[load["Y"]] == shapes[side], side
            read[side] = load["Y"]
        else:
            read[side] = uid(side)
    qk, pv = (n for n in nodes if n["operation"].endswith("_MATMUL_DESCRIPTOR"))
    assert (qk["matA"], qk["matB"], pv["matB"], pv["matC"]) == (
        uid("q"),
        read["k"],
        read["v"],
        uid("o"),
    )
    modes = [n.get("pointwiseMode") for n in nodes]
    assert ("CUDNN_POINTWISE_CMP_GE" in modes) == use_causal_mask
    bands = [n for n in nodes if n.get("pointwiseMode") == "CUDNN_POINTWISE_CMP_GT"]
    shifted = [next(a for a in nodes if a.get("Y") == n["X"]) for n in bands]
    assert [scalars.get(a.get("B", "")) for a in shifted] == (
        [str(diagonal_band_left_bound)] if diagonal_band_left_bound is not None else []
    )
    assert (t["stats"] is not None) == generate_stats
    if generate_stats:
        assert any(n.get("Y") == uid("stats") for n in nodes)


@pytest.mark.parametrize("s_q", [1, 128], ids=["decode", "prefill"])
@pytest.mark.parametrize("implementation", ["auto", "unified", "composite"])
def test_paged_caches_plan(props: Any, s_q: int, implementation: str) -> None:
    needs_unified(implementation)
    g, t = paged_graph(s_q=s_q, implementation=implementation)
    unified = implementation == "unified" or (
        implementation == "auto" and pycudnn.version_tuple() >= (9, 15, 0)
    )
    assert lowering(g) == ("unified" if unified else "composite")
    assert t["o"].dims == (B, H, s_q, D)
    plan = g.build(device_properties=props, cache=False)
    assert plan.engine_id is not None
    check_paged_plan(plan, t, unified=unified, s_q=s_q)


@pytest.mark.parametrize(
    "options",
    [
        {"sides": ("k",)},
        {"sides": ("v",)},
        {"h_k": 2},  # grouped-query heads
        {"h_k": 1},  # multi-query
        {"block": 16},
        {"block": 256},
        {"s_kv": 500},  # the last page partly used
        {"max_seq_len_kv": None},  # inferred from the pages, as the frontend does
        {"use_causal_mask": True},
        {"diagonal_band_left_bound": 64, "use_causal_mask": True},
        {"generate_stats": True, "s_q": 128},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_paged_variants_plan(props: Any, options: dict[str, Any], implementation: str) -> None:
    needs_unified(implementation)
    if implementation == "unified" and "use_causal_mask" in options:
        skip_unless_cudnn((9, 21), "masks in the unified SDPA operation")
    g, t = paged_graph(implementation=implementation, **options)
    plan = g.build(device_properties=props, cache=False)
    check_paged_plan(plan, t, unified=implementation == "unified", **options)


def test_composite_only_features_lower_paged_caches_to_the_composite_graph(props: Any) -> None:
    # bottom-right alignment with padding, and dropout with stats, are the composite graph's;
    # the caches are then gathered by OPERATION_PAGED_CACHE_LOAD
    g, _ = paged_graph(s_q=128, use_causal_mask_bottom_right=True)
    assert lowering(g) == "composite"
    g.build(device_properties=props, cache=False)
    g, t = paged_graph(s_q=128, generate_stats=True, implementation="auto")
    seed = g.tensor([1, 1, 1, 1], dtype="int64", name="seed")
    offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    q, k, v = t["q"], t["k"], t["v"]
    k2 = g.tensor(list(k.dims), dtype="bfloat16", name="k_cache2")
    v2 = g.tensor(list(v.dims), dtype="bfloat16", name="v_cache2")
    g.sdpa(
        q,
        k2,
        v2,
        seq_len_q=t["seq_len_q"],
        seq_len_kv=t["seq_len_kv"],
        paged_attention_k_table=t["k_table"],
        paged_attention_v_table=t["v_table"],
        dropout=(0.1, seed, offset),
        generate_stats=True,
        name="dropout",
    )
    assert g.operations[-1].attrs["lowering"] == "composite"


def test_saved_plan_of_a_paged_sdpa_loads(props: Any) -> None:
    needs_unified()  # a saved composite plan with sequence lengths does not load (known)
    g, _ = paged_graph()
    plan = g.build(device_properties=props, cache=False)
    again = g.load_plan(plan.to_json(), device_properties=props)
    assert again.engine_id == plan.engine_id


def test_the_tables_are_inputs_of_the_operation() -> None:
    skip_unless_cudnn((9, 5), "composite paged K/V caches")
    g, t = paged_graph(sides=("k",), implementation="composite")
    op = next(op for op in g.operations if op.kind == "sdpa")
    assert op.inputs["page_table_k"] is t["k_table"]
    assert "page_table_v" not in op.inputs
    assert op.attrs["paged"] == ("k",)
    assert op.attrs["scores_dims"] == (B, H, 1, S_KV)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"padded": False}, r"paged K/V caches need the padding mask.*seq_len_q and seq_len_kv"),
        ({"s_kv": 512, "block": 64, "max_seq_len_kv": 513}, r"the k pages hold 512 keys.*513"),
        ({"max_seq_len_kv": 0}, r"paged_attention_max_seq_len_kv must be in 1\.\.2147483647"),
        ({"max_seq_len_kv": True}, r"paged_attention_max_seq_len_kv must be an int"),
        ({"sides": (), "max_seq_len_kv": 512}, r"give paged_attention_k_table/v_table too"),
    ],
)
def test_paged_refusals_name_the_argument(change: dict[str, Any], pattern: str) -> None:
    with pytest.raises(GraphError, match=r"sdpa 'sdpa': .*" + pattern):
        paged_graph(**change)


def test_bad_tables_and_containers_are_refused() -> None:
    g = Graph("bad")
    q = g.tensor([B, H, 1, D], dtype="bfloat16", name="q")
    cache = g.tensor([16, H, BLOCK, D], dtype="bfloat16", name="cache")
    sl = g.tensor([B, 1, 1, 1], dtype="int32", name="sl")
    lens = {"seq_len_q": sl, "seq_len_kv": sl}
    for table, what in (
        (g.tensor([B, 1, 8, 1], dtype="int64", name="t64"), r"int32 \[b, 1, pages, 1\].*int64"),
        (g.tensor([B + 1, 1, 8, 1], dtype="int32", name="tb"), r"with b = 2, got int32 \[3,"),
        (g.tensor([B, 8, 1, 1], dtype="int32", name="tp"), r"\[b, 1, pages, 1\]"),
    ):
        with pytest.raises(
            GraphError, match=r"paged_attention_k_table \('t.*'\) must be .*" + what
        ):
            g.sdpa(q, cache, cache, paged_attention_k_table=table, **lens)
    flat = g.tensor([16, BLOCK, D], dtype="bfloat16", name="flat")
    table = g.tensor([B, 1, 8, 1], dtype="int32", name="table")
    with pytest.raises(GraphError, match=r"v \('flat'\) is a paged cache container .*\(rank 4\)"):
        g.sdpa(q, cache, flat, paged_attention_v_table=table, **lens)
    bias = g.tensor([1, H, 1, 500], dtype="bfloat16", name="bias")
    with pytest.raises(GraphError, match=r"'bias' has 500 keys .* s_kv = 512"):
        g.sdpa(
            q,
            cache,
            cache,
            bias=bias,
            paged_attention_k_table=table,
            paged_attention_v_table=table,
            paged_attention_max_seq_len_kv=512,
            **lens,
        )
    # the tensors must be the graph's own
    with pytest.raises(TypeError, match="paged_attention_k_table must be a Tensor"):
        g.sdpa(q, cache, cache, paged_attention_k_table="table", **lens)  # type: ignore[arg-type]


def test_older_cudnn_is_refused_with_the_version_paging_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # only the reported version is replaced: the rule under test is the comparison and message
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 91400)
    with pytest.raises(
        UnsupportedByLibraryError,
        match=r"sdpa 'sdpa': sdpa paged K/V caches needs cuDNN 9.15.0 or newer; the loaded "
        r"cuDNN is 9.14.0",
    ):
        paged_graph(implementation="unified")
    g, _ = paged_graph()  # auto: the composite graph, which says why
    op = g.operations[-1]
    assert op.attrs["lowering"] == "composite"
    assert "needs cuDNN 9.15.0" in op.attrs["lowering_note"]
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 90400)
    with pytest.raises(
        UnsupportedByLibraryError,
        match=r"sdpa composite paged K/V caches needs cuDNN 9.5.0 or newer; the loaded cuDNN "
        r"is 9.4.0",
    ):
        paged_graph()


def test_verification_inputs_are_valid_indices() -> None:
    # verify executes a plan on drawn inputs: page tables, lengths and ragged offsets must stay
    # inside the tensors' memory (a drawn -4 would read before the cache)
    skip_unless_cudnn((9, 5), "composite paged K/V caches")
    g, t = paged_graph(s_q=4, sides=("k",), s_kv=300, max_seq_len_kv=300)
    g.signature()
    ins = make_inputs(g, seed=3)
    table = ins[t["k_table"].uid]
    blocks = t["k"].dims[0]
    assert table.min() >= 0 and table.max() < blocks
    assert all(len(set(table[i].ravel())) == table.shape[2] for i in range(B))
    assert (ins[t["seq_len_q"].uid] >= 1).all() and (ins[t["seq_len_q"].uid] <= 4).all()
    assert (ins[t["seq_len_kv"].uid] >= 1).all() and (ins[t["seq_len_kv"].uid] <= 300).all()
    # the NumPy reference reads the cache through the table: defined up to each length
    o = evaluate(g, ins)[g.operations[-1].outputs["o"].uid]
    for i, n in enumerate(ins[t["seq_len_q"].uid].ravel()):
        assert np.isfinite(o[i, :, :n]).all() and np.isnan(o[i, :, n:]).all()


def test_verification_inputs_of_a_padded_backward() -> None:
    skip_unless_cudnn((9, 10), "the padded SDPA backward")
    # the saved O and stats of a padded backward are the forward's, 0 past each length
    g = Graph("padded_backward")
    q, k, v, o, do = (
        g.tensor([2, 4, 16, 64], dtype="float16", name=n) for n in ("q", "k", "v", "o", "do")
    )
    lens = g.tensor([2, 1, 1, 1], dtype="int32", name="lens")
    stats = g.tensor([2, 4, 16, 1], dtype="float32", name="stats")
    g.sdpa_backward(q, k, v, o, do, stats=stats, seq_len_q=lens, seq_len_kv=lens)
    g.signature()
    ins = make_inputs(g)
    assert sorted(ins[lens.uid].ravel()) == [15, 16]
    n = int(ins[lens.uid].ravel()[1])
    assert not ins[o.uid][1, :, n:].any() and not ins[stats.uid][1, :, n:].any()
