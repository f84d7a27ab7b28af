"""Block scaling along another dim than the last: ``block_scale_quantize(axis=, transpose=)`` and
``block_scale_dequantize(block_size=(32, 1))``, as cudnn-frontend's ``set_axis``,
``set_transpose`` and ``set_block_size({32, 1})`` give them (an MX matmul's B operand is scaled
along K, its dim -2).

cuDNN finalizes the operations for any block size without a GPU (it checks the blocks against
the scale's dims only when an engine is chosen, and the H100 has none for these): what is checked
here is what pycudnn describes, with layouts worked out by hand from the frontend's rules
(``BlockScaleQuantizeNode::infer_properties_node``), and that cuDNN takes the descriptors.
"""

from __future__ import annotations

from typing import Any

import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError
from pycudnn.opgraph.kinds import kind_since

pytestmark = pytest.mark.skipif(
    pycudnn.version_tuple() < (kind_since("OPERATION_BLOCK_SCALE_DEQUANTIZE") or (0, 0, 0)),
    reason="block scaling is cuDNN 9.7's",
)


def _quantize(dims: list[int], strides: list[int] | None = None, **kw: Any) -> tuple[Any, ...]:
    g = Graph("quantize")
    x = g.tensor(dims, strides, dtype="bfloat16", name="x")
    y, scale = g.block_scale_quantize(x, block_size=32, out_dtype="float8_e4m3fn", **kw)
    g.finalize(None)  # cuDNN takes the operation (deviceless)
    return y, scale


def test_quantize_along_dim_minus_2_divides_that_dim_of_the_scale() -> None:
    y, scale = _quantize([1, 1, 256, 128], axis=-2)
    assert scale.dims == (1, 1, 8, 128)
    assert y.strides == (32768, 32768, 128, 1)  # X's own, as without transpose
    assert scale.strides == (1024, 1024, 128, 1)  # X's memory order
    _, last = _quantize([1, 1, 256, 128])  # the default: the last dim
    assert last.dims == (1, 1, 256, 4)
    # Without transpose, Y keeps X's strides whatever they are (channels-last here), not packed
    # ones of X's dims: the scale alone follows X's memory order (C innermost, then W, H, N)
    y, scale = _quantize([2, 64, 4, 32], [8192, 1, 2048, 64], axis=-1)
    assert y.strides == (8192, 1, 2048, 64)
    assert scale.dims == (2, 64, 4, 1) and scale.strides == (256, 1, 64, 64)


def test_transpose_puts_the_blocked_dim_innermost() -> None:
    # X row-major [.., K=256, N=128]: innermost first N, K, then the size-1 dims; rotated to
    # start at K: K, then the 1s, then N. Packed in that order: K 1, the 1s 256, N 256.
    y, scale = _quantize([1, 1, 256, 128], axis=2, transpose=True)
    assert y.strides == (256, 256, 1, 256)
    assert scale.dims == (1, 1, 8, 128) and scale.strides == (8, 8, 1, 8)
    # Blocked along the last dim of a channels-last X ([N, C, H, W] strides [HWC, 1, WC, C]):
    # innermost first C, W, H, N; rotated to start at W: W, H, N, then C.
    y, scale = _quantize([2, 64, 4, 32], [8192, 1, 2048, 64], axis=-1, transpose=True)
    assert y.strides == (128, 256, 32, 1)
    assert scale.dims == (2, 64, 4, 1) and scale.strides == (4, 8, 1, 1)


def test_an_mx_matmul_scales_a_along_k_and_b_along_k() -> None:
    g = Graph("mx matmul")
    a = g.tensor([1, 128, 256], dtype="float8_e4m3fn", name="a")
    a_scale = g.tensor([1, 128, 8], dtype="float8_e8m0fnu", name="a_scale")
    b = g.tensor([1, 256, 64], dtype="float8_e4m3fn", name="b")
    b_scale = g.tensor([1, 8, 64], dtype="float8_e8m0fnu", name="b_scale")
    da = g.block_scale_dequantize(a, a_scale, block_size=(1, 32), out_dtype="float32")
    db = g.block_scale_dequantize(b, b_scale, block_size=(32, 1), out_dtype="float32")
    g.matmul(da, db).set_output(True, dtype="bfloat16")
    g.finalize(None)
    blocks = [op.attrs["block_size"] for op in g.operations if op.kind == "block_scale_dequantize"]
    assert blocks == [(1, 32), (32, 1)]
    one = Graph("one int")
    x = one.tensor([1, 128, 256], dtype="float8_e4m3fn", name="x")
    s = one.tensor([1, 128, 8], dtype="float8_e8m0fnu", name="s")
    one.block_scale_dequantize(x, s, block_size=32, out_dtype="float32")
    assert one.operations[0].attrs["block_size"] == 32  # as before: one int, the last dim


@pytest.mark.parametrize(
    ("block_size", "scale_dims", "error", "fragment"),
    [
        ((32, 1), [1, 128, 8], GraphError, "must be [1, 8, 64]"),  # A's scale given to B
        ((1, 32), [1, 8, 64], GraphError, "must be [1, 256, 2]"),
        ((0, 1), [1, 8, 64], GraphError, "block_size[0] is 0; it must be >= 1"),
        ((1, 1, 1, 32), [1, 8, 64], GraphError, "must give 1 to 3 block extents"),
        ((48, 1), [1, 8, 64], GraphError, "dim 1 (256) is not a multiple of block_size 48"),
        ("32", [1, 8, 64], TypeError, "an int or a sequence of ints"),
        ((32.0, 1), [1, 8, 64], TypeError, "must be an int"),
    ],
)
def test_dequantize_refuses_blocks_its_scale_does_not_match(
    block_size: Any, scale_dims: list[int], error: type, fragment: str
) -> None:
    g = Graph("refusals")
    b = g.tensor([1, 256, 64], dtype="float8_e4m3fn", name="b")
    s = g.tensor(scale_dims, dtype="float8_e8m0fnu", name="s")
    with pytest.raises(error) as info:
        g.block_scale_dequantize(b, s, block_size=block_size, out_dtype="float32")
    assert fragment in str(info.value)


def test_quantize_refuses_an_axis_out_of_range_or_not_divisible() -> None:
    g = Graph("refusals")
    x = g.tensor([1, 1, 250, 128], dtype="bfloat16", name="x")
    with pytest.raises(GraphError, match="axis 4 is out of range for rank 4"):
        g.block_scale_quantize(x, block_size=32, out_dtype="float8_e4m3fn", axis=4)
    with pytest.raises(GraphError, match=r"dim 2 \(250\) is not a multiple of block_size 32"):
        g.block_scale_quantize(x, block_size=32, out_dtype="float8_e4m3fn", axis=-2)
    with pytest.raises(TypeError, match="transpose must be a bool"):
        g.block_scale_quantize(x, block_size=2, out_dtype="float8_e4m3fn", transpose=1)
