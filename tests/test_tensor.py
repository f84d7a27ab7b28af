"""Legacy descriptors and operand validation against the real cuDNN (CPU tier: no GPU needed).

Expected values come from the seeds' definitions, the headers and the textbook formulas, computed
here independently of the code under test.
"""

from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pycudnn
from _nvbind.arrays import ArrayView
from pycudnn import layout
from pycudnn.tensor import (
    ActivationDescriptor,
    ConvolutionDescriptor,
    FilterDescriptor,
    OpTensorDescriptor,
    PoolingDescriptor,
    ReduceTensorDescriptor,
    TensorCoreWarning,
    TensorDescriptor,
    check_operand,
)
from pycudnn.tensor import _common as tensor_common

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def hand_packed(dims: tuple[int, ...], order: str, logical: str) -> tuple[int, ...]:
    """Packed strides written out from the seed's rule: last letter stride 1, then products."""
    strides = {}
    step = 1
    for letter in reversed(order):
        strides[letter] = step
        step *= dims[logical.index(letter)]
    return tuple(strides[letter] for letter in logical)


# -- layouts through real descriptors ---------------------------------------------------------

SEED_LAYOUTS = [
    ((1, 64, 5, 4), "NCHW", "NCHW"),
    ((1, 64, 5, 4), "NHWC", "NCHW"),
    ((2, 3, 8, 8), "NHWC", "NCHW"),
    ((2, 3, 5, 7), "CHWN", "NCHW"),
    ((2, 3, 4, 5, 6), "NCDHW", "NCDHW"),
    ((2, 3, 4, 5, 6), "NDHWC", "NCDHW"),
    ((2, 3, 4, 5, 6), "CDHWN", "NCDHW"),
    ((4, 16, 8), "BMN", "BMN"),
    ((4, 16, 8), "BNM", "BMN"),
]


@pytest.mark.parametrize(("dims", "fmt", "logical"), SEED_LAYOUTS)
def test_format_strides_read_back_from_cudnn(dims: tuple[int, ...], fmt: str, logical: str) -> None:
    with TensorDescriptor(dims, fmt=fmt) as desc:
        expected = hand_packed(dims, fmt, logical)
        assert desc.strides == expected
        assert desc.strides == layout.packed_strides(dims, fmt)
        assert desc.dims == dims
        assert desc.nbdims == len(dims)
        assert desc.size_in_bytes == math.prod(dims) * 4
        assert desc.cudnn_size_in_bytes == math.prod(dims) * 4
        assert desc.fmt == fmt


def test_nhwc_through_the_format_setter_matches_the_reference_observation() -> None:
    # cudnnSetTensorNdDescriptorEx(NHWC) on [2,3,8,8] was observed to give [192, 1, 24, 3].
    desc = TensorDescriptor((2, 3, 8, 8), fmt="NHWC")
    assert desc.strides == (192, 1, 24, 3)
    assert desc.cudnn_data_type == pycudnn.raw.cudnnDataType_t.FLOAT


def test_seed_matmul_layouts() -> None:
    b, m, n = 3, 5, 7
    assert TensorDescriptor((b, m, n), fmt="row_major").strides == (m * n, n, 1)
    assert TensorDescriptor((b, m, n), fmt="col_major").strides == (m * n, 1, m)


def test_default_layout_is_row_major_and_strides_round_trip() -> None:
    assert TensorDescriptor((2, 3, 4)).strides == (12, 4, 1)
    gappy = (200, 50, 10, 2)
    desc = TensorDescriptor((2, 3, 4, 5), gappy, np.float32)
    assert desc.strides == gappy
    # Bytes from the first to one past the last element: (1 + sum((d-1)*s)) * itemsize.
    span = (1 + 1 * 200 + 2 * 50 + 3 * 10 + 4 * 2) * 4
    assert desc.size_in_bytes == span == desc.cudnn_size_in_bytes


def test_explicit_strides_and_fmt_must_agree() -> None:
    assert TensorDescriptor((2, 3, 8, 8), (192, 1, 24, 3), fmt="NHWC").strides == (192, 1, 24, 3)
    with pytest.raises(ValueError, match="disagree"):
        TensorDescriptor((2, 3, 8, 8), (192, 64, 8, 1), fmt="NHWC")


@settings(max_examples=25, deadline=None)
@given(
    st.integers(3, 6).flatmap(
        lambda r: st.tuples(
            st.lists(st.integers(1, 5), min_size=r, max_size=r),
            st.permutations("ABCDEF"[:r]),
        )
    )
)
def test_generic_formats_round_trip(case: tuple[list[int], list[str]]) -> None:
    dims, order = tuple(case[0]), "".join(case[1])
    logical = "ABCDEF"[: len(dims)]
    with TensorDescriptor(dims, fmt=order) as desc:
        assert desc.strides == hand_packed(dims, order, logical)
        assert desc.size_in_bytes == desc.cudnn_size_in_bytes == math.prod(dims) * 4


