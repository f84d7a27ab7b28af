"""cudnn-frontend's ``test_layernorm.py``, ``test_rmsnorm.py`` and ``test_batchnorm.py``,
translated line by line (graph construction only) and planned deviceless for the committed H100
properties.

The frontend's spaces: layer norm over ``E`` in 768, 1024, 1280, 1600 for bf16 and fp16 on
``[16 * 128, E, 1, 1]`` channels-last data with a pass-by-value epsilon (forward training and
backward); RMS norm the same with and without bias; batch norm training with running statistics
fused with ReLU and a comparison, dReLU (a mask scale) fused in front of the batch-norm backward,
and batch-norm inference fused with dReLU and the batch-norm backward.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

import pycudnn
from pycudnn.graph import Graph, GraphError

N = 16 * 128
SPACE = list(itertools.product([768, 1024, 1280, 1600], ["bfloat16", "float16"]))


@pytest.fixture(scope="module")
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


def channels_last(g: Graph, name: str, dims: list[int], dtype: str) -> Any:
    _, c, h, w = dims
    return g.tensor(dims, [h * w * c, 1, w * c, c], dtype=dtype, name=name)


def described(plan: pycudnn.Plan) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The operations of cuDNN's own plan JSON, each tensor named as the test named it (a
    virtual one ``v0``, ``v1``, ... in order of first use), and the by-value scalars' values."""
    data = json.loads(plan.to_json())
    names = dict(data["pycudnnTensorNames"])
    uids = {t["name"] for t in data["operationGraph"]["tensors"]}
    virtual: dict[str, str] = {}
    nodes = []
    for node in data["operationGraph"]["nodes"]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("alpha1", "alpha2", "upperClip", "lowerClip", "lowerClipSlope"):
                continue
            if isinstance(value, str) and value in uids:
                value = names.get(value) or virtual.setdefault(value, f"v{len(virtual)}")
            elif isinstance(value, str):
                value = value.removeprefix("CUDNN_BACKEND_OPERATION_").removesuffix("_DESCRIPTOR")
            out[key] = value
        nodes.append(out)
    scalars = {names[uid]: value[0] for uid, value in data["pycudnnScalarValues"].items()}
    return nodes, scalars


@pytest.mark.parametrize(("e", "dtype"), SPACE)
def test_layernorm_space(props: pycudnn.DeviceProperties, e: int, dtype: str) -> None:
    g = Graph("layernorm")
    x = channels_last(g, "X", [N, e, 1, 1], dtype)
    scale = channels_last(g, "scale", [1, e, 1, 1], dtype)
    bias = channels_last(g, "bias", [1, e, 1, 1], dtype)
    epsilon = g.scalar(1e-3, dtype="float32", rank=4, name="epsilon")
    _, mean, inv_var, *_ = g.layernorm(x, scale, bias, epsilon=epsilon, training=True)
    assert mean is not None and inv_var is not None and mean.dims == (N, 1, 1, 1)
    nodes, scalars = described(g.build(device_properties=props, cache=False))
    assert nodes == [
        {
            "operation": "NORM_FORWARD",
            "mode": "CUDNN_LAYER_NORM",
            "fmode": "CUDNN_NORM_FWD_TRAINING",
            "Y": "layernorm0.y",
            "X": "X",
            "Mean": "layernorm0.mean",
            "InvVariance": "layernorm0.inv_variance",
            "Scale": "scale",
            "Bias": "bias",
            "epsilonDesc": "epsilon",
        }
    ]
    assert scalars == {"epsilon": "0.001"}
    bwd = Graph("layernorm_backward")
    dy = channels_last(bwd, "DY", [N, e, 1, 1], dtype)
    xb = channels_last(bwd, "X", [N, e, 1, 1], dtype)
    sb = channels_last(bwd, "scale", [1, e, 1, 1], dtype)
    mb = bwd.tensor([N, 1, 1, 1], dtype="float32", name="mean")
    ib = bwd.tensor([N, 1, 1, 1], dtype="float32", name="inv_var")
    bwd.layernorm_backward(dy, xb, sb, mb, ib)
    nodes, _ = described(bwd.build(device_properties=props, cache=False))
    assert nodes == [
        {
            "operation": "NORM_BACKWARD",
            "mode": "CUDNN_LAYER_NORM",
            "DY": "DY",
            "X": "X",
            "Mean": "mean",
            "InvVariance": "inv_var",
            "Scale": "scale",
            "DScale": "layernorm_backward0.dscale",
            "DBias": "layernorm_backward0.dbias",
            "DX": "layernorm_backward0.dx",
        }
    ]


