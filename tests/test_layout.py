"""CPU tests for pycudnn.layout.

The examples come from cuDNN's "Core Concepts" chapter (tensor descriptors, packing, data layout
formats); where its translations disagree, the English text stands. Expected values are written out
by hand or derived with independent code (explicit loops, NumPy strides, brute-force enumeration),
never by calling the function under test.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from standins import fake_device_array

from _nvbind.strides import overlapping
from pycudnn import layout
from pycudnn.layout import (
    Format,
    format_order,
    from_format,
    is_fully_packed,
    is_overlapping,
    is_packed,
    is_spatially_packed,
    min_buffer_size,
    packed_strides,
    parse_format,
    strides_to_format,
    to_format,
    vectorized_dims_strides,
)

LOGICAL_SETS = ["BMN", "NCHW", "NCDHW", "ABC", "ABCD", "ABCDE", "ABCDEF", "ABCDEFG", "ABCDEFGH"]

# --- independent oracles -----------------------------------------------------------------------


def numpy_strides(dims: tuple[int, ...], fmt: str, logical: str) -> tuple[int, ...]:
    """Strides (in elements) NumPy gives a C-contiguous array in memory order, seen logically."""
    memory_shape = [dims[logical.index(c)] for c in fmt]
    buf = np.empty(memory_shape, dtype=np.int8)  # itemsize 1: byte strides are element strides
    logical_view = buf.transpose([fmt.index(c) for c in logical])
    return tuple(int(s) for s in logical_view.strides)


def brute_overlapping(dims: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """The seed's definition, literally: some address is produced more than once."""
    seen: set[int] = set()
    for index in itertools.product(*(range(n) for n in dims)):
        address = sum(i * s for i, s in zip(index, strides, strict=True))
        if address in seen:
            return True
        seen.add(address)
    return False


# --- strategies ----------------------------------------------------------------------------------


@st.composite
def letter_format_and_dims(
    draw: st.DrawFn, min_extent: int = 1
) -> tuple[str, str, tuple[int, ...]]:
    logical = draw(st.sampled_from(LOGICAL_SETS))
    fmt = "".join(draw(st.permutations(logical)))
    # Keep tensors small: at most 4**5 elements up to 5-D, 2**8 beyond.
    max_extent = 4 if len(logical) <= 5 else 2
    dims = tuple(draw(st.integers(min_extent, max(max_extent, min_extent))) for _ in logical)
    return logical, fmt, dims


@st.composite
def vectorized_format_and_dims(draw: st.DrawFn) -> tuple[str, tuple[int, ...]]:
    x = draw(st.integers(1, 8))
    spatial = draw(st.sampled_from(["HW", "DHW"]))
    n = draw(st.integers(1, 3))
    c = x * draw(st.integers(1, 3))
    rest = tuple(draw(st.integers(1, 4)) for _ in spatial)
    return f"NC/{x}{spatial}{x}", (n, c, *rest)


# --- formats -------------------------------------------------------------------------------------


def test_parse_letter_formats() -> None:
    f = parse_format("nhwc")
    assert f == Format("NHWC", "NHWC", "NCHW")
    assert f.rank == 4 and not f.is_vectorized and f.spatial == "HW"
    assert parse_format("CDHWN").logical == "NCDHW"
    assert parse_format("BNM").logical == "BMN"
    assert parse_format("DCBA").logical == "ABCD"
    assert parse_format(f) is f


@pytest.mark.parametrize(
    ("alias", "name"),
    [("row_major", "BMN"), ("ROW_MAJOR", "BMN"), ("col_major", "BNM"), ("column-major", "BNM")],
)
def test_matmul_aliases(alias: str, name: str) -> None:
    assert parse_format(alias).name == name


def test_parse_vectorized_formats() -> None:
    f = parse_format("NC/32HW32")
    assert (f.name, f.logical, f.vector, f.rank, f.is_vectorized) == (
        "NC/32HW32",
        "NCHW",
        32,
        4,
        True,
    )
    g = parse_format("nc/4dhw4")
    assert (g.name, g.logical, g.vector) == ("NC/4DHW4", "NCDHW", 4)


def test_format_order() -> None:
    assert format_order("NCHW") == (0, 1, 2, 3)
    assert format_order("NHWC") == (0, 2, 3, 1)
    assert format_order("CHWN") == (1, 2, 3, 0)
    assert format_order("NDHWC") == (0, 2, 3, 4, 1)
    assert format_order("col_major") == (0, 2, 1)
    with pytest.raises(ValueError, match="NC/4HW4"):
        format_order("NC/4HW4")


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("NCHX", "unknown format 'NCHX'.*NCHW"),  # lists the accepted formats
        ("NCCW", "repeats a letter"),
        ("NC", "has 2 letters"),
        ("ABCDEFGHI", "has 9 letters"),
        ("NCDHW_", "unknown format"),
        ("NC/32HW16", "same positive integer"),
        ("NC/0HW0", "same positive integer"),
        ("", "has 0 letters"),
    ],
)
def test_bad_formats(fmt: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_format(fmt)
    with pytest.raises(ValueError, match=message):
        packed_strides((1, 2, 3, 4), fmt)


def test_format_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="fmt must be a str"):
        parse_format(4)  # type: ignore[arg-type]


# --- packed strides --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "strides"),
    [
        # dims N=2, C=3, H=4, W=5; strides written out by hand, in logical order N, C, H, W
        ("NCHW", (60, 20, 5, 1)),
        ("NHWC", (60, 1, 15, 3)),
        ("CHWN", (1, 40, 10, 2)),
        ("CNHW", (20, 40, 5, 1)),
        ("HWCN", (1, 2, 30, 6)),
    ],
)
def test_packed_strides_4d(fmt: str, strides: tuple[int, ...]) -> None:
    assert packed_strides((2, 3, 4, 5), fmt) == strides
    assert is_fully_packed((2, 3, 4, 5), strides, fmt)


