"""The legacy operations end with one keyword list, ``LaunchKeywords`` (alpha, beta, handle,
stream), declared once; the backward activation and pooling take their forward's settings too.
Each signature spells the keywords out (help(), inspect.signature), a misspelt one is refused
before anything runs, and the defaults reach the cuDNN call (CPU tier: the calls that take the
handle are recorded, as in test_ops_backward.py)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from standins import fake_device_array as fake
from test_ops_backward import Recorder, rec, value

from pycudnn import ops

__all__ = ["rec"]  # the recorder fixture, shared with test_ops_backward.py

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# Every legacy operation that ends with the launch keywords (add_tensor's beta defaults to 1 and
# op_tensor has alpha1 and alpha2: they spell out their own).
LAUNCHED = [
    "activation_backward",
    "activation_forward",
    "convolution_backward_bias",
    "convolution_backward_data",
    "convolution_backward_filter",
    "convolution_forward",
    "pooling_backward",
    "pooling_forward",
    "reduce_tensor",
    "softmax_backward",
    "softmax_forward",
    "transform_tensor",
]

# The launch keywords' documented defaults (LaunchKeywords' docstring, the package docstring).
LAUNCH_DEFAULTS = {"alpha": 1.0, "beta": 0.0, "handle": None, "stream": None}


def _keywords(fn: Callable[..., Any]) -> dict[str, Any]:
    params = inspect.signature(fn).parameters.values()
    assert inspect.Parameter.VAR_KEYWORD not in {p.kind for p in params}, fn.__name__
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_the_list_covers_every_public_operation_but_the_two_with_their_own_scalars() -> None:
    functions = {n for n in ops.__all__ if inspect.isfunction(getattr(ops, n))}
    assert functions - set(LAUNCHED) == {"add_tensor", "op_tensor", "smoke_checks"}
    assert set(ops.LaunchKeywords.__annotations__) == set(LAUNCH_DEFAULTS)


@pytest.mark.parametrize("name", LAUNCHED)
def test_each_signature_spells_out_the_launch_keywords(name: str) -> None:
    shown = _keywords(getattr(ops, name))
    assert {k: shown[k] for k in LAUNCH_DEFAULTS} == LAUNCH_DEFAULTS
    assert "kw" not in shown


def test_the_two_with_their_own_scalars_keep_them() -> None:
    assert _keywords(ops.add_tensor) == {**LAUNCH_DEFAULTS, "beta": 1.0}
    assert _keywords(ops.op_tensor)["alpha1"] == _keywords(ops.op_tensor)["alpha2"] == 1.0


@pytest.mark.parametrize(
    ("forward", "backward", "typed", "settings"),
    [
        ("activation_forward", "activation_backward", "ActivationKeywords",
         {"coef": None, "swish_beta": 1.0}),
        ("pooling_forward", "pooling_backward", "PoolingKeywords",
         {"mode": "max", "window": (2, 2), "pads": None, "strides": None,
          "nan_propagation": False}),
    ],
)  # fmt: skip
def test_backward_settings_default_as_the_forwards(
    forward: str, backward: str, typed: str, settings: dict[str, Any]
) -> None:
    fwd, bwd = _keywords(getattr(ops, forward)), _keywords(getattr(ops, backward))
    assert set(getattr(ops, typed).__annotations__) == set(settings) | set(LAUNCH_DEFAULTS)
    for key, default in settings.items():
        assert fwd[key] == bwd[key] == default, key


HOST = np.zeros((2, 3, 4, 4), np.float32)

# The positional arguments each operation needs; host arrays, which it would refuse later.
ARGS = {
    "activation_backward": 3, "convolution_backward_data": 2, "convolution_backward_filter": 2,
    "convolution_forward": 2, "pooling_backward": 3, "softmax_backward": 2,
}  # fmt: skip


@pytest.mark.parametrize("name", LAUNCHED)
def test_a_misspelt_keyword_is_refused_first_with_a_suggestion(name: str) -> None:
    fn = getattr(ops, name)
    args = [HOST] * ARGS.get(name, 1)
    with pytest.raises(TypeError, match=rf"^{name}\(\) .* 'alpah'; did you mean 'alpha'\?$"):
        fn(*args, alpah=0.5)
    with pytest.raises(TypeError, match=rf"{name}\(\) got an unexpected keyword argument 'hndle'"):
        fn(*args, hndle=None)


def test_a_backward_keyword_of_another_family_is_refused() -> None:
    # (type checkers refuse both as well: the keywords are typed)
    with pytest.raises(TypeError, match=r"activation_backward.*'window'"):
        ops.activation_backward(HOST, HOST, HOST, window=(2, 2))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"pooling_backward.*'coef'"):
        ops.pooling_backward(HOST, HOST, HOST, coef=1.0)  # type: ignore[call-arg]


def test_the_default_scalars_reach_the_call(rec: Recorder) -> None:
    y, dy, x, dx = (fake((2, 3, 4, 5)) for _ in range(4))
    ops.activation_backward(y, dy, x, dx=dx, handle=rec.handle)
    ops.softmax_backward(y, dy, dx=dx, handle=rec.handle)
    db = fake((1, 3, 1, 1))
    ops.convolution_backward_bias(dy, db=db, handle=rec.handle)
    for call in ("cudnnActivationBackward", "cudnnSoftmaxBackward", "cudnnConvolutionBackwardBias"):
        a = rec.last(call)
        assert (value(a["alpha"]), value(a["beta"])) == (1.0, 0.0), call
    ops.convolution_backward_bias(dy, db=db, alpha=0.5, beta=0.25, handle=rec.handle)
    a = rec.last("cudnnConvolutionBackwardBias")
    assert (value(a["alpha"]), value(a["beta"])) == (0.5, 0.25)


def test_the_backward_pooling_settings_default_as_the_forwards(rec: Recorder) -> None:
    x, dx = fake((1, 2, 8, 8)), fake((1, 2, 8, 8))
    y, dy = fake((1, 2, 4, 4)), fake((1, 2, 4, 4))
    ops.pooling_backward(y, dy, x, dx=dx, handle=rec.handle)
    pool = rec.last("cudnnPoolingBackward")["poolingDesc"]
    # max pooling over 2x2 windows, stride the window, no padding
    assert (pool.mode, pool.window, pool.pads, pool.strides) == ("max", (2, 2), (0, 0), (2, 2))


def test_the_backward_activation_settings_default_as_the_forwards(rec: Recorder) -> None:
    y, dy, x, dx = (fake((2, 3, 4, 5)) for _ in range(4))
    ops.activation_backward(y, dy, x, "swish", dx=dx, handle=rec.handle)
    act = rec.last("cudnnActivationBackward")["activationDesc"]
    assert act.mode == "swish" and act.coef == 0.0 and act.swish_beta == 1.0
