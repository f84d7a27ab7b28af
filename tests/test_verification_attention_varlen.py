"""The NumPy references of variable-length SDPA (padding, ragged THD, paged K/V caches), forward
and backward, against computations written here from the definitions: plain softmax attention
on each sequence, unpacked or gathered by hand, and gradients by central differences.
CPU only (graphs are described, never planned)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from versioned import skip_unless_cudnn

from pycudnn import Graph
from pycudnn.verification import NoReferenceError, Tolerance, compare, evaluate, make_inputs
from pycudnn.verification.reference import reduction_length
from pycudnn.verification.reference_attention_varlen import undefined_where_nan, valid_only

B, H, H_K, D = 3, 4, 2, 8


def attend(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, shift: int | None = None, bias: Any = 0.0
) -> Any:
    """softmax(Q K^T / sqrt(d) + bias) V of one sequence, ``[h, s, d]``; K/V heads shared by
    groups of query heads; ``shift`` not None: a causal mask whose diagonal is moved right by
    ``shift``."""
    rep = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)
    s = np.einsum("hqd,hkd->hqk", q, k) / math.sqrt(q.shape[-1]) + bias
    if shift is not None:
        i, j = np.arange(s.shape[1])[:, None], np.arange(s.shape[2])[None, :]
        s = np.where(j <= i + shift, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - top)
    return e / e.sum(axis=-1, keepdims=True) @ v, top + np.log(e.sum(axis=-1, keepdims=True))


def f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def padded_graph(s_q: int, s_kv: int, **options: Any) -> tuple[Graph, dict[str, Any]]:
    g = Graph("padded")
    q = g.tensor([B, H, s_q, D], dtype="float16", name="q")
    k = g.tensor([B, H_K, s_kv, D], dtype="float16", name="k")
    v = g.tensor([B, H_K, s_kv, D], dtype="float16", name="v")
    lq = g.tensor([B, 1, 1, 1], dtype="int32", name="len_q")
    lk = g.tensor([B, 1, 1, 1], dtype="int32", name="len_kv")
    o, stats = g.sdpa(q, k, v, seq_len_q=lq, seq_len_kv=lk, generate_stats=True, **options)
    return g, {"q": q, "k": k, "v": v, "lq": lq, "lk": lk, "o": o, "stats": stats}


@pytest.mark.parametrize(
    "options, shift",
    [
        ({}, None),
        ({"use_causal_mask": True}, "top_left"),
        ({"use_causal_mask_bottom_right": True, "implementation": "composite"}, "bottom_right"),
    ],
    ids=["no_mask", "causal", "bottom_right"],
)
def test_padding_forward_is_each_entry_alone(options: dict[str, Any], shift: Any) -> None:
    g, t = padded_graph(7, 9, **options)
    ins = make_inputs(g, seed=3)
    ref = evaluate(g, ins)
    lens_q, lens_kv = ins[t["lq"].uid].ravel(), ins[t["lk"].uid].ravel()
    assert len(set(lens_q)) > 1 and len(set(lens_kv)) > 1  # the entries differ
    for i in range(B):
        lq, lk = int(lens_q[i]), int(lens_kv[i])
        diag = None if shift is None else (0 if shift == "top_left" else lk - lq)
        o, stats = attend(
            f64(ins[t["q"].uid][i, :, :lq]),
            f64(ins[t["k"].uid][i, :, :lk]),
            f64(ins[t["v"].uid][i, :, :lk]),
            diag,
        )
        np.testing.assert_allclose(ref[t["o"].uid][i, :, :lq], o, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ref[t["stats"].uid][i, :, :lq], stats, rtol=1e-12)
        # past the length nothing is defined: NaN, and verification compares the rest only
        assert np.isnan(ref[t["o"].uid][i, :, lq:]).all()
    assert {t["o"].uid, t["stats"].uid} <= undefined_where_nan(g)


def test_paged_forward_is_the_gathered_cache() -> None:
    skip_unless_cudnn((9, 5), "composite paged K/V caches")
    s_q, s_kv, block = 5, 12, 4
    pages, blocks = s_kv // block, B * (s_kv // block) + 2
    g = Graph("paged")
    q = g.tensor([B, H, s_q, D], dtype="float16", name="q")
    kc = g.tensor([blocks, H_K, block, D], dtype="float16", name="k_cache")
    vc = g.tensor([blocks, H_K, block, D], dtype="float16", name="v_cache")
    kt = g.tensor([B, 1, pages, 1], dtype="int32", name="k_table")
    vt = g.tensor([B, 1, pages, 1], dtype="int32", name="v_table")
    lq = g.tensor([B, 1, 1, 1], dtype="int32", name="len_q")
    lk = g.tensor([B, 1, 1, 1], dtype="int32", name="len_kv")
    o, _ = g.sdpa(
        q,
        kc,
        vc,
        seq_len_q=lq,
        seq_len_kv=lk,
        paged_attention_k_table=kt,
        paged_attention_v_table=vt,
        paged_attention_max_seq_len_kv=s_kv,
    )
    ins = make_inputs(g, seed=5)
    rng = np.random.default_rng(1)  # K and V pages in other orders than the drawn ones
    ins[kt.uid] = rng.permutation(blocks)[: B * pages].reshape(B, 1, pages, 1).astype(np.int32)
    ins[vt.uid] = rng.permutation(blocks)[: B * pages].reshape(B, 1, pages, 1).astype(np.int32)
    ref = evaluate(g, ins)
    for i in range(B):
        n_q, n_kv = int(ins[lq.uid].ravel()[i]), int(ins[lk.uid].ravel()[i])
        k = np.stack(
            [ins[kc.uid][ins[kt.uid][i, 0, j // block, 0], :, j % block] for j in range(n_kv)], 1
        )
        v = np.stack(
            [ins[vc.uid][ins[vt.uid][i, 0, j // block, 0], :, j % block] for j in range(n_kv)], 1
        )
        want, _ = attend(f64(ins[q.uid][i, :, :n_q]), f64(k), f64(v))
        np.testing.assert_allclose(ref[o.uid][i, :, :n_q], want, rtol=1e-12, atol=1e-12)
    # each P @ V sums s_kv products, whatever the block size (the tolerance grows with it)
    assert reduction_length(g.operations[-1]) == D + s_kv


def test_ragged_forward_reads_and_writes_at_the_offsets() -> None:
    """THD memory with sequences packed back to back (offsets = cumulative token counts), not the
    padded positions that verification draws: the reference must follow the offsets."""
    lens_q, lens_kv = [3, 1, 5], [6, 2, 4]
    s_q, s_kv = max(lens_q), max(lens_kv)
    g = Graph("ragged")

    def thd(name: str, heads: int, s: int) -> Any:
        return g.tensor(
            [B, heads, s, D], [s * heads * D, D, heads * D, 1], dtype="float16", name=name
        )

    q, k, v = thd("q", H, s_q), thd("k", H_K, s_kv), thd("v", H_K, s_kv)
    off_q = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off_q")
    off_kv = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off_kv")
    q.set_ragged_offset(off_q)
    k.set_ragged_offset(off_kv)
    v.set_ragged_offset(off_kv)
    lq = g.tensor([B, 1, 1, 1], dtype="int32", name="len_q")
    lk = g.tensor([B, 1, 1, 1], dtype="int32", name="len_kv")
    o, _ = g.sdpa(q, k, v, seq_len_q=lq, seq_len_kv=lk)
    o.set_ragged_offset(off_q)
    ins = make_inputs(g, seed=2)
    starts_q, starts_kv = np.cumsum([0, *lens_q]), np.cumsum([0, *lens_kv])
    ins[off_q.uid] = (starts_q * H * D).astype(np.int32).reshape(-1, 1, 1, 1)
    ins[off_kv.uid] = (starts_kv * H_K * D).astype(np.int32).reshape(-1, 1, 1, 1)
    ins[lq.uid] = np.array(lens_q, dtype=np.int32).reshape(B, 1, 1, 1)
    ins[lk.uid] = np.array(lens_kv, dtype=np.int32).reshape(B, 1, 1, 1)

    def tokens(t: Any, heads: int) -> np.ndarray:  # the memory as [token, head, d]
        return f64(ins[t.uid]).transpose(0, 2, 1, 3).reshape(-1, heads, D)

    tq, tk, tv = tokens(q, H), tokens(k, H_K), tokens(v, H_K)
    got = evaluate(g, ins)[o.uid]
    ref_tokens = got.transpose(0, 2, 1, 3).reshape(-1, H, D)
    for i in range(B):
        sq, sk = slice(starts_q[i], starts_q[i + 1]), slice(starts_kv[i], starts_kv[i + 1])
        want, _ = attend(
            tq[sq].transpose(1, 0, 2), tk[sk].transpose(1, 0, 2), tv[sk].transpose(1, 0, 2)
        )
        np.testing.assert_allclose(ref_tokens[sq], want.transpose(1, 0, 2), rtol=1e-12, atol=1e-12)
    # memory past the last sequence is written by no sequence: not defined
    assert np.isnan(ref_tokens[starts_q[-1] :]).all()


def test_padding_backward_is_the_gradient_of_each_entry() -> None:
    skip_unless_cudnn((9, 10), "the padded SDPA backward")
    s_q, s_kv = 4, 5
    g, t = padded_graph(s_q, s_kv, use_causal_mask=True)
    do = g.tensor([B, H, s_q, D], dtype="float16", name="do")
    dq, dk, dv = g.sdpa_backward(
        t["q"], t["k"], t["v"], t["o"], do, stats=t["stats"], seq_len_q=t["lq"],
        seq_len_kv=t["lk"], use_causal_mask=True,
    )  # fmt: skip
    ins = make_inputs(g, seed=4)
    ref = evaluate(g, ins)
    x = {n: f64(ins[t[n].uid]) for n in ("q", "k", "v")}
    d_o = f64(ins[do.uid])
    for i in range(B):
        lq, lk = int(ins[t["lq"].uid].ravel()[i]), int(ins[t["lk"].uid].ravel()[i])
        parts = {"q": x["q"][i, :, :lq], "k": x["k"][i, :, :lk], "v": x["v"][i, :, :lk]}

        def loss(p: dict[str, np.ndarray], weight: np.ndarray = d_o[i, :, :lq]) -> float:
            return float(np.sum(attend(p["q"], p["k"], p["v"], 0)[0] * weight))

        for name, grad in (("q", dq), ("k", dk), ("v", dv)):
            numeric = np.zeros_like(parts[name])
            for idx in np.ndindex(numeric.shape):
                for sign in (1, -1):
                    p = {n: a.copy() for n, a in parts.items()}
                    p[name][idx] += sign * 1e-6
                    numeric[idx] += sign * loss(p) / 2e-6
            rows = lq if name == "q" else lk
            np.testing.assert_allclose(ref[grad.uid][i, :, :rows], numeric, atol=1e-7)
            assert np.isnan(ref[grad.uid][i, :, rows:]).all()


def test_ragged_backward_has_consistent_saved_inputs_and_a_reference() -> None:
    """A backward alone (O and stats are inputs): verification draws O and stats as the forward
    would have produced them on each sequence, 0 past its length, and evaluates the gradients."""
    skip_unless_cudnn((9, 10), "the padded SDPA backward")
    s = 5
    g = Graph("ragged_backward")

    def thd(name: str, heads: int, width: int = D, dtype: str = "float16") -> Any:
        strides = [s * heads * width, width, heads * width, 1]
        return g.tensor([B, heads, s, width], strides, dtype=dtype, name=name)

    q, o, do = thd("q", H), thd("o", H), thd("do", H)
    k, v = thd("k", H_K), thd("v", H_K)
    stats = g.tensor([B, H, s, 1], dtype="float32", name="stats")
    off_q = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off_q")
    off_kv = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off_kv")
    for x in (q, o, do):
        x.set_ragged_offset(off_q)
    k.set_ragged_offset(off_kv)
    v.set_ragged_offset(off_kv)
    lq = g.tensor([B, 1, 1, 1], dtype="int32", name="len_q")
    lk = g.tensor([B, 1, 1, 1], dtype="int32", name="len_kv")
    dq, dk, dv = g.sdpa_backward(q, k, v, o, do, stats=stats, seq_len_q=lq, seq_len_kv=lk)
    ins = make_inputs(g, seed=6)
    ref = evaluate(g, ins)
    for i in range(B):
        n_q, n_kv = int(ins[lq.uid].ravel()[i]), int(ins[lk.uid].ravel()[i])
        want_o, want_stats = attend(
            f64(ins[q.uid][i, :, :n_q]), f64(ins[k.uid][i, :, :n_kv]), f64(ins[v.uid][i, :, :n_kv])
        )
        np.testing.assert_allclose(f64(ins[o.uid][i, :, :n_q]), want_o, atol=1e-3)  # fp16
        np.testing.assert_allclose(f64(ins[stats.uid][i, :, :n_q]), want_stats, rtol=1e-6)
        assert not f64(ins[o.uid][i, :, n_q:]).any()
        for grad, rows in ((dq, n_q), (dk, n_kv), (dv, n_kv)):
            assert np.isfinite(ref[grad.uid][i, :, :rows]).all()
            assert np.isnan(ref[grad.uid][i, :, rows:]).all()


def test_every_variable_length_graph_has_a_reference() -> None:
    """evaluate on drawn inputs: no 'no reference' for padding, and the valid region finite."""
    skip_unless_cudnn((9, 10), "the padded SDPA backward")
    g, t = padded_graph(6, 6)
    do = g.tensor([B, H, 6, D], dtype="float16", name="do")
    g.sdpa_backward(
        t["q"], t["k"], t["v"], t["o"], do, stats=t["stats"], seq_len_q=t["lq"], seq_len_kv=t["lk"]
    )
    ins = make_inputs(g, seed=0)
    ref = evaluate(g, ins)
    for out in g.outputs:
        finite = np.isfinite(ref[out.uid])
        assert finite.any() and not np.isinf(ref[out.uid]).any()


def test_the_comparison_leaves_out_only_what_the_reference_leaves_undefined() -> None:
    g, t = padded_graph(6, 6)
    ins = make_inputs(g, seed=1)
    ref = evaluate(g, ins)[t["o"].uid]
    n = int(ins[t["lq"].uid].ravel()[-1])
    assert n < 6  # the last entry has padded rows
    tol = Tolerance(1e-3, False, ())
    got = np.nan_to_num(ref, nan=123.0).astype(np.float16)  # garbage past the lengths
    check = compare("o", valid_only(got, ref), ref, tol)
    assert check.passed and check.compared == np.isfinite(ref).sum() < ref.size
    assert valid_only(got, ref).dtype == np.float16
    wrong = got.copy()
    wrong[-1, 0, n - 1, 0] += 1.0  # the last valid row
    assert not compare("o", valid_only(wrong, ref), ref, tol).passed
    unwritten = got.copy()
    unwritten[-1, 0, n - 1, 0] = np.nan
    assert compare("o", valid_only(unwritten, ref), ref, tol).nonfinite == 1


def test_fp8_padding_scales_each_entry_and_takes_amax_over_the_valid_rows() -> None:
    skip_unless_cudnn((9, 25), "sdpa_fp8")
    s = 6
    g = Graph("fp8_padded")
    q, k, v = (
        g.tensor([B, H, s, D], dtype="float8_e4m3fn", name=n) for n in ("q", "k", "v")
    )  # one K/V head per query head here
    names = ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")
    sc = [g.tensor([1, 1, 1, 1], dtype="float32", name=n) for n in names]
    lq = g.tensor([B, 1, 1, 1], dtype="int32", name="len_q")
    lk = g.tensor([B, 1, 1, 1], dtype="int32", name="len_kv")
    o, _, amax_s, amax_o = g.sdpa_fp8(
        q, k, v, *sc, attn_scale=1 / math.sqrt(D), seq_len_q=lq, seq_len_kv=lk
    )
    ins = make_inputs(g, seed=8)
    ref = evaluate(g, ins)
    f = {n: float(ins[t.uid].ravel()[0]) for n, t in zip(names, sc, strict=True)}
    largest_o = 0.0
    for i in range(B):
        n_q, n_kv = int(ins[lq.uid].ravel()[i]), int(ins[lk.uid].ravel()[i])
        want, _ = attend(
            f64(ins[q.uid][i, :, :n_q]) * f["descale_q"],
            f64(ins[k.uid][i, :, :n_kv]) * f["descale_k"],
            f64(ins[v.uid][i, :, :n_kv]) * f["descale_v"],
        )
        want = want * f["scale_s"] * f["descale_s"]
        largest_o = max(largest_o, float(np.abs(want).max()))
        np.testing.assert_allclose(ref[o.uid][i, :, :n_q], want * f["scale_o"], rtol=1e-12)
    np.testing.assert_allclose(ref[amax_o.uid].ravel(), [largest_o], rtol=1e-12)
    assert 0 < ref[amax_s.uid].ravel()[0] <= 1  # a probability


def test_padding_with_a_bias_per_batch_entry_reads_its_own_rows() -> None:
    s_q, s_kv = 5, 7
    g = Graph("padded_bias")
    q = g.tensor([B, H, s_q, D], dtype="float16", name="q")
    k = g.tensor([B, H_K, s_kv, D], dtype="float16", name="k")
    v = g.tensor([B, H_K, s_kv, D], dtype="float16", name="v")
    bias = g.tensor([B, 1, s_q, s_kv], dtype="float16", name="bias")  # per entry, all heads
    lq = g.tensor([B, 1, 1, 1], dtype="int32", name="len_q")
    lk = g.tensor([B, 1, 1, 1], dtype="int32", name="len_kv")
    o, _ = g.sdpa(q, k, v, bias=bias, seq_len_q=lq, seq_len_kv=lk)
    ins = make_inputs(g, seed=9)
    ref = evaluate(g, ins)
    for i in range(B):
        n_q, n_kv = int(ins[lq.uid].ravel()[i]), int(ins[lk.uid].ravel()[i])
        want, _ = attend(
            f64(ins[q.uid][i, :, :n_q]),
            f64(ins[k.uid][i, :, :n_kv]),
            f64(ins[v.uid][i, :, :n_kv]),
            bias=f64(ins[bias.uid][i, :, :n_q, :n_kv]),
        )
        np.testing.assert_allclose(ref[o.uid][i, :, :n_q], want, rtol=1e-12, atol=1e-12)


def test_ragged_offsets_into_memory_no_element_covers_have_no_reference() -> None:
    """Rows with gaps between the batch entries: offsets that land in a gap would read memory
    the drawn logical values never set, so the reference says so rather than read NaN."""
    s = 4
    g = Graph("ragged_gap")
    row = s * H * D + 16  # 16 elements of gap after each entry
    q = g.tensor([B, H, s, D], [row, D, H * D, 1], dtype="float16", name="q")
    k = g.tensor([B, H, s, D], [row, D, H * D, 1], dtype="float16", name="k")
    v = g.tensor([B, H, s, D], [row, D, H * D, 1], dtype="float16", name="v")
    off = g.tensor([B + 1, 1, 1, 1], dtype="int32", name="off")
    for x in (q, k, v):
        x.set_ragged_offset(off)
    lens = g.tensor([B, 1, 1, 1], dtype="int32", name="lens")
    g.sdpa(q, k, v, seq_len_q=lens, seq_len_kv=lens)
    ins = make_inputs(g, seed=0)
    evaluate(g, ins)  # the drawn offsets (i * row) skip the gaps
    ins[off.uid] = (np.arange(B + 1) * s * H * D).astype(np.int32).reshape(-1, 1, 1, 1)
    ins[lens.uid] = np.full((B, 1, 1, 1), s, dtype=np.int32)
    with pytest.raises(NoReferenceError, match="do not cover"):
        evaluate(g, ins)
