"""The typed backend layer refuses integer attribute values cuDNN would divide by or use as
extents unchecked (zero extents, zero block sizes and vector counts, vector counts past 32 bits:
SIGFPE at finalize)."""

from __future__ import annotations

from typing import Any

import pytest
from children import run_python
from versioned import skip_unless_cudnn_has

from pycudnn.backend import BackendDescriptor

pytestmark = pytest.mark.usefixtures("libcuda")

#: (descriptor type, attribute, a valid value, the smallest value allowed). Written out here, not
#: derived from the rule table, so that a rule lost from the table fails a test.
POSITIVE = [
    ("TENSOR", "TENSOR_DIMENSIONS", [2, 3, 4]),
    ("TENSOR", "TENSOR_VECTOR_COUNT", 4),
    ("TENSOR", "TENSOR_BYTE_ALIGNMENT", 16),
    ("TENSOR", "TENSOR_RAGGED_OFFSET_MULTIPLIER", 1),
    ("CONVOLUTION", "CONVOLUTION_DILATIONS", [1, 1]),
    ("CONVOLUTION", "CONVOLUTION_FILTER_STRIDES", [1, 1]),
    ("CONVOLUTION", "CONVOLUTION_SPATIAL_DIMS", 2),
    ("RESAMPLE", "RESAMPLE_WINDOW_DIMS", [2, 2]),
    ("RESAMPLE", "RESAMPLE_STRIDES", [2, 2]),
    ("RESAMPLE", "RESAMPLE_SPATIAL_DIMS", 2),
    ("OPERATION_MATMUL", "OPERATION_MATMUL_IRREGULARLY_STRIDED_BATCH_COUNT", 2),
    ("OPERATION_BLOCK_SCALE_QUANTIZE", "OPERATION_BLOCK_SCALE_QUANTIZE_BLOCK_SIZE", 32),
    ("OPERATION_BLOCK_SCALE_DEQUANTIZE", "OPERATION_BLOCK_SCALE_DEQUANTIZE_BLOCK_SIZE", 32),
]
NON_NEGATIVE = [
    ("TENSOR", "TENSOR_STRIDES", [12, 4, 1]),
    ("CONVOLUTION", "CONVOLUTION_PRE_PADDINGS", [0, 0]),
    ("CONVOLUTION", "CONVOLUTION_POST_PADDINGS", [1, 1]),
    ("RESAMPLE", "RESAMPLE_PRE_PADDINGS", [0, 0]),
    ("RESAMPLE", "RESAMPLE_POST_PADDINGS", [0, 0]),
]


def _with(value: object, bad: int) -> object:
    """``value`` with its last element (or itself) replaced by ``bad``."""
    return [*value[:-1], bad] if isinstance(value, list) else bad


@pytest.mark.parametrize(("kind", "attr", "good"), POSITIVE)
@pytest.mark.parametrize("bad", [0, -1, -(2**31)])
def test_extents_and_divisors_below_one_are_refused_naming_the_attribute(
    kind: str, attr: str, good: object, bad: int
) -> None:
    skip_unless_cudnn_has(f"CUDNN_BACKEND_{kind}_DESCRIPTOR", f"CUDNN_ATTR_{attr}")
    d = BackendDescriptor(kind)
    d.set(attr, good)  # the valid value is taken
    d2 = BackendDescriptor(kind)
    with pytest.raises(ValueError, match=rf"CUDNN_ATTR_{attr} must be at least 1, got {bad}"):
        d2.set(attr, _with(good, bad))


@pytest.mark.parametrize(("kind", "attr", "good"), NON_NEGATIVE)
def test_offsets_paddings_and_strides_below_zero_are_refused(
    kind: str, attr: str, good: object
) -> None:
    skip_unless_cudnn_has(f"CUDNN_BACKEND_{kind}_DESCRIPTOR", f"CUDNN_ATTR_{attr}")
    d = BackendDescriptor(kind)
    d.set(attr, _with(good, 0))  # 0 is a valid padding and a broadcast stride
    with pytest.raises(ValueError, match=rf"CUDNN_ATTR_{attr} must be at least 0, got -1"):
        BackendDescriptor(kind).set(attr, _with(good, -1))


@pytest.mark.parametrize("bad", [2**31, 2**61, 2**63 - 1])
def test_a_vector_count_past_32_bits_is_refused(bad: int) -> None:
    # cuDNN keeps it in 32 bits: 2**61 finalized its tensor, then crashed an operation (SIGFPE)
    BackendDescriptor("TENSOR").set("TENSOR_VECTOR_COUNT", 2**31 - 1)
    with pytest.raises(ValueError, match=rf"TENSOR_VECTOR_COUNT must be at most {2**31 - 1}"):
        BackendDescriptor("TENSOR").set("TENSOR_VECTOR_COUNT", bad)
    with pytest.raises(ValueError, match="TENSOR_VECTOR_COUNT must be at most"):
        BackendDescriptor("TENSOR").set("TENSOR_VECTOR_COUNT", [bad], attr_type="INT64")


def test_valid_values_are_read_once() -> None:
    # The check runs on integer values set through the typed layer; the element list that only
    # an error names was formatted for every element, valid or not: quadratic in their count.
    from pycudnn._attrspec import check_integer_values
    from pycudnn.backend import attribute_name

    class Counted(list):  # type: ignore[type-arg]
        reads = 0

        def __iter__(self) -> Any:
            self.reads += 1
            return super().__iter__()

    for attr in ("TENSOR_DIMENSIONS", "TENSOR_VECTOR_COUNT", "VARIANT_PACK_UNIQUE_IDS"):
        values = Counted(range(1, 65))
        check_integer_values(attribute_name(attr), values)
        assert values.reads <= 1, attr
    with pytest.raises(ValueError, match=r"got 0 \(element 2 of \[4, 1, 0\]\)"):
        check_integer_values(attribute_name("TENSOR_DIMENSIONS"), [4, 1, 0])