@pytest.mark.parametrize(
    ("fmt", "strides"),
    [
        # dims N=2, C=3, D=4, H=5, W=6, logical order N, C, D, H, W
        ("NCDHW", (360, 120, 30, 6, 1)),
        ("NDHWC", (360, 1, 90, 18, 3)),
        ("CDHWN", (1, 240, 60, 12, 2)),
    ],
)
def test_packed_strides_5d(fmt: str, strides: tuple[int, ...]) -> None:
    assert packed_strides((2, 3, 4, 5, 6), fmt) == strides
    assert is_fully_packed((2, 3, 4, 5, 6), strides, fmt)


def test_seed_nhwc_fully_packed_example() -> None:
    # Seed 000: an NHWC tensor with N, H, W, C = 1, 2, 3, 4 is NHWC-fully-packed with
    # c_stride = 1, w_stride = 4, h_stride = 12, n_stride = 24. Dims and strides in logical order.
    dims = (1, 4, 2, 3)  # N, C, H, W
    strides = (24, 1, 12, 4)
    assert packed_strides(dims, "NHWC") == strides
    assert is_fully_packed(dims, strides, "NHWC")
    assert not is_fully_packed(dims, (24, 1, 12, 5), "NHWC")  # W padded
    assert not is_fully_packed(dims, strides, "NCHW")  # the same strides read as NCHW


def test_seed_matmul_layouts() -> None:
    # Seed 002: packed row-major dim [B,M,N] stride [MN, N, 1]; column-major stride [MN, 1, M].
    b, m, n = 2, 3, 5
    assert packed_strides((b, m, n), "BMN") == (m * n, n, 1) == (15, 5, 1)
    assert packed_strides((b, m, n), "BNM") == (m * n, 1, m) == (15, 1, 3)
    assert packed_strides((b, m, n), "row_major") == packed_strides((b, m, n), "BMN")
    assert packed_strides((b, m, n), "col_major") == packed_strides((b, m, n), "BNM")
    assert is_fully_packed((b, m, n), (15, 1, 3), "col_major")


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9))
def test_matmul_formulas(b: int, m: int, n: int) -> None:
    assert packed_strides((b, m, n), "row_major") == (m * n, n, 1)
    assert packed_strides((b, m, n), "col_major") == (m * n, 1, m)


def test_generic_ranks() -> None:
    dims = (2, 3, 2, 3, 2, 3, 2, 3)
    assert packed_strides(dims, "ABCDEFGH") == numpy_strides(dims, "ABCDEFGH", "ABCDEFGH")
    assert packed_strides(dims, "HGFEDCBA") == (1, 2, 6, 12, 36, 72, 216, 432)
    assert packed_strides((4, 5, 6), "ABC") == (30, 6, 1)


@given(letter_format_and_dims())
def test_packed_strides_match_numpy(case: tuple[str, str, tuple[int, ...]]) -> None:
    logical, fmt, dims = case
    strides = packed_strides(dims, fmt)
    assert strides == numpy_strides(dims, fmt, logical)
    assert is_fully_packed(dims, strides, fmt)
    assert not is_overlapping(dims, strides)
    assert min_buffer_size(dims, strides) == math.prod(dims)


@given(letter_format_and_dims(min_extent=2))
def test_strides_to_format_recovers_format(case: tuple[str, str, tuple[int, ...]]) -> None:
    # With every extent >= 2 the packed strides are distinct, so the format is unambiguous. Ranks
    # 3, 4 and 5 read as BMN, NCHW and NCDHW, so generic formats of those ranks come back spelled
    # with those letters.
    logical, fmt, dims = case
    guess = strides_to_format(dims, packed_strides(dims, fmt))
    named = {3: "BMN", 4: "NCHW", 5: "NCDHW"}.get(len(dims), logical)
    assert guess == "".join(named[logical.index(c)] for c in fmt)


def test_vectorized_formats_have_no_stride_vector() -> None:
    with pytest.raises(ValueError, match=r"'NC/32HW32'.*vectorized_dims_strides"):
        packed_strides((1, 64, 5, 4), "NC/32HW32")
    with pytest.raises(ValueError, match=r"'NC/32HW32'.*vectorized_dims_strides"):
        format_order("NC/32HW32")
    # Predicates answer: no stride vector lays a tensor out in NC/32HW32 when 1 < 32 < C.
    nhwc = packed_strides((1, 64, 5, 4), "NHWC")
    assert not is_fully_packed((1, 64, 5, 4), nhwc, "NC/32HW32")
    assert not is_packed((1, 64, 5, 4), nhwc, "NC/32HW32", "HW")
    assert not is_spatially_packed((1, 64, 5, 4), nhwc, "NC/32HW32")
    with pytest.raises(ValueError, match="not in format"):
        is_packed((1, 64, 5, 4), nhwc, "NC/32HW32", "Z")


