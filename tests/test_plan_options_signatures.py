"""The planning filter keywords have one home (PlanOptions): the entry points declare them as
``**filters: Unpack[PlanFilters]`` and show them, with PlanOptions's defaults, as fixed keywords."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import pytest

from pycudnn import Graph, plan
from pycudnn.plan import PlanOptions, selection
from pycudnn.plan.options import PLAN_FILTERS, PlanFilters

ENTRY_POINTS = [plan.engine_configs, plan.build, plan.build_all, plan.autotune]


def test_plan_filters_names_the_options_fields_but_heuristics() -> None:
    assert list(PlanFilters.__annotations__) == [f for f in PLAN_FILTERS if f != "heuristics"]


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_the_signature_shows_each_filter_with_its_options_default(entry: object) -> None:
    params = inspect.signature(entry).parameters  # type: ignore[arg-type]
    for field in dataclasses.fields(PlanOptions):
        if field.name != "heuristics":
            assert params[field.name].kind is inspect.Parameter.KEYWORD_ONLY
            assert params[field.name].default == field.default
    assert list(params)[-1] == "options"


def test_graph_methods_are_the_plan_functions() -> None:
    assert Graph.build is plan.build
    assert Graph.build_all is plan.build_all
    assert Graph.engine_configs is plan.engine_configs
    assert Graph.heuristics is plan.run_heuristics


def test_graph_autotune_is_loaded_on_first_use_only() -> None:
    code = (
        "import sys, pycudnn\n"
        "g = pycudnn.Graph('lazy')\n"
        "print('pycudnn.plan.autotuning' in sys.modules)\n"
        "f = pycudnn.Graph.autotune\n"
        "print('pycudnn.plan.autotuning' in sys.modules, f is pycudnn.plan.autotune)\n"
        "print(g.autotune.__func__ is f)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True", "True"]


def test_a_misspelt_filter_names_the_entry_point_and_the_keyword() -> None:
    g = Graph("misspelt")
    with pytest.raises(TypeError, match=r"build_all\(\) .* 'max_worksapce'.*'max_workspace'"):
        plan.build_all(g, max_worksapce=0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"engine_configs\(\) .* 'sm'"):
        g.engine_configs(sm=8)  # type: ignore[call-arg]


def test_build_engine_shows_engine_configs_keywords() -> None:
    ours = inspect.signature(selection.build_engine)
    theirs = inspect.signature(selection.engine_config)
    assert list(ours.parameters.values()) == list(theirs.parameters.values())
    assert ours.return_annotation == "Plan"
    with pytest.raises(TypeError, match="allow_knwon_bad"):
        selection.build_engine(Graph("misspelt"), 0, allow_knwon_bad=True)  # type: ignore[call-arg]