@pytest.mark.parametrize("has_bias", [True, False])
@pytest.mark.parametrize(("e", "dtype"), SPACE)
def test_rmsnorm_space(props: pycudnn.DeviceProperties, e: int, dtype: str, has_bias: bool) -> None:
    g = Graph("rmsnorm")
    x = g.tensor([N, e, 1, 1], dtype=dtype, name="X")
    scale = g.tensor([1, e, 1, 1], dtype=dtype, name="scale")
    bias = g.tensor([1, e, 1, 1], dtype=dtype, name="bias") if has_bias else None
    epsilon = g.scalar(1e-3, dtype="float32", rank=4, name="epsilon")
    out = g.rmsnorm(x, scale, bias, epsilon=epsilon, training=True)
    assert out.mean is None and out.inv_variance is not None
    nodes, scalars = described(g.build(device_properties=props, cache=False))
    bias_role = {"Bias": "bias"} if has_bias else {}
    assert nodes == [
        {
            "operation": "NORM_FORWARD",
            "mode": "CUDNN_RMS_NORM",
            "fmode": "CUDNN_NORM_FWD_TRAINING",
            "Y": "rmsnorm0.y",
            "X": "X",
            "InvVariance": "rmsnorm0.inv_variance",
            "Scale": "scale",
            **bias_role,
            "epsilonDesc": "epsilon",
        }
    ]
    assert scalars == {"epsilon": "0.001"}
    bwd = Graph("rmsnorm_backward")
    dy = bwd.tensor([N, e, 1, 1], dtype=dtype, name="DY")
    xb = bwd.tensor([N, e, 1, 1], dtype=dtype, name="X")
    sb = bwd.tensor([1, e, 1, 1], dtype=dtype, name="scale")
    ib = bwd.tensor([N, 1, 1, 1], dtype="float32", name="inv_var")
    grads = bwd.rmsnorm_backward(dy, xb, sb, ib, with_dbias=has_bias)
    assert (grads.dbias is not None) == has_bias
    nodes, _ = described(bwd.build(device_properties=props, cache=False))
    dbias_role = {"DBias": "rmsnorm_backward0.dbias"} if has_bias else {}
    assert nodes == [
        {
            "operation": "NORM_BACKWARD",
            "mode": "CUDNN_RMS_NORM",
            "DY": "DY",
            "X": "X",
            "InvVariance": "inv_var",
            "Scale": "scale",
            "DScale": "rmsnorm_backward0.dscale",
            **dbias_role,
            "DX": "rmsnorm_backward0.dx",
        }
    ]


BN = [4, 16, 56, 56]
BN_PARAM = [1, 16, 1, 1]


def test_bn_relu_with_mask(props: pycudnn.DeviceProperties) -> None:
    g = Graph("bn_relu")
    x = channels_last(g, "x", BN, "float16")
    scale, bias, rm, rv = (
        g.tensor(BN_PARAM, dtype="float32", name=n) for n in ("scale", "bias", "rm", "rv")
    )
    epsilon = g.scalar(1e-3, dtype="float32", rank=4, name="epsilon")
    momentum = g.scalar(0.1, dtype="float32", rank=4, name="momentum")
    out = g.batchnorm(
        x, scale, bias, epsilon=epsilon, momentum=momentum, running_mean=rm, running_var=rv
    )
    assert out.running_mean is not None and out.running_var is not None
    y = g.relu(out.y)
    y.set_output(dtype="float16")
    comparison = channels_last(g, "comparison", BN, "float16")
    g.pointwise("cmp_gt", y, comparison, out_dtype="bool")
    nodes, scalars = described(g.build(device_properties=props, cache=False))
    assert nodes == [
        {
            "operation": "NORM_FORWARD",
            "mode": "CUDNN_BATCH_NORM",
            "fmode": "CUDNN_NORM_FWD_TRAINING",
            "Y": "v0",
            "X": "x",
            "Mean": "batchnorm0.mean",
            "InvVariance": "batchnorm0.inv_variance",
            "Scale": "scale",
            "Bias": "bias",
            "InRunningMean": "rm",
            "InRunningVar": "rv",
            "OutRunningMean": "batchnorm0.next_running_mean",
            "OutRunningVar": "batchnorm0.next_running_var",
            "epsilonDesc": "epsilon",
            "expavgfactorDesc": "momentum",
        },
        {
            "operation": "POINTWISE",
            "pointwiseMode": "CUDNN_POINTWISE_RELU_FWD",
            "mathPrec": "CUDNN_DATA_FLOAT",
            "X": "v0",
            "Y": "relu_fwd0.y",
        },
        {
            "operation": "POINTWISE",
            "pointwiseMode": "CUDNN_POINTWISE_CMP_GT",
            "mathPrec": "CUDNN_DATA_FLOAT",
            "X": "relu_fwd0.y",
            "B": "comparison",
            "Y": "cmp_gt0.y",
        },
    ]
    assert scalars == {"epsilon": "0.001", "momentum": "0.1"}