@pytest.mark.parametrize(
    ("dims", "vectorized", "plain"),
    [
        ((2, 64, 3, 5), "NC/1HW1", "NCHW"),
        ((2, 7, 3, 5), "NC/7HW7", "NHWC"),
        ((2, 1, 3, 5), "NC/1HW1", "NCHW"),  # C = 1: x = 1 and x = C; the first rule answers
        ((2, 6, 4, 3, 5), "NC/1DHW1", "NCDHW"),
        ((2, 6, 4, 3, 5), "NC/6DHW6", "NDHWC"),
    ],
)
def test_vector_of_one_or_of_c_is_a_plain_format(
    dims: tuple[int, ...], vectorized: str, plain: str
) -> None:
    # Seed 002: NC/xHWx with x = 1 is NCHW, with x = C is NHWC.
    strides = packed_strides(dims, plain)
    assert packed_strides(dims, vectorized) == strides
    assert is_fully_packed(dims, strides, vectorized)
    assert is_packed(dims, strides, vectorized, "C")
    # The buffers of the two descriptions hold the elements in the same order.
    a = np.arange(math.prod(dims)).reshape(dims)
    np.testing.assert_array_equal(to_format(a, vectorized), to_format(a, plain))


def test_format_order_of_a_vector_of_one() -> None:
    assert format_order("NC/1HW1") == format_order("NCHW")


def test_predicates_answer_false_for_a_rank_the_format_does_not_have() -> None:
    five_d = (2, 3, 4, 5, 6)
    strides = packed_strides(five_d, "NCDHW")
    assert not is_fully_packed(five_d, strides, "NCHW")
    assert not is_packed(five_d, strides, "NCHW", "HW")
    assert not is_spatially_packed(five_d, strides, "NCHW")
    assert not is_fully_packed((2, 3, 4), (12, 4, 1), "NC/1HW1")
    # Malformed arguments still raise: they are not a question about a tensor.
    with pytest.raises(ValueError, match="strides has 4 entries but dims has 5"):
        is_fully_packed(five_d, (60, 20, 5, 1), "NCHW")


def test_vectorized_dims_strides() -> None:
    # NC/32HW32 with N, C, H, W = 1, 64, 5, 4: two groups, each an NHWC block of 5*4*32 elements.
    assert vectorized_dims_strides((1, 64, 5, 4), "NC/32HW32") == (
        (1, 2, 5, 4, 32),
        (1280, 640, 128, 32, 1),
    )
    assert vectorized_dims_strides((2, 8, 3, 5, 7), "NC/4DHW4") == (
        (2, 2, 3, 5, 7, 4),
        (840, 420, 140, 28, 4, 1),
    )
    with pytest.raises(ValueError, match=r"multiple of 32.*dims\[1\] \(C\) is 48"):
        vectorized_dims_strides((1, 48, 5, 4), "NC/32HW32")
    with pytest.raises(ValueError, match="not vectorized"):
        vectorized_dims_strides((1, 64, 5, 4), "NHWC")
    with pytest.raises(ValueError, match="format 'NC/4HW4' has 4 dims"):
        vectorized_dims_strides((1, 64, 5, 4, 2), "NC/4HW4")


# --- the seed's 1x64x5x4 example --------------------------------------------------------------

N, C, H, W = 1, 64, 5, 4
# "the image pixel elements are expressed as a sequence of integers, 0, 1, 2, 3": in NCHW order.
EXAMPLE = np.arange(N * C * H * W).reshape(N, C, H, W)


def nchw_value(n: int, c: int, h: int, w: int) -> int:
    return ((n * C + c) * H + h) * W + w


def test_seed_example_nchw() -> None:
    # "Beginning with the first channel (c=0), the elements are arranged contiguously in row-major
    # order. Continue with second and subsequent channels..."
    expected = [nchw_value(0, c, h, w) for c in range(C) for h in range(H) for w in range(W)]
    buffer = to_format(EXAMPLE, "NCHW")
    assert buffer.tolist() == expected == list(range(N * C * H * W))
    np.testing.assert_array_equal(from_format(buffer, (N, C, H, W), "NCHW"), EXAMPLE)


def test_seed_example_nhwc() -> None:
    # "Begin with the first element of channel 0, then proceed to the first element of channel 1,
    # and so on, until the first elements of all the C channels are laid out. Next, select the
    # second element of channel 0 ... Follow the row-major order of channel 0."
    expected = [nchw_value(0, c, h, w) for h in range(H) for w in range(W) for c in range(C)]
    buffer = to_format(EXAMPLE, "NHWC")
    assert buffer.tolist() == expected
    assert buffer[:C].tolist() == [20 * c for c in range(C)]  # 0, 20, 40, ... (pixel 0)
    assert buffer[C : 2 * C].tolist() == [1 + 20 * c for c in range(C)]  # 1, 21, 41, ...
    np.testing.assert_array_equal(from_format(buffer, (N, C, H, W), "NHWC"), EXAMPLE)


