"""Layer and RMS norms as LLMs use them, and the norm scalar rules, on CPU: real cuDNN plans for
the committed H100 properties without a GPU.

``x [B, S, E]`` with scale and bias ``[1, 1, E]`` normalises over the dims where the scale
varies (stats ``[B, S, 1]``), as NVIDIA's frontend does, with no hand folding; epsilon and
momentum may be tensors set per execution; NaN, infinite and out-of-range values are refused
before cuDNN sees them (cuDNN would plan a graph that computes NaN).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from versioned import skip_unless_cudnn

import pycudnn
from pycudnn.graph import Graph, GraphError

B, S, E = 4, 128, 1024


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def tokens(g: Graph, name: str = "x", dtype: str = "bfloat16") -> Any:
    return g.tensor([B, S, E], dtype=dtype, name=name)


def param(g: Graph, name: str, dims: list[int] | None = None) -> Any:
    return g.tensor(dims or [1, 1, E], dtype="float32", name=name)


@pytest.mark.parametrize("mode", ["layer", "rms"])
@pytest.mark.parametrize("training", [True, False])
def test_norm_over_the_trailing_dim_plans(
    props: pycudnn.DeviceProperties, mode: str, training: bool
) -> None:
    g = Graph(f"{mode}norm")
    x = tokens(g)
    if mode == "layer":
        out = g.layernorm(x, param(g, "scale"), param(g, "bias"), training=training)
    else:
        out = g.rmsnorm(x, param(g, "scale"), training=training)
    assert out.y.dims == x.dims and out.y.strides == x.strides
    if training:
        assert out.inv_variance is not None and out.inv_variance.dims == (B, S, 1)
        assert (out.mean is None) == (mode == "rms")
    assert g.operations[-1].attrs["norm_axes"] == (2,)
    g.build(device_properties=props, cache=False)


@pytest.mark.parametrize("mode", ["layer", "rms"])
def test_norm_backward_over_the_trailing_dim_plans(
    props: pycudnn.DeviceProperties, mode: str
) -> None:
    g = Graph(f"{mode}norm_backward")
    x, dy = tokens(g), tokens(g, "dy")
    inv = g.tensor([B, S, 1], dtype="float32", name="inv_variance")
    if mode == "layer":
        mean = g.tensor([B, S, 1], dtype="float32", name="mean")
        grads = g.layernorm_backward(dy, x, param(g, "scale"), mean, inv)
    else:
        grads = g.rmsnorm_backward(dy, x, param(g, "scale"), inv)
    assert grads.dscale.dims == (1, 1, E) and grads.dx.dims == x.dims
    g.build(device_properties=props, cache=False)


def test_every_dim_but_the_first_stays_the_default() -> None:
    # [1, S, E] scale: the original rule (each sample normalised over S and E), stats [B, 1, 1]
    g = Graph("whole")
    out = g.layernorm(
        tokens(g), param(g, "scale", [1, S, E]), param(g, "bias", [1, S, E]), training=True
    )
    assert out.mean is not None and out.mean.dims == (B, 1, 1)
    assert g.operations[-1].attrs["norm_axes"] == (1, 2)


def test_a_scale_of_another_shape_is_refused_with_both_forms() -> None:
    g = Graph("bad_scale")
    with pytest.raises(
        GraphError,
        match=r"dims must be \[1, 128, 1024\] \(or x's dims with 1 .*"
        r"\[1, 1, E\] for x \[B, S, E\]",
    ):
        g.layernorm(tokens(g), param(g, "scale", [1, 1, 7]), param(g, "bias", [1, 1, 7]))
    with pytest.raises(GraphError, match="layernorm bias 'b2'"):
        g.layernorm(tokens(g, "x2"), param(g, "s2"), param(g, "b2", [1, S, E]))


def test_epsilon_as_a_tensor_set_per_execution(props: pycudnn.DeviceProperties) -> None:
    g = Graph("eps")
    eps = g.scalar(1e-5, dtype="float32", rank=3, name="epsilon")
    g.layernorm(tokens(g), param(g, "scale"), param(g, "bias"), epsilon=eps, training=True)
    op = g.operations[-1]
    assert op.inputs["epsilon"] is eps and op.attrs["epsilon"] is None
    plan = g.build(device_properties=props, cache=False)
    assert eps.uid in plan.uids


def test_momentum_as_a_tensor(props: pycudnn.DeviceProperties) -> None:
    g = Graph("bn")
    x = g.tensor([8, 32, 16, 16], [8192, 1, 512, 32], dtype="float16", name="x")
    p = [1, 32, 1, 1]
    rm = g.tensor(p, dtype="float32", name="running_mean")
    rv = g.tensor(p, dtype="float32", name="running_var")
    momentum = g.scalar(0.1, dtype="float32", rank=4, name="momentum")
    out = g.batchnorm(
        x,
        param(g, "scale", p),
        param(g, "bias", p),
        running_mean=rm,
        running_var=rv,
        momentum=momentum,
    )
    assert out.running_mean is not None
    assert g.operations[-1].inputs["momentum"] is momentum
    g.build(device_properties=props, cache=False)


BAD_EPSILONS = [0.0, -1e-5, math.nan, math.inf, -math.inf, True, "1e-5"]


@pytest.mark.parametrize("epsilon", BAD_EPSILONS)
def test_bad_epsilons_are_refused(epsilon: Any) -> None:
    g = Graph("bad_eps")
    x, scale, bias = tokens(g), param(g, "scale"), param(g, "bias")
    with pytest.raises(GraphError, match=r"layernorm epsilon must be a (finite positive )?number"):
        g.layernorm(x, scale, bias, epsilon=epsilon)
    dy = tokens(g, "dy")
    stat = g.tensor([B, S, 1], dtype="float32", name="stat")
    with pytest.raises(GraphError, match=r"epsilon must be a (finite positive )?number"):
        g.layernorm_backward(dy, x, scale, stat, stat, epsilon=epsilon)
    assert g.operations == []


@pytest.mark.parametrize("momentum", [-0.1, 1.5, math.nan, math.inf])
def test_bad_momenta_are_refused(momentum: float) -> None:
    g = Graph("bad_momentum")
    x = g.tensor([8, 32, 4, 4], dtype="float16", name="x")
    p = [1, 32, 1, 1]
    rm = g.tensor(p, dtype="float32", name="rm")
    rv = g.tensor(p, dtype="float32", name="rv")
    with pytest.raises(GraphError, match=r"batchnorm momentum must be in \[0, 1\]"):
        g.batchnorm(
            x,
            param(g, "s", p),
            param(g, "b", p),
            running_mean=rm,
            running_var=rv,
            momentum=momentum,
        )


def test_scalar_tensors_must_be_one_float32() -> None:
    g = Graph("bad_tensors")
    x, scale, bias = tokens(g), param(g, "scale"), param(g, "bias")
    device = g.tensor([1, 1, 1], dtype="float32", name="device_eps")
    with pytest.raises(GraphError, match=r"'device_eps' must be a by-value scalar .*set_scalar"):
        g.layernorm(x, scale, bias, epsilon=device)
    half = g.scalar(1e-5, dtype="float16", rank=3, name="half_eps")
    with pytest.raises(GraphError, match="epsilon 'half_eps': a epsilon tensor is one float32"):
        g.layernorm(x, scale, bias, epsilon=half)


def test_zero_centered_gamma(props: pycudnn.DeviceProperties) -> None:
    g = Graph("zc")
    x = g.tensor([B * S, E, 1], dtype="bfloat16", name="x")
    scale = g.tensor([1, E, 1], dtype="float32", name="gamma_minus_one")
    bias = g.tensor([1, E, 1], dtype="float32", name="bias")
    g.layernorm(x, scale, bias, training=True, zero_centered_gamma=True)
    norm = g.operations[-1]
    # the norm reads scale + 1 (a pointwise ADD in front of it), not the stored tensor
    assert norm.attrs["zero_centered_gamma"] and norm.inputs["scale"] is not scale
    assert norm.inputs["scale"].producer is g.operations[-2]
    g.build(device_properties=props, cache=False)
    # over trailing dims cuDNN refuses the statistics at finalize: refused first, with the fold
    g2 = Graph("zc_trailing")
    with pytest.raises(GraphError, match=r"fold x to \[rows, features, 1\]"):
        g2.rmsnorm(tokens(g2), param(g2, "scale"), zero_centered_gamma=True)


def test_reference_follows_the_norm_axes() -> None:
    from pycudnn.verification.reference_attention import norm_forward

    g = Graph("ref")
    g.layernorm(tokens(g), param(g, "scale"), param(g, "bias"), training=True, epsilon=1e-3)
    op = g.operations[-1]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, S, E))
    scale = rng.standard_normal((1, 1, E))
    out = norm_forward(op, {"x": x, "scale": scale, "bias": np.zeros((1, 1, E))})
    # independent: each token normalised over its own E features
    t = x[1, 5]
    want = (t - t.mean()) / np.sqrt(t.var() + 1e-3) * scale[0, 0]
    np.testing.assert_allclose(out["y"][1, 5], want, rtol=1e-12)
    assert out["mean"].shape == (B, S, 1)


@pytest.mark.parametrize("epsilon", [0.0, math.nan, math.inf])
def test_adalayernorm_refuses_bad_epsilons(epsilon: float) -> None:
    skip_unless_cudnn((9, 7), "adaptive layer norm (ADA_LAYER_NORM)")
    g = Graph("ada")
    x = g.tensor([B, S, E], dtype="float32", name="x")
    scale = g.tensor([B, 1, E], dtype="float32", name="scale")
    bias = g.tensor([B, 1, E], dtype="float32", name="bias")
    with pytest.raises(GraphError, match="adalayernorm epsilon must be a finite positive number"):
        g.adalayernorm(x, scale, bias, epsilon=epsilon)