def test_drelu_dadd_dbn(props: pycudnn.DeviceProperties) -> None:
    g = Graph("drelu_dbn")
    x = channels_last(g, "x", BN, "float16")
    mask = channels_last(g, "x_mask", BN, "bool")
    scale, mean, inv_var = (
        g.tensor(BN_PARAM, dtype="float32", name=n) for n in ("scale", "mean", "inv_var")
    )
    dy = channels_last(g, "dY", BN, "float16")
    drelu = g.scale(dy, mask, out_dtype="float16")
    g.batchnorm_backward(drelu, x, scale, mean, inv_var)
    nodes, scalars = described(g.build(device_properties=props, cache=False))
    assert nodes == [  # the mask scales dY; the batch-norm backward reads the product
        {
            "operation": "POINTWISE",
            "pointwiseMode": "CUDNN_POINTWISE_MUL",
            "mathPrec": "CUDNN_DATA_FLOAT",
            "X": "dY",
            "Y": "v0",
            "B": "x_mask",
        },
        {
            "operation": "NORM_BACKWARD",
            "mode": "CUDNN_BATCH_NORM",
            "DY": "v0",
            "X": "x",
            "Mean": "mean",
            "InvVariance": "inv_var",
            "Scale": "scale",
            "DScale": "batchnorm_backward0.dscale",
            "DBias": "batchnorm_backward0.dbias",
            "DX": "batchnorm_backward0.dx",
        },
    ]
    assert scalars == {}


def test_bn_infer_drelu_dbn(props: pycudnn.DeviceProperties) -> None:
    g = Graph("bn_infer_drelu_dbn")
    x = channels_last(g, "x", BN, "float16")
    scale, bias, mean, inv_var = (
        g.tensor(BN_PARAM, dtype="float32", name=n) for n in ("scale", "bias", "mean", "inv")
    )
    dy = channels_last(g, "dY", BN, "float16")
    # the frontend's batchnorm_inference is cuDNN's NORM_FORWARD in inference phase
    y = g.batchnorm_inference(x, scale, bias, mean, inv_var, implementation="norm")
    drelu = g.pointwise("relu_bwd", y, dy, out_dtype="float16")
    g.batchnorm_backward(drelu, x, scale, mean, inv_var)
    plan = g.build(device_properties=props, cache=False)
    assert y.is_virtual is not False and y.uid not in plan.uids
    nodes, _ = described(plan)
    assert nodes == [
        {
            "operation": "NORM_FORWARD",
            "mode": "CUDNN_BATCH_NORM",
            "fmode": "CUDNN_NORM_FWD_INFERENCE",
            "Y": "v0",
            "X": "x",
            "Mean": "mean",
            "InvVariance": "inv",
            "Scale": "scale",
            "Bias": "bias",
        },
        {
            "operation": "POINTWISE",
            "pointwiseMode": "CUDNN_POINTWISE_RELU_BWD",
            "mathPrec": "CUDNN_DATA_FLOAT",
            "X": "v0",
            "dX": "v1",
            "dY": "dY",
        },
        {
            "operation": "NORM_BACKWARD",
            "mode": "CUDNN_BATCH_NORM",
            "DY": "v1",
            "X": "x",
            "Mean": "mean",
            "InvVariance": "inv",
            "Scale": "scale",
            "DScale": "batchnorm_backward0.dscale",
            "DBias": "batchnorm_backward0.dbias",
            "DX": "batchnorm_backward0.dx",
        },
    ]


def test_batchnorm_inference_implementation_is_checked() -> None:
    g = Graph("bad")
    x = channels_last(g, "x", BN, "float16")
    params = [g.tensor(BN_PARAM, dtype="float32", name=n) for n in ("s", "b", "m", "i")]
    with pytest.raises(
        GraphError,
        match=r"^batchnorm_inference: implementation must be 'pointwise' or 'norm', not 'fused'$",
    ):
        g.batchnorm_inference(x, *params, implementation="fused")