# -- data types -------------------------------------------------------------------------------

ACCEPTED = [
    (np.float32, "FLOAT", 4),
    (np.float64, "DOUBLE", 8),
    (np.float16, "HALF", 2),
    (ml_dtypes.bfloat16, "BFLOAT16", 2),
    (np.int8, "INT8", 1),
    (np.uint8, "UINT8", 1),
    (np.int32, "INT32", 4),
    ("bf16", "BFLOAT16", 2),
    ("half", "HALF", 2),
]


@pytest.mark.parametrize(("dtype", "name", "itemsize"), ACCEPTED)
def test_accepted_dtypes(dtype: object, name: str, itemsize: int) -> None:
    desc = TensorDescriptor((2, 3, 4, 5), dtype=dtype)
    assert desc.cudnn_data_type == getattr(pycudnn.raw.cudnnDataType_t, name)
    assert desc.dtype.itemsize == itemsize
    assert desc.size_in_bytes == desc.cudnn_size_in_bytes == 120 * itemsize


@pytest.mark.parametrize(
    "dtype",
    [np.int64, np.bool_, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.complex64, np.uint32],
)
def test_types_the_legacy_descriptor_rejects_are_refused_in_python(dtype: object) -> None:
    with pytest.raises(TypeError, match="legacy"):
        TensorDescriptor((2, 3, 4, 5), dtype=dtype)


def test_unknown_dtype_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        TensorDescriptor((2, 3, 4, 5), dtype="not-a-type")
    with pytest.raises(TypeError):
        TensorDescriptor((2, 3, 4, 5), dtype=None)


# -- vectorised layouts -----------------------------------------------------------------------


