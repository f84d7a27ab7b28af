"""Attention sinks, block masks and mask-and-scale dropout on CPU: real cuDNN plans for the
committed H100 properties without a GPU, the refusals (with the version or architecture that
works), and the NumPy references checked against what they must equal.

Measured with cuDNN 9.28 (deviceless H100): a sink plans in the unified forward (engine 9, as
NVIDIA's frontend) and the composite forward (engine 2), in the unified backward with dSink and in
the composite backward; a block mask finalizes but gets no Hopper engine (nor does the frontend);
``dropout=(mask, scale)`` plans in the composite forward (engine 2, as the frontend).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError, Tensor
from pycudnn.opgraph import attention_common as attention_module
from pycudnn.plan import GraphNotSupportedError
from pycudnn.verification import evaluate, make_inputs
from pycudnn.verification import reference_attention as ref

B, H, S, D = 2, 4, 128, 64


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def loaded_at_least(v: tuple[int, int]) -> bool:
    return pycudnn.version_tuple()[:2] >= v


def needs_sinks() -> None:
    if not loaded_at_least((9, 13)):  # test_sink_version_choices checks the refusal
        pytest.skip("attention sinks are cuDNN 9.13's (as NVIDIA's frontend gates them)")


def bshd(g: Graph, name: str, s: int = S) -> Tensor:
    return g.tensor([B, H, s, D], [s * H * D, D, H * D, 1], dtype="bfloat16", name=name)


def sink(g: Graph, name: str = "sink") -> Tensor:
    return g.tensor([1, H, 1, 1], dtype="float32", name=name)


def forward(**options: Any) -> Graph:
    g = Graph("sink_fwd")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    if options.pop("sink_", True):
        options["sink_token"] = sink(g)
    g.sdpa(q, k, v, name="attn", **options)
    return g


def backward(dsink: bool = True, **options: Any) -> Graph:
    g = Graph("sink_bwd")
    q, k, v, o, do = (bshd(g, n) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    if dsink:
        options["dSink_token"] = sink(g, "dsink")
    g.sdpa_backward(q, k, v, o, dO=do, stats=stats, sink_token=sink(g), name="bwd", **options)
    return g


def lowering(g: Graph) -> str:
    return str(g.operations[-1].attrs["lowering"])


# -- sinks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("implementation", ["auto", "composite"])
@pytest.mark.parametrize("stats", [True, False])
def test_sink_forward_plans(
    props: pycudnn.DeviceProperties, implementation: str, stats: bool
) -> None:
    needs_sinks()
    g = forward(generate_stats=stats, implementation=implementation, use_causal_mask=True)
    want = "unified" if implementation == "auto" and loaded_at_least((9, 21)) else "composite"
    assert lowering(g) == want
    g.build(device_properties=props, cache=False)


@pytest.mark.parametrize("implementation", ["auto", "composite"])
@pytest.mark.parametrize("dsink", [True, False])
def test_sink_backward_plans(
    props: pycudnn.DeviceProperties, implementation: str, dsink: bool
) -> None:
    needs_sinks()
    g = backward(dsink, implementation=implementation)
    assert ("dsink" in g.operations[-1].outputs) == dsink
    want = "unified" if implementation == "auto" and loaded_at_least((9, 28)) else "composite"
    assert lowering(g) == want
    g.build(device_properties=props, cache=False)


def test_sink_version_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the reported version is replaced: the rule under test is the choice and its refusal.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92000)
    g = forward()
    assert lowering(g) == "composite"
    assert "sdpa sink_token needs cuDNN 9.21.0" in g.operations[-1].attrs["lowering_note"]
    with pytest.raises(pycudnn.UnsupportedByLibraryError, match=r"sink_token needs cuDNN 9\.21"):
        forward(implementation="unified")
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 91200)
    with pytest.raises(pycudnn.UnsupportedByLibraryError, match=r"sink_token needs cuDNN 9\.13"):
        forward()


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda g: g.tensor([1, H, 1, 1], dtype="bfloat16", name="s"), r"one float32 logit"),
        (lambda g: g.tensor([1, 1, 1, 1], dtype="float32", name="s"), r"\[1, 4, 1, 1\]"),
        (lambda g: g.tensor([B, H, 1, 1], dtype="float32", name="s"), r"got float32 \[2, 4"),
    ],
)
def test_bad_sinks_are_refused(make: Any, match: str) -> None:
    g = Graph("bad_sink")
    q = bshd(g, "q")
    with pytest.raises(GraphError, match=r"sink_token 's' .*" + match):
        g.sdpa(q, bshd(g, "k"), bshd(g, "v"), sink_token=make(g))


def test_dsink_needs_the_sink_and_its_dims(monkeypatch: pytest.MonkeyPatch) -> None:
    # the rules under test come after the version gate, given 9.28's number here
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    g = Graph("dsink")
    q, k, v, o, do = (bshd(g, n) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor([B, H, S, 1], dtype="float32", name="stats")
    with pytest.raises(GraphError, match="dSink_token is the gradient of a sink"):
        g.sdpa_backward(q, k, v, o, do, stats=stats, dSink_token=sink(g, "d"))
    bad = g.tensor([1, 1, 1, 1], dtype="float32", name="bad")
    with pytest.raises(GraphError, match=r"dSink_token 'bad' is one float32 logit per query"):
        g.sdpa_backward(q, k, v, o, do, stats=stats, sink_token=sink(g), dSink_token=bad)


# -- block mask ----------------------------------------------------------------------------------


def masked(**options: Any) -> Graph:
    g = Graph("block_mask")
    q, k, v = bshd(g, "q", 200), bshd(g, "k", 300), bshd(g, "v", 300)
    mask = g.tensor([B, H, 2, 3], dtype="int8", name="block_mask")
    g.sdpa(q, k, v, block_mask=options.pop("mask", mask), name="attn", **options)
    return g


def test_block_mask_has_no_hopper_engine_and_says_what_works(
    props: pycudnn.DeviceProperties,
) -> None:
    if not loaded_at_least((9, 14)):
        pytest.skip("SDPA_FWD_BLOCK_MASK_DESC is cuDNN 9.14's")
    g = masked()
    assert lowering(g) == "unified"
    with pytest.raises(GraphNotSupportedError, match=r"Blackwell's \(sm_100\).*-inf in bias="):
        g.build(device_properties=props, cache=False)


def test_block_mask_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(GraphError, match="block_mask is an input of cuDNN's unified SDPA"):
        masked(implementation="composite")
    with pytest.raises(
        GraphError,
        match="composite graph, but use_alibi_mask is lowered by the composite graph only",
    ):
        masked(use_alibi_mask=True)
    g = Graph("bad_mask")
    q = bshd(g, "q", 200)
    bad = g.tensor([B, H, 1, 3], dtype="int8", name="m")
    with pytest.raises(GraphError, match=r"ceil\(s_q / 128\).* = \[2, 4, 2, 3\]; got int8"):
        g.sdpa(q, bshd(g, "k", 300), bshd(g, "v", 300), block_mask=bad)
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 91302)
    with pytest.raises(pycudnn.UnsupportedByLibraryError, match=r"block_mask needs cuDNN 9\.14"):
        masked()


# -- mask-and-scale dropout ----------------------------------------------------------------------


def dropout_mask(g: Graph, dims: list[int] | None = None) -> tuple[Tensor, Tensor]:
    mask = g.tensor(dims or [B, H, S, S], dtype="bfloat16")
    return mask, g.tensor([1, 1, 1, 1], dtype="float32")


@pytest.mark.parametrize("stats", [True, False])
def test_mask_and_scale_dropout_plans_composite(
    props: pycudnn.DeviceProperties, stats: bool
) -> None:
    g = Graph("dropout_mask")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    g.sdpa(q, k, v, generate_stats=stats, dropout=dropout_mask(g))
    assert lowering(g) == "composite"
    assert "dropout=(mask, scale)" in g.operations[-1].attrs["lowering_note"]
    g.build(device_properties=props, cache=False)


def test_mask_and_scale_dropout_refusals() -> None:
    g = Graph("dropout_mask")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    with pytest.raises(GraphError, match=r"dropout=\(mask, scale\) is applied by the composite"):
        g.sdpa(q, k, v, dropout=dropout_mask(g), implementation="unified")
    with pytest.raises(GraphError, match=r"dropout mask '.*' is a float tensor of the scores"):
        g.sdpa(q, k, v, dropout=dropout_mask(g, [1, H, S, S]))
    with pytest.raises(GraphError, match=r"the frontend's \(mask, scale\) of two tensors"):
        g.sdpa(q, k, v, dropout=(q, 1.0))


# -- the NumPy references -------------------------------------------------------------------------


class _Op:
    """Just what the references read of an operation."""

    def __init__(self, outputs: tuple[str, ...], **attrs: Any) -> None:
        self.label = "sdpa 'ref'"
        self.inputs: dict[str, Any] = {}
        self.outputs = dict.fromkeys(outputs)
        self.attrs = {"scale": 0.3, "right_bound": None, "left_bound": None, **attrs}


def _values(seed: int = 0, s: int = 6, d: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    vals = {r: rng.standard_normal((1, 2, s, d)) for r in ("q", "k", "v", "do")}
    vals["sink"] = rng.standard_normal((1, 2, 1, 1))
    return vals


def test_sink_reference_limits() -> None:
    vals = _values()
    plain = {r: a for r, a in vals.items() if r != "sink"}
    fwd = _Op(("o", "stats"))
    base = ref.sdpa_forward(fwd, plain)
    # a sink of -inf takes no share; a huge one takes nearly all of it
    gone = ref.sdpa_forward(fwd, {**plain, "sink": np.full((1, 2, 1, 1), -np.inf)})
    np.testing.assert_allclose(gone["o"], base["o"], rtol=1e-12)
    np.testing.assert_allclose(gone["stats"], base["stats"], rtol=1e-12)
    huge = ref.sdpa_forward(fwd, {**plain, "sink": np.full((1, 2, 1, 1), 50.0)})
    assert np.abs(huge["o"]).max() < 1e-12
    # the stats are log(sum exp(scores) + exp(sink)), from the sink-free stats
    with_sink = ref.sdpa_forward(fwd, vals)
    want = np.logaddexp(base["stats"], vals["sink"])
    np.testing.assert_allclose(with_sink["stats"], want, rtol=1e-12)


def test_dsink_reference_is_the_numeric_gradient() -> None:
    vals = _values(1)
    fwd = _Op(("o", "stats"))
    out = ref.sdpa_forward(fwd, vals)
    bwd = _Op(("dq", "dk", "dv", "dsink"))
    grads = ref.sdpa_backward(bwd, {**vals, "o": out["o"], "stats": out["stats"]})
    step = 1e-6
    for h in range(2):
        bumped = {}
        for sign in (1, -1):
            s = vals["sink"].copy()
            s[0, h] += sign * step
            bumped[sign] = np.sum(ref.sdpa_forward(fwd, {**vals, "sink": s})["o"] * vals["do"])
        numeric = (bumped[1] - bumped[-1]) / (2 * step)
        assert grads["dsink"][0, h, 0, 0] == pytest.approx(numeric, rel=1e-6, abs=1e-9)
    assert grads["dsink"].shape == (1, 2, 1, 1)


def test_block_mask_and_dropout_mask_references() -> None:
    vals = _values(2, s=200)
    fwd = _Op(("o",))
    base = ref.sdpa_forward(fwd, {r: a for r, a in vals.items() if r != "sink"})
    plain = {r: a for r, a in vals.items() if r != "sink"}
    ones = np.ones((1, 2, 2, 2), dtype=np.int8)
    np.testing.assert_allclose(ref.sdpa_forward(fwd, {**plain, "block_mask": ones})["o"], base["o"])
    # a zero tile is the same as -inf over its scores
    tiles = ones.copy()
    tiles[0, 1, 1, 0] = 0
    bias = np.zeros((1, 2, 200, 200))
    bias[0, 1, 128:, :128] = -np.inf
    np.testing.assert_allclose(
        ref.sdpa_forward(fwd, {**plain, "block_mask": tiles})["o"],
        ref.sdpa_forward(fwd, {**plain, "bias": bias})["o"],
        rtol=1e-12,
    )
    # mask-and-scale dropout: P * mask * scale
    keep = (np.arange(200) % 3 != 0).astype(float).reshape(1, 1, 1, 200)
    dropped = _Op(("o",), dropout_mask=True)
    got = ref.sdpa_forward(
        dropped, {**plain, "dropout_mask": keep, "dropout_scale": np.full((1, 1, 1, 1), 1.5)}
    )["o"]
    scores = 0.3 * plain["q"] @ np.swapaxes(plain["k"], -1, -2)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, (p * keep * 1.5) @ plain["v"], rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("implementation", ["auto", "composite"])
def test_sink_plans_load_back_for_their_graph(
    props: pycudnn.DeviceProperties, implementation: str
) -> None:
    needs_sinks()
    # the unified forward's sink sits in the node's softmax sub-operation of the plan JSON
    for make in (forward, backward):
        plan = make(implementation=implementation).build(device_properties=props, cache=False)
        again = make(implementation=implementation).load_plan(
            plan.to_json(), device_properties=props
        )
        assert again.engine_id == plan.engine_id
    other = forward(implementation=implementation, sink_=False)
    with pytest.raises(ValueError, match="built for another graph"):
        other.load_plan(
            forward(implementation=implementation)
            .build(device_properties=props, cache=False)
            .to_json(),
            device_properties=props,
        )


def test_verification_evaluates_sink_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    # the references are NumPy: every cuDNN of the matrix, the version gate given 9.28's number
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    plain = forward(sink_=False, generate_stats=True)
    with_sink = forward(generate_stats=True)
    ins = make_inputs(with_sink, seed=3)
    uid = {g: {t.name: t.uid for t in g.tensors} for g in (plain, with_sink)}
    plain_ins = {uid[plain][n]: ins[uid[with_sink][n]] for n in "qkv"}
    base = evaluate(plain, plain_ins)[plain.operations[-1].outputs["stats"].uid]
    got = evaluate(with_sink, ins)[with_sink.operations[-1].outputs["stats"].uid]
    sink_vals = np.asarray(ins[uid[with_sink]["sink"]], dtype=np.float64)
    np.testing.assert_allclose(got, np.logaddexp(base, sink_vals), rtol=1e-12)
    # the backward evaluates too, its saved O and stats generated as the sink forward gives them
    g = backward()
    out = evaluate(g, make_inputs(g, seed=4))
    dsink = out[g.operations[-1].outputs["dsink"].uid]
    assert dsink.shape == (1, H, 1, 1)
    assert np.all(np.isfinite(dsink))
