"""Tensor specifications, data types and mode maps: the pure-Python half of pycutensor.tensor."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from _nvbind.arrays import alignment_of, as_array_view
from pycutensor import _bindings
from pycutensor.tensor import (
    MAX_MODES,
    TENSOR_DATA_TYPES,
    ModeMap,
    TensorDescriptor,
    TensorSpec,
    check_alignment,
    check_extents,
    check_modes,
    check_strides,
    column_major_strides,
    data_type_name,
    data_type_value,
    dtype_of_data_type,
)

# cudaDataType_t values from CUDA's library_types.h (CUDA_R_32F = 0, ...), written out here
# independently of the generated bindings.
CUDA_DATA_TYPE_VALUES = {
    "R_32F": 0, "R_64F": 1, "R_16F": 2, "R_8I": 3, "C_32F": 4, "C_64F": 5, "C_16F": 6,
    "R_8U": 8, "R_32I": 10, "R_32U": 12, "R_16BF": 14, "C_16BF": 15,
}  # fmt: skip


def test_column_major_default_is_the_guides_example() -> None:
    # The user guide: A[a,b,c] with extents 4, 8, 12 has strides 1, 4, 32 unless given.
    assert column_major_strides((4, 8, 12)) == (1, 4, 32)
    spec = TensorSpec.create((4, 8, 12))
    assert spec.strides == (1, 4, 32)
    assert spec.dtype == np.float32 and spec.alignment == 256


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        (np.float16, "R_16F"), (ml_dtypes.bfloat16, "R_16BF"), (np.float32, "R_32F"),
        (np.float64, "R_64F"), (ml_dtypes.complex32, "C_16F"), (ml_dtypes.bcomplex32, "C_16BF"),
        (np.complex64, "C_32F"), (np.complex128, "C_64F"), (np.int8, "R_8I"),
        (np.uint8, "R_8U"), (np.int32, "R_32I"), (np.uint32, "R_32U"),
        ("bf16", "R_16BF"), ("R_64F", "R_64F"), ("c_32f", "C_32F"),
    ],
)  # fmt: skip
def test_every_cutensor_data_type_maps(dtype: object, name: str) -> None:
    assert data_type_name(dtype) == name
    assert data_type_value(name) == CUDA_DATA_TYPE_VALUES[name]
    assert int(getattr(_bindings, f"CUTENSOR_{name}")) == CUDA_DATA_TYPE_VALUES[name]


def test_table_covers_exactly_the_documented_types() -> None:
    assert set(TENSOR_DATA_TYPES.values()) == set(CUDA_DATA_TYPE_VALUES)
    for dt, name in TENSOR_DATA_TYPES.items():
        assert dtype_of_data_type(name) == dt
        assert dtype_of_data_type(CUDA_DATA_TYPE_VALUES[name]) == dt


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.int16, ml_dtypes.float8_e4m3fn, ">f4"])
def test_other_types_are_refused_with_the_list(dtype: object) -> None:
    with pytest.raises(TypeError, match=r"not a cuTENSOR data type; supported: .*R_32F"):
        data_type_name(dtype)


def test_unknown_type_string() -> None:
    with pytest.raises(TypeError):
        data_type_name("not-a-type")


@pytest.mark.parametrize(
    ("extents", "error", "match"),
    [
        (
            (2, 0),
            ValueError,
            r"extents\[1\] is 0: cuTENSOR requires every extent to be larger than zero",
        ),
        ((-3,), ValueError, "larger than zero"),
        ((2.0,), TypeError, "must be an int"),
        ((True,), TypeError, "not a bool"),
        ("ab", TypeError, "sequence of ints"),
        (5, TypeError, "sequence of ints"),
        ((2,) * (MAX_MODES + 1), ValueError, "at most 64"),
    ],
)
def test_extents_are_validated(extents: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        check_extents(extents)
    with pytest.raises(error):
        TensorSpec.create(extents)  # type: ignore[arg-type]


def test_extents_accept_numpy_ints_and_max_rank() -> None:
    assert check_extents((np.int64(2), np.int32(3))) == (2, 3)
    assert len(TensorSpec.create((1,) * MAX_MODES).strides) == MAX_MODES


@pytest.mark.parametrize(
    ("strides", "match"),
    [
        ((1, 0), r"strides\[1\] is 0: .*omitting the mode"),
        ((1, -2), "negative strides"),
        ((1,), "1 entries but there are 2 extents"),
        ((1.5, 2), "must be an int"),
    ],
)
def test_strides_are_validated(strides: tuple[object, ...], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        check_strides(strides, (2, 3))
    with pytest.raises((ValueError, TypeError), match=match):
        TensorSpec.create((2, 3), strides)  # type: ignore[arg-type]


@pytest.mark.parametrize("alignment", [0, 3, 12, 512, -4])
def test_alignment_must_be_a_power_of_two_up_to_256(alignment: int) -> None:
    with pytest.raises(ValueError, match="power of two from 1 to 256"):
        check_alignment(alignment)


@pytest.mark.parametrize("alignment", [1, 2, 4, 16, 128, 256])
def test_valid_alignments(alignment: int) -> None:
    assert TensorSpec.create((2,), alignment=alignment).alignment == alignment


def test_alignment_of_pointer() -> None:
    # 256 for NULL, else the largest power of two up to 256 dividing the pointer (nvmath's rule).
    assert alignment_of(0) == 256
    assert alignment_of(0x1000) == 256
    assert alignment_of(0x1010) == 16
    assert alignment_of(0x1004) == 4
    assert alignment_of(0x1001) == 1


def test_spec_from_c_ordered_array_keeps_its_real_strides() -> None:
    a = np.zeros((3, 4, 5), dtype=np.float64)
    spec = TensorSpec.from_view(as_array_view(a))
    assert spec.extents == (3, 4, 5)
    assert spec.strides == (20, 5, 1)  # element strides of C order, not column-major
    assert spec.data_type == "R_64F"
    assert spec.alignment == alignment_of(a.ctypes.data)


def test_spec_from_sliced_array() -> None:
    base = np.zeros((3, 4), dtype=np.float32)
    view = base[:, 1:]
    spec = TensorSpec.from_view(as_array_view(view))
    assert spec.extents == (3, 3) and spec.strides == (4, 1)
    assert spec.alignment == alignment_of(base.ctypes.data + 4)
    assert spec.alignment <= 4


def test_spec_from_broadcast_or_reversed_array_is_refused() -> None:
    with pytest.raises(ValueError, match="omitting the mode"):
        TensorSpec.from_view(as_array_view(np.broadcast_to(np.ones(3, np.float32), (2, 3))))
    with pytest.raises(ValueError, match="negative strides"):
        TensorSpec.from_view(as_array_view(np.ones(3, np.float32)[::-1]))
    with pytest.raises(ValueError, match="larger than zero"):
        TensorSpec.from_view(as_array_view(np.ones((0, 3), np.float32)))


def test_spec_from_misaligned_array_is_refused() -> None:
    raw = np.zeros(17, dtype=np.uint8)
    start = 1 if raw.ctypes.data % 2 == 0 else 2  # an odd address
    misaligned = np.frombuffer(raw.data, dtype=np.float32, count=2, offset=start + 4)
    assert misaligned.ctypes.data % 4
    with pytest.raises(ValueError, match="not aligned to its 4-byte elements"):
        TensorSpec.from_view(as_array_view(misaligned))


def test_span_bytes() -> None:
    spec = TensorSpec.create((2, 3), (3, 1), np.float32)
    assert spec.span_bytes() == 6 * 4
    spec = TensorSpec.create((2, 3), (1, 4), np.float64)
    assert spec.span_bytes() == (1 + 2 * 4 + 1) * 8


# -- modes ---------------------------------------------------------------------------------------
def test_mode_map_gives_chars_their_code_point() -> None:
    modes = ModeMap()
    assert modes.ids("mhkn") == (ord("m"), ord("h"), ord("k"), ord("n"))
    assert modes["m"] == ord("m")  # the same label, the same id
    assert len(modes) == 4


def test_mode_map_keeps_ints_and_separates_kinds() -> None:
    modes = ModeMap()
    a = modes["a"]
    ninety_seven = modes[97]  # would collide with 'a'
    one, one_str = modes[1], modes["1"]
    tup = modes[("site", 3)]
    ids = [a, ninety_seven, one, one_str, tup]
    assert len(set(ids)) == len(ids)
    assert a == 97 and one == 1 and one_str == ord("1")
    # Labels compare as dict keys, as in every check of an operation: True and 1.0 are 1.
    assert modes[True] == one and modes[1.0] == one
    assert all(-(2**31) <= i < 2**31 for i in ids)
    assert modes.label(tup) == ("site", 3)
    assert modes[np.int64(1)] == one  # a NumPy int is the same label as the int
    assert modes[2**40] not in ids  # too large for int32: a fresh id


def test_check_modes() -> None:
    assert check_modes("mhkn", 4) == ("m", "h", "k", "n")
    assert check_modes([0, "x", ("a", 1)], 3) == (0, "x", ("a", 1))
    with pytest.raises(ValueError, match="appears twice; cuTENSOR requires each mode at most once"):
        check_modes("iji", 3)
    with pytest.raises(ValueError, match="has 2 labels but the tensor has 3 dimensions"):
        check_modes("ij", 3)
    with pytest.raises(TypeError, match="not hashable"):
        check_modes([[1], 2], 2)
    with pytest.raises(TypeError, match="string or a sequence"):
        check_modes(7, 1)


def test_descriptor_validates_before_needing_a_handle() -> None:
    # No GPU here: the spec is refused before any handle would be created.
    with pytest.raises(ValueError, match="larger than zero"):
        TensorDescriptor(None, (3, 0))
    with pytest.raises(ValueError, match="negative strides"):
        TensorDescriptor(None, (3,), (-1,))
    with pytest.raises(TypeError, match="not a cuTENSOR data type"):
        TensorDescriptor(None, (3,), dtype=np.int64)
    with pytest.raises(ValueError, match="power of two"):
        TensorDescriptor(None, (3,), alignment=24)
