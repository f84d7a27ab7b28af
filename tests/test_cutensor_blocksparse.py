"""CPU tier of block-sparse tensors: the structure rules of cutensorCreateBlockSparseTensorDescriptor
and cutensorCreateBlockSparseContraction (cutensor.h), dense conversions, and the error for what
needs a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from _nvbind.cuda import gpu_available
from pycutensor.distributed import BlockSparseTensor, BlockStructure, DeviceRequiredError
from pycutensor.distributed.blocksparse import check_sections

# The header's example: rows in 5 sections (4, 2, 3, 4, 5), columns in 3 (2, 3, 7), 8 blocks.
HEADER = BlockStructure(
    sections=((4, 2, 3, 4, 5), (2, 3, 7)),
    blocks=((0, 0), (3, 0), (1, 1), (2, 1), (4, 1), (0, 2), (2, 2), (4, 2)),
)


def test_the_headers_example() -> None:
    assert HEADER.extents == (18, 12)
    assert HEADER.block_shape(1) == (4, 2)  # "Block 1": section 3 of the rows, 0 of the columns
    # "each block is stored contiguously in column-major order; this is equivalent to passing
    # stride=nullptr": the header lists these strides
    assert [HEADER.block_strides(i) for i in range(8)] == [
        (1, 4), (1, 4), (1, 2), (1, 3), (1, 5), (1, 4), (1, 3), (1, 5),
    ]  # fmt: skip


def test_split_and_assemble_are_inverse_on_the_nonzero_blocks() -> None:
    rng = np.random.default_rng(0)
    dense = rng.standard_normal(HEADER.extents)
    blocks = HEADER.split(dense)
    assert all(b.flags.f_contiguous for b in blocks)
    back = HEADER.assemble(blocks)
    mask = np.zeros(HEADER.extents, bool)
    for i in range(len(HEADER.blocks)):
        mask[HEADER.block_slices(i)] = True
    np.testing.assert_array_equal(back[mask], dense[mask])
    assert (back[~mask] == 0).all()
    stored = sum(np.prod(HEADER.block_shape(i)) for i in range(8))
    assert HEADER.nonzero_fraction() == stored / (18 * 12)


def test_stride_compatibility_rule_of_the_header() -> None:
    # "strides of block #0: 5, 1, 10, 20 ... block #1: 10, 1, 30, 60 ... this is allowed"
    BlockStructure(((5, 5), (1,), (2,), (2,)), ((0, 0, 0, 0), (1, 0, 0, 0)),
                   strides=((5, 1, 10, 20), (10, 1, 30, 60)))  # fmt: skip
    # "block #2: 1, 5, 50, 100 ... this is _not_ allowed"
    with pytest.raises(ValueError, match="stride compatibility"):
        BlockStructure(((5, 5), (1,), (2,), (2,)), ((0, 0, 0, 0), (1, 0, 0, 0)),
                       strides=((5, 1, 10, 20), (1, 5, 50, 100)))  # fmt: skip


@pytest.mark.parametrize(
    ("sections", "blocks", "match"),
    [
        ((), ((),), "1 to 32 modes"),
        (((2,),) * 33, ((0,) * 33,), "1 to 32 modes"),
        (((2, 0),), ((0,),), r"sections\[0\]\[1\] must be >= 1"),
        (((),), ((0,),), "one or more section extents"),
        (((2, 3),), (), "at least one"),
        (((2, 3),), ((2,),), "outside mode 0's 2 sections"),
        (((2, 3), (4,)), ((0,),), "1 coordinates for 2 modes"),
        (((2, 3),), ((1,), (1,)), "twice"),
    ],
)
def test_bad_structures_are_refused_naming_the_argument(
    sections: tuple, blocks: tuple, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        BlockStructure(sections, blocks)


@pytest.mark.parametrize(
    ("sections", "blocks", "match"),
    [
        (2.5, ((0,),), "sections must be a sequence"),
        (((2, "3"),), ((0,),), r"sections\[0\]\[1\] must be an int"),
        (((2, 3),), ((0.0,),), r"blocks\[0\]\[0\] must be an int"),
        (((2, 3),), "0", "blocks must be a sequence"),
    ],
)
def test_wrong_types_are_refused_naming_the_argument(
    sections: object, blocks: object, match: str
) -> None:
    with pytest.raises(TypeError, match=match):
        BlockStructure(sections, blocks)  # type: ignore[arg-type]


def test_a_mode_has_the_same_sections_everywhere() -> None:
    # cutensor.h: "For every mode, the segmentation of that mode must be identical in all tensors
    # that it occurs in"
    a = BlockStructure(((2, 3), (4, 4)), ((0, 0),))
    b = BlockStructure(((4, 4), (5,)), ((0, 0),))
    check_sections([(a, (ord("m"), ord("k"))), (b, (ord("k"), ord("n")))])
    c = BlockStructure(((4, 3), (5,)), ((0, 0),))
    with pytest.raises(ValueError, match="'k' is cut into sections"):
        check_sections([(a, (ord("m"), ord("k"))), (c, (ord("k"), ord("n")))])


def test_data_types_and_the_gpu() -> None:
    with pytest.raises(TypeError, match="R_32F, R_64F, C_32F, C_64F"):
        BlockSparseTensor(HEADER, np.float16)
    if gpu_available()[0]:
        pytest.skip("a GPU is usable here")
    with pytest.raises(DeviceRequiredError, match="block-sparse tensor descriptor"):
        BlockSparseTensor(HEADER, np.float32)


def test_an_output_block_that_reaches_an_element_twice_is_refused() -> None:
    # cuTENSOR writes every element of every output block: a block whose strides reach one
    # address from two indices (here all four of a 2x2 block's land on three addresses) took
    # two results in one place. Blocks overlapping one another were refused; one overlapping
    # itself was handed on. Views stand in for device arrays (nothing reaches C).
    from _nvbind.view import ArrayView
    from pycutensor.distributed.blocksparse import check_output_blocks

    f4 = np.dtype("f4")
    packed = ArrayView(0x1000, (2, 2), (1, 2), f4, 0, False, None)
    check_output_blocks([packed], [])
    folded = ArrayView(0x2000, (2, 2), (1, 1), f4, 0, False, None)
    with pytest.raises(ValueError, match=r"c\.blocks\[1\] .*reach some elements twice"):
        check_output_blocks([packed, folded], [])
