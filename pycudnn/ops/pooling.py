"""Pooling, forward and backward (``cudnnPoolingForward``, ``cudnnPoolingBackward``)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from ..handle import Handle
from ..tensor import (
    PoolingDescriptor,
)
from ..tensor._common import _ints, warn_deprecated_once
from ..tensor._common import call as _call
from ._common import (
    _GRAPH,
    _cached,
    _resolve,
    _same_dtype,
    _same_layout,
    _scalars,
    _tensor_desc,
)


def _pooling(
    mode: Any, window: Any, pads: Any, strides: Any, nan_propagation: Any
) -> PoolingDescriptor:
    w = _ints(window, "window")
    p = _ints(pads, "pads") if pads is not None else None
    s = _ints(strides, "strides") if strides is not None else None
    return _cached(
        "pooling",
        (str(mode), w, p, s, bool(nan_propagation)),
        lambda: PoolingDescriptor(mode, w, p, s, nan_propagation=nan_propagation),
    )


def pooling_forward(
    x: Any,
    *,
    mode: str = "max",
    window: Sequence[int] = (2, 2),
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    nan_propagation: bool = False,
    y: Any = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``y = alpha * pool(x) + beta * y`` (``cudnnPoolingForward``; deprecated in cuDNN 9).

    ``mode``: ``"max"``, ``"avg"`` / ``"avg_include_padding"`` (padding counts as zeros in the
    average), ``"avg_exclude_padding"``, ``"max_deterministic"``. One ``window`` extent per
    spatial dim of ``x``; ``pads`` default to 0, ``strides`` to the window. Returns ``y``.
    """
    warn_deprecated_once("pycudnn.ops.pooling_forward (cudnnPoolingForward)", _GRAPH)
    pool = _pooling(mode, window, pads, strides, nan_propagation)
    ctx = _resolve(handle, stream, x, "x")
    xv = ctx.operand(x, "x")
    x_desc = _tensor_desc(xv, "x")
    y_dims = pool.output_dims(x_desc)
    y, yv = ctx.output(y, "y", y_dims, xv.dtype, like=xv, beta=beta)
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    _call(
        "cudnnPoolingForward",
        ctx.handle,
        pool,
        ctypes.byref(al),
        x_desc,
        xv.ptr,
        ctypes.byref(be),
        _tensor_desc(yv, "y"),
        yv.ptr,
    )
    return y


def pooling_backward(
    y: Any,
    dy: Any,
    x: Any,
    *,
    mode: str = "max",
    window: Sequence[int] = (2, 2),
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    nan_propagation: bool = False,
    dx: Any = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``dx = alpha * pool'(x) dy + beta * dx`` (``cudnnPoolingBackward``; deprecated in cuDNN 9).

    ``y`` is :func:`pooling_forward`'s output for input ``x`` (max pooling finds the maxima
    again from both), ``dy`` the gradient of ``y``; the arguments come in the C function's order
    (y, dy, x) and the pooling settings are the forward's. ``y`` has the pooled shape of ``x``;
    cuDNN's API reference requires ``dy`` to have ``y``'s shape and strides and ``dx`` to have
    ``x``'s (checked here; a ``dx`` allocated here gets them), all of one dtype. Returns ``dx``.
    """
    warn_deprecated_once("pycudnn.ops.pooling_backward (cudnnPoolingBackward)", _GRAPH)
    pool = _pooling(mode, window, pads, strides, nan_propagation)
    ctx = _resolve(handle, stream, dy, "dy")
    yv, dyv, xv = (ctx.operand(a, n) for a, n in ((y, "y"), (dy, "dy"), (x, "x")))
    dtype = _same_dtype([("y", yv), ("dy", dyv), ("x", xv)])
    x_desc = _tensor_desc(xv, "x")
    y_dims = pool.output_dims(x_desc)
    if yv.shape != y_dims:
        raise ValueError(f"y has shape {yv.shape}, but pooling x {xv.shape} gives {y_dims}")
    fn = "cudnnPoolingBackward"
    _same_layout(dyv, yv, "dy", "y", fn)
    dx, dxv = ctx.gradient_like(dx, xv, dtype, beta=beta, function=fn)
    al, be = _scalars(dtype, alpha=alpha, beta=beta)
    _call(
        fn,
        ctx.handle,
        pool,
        ctypes.byref(al),
        _tensor_desc(yv, "y"),
        yv.ptr,
        _tensor_desc(dyv, "dy"),
        dyv.ptr,
        x_desc,
        xv.ptr,
        ctypes.byref(be),
        _tensor_desc(dxv, "dx"),
        dxv.ptr,
    )
    return dx
