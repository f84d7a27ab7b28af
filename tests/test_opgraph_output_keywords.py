"""The one-output kinds (block-scale dequantize, the MoE matmuls) take matmul's output keywords
(OutputKeywords), declared once: shown in their signatures with matmul's defaults, reaching the
operation, and a misspelt one refused before anything is added."""

from __future__ import annotations

import inspect

import pytest
from versioned import skip_unless_cudnn_has

from pycudnn import Graph
from pycudnn.opgraph.matmul import OutputKeywords

PEERS = ("block_scale_dequantize", "moe_grouped_matmul", "moe_grouped_matmul_backward")


@pytest.mark.parametrize("method", PEERS)
def test_peer_signature_ends_with_matmuls_output_keywords(method: str) -> None:
    params = list(inspect.signature(getattr(Graph, method)).parameters.values())
    tail = [(p.name, p.kind, p.default) for p in params[-4:]]
    keyword = inspect.Parameter.KEYWORD_ONLY
    assert tail == [
        ("compute_dtype", keyword, None),
        ("name", keyword, None),
        ("out", keyword, None),
        ("out_dtype", keyword, None),
    ]
    assert [p.name for p in params[-4:]] == list(OutputKeywords.__annotations__)


def _moe_backward_graph() -> tuple[Graph, tuple[object, ...]]:
    g = Graph("output_keywords")
    token = g.tensor([1, 8, 4], dtype="float16", name="token")
    dout = g.tensor([1, 8, 6], dtype="float16", name="dout")
    offsets = g.tensor([2, 1, 1], dtype="int32", name="offsets")
    return g, (token, dout, offsets)


def test_output_keywords_reach_the_operation() -> None:
    skip_unless_cudnn_has("CUDNN_BACKEND_OPERATION_MOE_GROUPED_MATMUL_BWD_DESCRIPTOR")
    g, args = _moe_backward_graph()
    dw = g.moe_grouped_matmul_backward(*args, name="mb", out_dtype="float32")  # type: ignore[arg-type]
    (op,) = g.operations
    assert op.name == "mb"
    assert dw.dims == (2, 4, 6) and dw.dtype == "float32"


def test_a_misspelt_output_keyword_is_refused_first() -> None:
    g, args = _moe_backward_graph()
    with pytest.raises(TypeError, match="'nme'; did you mean 'name'"):
        g.moe_grouped_matmul_backward(*args, nme="mb")  # type: ignore[arg-type,call-arg]
    assert not g.operations