def test_int8x32_layout() -> None:
    n, c, h, w = 2, 64, 5, 7
    desc = TensorDescriptor((n, c, h, w), dtype=np.int8, fmt="NC/32HW32")
    assert desc.cudnn_data_type == pycudnn.raw.cudnnDataType_t.INT8x32
    assert desc.dims == (n, c, h, w)
    assert desc.vector_count == 32
    assert desc.dtype == np.int8
    assert desc.size_in_bytes == n * c * h * w  # one byte per element
    # The data lives in the packed array [N, C/32, H, W, 32] (seed: "N x (C/32) x H x W x 32").
    assert desc.array_shape == (n, c // 32, h, w, 32)
    assert desc.array_strides == (c // 32 * h * w * 32, h * w * 32, w * 32, 32, 1)


def test_vectorised_dtype_strings() -> None:
    d4 = TensorDescriptor((1, 8, 3, 3), dtype="int8x4")
    assert d4.cudnn_data_type == pycudnn.raw.cudnnDataType_t.INT8x4 and d4.fmt == "NC/4HW4"
    u4 = TensorDescriptor((1, 8, 3, 3), dtype="uint8x4")
    assert u4.cudnn_data_type == pycudnn.raw.cudnnDataType_t.UINT8x4 and u4.dtype == np.uint8
    d32 = TensorDescriptor((1, 32, 3, 3), dtype="int8x32")
    assert d32.size_in_bytes == 32 * 9


@pytest.mark.parametrize(
    ("dims", "kwargs", "error", "match"),
    [
        ((2, 3, 5, 7), {"dtype": "int8x32"}, ValueError, "multiple of 32"),
        ((2, 6, 5, 7), {"dtype": np.int8, "fmt": "NC/4HW4"}, ValueError, "multiple of 4"),
        ((2, 32, 5, 7), {"dtype": np.uint8, "fmt": "NC/32HW32"}, TypeError, "int8"),
        ((2, 32, 5, 7), {"dtype": np.float32, "fmt": "NC/32HW32"}, TypeError, "int8"),
        ((2, 32, 5, 7), {"dtype": "int8x32", "fmt": "NHWC"}, ValueError, "vectorised"),
        ((2, 32, 5, 7), {"dtype": "int8x4", "fmt": "NC/32HW32"}, ValueError, "vectors of 4"),
    ],
)
def test_vectorised_errors(dims: tuple[int, ...], kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        TensorDescriptor(dims, **kwargs)


def test_vectorised_layouts_take_no_strides() -> None:
    with pytest.raises(ValueError, match="strides"):
        TensorDescriptor((1, 32, 2, 2), (128, 4, 2, 1), dtype=np.int8, fmt="NC/32HW32")


# -- argument errors --------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [(4, 5), (2,) * 9, (), (7,)])
def test_rank_outside_3_to_8_is_refused(dims: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="3 to 8"):
        TensorDescriptor(dims)


@pytest.mark.parametrize("dims", [(2, 0, 4, 5), (2, -3, 4, 5)])
def test_non_positive_extents_are_refused(dims: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"dims\[1\]"):
        TensorDescriptor(dims)


def test_negative_strides_are_kept() -> None:
    # cuDNN's descriptor format takes negative strides (only its routines refuse them): they are
    # set as given, read back unchanged, and the size is the span 1 + sum((dim - 1) * |stride|)
    # elements, here 1 + 1*12 + 1*12 + 2*4 + 3*1 = 36 floats.
    desc = TensorDescriptor((2, 2, 3, 4), (-12, 12, 4, 1))
    assert desc.strides == (-12, 12, 4, 1)
    assert desc.size_in_bytes == 36 * 4 == desc.cudnn_size_in_bytes
    assert TensorDescriptor((1, 2, 3, 4), (12, -12, 4, 1)).strides == (12, -12, 4, 1)
    # A mirrored dim is not an overlap: every address is still reached once.
    assert not TensorDescriptor((2, 3, 4, 5), (60, 20, 5, -1), output=True).is_overlapping
    with pytest.raises(ValueError, match=r"strides\[3\] = -2147483649 is below"):
        TensorDescriptor((2, 3, 4, 1), (12, 4, 1, -(2**31) - 1))


def test_stride_errors() -> None:
    with pytest.raises(ValueError, match="zero stride"):
        TensorDescriptor((2, 3, 4, 5), (60, 20, 5, 0))
    # A zero stride on an extent-1 dim addresses nothing and is fine.
    assert TensorDescriptor((2, 1, 4, 5), (20, 0, 5, 1)).dims == (2, 1, 4, 5)
    with pytest.raises(ValueError, match="3 entries"):
        TensorDescriptor((2, 3, 4, 5), (20, 5, 1))
    with pytest.raises(ValueError, match="largest"):
        TensorDescriptor((2, 3, 4), (2**31, 4, 1))


def test_wrong_types() -> None:
    with pytest.raises(TypeError):
        TensorDescriptor("NCHW")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TensorDescriptor((2.0, 3, 4))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TensorDescriptor((True, 3, 4))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TensorDescriptor((2, 3, 4), strides=(12, "4", 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TensorDescriptor((2, 3, 4), fmt=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown format"):
        TensorDescriptor((2, 3, 4, 5), fmt="NCWQ")
    with pytest.raises(ValueError, match="format"):
        TensorDescriptor((2, 3, 4), fmt="NCHW")  # 4 letters for 3 dims
    with pytest.raises(ValueError, match="largest"):
        TensorDescriptor((2**31, 3, 4))


def test_output_tensors_may_not_overlap() -> None:
    # stride[i-1] < stride[i]*dim[i]: H and W overlap (the seed's example, strides 2 < 4*1).
    dims, strides = (1, 2, 3, 4), (12, 6, 2, 1)
    desc = TensorDescriptor(dims, strides)  # fine as an input
    assert desc.is_overlapping
    with pytest.raises(ValueError, match="overlap"):
        desc.check_output()
    with pytest.raises(ValueError, match="overlap"):
        TensorDescriptor(dims, strides, output=True)
    ok = TensorDescriptor(dims, fmt="NHWC", output=True)
    assert not ok.is_overlapping
    ok.check_output()


def test_close_with_and_closed_errors() -> None:
    desc = TensorDescriptor((2, 3, 4, 5))
    assert "dims=(2, 3, 4, 5)" in repr(desc) and "float32" in repr(desc)
    with desc as same:
        assert same is desc
    assert desc.closed
    desc.close()  # idempotent
    assert "closed" in repr(desc)
    for read in (lambda: desc.dims, lambda: desc.strides, lambda: desc.size_in_bytes, desc.key):
        with pytest.raises(pycudnn.ClosedError):
            read()
    with pytest.raises(ValueError):  # ClosedError is a ValueError
        _ = desc.nbdims
    with pytest.raises(pycudnn.ClosedError), desc:
        pass


# -- filters ----------------------------------------------------------------------------------


def test_filter_descriptor_round_trip() -> None:
    k, c, r, s = 8, 3, 5, 3
    w = FilterDescriptor((k, c, r, s), np.float16, fmt="NHWC")
    assert w.dims == (k, c, r, s)
    assert w.fmt == "NHWC"
    assert w.dtype == np.float16
    assert w.strides == (r * s * c, 1, s * c, c)  # KRSC packed
    assert w.size_in_bytes == k * c * r * s * 2
    w2 = FilterDescriptor((k, c, 2, r, s))
    assert w2.fmt == "NCHW"
    assert w2.strides == (c * 2 * r * s, 2 * r * s, r * s, s, 1)
    assert "FilterDescriptor" in repr(w2)


def test_filter_errors() -> None:
    with pytest.raises(ValueError, match="3 to 8"):
        FilterDescriptor((3, 3))
    with pytest.raises(ValueError, match="NCHW"):
        FilterDescriptor((8, 3, 3, 3), fmt="CHWN")
    with pytest.raises(TypeError, match="legacy"):
        FilterDescriptor((8, 3, 3, 3), np.int64)
    with pytest.raises(ValueError, match="positive"):
        FilterDescriptor((8, 0, 3, 3))
    with pytest.raises(TypeError):
        FilterDescriptor((8, 3, 3, 3), fmt=1)  # type: ignore[arg-type]
    w = FilterDescriptor((8, 3, 3, 3))
    w.close()
    with pytest.raises(pycudnn.ClosedError):
        _ = w.dims


@pytest.mark.parametrize(
    ("args", "cudnn_type", "fmt", "vector"),
    [
        (("int8", "NC/32HW32"), "INT8x32", "NC/32HW32", 32),
        (("int8x32",), "INT8x32", "NC/32HW32", 32),
        (("int8", "nc/4hw4"), "INT8x4", "NC/4HW4", 4),
        (("int8x4",), "INT8x4", "NC/4HW4", 4),
        (("uint8x4", "NC/4HW4"), "UINT8x4", "NC/4HW4", 4),
    ],
)
def test_vectorized_filter_descriptor(
    args: tuple[str, ...], cudnn_type: str, fmt: str, vector: int
) -> None:
    k, c, r, s = 64, 64, 3, 3
    with FilterDescriptor((k, c, r, s), *args) as w:
        # Read back from cuDNN: the vector type and CUDNN_TENSOR_NCHW_VECT_C, dims unchanged.
        dims, data_type, tensor_format = w._read_back()
        assert dims == (k, c, r, s)
        assert data_type == int(getattr(pycudnn._bindings, f"CUDNN_DATA_{cudnn_type}"))
        assert tensor_format == int(pycudnn._bindings.CUDNN_TENSOR_NCHW_VECT_C)
        assert w.fmt == fmt and w.vector_count == vector
        assert w.dtype == (np.uint8 if cudnn_type.startswith("U") else np.int8)
        # The seed's reading of NC/xHWx: K x (C/x) x R x S x x, one byte per element.
        assert w.array_shape == (k, c // vector, r, s, vector)
        assert w.array_strides == (c * r * s, r * s * vector, s * vector, vector, 1)
        assert w.strides == (c // vector * r * s, r * s, s, 1)  # whole vectors
        assert w.size_in_bytes == k * c * r * s
        assert cudnn_type.lower() in repr(w) and fmt in repr(w)


def test_vectorized_filters_give_the_convolution_output_dims() -> None:
    # The legacy output-dim query works on INT8x32 operands; expected dims from the convolution
    # arithmetic: (H + 2*pad - R) // stride + 1 = (8 + 2 - 3) // 1 + 1 = 8, and K channels.
    x = TensorDescriptor((2, 64, 8, 8), dtype="int8", fmt="NC/32HW32")
    w = FilterDescriptor((96, 64, 3, 3), "int8", "NC/32HW32")
    conv = ConvolutionDescriptor((1, 1), compute_type=np.int32)
    assert conv.output_dims(x, w) == (2, 96, 8, 8)
    assert conv.tensor_core_issues(x, w) == ["the batch size N = 2 is not a multiple of 8"]


def test_vectorized_filter_errors() -> None:
    # cuDNN itself would round C = 48 down to 32 without a word (probed on 9.28).
    with pytest.raises(ValueError, match=r"C \(dims\[1\]\) to be a multiple of 32, got C = 48"):
        FilterDescriptor((64, 48, 3, 3), "int8", "NC/32HW32")
    with pytest.raises(TypeError, match=r"only for int8.*and uint8"):
        FilterDescriptor((64, 64, 3, 3), "uint8", "NC/32HW32")
    with pytest.raises(TypeError, match="float32 in NC/4HW4"):
        FilterDescriptor((64, 64, 3, 3), np.float32, "NC/4HW4")
    with pytest.raises(ValueError, match="vectors of 4, fmt 'NC/32HW32' of 32"):
        FilterDescriptor((64, 64, 3, 3), "int8x4", "NC/32HW32")
    with pytest.raises(ValueError, match="vectorised type; it needs fmt NC/32HW32"):
        FilterDescriptor((64, 64, 3, 3), "int8x32", "NHWC")
    with pytest.raises(ValueError, match="needs 4 dims"):
        FilterDescriptor((64, 64, 3, 3, 3), "int8", "NC/32HW32")
    # NC/1HW1 is NCHW (seed 002), so no vector type is involved.
    assert FilterDescriptor((8, 3, 3, 3), "int8", "NC/1HW1").fmt == "NCHW"


@pytest.mark.parametrize(("vectorized", "plain"), [("NC/1HW1", "NCHW"), ("NC/1DHW1", "NCDHW")])
def test_a_vector_of_one_is_the_plain_format(vectorized: str, plain: str) -> None:
    dims = (2, 3, 4, 5) if plain == "NCHW" else (2, 3, 4, 5, 6)
    for dtype in (np.float32, np.int8):
        with TensorDescriptor(dims, dtype=dtype, fmt=vectorized) as desc:
            assert desc.strides == layout.packed_strides(dims, plain)
            assert desc.vector_count == 1 and desc.array_shape == dims


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_int32_filters_are_refused_with_the_rule(fmt: str) -> None:
    # cuDNN refuses them with a bare CUDNN_STATUS_BAD_PARAM and no text; the refusal says why.
    with pytest.raises(TypeError, match=r"dtype=int32: cuDNN's filter descriptors .*not int32"):
        FilterDescriptor((8, 3, 3, 3), "int32", fmt=fmt)
    # The same type stays a valid tensor (and output) type.
    assert TensorDescriptor((2, 8, 3, 3), dtype=np.int32).dtype == np.int32


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "uint8"])
def test_every_other_legacy_type_makes_a_filter(dtype: str) -> None:
    with FilterDescriptor((8, 4, 3, 3), dtype, fmt="NHWC") as w:
        assert pycudnn.layout.is_fully_packed(w.dims, w.strides, "NHWC")


def test_deprecated_descriptors_warn_once_per_process() -> None:
    tensor_common._warned.discard("pycudnn.FilterDescriptor")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FilterDescriptor((8, 3, 3, 3))
        FilterDescriptor((8, 3, 3, 3))
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1
    assert "graph API" in str(deprecations[0].message)
    assert deprecations[0].filename == __file__  # points at the caller
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TensorDescriptor((2, 3, 4))  # not deprecated in cuDNN 9
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)]


# -- convolution ------------------------------------------------------------------------------


def conv_out(n: int, pad: int, k: int, stride: int, dilation: int) -> int:
    """Textbook output extent: floor((n + 2p - (d(k-1)+1)) / s) + 1."""
    return (n + 2 * pad - (dilation * (k - 1) + 1)) // stride + 1


CONV_CASES = [
    # x dims, w dims, pads, strides, dilations, groups
    ((2, 3, 11, 13), (8, 3, 3, 3), (1, 2), (2, 1), (1, 2), 1),
    ((1, 4, 32, 32), (16, 4, 5, 5), (2, 2), (1, 1), (1, 1), 1),
    ((3, 8, 9, 9), (8, 2, 3, 3), (0, 0), (3, 3), (2, 1), 4),
    ((2, 6, 7, 8, 9), (4, 6, 3, 3, 3), (1, 0, 1), (1, 2, 2), (1, 1, 2), 1),
    ((2, 4, 17), (8, 4, 5), (2,), (3,), (1,), 1),
]


@pytest.mark.parametrize(("xd", "wd", "pads", "strides", "dilations", "groups"), CONV_CASES)
def test_convolution_output_dims_match_the_formula(  # noqa: PLR0917 - parametrized
    xd: tuple[int, ...],
    wd: tuple[int, ...],
    pads: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    groups: int,
) -> None:
    conv = ConvolutionDescriptor(pads, strides, dilations, groups=groups)
    got = conv.output_dims(TensorDescriptor(xd), FilterDescriptor(wd))
    expected = (
        xd[0],
        wd[0],
        *(
            conv_out(xd[2 + i], pads[i], wd[2 + i], strides[i], dilations[i])
            for i in range(len(pads))
        ),
    )
    assert got == expected


def test_convolution_descriptor_round_trip() -> None:
    conv = ConvolutionDescriptor(
        (1, 2),
        (2, 1),
        (1, 3),
        mode="convolution",
        compute_type=np.float16,
        math_type="tensor_op_allow_conversion",
        groups=2,
    )
    assert conv.pads == (1, 2)
    assert conv.strides == (2, 1)
    assert conv.dilations == (1, 3)
    assert conv.mode == "convolution"
    assert conv.compute_type == np.float16
    assert conv.math_type == "tensor_op_allow_conversion"
    assert conv.groups == 2
    assert conv.spatial_dims == 2
    assert conv.uses_tensor_ops
    default = ConvolutionDescriptor((0, 0))
    assert (default.strides, default.dilations, default.mode) == (
        (1, 1),
        (1, 1),
        "cross_correlation",
    )
    assert default.math_type == "default" and default.groups == 1
    assert "ConvolutionDescriptor" in repr(default)


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        (((-1, 0),), {}, ValueError),
        (((0, 0), (0, 1)), {}, ValueError),
        (((0, 0), (1,)), {}, ValueError),
        (((0, 0), None, (1, 0)), {}, ValueError),
        (((),), {}, ValueError),
        (((0,) * 7,), {}, ValueError),
        (((0, 0),), {"mode": "deconvolution"}, ValueError),
        (((0, 0),), {"math_type": "fast"}, ValueError),
        (((0, 0),), {"groups": 0}, ValueError),
        (((0, 0),), {"compute_type": np.int64}, TypeError),
        ((("1", 0),), {}, TypeError),
        ((5,), {}, TypeError),
    ],
)
def test_convolution_descriptor_errors(args: tuple, kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        ConvolutionDescriptor(*args, **kwargs)


def test_convolution_output_dims_errors() -> None:
    conv = ConvolutionDescriptor((0, 0))
    x = TensorDescriptor((2, 3, 8, 8))
    with pytest.raises(ValueError, match="channels"):
        conv.output_dims(x, FilterDescriptor((4, 5, 3, 3)))
    with pytest.raises(ValueError, match="spans"):
        conv.output_dims(x, FilterDescriptor((4, 3, 9, 3)))
    with pytest.raises(ValueError, match="spatial"):
        conv.output_dims(TensorDescriptor((2, 3, 8, 8, 8)), FilterDescriptor((4, 3, 3, 3, 3)))
    with pytest.raises(ValueError, match="multiple of groups"):
        ConvolutionDescriptor((0, 0), groups=3).output_dims(
            TensorDescriptor((1, 6, 8, 8)), FilterDescriptor((4, 2, 3, 3))
        )
    with pytest.raises(TypeError):
        conv.output_dims(FilterDescriptor((4, 3, 3, 3)), FilterDescriptor((4, 3, 3, 3)))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        conv.output_dims(x, x)  # type: ignore[arg-type]
    w = FilterDescriptor((4, 3, 3, 3))
    w.close()
    with pytest.raises(pycudnn.ClosedError):
        conv.output_dims(x, w)
    conv.close()
    with pytest.raises(pycudnn.ClosedError):
        conv.output_dims(x, FilterDescriptor((4, 3, 3, 3)))


# -- Tensor Core advice -----------------------------------------------------------------------


def test_tensor_op_math_on_nchw_warns_with_the_rules_broken() -> None:
    conv = ConvolutionDescriptor((1, 1), math_type="tensor_op")
    with pytest.warns(TensorCoreWarning) as record:
        conv.output_dims(
            TensorDescriptor((2, 3, 8, 8), dtype=np.float16),
            FilterDescriptor((4, 3, 3, 3), np.float16),
        )
    # the legacy descriptors' deprecation notice comes first where this is their first use in
    # the process (a subset of the suite): the Tensor Core warning is the one checked
    (tc,) = [r for r in record if issubclass(r.category, TensorCoreWarning)]
    text = str(tc.message)
    assert "NHWC" in text and "multiple of 8" in text
    assert tc.filename == __file__
    assert issubclass(TensorCoreWarning, UserWarning)


def test_tensor_op_math_following_the_guidelines_does_not_warn() -> None:
    conv = ConvolutionDescriptor((1, 1), math_type="tensor_op")
    x = TensorDescriptor((8, 16, 8, 8), dtype=np.float16, fmt="NHWC")
    w = FilterDescriptor((32, 16, 3, 3), np.float16, fmt="NHWC")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TensorCoreWarning)
        assert conv.output_dims(x, w) == (8, 32, 8, 8)
    assert conv.tensor_core_issues(x, w, [("x", 0x1000), ("w", 0x2000)]) == []
    issues = conv.tensor_core_issues(x, w, [("workspace", 0x1008)])
    assert len(issues) == 1 and "128 bits" in issues[0] and "workspace" in issues[0]


def test_default_math_never_warns() -> None:
    conv = ConvolutionDescriptor((1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TensorCoreWarning)
        conv.output_dims(TensorDescriptor((2, 3, 8, 8)), FilterDescriptor((4, 3, 3, 3)))


# -- pooling, activation, op-tensor, reduce ---------------------------------------------------


@pytest.mark.parametrize(
    ("xd", "window", "pads", "strides"),
    [
        ((2, 3, 11, 13), (2, 2), None, None),
        ((1, 4, 9, 9), (3, 3), (1, 1), (2, 2)),
        ((1, 2, 5, 6, 7), (2, 3, 2), (1, 1, 0), (1, 2, 2)),
    ],
)
def test_pooling_output_dims_match_the_formula(
    xd: tuple[int, ...],
    window: tuple[int, ...],
    pads: tuple[int, ...] | None,
    strides: tuple[int, ...] | None,
) -> None:
    pool = PoolingDescriptor("max", window, pads, strides)
    p = pads or (0,) * len(window)
    s = strides or window
    expected = (
        *xd[:2],
        *((xd[2 + i] + 2 * p[i] - window[i]) // s[i] + 1 for i in range(len(window))),
    )
    assert pool.output_dims(TensorDescriptor(xd)) == expected
    assert pool.window == window and pool.pads == p and pool.strides == s


def test_pooling_descriptor() -> None:
    assert PoolingDescriptor("avg").mode == "avg_include_padding"
    assert PoolingDescriptor("avg_exclude_padding").mode == "avg_exclude_padding"
    assert PoolingDescriptor("max_deterministic", (3, 3)).mode == "max_deterministic"
    with pytest.raises(ValueError, match="smaller than window"):
        PoolingDescriptor("max", (2, 2), (2, 0))
    with pytest.raises(ValueError):
        PoolingDescriptor("median")
    with pytest.raises(ValueError):
        PoolingDescriptor("max", (2, 2), (0,))
    with pytest.raises(ValueError):
        PoolingDescriptor("max", (0, 2))
    with pytest.raises(ValueError, match="exceeds"):
        PoolingDescriptor("max", (5, 5)).output_dims(TensorDescriptor((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="4-D"):
        PoolingDescriptor("max", (2, 2)).output_dims(TensorDescriptor((1, 1, 4)))
    with pytest.raises(TypeError):
        PoolingDescriptor("max", (2, 2), nan_propagation="yes")  # type: ignore[arg-type]


def test_activation_descriptor() -> None:
    act = ActivationDescriptor("swish", swish_beta=1.5)
    assert act.mode == "swish" and act.swish_beta == 1.5
    elu = ActivationDescriptor("elu", 0.5)
    assert elu.mode == "elu" and elu.coef == 0.5
    assert ActivationDescriptor("clipped_relu", 6.0).coef == 6.0
    with pytest.raises(ValueError, match="ceiling"):
        ActivationDescriptor("clipped_relu", 0.0)
    with pytest.raises(ValueError):
        ActivationDescriptor("gelu")
    with pytest.raises(TypeError):
        ActivationDescriptor("relu", "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        ActivationDescriptor("elu", float("nan"))


def test_activation_descriptor_default_coef_per_mode() -> None:
    # Read back from cuDNN: an ELU without coef gets alpha 1.0 (the graph API's ELU_ALPHA
    # default, PyTorch's), not the 0.0 that makes it a ReLU; a clipped ReLU has no default
    # ceiling; the other modes ignore coef.
    assert ActivationDescriptor("elu").coef == 1.0
    assert ActivationDescriptor("relu").coef == 0.0
    with pytest.raises(ValueError, match=r"clipped_relu needs coef .* got None"):
        ActivationDescriptor("clipped_relu")


def test_op_tensor_and_reduce_descriptors() -> None:
    op = OpTensorDescriptor("max", np.float64)
    assert op.op == "max" and op.compute_type == np.float64 and not op.is_unary
    assert OpTensorDescriptor("sqrt").is_unary
    with pytest.raises(TypeError):
        OpTensorDescriptor("add", np.float16)
    with pytest.raises(ValueError):
        OpTensorDescriptor("sub")
    red = ReduceTensorDescriptor("amax", indices=True)
    assert red.op == "amax" and red.indices and red.compute_type == np.float32
    assert not ReduceTensorDescriptor("norm2").indices
    with pytest.raises(ValueError, match="indices"):
        ReduceTensorDescriptor("add", indices=True)
    with pytest.raises(ValueError):
        ReduceTensorDescriptor("median")


# -- operand validation (hand-built views: no C call, no GPU) ---------------------------------


def view(  # noqa: PLR0917 - a test helper mirroring ArrayView's fields
    ptr: int = 0x10000,
    shape: tuple[int, ...] = (2, 3, 4, 5),
    strides: tuple[int, ...] | None = None,
    dtype: object = np.float32,
    device_id: int = 0,
    readonly: bool = False,
) -> ArrayView:
    if strides is None:
        strides = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
    return ArrayView(ptr, shape, strides, np.dtype(dtype), device_id, readonly, None)


def check(v: object, desc: object = None, **kwargs: object) -> ArrayView:
    options = {"device_id": 0, "stream_ptr": None, **kwargs}
    return check_operand(v, desc, "x", **options)  # type: ignore[arg-type]


def test_check_operand_accepts_a_matching_view() -> None:
    desc = TensorDescriptor((2, 3, 4, 5))
    v = view()
    assert check(v, desc) is v
    # Strides of extent-1 dims are free.
    one = TensorDescriptor((2, 1, 4, 5))
    assert check(view(shape=(2, 1, 4, 5), strides=(20, 999, 5, 1)), one).shape == (2, 1, 4, 5)
    assert check(v, None, output=True) is v


def test_check_operand_refuses_host_memory() -> None:
    with pytest.raises(ValueError, match=r"host memory.*DeviceArray.from_numpy"):
        check(np.zeros((2, 3, 4, 5), np.float32))
    with pytest.raises(ValueError, match="host memory"):
        check(view(device_id=-1))


def test_check_operand_errors() -> None:
    desc = TensorDescriptor((2, 3, 4, 5))
    with pytest.raises(ValueError, match="device 1"):
        check(view(device_id=1), desc)
    with pytest.raises(TypeError, match="float16"):
        check(view(dtype=np.float16), desc)
    with pytest.raises(ValueError, match="shape"):
        check(view(shape=(2, 3, 5, 4)), desc)
    with pytest.raises(ValueError, match="strides"):
        check(view(strides=(60, 1, 15, 3)), desc)
    with pytest.raises(ValueError, match="negative"):
        check(view(strides=(60, 20, 5, -1)))
    with pytest.raises(ValueError, match="aligned"):
        check(view(ptr=0x10002))
    with pytest.raises(ValueError, match="NULL"):
        check(view(ptr=0))
    with pytest.raises(ValueError, match="read-only"):
        check(view(readonly=True), output=True)
    with pytest.raises(ValueError, match="overlaps"):
        check(view(strides=(1, 1, 1, 1)), output=True)
    assert check(view(strides=(1, 1, 1, 1))).shape == (2, 3, 4, 5)  # inputs may overlap
    with pytest.raises(TypeError):
        check(object())
    with pytest.raises(TypeError):
        check(view(), "not a descriptor")
    desc.close()
    with pytest.raises(pycudnn.ClosedError):
        check(view(), desc)


def test_check_operand_tensor_op_alignment_warning() -> None:
    with pytest.warns(TensorCoreWarning, match="128 bits"):
        check(view(ptr=0x10004), tensor_op=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TensorCoreWarning)
        check(view(ptr=0x10010), tensor_op=True)


def test_check_operand_against_a_filter_and_a_vectorised_descriptor() -> None:
    w = FilterDescriptor((8, 3, 3, 3), fmt="NHWC")
    check(view(shape=(8, 3, 3, 3), strides=(27, 1, 9, 3)), w)
    with pytest.raises(ValueError, match="strides"):
        check(view(shape=(8, 3, 3, 3)), w)
    v = TensorDescriptor((1, 64, 2, 2), dtype=np.int8, fmt="NC/32HW32")
    check(view(shape=(1, 2, 2, 2, 32), dtype=np.int8), v)
    with pytest.raises(ValueError, match="shape"):
        check(view(shape=(1, 64, 2, 2), dtype=np.int8), v)


def test_check_operand_against_a_vectorised_filter() -> None:
    # A vectorised filter is the packed [K, C/x, R, S, x] array, not a KCRS one: a KCRS int8
    # array would be read by cuDNN in NC/4HW4 order, scrambling the weights.
    w = FilterDescriptor((2, 8, 3, 3), dtype=np.int8, fmt="NC/4HW4")
    assert w.array_shape == (2, 2, 3, 3, 4)
    check(view(shape=(2, 2, 3, 3, 4), dtype=np.int8), w)
    one = FilterDescriptor((1, 8, 3, 3), dtype=np.int8, fmt="NC/4HW4")
    with pytest.raises(ValueError, match="shape"):
        check(view(shape=(1, 8, 3, 3), dtype=np.int8), one)
    w32 = FilterDescriptor((1, 64, 1, 1, 1), dtype="int8x32")
    check(view(shape=(1, 2, 1, 1, 1, 32), dtype=np.int8), w32)
    with pytest.raises(ValueError, match="shape"):
        check(view(shape=(1, 64, 1, 1, 1), dtype=np.int8), w32)
