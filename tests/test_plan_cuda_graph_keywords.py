"""``Plan.update_cuda_graph`` takes ``populate_cuda_graph``'s keywords: the same ones in its
signature, and a misspelt one refused as Python refuses it, before any other check."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph
from pycudnn.plan import Plan


def _keyword_only(fn: Any) -> dict[str, Any]:
    params = inspect.signature(fn).parameters.values()
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_update_shows_populates_keywords() -> None:
    assert _keyword_only(Plan.update_cuda_graph) == {"workspace": None, "handle": None}
    assert inspect.signature(Plan.update_cuda_graph) == inspect.signature(Plan.populate_cuda_graph)


@pytest.mark.usefixtures("libcuda")
def test_update_refuses_an_unknown_keyword(deviceprops_json: dict[str, Any]) -> None:
    g = Graph("conv")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1, name="conv")
    with g.build(device_properties=DeviceProperties.from_json(deviceprops_json), cache=False) as p:
        # checked before the (null) CUDA graph and the (empty) tensors
        with pytest.raises(TypeError, match=r"update_cuda_graph\(\) got an unexpected keyword "
                           r"argument 'workspce'.*workspace"):  # fmt: skip
            p.update_cuda_graph({}, 0, workspce=1)  # type: ignore[call-arg]
        with pytest.raises(ValueError, match="null"):  # a keyword it knows: on to the next check
            p.update_cuda_graph({}, 0, handle=None)
