"""The score statistics of :meth:`Graph.sdpa` in NVIDIA cudnn-frontend's terms: ``score_max`` and
``score_sum_exp`` (C++ ``set_logit_max``/``set_score_sum_exp``) and ``stats_use_log2``, planned
on CPU for the committed H100 properties, with their refusals and NumPy references.

Measured with cuDNN 9.28 (deviceless H100): every combination of the two outputs, base-2 stats,
the stats, a sink and a causal mask plans in the unified forward (engine 9, through the
operation's ``OPERATION_SOFTMAX`` sub-operation) and in the composite forward (engine 2: the
outputs of its max and sum reductions; base-2 stats through one ``OPERATION_SOFTMAX``, since a
``MUL`` by ``log2(e)`` after the stats has no engine).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError, Tensor
from pycudnn.opgraph import attention_common as attention_module
from pycudnn.verification import evaluate, make_inputs
from pycudnn.verification import reference_attention as ref

B, H, S, D = 2, 4, 128, 64


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def loaded_at_least(v: tuple[int, int]) -> bool:
    return pycudnn.version_tuple()[:2] >= v


def bshd(g: Graph, name: str) -> Tensor:
    return g.tensor([B, H, S, D], [S * H * D, D, H * D, 1], dtype="bfloat16", name=name)


def row(g: Graph, name: str, dims: list[int] | None = None, dtype: str = "float32") -> Tensor:
    return g.tensor(dims or [B, H, S, 1], dtype=dtype, name=name)


def forward(max_: bool = True, sum_: bool = True, sink: bool = False, **options: Any) -> Graph:
    g = Graph("stats_fwd")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    if max_:
        options["score_max"] = row(g, "max")
    if sum_:
        options["score_sum_exp"] = row(g, "sum_exp")
    if sink:
        options["sink_token"] = g.tensor([1, H, 1, 1], dtype="float32", name="sink")
    g.sdpa(q, k, v, name="attn", **options)
    return g


def lowering(g: Graph) -> str:
    return str(g.operations[-1].attrs["lowering"])


def needs(v: tuple[int, int], what: str) -> None:
    if not loaded_at_least(v):  # test_version_choices checks the refusals
        pytest.skip(f"{what} needs cuDNN {v[0]}.{v[1]}")


# -- planning -------------------------------------------------------------------------------------


CASES = [
    (m, s, log2, stats, sink)
    for m, s, log2, stats, sink in itertools.product((True, False), repeat=5)
    if (m or s or log2) and (stats or not log2)
]


@pytest.mark.parametrize("implementation", ["auto", "composite"])
@pytest.mark.parametrize("case", CASES)
def test_statistics_plan(
    props: pycudnn.DeviceProperties, implementation: str, case: tuple[bool, ...]
) -> None:
    max_, sum_, log2, stats, sink = case
    # measured: the composite cases plan on cuDNN 9.19 and 9.28; the unified outputs need 9.21
    needs((9, 27) if log2 else (9, 21) if implementation == "auto" else (9, 13), "this case")
    g = forward(
        max_,
        sum_,
        sink,
        generate_stats=stats,
        stats_use_log2=log2 or None,
        use_causal_mask=True,
        implementation=implementation,
    )
    op = g.operations[-1]
    asked = {r for r, given in (("max", max_), ("sum_exp", sum_)) if given}
    assert {"max", "sum_exp"} & set(op.outputs) == asked
    assert op.attrs["stats_log2"] is log2
    want = "unified" if implementation == "auto" else "composite"
    assert lowering(g) == want
    plan = g.build(device_properties=props, cache=False)
    # the engines measured on cuDNN 9.28 (the unified SDPA's, the composite graph's)
    if loaded_at_least((9, 28)):
        assert plan.engine_id == (9 if want == "unified" else 2)


@pytest.mark.parametrize("log2", [False, True])
@pytest.mark.parametrize("extra", ["dropout", "padding", "bias"])
def test_statistics_plan_with_other_features(
    props: pycudnn.DeviceProperties, log2: bool, extra: str
) -> None:
    # measured on 9.28: dropout with stats is composite (engine 2); padding and bias unified
    needs((9, 27) if log2 else (9, 21), "this case")
    g = Graph("stats_more")
    options: dict[str, Any] = {}
    if extra == "dropout":
        seed, offset = (g.tensor([1, 1, 1, 1], dtype="int64", name=n) for n in ("seed", "off"))
        options["dropout"] = (0.1, seed, offset)
    elif extra == "padding":
        for key in ("seq_len_q", "seq_len_kv"):
            options[key] = g.tensor([B, 1, 1, 1], dtype="int32", name=key)
    else:
        options["bias"] = g.tensor([1, H, S, S], dtype="bfloat16", name="bias")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    g.sdpa(
        q, k, v, generate_stats=True, stats_use_log2=log2, score_max=row(g, "max"),
        score_sum_exp=row(g, "sum_exp"), **options,
    )  # fmt: skip
    assert lowering(g) == ("composite" if extra == "dropout" else "unified")
    g.build(device_properties=props, cache=False)


def test_plans_load_back_for_their_graph(props: pycudnn.DeviceProperties) -> None:
    needs((9, 27), "base-2 stats")
    for impl in ("unified", "composite"):
        options: dict[str, Any] = {
            "generate_stats": True,
            "stats_use_log2": True,
            "implementation": impl,
        }
        plan = forward(**options).build(device_properties=props, cache=False)
        again = forward(**options).load_plan(plan.to_json(), device_properties=props)
        assert again.engine_id == plan.engine_id
        with pytest.raises(ValueError, match="built for another graph"):
            forward(sum_=False, **options).load_plan(plan.to_json(), device_properties=props)


# -- refusals -------------------------------------------------------------------------------------


def test_version_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the reported version is replaced: the rule under test is the choice and its refusal.
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92000)
    g = forward()
    assert lowering(g) == "composite"
    assert "score_max/score_sum_exp needs cuDNN 9.21.0" in g.operations[-1].attrs["lowering_note"]
    with pytest.raises(pycudnn.UnsupportedByLibraryError, match=r"score_sum_exp needs cuDNN 9\.21"):
        forward(implementation="unified")
    # base-2 stats need 9.27 in either lowering, as in the frontend
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92600)
    for impl in ("auto", "composite", "unified"):
        with pytest.raises(
            pycudnn.UnsupportedByLibraryError, match=r"stats_use_log2 needs cuDNN 9\.27"
        ):
            forward(generate_stats=True, stats_use_log2=True, implementation=impl)
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92700)
    assert lowering(forward(generate_stats=True, stats_use_log2=True)) == "unified"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"stats_use_log2": True}, r"stats_use_log2 writes the stats in base 2; ask for them"),
        ({"generate_stats": True, "stats_use_log2": 1}, r"stats_use_log2 must be a bool, not 1"),
    ],
)
def test_log2_refusals(options: dict[str, Any], match: str) -> None:
    with pytest.raises(GraphError, match=match):
        forward(max_=False, sum_=False, **options)


def test_output_refusals() -> None:
    g = Graph("bad")
    q, k, v = bshd(g, "q"), bshd(g, "k"), bshd(g, "v")
    with pytest.raises(GraphError, match=r"score_max is an output tensor .* got float"):
        g.sdpa(q, k, v, score_max=1.0)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match=r"score_max 'm' is one float32 value per score row.*"
                       r"\[2, 4, 128, 1\]; got float32 \[2, 4, 128, 2\]"):  # fmt: skip
        g.sdpa(q, k, v, score_max=row(g, "m", [B, H, S, 2]))
    with pytest.raises(GraphError, match=r"score_sum_exp 'e' .* got bfloat16 \[2, 4, 128, 1\]"):
        g.sdpa(q, k, v, score_sum_exp=row(g, "e", dtype="bfloat16"))
    with pytest.raises(GraphError, match=r"already written by"):
        m = row(g, "m2")
        g.sdpa(q, k, v, score_max=m)
        g.sdpa(q, k, v, score_sum_exp=m)


# -- the NumPy references -------------------------------------------------------------------------


class _Op:
    """Just what the references read of an operation."""

    def __init__(self, outputs: tuple[str, ...], **attrs: Any) -> None:
        self.label = "sdpa 'ref'"
        self.inputs: dict[str, Any] = {}
        self.outputs = dict.fromkeys(outputs)
        self.attrs = {"scale": 0.3, "right_bound": None, "left_bound": None, **attrs}


def test_references_are_the_rows_statistics() -> None:
    rng = np.random.default_rng(5)
    vals = {r: rng.standard_normal((1, 2, 6, 8)) for r in "qkv"}
    scores = 0.3 * vals["q"] @ np.swapaxes(vals["k"], -1, -2)
    for sink in (None, rng.standard_normal((1, 2, 1, 1))):
        given = vals if sink is None else {**vals, "sink": sink}
        out = ref.sdpa_forward(_Op(("o", "stats", "max", "sum_exp")), given)
        full = (
            scores
            if sink is None
            else np.concatenate([scores, np.broadcast_to(sink, (1, 2, 6, 1))], -1)
        )
        want_max = full.max(-1, keepdims=True)
        np.testing.assert_allclose(out["max"], want_max, rtol=1e-12)
        np.testing.assert_allclose(out["sum_exp"], np.exp(full - want_max).sum(-1, keepdims=True))
        # the stats are max + ln(sum exp); in base 2 the same over ln 2
        np.testing.assert_allclose(out["stats"], out["max"] + np.log(out["sum_exp"]), rtol=1e-12)
        two = ref.sdpa_forward(_Op(("o", "stats"), stats_log2=True), given)
        np.testing.assert_allclose(np.exp2(two["stats"]), np.exp(out["stats"]), rtol=1e-12)
        np.testing.assert_allclose(two["o"], out["o"], rtol=1e-12)


def test_verification_evaluates_the_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    # the references are NumPy: every cuDNN of the matrix, the version gate given 9.28's number
    monkeypatch.setattr(attention_module, "_loaded_version", lambda: 92800)
    g = forward(generate_stats=True, sink=True)
    op = g.operations[-1]
    out = evaluate(g, make_inputs(g, seed=2))
    top, total, stats = (out[op.outputs[r].uid] for r in ("max", "sum_exp", "stats"))
    assert top.shape == total.shape == (B, H, S, 1)
    np.testing.assert_allclose(stats, top + np.log(total), rtol=1e-12)
    # a sink joins each row's sum: at least exp(sink - max) of it, below 1 + s_kv in all
    assert np.all(total >= 1.0) and np.all(total <= S + 1)