def test_the_rule_holds_for_numpy_values_and_an_explicit_attr_type() -> None:
    np = pytest.importorskip("numpy")
    skip_unless_cudnn_has("CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR")
    t = BackendDescriptor("TENSOR")
    with pytest.raises(ValueError, match="TENSOR_DIMENSIONS must be at least 1"):
        t.set("TENSOR_DIMENSIONS", np.array([4, 0, 2]))
    with pytest.raises(ValueError, match="TENSOR_VECTOR_COUNT must be at least 1"):
        t.set("TENSOR_VECTOR_COUNT", np.int64(0), attr_type="INT64")
    # An attribute the header documents no type for is judged by its name all the same.
    slice_op = BackendDescriptor("OPERATION_SLICE")
    with pytest.raises(ValueError, match="OPERATION_SLICE_STRIDES must be at least 1"):
        slice_op.set("OPERATION_SLICE_STRIDES", [1, 0], attr_type="INT64")


_CHILD = """
import sys
from pycudnn.backend import BackendDescriptor as B

def tensor(uid, dims, dtype="FLOAT", vector=None):
    t = B("TENSOR")
    t.set("TENSOR_UNIQUE_ID", uid)
    t.set("TENSOR_DIMENSIONS", dims)
    strides, s = [], 1
    for d in reversed(dims):
        strides.insert(0, s)
        s *= max(d, 1)
    t.set("TENSOR_STRIDES", strides)
    t.set("TENSOR_BYTE_ALIGNMENT", 16)
    t.set("TENSOR_DATA_TYPE", dtype)
    if vector is not None:
        t.set("TENSOR_VECTOR_COUNT", vector)
        t.set("TENSOR_VECTORIZED_DIMENSION", 1)
    t.finalize()
    return t

def matmul(batch):
    a, b, c = tensor(1, [batch, 4, 8]), tensor(2, [batch, 8, 4]), tensor(3, [batch, 4, 4])
    m = B("MATMUL"); m.set("MATMUL_COMP_TYPE", "FLOAT"); m.finalize()
    op = B("OPERATION_MATMUL")
    for k, v in (("ADESC", a), ("BDESC", b), ("CDESC", c), ("DESC", m)):
        op.set("OPERATION_MATMUL_" + k, v)
    op.finalize()

def reduction(extent, vector=None):
    x, y = tensor(1, [2, 4, 8]), tensor(2, [2, extent, 1], vector=vector)
    r = B("REDUCTION"); r.set("REDUCTION_OPERATOR", "ADD"); r.set("REDUCTION_COMP_TYPE", "FLOAT")
    r.finalize()
    op = B("OPERATION_REDUCTION")
    for k, v in (("XDESC", x), ("YDESC", y), ("DESC", r)):
        op.set("OPERATION_REDUCTION_" + k, v)
    op.finalize()

def quantize(block):
    x, y = tensor(1, [32, 64]), tensor(2, [32, 64], "FP8_E4M3")
    s = tensor(3, [32, 2], "FP8_E8M0")
    op = B("OPERATION_BLOCK_SCALE_QUANTIZE")
    for k, v in (("XDESC", x), ("YDESC", y), ("SCALE_DESC", s)):
        op.set("OPERATION_BLOCK_SCALE_QUANTIZE_" + k, v)
    op.set("OPERATION_BLOCK_SCALE_QUANTIZE_MATH_PREC", "FLOAT")
    if block is not None:
        op.set("OPERATION_BLOCK_SCALE_QUANTIZE_BLOCK_SIZE", block)
    op.finalize()

for label, call in [("matmul batch 0", lambda: matmul(0)),
                    ("reduction extent 0", lambda: reduction(0)),
                    ("vector count 2**61", lambda: reduction(1000, 2**61)),
                    ("block size 0", lambda: quantize(0)),
                    ("block size unset", lambda: quantize(None))]:
    try:
        call()
    except ValueError as exc:
        print(label, "refused:", exc)
    else:
        print(label, "ACCEPTED")
matmul(1); reduction(1); quantize(32)
print("valid ones finalize")
"""


def test_the_sigfpe_reproductions_are_refused_before_finalize() -> None:
    """Each of these finalized and then divided by zero (SIGFPE) before the fix: run in a child."""
    skip_unless_cudnn_has("CUDNN_BACKEND_OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR")
    proc = run_python(_CHILD)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "ACCEPTED" not in out, out
    assert "matmul batch 0 refused: CUDNN_ATTR_TENSOR_DIMENSIONS must be at least 1" in out
    assert "reduction extent 0 refused: CUDNN_ATTR_TENSOR_DIMENSIONS must be at least 1" in out
    assert "vector count 2**61 refused: CUDNN_ATTR_TENSOR_VECTOR_COUNT must be at most" in out
    assert "block size 0 refused: CUDNN_ATTR_OPERATION_BLOCK_SCALE_QUANTIZE_BLOCK_SIZE" in out
    assert "block size unset refused: cannot finalize" in out
    assert "BLOCK_SIZE is not set" in out
    assert "valid ones finalize" in out
