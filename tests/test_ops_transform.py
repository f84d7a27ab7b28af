"""How transform_tensor describes vectorised layouts to cuDNN (CPU tier: no kernel is launched).

``cudnnTransformTensor`` refused NCHW int8 -> NC/32HW32 with the INT8x32 vector type on an H100
(cuDNN 9.19: ``isTensorSameDims(srcDesc, destDesc) == false``). The library now describes both
sides as plain strided tensors with C split into ``(C/x, x)``; these tests check, with NumPy as the
reference (:func:`pycudnn.layout.to_format`), that the two descriptions address the same element
at every index, and that cuDNN accepts the descriptors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from _nvbind.arrays import as_array_view
from pycudnn import layout
from pycudnn.ops.transform import split_descriptions
from pycudnn.tensor import TensorDescriptor

CASES = [
    ("NC/32HW32", (2, 64, 3, 5)),
    ("NC/4HW4", (2, 64, 3, 5)),
    ("NC/8HW8", (1, 16, 2, 7)),
    ("NC/4DHW4", (2, 8, 2, 3, 5)),
    ("NC/1HW1", (2, 3, 4, 5)),
    ("NC/6HW6", (2, 6, 4, 5)),  # x = C
]


def _strided(buffer: np.ndarray, dims: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(
        buffer, dims, tuple(s * buffer.itemsize for s in strides), writeable=False
    )


@pytest.mark.parametrize("src", ["NCHW", "NHWC"])
@pytest.mark.parametrize(("fmt", "dims"), CASES)
def test_split_descriptions_address_the_vectorised_layout(
    fmt: str, dims: tuple[int, ...], src: str
) -> None:
    f = layout.parse_format(fmt)
    if len(dims) == 5:
        src = {"NCHW": "NCDHW", "NHWC": "NDHWC"}[src]
    logical = np.arange(math.prod(dims), dtype=np.int32).reshape(dims)
    # x in memory order `src`, seen in logical order (as every array view is).
    x_buffer = layout.to_format(logical, src)
    x = _strided(x_buffer, dims, layout.packed_strides(dims, src))
    view_shape, _ = layout.vectorized_dims_strides(dims, f)
    packed = layout.to_format(logical, f).reshape(view_shape)
    xv, yv = as_array_view(x), as_array_view(packed)
    # Packed spatial dims fold into one on both sides: 4-D for 2-D and 3-D images alike.
    split_dims = (dims[0], dims[1] // f.vector, f.vector, math.prod(dims[2:]))
    # Into the vectorised layout (x plain, y the packed view) and out of it.
    (xd, xs), (yd, ys) = split_descriptions(xv, None, yv, f)
    assert xd == yd == split_dims
    np.testing.assert_array_equal(_strided(x_buffer, xd, xs), _strided(packed, yd, ys))
    (pd, ps), (qd, qs) = split_descriptions(yv, f, xv, None)
    assert (pd, ps, qd, qs) == (yd, ys, xd, xs)


@pytest.mark.parametrize(("fmt", "dims"), CASES)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.float32, np.float16])
def test_cudnn_accepts_the_split_descriptors(fmt: str, dims: tuple[int, ...], dtype: type) -> None:
    f = layout.parse_format(fmt)
    x = np.zeros(dims, dtype)
    view_shape, _ = layout.vectorized_dims_strides(dims, f)
    y = np.zeros(view_shape, dtype)
    for d, s in split_descriptions(as_array_view(x), None, as_array_view(y), f):
        with TensorDescriptor(d, s, dtype) as desc:
            assert desc.dims == d and desc.size_in_bytes <= x.nbytes


def test_spatial_dims_fold_only_where_both_sides_are_contiguous() -> None:
    dims = (2, 8, 3, 5)
    f = layout.parse_format("NC/4HW4")
    logical = np.arange(math.prod(dims), dtype=np.int16).reshape(dims)
    padded = np.zeros((2, 8, 3, 7), np.int16)  # rows padded to 7: H and W cannot merge
    padded[..., :5] = logical
    x = padded[..., :5]
    view_shape, _ = layout.vectorized_dims_strides(dims, f)
    packed = layout.to_format(logical, f).reshape(view_shape)
    (xd, xs), (yd, ys) = split_descriptions(as_array_view(x), None, as_array_view(packed), f)
    assert xd == yd == (2, 2, 4, 3, 5)
    np.testing.assert_array_equal(_strided(padded.ravel(), xd, xs), _strided(packed, yd, ys))
    # Extent-1 dims merge whatever their strides.
    one = as_array_view(np.zeros((2, 8, 1, 5), np.int16)[:, :, :, :])
    one_view = as_array_view(np.zeros((2, 2, 1, 5, 4), np.int16))
    (od, _), (pd, _) = split_descriptions(one, None, one_view, f)
    assert od == pd == (2, 2, 4, 5)


def test_two_different_vector_widths_are_refused() -> None:
    a = as_array_view(np.zeros((1, 2, 3, 3, 32), np.int8))
    b = as_array_view(np.zeros((1, 16, 3, 3, 4), np.int8))
    with pytest.raises(ValueError, match="group channels differently"):
        split_descriptions(a, layout.parse_format("NC/32HW32"), b, layout.parse_format("NC/4HW4"))
