"""FP8 attention backward (``Graph.sdpa_fp8_backward``) executed on the GPU (GPU tier:
``pytest -m gpu``), against the float64 reference of :mod:`pycudnn.verification`
(``reference_attention``, checked on CPU against numeric gradients in
``tests/test_attention_fp8_backward.py``).

The inputs are those a training step has: O and the stats from the reference forward of the same
Q, K, V (O quantised to e4m3 with ``descale_o``), and scale factors chosen from the reference's
amax values so that P, dS and the gradients use the e4m3 range (as a delayed-scaling recipe does).
d = 128: the only head dim cuDNN's fused FP8 backward takes on Hopper.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_attention_gpu import check_close, host
from test_attention_sinks_gpu import by_role, run

from pycudnn.graph import Graph
from pycudnn.opgraph.attention_fp8_backward import BWD_SCALE_ROLES
from pycudnn.verification import reference_attention as ref

pytestmark = pytest.mark.gpu

B, H, S, D = 2, 4, 128, 128
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
FP8_MAX = 448.0


def _pow2_scale(amax: float) -> float:
    """The power of two that brings ``amax`` closest below the e4m3 maximum."""
    return float(2.0 ** np.floor(np.log2(FP8_MAX / max(amax, 1e-30))))


@pytest.mark.parametrize("options", [{}, {"use_causal_mask": True}], ids=["full", "causal"])
def test_fp8_backward(options: dict[str, Any]) -> None:
    g = Graph("fp8_bwd")
    io = {
        n: g.tensor([B, H, S, D], [S * H * D, D, H * D, 1], dtype="float8_e4m3fn", name=n)
        for n in ("q", "k", "v", "o", "do")
    }
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    factors = {r: g.tensor([1, 1, 1, 1], dtype="float32", name=r) for r in BWD_SCALE_ROLES}
    outs = g.sdpa_fp8_backward(
        io["q"], io["k"], io["v"], io["o"], io["do"], stats, *factors.values(), **options
    )
    op = g.operations[-1]
    feeds = {io[n]: host((B, H, S, D), E4M3) for n in ("q", "k", "v", "do")}
    value = dict.fromkeys(BWD_SCALE_ROLES, 1.0)
    # O and the stats of the forward of these Q, K, V (O stored in e4m3, descale_o 1)
    fwd_op = SimpleNamespace(label=op.label, attrs=op.attrs, inputs={}, outputs={"stats": None})
    vals = {**by_role(op, feeds), **{r.lower(): np.ones((1, 1, 1, 1)) for r in BWD_SCALE_ROLES}}
    fwd = ref.sdpa_forward(fwd_op, {**vals, "scale_o": np.ones((1, 1, 1, 1))})
    feeds[io["o"]] = fwd["o"].astype(E4M3)
    feeds[stats] = fwd["stats"].astype(np.float32)
    vals["o"] = feeds[io["o"]].astype(np.float64)
    first = ref.sdpa_backward(op, vals)  # every factor 1: the amax values pick the scales
    value["scale_s"], value["descale_s"] = FP8_MAX, 1.0 / FP8_MAX
    value["scale_dP"] = _pow2_scale(first["amax_dp"].item())
    value["descale_dP"] = 1.0 / value["scale_dP"]
    for g_ in ("dQ", "dK", "dV"):
        value["scale_" + g_] = _pow2_scale(first["amax_" + g_.lower()].item())
    feeds |= {t: np.full((1, 1, 1, 1), value[r], np.float32) for r, t in factors.items()}
    want = ref.sdpa_backward(
        op, {**vals, **{r.lower(): np.full((1, 1, 1, 1), v) for r, v in value.items()}}
    )
    got = dict(
        zip(
            ("dq", "dk", "dv", "amax_dq", "amax_dk", "amax_dv", "amax_dp"),
            run(g, feeds, list(outs)),
            strict=True,
        )
    )
    for role in ("dq", "dk", "dv"):
        top = float(np.max(np.abs(want[role])))
        # e4m3 P and dS (3 mantissa bits) inside the products, the gradients stored in e4m3
        check_close(got[role] / top, want[role] / top, 0.15, f"fp8 {role}")
    for role in ("amax_dq", "amax_dk", "amax_dv", "amax_dp"):
        top = float(want[role].item())
        check_close(got[role] / top, want[role] / top, 0.1, f"fp8 {role}")
