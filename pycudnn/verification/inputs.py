"""Seeded inputs for verifying a graph: scaled so that nothing overflows, laid out as described.

Values are drawn uniformly from ``[-1, 1]`` and rounded to the tensor's data type, so that the
float64 reference sees exactly what the GPU sees. A tensor read by a convolution or matmul whose
output elements sum ``K`` products is scaled by ``K**-0.25``: the products then have a spread of
``1/sqrt(K)`` and their sums stay near 1 whatever ``K`` (an fp16 output cannot overflow). Inputs
of modes defined only for positive numbers (log, sqrt, rsqrt, reciprocal, the base of pow, the
divisor of div and mod) are drawn from ``[0.5, 2]``; inputs of a product reduction from
``exp(U(-1, 1)/sqrt(K))`` so that a product of ``K`` of them stays near 1. Integers are small
(``-4..4``, ``0..8`` unsigned) and booleans are fair coin flips.

Each array has the tensor's logical dims and the tensor's strides (a view of a flat buffer as
long as the strides span), ready to be copied to the GPU as the plan expects it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .reference import reduction_length
from .reference_attention import consistent_inputs

if TYPE_CHECKING:  # pragma: no cover
    from ..opgraph import OperationGraph, Tensor

__all__ = ["input_scale", "make_inputs", "strided_array"]

# Modes whose first input (x) or second input (b) must be positive for a finite, well-conditioned
# result.
_POSITIVE_X = frozenset({"LOG", "SQRT", "RSQRT", "RECIPROCAL", "POW"})
_POSITIVE_B = frozenset({"DIV", "MOD", "FLOOR_MOD"})


def strided_array(dims: tuple[int, ...], strides: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A host array with logical ``dims`` whose elements lie at ``strides`` (in elements) in one
    flat buffer, as a device array with that layout would be; filled with zeros."""
    dt = np.dtype(dtype)
    span = sum((d - 1) * s for d, s in zip(dims, strides, strict=True)) + 1
    flat = np.zeros(span, dtype=dt)
    # np.ndarray over the buffer, not as_strided: as_strided goes through the array interface,
    # whose type string for ml_dtypes' float8_e5m2 ("<f1") NumPy cannot read back
    view: np.ndarray = np.ndarray(
        dims, dtype=dt, buffer=flat, strides=tuple(s * dt.itemsize for s in strides)
    )
    return view


def input_scale(t: Tensor) -> tuple[str, float]:
    """How the values of graph input ``t`` are drawn: ``(kind, scale)`` where kind is
    ``"signed"``, ``"positive"`` or ``"near_one"``."""
    kind, scale = "signed", 1.0
    for op in t.consumers:
        role = next((r for r, v in op.inputs.items() if v is t), "")
        if op.kind in ("conv_fprop", "conv_dgrad", "conv_wgrad", "matmul"):
            scale = min(scale, reduction_length(op) ** -0.25)
        elif op.kind == "pointwise":
            mode = op.attrs["mode"].name
            if (role == "x" and mode in _POSITIVE_X) or (role == "b" and mode in _POSITIVE_B):
                kind = "positive"
        elif op.kind == "reduction" and op.attrs["op"].name in ("MUL", "MUL_NO_ZEROS"):
            kind = "near_one"
            scale = min(scale, 1.0 / math.sqrt(reduction_length(op)))
    return kind, scale


def _draw(rng: np.random.Generator, t: Tensor, shape: tuple[int, ...]) -> np.ndarray:
    dt = np.dtype(t.dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        low = 0 if dt.kind == "u" else -4
        return rng.integers(low, low + 9, size=shape)
    kind, scale = input_scale(t)
    u = rng.uniform(-1.0, 1.0, size=shape)
    if kind == "positive":
        return 0.5 * 4.0 ** ((u + 1.0) / 2.0)  # log-uniform on [0.5, 2]
    if kind == "near_one":
        return np.exp(u * scale)
    return u * scale


def make_inputs(graph: OperationGraph, seed: int = 0) -> dict[int, np.ndarray]:
    """Seeded values for every graph input that is not a by-value scalar with a value, by uid.

    By-value scalars without a value get one drawn like the other inputs (kept away from 0).
    """
    rng = np.random.default_rng(seed)
    out: dict[int, np.ndarray] = {}
    for t in graph.inputs:
        if t.by_value:
            if t.value is None:
                kind, scale = input_scale(t)
                value = 0.5 + 0.5 * rng.random()
                out[t.uid] = np.full(t.dims, value if kind != "signed" else value * scale, t.dtype)
            continue
        arr = strided_array(t.dims, t.strides, t.dtype)
        arr[...] = np.asarray(_draw(rng, t, t.dims)).astype(t.dtype)
        out[t.uid] = arr
    # A backward operation's saved forward values, as a forward would have produced them.
    for op in graph.operations:
        vals = {
            r: np.asarray(out[t.uid], dtype=np.float64)
            for r, t in op.inputs.items()
            if t.uid in out
        }
        vals.update(
            {
                r: np.full(t.dims, float(t.value))
                for r, t in op.inputs.items()
                if t.value is not None
            }
        )
        for role, derived in consistent_inputs(op, vals).items():
            t = op.inputs[role]
            if t.producer is None and t.uid in out:
                out[t.uid][...] = np.broadcast_to(derived, t.dims).astype(t.dtype)
    return out
