"""Public callables spell out their keywords (no ``**kwargs`` hiding them from help() and type
checkers): Plan.verify, Plan.load, pycutensor's Operation.scalar_values and the pointwise
shortcuts, whose ``**kw`` is typed with the fixed keyword lists of ``pointwise``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from pycudnn import Graph
from pycudnn.opgraph.pointwise import BinaryKeywords, PointwiseOps, UnaryKeywords
from pycudnn.plan import Plan
from pycudnn.verification import verify_plan
from pycutensor.operation import Operation


def _keywords(fn: Callable[..., Any]) -> dict[str, Any]:
    params = inspect.signature(fn).parameters.values()
    assert inspect.Parameter.VAR_KEYWORD not in {p.kind for p in params}, fn.__qualname__
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_plan_verify_takes_verify_plans_keywords() -> None:
    ours = _keywords(Plan.verify)
    theirs = _keywords(verify_plan)
    assert set(ours) == set(theirs)
    assert ours["max_reference_cost"] is None  # None: verify_plan's own default
    assert ours["seed"] == theirs["seed"]


def test_plan_load_takes_from_jsons_keywords() -> None:
    assert _keywords(Plan.load) == _keywords(Plan.from_json)


def test_scalar_values_names_its_scalars() -> None:
    assert _keywords(Operation.scalar_values) == {"alpha": None, "beta": None, "gamma": None}


def test_pointwise_keyword_lists_are_pointwises_own() -> None:
    pointwise = inspect.signature(PointwiseOps.pointwise).parameters
    for typed in (UnaryKeywords, BinaryKeywords):
        for key in typed.__annotations__:
            assert pointwise[key].kind is inspect.Parameter.KEYWORD_ONLY, key
    assert set(BinaryKeywords.__annotations__) - set(UnaryKeywords.__annotations__) == {"alpha2"}


SHORTCUTS = [
    name
    for name, member in vars(PointwiseOps).items()
    if inspect.isfunction(member) and not name.startswith("_") and name != "pointwise"
]


@pytest.mark.parametrize("name", SHORTCUTS)
def test_each_shortcut_types_its_keywords(name: str) -> None:
    params = inspect.signature(getattr(PointwiseOps, name)).parameters
    tensors = [p for p in params.values() if p.annotation == "Tensor"]
    var = [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert len(var) == 1
    # alpha2 is for two-input modes only (pointwise raises for it elsewhere)
    expected = "Unpack[BinaryKeywords]" if len(tensors) == 2 else "Unpack[UnaryKeywords]"
    assert var[0].annotation == expected


def test_shortcut_keywords_reach_pointwise() -> None:
    g = Graph("shortcut_keywords")
    a = g.tensor([1, 4, 2, 2], dtype="float32", name="a")
    b = g.tensor([1, 4, 2, 2], dtype="float32", name="b")
    y = g.add(a, b, alpha2=2.0, name="sum", out_dtype="float16")
    assert y.dtype == "float16"
    assert [op.name for op in g.operations] == ["sum"]
    with pytest.raises(TypeError, match="relu_lower_clip"):
        g.relu(a, relu_lower_clip=0.0)  # type: ignore[call-arg]  # relu's own is lower_clip
