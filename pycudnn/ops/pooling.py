"""Pooling (``cudnnPoolingForward``)."""

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
    _operand,
    _output,
    _resolve,
    _scalars,
    _tensor_desc,
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
    w = _ints(window, "window")
    p = _ints(pads, "pads") if pads is not None else None
    s = _ints(strides, "strides") if strides is not None else None
    pool = _cached(
        "pooling",
        (str(mode), w, p, s, bool(nan_propagation)),
        lambda: PoolingDescriptor(mode, w, p, s, nan_propagation=nan_propagation),
    )
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    x_desc = _tensor_desc(xv, "x")
    y_dims = pool.output_dims(x_desc)
    y, yv = _output(y, "y", y_dims, xv.dtype, like=xv, handle=h, stream_ptr=sp, beta=beta)
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    _call(
        "cudnnPoolingForward",
        h,
        pool,
        ctypes.byref(al),
        x_desc,
        xv.ptr,
        ctypes.byref(be),
        _tensor_desc(yv, "y"),
        yv.ptr,
    )
    return y
