"""FP8 attention forward (``Graph.sdpa_fp8``, cudnn-frontend's ``sdpa_fp8``) on CPU: real cuDNN
plans for the committed H100 properties without a GPU, the refusals, and the NumPy reference.

Measured with cuDNN 9.28 (deviceless H100): e4m3 and e5m2, with and without stats, causal and
sliding-window masks plan on the unified SDPA operation (engine 9, as the frontend's graph).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError, Tensor
from pycudnn.opgraph import attention_common as attention_module
from pycudnn.opgraph.attention_fp8 import SCALE_ROLES
from pycudnn.verification import evaluate, make_inputs
from pycudnn.verification import reference_attention as ref

B, H, S, D = 2, 4, 128, 64


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def bshd(g: Graph, name: str, dtype: str = "float8_e4m3fn") -> Tensor:
    return g.tensor([B, H, S, D], [S * H * D, D, H * D, 1], dtype=dtype, name=name)


def scales(g: Graph, dtype: str = "float32", dims: list[int] | None = None) -> list[Tensor]:
    return [g.tensor(dims or [1, 1, 1, 1], dtype=dtype, name=r) for r in SCALE_ROLES]


def fp8(dtype: str = "float8_e4m3fn", **options: Any) -> tuple[Graph, tuple[Any, ...]]:
    g = Graph("fp8")
    q, k, v = (bshd(g, n, dtype) for n in "qkv")
    out = g.sdpa_fp8(q, k, v, *scales(g), attn_scale=0.125, name="attn", **options)
    return g, out


def needs_fp8_sdpa() -> None:
    if pycudnn.version_tuple()[:2] < (9, 25):
        pytest.skip("FP8 in cuDNN's unified SDPA operation is cuDNN 9.25's")


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize(
    "options",
    [
        {"generate_stats": True},
        {"is_inference": True},
        {"generate_stats": True, "use_causal_mask": True},
        {"generate_stats": True, "use_causal_mask": True, "sliding_window": 32},
        {"generate_stats": True, "right_bound": 16, "left_bound": 32},
    ],
)
def test_fp8_forward_plans(
    props: pycudnn.DeviceProperties, dtype: str, options: dict[str, Any]
) -> None:
    needs_fp8_sdpa()
    g, (o, stats, amax_s, amax_o) = fp8(dtype, **options)
    assert o.dtype is not None and o.dtype.name == dtype
    assert (stats is not None) == bool(options.get("generate_stats"))
    assert amax_s.dims == amax_o.dims == (1, 1, 1, 1)
    assert g.operations[-1].attrs["lowering"] == "unified"
    g.build(device_properties=props, cache=False)


def test_fp8_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    g = Graph("fp8_bad")
    q, k, v = (bshd(g, n) for n in "qkv")
    with pytest.raises(GraphError, match=r"MXFP8 .*Blackwell \(sm_100\) only; on Hopper give"):
        g.sdpa_fp8(q, k, v, *scales(g, "float8_e8m0fnu"))
    g = Graph("fp8_bad")
    q16 = bshd(g, "q", "bfloat16")
    with pytest.raises(GraphError, match=r"q, k and v of one fp8 type .*q bfloat16"):
        g.sdpa_fp8(q16, bshd(g, "k"), bshd(g, "v"), *scales(g))
    g = Graph("fp8_bad")
    mixed = (bshd(g, "q"), bshd(g, "k", "float8_e5m2"), bshd(g, "v"))
    with pytest.raises(GraphError, match="one fp8 type"):
        g.sdpa_fp8(*mixed, *scales(g))
    g = Graph("fp8_bad")
    q, k, v = (bshd(g, n) for n in "qkv")
    with pytest.raises(GraphError, match=r"descale_q 'descale_q' is one float32 factor"):
        g.sdpa_fp8(q, k, v, *scales(g, dims=[1, H, 1, 1]))
    with pytest.raises(GraphError, match="FP8 attention is cuDNN's unified SDPA operation"):
        fp8(implementation="composite")
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92400)
    with pytest.raises(pycudnn.UnsupportedByLibraryError, match=r"sdpa fp8 needs cuDNN 9\.25"):
        fp8()


def test_fp8_reference_is_the_dequantised_attention() -> None:
    rng = np.random.default_rng(3)
    vals = {r: rng.standard_normal((1, 2, 5, 8)) for r in "qkv"}

    op = SimpleNamespace(
        label="sdpa_fp8 'ref'",
        inputs={},
        outputs=dict.fromkeys(("o", "stats", "amax_s", "amax_o")),
        attrs={"scale": 0.5, "right_bound": None, "left_bound": None},
    )
    factors = dict(zip(SCALE_ROLES, (2.0, 0.5, 4.0, 1.0 / 448, 448.0, 0.25), strict=True))
    got = ref.sdpa_forward(
        op, {**vals, **{r: np.full((1, 1, 1, 1), f) for r, f in factors.items()}}
    )
    q, k, v = vals["q"] * 2.0, vals["k"] * 0.5, vals["v"] * 4.0
    s = 0.5 * q @ np.swapaxes(k, -1, -2)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ v  # scale_s * descale_s == 1
    np.testing.assert_allclose(got["o"], 0.25 * o, rtol=1e-12)
    assert got["amax_o"].item() == pytest.approx(np.abs(o).max(), rel=1e-12)
    assert got["amax_s"].item() == pytest.approx(p.max(), rel=1e-12)
    np.testing.assert_allclose(got["stats"], np.log(np.exp(s).sum(-1, keepdims=True)), rtol=1e-12)


def test_fp8_plan_loads_back_for_its_graph_only(props: pycudnn.DeviceProperties) -> None:
    # scale_s ("scaleS" in cuDNN's plan JSON) and the attention scale are two roles
    needs_fp8_sdpa()
    plan = fp8(use_causal_mask=True)[0].build(device_properties=props, cache=False)
    again = fp8(use_causal_mask=True)[0].load_plan(plan.to_json(), device_properties=props)
    assert again.engine_id == plan.engine_id
    g = Graph("fp8")
    q, k, v = (bshd(g, n) for n in "qkv")
    factors = scales(g)
    factors[3], factors[4] = factors[4], factors[3]  # descale_s and scale_s swapped
    g.sdpa_fp8(q, k, v, *factors, attn_scale=0.125, use_causal_mask=True, name="attn")
    with pytest.raises(ValueError, match="built for another graph"):
        g.load_plan(plan.to_json(), device_properties=props)


def test_verification_evaluates_fp8_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    # NumPy only: every cuDNN of the matrix, the version gate given 9.28's number
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    g, (o, stats, amax_s, amax_o) = fp8(generate_stats=True)
    ins = make_inputs(g, seed=2)
    out = evaluate(g, ins)
    scale_o = float(np.ravel(ins[next(t.uid for t in g.tensors if t.name == "scale_o")])[0])
    # O is scale_o times the tensor amax_o measures
    assert np.abs(out[o.uid]).max() == pytest.approx(abs(scale_o) * out[amax_o.uid].item())
    assert 0.0 < out[amax_s.uid].item() <= 1.0  # the largest probability
    assert out[stats.uid].shape == (B, H, S, 1)


@pytest.mark.parametrize(
    ("dtype", "verdict"), [("float8_e4m3fn", "fail"), ("float8_e5m2", "unverified")]
)
def test_an_all_zero_o_is_never_verified(
    monkeypatch: pytest.MonkeyPatch, dtype: str, verdict: str
) -> None:
    """An engine that leaves O unwritten (zeros) is caught for e4m3 and reported unverifiable
    for e5m2, whose O tolerance (two mantissa bits, rounded twice: about 1) it would meet."""
    from pycudnn.verification import compare
    from pycudnn.verification.tolerance import tolerance_for

    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    g, (o, *_) = fp8(dtype, generate_stats=True)
    out = evaluate(g, make_inputs(g, seed=2))
    tol = tolerance_for(o)
    assert (tol.rtol >= 1.0) == (verdict == "unverified")
    assert compare("o", np.zeros_like(out[o.uid]), out[o.uid], tol).verdict == verdict
    assert compare("o", out[o.uid].copy(), out[o.uid], tol).verdict == verdict.replace(
        "fail", "pass"
    )
