"""Graph's planning methods spell out the keywords of their pycudnn.plan functions (so that
``help()``, IDEs and type checkers see them); these tests keep the two lists from drifting."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from pycudnn import Graph, plan


def _params(fn: Callable[..., Any], skip: int) -> list[tuple[str, Any, Any]]:
    params = list(inspect.signature(fn).parameters.values())[skip:]
    return [(p.name, p.kind, p.default) for p in params]


@pytest.mark.parametrize(
    ("method", "function"),
    [
        (Graph.engine_configs, plan.engine_configs),
        (Graph.build, plan.build),
        (Graph.build_all, plan.build_all),
        (Graph.autotune, plan.autotune),
    ],
    ids=["engine_configs", "build", "build_all", "autotune"],
)
def test_graph_methods_take_exactly_their_plan_functions_keywords(
    method: Callable[..., Any], function: Callable[..., Any]
) -> None:
    # The method drops `self`, the function `graph`: the rest must match name, kind and default.
    assert _params(method, 1) == _params(function, 1)
    kinds = {p.kind for p in inspect.signature(method).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds  # no **options hiding the keywords


def test_load_plan_takes_from_jsons_target_keywords() -> None:
    ours = _params(Graph.load_plan, 2)
    theirs = [p for p in _params(plan.Plan.from_json, 1) if p[0] != "graph"]
    assert ours == theirs


def test_a_misspelt_keyword_is_a_type_error_naming_it() -> None:
    g = Graph("signatures")
    with pytest.raises(TypeError, match="determinstic"):
        g.build(determinstic=True)  # type: ignore[call-arg]
