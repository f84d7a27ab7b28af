"""Paged K/V caches executed on the GPU (GPU tier: ``pytest -m gpu``): ``Graph.sdpa`` with
``paged_attention_k_table``/``_v_table`` through the unified operation and the composite graph,
decode (``s_q = 1``) and prefill, against verification's float64 NumPy reference, which gathers each
sequence's keys and values from the containers through the page tables (the vLLM layout: key
``j`` of batch entry ``b`` is row ``j % block`` of block ``table[b, 0, j // block, 0]``; checked
against a gather by hand in ``tests/test_verification_attention_varlen.py``).

Rows past a sequence's ``seq_len_q`` are padding and not compared (cuDNN leaves them unspecified).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_attention_gpu import BF16, TOL, check_close, empty, f64, host, to_device

from pycudnn.graph import Graph
from pycudnn.verification import evaluate

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(7)


def run_paged(
    *,
    s_q: int,
    s_kv: int,
    len_q: list[int],
    len_kv: list[int],
    implementation: str,
    block: int = 32,
    h: int = 8,
    h_k: int = 2,
    d: int = 64,
    bias: bool = False,
    **options: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Run a paged SDPA; returns (O from the GPU, the float64 reference) in float64."""
    b = len(len_q)
    pages = -(-s_kv // block)
    blocks = b * pages + 3  # a few blocks no table points at
    g = Graph("paged")
    q = g.tensor([b, h, s_q, d], [s_q * h * d, d, h * d, 1], dtype="bfloat16", name="q")
    kc = g.tensor([blocks, h_k, block, d], dtype="bfloat16", name="k_cache")
    vc = g.tensor([blocks, h_k, block, d], dtype="bfloat16", name="v_cache")
    kt = g.tensor([b, 1, pages, 1], dtype="int32", name="k_table")
    vt = g.tensor([b, 1, pages, 1], dtype="int32", name="v_table")
    slq = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_q")
    slkv = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_kv")
    bias_t = g.tensor([1, h, s_q, s_kv], dtype="bfloat16", name="bias") if bias else None
    o, _ = g.sdpa(
        q,
        kc,
        vc,
        seq_len_q=slq,
        seq_len_kv=slkv,
        paged_attention_k_table=kt,
        paged_attention_v_table=vt,
        paged_attention_max_seq_len_kv=s_kv,
        implementation=implementation,
        bias=bias_t,
        **options,
    )
    assert next(op for op in g.operations if op.kind == "sdpa").attrs["lowering"] == (
        "composite" if implementation == "composite" else "unified"
    )
    qh, kh, vh = host(q.dims, BF16), host(kc.dims, BF16), host(vc.dims, BF16)
    # K and V pages in different orders, so that a swapped table shows
    k_tab = RNG.permutation(blocks)[: b * pages].reshape(b, 1, pages, 1).astype(np.int32)
    v_tab = RNG.permutation(blocks)[: b * pages].reshape(b, 1, pages, 1).astype(np.int32)
    lq = np.array(len_q, dtype=np.int32).reshape(b, 1, 1, 1)
    lkv = np.array(len_kv, dtype=np.int32).reshape(b, 1, 1, 1)
    od = empty(o)
    feeds = {q: qh, kc: kh, vc: vh, kt: k_tab, vt: v_tab, slq: lq, slkv: lkv}
    bias_h = None
    if bias_t is not None:
        bias_h = host(bias_t.dims, BF16)
        feeds[bias_t] = bias_h
    g.build().execute({t: to_device(a, t) for t, a in feeds.items()} | {o: od})
    # verification's reference: each sequence's keys gathered through its table, its own lengths
    ref = evaluate(g, {t.uid: a for t, a in feeds.items()})[o.uid]
    return f64(od), ref


@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_paged_decode(implementation: str) -> None:
    got, ref = run_paged(
        s_q=1, s_kv=200, len_q=[1, 1, 1], len_kv=[200, 77, 1], implementation=implementation
    )
    check_close(got, ref, TOL[BF16], f"paged decode ({implementation})")


@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_paged_prefill_with_padding(implementation: str) -> None:
    len_q = [64, 40]
    got, ref = run_paged(
        s_q=64, s_kv=200, len_q=len_q, len_kv=[200, 77], implementation=implementation
    )
    for i, n in enumerate(len_q):
        check_close(got[i, :, :n], ref[i, :, :n], TOL[BF16], f"paged prefill batch {i}")


def test_paged_decode_bottom_right_causal_is_every_real_key() -> None:
    # one query aligned to the bottom-right corner sees every key up to its sequence's length:
    # the composite graph's per-batch shift (seq_len_kv - seq_len_q) on gathered pages
    got, ref = run_paged(
        s_q=1,
        s_kv=96,
        len_q=[1, 1],
        len_kv=[96, 50],
        implementation="composite",
        use_causal_mask_bottom_right=True,
    )
    check_close(got, ref, TOL[BF16], "paged decode, bottom-right causal")


@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_paged_bias_when_the_pages_hold_more_than_s_kv(implementation: str) -> None:
    # 7 pages of 32 hold 224 keys; the bias and the scores have s_kv = 200 columns
    len_q = [16, 9]
    got, ref = run_paged(
        s_q=16, s_kv=200, len_q=len_q, len_kv=[200, 150], implementation=implementation, bias=True
    )
    for i, n in enumerate(len_q):
        check_close(got[i, :, :n], ref[i, :, :n], TOL[BF16], f"paged bias batch {i}")
