"""Activations and softmax (``cudnnActivationForward``, ``cudnnSoftmaxForward``)."""

from __future__ import annotations

import ctypes
from typing import Any

from .. import _bindings as _b
from ..handle import Handle
from ..tensor import (
    ActivationDescriptor,
)
from ..tensor._common import _choice, _real, warn_deprecated_once
from ..tensor._common import call as _call
from ._common import (
    _GRAPH,
    _cached,
    _operand,
    _output,
    _resolve,
    _scalar_type,
    _scalars,
    _tensor_desc,
    _transform,
)


def activation_forward(
    x: Any,
    mode: str = "relu",
    *,
    y: Any = None,
    coef: float = 0.0,
    swish_beta: float = 1.0,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``y = alpha * act(x) + beta * y`` (``cudnnActivationForward``; deprecated in cuDNN 9).

    ``mode``: ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"clipped_relu"`` (``coef``: ceiling),
    ``"elu"`` (``coef``: alpha), ``"swish"`` (``x * sigmoid(swish_beta * x)``), ``"identity"``.
    ``y`` may be ``x`` (in place). cuDNN documents ``CUDNN_ACTIVATION_IDENTITY`` as not working
    with ``cudnnActivationForward``, so ``"identity"`` runs as ``cudnnTransformTensor``
    (``cudnnScaleTensor`` in place). Returns ``y``.
    """
    warn_deprecated_once("pycudnn.ops.activation_forward (cudnnActivationForward)", _GRAPH)
    act = _cached(
        "activations",
        (str(mode), _real(coef, "coef"), _real(swish_beta, "swish_beta")),
        lambda: ActivationDescriptor(mode, coef, swish_beta=swish_beta),
    )
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    y, yv = _output(y, "y", xv.shape, xv.dtype, like=xv, handle=h, stream_ptr=sp, beta=beta)
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    x_desc, y_desc = _tensor_desc(xv, "x"), _tensor_desc(yv, "y")
    if act.key()[0] != int(_b.CUDNN_ACTIVATION_IDENTITY):
        _call(
            "cudnnActivationForward",
            h,
            act,
            ctypes.byref(al),
            x_desc,
            xv.ptr,
            ctypes.byref(be),
            y_desc,
            yv.ptr,
        )
    elif yv.ptr == xv.ptr and yv.size:
        if x_desc is not y_desc:
            raise ValueError("in place, y must have x's layout")
        scale = _scalar_type(xv.dtype)(float(al.value) + float(be.value))
        _call("cudnnScaleTensor", h, y_desc, yv.ptr, ctypes.byref(scale))
    else:
        _transform(h, al, x_desc, xv, be, y_desc, yv)
    return y


_SOFTMAX_ALGOS = {
    "fast": int(_b.CUDNN_SOFTMAX_FAST),
    "accurate": int(_b.CUDNN_SOFTMAX_ACCURATE),
    "log": int(_b.CUDNN_SOFTMAX_LOG),
}
_SOFTMAX_MODES = {
    "instance": int(_b.CUDNN_SOFTMAX_MODE_INSTANCE),
    "channel": int(_b.CUDNN_SOFTMAX_MODE_CHANNEL),
}


def softmax_forward(
    x: Any,
    *,
    algorithm: str = "accurate",
    mode: str = "channel",
    y: Any = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``y = alpha * softmax(x) + beta * y`` (``cudnnSoftmaxForward``, current in cuDNN 9).

    ``algorithm``: ``"accurate"`` (subtracts the maximum first), ``"fast"`` (does not), ``"log"``
    (log-softmax). ``mode``: ``"channel"`` (over C, for each N and spatial position) or
    ``"instance"`` (over C, H, W together, for each N). Returns ``y``.
    """
    algo = _choice(algorithm, "algorithm", _SOFTMAX_ALGOS)
    m = _choice(mode, "mode", _SOFTMAX_MODES)
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    y, yv = _output(y, "y", xv.shape, xv.dtype, like=xv, handle=h, stream_ptr=sp, beta=beta)
    al, be = _scalars(xv.dtype, alpha=alpha, beta=beta)
    _call(
        "cudnnSoftmaxForward",
        h,
        algo,
        m,
        ctypes.byref(al),
        _tensor_desc(xv, "x"),
        xv.ptr,
        ctypes.byref(be),
        _tensor_desc(yv, "y"),
        yv.ptr,
    )
    return y
