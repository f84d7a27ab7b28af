"""pycutensor.einsum's new forms are validated in full before any device work (no GPU needed).

NumPy arrays are host memory, so a request that passes every check stops at "host memory";
one that breaks a rule stops earlier, with the rule in the message.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pycutensor

HOST = "in host memory"
A = np.ones((4, 5), np.float32)
B = np.ones((5, 6), np.float32)
S = np.ones((5, 5), np.float32)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("ii->i", S), {}),  # a diagonal
        (("ii", S), {}),  # a trace
        (("ij,jk->ik", A, B.astype(np.float64)), {}),  # promotion: float64
        (("ij,jk->ik", A.astype(np.float16), B), {"out": np.zeros((4, 6), np.float32)}),
        ((A, [0, 1], B, [1, 2], [0, 2]), {}),  # the sublist form
        ((A, [0, Ellipsis]), {}),
        (("ij,jk,kl->il", A, B, B.T), {"optimize": False}),
        (("ij,jk,kl->il", A, B, B.T), {"optimize": "optimal"}),
        (("ij,jk,kl->il", A, B, B.T), {"optimize": ["einsum_path", (1, 2), (0, 1)]}),
        (("ij,jk,kl->il", A, B, B.T), {"optimize": [(0, 1, 2)]}),
        (("iij,jk->ik", np.ones((4, 4, 5), np.complex64), B.astype(np.complex128)), {}),
        (("ij,jk->ik", A, B), {"out": np.zeros((4, 6), np.float64)}),  # widened into out
        (("ij,jk->ik", A, B), {"dtype": np.float64}),  # computed in float64
        (("ij->ji", A.astype(np.float16)), {"dtype": "float64", "out": np.zeros((5, 4))}),
    ],
)
def test_valid_requests_only_lack_a_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=HOST):
        pycutensor.einsum(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("ii->i", np.ones((4, 5), np.float32)), {}, ValueError, "collapsing index 'i'"),
        (("ij,jk->ik", A.astype(np.int32), B.astype(np.int32)), {}, TypeError,
         "not a cuTENSOR data type"),
        (("ij,jk->ik", A, B.astype(np.complex64)), {}, TypeError, "cast operand 0 to complex64"),
        (("ij,jk->ik", A.astype(np.float16), B), {"out": np.zeros((4, 6), np.float16)}, TypeError,
         "out has dtype float16, the result has float32"),
        ((A, [0, 52]), {}, ValueError, r"valid range \[0, 52\)"),
        ((A, "ij"), {}, TypeError, "sublist form"),
        ((A,), {}, ValueError, "needs a sublist after each operand"),
        (("ij,jk,kl->il", A, B, B.T), {"optimize": [(0, 1)]}, ValueError, "leaves 2 tensors"),
        (("ij,jk,kl->il", A, B, B.T), {"optimize": [(0, 5), (0, 1)]}, ValueError,
         "refers to tensor 5"),
        (("ij,jk,kl->il", A, B, B.T), {"optimize": 3}, TypeError, "strategy name or a path"),
        (("ii", np.ones((0, 0), np.float32)), {}, ValueError, "summed over extent 0"),
        (("ij,jk->ik", A, B), {"out": np.zeros((4, 6)), "beta": 1.0}, ValueError,
         "beta other than 0 needs out of the computed dtype"),
        (("ij,jk->ik", A, B), {"out": np.zeros((4, 6), np.complex64)}, TypeError,
         "cuTENSOR converts only"),
        (("ij,jk->ik", A, B), {"dtype": np.float16}, TypeError,
         "cannot be cast to dtype=float16 safely"),
        (("ij,jk->ik", A, B), {"dtype": "no-such-type"}, TypeError, "is not a dtype"),
    ],
)  # fmt: skip
def test_invalid_requests_name_the_rule(
    args: tuple[Any, ...], kwargs: dict[str, Any], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        pycutensor.einsum(*args, **kwargs)


def test_a_diagonal_of_a_broadcast_view_is_checked_like_any_operand() -> None:
    # stride 0 along a repeated label: the diagonal view has stride 0 there, summed in that
    # tensor alone, which cuTENSOR cannot express (it broadcasts by omitting a mode)
    view = np.broadcast_to(np.ones(5, np.float32), (5, 5))
    with pytest.raises(ValueError, match="stride 0"):
        pycutensor.einsum("ii->", np.lib.stride_tricks.as_strided(view, (5, 5), (0, 0)))


@pytest.mark.parametrize("which", ["operand", "out"])
def test_a_misaligned_pointer_is_refused_before_any_device_work(which: str) -> None:
    # The operations on arrays refuse it (check_pointer); einsum described such an array to
    # cuTENSOR with an alignment below its element size. einsum's first call of a key runs
    # _first_call (the cache lookup before it needs a GPU's handle; its checks do not).
    from standins import BASE, fake_device_array

    from pycutensor._einsum import _first_call, _inspect

    odd = BASE + 0x5000_0002  # 2-byte aligned: float32 elements need 4
    a = fake_device_array((4, 5), np.float32, ptr=odd if which == "operand" else None)
    b = fake_device_array((5, 6), np.float32)
    out = fake_device_array((4, 6), np.float32, ptr=odd if which == "out" else None)
    views, out_view, beta_zero, _, key = _inspect(
        "ij,jk->ik", [a, b], out, 0, None, 0.0, "greedy", None
    )
    rule = f"{'operand 0' if which == 'operand' else 'out'}'s data pointer 0x{odd:x} is not aligned"
    with pytest.raises(ValueError, match=rule + " to its 4-byte elements"):
        _first_call("ij,jk->ik", views, out_view, None, beta_zero, key)


def test_an_out_that_overlaps_itself_is_refused_by_its_name() -> None:
    # The rule was there, but the message named cuTENSOR's tensor (the output C, or B for a
    # permutation), not the argument.
    base = np.zeros(7, np.float32)
    out = np.lib.stride_tricks.as_strided(base, (4, 4), (4, 4))  # (i, j) -> i + j
    for args in (("ij,jk->ik", A[:, :4], B[:4, :4]), ("ij->ji", S[:4, :4])):
        with pytest.raises(
            ValueError, match=r"out has overlapping strides \(1, 1\) for shape \(4, 4\)"
        ):
            pycutensor.einsum(*args, out=out)
