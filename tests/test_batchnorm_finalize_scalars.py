"""``Graph.batchnorm_finalize`` checks its numbers as the other norms do: cuDNN planned a NaN
epsilon and a momentum of 5, and refused an element count of 1.5 only at build."""

from __future__ import annotations

import math
from typing import Any

import pytest

import pycudnn
from pycudnn.graph import GraphError


def _finalize(**kw: Any) -> Any:
    g = pycudnn.Graph("bn_finalize")
    t = [g.tensor([1, 32, 1, 1], dtype="float32", name=n) for n in ("sum", "sq", "scale", "bias")]
    args: dict[str, Any] = {"epsilon": 1e-5, "accum_count": 64, **kw}
    if "momentum" in kw:
        args["prev_running_mean"] = g.tensor([1, 32, 1, 1], dtype="float32", name="rm")
        args["prev_running_var"] = g.tensor([1, 32, 1, 1], dtype="float32", name="rv")
    return g.batchnorm_finalize(*t, **args)


@pytest.mark.parametrize("epsilon", [math.nan, math.inf, -1.0, 0.0, 10**400])
def test_an_epsilon_not_finite_and_positive_is_refused(epsilon: float) -> None:
    with pytest.raises(GraphError, match="epsilon"):
        _finalize(epsilon=epsilon)


@pytest.mark.parametrize("momentum", [math.nan, math.inf, -1.0, 5.0])
def test_a_momentum_outside_0_to_1_is_refused(momentum: float) -> None:
    with pytest.raises(GraphError, match="momentum"):
        _finalize(momentum=momentum)


@pytest.mark.parametrize("count", [1.5, 0, -3, math.nan])
def test_an_element_count_not_a_whole_number_of_at_least_1_is_refused(count: float) -> None:
    with pytest.raises(GraphError, match="accum_count"):
        _finalize(accum_count=count)


def test_good_numbers_are_taken() -> None:
    out = _finalize(epsilon=1e-3, accum_count=128.0, momentum=0.1)
    assert sorted(out) == [
        "eq_bias", "eq_scale", "inv_variance", "mean", "next_running_mean", "next_running_var",
    ]  # fmt: skip
