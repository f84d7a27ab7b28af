"""Pooling, forward and backward (``cudnnPoolingForward``, ``cudnnPoolingBackward``)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from _nvbind.keywords import keyword_defaults, take_keywords

from ..tensor import (
    PoolingDescriptor,
)
from ..tensor._common import _ints, _nan_opt, warn_deprecated_once
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
from ._launch import LAUNCH, LaunchKeywords, launch_keywords, shows

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+


def _pooling(
    mode: Any, window: Any, pads: Any, strides: Any, nan_propagation: Any
) -> PoolingDescriptor:
    w = _ints(window, "window")
    p = _ints(pads, "pads") if pads is not None else None
    s = _ints(strides, "strides") if strides is not None else None
    return _cached(
        "pooling",
        (str(mode), w, p, s, _nan_opt(nan_propagation)),
        lambda: PoolingDescriptor(mode, w, p, s, nan_propagation=nan_propagation),
    )


@launch_keywords
def pooling_forward(
    x: Any,
    *,
    mode: str = "max",
    window: Sequence[int] = (2, 2),
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    nan_propagation: bool = False,
    y: Any = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``y = alpha * pool(x) + beta * y`` (``cudnnPoolingForward``; deprecated in cuDNN 9).

    ``mode``: ``"max"``, ``"avg"`` / ``"avg_include_padding"`` (padding counts as zeros in the
    average), ``"avg_exclude_padding"``, ``"max_deterministic"``. One ``window`` extent per
    spatial dim of ``x``; ``pads`` default to 0, ``strides`` to the window. ``alpha``, ``beta``,
    ``handle``, ``stream``: see :class:`~pycudnn.ops.LaunchKeywords`. Returns ``y``.
    """
    k = take_keywords("pooling_forward", kw, LAUNCH)
    warn_deprecated_once("pycudnn.ops.pooling_forward (cudnnPoolingForward)", _GRAPH)
    pool = _pooling(mode, window, pads, strides, nan_propagation)
    ctx = _resolve(k["handle"], k["stream"], x, "x")
    xv = ctx.operand(x, "x")
    x_desc = _tensor_desc(xv, "x")
    y_dims = pool.output_dims(x_desc)
    y, yv = ctx.output(y, "y", y_dims, xv.dtype, like=xv, beta=k["beta"], inputs=[("x", xv)])
    al, be = _scalars(xv.dtype, alpha=k["alpha"], beta=k["beta"])
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


class _PoolingSettings(TypedDict, total=False):
    """The pooling settings of :func:`pooling_forward` (in its order)."""

    mode: str
    window: Sequence[int]
    pads: Sequence[int] | None
    strides: Sequence[int] | None
    nan_propagation: bool


class PoolingKeywords(_PoolingSettings, LaunchKeywords, total=False):
    """:func:`pooling_forward`'s pooling settings and the :class:`~pycudnn.ops.LaunchKeywords`,
    with the forward's defaults: the keywords :func:`pooling_backward` takes."""


# pooling_backward takes pooling_forward's keywords (PoolingKeywords), with its defaults.
_POOLING = keyword_defaults(pooling_forward, PoolingKeywords.__annotations__)


@shows(pooling_forward, PoolingKeywords)
def pooling_backward(
    y: Any,
    dy: Any,
    x: Any,
    *,
    dx: Any = None,
    **kw: Unpack[PoolingKeywords],
) -> Any:
    """``dx = alpha * pool'(x) dy + beta * dx`` (``cudnnPoolingBackward``; deprecated in cuDNN 9).

    ``y`` is :func:`pooling_forward`'s output for input ``x`` (max pooling finds the maxima
    again from both), ``dy`` the gradient of ``y``; the arguments come in the C function's order
    (y, dy, x); the pooling settings and launch keywords are the forward's
    (:class:`~pycudnn.ops.PoolingKeywords`). ``y`` has the pooled shape of ``x``; cuDNN's API
    reference requires ``dy`` to have ``y``'s shape and strides and ``dx`` to have ``x``'s
    (checked here; a ``dx`` allocated here gets them), all of one dtype. Returns ``dx``.
    """
    k = take_keywords("pooling_backward", kw, _POOLING)
    warn_deprecated_once("pycudnn.ops.pooling_backward (cudnnPoolingBackward)", _GRAPH)
    pool = _pooling(k["mode"], k["window"], k["pads"], k["strides"], k["nan_propagation"])
    ctx = _resolve(k["handle"], k["stream"], dy, "dy")
    yv, dyv, xv = (ctx.operand(a, n) for a, n in ((y, "y"), (dy, "dy"), (x, "x")))
    dtype = _same_dtype([("y", yv), ("dy", dyv), ("x", xv)])
    x_desc = _tensor_desc(xv, "x")
    y_dims = pool.output_dims(x_desc)
    if yv.shape != y_dims:
        raise ValueError(f"y has shape {yv.shape}, but pooling x {xv.shape} gives {y_dims}")
    fn = "cudnnPoolingBackward"
    _same_layout(dyv, yv, "dy", "y", fn)
    dx, dxv = ctx.gradient_like(dx, xv, dtype, beta=k["beta"], function=fn,
                                inputs=[("y", yv), ("dy", dyv), ("x", xv)])  # fmt: skip
    al, be = _scalars(dtype, alpha=k["alpha"], beta=k["beta"])
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
