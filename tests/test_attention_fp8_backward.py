"""FP8 attention backward (``Graph.sdpa_fp8_backward``, cudnn-frontend's ``sdpa_fp8_backward``) on
CPU: real cuDNN plans for the committed H100 properties without a GPU, the refusals, and the
NumPy reference checked against numeric gradients.

Measured with cuDNN 9.19 and 9.28 (deviceless H100, d = 128): e4m3 and e5m2, causal, sliding-window,
padding, grouped-query heads and dropout plan on the composite graph, engine 6, as the frontend
1.32's plan of the same case (``scripts/check_frontend_attention.py``).
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
from pycudnn.opgraph.attention_fp8_backward import BWD_SCALE_ROLES
from pycudnn.plan import GraphNotSupportedError
from pycudnn.verification import evaluate, make_inputs
from pycudnn.verification import reference_attention as ref

B, H, S, D = 2, 4, 128, 128


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def bshd(g: Graph, name: str, dtype: str = "float8_e4m3fn", h: int = H, d: int = D) -> Tensor:
    return g.tensor([B, h, S, d], [S * h * d, d, h * d, 1], dtype=dtype, name=name)


def backward(
    dtype: str = "float8_e4m3fn", h_k: int = H, d: int = D, **options: Any
) -> tuple[Graph, tuple[Tensor, ...]]:
    g = Graph("fp8_bwd")
    q, o, do = (bshd(g, n, dtype, d=d) for n in ("q", "o", "do"))
    k, v = (bshd(g, n, dtype, h_k, d) for n in "kv")
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    factors = [g.tensor([1, 1, 1, 1], dtype="float32", name=r) for r in BWD_SCALE_ROLES]
    if options.pop("padding", False):
        options["use_padding_mask"] = True
        for side in ("seq_len_q", "seq_len_kv"):
            options[side] = g.tensor([B, 1, 1, 1], dtype="int32", name=side)
    if options.pop("with_sink", False):
        for role in ("sink_token", "dSink_token"):
            options[role] = g.tensor([1, H, 1, 1], dtype="float32", name=role)
    if options.pop("with_dropout", False):
        seed, offset = (g.tensor([1, 1, 1, 1], dtype="int64", name=n) for n in ("seed", "off"))
        options["dropout"] = (0.1, seed, offset)
    out = g.sdpa_fp8_backward(
        q, k, v, o, do, stats, *factors, attn_scale=0.125, name="attn", **options
    )
    return g, out


def needs_measured_cudnn() -> None:
    if pycudnn.version_tuple()[:2] < (9, 19):
        pytest.skip("the FP8 backward's H100 plans are measured with cuDNN 9.19 and 9.28")


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"dtype": "float8_e5m2"},
        {"use_causal_mask": True},
        {"use_causal_mask": True, "left_bound": 64},
        {"right_bound": 16, "left_bound": 32},
        {"padding": True},
        {"h_k": 2},
        {"with_dropout": True},
        {"with_sink": True},
        {"with_sink": True, "with_dropout": True},
    ],
    ids=lambda o: "-".join(o) or "base",
)
def test_fp8_backward_plans(props: pycudnn.DeviceProperties, options: dict[str, Any]) -> None:
    needs_measured_cudnn()
    g, (dq, dk, dv, *amaxes) = backward(**options)
    dtype = options.get("dtype", "float8_e4m3fn")
    assert [t.dtype.name for t in (dq, dk, dv) if t.dtype is not None] == [dtype] * 3
    assert dk.dims == dv.dims == (B, options.get("h_k", H), S, D)
    assert all(t.dims == (1, 1, 1, 1) and t.dtype and t.dtype.name == "float32" for t in amaxes)
    op = g.operations[-1]
    assert op.attrs["lowering"] == "composite" and op.attrs["fp8"]
    plan = g.build(device_properties=props, cache=False)
    assert plan.engine_id == 6  # the frontend's engine for the same graph (measured)
    assert "unified SDPA backward has no FP8 scaling" in plan.rewrite


def test_fp8_backward_head_dim_on_hopper(props: pycudnn.DeviceProperties) -> None:
    # cuDNN's fused FP8 backward has no Hopper kernel for d = 64; the failure says what works
    needs_measured_cudnn()
    g, _ = backward(d=64)
    with pytest.raises(GraphNotSupportedError, match=r"d_qk == d_v == 128 only on Hopper"):
        g.build(device_properties=props, cache=False)


def test_fp8_backward_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    # the rules on every cuDNN of the matrix: the version gate given 9.28's number first
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    with pytest.raises(GraphError, match=r"bottom-right aligned mask .* Blackwell \(sm_100\)"):
        backward(use_causal_mask_bottom_right=True)
    with pytest.raises(GraphError, match=r"bottom-right"):
        backward(use_causal_mask=True, diagonal_alignment="bottom_right")
    with pytest.raises(GraphError, match="use_deterministic_algorithm selects Blackwell"):
        backward(use_deterministic_algorithm=True)
    with pytest.raises(GraphError, match="unified SDPA backward has no FP8 scaling"):
        backward(implementation="unified")
    with pytest.raises(GraphError, match="give sink_token together with dSink_token"):
        g = Graph("fp8_bwd_sink")
        backward(sink_token=g.tensor([1, H, 1, 1], dtype="float32", name="sink"))
    with pytest.raises(GraphError, match=r"q, k and v of one fp8 type .*q bfloat16"):
        backward(dtype="bfloat16")
    g = Graph("fp8_bwd_bad")
    q, k, v, o, do = (bshd(g, n) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    bad = [g.tensor([1, H, 1, 1], dtype="float32", name=r) for r in BWD_SCALE_ROLES]
    with pytest.raises(GraphError, match=r"descale_q 'descale_q' is one float32 factor"):
        g.sdpa_fp8_backward(q, k, v, o, do, stats, *bad)
    mx = [g.tensor([1, 1, 1, 1], dtype="float8_e8m0fnu", name=r + "_mx") for r in BWD_SCALE_ROLES]
    with pytest.raises(GraphError, match=r"MXFP8 .*Blackwell \(sm_100\) only"):
        g.sdpa_fp8_backward(q, k, v, o, do, stats, *mx)
    for loaded, why in ((90000, r"needs cuDNN 9\.1 or newer"), (91000, r"not 9\.10\.0")):
        monkeypatch.setattr(attention_module, "_loaded_version", lambda v=loaded: v)
        with pytest.raises(pycudnn.UnsupportedByLibraryError, match=why):
            backward()


def _forward_loss(q: Any, k: Any, v: Any, do: Any, *, scale: float, f: dict[str, float]) -> float:
    """sum(O * dO) of the dequantised attention, causal (written out, not the module's)."""
    s = scale * (f["descale_q"] * q) @ np.swapaxes(f["descale_k"] * k, -1, -2)
    n = s.shape[-1]
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return float(np.sum(p @ (f["descale_v"] * v) * (f["descale_do"] * do)))


def test_fp8_backward_reference_is_the_gradient() -> None:
    rng = np.random.default_rng(5)
    shape = (1, 2, 6, 4)
    x = {r: rng.standard_normal(shape) for r in ("q", "k", "v", "do")}
    f = dict.fromkeys(BWD_SCALE_ROLES, 1.0)
    f.update(descale_q=2.0, descale_k=0.5, descale_v=1.5, descale_do=0.25, descale_o=3.0)
    f.update(scale_s=448.0, descale_s=1 / 448.0, scale_dP=64.0, descale_dP=1 / 64.0)
    f.update(scale_dQ=0.5, scale_dK=2.0, scale_dV=4.0)
    scale = 0.3
    op = SimpleNamespace(
        label="sdpa_fp8_backward 'ref'",
        inputs={},
        outputs={},
        attrs={"scale": scale, "causal": True, "right_bound": 0, "left_bound": None},
    )
    vals = {r.lower(): np.full((1, 1, 1, 1), v) for r, v in f.items()}
    # O as the forward stored it (divided by descale_o), from the same dequantised attention
    fwd = ref.sdpa_forward(
        SimpleNamespace(**{**vars(op), "outputs": {}}),
        {**x, **vals, "scale_o": np.full((1, 1, 1, 1), 1 / 3.0)},
    )
    got = ref.sdpa_backward(op, {**x, **vals, "o": fwd["o"]})  # type: ignore[arg-type]
    fl = {r.lower(): v for r, v in f.items()}
    eps = 1e-6
    for role, scale_out in (("q", 0.5), ("k", 2.0), ("v", 4.0)):
        num = np.zeros(shape)
        for idx in np.ndindex(*shape):
            hi, lo = dict(x), dict(x)
            hi[role], lo[role] = x[role].copy(), x[role].copy()
            hi[role][idx] += eps
            lo[role][idx] -= eps
            num[idx] = (
                _forward_loss(**_args(hi), scale=scale, f=fl)
                - _forward_loss(**_args(lo), scale=scale, f=fl)
            ) / (2 * eps)
        # the gradient of the dequantised input, the raw one divided by its descale factor
        want = num / fl["descale_" + role]
        np.testing.assert_allclose(got["d" + role], scale_out * want, rtol=1e-5, atol=1e-7)
        assert got["amax_d" + role].item() == pytest.approx(np.abs(want).max(), rel=1e-5)
    assert got["amax_dp"].item() > 0.0


def test_fp8_backward_reference_dsink() -> None:
    # the sink's gradient, numerically: the sink joins each row's softmax denominator
    rng = np.random.default_rng(6)
    shape = (1, 2, 5, 4)
    x = {r: rng.standard_normal(shape) for r in ("q", "k", "v", "do")}
    sink = rng.standard_normal((1, 2, 1, 1))
    vals = {r.lower(): np.ones((1, 1, 1, 1)) for r in BWD_SCALE_ROLES}

    def loss(s: np.ndarray) -> float:
        scores = 0.5 * x["q"] @ np.swapaxes(x["k"], -1, -2)
        e = np.exp(scores)
        return float(np.sum((e / (e.sum(-1, keepdims=True) + np.exp(s))) @ x["v"] * x["do"]))

    attrs = {"scale": 0.5, "right_bound": None, "left_bound": None}
    op = SimpleNamespace(label="ref", inputs={}, outputs={"stats": None}, attrs=attrs)
    fwd = ref.sdpa_forward(op, {**x, **vals, "sink": sink, "scale_o": vals["scale_s"]})
    op.outputs = {"dsink": None}
    got = ref.sdpa_backward(op, {**x, **vals, "sink": sink, "o": fwd["o"]})  # type: ignore[arg-type]
    eps = 1e-6
    want = np.zeros_like(sink)
    for h in range(2):
        hi, lo = sink.copy(), sink.copy()
        hi[0, h] += eps
        lo[0, h] -= eps
        want[0, h] = (loss(hi) - loss(lo)) / (2 * eps)
    np.testing.assert_allclose(got["dsink"], want, rtol=1e-5, atol=1e-9)


def _args(x: dict[str, Any]) -> dict[str, Any]:
    return {r: x[r] for r in ("q", "k", "v", "do")}


def test_verification_evaluates_fp8_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    # NumPy only: every cuDNN of the matrix, the version gate given 9.28's number
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    g, (dq, dk, dv, amax_dq, amax_dk, amax_dv, amax_dp) = backward(use_causal_mask=True)
    ins = make_inputs(g, seed=4)
    out = evaluate(g, ins)

    def factor(name: str) -> float:
        return float(np.ravel(ins[next(t.uid for t in g.tensors if t.name == name)])[0])

    # each gradient is its scale factor times the tensor its amax measures
    for grad, amax, name in ((dq, amax_dq, "scale_dQ"), (dk, amax_dk, "scale_dK")):
        assert np.abs(out[grad.uid]).max() == pytest.approx(
            abs(factor(name)) * out[amax.uid].item(), rel=1e-9
        )
    assert np.abs(out[dv.uid]).max() == pytest.approx(
        abs(factor("scale_dV")) * out[amax_dv.uid].item(), rel=1e-9
    )
    assert out[amax_dp.uid].item() > 0.0


def test_fp8_backward_plan_loads_back(props: pycudnn.DeviceProperties) -> None:
    needs_measured_cudnn()
    plan = backward(use_causal_mask=True)[0].build(device_properties=props, cache=False)
    again = backward(use_causal_mask=True)[0].load_plan(plan.to_json(), device_properties=props)
    assert again.engine_id == plan.engine_id == 6
    with pytest.raises(ValueError, match="built for another graph"):
        backward(use_causal_mask=True, h_k=2)[0].load_plan(plan.to_json(), device_properties=props)


@pytest.mark.parametrize("kind", ["forward", "backward"])
def test_verification_inputs_keep_fp8_values_in_range(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The quantisation factors verify generates are ones a training step would pick (positive,
    P scaled by the fp8 maximum, O, dS and the gradients by powers of two from their amax), so
    that the best answer an engine can give, the reference rounded once to each fp8 output's
    type, passes its tolerance for every seed (random factors in [-1, 1] put O or dS under the
    fp8 range, where even that answer failed)."""
    from pycudnn.verification import compare, tolerance_for

    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    if kind == "forward":
        g = Graph("fp8")
        q, k, v = (bshd(g, n) for n in "qkv")
        factors = [g.tensor([1, 1, 1, 1], dtype="float32", name=r) for r in SCALE_ROLES]
        g.sdpa_fp8(q, k, v, *factors, attn_scale=0.125, use_causal_mask=True, name="attn")
    else:
        g = backward(use_causal_mask=True)[0]
    g.signature()
    fp8_outputs = [t for t in g.outputs if t.dtype is not None and "float8" in t.dtype.name]
    assert fp8_outputs
    for seed in range(4):
        ins = make_inputs(g, seed=seed)
        ref_out = evaluate(g, ins)
        for t in fp8_outputs:
            best = ref_out[t.uid].astype(t.dtype)
            check = compare(t.name, best, ref_out[t.uid], tolerance_for(t))
            assert check.passed, (seed, check.describe())
            assert check.max_rel_error < 0.1, (seed, check.describe())
