"""Normalisation graphs on CPU: real cuDNN NORM plans for the H100 without a GPU.

Layer, RMS, batch and instance norms, forward (inference and training, running statistics) and
backward, each get a deviceless execution plan from cuDNN (9.28 here) for the committed H100
device properties; batch-norm inference, which cuDNN has no NORM engine for, is planned as
pointwise operations. Bad arguments are refused in Python. Numbers are the GPU tier's
(``tests/test_attention_gpu.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError
from pycudnn.plan import GraphNotSupportedError


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def rows_graph(mode: str, *, training: bool, dtype: str = "bfloat16") -> tuple[Graph, Any]:
    g = Graph(mode)
    x = g.tensor([256, 1024, 1], dtype=dtype, name="x")
    scale = g.tensor([1, 1024, 1], name="scale")
    bias = g.tensor([1, 1024, 1], name="bias") if mode == "layer" else None
    out = getattr(g, f"{mode}norm")(x, scale, bias, epsilon=1e-5, training=training)
    return g, out


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("mode", ["layer", "rms"])
def test_layer_and_rms_norm_plan(
    props: pycudnn.DeviceProperties, mode: str, training: bool
) -> None:
    g, out = rows_graph(mode, training=training)
    x = g["x"]
    assert out.y.dims == x.dims and out.y.dtype == x.dtype
    if training:
        assert out.inv_variance is not None and out.inv_variance.dims == (256, 1, 1)
        assert str(out.inv_variance.dtype) == "float32"
        assert (out.mean is None) == (mode == "rms")  # RMS norm does not centre
    else:
        assert out.mean is None and out.inv_variance is None
    assert g["x"].consumers[0].attrs["epsilon"] == 1e-5
    assert g[f"{mode}norm0.epsilon"].by_value
    g.build(device_properties=props, cache=False)


def nchw_params(g: Graph, c: int, names: tuple[str, ...]) -> list[Any]:
    return [g.tensor([1, c, 1, 1], name=n) for n in names]


def test_batchnorm_training_with_running_statistics(props: pycudnn.DeviceProperties) -> None:
    g = Graph("bn")
    x = g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float16", name="x")
    scale, bias, rm, rv = nchw_params(g, 64, ("scale", "bias", "running_mean", "running_var"))
    out = g.batchnorm(x, scale, bias, running_mean=rm, running_var=rv, momentum=0.1)
    for t in (out.mean, out.inv_variance, out.running_mean, out.running_var):
        assert t is not None and t.dims == (1, 64, 1, 1) and str(t.dtype) == "float32"
    assert g["batchnorm0.momentum"].value == 0.1
    plan = g.build(device_properties=props, cache=False)
    assert g.load_plan(plan.to_json(), device_properties=props).uids == plan.uids


def test_batchnorm_inference_is_pointwise(props: pycudnn.DeviceProperties) -> None:
    g = Graph("bn_inference")
    x = g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float16", name="x")
    params = nchw_params(g, 64, ("scale", "bias", "mean", "inv_variance"))
    y = g.batchnorm_inference(x, *params)
    assert [op.attrs["mode"].name for op in g.operations] == ["SUB", "MUL", "MUL", "ADD"]
    assert y.is_output and y.dtype == x.dtype and y.dims == x.dims
    g.build(device_properties=props, cache=False)


def test_instancenorm_training(props: pycudnn.DeviceProperties) -> None:
    g = Graph("in")
    x = g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float16", name="x")
    scale, bias = nchw_params(g, 64, ("scale", "bias"))
    out = g.instancenorm(x, scale, bias, training=True)
    assert out.mean is not None and out.mean.dims == (8, 64, 1, 1)
    g.build(device_properties=props, cache=False)


@pytest.mark.parametrize("mode", ["layer", "rms", "batch", "instance"])
def test_backward_plans(props: pycudnn.DeviceProperties, mode: str) -> None:
    g = Graph(f"{mode}_backward")
    if mode in ("layer", "rms"):
        dims, param, stats, fmt = [256, 1024, 1], [1, 1024, 1], [256, 1, 1], None
    else:
        dims, param, fmt = [8, 64, 16, 16], [1, 64, 1, 1], "NHWC"
        stats = [8 if mode == "instance" else 1, 64, 1, 1]
    x = g.tensor(dims, fmt=fmt, dtype="float16", name="x")
    dy = g.tensor(dims, fmt=fmt, dtype="float16", name="dy")
    scale = g.tensor(param, name="scale")
    inv_var = g.tensor(stats, name="inv_variance")
    if mode == "rms":
        grads = g.rmsnorm_backward(dy, x, scale, inv_var)
        assert grads.dbias is None
    else:
        mean = g.tensor(stats, name="mean")
        grads = getattr(g, f"{mode}norm_backward")(dy, x, scale, mean, inv_var)
        assert grads.dbias is not None and grads.dbias.dims == tuple(param)
    assert grads.dx.dims == x.dims and grads.dx.strides == x.strides
    assert grads.dscale.dims == tuple(param)
    g.build(device_properties=props, cache=False)


# -- refusals ----------------------------------------------------------------------------------


def test_refusals_name_the_operation_and_rule() -> None:
    g = Graph("bad")
    x = g.tensor([256, 1024, 1], dtype="float16", name="x")
    wrong = g.tensor([1, 512, 1], name="wrong")
    scale = g.tensor([1, 1024, 1], name="scale")
    with pytest.raises(GraphError, match=r"layernorm 'ln': layernorm scale 'wrong': dims must be"):
        g.layernorm(x, wrong, wrong, name="ln")
    with pytest.raises(GraphError, match="epsilon must be a finite positive number, got -1"):
        g.rmsnorm(x, scale, epsilon=-1)
    # ints past a double's range are refused by name (they raised OverflowError)
    with pytest.raises(GraphError, match="epsilon must be a finite positive number, got 1000"):
        g.layernorm(x, scale, scale, epsilon=10**400)
    x4 = g.tensor([8, 64, 4, 4], dtype="float16", name="x4")
    c4 = [g.tensor([1, 64, 1, 1], name=n) for n in ("c4", "rm", "rv")]
    with pytest.raises(GraphError, match=r"momentum must be in \[0, 1\], got 1000"):
        g.batchnorm(x4, c4[0], c4[0], running_mean=c4[1], running_var=c4[2], momentum=10**400)
    with pytest.raises(TypeError, match="training must be a bool"):
        g.rmsnorm(x, scale, training=1)  # type: ignore[arg-type]
    x3 = g.tensor([8, 64, 16], dtype="float16", name="x3")
    c = g.tensor([1, 64, 1], name="c")
    with pytest.raises(GraphError, match=r"rank 3 is outside 4..8"):
        g.batchnorm(x3, c, c)
    assert g.operations == []


def test_pointwise_epilogue_has_no_engine(props: pycudnn.DeviceProperties) -> None:
    # Measured with cuDNN 9.28 for the H100: the layer-norm engines refuse prologue and epilogue
    # pointwise nodes ("hasProloguePwNodes() || hasEpiloguePwNodes()").
    g, out = rows_graph("layer", training=False)
    g.relu(out.y, out_dtype="bfloat16")
    with pytest.raises(GraphNotSupportedError, match="no engine supports graph 'layer'"):
        g.build(device_properties=props, cache=False)
