"""The score statistics of :meth:`Graph.sdpa` executed on the GPU (GPU tier: ``pytest -m gpu``):
``score_max``, ``score_sum_exp`` and base-2 stats (``stats_use_log2``) from the unified operation
and the composite graph, against the float64 references of
:mod:`pycudnn.verification.reference_attention` (checked on CPU in
``test_attention_stats_outputs.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_attention_gpu import BF16, TOL, check_close, host
from test_attention_sinks_gpu import B, H, S, bshd, by_role, run

import pycudnn
from pycudnn.graph import Graph
from pycudnn.verification import reference_attention as ref

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("sink", [False, True])
@pytest.mark.parametrize("log2", [False, True])
@pytest.mark.parametrize("implementation", ["unified", "composite"])
def test_score_statistics(implementation: str, log2: bool, sink: bool) -> None:
    if pycudnn.version_tuple()[:2] < ((9, 27) if log2 else (9, 21)):
        pytest.skip("score_max/score_sum_exp need cuDNN 9.21, base-2 stats 9.27")
    g = Graph("score_stats")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    top = g.tensor([B, H, S, 1], dtype="float32", name="max")
    total = g.tensor([B, H, S, 1], dtype="float32", name="sum_exp")
    options: dict[str, Any] = {}
    feeds = {t: host(t.dims, BF16) for t in (q, k, v)}
    if sink:
        s = g.tensor([1, H, 1, 1], dtype="float32", name="sink")
        options["sink_token"] = s
        feeds[s] = np.linspace(-2.0, 3.0, H, dtype=np.float32).reshape(1, H, 1, 1)
    o, stats = g.sdpa(
        q, k, v, generate_stats=True, stats_use_log2=log2, score_max=top, score_sum_exp=total,
        use_causal_mask=True, implementation=implementation, **options,
    )  # fmt: skip
    assert stats is not None
    got = run(g, feeds, [o, stats, top, total])
    want = ref.sdpa_forward(g.operations[-1], by_role(g.operations[-1], feeds))
    for value, role in zip(got, ("o", "stats", "max", "sum_exp"), strict=True):
        check_close(value, want[role], TOL[BF16], f"{role} ({implementation}, log2={log2})")
