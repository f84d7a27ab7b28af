"""Reductions: the one engine cuDNN has for them, the equivalent descriptions planning tries, and
what the error says would work (measured deviceless for an H100 with cuDNN 9.19 and 9.28: engine 1,
identical on both). The GPU test executes the rewritten plans against NumPy (``pytest -m gpu``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pycudnn
from pycudnn.graph import Graph
from pycudnn.opgraph import rewrites
from pycudnn.plan import GraphNotSupportedError


def reduction(
    dims: list[int], fmt: str | None, dtype: str, out_dims: list[int], **kw: Any
) -> Graph:
    g = Graph("red")
    x = (
        g.tensor(dims, fmt=fmt, dtype=dtype, name="x")
        if fmt
        else g.tensor(dims, dtype=dtype, name="x")
    )
    g.reduction(x, out_dims=out_dims, **kw)
    return g


# -- without cuDNN: which graphs get a channels-last description -----------------------------------


@pytest.mark.parametrize(
    ("dims", "fmt", "out_dims", "view"),
    [
        ([8, 64, 32], None, [1, 1, 32], ((512, 32, 1, 1), (32, 1, 32, 32))),
        ([4, 32, 16, 16], "NCHW", [1, 1, 1, 16], ((2048, 16, 1, 1), (16, 1, 16, 16))),
        ([4, 32, 16, 16], "NCHW", [1, 1, 16, 16], ((128, 256, 1, 1), (256, 1, 256, 256))),
        ([4, 32, 16, 16], "NCHW", [1, 1, 1, 1], ((32768, 1, 1, 1), (1, 1, 1, 1))),
        ([4, 32, 16, 16], "NHWC", [1, 32, 1, 1], ((1024, 32, 1, 1), (32, 1, 32, 32))),
    ],
)
def test_kept_innermost_axes_are_described_channels_last(
    dims: list[int], fmt: str | None, out_dims: list[int], view: Any
) -> None:
    g = reduction(dims, fmt, "float32", out_dims)
    (variant,) = rewrites.variants(g)
    x = g._ops[0].inputs["x"]
    assert variant.views[x.uid] == view
    assert "same memory" in variant.note


@pytest.mark.parametrize(
    ("dims", "fmt", "out_dims"),
    [
        ([4, 32, 16, 16], "NCHW", [1, 32, 1, 1]),  # keeps a middle axis: no such description
        ([8, 64, 32], None, [8, 1, 1]),  # keeps the outermost
        ([4, 32, 16, 16], "NHWC", [4, 32, 1, 1]),  # keeps N and C: not innermost together
    ],
)
def test_other_reductions_have_no_description(
    dims: list[int], fmt: str | None, out_dims: list[int]
) -> None:
    assert rewrites.variants(reduction(dims, fmt, "float32", out_dims)) == []


def test_a_padded_input_has_no_description() -> None:
    g = Graph("red")
    x = g.tensor([4, 32, 16, 16], [16384, 1, 1024, 64], dtype="float32", name="x")
    g.reduction(x, out_dims=[1, 32, 1, 1])
    assert rewrites.variants(g) == []


def test_advice_names_what_is_wrong_for_each_rule() -> None:
    def text(*args: Any, **kw: Any) -> str:
        return " ".join(rewrites.advice(reduction(*args, **kw)))

    nchw = text([4, 32, 16, 16], "NCHW", "float32", [1, 32, 1, 1])
    assert "fmt='NHWC'" in nchw and "out_dtype" not in nchw and "reduce_tensor" in nchw
    half = text([4, 32, 16, 16], "NHWC", "float16", [1, 32, 1, 1])
    assert "out_dtype='float32' (the output is float16)" in half and "fmt='NHWC'" not in half
    mul = text([4, 32, 16, 16], "NHWC", "float32", [1, 32, 1, 1], op="mul")
    assert "op add, min, max or amax (not mul)" in mul
    # a graph in the form that plans gets no reduction advice
    assert text([4, 32, 16, 16], "NHWC", "float32", [1, 32, 1, 1]) == ""
    assert text([8, 64, 32], None, "float16", [1, 1, 32], out_dtype="float32") == ""


# -- deviceless planning for an H100 ----------------------------------------------------------------


PLANS = [  # (dims, fmt, dtype, out_dims, keywords, planned through the channels-last description)
    ([4, 32, 16, 16], "NHWC", "float32", [1, 32, 1, 1], {}, False),
    ([4, 32, 16, 16], "NHWC", "float16", [1, 32, 1, 1], {"out_dtype": "float32"}, False),
    ([2, 16, 4, 4, 4], "NDHWC", "float32", [1, 16, 1, 1, 1], {"op": "amax"}, False),
    ([8, 64, 32], None, "float32", [1, 1, 32], {}, True),
    ([8, 64, 32], None, "bfloat16", [1, 1, 1], {"out_dtype": "float32"}, True),
    ([4, 32, 16, 16], "NCHW", "float32", [1, 1, 1, 16], {"op": "max"}, True),
]


@pytest.mark.parametrize("case", PLANS)
def test_reductions_plan_for_an_h100(h100_props: pycudnn.DeviceProperties, case: Any) -> None:
    dims, fmt, dtype, out_dims, kw, rewritten = case
    plan = reduction(dims, fmt, dtype, out_dims, **kw).build(
        device_properties=h100_props, cache=False
    )
    assert plan.engine_id == 1
    assert (plan.rewrite is not None and "channels-last" in plan.rewrite) == rewritten


NO_ENGINE = [  # (dims, fmt, dtype, out_dims, keywords, what the advice must say)
    ([4, 32, 16, 16], "NCHW", "float32", [1, 32, 1, 1], {}, "fmt='NHWC'"),
    ([4, 32, 16, 16], "NHWC", "float16", [1, 32, 1, 1], {}, "out_dtype='float32'"),
    ([4, 32, 16, 16], "NHWC", "float32", [1, 32, 1, 1], {"op": "mul"}, "(not mul)"),
]


@pytest.mark.parametrize("case", NO_ENGINE)
def test_reductions_without_an_engine_say_what_would_work(
    h100_props: pycudnn.DeviceProperties, case: Any
) -> None:
    dims, fmt, dtype, out_dims, kw, advice = case
    g = reduction(dims, fmt, dtype, out_dims, **kw)
    with pytest.raises(GraphNotSupportedError) as info:
        g.build(device_properties=h100_props, cache=False)
    err = info.value
    # the step that left no plan: heuristics returned no config, not a failed finalize
    assert err.function == "cudnnBackendGetAttribute"
    assert "the heuristics returned no engine config" in str(err)
    assert any(advice in line for line in err.report.advice), err.report.advice


# -- on the GPU: the rewritten descriptions compute the reduction ----------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dims", "fmt", "out_dims", "op"),
    [
        ([8, 64, 32], None, [1, 1, 32], "add"),
        ([4, 32, 16, 16], "NCHW", [1, 1, 1, 16], "max"),
        ([4, 32, 16, 16], "NCHW", [1, 1, 1, 1], "add"),
        ([4, 32, 16, 16], "NHWC", [1, 32, 1, 1], "add"),
    ],
)
def test_rewritten_reductions_compute_the_reduction(
    dims: list[int], fmt: str | None, out_dims: list[int], op: str
) -> None:
    from _nvbind.device_array import DeviceArray

    g = reduction(dims, fmt, "float32", out_dims, op=op)
    x, y = g._ops[0].inputs["x"], g._ops[0].outputs["y"]
    xh = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
    perm = sorted(range(xh.ndim), key=lambda i: (-x.strides[i], i))
    xd = DeviceArray.from_numpy(
        np.ascontiguousarray(xh.transpose(perm)).transpose(np.argsort(perm))
    )
    g.key()
    out = DeviceArray.empty(y.dims, y.dtype, strides=y.strides)
    g.build(cache=False).execute({x: xd, y: out})
    axes = tuple(i for i, d in enumerate(out_dims) if d == 1 and dims[i] != 1)
    ref = (np.sum if op == "add" else np.max)(xh.astype(np.float64), axis=axes, keepdims=True)
    got = np.asarray(out.to_numpy(), dtype=np.float64)
    assert np.max(np.abs(got - ref)) <= 1e-3 * max(1.0, float(np.max(np.abs(ref))))
