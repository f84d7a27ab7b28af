"""The standard suite of ``python -m pycudnn verify``: graphs whose every engine is checked.

Convolution forward, backward data and backward filter in NCHW and NHWC, with fp16, bf16 and fp32
operands and each output type (16-bit operands: the same type or fp32), for four geometries (3x3
same-size, strided with padding (the shape where cuDNN 9.19's engine 70 was found wrong), dilated
and grouped); matmul (16-bit and fp32, batch broadcast, a column-major operand); conv + bias +
ReLU; pointwise (broadcast add, activations, an activation backward, NCHW elementwise);
reductions; scaled dot-product attention (grouped K/V heads, causal) and its backward; layer/RMS
norms and the layer norm backward. Every graph is small enough for the NumPy reference.

``quick`` marks the subset for CI (``verify --quick``): the NCHW 16-bit weight gradients of the
engine-70 shape, and one graph of each other family.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from ..graph import Graph

__all__ = ["CONV_SHAPES", "Case", "cases"]

#: name -> (x dims, w dims, settings): the convolution geometries of the suite.
CONV_SHAPES: dict[str, tuple[list[int], list[int], dict[str, Any]]] = {
    "3x3": ([2, 16, 8, 8], [16, 16, 3, 3], {"padding": 1}),
    "strided": ([2, 8, 9, 9], [16, 8, 3, 3], {"padding": 1, "stride": 2}),
    "dilated": ([2, 16, 9, 9], [16, 16, 3, 3], {"padding": 2, "dilation": 2}),
    "grouped": ([2, 16, 8, 8], [16, 4, 3, 3], {"padding": 1, "groups": 4}),
}
_DTYPES = (
    ("float16", "float16"),
    ("float16", "float32"),
    ("bfloat16", "bfloat16"),
    ("bfloat16", "float32"),
    ("float32", "float32"),
)
_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


@dataclasses.dataclass(frozen=True)
class Case:
    """One graph of the suite: ``build()`` makes a fresh :class:`~pycudnn.Graph`."""

    name: str
    family: str
    quick: bool
    build: Callable[[], Graph]


def _conv_out(x: list[int], w: list[int], s: dict[str, Any]) -> list[int]:
    pad, stride, dil = s.get("padding", 0), s.get("stride", 1), s.get("dilation", 1)
    sp = [
        (i + 2 * pad - dil * (k - 1) - 1) // stride + 1 for i, k in zip(x[2:], w[2:], strict=True)
    ]
    return [x[0], w[0], *sp]


def conv_graph(op: str, fmt: str, dtype: str, out_dtype: str, shape: str) -> Graph:
    """One convolution of the suite: ``op`` is ``fprop``, ``dgrad`` or ``wgrad``."""
    xd, wd, s = CONV_SHAPES[shape]
    yd = _conv_out(xd, wd, s)
    g = Graph(f"{op}-{shape}-{fmt}-{_SHORT[dtype]}-{_SHORT[out_dtype]}")
    if op == "fprop":
        x = g.tensor(xd, fmt=fmt, dtype=dtype, name="x")
        w = g.tensor(wd, fmt=fmt, dtype=dtype, name="w")
        g.conv_fprop(x, w, out_dtype=out_dtype, **s)
    elif op == "dgrad":
        dy = g.tensor(yd, fmt=fmt, dtype=dtype, name="dy")
        w = g.tensor(wd, fmt=fmt, dtype=dtype, name="w")
        g.conv_dgrad(dy, w, dx_dims=xd, out_dtype=out_dtype, **s)
    else:
        x = g.tensor(xd, fmt=fmt, dtype=dtype, name="x")
        dy = g.tensor(yd, fmt=fmt, dtype=dtype, name="dy")
        g.conv_wgrad(x, dy, dw_dims=wd, out_dtype=out_dtype, **s)
    return g


def _matmul(spec: tuple[str, list[int], list[int], str, str, bool]) -> Graph:
    name, a_dims, b_dims, dtype, out, b_col_major = spec
    g = Graph(name)
    a = g.tensor(a_dims, dtype=dtype, name="a")
    if b_col_major:  # [B, K, N] stored N-major: strides [K*N, 1, K]
        bs = [b_dims[1] * b_dims[2], 1, b_dims[1]]
        b = g.tensor(b_dims, strides=bs, dtype=dtype, name="b")
    else:
        b = g.tensor(b_dims, dtype=dtype, name="b")
    g.matmul(a, b, out_dtype=out)
    return g


def _conv_bias_relu(fmt: str, relu: bool) -> Graph:
    g = Graph(f"conv_bias{'_relu' if relu else ''}-{fmt}-fp16")
    x = g.tensor([2, 16, 8, 8], fmt=fmt, dtype="float16", name="x")
    w = g.tensor([32, 16, 3, 3], fmt=fmt, dtype="float16", name="w")
    b = g.tensor([1, 32, 1, 1], fmt=fmt, dtype="float16", name="bias")
    y = g.add(g.conv_fprop(x, w, padding=1), b)
    if relu:
        g.relu(y)
    return g


def _pointwise(name: str, mode: str, fmt: str, dtype: str, second: list[int] | None) -> Graph:
    g = Graph(name)
    x = g.tensor([2, 16, 6, 6], fmt=fmt, dtype=dtype, name="x")
    if second is None:
        g.pointwise(mode, x)
    else:
        b = g.tensor(second, fmt=fmt, dtype=dtype, name="b")
        g.pointwise(mode, x, b)
    return g


def _reduction(name: str, op: str, out_dims: list[int]) -> Graph:
    g = Graph(name)
    x = g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float32", name="x")
    g.reduction(x, op=op, out_dims=out_dims)
    return g


def _attention(name: str, dtype: str, heads_kv: int, causal: bool) -> Graph:
    g = Graph(name)
    b, h, s, d = 1, 4, 128, 64
    q = g.tensor([b, h, s, d], dtype=dtype, name="q")
    k = g.tensor([b, heads_kv, s, d], dtype=dtype, name="k")
    v = g.tensor([b, heads_kv, s, d], dtype=dtype, name="v")
    g.sdpa(q, k, v, causal=causal, return_stats=True)
    return g


def _attention_backward(name: str, dtype: str) -> Graph:
    g = Graph(name)
    b, h, s, d = 1, 4, 128, 64
    q, k, v, o, do = (
        g.tensor([b, h, s, d], dtype=dtype, name=r) for r in ("q", "k", "v", "o", "do")
    )
    stats = g.tensor([b, h, s, 1], name="stats")
    g.sdpa_backward(q, k, v, o, do, stats=stats)
    return g


def _norm_backward(name: str, dtype: str) -> Graph:
    g = Graph(name)
    x = g.tensor([64, 256, 1], dtype=dtype, name="x")
    dy = g.tensor([64, 256, 1], dtype=dtype, name="dy")
    scale = g.tensor([1, 256, 1], name="scale")
    mean = g.tensor([64, 1, 1], name="mean")
    inv = g.tensor([64, 1, 1], name="inv_variance")
    g.layernorm_backward(dy, x, scale, mean, inv)
    return g


def _norm(name: str, mode: str, dtype: str, training: bool) -> Graph:
    g = Graph(name)
    x = g.tensor([64, 256, 1], dtype=dtype, name="x")
    scale = g.tensor([1, 256, 1], name="scale")
    if mode == "layer":
        g.layernorm(x, scale, g.tensor([1, 256, 1], name="bias"), training=training)
    else:
        g.rmsnorm(x, scale, training=training)
    return g


def cases(quick: bool = False) -> list[Case]:
    """The suite, or its quick subset."""
    out: list[Case] = []
    for op in ("fprop", "dgrad", "wgrad"):
        for fmt in ("NCHW", "NHWC"):
            for dt, odt in _DTYPES:
                for shape in CONV_SHAPES:
                    engine70 = (
                        op == "wgrad" and fmt == "NCHW" and dt != "float32" and shape == "strided"
                    )
                    first = fmt == "NHWC" and dt == odt == "float16" and shape == "3x3"
                    out.append(
                        Case(
                            f"conv_{op}-{shape}-{fmt}-{_SHORT[dt]}-{_SHORT[odt]}",
                            f"conv_{op}",
                            engine70 or first,
                            functools.partial(conv_graph, op, fmt, dt, odt, shape),
                        )
                    )
    mm: list[tuple[str, list[int], list[int], str, str, bool, bool]] = [
        ("matmul-fp16-fp32", [1, 64, 32], [1, 32, 48], "float16", "float32", False, True),
        ("matmul-bf16-bf16", [1, 64, 32], [1, 32, 48], "bfloat16", "bfloat16", False, False),
        ("matmul-fp32", [1, 64, 32], [1, 32, 48], "float32", "float32", False, False),
        ("matmul-broadcast-fp16", [1, 40, 24], [3, 24, 32], "float16", "float32", False, False),
        ("matmul-colmajor-fp16", [2, 40, 24], [2, 24, 32], "float16", "float32", True, False),
    ]
    for name, ad, bd, dt, odt, colmajor, q in mm:
        out.append(
            Case(name, "matmul", q, functools.partial(_matmul, (name, ad, bd, dt, odt, colmajor)))
        )
    out.append(
        Case("conv_bias_relu-NHWC-fp16", "fusion", True, lambda: _conv_bias_relu("NHWC", True))
    )
    out.append(Case("conv_bias-NCHW-fp16", "fusion", False, lambda: _conv_bias_relu("NCHW", False)))
    pw: list[tuple[str, str, str, str, list[int] | None, bool]] = [
        ("add-broadcast-NHWC-fp32", "ADD", "NHWC", "float32", [1, 16, 1, 1], True),
        ("mul-NHWC-fp16", "MUL", "NHWC", "float16", [2, 16, 6, 6], False),
        ("add-NCHW-fp32", "ADD", "NCHW", "float32", [2, 16, 6, 6], False),
        ("relu-NHWC-fp16", "RELU_FWD", "NHWC", "float16", None, False),
        ("sigmoid-NHWC-fp32", "SIGMOID_FWD", "NHWC", "float32", None, False),
        ("tanh-NHWC-fp32", "TANH_FWD", "NHWC", "float32", None, False),
        ("gelu-NHWC-fp32", "GELU_FWD", "NHWC", "float32", None, False),
        ("relu_bwd-NHWC-fp32", "RELU_BWD", "NHWC", "float32", [2, 16, 6, 6], False),
    ]
    for name, mode, fmt, dt, second, q in pw:
        out.append(
            Case(name, "pointwise", q, functools.partial(_pointwise, name, mode, fmt, dt, second))
        )
    out.append(Case("reduce_add-channels-fp32", "reduction", True,
                    lambda: _reduction("reduce_add-channels-fp32", "add", [1, 64, 1, 1])))  # fmt: skip
    out.append(Case("reduce_max-all-fp32", "reduction", False,
                    lambda: _reduction("reduce_max-all-fp32", "max", [1, 1, 1, 1])))  # fmt: skip
    # Built when the case runs: SDPA needs cuDNN 9.13.1 (masks 9.21), which the command reports.
    out.append(Case("sdpa-bf16", "attention", True,
                    functools.partial(_attention, "sdpa-bf16", "bfloat16", 4, False)))  # fmt: skip
    out.append(Case("sdpa-gqa-causal-fp16", "attention", False,
                    functools.partial(_attention, "sdpa-gqa-causal-fp16", "float16", 2, True)))  # fmt: skip
    out.append(Case("layernorm-training-bf16", "normalisation", True,
                    functools.partial(_norm, "layernorm-training-bf16", "layer", "bfloat16", True)))  # fmt: skip
    out.append(Case("rmsnorm-fp16", "normalisation", False,
                    functools.partial(_norm, "rmsnorm-fp16", "rms", "float16", False)))  # fmt: skip
    out.append(Case("sdpa_backward-bf16", "attention", False,
                    functools.partial(_attention_backward, "sdpa_backward-bf16", "bfloat16")))  # fmt: skip
    out.append(Case("layernorm_backward-bf16", "normalisation", False,
                    functools.partial(_norm_backward, "layernorm_backward-bf16", "bfloat16")))  # fmt: skip
    return [c for c in out if c.quick] if quick else out
