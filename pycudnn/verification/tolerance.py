"""Tolerances for comparing a plan's output with the float64 reference.

The error measure is norm-wise: ``max |got - ref| / max |ref|`` over an output tensor (the measure
of the first H100 sweep, where engine 70 scored 1.1 to 1.6). The tolerance on it is::

    rtol = SAFETY * (u(out) + sum over the operations the output depends on of their term)

    convolution, matmul:  (2 + sqrt(K))*u(inputs as the math reads them) + u(accumulator) * G(K)
    sum-like reduction:   u(accumulator) * G(K)
    pointwise:            u(compute) + APPROX if the mode is transcendental
    sdpa:                 u(Q's type) + APPROX + u(accumulator) * (head_dim + s_kv)
    normalisation:        u(accumulator) * sqrt(K) + APPROX
    intermediate tensor:  u(its data type)                 (each is rounded once)

with ``u`` the unit roundoff of a type (fp64 2**-53, fp32 2**-24, TF32 and fp16 2**-11, bf16 2**-8,
fp8 e4m3 2**-4, e5m2 2**-3), ``K`` the reduction length of the operation (products per output
element: ``C/groups * prod(filter)`` for fprop, ``N * prod(dY spatial)`` for wgrad, ``K`` for
matmul), ``G(K) = sqrt(K)`` for engines that accumulate with rounded FMAs and ``G(K) = K`` for
engines noted ``TENSOR_CORE``, ``FFT`` or ``WINOGRAD*``, and ``SAFETY = 4``.

Why each term:

- **Inputs as the math reads them.** Inputs are generated in their own data type, so the
  reference sees them exactly; only a conversion inside the engine rounds them again. fp32 data
  on tensor cores (engine note ``TENSOR_CORE`` with fp32 operands) is read as **TF32**: 10 mantissa
  bits, ``u = 2**-11``, so about 1e-3 relative error is right there, not a failure (the first H100
  sweep marked such plans wrong with an fp32 tolerance: it was the tolerance that was wrong).
  cuDNN allows TF32 for fp32 convolutions by default (``NVIDIA_TF32_OVERRIDE=0`` forbids it), and
  that sweep saw engines without the note (engine 28) at TF32-sized errors, so fp32 convolutions
  and matmuls get the TF32 term unless ``NVIDIA_TF32_OVERRIDE=0`` is set.
  ``DOWN_CONVERT_INPUTS`` reads fp32 as fp16 likewise. Rounding both operands of each product
  gives ``2*u``; the sweep's TF32 figures for weight gradients grew like ``sqrt(K)`` (1.7e-3 at
  ``K = 50``, 7.9e-3 at ``K = 784``, about ``0.5*u*sqrt(K)``), as if partial sums were kept near
  TF32 precision. Whether those figures were relative or absolute is not recorded, so the rule
  allows the larger reading: ``(2 + sqrt(K))*u``. Engine 70's errors stay two orders of magnitude
  above it.
- **Accumulator.** Rounding errors of a sum of ``K`` terms of random sign grow like ``sqrt(K)``
  times the accumulator's unit roundoff (relative to the sum's size, which the inputs' scaling
  keeps near 1). Tensor-core accumulators are not a sequence of IEEE round-to-nearest additions
  (they may truncate, so the errors share a sign), and FFT and Winograd engines transform their
  operands first; for those the bound grows like ``K``. The accumulator is the compute type
  (fp32), or the input type for engines noted ``REDUCED_PRECISION_REDUCTION``.
- **Approximate math.** GPUs evaluate tanh, sigmoid, exp, erf, ... with hardware approximations;
  ``tanh.approx.f32`` is documented with a relative error of about ``2**-11``, so
  ``APPROX = 2**-11``.
- **SAFETY** covers the constant factors of these estimates; it leaves garbage (engine 70's
  errors near 1, NaN, 1e37) orders of magnitude above the tolerance.

Integer and boolean outputs of integer and boolean inputs are compared exactly.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from _nvbind.comparison import APPROX, SAFETY, TF32, Tolerance, is_float, unit_roundoff

from .reference import TRANSCENDENTAL_MODES, reduction_length

if TYPE_CHECKING:  # pragma: no cover
    from ..opgraph import Operation, Tensor

__all__ = [
    "APPROX",
    "SAFETY",
    "TF32",
    "Tolerance",
    "math_input_roundoff",
    "tolerance_for",
    "unit_roundoff",
]

# Engines whose accumulation error is bounded by K (not sqrt(K)) unit roundoffs.
_LINEAR_GROWTH = frozenset(
    {
        "TENSOR_CORE",
        "FFT",
        "WINOGRAD",
        "WINOGRAD_TILE_4x4",
        "WINOGRAD_TILE_6x6",
        "WINOGRAD_TILE_13x13",
    }
)


def math_input_roundoff(
    input_dtype: Any, compute_dtype: Any, numerical_notes: Iterable[str]
) -> tuple[float, str]:
    """The rounding a convolution or matmul applies to its operands before multiplying, and its
    name: TF32 for fp32 operands on tensor cores, fp16 for down-converted fp32, else none."""
    notes = set(numerical_notes)
    inp = np.dtype(input_dtype)
    if inp == np.float32 and np.dtype(compute_dtype) == np.float32:
        if "TENSOR_CORE" in notes:
            return TF32, "tf32"
        if os.environ.get("NVIDIA_TF32_OVERRIDE", "").strip() != "0":
            # cuDNN may use TF32 for fp32 math by default on Ampere and newer, and the first H100
            # sweep saw engines without the TENSOR_CORE note (engine 28) at TF32-sized errors.
            return TF32, "tf32 (allowed by default)"
    if "DOWN_CONVERT_INPUTS" in notes and unit_roundoff(inp) < unit_roundoff(np.float16):
        return unit_roundoff(np.float16), "fp16 (down-converted)"
    return 0.0, "exact"


def _accumulator(input_dtype: Any, compute_dtype: Any, notes: set[str]) -> tuple[float, str]:
    u = unit_roundoff(compute_dtype) if is_float(compute_dtype) else 0.0
    if "REDUCED_PRECISION_REDUCTION" in notes:
        reduced = max(unit_roundoff(input_dtype), unit_roundoff(np.float16))
        if reduced > u:
            return reduced, f"{np.dtype(input_dtype).name} accumulation"
    return u, f"{np.dtype(compute_dtype).name} accumulation"


def _ancestors(t: Tensor) -> list[Operation]:
    seen: dict[int, Operation] = {}
    stack = [t]
    while stack:
        cur = stack.pop()
        op = cur.producer
        if op is None or id(op) in seen:
            continue
        seen[id(op)] = op
        stack.extend(op.inputs.values())
    return list(seen.values())


def tolerance_for(output: Tensor, numerical_notes: Sequence[str] = ()) -> Tolerance:
    """The tolerance for graph output ``output`` computed by an engine with ``numerical_notes``
    (the engine's ``ENGINE_NUMERICAL_NOTE`` names). The graph must be resolved (built)."""
    notes = set(numerical_notes)
    ops = _ancestors(output)
    out_dt = np.dtype(output.dtype)
    floats_in = any(
        t.dtype is not None and is_float(t.dtype) for op in ops for t in op.inputs.values()
    )
    if out_dt.kind in "biu" and not floats_in:
        return Tolerance(0.0, True, ())
    terms: list[tuple[str, float]] = [(f"{out_dt.name} output", unit_roundoff(out_dt))]
    for op in ops:
        compute = op.attrs.get("compute_dtype", np.float32)
        if op.kind in ("conv_fprop", "conv_dgrad", "conv_wgrad", "matmul"):
            first = next(iter(op.inputs.values()))
            u_in, how = math_input_roundoff(first.dtype, compute, notes)
            u_acc, acc = _accumulator(first.dtype, compute, notes)
            k = reduction_length(op)
            # (2 + sqrt(K)): each product reads two rounded operands; the sqrt(K) allows for the
            # growth the first H100 sweep recorded for TF32 engines (see the module docstring).
            terms.append((f"{op.label} inputs as {how} (2+sqrt({k}))x", u_in * (2 + math.sqrt(k))))
            if notes & _LINEAR_GROWTH:
                terms.append((f"{op.label} {acc} x {k}", u_acc * k))
            else:
                terms.append((f"{op.label} {acc} x sqrt({k})", u_acc * math.sqrt(k)))
        elif op.kind == "reduction":
            first = op.inputs["x"]
            u_acc, acc = _accumulator(first.dtype, compute, notes)
            k = reduction_length(op)
            terms.append((f"{op.label} {acc} x sqrt({k})", u_acc * math.sqrt(k)))
        elif op.kind == "pointwise":
            u = unit_roundoff(compute) if is_float(compute) else 0.0
            terms.append((f"{op.label} compute", u))
            if op.attrs["mode"].name in TRANSCENDENTAL_MODES:
                terms.append((f"{op.label} approximate math", APPROX))
        elif op.kind in ("sdpa", "sdpa_backward"):
            # Flash attention rounds the probabilities to Q's type before P @ V; exp is
            # approximate; both products accumulate on tensor cores.
            q = op.inputs["q"]
            u_acc, acc = _accumulator(q.dtype, compute, notes | {"TENSOR_CORE"})
            k = reduction_length(op)
            terms.append(
                (f"{op.label} probabilities as {np.dtype(q.dtype).name}", unit_roundoff(q.dtype))
            )
            terms.append((f"{op.label} approximate exp", APPROX))
            terms.append((f"{op.label} {acc} x {k}", u_acc * k))
        elif op.kind in ("norm_forward", "norm_backward"):
            x = op.inputs["x"]
            u_acc, acc = _accumulator(x.dtype, compute, notes)
            k = reduction_length(op)
            terms.append((f"{op.label} {acc} x sqrt({k})", u_acc * math.sqrt(k)))
            terms.append((f"{op.label} approximate rsqrt", APPROX))
        # Intermediates the output is computed from are rounded to their own type once.
        for t in op.inputs.values():
            if t.producer is not None and t.dtype is not None and is_float(t.dtype):
                terms.append(
                    (f"'{t.name}' stored as {np.dtype(t.dtype).name}", unit_roundoff(t.dtype))
                )
    return Tolerance(SAFETY * sum(v for _, v in terms), False, tuple(terms))
