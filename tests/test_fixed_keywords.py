"""Public callables spell out their keywords (no ``**kwargs`` hiding them from help() and type
checkers): Plan.verify, Plan.load, pycutensor's Operation.scalar_values, and the methods that
share a keyword list (the pointwise shortcuts, the backward convolutions, ...), whose ``**kw`` is
typed with that list for type checkers and spelled out in their signatures for help()."""

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
    method = getattr(PointwiseOps, name)
    tensors = [k for k, v in method.__annotations__.items() if v == "Tensor" and k != "return"]
    # alpha2 is for two-input modes only (pointwise raises for it elsewhere)
    expected = "Unpack[BinaryKeywords]" if len(tensors) == 2 else "Unpack[UnaryKeywords]"
    assert method.__annotations__["kw"] == expected
    # ... and help() / inspect.signature show those keywords, as pointwise declares them
    typed = BinaryKeywords if len(tensors) == 2 else UnaryKeywords
    shown = _keywords(getattr(Graph, name))
    pointwise = _keywords(PointwiseOps.pointwise)
    for key in typed.__annotations__:
        assert shown[key] == pointwise[key], (name, key)


def _public_callables() -> list[tuple[str, Any]]:
    """Every public function, class and method of both packages and their public subpackages."""
    import importlib

    out: list[tuple[str, Any]] = []
    for package in ("pycudnn", "pycudnn.ops", "pycudnn.plan", "pycudnn.verification",
                    "pycudnn.opgraph", "pycutensor", "pycutensor.distributed"):  # fmt: skip
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                continue  # exceptions take Python's own (*args, **kwargs)
            out.append((f"{package}.{name}", obj))
            if isinstance(obj, type):
                out += [(f"{package}.{name}.{a}", getattr(obj, a)) for a in dir(obj)
                        if not a.startswith("_") or a == "__init__"]  # fmt: skip
    ours = ("pycudnn", "pycutensor", "_nvbind")  # not what a class inherits from Python (list, ...)
    return [
        (n, c)
        for n, c in out
        if callable(c) and (getattr(c, "__module__", None) or "").startswith(ours)
    ]


def test_no_public_callable_hides_its_keywords() -> None:
    hidden = []
    for name, obj in _public_callables():
        try:
            params = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):  # builtins without a signature
            continue
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            hidden.append(name)
    assert hidden == []
    # the scan reaches the methods that take shared keyword lists
    names = {n for n, _ in _public_callables()}
    assert {"pycudnn.Graph.conv_dgrad", "pycudnn.Graph.add", "pycudnn.Graph.build"} <= names
    assert {"pycudnn.ops.pooling_backward", "pycudnn.ops.softmax_forward"} <= names


def test_shortcut_keywords_reach_pointwise() -> None:
    g = Graph("shortcut_keywords")
    a = g.tensor([1, 4, 2, 2], dtype="float32", name="a")
    b = g.tensor([1, 4, 2, 2], dtype="float32", name="b")
    y = g.add(a, b, alpha2=2.0, name="sum", out_dtype="float16")
    assert y.dtype == "float16"
    assert [op.name for op in g.operations] == ["sum"]
    with pytest.raises(TypeError, match="relu_lower_clip"):
        g.relu(a, relu_lower_clip=0.0)  # type: ignore[call-arg]  # relu's own is lower_clip
