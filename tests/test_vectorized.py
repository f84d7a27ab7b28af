"""Vectorized NC/xHWx tensors in the graph API, on CPU with real cuDNN.

The backend describes an NC/32HW32 tensor by ``TENSOR_VECTOR_COUNT`` 32 and
``TENSOR_VECTORIZED_DIMENSION`` 1, with C and the strides counted in whole vectors; the caller's
data is the packed ``[N, C/32, H, W, 32]`` int8 array (seed 002: "the NCHW INT8x32 format is really
N x (C/32) x H x W x 32"). With the committed H100 properties cuDNN plans such a convolution
without a GPU; running it needs one (tests/test_vectorized_gpu.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pycudnn
from _nvbind.arrays import ArrayView
from pycudnn import layout
from pycudnn.graph import Graph, GraphError
from pycudnn.ops.convolution import _vector_descs
from pycudnn.plan.slots import _Slot


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def int8x32_conv(n: int = 2, c: int = 64, k: int = 64, hw: int = 8) -> tuple[Graph, Any, Any, Any]:
    g = Graph("int8x32")
    x = g.tensor((n, c, hw, hw), fmt="NC/32HW32", dtype="int8", name="x")
    w = g.tensor((k, c, 3, 3), dtype="int8x32", name="w")
    y = g.conv_fprop(x, w, padding=1)
    return g, x, w, y


def test_vectorized_tensor_description() -> None:
    g, x, w, y = int8x32_conv(n=2, c=64, k=96)
    # dims stay logical; cuDNN's dims count C in vectors of 32: 64 -> 2, and Y's C is K = 96 -> 3.
    assert x.dims == (2, 64, 8, 8) and x.vector_dims == (2, 2, 8, 8)
    assert (x.vector_count, x.vectorized_dim, x.format) == (32, 1, "NC/32HW32")
    assert w.format == "NC/32HW32" and w.vector_dims == (96, 2, 3, 3)
    assert y.dims == (2, 96, 8, 8) and y.vector_count == 32 and y.dtype == np.int8
    # The array holding x is layout.vectorized_dims_strides' packed view; its strides in elements
    # are row-major over [2, 2, 8, 8, 32], and cuDNN's strides are the same in units of 32.
    view, view_strides = layout.vectorized_dims_strides(x.dims, "NC/32HW32")
    assert (x.array_shape, x.array_strides) == (view, view_strides)
    assert x.strides == tuple(s // 32 for s in view_strides[:-1])
    assert g.operations[0].attrs["compute_dtype"] == np.int32
    assert "NC/32HW32" in g.describe()


def test_vectorized_conv_plans_for_the_h100(props: pycudnn.DeviceProperties) -> None:
    g, x, w, y = int8x32_conv()
    plan = g.build(device_properties=props, cache=False)
    assert plan.engine_id is not None
    # What cuDNN holds, read back from the finalized backend tensors.
    backend = g._descriptors["tensors"]  # type: ignore[index]
    for t in (x, w, y):
        d = backend[t.uid]
        assert d.get("TENSOR_VECTOR_COUNT") == 32
        assert d.get("TENSOR_VECTORIZED_DIMENSION") == 1
        assert tuple(d.get("TENSOR_DIMENSIONS")) == (t.dims[0], t.dims[1] // 32, *t.dims[2:])
    # The plan's arrays are the packed vectorized views, as the graph and as its JSON say.
    expected = [(t.array_shape, t.array_strides) for t in (x, w, y)]
    assert [(s.dims, s.strides) for s in plan._slots] == expected
    assert expected[1] == ((64, 2, 3, 3, 32), (576, 288, 96, 32, 1))
    loaded = pycudnn.plan.Plan.from_json(plan.to_json(), device_properties=props)
    assert [(s.dims, s.strides) for s in loaded._slots] == expected
    assert g.load_plan(plan.to_json(), device_properties=props).engine_id == plan.engine_id


def test_vectorized_arrays_are_validated(props: pycudnn.DeviceProperties) -> None:
    g, x, _, _ = int8x32_conv()
    plan = g.build(device_properties=props, cache=False)
    slot: _Slot = plan._slots[0]
    shape, strides = layout.vectorized_dims_strides(x.dims, "NC/32HW32")
    ptr = 0x10000

    def sig(shape: Any = shape, strides: Any = strides, dtype: Any = np.int8) -> tuple[Any, ...]:
        # (pointer, shape, strides, dtype, device, read-only): an ArrayView's description.
        return (ptr, shape, strides, np.dtype(dtype), 0, False)

    assert plan._packs.validate(slot, sig(), 0) == ptr
    # The logical 4-D int8 array is not the data: the error names the packed shape to pass.
    with pytest.raises(
        ValueError,
        match=r"shape \[2, 64, 8, 8\] but the graph says \[2, 2, 8, 8, "
        r"32\] \(the packed \[N, C/x, H, W, x\] array of this NC/32HW32 tensor",
    ):
        plan._packs.validate(slot, sig((2, 64, 8, 8), (4096, 64, 8, 1)), 0)
    with pytest.raises(ValueError, match="strides"):
        plan._packs.validate(slot, sig(strides=(4096, 2048, 256, 1, 8)), 0)
    with pytest.raises(TypeError, match="int32 but the graph says int8"):
        plan._packs.validate(slot, sig(dtype=np.int32), 0)


def test_vectorized_dtype_strings_and_widths() -> None:
    g = Graph()
    assert g.tensor((1, 8, 4, 4), dtype="int8x4").format == "NC/4HW4"
    assert g.tensor((1, 8, 4, 4), dtype="uint8", fmt="NC/4HW4").vector_count == 4
    assert g.tensor((1, 8, 4, 4, 4), dtype="int8", fmt="nc/4dhw4").vector_dims == (1, 2, 4, 4, 4)
    # NC/1HW1 is NCHW, and a vector of C is NHWC for other widths (seed 002): no vectors.
    assert g.tensor((1, 8, 4, 4), dtype="int8", fmt="NC/1HW1").vector_count == 1
    assert g.tensor((1, 16, 4, 4), dtype="int8", fmt="NC/16HW16").format == "NHWC"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "float16", "fmt": "NC/32HW32"}, r"float16 in NC/32HW32: cuDNN vectorizes int8"),
        ({"dtype": "uint8", "fmt": "NC/32HW32"}, "uint8 by 4 only"),
        ({"dtype": "int8", "fmt": "NC/8HW8"}, "vectorized by 4 or 32"),
        ({"dtype": "int8x32", "fmt": "NHWC"}, "needs fmt NC/32HW32"),
        ({"dtype": "int8", "fmt": "NC/32HW32", "strides": (1, 1, 1, 1)}, "do not pass strides"),
        ({"dtype": "int8", "fmt": "NC/32HW32", "virtual": True}, "cannot be virtual"),
    ],
)
def test_vectorized_tensor_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(GraphError, match=message):
        Graph().tensor((1, 64, 4, 4), name="t", **kwargs)


def test_vectorized_tensor_needs_whole_vectors() -> None:
    with pytest.raises(GraphError, match=r"multiple of 32, but dims\[1\] \(C\) is 48"):
        Graph().tensor((1, 48, 4, 4), dtype="int8", fmt="NC/32HW32")


def test_vectorized_conv_errors() -> None:
    g = Graph()
    x = g.tensor((1, 64, 8, 8), dtype="int8x32", name="x")
    w4 = g.tensor((64, 64, 3, 3), dtype="int8x4", name="w4")
    w_plain = g.tensor((64, 64, 3, 3), dtype="int8", fmt="NHWC", name="wp")
    w48 = g.tensor((48, 64, 3, 3), dtype="int8x32", name="w48")
    w = g.tensor((64, 64, 3, 3), dtype="int8x32", name="w")
    with pytest.raises(GraphError, match=r"'x'.*NC/32HW32 but W.*NC/4HW4"):
        g.conv_fprop(x, w4)
    with pytest.raises(GraphError, match=r"NC/32HW32 but W.*NHWC"):
        g.conv_fprop(x, w_plain)
    with pytest.raises(GraphError, match="K = 48 output channels, not a multiple of 32"):
        g.conv_fprop(x, w48)
    with pytest.raises(GraphError, match=r"compute_dtype is float32.*accumulates in int32"):
        g.conv_fprop(x, w, compute_dtype="float32")
    with pytest.raises(GraphError, match="out_dtype is float32"):
        g.conv_fprop(x, w, out_dtype="float32")
    plain_out = g.tensor((1, 64, 8, 8), dtype="int8", name="plain_out")
    with pytest.raises(
        GraphError, match=r"'plain_out'.*is NCHW but the operation writes NC/32HW32"
    ):
        g.conv_fprop(x, w, out=plain_out, padding=1)
    # Other operations refuse vectorized tensors before cuDNN sees them.
    with pytest.raises(GraphError, match=r"'x'.*NC/32HW32; vectorized tensors are taken by "):
        g.relu(x)


def test_verification_refuses_vectorized_graphs(props: pycudnn.DeviceProperties) -> None:
    from pycudnn.verification.run import verify_plan

    g, *_ = int8x32_conv()
    plan = g.build(device_properties=props, cache=False)
    with pytest.raises(ValueError, match=r"vectorized \(NC/xHWx\) tensors is not supported"):
        verify_plan(plan)


# -- the legacy API: cudnnConvolutionForward with NCHW_VECT_C -----------------------------------


def packed_view(shape: tuple[int, ...], dtype: Any = np.int8) -> ArrayView:
    """A device-array description (no memory behind it: only the descriptors are built)."""
    strides = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
    return ArrayView(0x10000, shape, strides, np.dtype(dtype), 0, False, None)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_legacy_vectorized_descriptors_from_packed_arrays() -> None:
    # x [2, 64, 8, 8] and w [96, 64, 3, 3] as their packed NC/32HW32 arrays.
    x_desc, w_desc = _vector_descs(
        packed_view((2, 2, 8, 8, 32)),
        packed_view((96, 2, 3, 3, 32)),
        np.dtype(np.int8),
        layout.parse_format("NC/32HW32"),
    )
    assert x_desc.dims == (2, 64, 8, 8) and x_desc.cudnn_data_type.name == "INT8x32"
    assert w_desc.dims == (96, 64, 3, 3) and w_desc.fmt == "NC/32HW32"
    conv = pycudnn.ConvolutionDescriptor((1, 1), compute_type=np.int32)
    assert conv.output_dims(x_desc, w_desc) == (2, 96, 8, 8)  # (8 + 2 - 3) // 1 + 1 = 8
    f = layout.parse_format("NC/32HW32")
    with pytest.raises(ValueError, match=r"x has shape \(2, 64, 8, 8\); in fmt 'NC/32HW32' it is"):
        _vector_descs(packed_view((2, 64, 8, 8)), packed_view((96, 2, 3, 3, 32)), np.int8, f)
    padded = packed_view((96, 2, 3, 3, 32))._replace(strides=(1000, 288, 96, 32, 1))
    with pytest.raises(ValueError, match=r"w has strides .* are packed"):
        _vector_descs(packed_view((2, 2, 8, 8, 32)), padded, np.int8, f)
    with pytest.raises(TypeError, match=r"x and w: .*float16"):
        _vector_descs(
            packed_view((2, 2, 8, 8, 32), np.float16),
            packed_view((96, 2, 3, 3, 32), np.float16),
            np.dtype(np.float16),
            f,
        )


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"fmt": "NHWC"}, ValueError, "names a vectorized layout, NC/4HW4 or NC/32HW32"),
        ({"fmt": "NC/8HW8"}, ValueError, "names a vectorized layout"),
        ({"fmt": "NC/32HW33"}, ValueError, "fmt: format"),
        ({"fmt": "NC/32HW32", "algo": "winograd"}, ValueError, "'implicit_precomp_gemm' only"),
        ({"fmt": "NC/32HW32", "algo": 0}, ValueError, "INT8x32_CONFIG"),
    ],
)
def test_legacy_vectorized_conv_refusals_need_no_gpu(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    x = np.zeros((1, 2, 4, 4, 32), np.int8)
    with pytest.raises(error, match=message):
        pycudnn.ops.convolution_forward(x, x, **kwargs)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_legacy_vectorized_conv_needs_an_int32_accumulator() -> None:
    x = np.zeros((1, 2, 4, 4, 32), np.int8)
    conv = pycudnn.ConvolutionDescriptor((1, 1), compute_type=np.float32)
    with pytest.raises(ValueError, match=r"compute_type float32.*accumulate in int32"):
        pycudnn.ops.convolution_forward(x, x, conv, fmt="NC/32HW32")
    # The algorithm INT8x32 needs is accepted by name and by value; the refusal then is the
    # host-memory one, which comes after the checks above.
    for algo in ("implicit_precomp_gemm", 1, None):
        with pytest.raises(ValueError, match="host memory"):
            pycudnn.ops.convolution_forward(x, x, fmt="NC/32HW32", algo=algo)
