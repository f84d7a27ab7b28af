"""checks.check_laid_out_like: the one check of an array against the layout a descriptor was made
for (an operation's operands at execute, a function's ``out`` against its output operand)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest

from _nvbind.arrays import ArrayView, as_array_view
from pycutensor.checks import check_laid_out_like


def _view(
    shape: tuple[int, ...], dtype: type[np.generic] = np.float32, order: Literal["C", "F"] = "C"
) -> ArrayView:
    return as_array_view(np.zeros(shape, dtype=dtype, order=order), name="x")


def test_matching_array_passes() -> None:
    check_laid_out_like(_view((2, 3)), "out", np.dtype(np.float32), (2, 3), (3, 1), "c", "why")


def test_dtype_mismatch_is_a_type_error_naming_both() -> None:
    with pytest.raises(TypeError, match=r"^out has dtype float64, c has float32: they must match$"):
        check_laid_out_like(
            _view((2, 3), np.float64), "out", np.dtype(np.float32), (2, 3), (3, 1), "c", "why"
        )


def test_shape_mismatch_is_a_value_error_with_both_layouts() -> None:
    expected = (
        "a must be laid out like the operation's a (it was described for that): the operation's "
        "a has shape (3, 2) and strides (2, 1), a has (2, 3) and (3, 1)"
    )
    with pytest.raises(ValueError) as err:
        check_laid_out_like(_view((2, 3)), "a", np.dtype(np.float32), (2, 3)[::-1], (2, 1),
                            "the operation's a", "it was described for that")  # fmt: skip
    assert str(err.value) == expected


def test_strides_alone_differing_are_refused() -> None:
    # Same shape and dtype, Fortran order: strides (1, 2) against the C order's (3, 1).
    with pytest.raises(ValueError, match=r"strides \(3, 1\), out has \(2, 3\) and \(1, 2\)"):
        check_laid_out_like(
            _view((2, 3), order="F"), "out", np.dtype(np.float32), (2, 3), (3, 1), "c", "why"
        )
