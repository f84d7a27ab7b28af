"""pycudnn.Graph: building, validation and finalization against the real cuDNN (CPU tier).

Validation tests run anywhere (no library call happens before the error); finalization and
heuristics tests need libcuda.so.1 (the ``libcuda`` fixture skips without it).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from versioned import heuristics_run_here

import pycudnn
from _nvbind.cuda import driver_status
from pycudnn import raw
from pycudnn.graph import POINTWISE_ARITY, Graph, GraphError, pointwise_arity

needs_libcuda = pytest.mark.usefixtures("libcuda")


def _conv_bias_relu(fmt: str = "NHWC", dtype: str = "float16") -> tuple[Graph, dict]:
    g = Graph("conv_bias_relu")
    x = g.tensor([1, 32, 16, 16], fmt=fmt, dtype=dtype, name="x")
    w = g.tensor([32, 32, 3, 3], fmt=fmt, dtype=dtype, name="w")
    b = g.tensor([1, 32, 1, 1], fmt=fmt, dtype=dtype, name="bias")
    conv = g.conv_fprop(x, w, padding=1, name="conv")
    biased = g.add(conv, b, name="bias_add")
    y = g.relu(biased, name="relu")
    return g, {"x": x, "w": w, "b": b, "conv": conv, "biased": biased, "y": y}


# -- tensors ---------------------------------------------------------------------------------------


def test_tensor_layouts_from_formats_and_strides() -> None:
    g = Graph()
    nchw = g.tensor([2, 3, 4, 5], dtype="float32")
    nhwc = g.tensor([2, 3, 4, 5], fmt="NHWC", dtype="float32")
    ndhwc = g.tensor([2, 3, 4, 5, 6], fmt="NDHWC", dtype="float16")
    custom = g.tensor([2, 3, 4], strides=[100, 20, 2], dtype="float32")
    assert nchw.strides == (60, 20, 5, 1)
    assert nhwc.strides == (60, 1, 15, 3)  # [C*H*W, 1, W*C, C]
    assert ndhwc.strides == (360, 1, 90, 18, 3)
    assert custom.strides == (100, 20, 2)
    assert nhwc.format == "NHWC" and nchw.format == "NCHW"
    assert [t.uid for t in (nchw, nhwc, ndhwc, custom)] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("kwargs", "exc", "fragment"),
    [
        ({"dims": [4, 4]}, GraphError, "rank 2"),
        ({"dims": [1] * 9}, GraphError, "rank 9"),
        ({"dims": [2, 0, 4]}, GraphError, "dims[1] is 0"),
        ({"dims": [2, -3, 4]}, GraphError, "dims[1] is -3"),
        ({"dims": "abc"}, TypeError, "dims"),
        ({"dims": [2, 3.0, 4]}, TypeError, "dims[1]"),
        ({"dims": [2, True, 4]}, TypeError, "dims[1]"),
        ({"dims": [2, 3, 4], "strides": [12, -4, 1]}, GraphError, "negative strides"),
        ({"dims": [2, 3, 4], "strides": [12, 0, 1]}, GraphError, "strides[1] is 0"),
        ({"dims": [2, 3, 4], "strides": [12, 4]}, GraphError, "has 2 entries"),
        ({"dims": [2, 3, 4, 5], "strides": [60, 20, 5, 1], "fmt": "NHWC"}, GraphError, "not both"),
        ({"dims": [2, 3, 4], "fmt": "NHWC"}, GraphError, "NHWC"),
        ({"dims": [2, 3, 4], "dtype": "not-a-dtype"}, TypeError, "not-a-dtype"),
        ({"dims": [2, 3, 4], "dtype": np.uint16}, GraphError, "no data type for uint16"),
        ({"dims": [2, 3, 4], "alignment": 12}, GraphError, "power of two"),
        ({"dims": [2, 3, 4], "dtype": "float32", "alignment": 2}, GraphError, "multiple of"),
        ({"dims": [2, 3, 4], "by_value": 2.0}, GraphError, "all dims 1"),
        ({"dims": [2, 3, 4], "by_value": "x"}, TypeError, "by_value"),
        ({"dims": [2, 3, 4], "virtual": 1}, TypeError, "virtual"),
    ],
)
def test_bad_tensors_are_refused_naming_the_tensor(kwargs: dict, exc: type, fragment: str) -> None:
    g = Graph()
    with pytest.raises(exc) as info:
        g.tensor(name="bad", **kwargs)
    assert fragment in str(info.value)
    if exc is GraphError:
        assert "'bad'" in str(info.value)


def test_duplicate_tensor_names() -> None:
    g = Graph()
    g.tensor([1, 2, 3], name="x")
    with pytest.raises(GraphError, match="already has a tensor named 'x'"):
        g.tensor([1, 2, 3], name="x")
    assert g["x"].dims == (1, 2, 3)
    with pytest.raises(KeyError):
        g["nope"]


# -- convolution -------------------------------------------------------------------------------


def test_conv_channel_mismatch_names_op_and_tensors() -> None:
    g = Graph()
    x = g.tensor([1, 64, 16, 16], dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], dtype="float16", name="w")
    with pytest.raises(GraphError) as info:
        g.conv_fprop(x, w, name="conv1")
    assert str(info.value) == (
        "conv_fprop 'conv1': X has 64 channels but W expects 32 (W dims [32, 32, 3, 3])"
    )


def test_conv_output_dims_follow_the_convolution_formula() -> None:
    g = Graph()
    x = g.tensor([2, 4, 17, 12], dtype="float32")
    w = g.tensor([6, 4, 3, 5], dtype="float32")
    # H: (17 + 1 + 1 - 2*(3-1) - 1) // 2 + 1 = 14 // 2 + 1 = 8
    # W: (12 + 2 + 0 - 1*(5-1) - 1) // 1 + 1 = 9 + 1 = 10
    y = g.conv_fprop(x, w, padding=[1, 2], post_padding=[1, 0], stride=[2, 1], dilation=[2, 1])
    assert y.dims == (2, 6, 8, 10)


def test_conv_3d_output_dims() -> None:
    g = Graph()
    x = g.tensor([1, 2, 8, 8, 8], fmt="NDHWC", dtype="float16")
    w = g.tensor([4, 2, 3, 3, 3], fmt="NDHWC", dtype="float16")
    y = g.conv_fprop(x, w, padding=1, stride=2)
    assert y.dims == (1, 4, 4, 4, 4)  # (8 + 2 - 2 - 1) // 2 + 1 = 4
    assert y.format == "NDHWC"  # the output follows the input's layout


def test_grouped_conv() -> None:
    g = Graph()
    x = g.tensor([1, 8, 5, 5], dtype="float32")
    w = g.tensor([4, 2, 3, 3], dtype="float32")
    y = g.conv_fprop(x, w, groups=4)
    assert y.dims == (1, 4, 3, 3)
    with pytest.raises(GraphError, match="X has 8 channels but W expects 4"):
        g2 = Graph()
        g2.conv_fprop(g2.tensor([1, 8, 5, 5]), g2.tensor([4, 2, 3, 3]), groups=2)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"padding": -1}, "padding[0] is -1"),
        ({"stride": 0}, "stride[0] is 0"),
        ({"dilation": [1, 0]}, "dilation[1] is 0"),
        ({"padding": [1, 1, 1]}, "padding has 3 entries but 2 are needed"),
        ({"mode": "xcorr"}, "mode must be"),
        ({"groups": 0}, "groups is 0"),
    ],
)
def test_conv_settings_are_checked(kwargs: dict, fragment: str) -> None:
    g = Graph()
    x = g.tensor([1, 4, 8, 8])
    w = g.tensor([4, 4, 3, 3])
    with pytest.raises(GraphError, match=fragment.replace("[", r"\[").replace("]", r"\]")) as info:
        g.conv_fprop(x, w, name="c", **kwargs)
    assert "conv_fprop 'c'" in str(info.value)


def test_conv_filter_larger_than_input() -> None:
    g = Graph()
    with pytest.raises(GraphError, match="the filter does not fit"):
        g.conv_fprop(g.tensor([1, 4, 2, 2]), g.tensor([4, 4, 5, 5]), name="c")


def test_conv_rank_and_dtype_mismatches() -> None:
    g = Graph()
    x = g.tensor([1, 4, 8, 8], dtype="float16", name="x")
    w3 = g.tensor([4, 4, 3, 3, 3], dtype="float16", name="w3")
    w32 = g.tensor([4, 4, 3, 3], dtype="float32", name="w32")
    with pytest.raises(GraphError, match="W \\('w3'\\) has rank 5 but X \\('x'\\) has rank 4"):
        g.conv_fprop(x, w3)
    with pytest.raises(GraphError, match="X \\('x'\\) is float16 but W \\('w32'\\) is float32"):
        g.conv_fprop(x, w32)
    big = g.tensor([1, 2, 3, 4, 5, 6], name="r6")
    with pytest.raises(GraphError, match="rank 3 to 5"):
        g.conv_fprop(big, big)


def test_conv_dgrad_and_wgrad_dims() -> None:
    g = Graph()
    dy = g.tensor([2, 16, 5, 5], dtype="float32", name="dy")
    w = g.tensor([16, 8, 3, 3], dtype="float32", name="w")
    # stride 1, pad 1: the input that maps onto 5x5 is 5x5
    dx = g.conv_dgrad(dy, w, padding=1)
    assert dx.dims == (2, 8, 5, 5)
    # stride 2: the smallest input is (5-1)*2 - 2 + 3 = 9; 10 maps to 5 as well
    dx2 = g.conv_dgrad(dy, w, padding=1, stride=2)
    assert dx2.dims == (2, 8, 9, 9)
    dx3 = g.conv_dgrad(dy, w, padding=1, stride=2, dx_dims=[2, 8, 10, 10])
    assert dx3.dims == (2, 8, 10, 10)
    with pytest.raises(GraphError, match="gives spatial dims \\[6, 6\\]"):
        g.conv_dgrad(dy, w, padding=1, stride=2, dx_dims=[2, 8, 11, 11])
    x = g.tensor([2, 8, 9, 9], dtype="float32", name="x")
    dw = g.conv_wgrad(x, dy, padding=1, stride=2)
    assert dw.dims == (16, 8, 3, 3)
    dw2 = g.conv_wgrad(x, dy, padding=1, stride=2, dw_dims=[16, 8, 3, 3])
    assert dw2.dims == (16, 8, 3, 3)
    with pytest.raises(GraphError, match="DY has 16 channels but W has 8 output channels"):
        g.conv_dgrad(dy, g.tensor([8, 8, 3, 3], dtype="float32"))
    with pytest.raises(GraphError, match="DW dims"):
        g.conv_wgrad(x, dy, padding=1, stride=2, dw_dims=[16, 4, 3, 3])


# -- matmul ------------------------------------------------------------------------------------------


def test_matmul_output_dims_with_broadcast_batch() -> None:
    g = Graph()
    a = g.tensor([4, 1, 64, 32], dtype="bfloat16")
    b = g.tensor([1, 3, 32, 16], dtype="bfloat16")
    c = g.matmul(a, b)
    assert c.dims == (4, 3, 64, 16)
    assert c.strides == (3 * 64 * 16, 64 * 16, 16, 1)


def test_matmul_transposed_operand_by_strides() -> None:
    g = Graph()
    a = g.tensor([2, 64, 32], dtype="float16")
    bt = g.tensor([2, 32, 16], strides=[512, 1, 32], dtype="float16")  # column-major B
    assert g.matmul(a, bt).dims == (2, 64, 16)


@pytest.mark.parametrize(
    ("a_dims", "b_dims", "fragment"),
    [
        ([1, 64, 32], [1, 64, 16], "A's K \\(32\\) must equal B's K \\(64\\)"),
        ([2, 64, 32], [3, 32, 16], "do not broadcast"),
        ([2, 64, 32], [1, 2, 32, 16], "rank 3 but B"),
    ],
)
def test_matmul_mistakes(a_dims: list, b_dims: list, fragment: str) -> None:
    g = Graph()
    a, b = g.tensor(a_dims, name="a"), g.tensor(b_dims, name="b")
    with pytest.raises(GraphError, match=fragment) as info:
        g.matmul(a, b, name="mm")
    assert "matmul 'mm'" in str(info.value)


def test_matmul_needs_a_unit_stride_matrix_dim() -> None:
    g = Graph()
    a = g.tensor([1, 4, 4], strides=[64, 8, 2], name="a")
    with pytest.raises(GraphError, match="stride 1"):
        g.matmul(a, g.tensor([1, 4, 4]))


# -- pointwise ---------------------------------------------------------------------------------------


def test_pointwise_arity_is_derived_from_mode_names() -> None:
    assert pointwise_arity("add") == 2
    assert pointwise_arity("CMP_GT") == 2
    assert pointwise_arity("relu_bwd") == 2
    assert pointwise_arity("relu_fwd") == 1
    assert pointwise_arity("exp") == 1
    assert pointwise_arity("logical_not") == 1
    assert pointwise_arity("binary_select") == 3
    # every enumerator of the generated enum is classified
    assert set(POINTWISE_ARITY) == {m.name for m in raw.cudnnPointwiseMode_t}


def test_pointwise_broadcast_output_dims() -> None:
    g = Graph()
    x = g.tensor([2, 8, 4, 4])
    b = g.tensor([1, 8, 1, 1])
    assert g.add(x, b).dims == (2, 8, 4, 4)
    assert g.mul(b, x).dims == (2, 8, 4, 4)
    c = g.tensor([2, 1, 4, 1])
    assert g.maximum(b, c).dims == (2, 8, 4, 1)


def test_pointwise_mistakes_name_op_and_tensor() -> None:
    g = Graph()
    x = g.tensor([2, 8, 4, 4], name="x")
    b = g.tensor([2, 3, 4, 4], name="b")
    with pytest.raises(GraphError) as info:
        g.add(x, b, name="bias_add")
    text = str(info.value)
    assert "add 'bias_add'" in text and "'b'" in text and "[2, 3, 4, 4]" in text
    with pytest.raises(GraphError, match="takes 2 input tensor"):
        g.pointwise("add", x)
    with pytest.raises(GraphError, match="takes 1 input tensor"):
        g.pointwise("relu_fwd", x, x)
    with pytest.raises(GraphError, match="does not broadcast"):
        g.binary_select(g.tensor([2, 8, 4, 4], dtype="bool"), x, g.tensor([1, 8, 4, 4]))
    with pytest.raises(GraphError, match="unknown pointwise mode 'frobnicate'"):
        g.pointwise("frobnicate", x)
    with pytest.raises(GraphError, match="alpha2 applies to binary modes"):
        g.relu(x, alpha2=2.0)
    other = Graph("other")
    with pytest.raises(GraphError, match="belongs to graph 'other'"):
        g.add(x, other.tensor([2, 8, 4, 4]))
    with pytest.raises(TypeError, match="must be a Tensor"):
        g.relu(np.zeros((2, 8, 4, 4)))


# -- reduction ----------------------------------------------------------------------------------------


def test_reduction_dims() -> None:
    g = Graph()
    x = g.tensor([8, 64, 32, 32], fmt="NHWC")
    assert g.reduction(x, axes=[0, 2, 3]).dims == (1, 64, 1, 1)
    assert g.reduction(x, op="max", axes=[-1]).dims == (8, 64, 32, 1)
    assert g.reduction(x, out_dims=[1, 1, 1, 1]).dims == (1, 1, 1, 1)
    with pytest.raises(GraphError, match="out_dims\\[1\\] is 32"):
        g.reduction(x, out_dims=[1, 32, 1, 1])
    with pytest.raises(GraphError, match="exactly one of"):
        g.reduction(x)
    with pytest.raises(GraphError, match="axis 4 is out of range"):
        g.reduction(x, axes=[4])
    with pytest.raises(GraphError, match="unknown reduction operator"):
        g.reduction(x, op="median", axes=[0])


# -- resolution: virtual intermediates and dtypes --------------------------------------------------------


def test_intermediates_become_virtual_fp32_and_outputs_take_the_input_dtype() -> None:
    g, t = _conv_bias_relu()
    assert t["conv"].is_virtual is None and t["conv"].dtype is None  # decided at finalize
    g.signature()
    assert t["conv"].is_virtual is True and t["conv"].dtype == np.float32
    assert t["biased"].is_virtual is True and t["biased"].dtype == np.float32
    assert t["y"].is_virtual is False and t["y"].dtype == np.float16
    assert [x.name for x in g.outputs] == ["relu.y"]
    assert {x.name for x in g.inputs} == {"x", "w", "bias"}
    assert t["y"].format == "NHWC"


def test_marked_intermediate_output_and_io_dtype() -> None:
    g = Graph(io_dtype="float32")
    x = g.tensor([1, 8, 4, 4], dtype="float16")
    mid = g.relu(x)
    mid.set_output()
    out = g.sigmoid(mid)
    g.signature()
    assert mid.is_virtual is False and mid.dtype == np.float32
    assert out.is_virtual is False and out.dtype == np.float32
    with pytest.raises(GraphError, match="finalized"):
        g.relu(out)
    with pytest.raises(GraphError, match="finalized"):
        out.set_output(False)


def test_out_dtype_and_out_tensor() -> None:
    g = Graph()
    x = g.tensor([1, 8, 4, 4], dtype="float16")
    y = g.relu(x, out_dtype="bfloat16")
    assert str(y.dtype) == "bfloat16"
    out = g.tensor([1, 8, 4, 4], fmt="NHWC", dtype="float32", name="out")
    z = g.sigmoid(y, out=out)
    assert z is out and out.producer is not None
    with pytest.raises(GraphError, match="already written"):
        g.tanh(y, out=out)
    wrong = g.tensor([1, 8, 2, 2], name="wrong")
    with pytest.raises(GraphError, match="has dims \\[1, 8, 2, 2\\] but the operation produces"):
        g.tanh(y, out=wrong)


def test_resolution_errors() -> None:
    with pytest.raises(GraphError, match="no operations"):
        Graph("empty").signature()
    g = Graph()
    x = g.tensor([1, 2, 3])
    g.tensor([1, 2, 3], name="unused")
    g.relu(x)
    with pytest.raises(GraphError, match="'unused' is not used"):
        g.signature()
    g2 = Graph()
    g2.relu(g2.tensor([1, 2, 3], virtual=True, name="v"))
    with pytest.raises(GraphError, match="virtual but no operation writes it"):
        g2.signature()


def test_overlapping_output_strides_are_refused() -> None:
    g = Graph()
    x = g.tensor([2, 4, 4])
    out = g.tensor([2, 4, 4], strides=[4, 1, 1], name="out")  # rows overlap
    g.relu(x, out=out)
    with pytest.raises(GraphError, match="overlapping strides"):
        g.signature()


def test_key_is_a_function_of_structure() -> None:
    g1, _ = _conv_bias_relu()
    g2, _ = _conv_bias_relu()
    g3, _ = _conv_bias_relu(fmt="NCHW")
    g4, _ = _conv_bias_relu(dtype="float32")
    assert g1.key() == g2.key()
    assert len({g1.key(), g3.key(), g4.key()}) == 3


def test_describe_and_repr() -> None:
    g, _ = _conv_bias_relu()
    text = g.describe()
    assert "Graph 'conv_bias_relu': 3 operation(s), 6 tensor(s)" in text
    assert "conv_fprop 'conv'" in text and "pre_padding=[1, 1]" in text
    assert "'x' #1 [1, 32, 16, 16] float16 NHWC" in text
    assert "building" in repr(g)


# -- finalization against cuDNN --------------------------------------------------------------------------


def _conv(kind: str, nd: int, fmt: str, dtype: str = "float16") -> Graph:
    g = Graph(f"{kind}_{nd}d_{fmt}")
    sp, small, k = [9] * nd, [5] * nd, [3] * nd
    if kind == "fprop":
        g.conv_fprop(
            g.tensor([2, 8, *sp], fmt=fmt, dtype=dtype),
            g.tensor([16, 8, *k], fmt=fmt, dtype=dtype),
            padding=1,
            stride=2,
        )
    elif kind == "dgrad":
        g.conv_dgrad(
            g.tensor([2, 16, *small], fmt=fmt, dtype=dtype),
            g.tensor([16, 8, *k], fmt=fmt, dtype=dtype),
            padding=1,
            stride=2,
            dx_dims=[2, 8, *sp],
        )
    else:
        g.conv_wgrad(
            g.tensor([2, 8, *sp], fmt=fmt, dtype=dtype),
            g.tensor([2, 16, *small], fmt=fmt, dtype=dtype),
            padding=1,
            stride=2,
            dw_dims=[16, 8, *k],
        )
    return g


@needs_libcuda
@pytest.mark.parametrize("kind", ["fprop", "dgrad", "wgrad"])
@pytest.mark.parametrize(("nd", "fmt"), [(2, "NCHW"), (2, "NHWC"), (3, "NCDHW"), (3, "NDHWC")])
def test_convolutions_finalize_and_have_heuristic_candidates(kind: str, nd: int, fmt: str) -> None:
    g = _conv(kind, nd, fmt)
    desc = g.finalize()
    assert desc.is_finalized and g.is_finalized
    assert g.engine_count > 0
    res = g.heuristics("a")
    assert res.returned <= res.count
    assert res.count > 0 or not heuristics_run_here()


@needs_libcuda
def test_finalized_tensor_descriptors_match_the_graph() -> None:
    g, t = _conv_bias_relu()
    g.finalize()
    descs = g._descriptors["tensors"]
    for tensor in g.tensors:
        d = descs[tensor.uid]
        assert d.get("TENSOR_DIMENSIONS") == list(tensor.dims)
        assert d.get("TENSOR_STRIDES") == list(tensor.strides)
        assert d.get("TENSOR_UNIQUE_ID") == tensor.uid
        assert d.get("TENSOR_IS_VIRTUAL") is bool(tensor.is_virtual)
    assert descs[t["y"].uid].get("TENSOR_DATA_TYPE") is raw.cudnnDataType_t.HALF
    assert descs[t["conv"].uid].get("TENSOR_DATA_TYPE") is raw.cudnnDataType_t.FLOAT


@needs_libcuda
@pytest.mark.parametrize("mode", sorted(POINTWISE_ARITY))
def test_every_pointwise_mode_finalizes(mode: str) -> None:
    g = Graph(mode)
    inputs = [g.tensor([2, 8, 4, 4], name=f"in{i}") for i in range(POINTWISE_ARITY[mode])]
    kwargs = {"axis": 1, "out_dtype": "int32"} if mode == "GEN_INDEX" else {}
    g.pointwise(mode, *inputs, **kwargs)
    since = raw.ENUMERATOR_SINCE[f"CUDNN_POINTWISE_{mode}"]
    if pycudnn.version_tuple() < since:  # a mode newer than the loaded cuDNN: refused before C
        with pytest.raises(pycudnn.UnsupportedByLibraryError, match=f"CUDNN_POINTWISE_{mode}"):
            g.finalize()
        return
    assert g.finalize().is_finalized


@needs_libcuda
@pytest.mark.parametrize("op", ["add", "mul", "min", "max", "amax"])
def test_reductions_finalize(op: str) -> None:
    g = Graph(op)
    g.reduction(g.tensor([8, 64, 32, 32], fmt="NHWC"), op=op, axes=[0, 2, 3])
    assert g.finalize().is_finalized


@needs_libcuda
@pytest.mark.parametrize("op", ["avg", "norm2"])
def test_unsupported_reductions_name_the_operator(op: str) -> None:
    g = Graph(op)
    g.reduction(g.tensor([8, 64, 32, 32], fmt="NHWC"), op=op, axes=[0, 2, 3], name="r")
    with pytest.raises(pycudnn.CudnnNotSupportedError, match=f"reduction 'r'.*operator {op}"):
        g.finalize()
    assert not g.is_finalized


@needs_libcuda
def test_fusions_finalize() -> None:
    # Mode A counts configs for these fusions with or without a GPU where heuristics run here
    # (see versioned.py); the engine count says they have engines either way.
    counts = heuristics_run_here()
    g, _ = _conv_bias_relu()
    assert g.finalize().is_finalized and g.engine_count > 0
    assert g.heuristics("a").count > 0 or not counts

    m = Graph("matmul_bias_gelu")
    a = m.tensor([1, 64, 32], dtype="float16")
    b = m.tensor([1, 32, 16], dtype="float16")
    bias = m.tensor([1, 1, 16], dtype="float16")
    m.gelu(m.add(m.matmul(a, b), bias))
    assert m.finalize().is_finalized and m.engine_count > 0
    assert m.heuristics("a").count > 0 or not counts

    s = Graph("scale_bias_relu")
    x = s.tensor([2, 16, 8, 8], fmt="NHWC", dtype="float16")
    scale = s.tensor([1, 16, 1, 1], fmt="NHWC", dtype="float16")
    shift = s.tensor([1, 16, 1, 1], fmt="NHWC", dtype="float16")
    s.relu(s.bias(s.scale(x, scale), shift))
    assert s.finalize().is_finalized and s.engine_count > 0


@needs_libcuda
def test_by_value_scalar_finalizes() -> None:
    g = Graph()
    x = g.tensor([2, 16, 8, 8])
    two = g.scalar(2.0)
    y = g.mul(x, two)
    g.finalize()
    assert two.by_value and y.dims == (2, 16, 8, 8)
    desc = g._descriptors["tensors"][two.uid]
    assert desc.get("TENSOR_IS_BY_VALUE", attr_type="BOOLEAN", many=False) is True


@needs_libcuda
def test_cudnn_refusal_names_the_operation() -> None:
    # GEN_INDEX needs an axis; the graph leaves that judgement to cuDNN, whose reason and the
    # operation's name must both reach the caller.
    g = Graph()
    g.pointwise("gen_index", g.tensor([1, 4, 8, 8]), name="idx")
    with pytest.raises(pycudnn.CudnnBadParamError) as info:
        g.finalize()
    assert "gen_index 'idx'" in info.value.message
    if pycudnn.version_tuple() >= (9, 9):  # 9.0 says only "finalize_internal()" (measured)
        assert "axis" in info.value.message  # cuDNN's own explanation
    assert not g.is_finalized


@needs_libcuda
def test_build_without_gpu_or_device_properties_explains_why() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU: plans build")
    from pycudnn.plan import GraphNotSupportedError
    from pycudnn.plan.report import NoTargetError

    g, _ = _conv_bias_relu()
    with pytest.raises(NoTargetError) as info:
        g.build(cache=False)
    err = info.value
    # still a GraphNotSupportedError (status 3000) for callers that catch that
    assert isinstance(err, GraphNotSupportedError) and err.status == 3000
    text = str(err)
    # the cause, not "no engine supports graph": refused before cuDNN, whatever its version
    assert text.startswith("cannot plan graph 'conv_bias_relu': no GPU is usable here")
    assert "device_properties=" in text and "no engine supports" not in text
    assert err.report.heuristics == [] and "device_properties=" in err.report.device


@needs_libcuda
def test_close_drops_descriptors_once_unused() -> None:
    import gc
    import weakref

    from pycudnn.backend import BackendDescriptor

    g, _ = _conv_bias_relu()
    op_graph = g.finalize()
    user = BackendDescriptor("ENGINEHEUR")  # something built from the graph, like a plan
    user.set("ENGINEHEUR_OPERATION_GRAPH", op_graph)
    ref = weakref.ref(op_graph)
    del op_graph
    g.close()
    assert not g.is_finalized and g.closed
    gc.collect()
    assert ref() is not None and not ref().closed  # still needed: not destroyed
    del user
    gc.collect()
    assert ref() is None  # released once nothing needs it


def test_a_closed_graph_refuses_further_use_and_says_so() -> None:
    from pycudnn import ClosedError

    g, _ = _conv_bias_relu()
    g.close()
    g.close()  # idempotent
    assert "closed" in repr(g)
    for use in (g.finalize, g.key, lambda: g.operation_graph, lambda: g.heuristics("a")):
        with pytest.raises(ClosedError, match="graph 'conv_bias_relu' is closed"):
            use()
    with pytest.raises(ClosedError, match="is closed"):
        g.tensor([1, 1, 1, 1], name="more")
    assert g.tensors and "conv" in g.describe()  # reading what it was still works
    with Graph("ctx") as h:
        h.relu(h.tensor([1, 4, 1, 1], name="a"))
    assert h.closed


# -- properties (independent computations) -----------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 20),
    k=st.integers(1, 5),
    pre=st.integers(0, 3),
    post=st.integers(0, 3),
    stride=st.integers(1, 4),
    dil=st.integers(1, 3),
)
def test_conv_output_size_counts_the_window_positions(
    *, size: int, k: int, pre: int, post: int, stride: int, dil: int
) -> None:
    # Count, by enumeration, the window start positions whose last tap stays inside the padded input.
    padded = size + pre + post
    positions = sum(1 for s in range(0, padded, stride) if s + dil * (k - 1) <= padded - 1)
    g = Graph()
    x = g.tensor([1, 2, size, 1], dtype="float32")
    w = g.tensor([3, 2, k, 1], dtype="float32")
    kwargs = {
        "padding": [pre, 0],
        "post_padding": [post, 0],
        "stride": [stride, 1],
        "dilation": [dil, 1],
    }
    if positions == 0:
        with pytest.raises(GraphError, match="the filter does not fit"):
            g.conv_fprop(x, w, **kwargs)
    else:
        assert g.conv_fprop(x, w, **kwargs).dims == (1, 3, positions, 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.booleans(), st.booleans()), min_size=3, max_size=6))
def test_pointwise_broadcast_agrees_with_numpy(spec: list[tuple[int, bool, bool]]) -> None:
    a_dims = [1 if one else n for n, one, _ in spec]
    b_dims = [1 if one else n for n, _, one in spec]
    g = Graph()
    a, b = g.tensor(a_dims), g.tensor(b_dims)
    assert g.add(a, b).dims == np.broadcast_shapes(tuple(a_dims), tuple(b_dims))


# -- a failed operation call leaves the graph as it was --------------------------------------------
def _conv_inputs(g: Graph) -> tuple[object, object]:
    x = g.tensor([1, 8, 6, 6], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([8, 8, 3, 3], fmt="NHWC", dtype="float16", name="w")
    return x, w


def test_a_failed_operation_adds_nothing_to_the_graph() -> None:
    failed = Graph("g")
    x, w = _conv_inputs(failed)
    for bad in ({"compute_dtype": "flot32"}, {"out_dtype": "flot16"}, {"padding": (1, 2, 3)}):
        with pytest.raises((TypeError, ValueError, GraphError)):
            failed.conv_fprop(x, w, **bad)
    failed.relu(failed.conv_fprop(x, w, padding=1))

    clean = Graph("g")
    x, w = _conv_inputs(clean)
    clean.relu(clean.conv_fprop(x, w, padding=1))

    # Same tensors, uids and operation names as a graph that never saw the failed calls.
    assert failed.describe() == clean.describe()
    assert failed.key() == clean.key()
    assert [op.name for op in failed.operations] == ["conv_fprop0", "relu_fwd0"]


def test_a_failed_operation_leaves_its_out_tensor_as_it_was() -> None:
    g = Graph("g")
    x, w = _conv_inputs(g)
    y = g.tensor([1, 8, 6, 6], fmt="NHWC", dtype="float32", name="y")
    # out_dtype is applied to ``out`` before compute_dtype is checked.
    with pytest.raises((TypeError, ValueError)):
        g.conv_fprop(x, w, padding=1, out=y, out_dtype="float16", compute_dtype="flot32")
    assert y.dtype == np.float32 and y.producer is None and not x.consumers and not w.consumers
    g.conv_fprop(x, w, padding=1, out=y)
    assert y.producer is not None and y.producer.name == "conv_fprop0"


def test_describe_shows_what_building_would_decide_before_it_is_built() -> None:
    # The documented defaults: an intermediate takes the graph's intermediate_dtype and is
    # virtual; an output takes the dtype of the caller's tensor it is computed from.
    g = Graph("g", intermediate_dtype="float32")
    x, w = _conv_inputs(g)
    y = g.relu(g.conv_fprop(x, w, padding=1))
    before = g.describe()
    assert "'conv_fprop0.y' #3 [1, 8, 6, 6] float32 NHWC (virtual; decided at build)" in before
    assert "'relu_fwd0.y' #4 [1, 8, 6, 6] float16 NHWC (output; decided at build)" in before
    assert y.dtype is None  # still open: the graph may change before it is built
    g._resolve()
    after = g.describe()
    assert "'relu_fwd0.y' #4 [1, 8, 6, 6] float16 NHWC (output)" in after
    assert "decided at build" not in after
