"""Ragged (THD) tensors executed on the GPU (GPU tier: ``pytest -m gpu``): the tokens of the
batch's sequences lie back to back (``[tokens, h, d]``), Q, K, V and O described as
``[b, h, s_max, d]`` with ``Tensor.set_ragged_offset`` (entry ``i`` starts at the tokens before
it, times ``h * d``), against verification's float64 NumPy reference, which computes one
sequence at a time at its offsets (checked against sequences unpacked by hand in
``tests/test_verification_attention_varlen.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_attention_gpu import BF16, TOL, check_close, empty, f64, to_device

from pycudnn.graph import Graph
from pycudnn.verification import evaluate

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(11)


def packed_tokens(lengths: list[int], h: int, d: int, s_max: int) -> tuple[np.ndarray, Any]:
    """(the ``[b, h, s_max, d]`` array whose bshd memory starts with the packed tokens, the
    ``[tokens, h, d]`` tokens themselves)."""
    tokens = RNG.standard_normal((sum(lengths), h, d)).astype(BF16)
    memory = np.zeros(len(lengths) * s_max * h * d, dtype=BF16)
    memory[: tokens.size] = tokens.ravel()
    return memory.reshape(len(lengths), s_max, h, d).transpose(0, 2, 1, 3), tokens


def offsets(lengths: list[int], h: int, d: int) -> np.ndarray:
    return (np.concatenate([[0], np.cumsum(lengths)]) * h * d).astype(np.int32).reshape(-1, 1, 1, 1)


@pytest.mark.parametrize("implementation", ["unified", "composite"])
@pytest.mark.parametrize("decode", [False, True], ids=["prefill", "decode"])
def test_ragged_forward(implementation: str, decode: bool) -> None:
    h, h_k, d = 8, 2, 64
    len_kv = [100, 37, 64]
    len_q = [1, 1, 1] if decode else [90, 37, 5]
    s_q, s_kv, b = max(len_q), max(len_kv), len(len_q)
    g = Graph("ragged")

    def thd(name: str, heads: int, s: int) -> Any:
        return g.tensor(
            [b, heads, s, d], [s * heads * d, d, heads * d, 1], dtype="bfloat16", name=name
        )

    q, k, v = thd("q", h, s_q), thd("k", h_k, s_kv), thd("v", h_k, s_kv)
    off_q = g.tensor([b + 1, 1, 1, 1], dtype="int32", name="off_q")
    off_kv = g.tensor([b + 1, 1, 1, 1], dtype="int32", name="off_kv")
    q.set_ragged_offset(off_q)
    k.set_ragged_offset(off_kv)
    v.set_ragged_offset(off_kv)
    slq = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_q")
    slkv = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_kv")
    o, _ = g.sdpa(q, k, v, seq_len_q=slq, seq_len_kv=slkv, implementation=implementation)
    o.set_ragged_offset(off_q)
    qh = packed_tokens(len_q, h, d, s_q)[0]
    kh = packed_tokens(len_kv, h_k, d, s_kv)[0]
    vh = packed_tokens(len_kv, h_k, d, s_kv)[0]
    feeds = {
        q: qh,
        k: kh,
        v: vh,
        off_q: offsets(len_q, h, d),
        off_kv: offsets(len_kv, h_k, d),
        slq: np.array(len_q, dtype=np.int32).reshape(b, 1, 1, 1),
        slkv: np.array(len_kv, dtype=np.int32).reshape(b, 1, 1, 1),
    }
    od = empty(o)
    g.build().execute({t: to_device(a, t) for t, a in feeds.items()} | {o: od})
    # O is ragged like Q: its tokens packed at the start of its memory
    got = np.ascontiguousarray(f64(od).transpose(0, 2, 1, 3)).reshape(-1, h, d)
    # verification's reference, read and written at the offsets, as tokens the same way
    ref = evaluate(g, {t.uid: a for t, a in feeds.items()})[o.uid]
    ref_tokens = ref.transpose(0, 2, 1, 3).reshape(-1, h, d)
    starts_q = np.concatenate([[0], np.cumsum(len_q)])
    for i in range(b):
        seq = slice(starts_q[i], starts_q[i + 1])
        check_close(got[seq], ref_tokens[seq], TOL[BF16], f"ragged {implementation} seq {i}")
