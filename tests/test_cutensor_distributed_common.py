"""The host checks the cuTENSORMp, cuTENSORMg and block-sparse plans share
(:mod:`pycutensor.distributed._common`): no GPU and no library needed.

Expected values come from ``cutensor.h`` (``cutensorWorksizePreference_t``: MIN 1, DEFAULT 2,
MAX 3) and from the user guide's contraction table (32-bit real data computes in 32F with float32
scalars by default, 64-bit in 64F with float64 scalars).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pycutensor.distributed._common import (
    checked_contraction,
    copy_modes,
    modes_of,
    scalar_array,
    workspace_preference_value,
)


def _tensor(extents: tuple[int, ...], data_type: str = "R_32F") -> SimpleNamespace:
    return SimpleNamespace(extents=extents, ndim=len(extents), data_type=data_type)


def test_copy_modes_default_to_positions_and_match_by_label() -> None:
    dst, src = _tensor((2, 3)), _tensor((3, 2))
    assert copy_modes(dst, dst, None, None) == ((0, 1), (0, 1))
    assert copy_modes(dst, src, "ij", "ji") == ((ord("i"), ord("j")), (ord("j"), ord("i")))


def test_copy_modes_refuse_other_modes_and_other_extents() -> None:
    dst, src = _tensor((2, 3)), _tensor((2, 4))
    with pytest.raises(ValueError, match="name other modes"):
        copy_modes(dst, dst, "ij", "ik")
    with pytest.raises(ValueError, match="mode 1 has extent 3 in dst, 4 in src"):
        copy_modes(dst, src, None, None)


def test_checked_contraction_takes_the_tables_compute_type_and_scalar() -> None:
    a, b, c = _tensor((4, 5)), _tensor((5, 6)), _tensor((4, 6))
    modes, compute, scalar = checked_contraction(a, "mk", b, "kn", c, "mn", None)
    assert modes == ((ord("m"), ord("k")), (ord("k"), ord("n")), (ord("m"), ord("n")))
    assert (compute, scalar) == ("32F", np.dtype(np.float32))
    d = [_tensor(t.extents, "R_64F") for t in (a, b, c)]
    assert checked_contraction(d[0], "mk", d[1], "kn", d[2], "mn", None)[1:] == (
        "64F",
        np.dtype(np.float64),
    )
    with pytest.raises(ValueError, match="extent"):
        checked_contraction(a, "mk", _tensor((7, 6)), "kn", c, "mn", None)


def test_workspace_preference_value() -> None:
    assert [workspace_preference_value(w) for w in ("min", "DEFAULT", "max")] == [1, 2, 3]
    with pytest.raises(ValueError, match="workspace_preference must be 'min', 'default' or 'max'"):
        workspace_preference_value("most")


def test_a_mode_past_int32_is_refused_not_wrapped_onto_another() -> None:
    """cuTENSORMp/Mg take int32 modes: 107 + 2**32 went to C as 107, so C[i,j,K] = A[i,k] B[K,j]
    became a batched product over k."""
    i, j, k = 105, 106, 107
    a, b, c = _tensor((4, 5)), _tensor((5, 6)), _tensor((4, 6, 5))
    with pytest.raises(ValueError, match=r"modes_b: mode 4294967403 does not fit the int32"):
        checked_contraction(a, [i, k], b, [k + 2**32, j], c, [i, j, k + 2**32], None)
    assert modes_of([-(2**31), 2**31 - 1], 2, "modes_a") == (-(2**31), 2**31 - 1)


def test_the_distributed_scalars_are_checked_as_the_single_gpu_ones() -> None:
    """np.array(alpha, dtype=float32) dropped an imaginary part and parsed strings."""
    f32 = np.dtype(np.float32)
    assert scalar_array(2.5, f32, "alpha").dtype == f32 and scalar_array(2.5, f32, "alpha") == 2.5
    with pytest.raises(ValueError, match=r"alpha=.* is complex"):
        scalar_array(np.complex128(2 + 3j), f32, "alpha")
    with pytest.raises(TypeError, match="beta must be a number"):
        scalar_array("0.5", f32, "beta")
    assert scalar_array(1j, np.dtype(np.complex64), "alpha") == 1j


def test_block_sparse_output_blocks_are_checked_before_cutensor_writes_them() -> None:
    """Output blocks given read-only, twice, or overlapping an input block were handed to C."""
    from standins import fake_device_array as fake

    from pycutensor.distributed.blocksparse import check_output_blocks

    c = [fake((4, 4)), fake((4, 4))]
    a = [fake((4, 4))]
    check_output_blocks(c, [("a", a)])  # separate memory: fine
    with pytest.raises(ValueError, match=r"c.blocks\[1\] is read-only"):
        check_output_blocks([c[0], fake((4, 4), readonly=True)], [])
    with pytest.raises(ValueError, match=r"c.blocks\[0\] and c.blocks\[1\] share memory"):
        check_output_blocks([c[0], c[0]], [])
    inside = fake((2, 2), ptr=c[1].ptr + 16)
    with pytest.raises(ValueError, match=r"b.blocks\[0\] overlaps c.blocks\[1\]"):
        check_output_blocks(c, [("a", a), ("b", [inside])])


def test_a_host_copy_destination_must_be_writable_and_one_element_per_index() -> None:
    from types import SimpleNamespace

    from pycutensor import _bindings_mg as mgb
    from pycutensor.distributed.mg import check_host_destination

    host = (int(mgb.CUTENSOR_MG_DEVICE_HOST),)
    ok = np.zeros((4, 3), np.float32)
    check_host_destination(SimpleNamespace(devices=host, arrays=[ok]))
    check_host_destination(SimpleNamespace(devices=(0,), arrays=[]))  # device tensors: not here
    broadcast = np.broadcast_to(np.zeros(3, np.float32), (4, 3))  # read-only, stride 0
    with pytest.raises(ValueError, match="read-only"):
        check_host_destination(SimpleNamespace(devices=host, arrays=[broadcast]))
    writable = np.lib.stride_tricks.as_strided(ok, (4, 3), (0, 4))
    with pytest.raises(ValueError, match="reach some elements twice"):
        check_host_destination(SimpleNamespace(devices=host, arrays=[writable]))
