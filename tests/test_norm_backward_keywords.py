"""The backward norms share layernorm_backward's keyword list: rmsnorm_backward takes its
``zero_centered_gamma`` and ``name`` (NormBackwardKeywords) with its defaults, shows them in its
signature, and refuses a misspelt one before anything is added to the graph."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from pycudnn import Graph
from pycudnn.graph import Tensor
from pycudnn.opgraph.normalization import NormBackwardKeywords


def _keywords(name: str) -> dict[str, Any]:
    params = inspect.signature(getattr(Graph, name)).parameters.values()
    assert inspect.Parameter.VAR_KEYWORD not in {p.kind for p in params}, name
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_rmsnorm_backward_shows_layernorm_backwards_keywords() -> None:
    shared = {"zero_centered_gamma", "name", "grad", "input", "compute_data_type"}  # the frontend's
    assert set(NormBackwardKeywords.__annotations__) == shared
    layer, rms = _keywords("layernorm_backward"), _keywords("rmsnorm_backward")
    # documented defaults: a plain gamma, the name made from the operation's kind
    assert {k: rms[k] for k in NormBackwardKeywords.__annotations__} == {
        "zero_centered_gamma": False,
        "name": None,
        "grad": None,
        "input": None,
        "compute_data_type": None,
    }
    for key in NormBackwardKeywords.__annotations__:
        assert rms[key] == layer[key], key
    assert rms["with_dbias"] is False and "epsilon" not in rms  # its own, as before


def _rms_graph() -> tuple[Graph, Tensor, Tensor, Tensor, Tensor]:
    g = Graph("rms_backward_keywords")
    x = g.tensor([32, 64, 1], dtype="float16", name="x")
    dy = g.tensor([32, 64, 1], dtype="float16", name="dy")
    scale = g.tensor([1, 64, 1], name="scale")
    inv_var = g.tensor([32, 1, 1], name="inv_variance")
    return g, dy, x, scale, inv_var


def test_rmsnorm_backward_keywords_reach_the_operation() -> None:
    g, dy, x, scale, inv_var = _rms_graph()
    g.rmsnorm_backward(dy, x, scale, inv_var)
    g.rmsnorm_backward(dy, x, scale, inv_var, zero_centered_gamma=True, name="rb")
    plain, zero = (op for op in g.operations if op.kind == "norm_backward")
    assert "zero_centered_gamma" not in plain.attrs and plain.inputs["scale"] is scale
    assert zero.name == "rb" and zero.attrs["zero_centered_gamma"] is True
    assert zero.inputs["scale"] is not scale  # scale + 1 feeds the norm


def test_rmsnorm_backward_refuses_a_misspelt_or_foreign_keyword_first() -> None:
    g, dy, x, scale, inv_var = _rms_graph()
    with pytest.raises(TypeError, match="'zero_centred_gamma'; did you mean 'zero_centered_gamma'"):
        g.rmsnorm_backward(dy, x, scale, inv_var, zero_centred_gamma=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"rmsnorm_backward\(\) .* 'epsilon'"):
        g.rmsnorm_backward(dy, x, scale, inv_var, epsilon=1e-5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="zero_centered_gamma must be a bool"):
        g.rmsnorm_backward(dy, x, scale, inv_var, zero_centered_gamma=1)  # type: ignore[arg-type]
    assert not g.operations