def test_seed_example_nc32hw32() -> None:
    # "the 64 channels are grouped into two groups of 32 channels each ... Then each group is laid
    # out using the NHWC format."
    expected = [
        nchw_value(0, c, h, w)
        for group in range(C // 32)
        for h in range(H)
        for w in range(W)
        for c in range(32 * group, 32 * group + 32)
    ]
    buffer = to_format(EXAMPLE, "NC/32HW32")
    assert buffer.tolist() == expected
    assert buffer[:32].tolist() == list(range(0, 640, 20))  # c0..c31 of pixel 0: 0, 20, ..., 620
    assert buffer[32:64].tolist() == list(range(1, 641, 20))  # c0..c31 of pixel 1: 1, 21, ..., 621
    second_group = H * W * 32  # the first group fills 640 elements
    assert buffer[second_group : second_group + 32].tolist() == list(range(640, 1280, 20))
    np.testing.assert_array_equal(from_format(buffer, (N, C, H, W), "NC/32HW32"), EXAMPLE)


def test_seed_vect_c_view() -> None:
    # "NCHW INT8x32 format is really N x (C/32) x H x W x 32 (32 Cs for every W)".
    view, strides = vectorized_dims_strides((N, C, H, W), "NC/32HW32")
    buffer = to_format(EXAMPLE, "NC/32HW32")
    as_view = np.lib.stride_tricks.as_strided(
        buffer, shape=view, strides=[s * buffer.itemsize for s in strides]
    )
    for c in (0, 1, 31, 32, 63):
        np.testing.assert_array_equal(as_view[:, c // 32, :, :, c % 32], EXAMPLE[:, c])


# --- reorders: identities and round trips ------------------------------------------------------


@given(st.integers(1, 3), st.integers(1, 9), st.integers(1, 4), st.integers(1, 4))
def test_vectorized_identities_4d(n: int, c: int, h: int, w: int) -> None:
    # Seed 002: "When x = 1 ... This is the same as the NCHW format"; "When x = C, then NC/xHWx is
    # identical to NHWC".
    array = np.arange(n * c * h * w).reshape(n, c, h, w)
    np.testing.assert_array_equal(to_format(array, "NC/1HW1"), to_format(array, "NCHW"))
    np.testing.assert_array_equal(to_format(array, f"NC/{c}HW{c}"), to_format(array, "NHWC"))


@given(
    st.integers(1, 2), st.integers(1, 6), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)
)
def test_vectorized_identities_5d(n: int, c: int, d: int, h: int, w: int) -> None:
    array = np.arange(n * c * d * h * w).reshape(n, c, d, h, w)
    np.testing.assert_array_equal(to_format(array, "NC/1DHW1"), to_format(array, "NCDHW"))
    np.testing.assert_array_equal(to_format(array, f"NC/{c}DHW{c}"), to_format(array, "NDHWC"))


@given(letter_format_and_dims())
def test_letter_round_trip_and_addressing(case: tuple[str, str, tuple[int, ...]]) -> None:
    _, fmt, dims = case
    array = np.arange(math.prod(dims), dtype=np.int32).reshape(dims) * 3 - 7
    buffer = to_format(array, fmt)
    assert buffer.ndim == 1 and buffer.flags.c_contiguous and buffer.dtype == np.int32
    # Element i of the logical array sits at address sum(i * stride) of the buffer.
    strides = np.array(packed_strides(dims, fmt))
    addresses = np.tensordot(np.indices(dims), strides, axes=([0], [0]))
    np.testing.assert_array_equal(buffer[addresses], array)
    back = from_format(buffer, dims, fmt)
    assert back.shape == dims and back.flags.c_contiguous
    np.testing.assert_array_equal(back, array)


@given(vectorized_format_and_dims())
def test_vectorized_round_trip_and_addressing(case: tuple[str, tuple[int, ...]]) -> None:
    fmt, dims = case
    x = parse_format(fmt).vector
    assert x is not None
    array = np.arange(math.prod(dims), dtype=np.float32).reshape(dims)
    buffer = to_format(array, fmt)
    view_dims, view_strides = vectorized_dims_strides(dims, fmt)
    assert view_strides == numpy_strides(
        view_dims, "ABCDEF"[: len(view_dims)], "ABCDEF"[: len(view_dims)]
    )
    index = np.indices(dims)
    # (n, c, *spatial) -> (n, c // x, *spatial, c % x) in the vectorized view
    view_index = [index[0], index[1] // x, *index[2:], index[1] % x]
    addresses = sum(i * s for i, s in zip(view_index, view_strides, strict=True))
    np.testing.assert_array_equal(buffer[addresses], array)
    np.testing.assert_array_equal(from_format(buffer, dims, fmt), array)


def test_reorders_never_alias() -> None:
    array = np.arange(24).reshape(1, 2, 3, 4)
    buffer = to_format(array, "NCHW")  # no reorder needed, still a copy
    buffer[0] = 99
    assert array[0, 0, 0, 0] == 0
    back = from_format(buffer, (1, 2, 3, 4), "NCHW")
    back[0, 0, 0, 0] = -1
    assert buffer[0] == 99


def test_from_format_accepts_any_buffer_shape() -> None:
    array = np.arange(24).reshape(1, 2, 3, 4)
    buffer = to_format(array, "NHWC").reshape(4, 6)
    np.testing.assert_array_equal(from_format(buffer, [1, 2, 3, 4], "NHWC"), array)


def test_reorder_errors() -> None:
    with pytest.raises(ValueError, match=r"array.shape has 3 entries but format 'NCHW' has 4"):
        to_format(np.zeros((2, 3, 4)), "NCHW")
    with pytest.raises(ValueError, match=r"array.shape\[1\] must be a positive extent"):
        to_format(np.zeros((2, 0, 4, 4)), "NCHW")
    with pytest.raises(ValueError, match="buffer has 23 elements but dims"):
        from_format(np.zeros(23), (1, 2, 3, 4), "NCHW")
    with pytest.raises(ValueError, match="multiple of 4"):
        to_format(np.zeros((1, 6, 2, 2)), "NC/4HW4")
    with pytest.raises(ValueError, match="multiple of 4"):
        from_format(np.zeros(24), (1, 6, 2, 2), "NC/4HW4")


# --- partial packing -----------------------------------------------------------------------------


def test_seed_000_ch_packed_example_is_not_ch_packed() -> None:
    # Seed 000 (a translation) works an example: NCHW with N, C, H, W = 1, 2, 3, 4, w_stride = 2,
    # h_stride = 3 "set arbitrarily, to show that CH packing does not depend on W", c_stride =
    # h_dim * h_stride = 9 and n_stride >= c_dim * c_stride = 18, and calls it CH-packed. It reads
    # "the (i+1)-th dimension" as the next letter *of the suffix*, so H, the suffix's last letter,
    # is left free. Seed 002 (English, which stands) says the stride of each dimension in the suffix
    # equals the product of the (i+1)-st dimension by the (i+1)-st stride *of the tensor*: for H
    # the next dimension is W, so h_stride must be w_dim * w_stride = 4 * 2 = 8, not 3.
    dims = (1, 2, 3, 4)
    seed_000 = (18, 9, 3, 2)  # N, C, H, W
    assert not is_packed(dims, seed_000, "NCHW", "CH")
    # What seed 002's rule does accept for the same dims and w_stride: h = 4*2, c = 3*8, n >= 2*24.
    assert is_packed(dims, (48, 24, 8, 2), "NCHW", "CH")
    assert is_packed(dims, (50, 24, 8, 2), "NCHW", "CH")  # N is not in the suffix: >= suffices
    assert not is_packed(dims, (47, 24, 8, 2), "NCHW", "CH")
    assert not is_fully_packed(dims, (48, 24, 8, 2), "NCHW")  # w_stride 2 breaks full packing


def test_seed_wc_packed_nhwc() -> None:
    # Seed 002: "an NHWC tensor WC-packed means that the c_stride is equal to 1 and w_stride is
    # equal to c_dim x c_stride". H and N are not in the suffix: each stride >= next dim * stride.
    dims = (2, 3, 4, 5)  # N, C, H, W
    strides = (100, 1, 20, 3)  # h_stride 20 >= 5 * 3 (padded rows), n_stride 100 >= 4 * 20
    assert is_packed(dims, strides, "NHWC", "WC")
    assert is_packed(dims, strides, "NHWC", "cw")  # letters in any order, any case
    assert not is_packed(dims, strides, "NHWC", "HWC")  # h_stride 20 != 15
    assert not is_fully_packed(dims, strides, "NHWC")
    assert not is_packed(dims, (100, 2, 20, 6), "NHWC", "WC")  # c_stride must be 1
    assert not is_packed(dims, (100, 1, 20, 4), "NHWC", "WC")  # w_stride must be c_dim * 1
    assert not is_packed(dims, (79, 1, 20, 3), "NHWC", "WC")  # n_stride < h_dim * h_stride


def test_seed_n_packed_nchw() -> None:
    # Seed 002: the suffix "can be applied to only the major dimensions; for example, an NCHW
    # tensor that is only N-packed": n_stride == c_dim * c_stride, the rest only ">=".
    dims = (2, 3, 4, 5)
    strides = (150, 50, 12, 2)  # w 2 >= 1, h 12 >= 5*2, c 50 >= 4*12, n == 3*50
    assert is_packed(dims, strides, "NCHW", "N")
    assert not is_packed(dims, (151, 50, 12, 2), "NCHW", "N")
    assert not is_packed(dims, strides, "NCHW", "NC")  # c_stride 50 != 4 * 12
    assert not is_packed(dims, (150, 50, 9, 2), "NCHW", "N")  # h_stride 9 < 5 * 2


def test_last_dimension_outside_the_suffix() -> None:
    # No "next" dimension: the >= rule is vacuous, only the format's "strides strictly positive"
    # remains. Inside the suffix the last stride must be exactly 1.
    dims = (2, 3, 4, 5)
    assert is_packed(dims, (420, 140, 35, 7), "NCHW", "NCH")
    assert not is_packed(dims, (0, 0, 0, 0), "NCHW", "NCH")
    assert not is_packed(dims, (420, 140, 35, 7), "NCHW", "W")


@given(letter_format_and_dims(), st.data())
def test_fully_packed_is_packed_for_every_suffix(
    case: tuple[str, str, tuple[int, ...]], data: st.DataObject
) -> None:
    _, fmt, dims = case
    strides = packed_strides(dims, fmt)
    letters = data.draw(st.sets(st.sampled_from(fmt), min_size=1))
    assert is_packed(dims, strides, fmt, "".join(letters))


def near_packed_strides(
    data: st.DataObject, logical: str, fmt: str, dims: tuple[int, ...]
) -> tuple[int, ...]:
    """Strides built in ``fmt`` order with small random padding, then maybe one entry replaced.

    Uniformly random strides are (almost) never packed, which would leave the interesting half
    of the predicates untested; these are packed, padded or broken in one place about equally.
    """
    strides = [0] * len(dims)
    step = data.draw(st.sampled_from([1, 1, 1, 2]))
    for letter in reversed(fmt):
        axis = logical.index(letter)
        strides[axis] = step
        step = step * dims[axis] + data.draw(st.sampled_from([0, 0, 0, 1, 3]))
    if data.draw(st.booleans()):
        strides[data.draw(st.integers(0, len(dims) - 1))] = data.draw(st.integers(0, 40))
    return tuple(strides)


def packed_by_definition(
    dims: tuple[int, ...], strides: tuple[int, ...], logical: str, fmt: str, letters: str
) -> bool:
    """Seed 002's rule, walked along ``fmt``: a letter in the suffix has stride == next dim *
    next stride, any other >= that; the last letter has stride 1 if in the suffix, else >= 1."""
    axes = [logical.index(c) for c in fmt]
    for k, axis in enumerate(axes):
        bound = dims[axes[k + 1]] * strides[axes[k + 1]] if k + 1 < len(axes) else 1
        ok = strides[axis] == bound if fmt[k] in letters else strides[axis] >= bound
        if not ok:
            return False
    return True


@given(letter_format_and_dims(), st.data())
def test_fully_packed_means_exactly_the_packed_strides(
    case: tuple[str, str, tuple[int, ...]], data: st.DataObject
) -> None:
    # Fully packed strides are unique: exactly NumPy's C-contiguous strides in memory order.
    logical, fmt, dims = case
    strides = near_packed_strides(data, logical, fmt, dims)
    expected = strides == numpy_strides(dims, fmt, logical)
    assert is_fully_packed(dims, strides, fmt) is expected
    assert is_packed(dims, strides, fmt, fmt) is expected


@given(letter_format_and_dims(), st.data())
def test_is_packed_follows_the_definition(
    case: tuple[str, str, tuple[int, ...]], data: st.DataObject
) -> None:
    logical, fmt, dims = case
    strides = near_packed_strides(data, logical, fmt, dims)
    letters = "".join(data.draw(st.sets(st.sampled_from(fmt), min_size=1)))
    packed = is_packed(dims, strides, fmt, letters)
    assert packed is packed_by_definition(dims, strides, logical, fmt, letters)
    if packed:
        # The WXYZ notation implies strictly positive strides, non-increasing along the format.
        along = [strides[i] for i in format_order(fmt)]
        assert all(s >= 1 for s in along)
        assert along == sorted(along, reverse=True)


@pytest.mark.parametrize(
    ("packed", "error", "message"),
    [
        ("CX", ValueError, r"names 'X', which is not in format 'NCHW'"),
        ("CC", ValueError, "repeats a letter"),
        ("", ValueError, "at least one letter"),
        ("D", ValueError, "names 'D'"),
        (None, TypeError, "packed must be a str"),
    ],
)
def test_packed_letter_validation(packed: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        is_packed((1, 2, 3, 4), (24, 12, 4, 1), "NCHW", packed)  # type: ignore[arg-type]


def test_spatially_packed() -> None:
    # Seed 002: "a spatially-packed 4D tensor would mean that the tensor is either NCHW HW-packed
    # or CNHW HW-packed".
    dims = (2, 3, 4, 5)
    nchw_padded_channels = (96, 32, 5, 1)  # HW packed, each channel plane padded to 32
    assert is_spatially_packed(dims, nchw_padded_channels, "NCHW")
    assert is_spatially_packed(dims, packed_strides(dims, "NCHW"), "NCHW")
    cnhw = (24, 48, 5, 1)  # C, N, H, W order: w 1, h 5, n 24 >= 4*5, c 48 >= 2*24
    assert is_spatially_packed(dims, cnhw, "CNHW")
    assert not is_spatially_packed(dims, (24, 48, 6, 1), "CNHW")  # rows padded: not HW-packed
    assert not is_spatially_packed(dims, (96, 32, 5, 2), "NCHW")  # w_stride 2
    # Formats that do not end with the spatial letters in order are never spatially packed.
    assert not is_spatially_packed(dims, packed_strides(dims, "NHWC"), "NHWC")
    assert not is_spatially_packed(dims, packed_strides(dims, "NCWH"), "NCWH")
    dims5 = (2, 3, 4, 5, 6)
    assert is_spatially_packed(dims5, (500, 150, 30, 6, 1), "NCDHW")
    assert not is_spatially_packed(dims5, (500, 150, 31, 6, 1), "NCDHW")
    assert not is_spatially_packed(dims5, packed_strides(dims5, "NDHWC"), "NDHWC")
    for fmt in ("BMN", "ABCD"):
        with pytest.raises(ValueError, match="has no spatial dims"):
            is_spatially_packed((2, 3, 4, 5)[: len(fmt)], (60, 20, 5, 1)[: len(fmt)], fmt)


def test_spatially_packed_without_a_format_is_the_definition() -> None:
    # Without fmt the seed's definition applies as written: NCHW HW-packed or CNHW HW-packed
    # (NCDHW or CNDHW DHW-packed for 5-D). Strides below are worked out by hand from the
    # partially-packed rules: w stride 1, h stride = W * 1, the outer two only bounded below.
    dims = (2, 3, 4, 5)
    assert is_spatially_packed(dims, (96, 32, 5, 1))  # NCHW, each channel plane padded
    assert is_spatially_packed(dims, (24, 48, 5, 1))  # CNHW: n 24 >= 4*5, c 48 >= 2*24
    assert not is_spatially_packed(dims, (60, 1, 15, 3))  # NHWC: w stride 3
    assert not is_spatially_packed(dims, (96, 32, 6, 1))  # rows padded
    assert not is_spatially_packed(dims, (60, 20, 1, 4))  # NCWH: h innermost
    assert is_spatially_packed((2, 3, 4, 5, 6), (500, 150, 30, 6, 1))
    assert is_spatially_packed((2, 3, 4, 5, 6), (120, 240, 30, 6, 1))  # CNDHW
    with pytest.raises(ValueError, match=r"4-D.*5-D.*or pass fmt"):
        is_spatially_packed((2, 3, 4), (12, 4, 1))


# --- overlap -------------------------------------------------------------------------------------


def test_seed_overlap_example() -> None:
    # Seed 000: nchw = [1, 2, 3, 4] with w_stride 1: h_stride 4 (= 4 * 1) does not overlap,
    # h_stride 2 (< 4 * 1) makes H and W overlap.
    dims = (1, 2, 3, 4)
    assert not is_overlapping(dims, (24, 12, 4, 1))
    assert is_overlapping(dims, (24, 12, 2, 1))
    assert brute_overlapping(dims, (24, 12, 2, 1))


def test_overlap_is_exact_not_the_heuristic() -> None:
    # stride[i-1] < stride[i] * dim[i] holds for this column-major (B, M, N) tensor, yet every
    # address is distinct: the seed's "in practice" rule is not the definition.
    dims, strides = (2, 3, 4), (12, 1, 3)
    assert strides[1] < strides[2] * dims[2]
    assert not brute_overlapping(dims, strides)
    assert not is_overlapping(dims, strides)
    assert not is_overlapping((3, 2), (2, 3))  # 0, 3, 2, 5, 4, 7: interleaved, distinct


@pytest.mark.parametrize(
    ("dims", "strides", "expected"),
    [
        ((), (), False),
        ((1, 3, 1), (0, 1, 0), False),  # extent-1 dims never overlap, whatever the stride
        ((2, 3), (0, 1), True),  # broadcast: zero stride over extent 2
        ((3, 4), (-4, 1), False),  # mirrored rows
        ((3, 4), (-2, 1), True),
        ((3, 4), (4, -1), False),
        ((2, 2), (1, 1), True),  # equal strides
        ((4, 3), (2, 3), True),  # 3*2 == 2*3
        ((2, 2, 2), (2, 3, 4), False),  # needs enumeration: no pair or count test decides
        ((2, 3, 2), (2, 3, 4), True),  # 1*2 + 1*4 == 2*3, found by enumeration
        ((1000, 4, 4), (10_000, 3, 5), False),  # outer dim set aside, inner pair decided exactly
        ((1025, 1025), (1024, 1025), False),  # two dims: exact even for a million elements
    ],
)
def test_overlap_cases(dims: tuple[int, ...], strides: tuple[int, ...], expected: bool) -> None:
    assert is_overlapping(dims, strides) is expected
    if math.prod(dims) <= 50_000:
        assert brute_overlapping(dims, strides) is expected


def test_overlap_conservative_beyond_enumeration_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # (2, 2, 2) with strides (2, 3, 4) gives 0, 4, 3, 7, 2, 6, 5, 9: no overlap, but only
    # enumeration shows it. Past the limit the answer is the documented conservative True.
    assert not brute_overlapping((2, 2, 2), (2, 3, 4))
    assert not is_overlapping((2, 2, 2), (2, 3, 4))
    monkeypatch.setattr(layout, "OVERLAP_ENUMERATION_LIMIT", 7)
    assert is_overlapping((2, 2, 2), (2, 3, 4))


small_dims = st.lists(st.integers(1, 4), min_size=0, max_size=5)


@settings(max_examples=300)
@given(small_dims, st.data())
def test_overlap_matches_brute_force(dims: list[int], data: st.DataObject) -> None:
    strides = data.draw(st.lists(st.integers(-9, 9), min_size=len(dims), max_size=len(dims)))
    assert is_overlapping(dims, strides) == brute_overlapping(tuple(dims), tuple(strides))


@settings(max_examples=300)
@given(small_dims, st.data())
def test_overlap_never_misses_without_enumeration(dims: list[int], data: st.DataObject) -> None:
    # Without enumeration the answer may be a false "overlapping", never a false "not".
    strides = data.draw(st.lists(st.integers(-9, 9), min_size=len(dims), max_size=len(dims)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout, "OVERLAP_ENUMERATION_LIMIT", 0)
        if brute_overlapping(tuple(dims), tuple(strides)):
            assert is_overlapping(dims, strides)


def test_an_empty_array_reaches_no_address_twice() -> None:
    # A zero extent anywhere means no index at all, whatever the other strides (a zero stride
    # included): the shared rule said "overlapping", and an empty broadcast DeviceArray was
    # refused as a copy's destination although nothing is written.
    assert not overlapping((0, 2), (0, 0))
    assert not overlapping((3, 0, 4), (5, 6, -2))
    assert overlapping((1, 2), (0, 0))  # one index less than an extent 0: still reached twice

    empty = fake_device_array((0, 2), np.float32, strides=(0, 0))  # no memory is touched
    empty.copy_from_numpy(np.zeros((0, 2), np.float32))  # a no-op, as with C strides


# --- helpers ------------------------------------------------------------------------------------


def test_min_buffer_size() -> None:
    assert min_buffer_size((2, 3, 4, 5), (60, 20, 5, 1)) == 120
    assert min_buffer_size((2, 3, 4, 5), (96, 32, 5, 1)) == 96 + 2 * 32 + 3 * 5 + 4 + 1
    assert min_buffer_size((3, 4), (-4, 1)) == 12
    assert min_buffer_size((3, 4), (0, 1)) == 4
    assert min_buffer_size((), ()) == 1


def test_strides_to_format_examples() -> None:
    assert strides_to_format((2, 3, 4, 5), (60, 20, 5, 1)) == "NCHW"
    assert strides_to_format((2, 3, 4, 5), (60, 1, 15, 3)) == "NHWC"
    assert strides_to_format((2, 3, 4, 5), (1, 40, 10, 2)) == "CHWN"
    assert strides_to_format((2, 3, 4, 5), (96, 32, 5, 1)) == "NCHW"  # padded, not packed
    assert strides_to_format((2, 3, 5), (15, 1, 3)) == "BNM"
    assert strides_to_format((2, 3, 4, 5, 6), (360, 1, 90, 18, 3)) == "NDHWC"
    assert strides_to_format((2,) * 6, (32, 16, 8, 4, 2, 1)) == "ABCDEF"
    # Ties from extent-1 dims go to the common formats: an NHWC tensor with C = 1 has equal C and W
    # strides. Packed, it is NHWC-fully-packed (and not NCHW-fully-packed: C's stride is not H*W).
    assert strides_to_format((2, 1, 3, 4), (12, 1, 4, 1)) == "NHWC"
    # Padded, nothing but the extent-1 C tells NCHW from NHWC, and extent-1 dims do not decide:
    # the first common format along which N, H, W strides do not increase wins.
    assert strides_to_format((2, 1, 3, 4), (15, 1, 5, 1)) == "NCHW"
    assert strides_to_format((1, 1, 1, 1), (1, 1, 1, 1)) == "NCHW"
    # Otherwise letters in decreasing stride order, ties in logical order.
    assert strides_to_format((2, 3, 4, 5), (7, 100, 6, 6)) == "CNHW"
    # Extent-1 dims never decide the order, whatever stride they were given (0 included): an
    # N = 1 tensor whose other dims are NCHW-ordered is NCHW (not CHWN, where stride 0 would
    # sort N last), and one whose other dims are NHWC-ordered is NHWC.
    assert strides_to_format((1, 3, 4, 5), (0, 20, 5, 1)) == "NCHW"
    assert strides_to_format((1, 3, 4, 5), (0, 1, 15, 3)) == "NHWC"
    assert strides_to_format((1, 3, 4, 5), (10**6, 1, 15, 3)) == "NHWC"
    # Beyond the common formats only the dims of extent > 1 are sorted; N keeps its place.
    assert strides_to_format((1, 3, 4, 5), (0, 100, 6, 7)) == "NCWH"
    assert strides_to_format((2, 3, 1, 5), (1, 10, 0, 2)) == "CHWN"
    with pytest.raises(ValueError, match="strides"):
        strides_to_format((2, 3, 4, 5), (60, 20, -5, 1))
    with pytest.raises(ValueError, match="dims has 2 entries"):
        strides_to_format((2, 3), (3, 1))


# --- input validation ----------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3])
def test_non_positive_extents(bad: int) -> None:
    with pytest.raises(
        ValueError, match=rf"dims\[2\] must be a positive extent \(>= 1\), got {bad}"
    ):
        packed_strides((2, 3, bad, 5), "NCHW")
    with pytest.raises(ValueError, match=r"dims\[2\]"):
        is_overlapping((2, 3, bad, 5), (60, 20, 5, 1))
    with pytest.raises(ValueError, match=r"dims\[2\]"):
        from_format(np.zeros(1), (2, 3, bad, 5), "NCHW")


@pytest.mark.parametrize("bad", [True, 2.0, "3", None])
def test_dims_must_be_ints(bad: object) -> None:
    with pytest.raises(TypeError, match=r"dims\[1\] must be an int"):
        packed_strides((2, bad, 4, 5), "NCHW")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"strides\[1\] must be an int"):
        is_fully_packed((2, 3, 4, 5), (60, bad, 5, 1), "NCHW")  # type: ignore[arg-type]


def test_dims_container_types() -> None:
    assert packed_strides(np.array([2, 3, 4, 5]), "NHWC") == (60, 1, 15, 3)  # type: ignore[arg-type]
    assert packed_strides([np.int64(2), np.int32(3), 4, 5], "NHWC") == (60, 1, 15, 3)
    with pytest.raises(TypeError, match=r"dims\[0\] must be an int, got bool"):
        packed_strides(np.array([True, True, True]), "BMN")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"dims\[0\] must be an int, got float"):
        packed_strides(np.array([2.0, 3.0, 4.0]), "BMN")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dims must be a sequence of ints"):
        packed_strides("NCHW", "NCHW")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dims must be a sequence of ints"):
        packed_strides(4, "NCHW")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dims must be one-dimensional"):
        packed_strides(np.ones((2, 2), dtype=int), "NCHW")  # type: ignore[arg-type]


def test_rank_and_length_mismatches() -> None:
    with pytest.raises(ValueError, match=r"dims has 3 entries but format 'NCHW' has 4 dims"):
        packed_strides((2, 3, 4), "NCHW")
    with pytest.raises(ValueError, match=r"dims has 4 entries but format 'BMN' has 3 dims"):
        packed_strides((2, 3, 4, 5), "row_major")
    with pytest.raises(ValueError, match="strides has 3 entries but dims has 4"):
        is_fully_packed((2, 3, 4, 5), (20, 5, 1), "NCHW")
    with pytest.raises(ValueError, match="strides has 3 entries but dims has 4"):
        is_overlapping((2, 3, 4, 5), (20, 5, 1))
    assert not is_packed((2, 3, 4, 5), (60, 20, 5, 1), "NCDHW", "HW")


@pytest.mark.parametrize(
    "predicate",
    [
        lambda s: is_fully_packed((2, 3, 4, 5), s, "NCHW"),
        lambda s: is_packed((2, 3, 4, 5), s, "NCHW", "HW"),
        lambda s: is_spatially_packed((2, 3, 4, 5), s, "NCHW"),
        lambda s: strides_to_format((2, 3, 4, 5), s),
    ],
)
def test_negative_strides_refused(predicate: object) -> None:
    with pytest.raises(
        ValueError, match=r"strides\[0\] is -60: negative strides are not supported"
    ):
        predicate((-60, 20, 5, 1))  # type: ignore[operator]


def test_public_names() -> None:
    for name in layout.__all__:
        assert hasattr(layout, name), name
    assert {
        "packed_strides",
        "is_fully_packed",
        "is_packed",
        "is_spatially_packed",
        "is_overlapping",
        "to_format",
        "from_format",
    } <= set(layout.__all__)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps (Linux)")
def test_import_loads_no_shared_library() -> None:
    code = (
        "import pycudnn.layout, sys\n"
        "maps = open('/proc/self/maps').read()\n"
        "bad = [n for n in ('libcudnn', 'libcutensor', 'libcuda.so', 'libcudart') if n in maps]\n"
        "sys.exit(f'loaded {bad}' if bad else 0)\n"
    )
    package_root = str(Path(layout.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    assert result.returncode == 0, result.stderr
