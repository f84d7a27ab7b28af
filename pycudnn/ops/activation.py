"""Activations and softmax, forward and backward (``cudnnActivationForward``,
``cudnnActivationBackward``, ``cudnnSoftmaxForward``, ``cudnnSoftmaxBackward``).
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, TypedDict

from _nvbind.keywords import keyword_defaults, take_keywords

from .. import _bindings as _b
from ..tensor import (
    ActivationDescriptor,
)
from ..tensor._common import _choice, _real, warn_deprecated_once
from ..tensor._common import call as _call
from ._common import (
    _GRAPH,
    _cached,
    _resolve,
    _same_dtype,
    _same_layout,
    _scalar_type,
    _scalars,
    _tensor_desc,
    _transform,
)
from ._launch import LAUNCH, LaunchKeywords, launch_keywords, shows

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+


def _activation(mode: Any, coef: Any, swish_beta: Any) -> ActivationDescriptor:
    given = None if coef is None else _real(coef, "coef")  # None: the mode's default
    return _cached(
        "activations",
        (str(mode), given, _real(swish_beta, "swish_beta")),
        lambda: ActivationDescriptor(mode, coef, swish_beta=swish_beta),
    )


@launch_keywords
def activation_forward(
    x: Any,
    mode: str = "relu",
    *,
    y: Any = None,
    coef: float | None = None,
    swish_beta: float = 1.0,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``y = alpha * act(x) + beta * y`` (``cudnnActivationForward``; deprecated in cuDNN 9).

    ``mode``: ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"clipped_relu"`` (``coef``: ceiling, to
    give), ``"elu"`` (``coef``: alpha, default 1.0), ``"swish"`` (``x * sigmoid(swish_beta * x)``),
    ``"identity"``.
    ``y`` may be ``x`` (in place). cuDNN documents ``CUDNN_ACTIVATION_IDENTITY`` as not working
    with ``cudnnActivationForward``, so ``"identity"`` runs as ``cudnnTransformTensor``
    (``cudnnScaleTensor`` in place). ``alpha``, ``beta``, ``handle``, ``stream``: see
    :class:`~pycudnn.ops.LaunchKeywords`. Returns ``y``.
    """
    k = take_keywords("activation_forward", kw, LAUNCH)
    warn_deprecated_once("pycudnn.ops.activation_forward (cudnnActivationForward)", _GRAPH)
    act = _activation(mode, coef, swish_beta)
    ctx = _resolve(k["handle"], k["stream"], x, "x")
    xv = ctx.operand(x, "x")
    y, yv = ctx.output(y, "y", xv.shape, xv.dtype, like=xv, beta=k["beta"],
                       inputs=[("x", xv)], in_place=["x"])  # fmt: skip
    al, be = _scalars(xv.dtype, alpha=k["alpha"], beta=k["beta"])
    x_desc, y_desc = _tensor_desc(xv, "x"), _tensor_desc(yv, "y")
    if act.key()[0] != int(_b.CUDNN_ACTIVATION_IDENTITY):
        _call(
            "cudnnActivationForward",
            ctx.handle,
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
        _call("cudnnScaleTensor", ctx.handle, y_desc, yv.ptr, ctypes.byref(scale))
    else:
        _transform(ctx.handle, al, x_desc, xv, be, y_desc, yv)
    return y


class _ActivationSettings(TypedDict, total=False):
    """The activation settings of :func:`activation_forward` besides ``mode``."""

    coef: float | None
    swish_beta: float


class ActivationKeywords(_ActivationSettings, LaunchKeywords, total=False):
    """:func:`activation_forward`'s ``coef`` and ``swish_beta`` and the
    :class:`~pycudnn.ops.LaunchKeywords`, with the forward's defaults: the keywords
    :func:`activation_backward` takes."""


# activation_backward takes activation_forward's keywords (ActivationKeywords), with its defaults.
_ACTIVATION = keyword_defaults(activation_forward, ActivationKeywords.__annotations__)


@shows(activation_forward, ActivationKeywords)
def activation_backward(
    y: Any,
    dy: Any,
    x: Any,
    mode: str = "relu",
    *,
    dx: Any = None,
    **kw: Unpack[ActivationKeywords],
) -> Any:
    """``dx = alpha * act'(x) * dy + beta * dx`` (``cudnnActivationBackward``; deprecated in
    cuDNN 9).

    ``y`` is the forward's output for input ``x``, ``dy`` the gradient of ``y``; the arguments
    come in the C function's order (y, dy, x) and ``mode``, ``coef`` and ``swish_beta`` are the
    forward's, as are the launch keywords (:class:`~pycudnn.ops.ActivationKeywords`). All four
    tensors share shape and dtype, and cuDNN's API reference requires ``dy`` to have ``y``'s
    strides and ``dx`` to have ``x``'s (checked here; a ``dx`` allocated here gets them). ``dx``
    may be ``dy`` (in place; then ``x`` and ``y`` are laid out alike). For ``"identity"`` the
    gradient is ``dy`` itself, copied with ``cudnnTransformTensor``, as the forward does.
    Returns ``dx``.
    """
    k = take_keywords("activation_backward", kw, _ACTIVATION)
    warn_deprecated_once("pycudnn.ops.activation_backward (cudnnActivationBackward)", _GRAPH)
    act = _activation(mode, k["coef"], k["swish_beta"])
    ctx = _resolve(k["handle"], k["stream"], dy, "dy")
    yv, dyv, xv = (ctx.operand(a, n) for a, n in ((y, "y"), (dy, "dy"), (x, "x")))
    dtype = _same_dtype([("y", yv), ("dy", dyv), ("x", xv)])
    fn = "cudnnActivationBackward"
    _same_layout(dyv, yv, "dy", "y", fn)
    if xv.shape != yv.shape:
        raise ValueError(f"x has shape {xv.shape} but y has {yv.shape}; they must match")
    dx, dxv = ctx.gradient_like(dx, xv, dtype, beta=k["beta"], function=fn,
                                inputs=[("y", yv), ("dy", dyv), ("x", xv)], in_place=["dy"])  # fmt: skip
    al, be = _scalars(dtype, alpha=k["alpha"], beta=k["beta"])
    dy_desc, dx_desc = _tensor_desc(dyv, "dy"), _tensor_desc(dxv, "dx")
    if act.key()[0] == int(_b.CUDNN_ACTIVATION_IDENTITY):
        if dxv.ptr == dyv.ptr and dxv.size:
            scale = _scalar_type(dtype)(float(al.value) + float(be.value))
            _call("cudnnScaleTensor", ctx.handle, dx_desc, dxv.ptr, ctypes.byref(scale))
        else:
            _transform(ctx.handle, al, dy_desc, dyv, be, dx_desc, dxv)
        return dx
    _call(
        fn,
        ctx.handle,
        act,
        ctypes.byref(al),
        _tensor_desc(yv, "y"),
        yv.ptr,
        dy_desc,
        dyv.ptr,
        _tensor_desc(xv, "x"),
        xv.ptr,
        ctypes.byref(be),
        dx_desc,
        dxv.ptr,
    )
    return dx


_SOFTMAX_ALGOS = {
    "fast": int(_b.CUDNN_SOFTMAX_FAST),
    "accurate": int(_b.CUDNN_SOFTMAX_ACCURATE),
    "log": int(_b.CUDNN_SOFTMAX_LOG),
}
_SOFTMAX_MODES = {
    "instance": int(_b.CUDNN_SOFTMAX_MODE_INSTANCE),
    "channel": int(_b.CUDNN_SOFTMAX_MODE_CHANNEL),
}


@launch_keywords
def softmax_forward(
    x: Any,
    *,
    algorithm: str = "accurate",
    mode: str = "channel",
    y: Any = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``y = alpha * softmax(x) + beta * y`` (``cudnnSoftmaxForward``, current in cuDNN 9).

    ``algorithm``: ``"accurate"`` (subtracts the maximum first), ``"fast"`` (does not), ``"log"``
    (log-softmax). ``mode``: ``"channel"`` (over C, for each N and spatial position) or
    ``"instance"`` (over C, H, W together, for each N). ``alpha``, ``beta``, ``handle``,
    ``stream``: see :class:`~pycudnn.ops.LaunchKeywords`. Returns ``y``.
    """
    k = take_keywords("softmax_forward", kw, LAUNCH)
    algo = _choice(algorithm, "algorithm", _SOFTMAX_ALGOS)
    m = _choice(mode, "mode", _SOFTMAX_MODES)
    ctx = _resolve(k["handle"], k["stream"], x, "x")
    xv = ctx.operand(x, "x")
    y, yv = ctx.output(y, "y", xv.shape, xv.dtype, like=xv, beta=k["beta"], inputs=[("x", xv)])
    al, be = _scalars(xv.dtype, alpha=k["alpha"], beta=k["beta"])
    _call(
        "cudnnSoftmaxForward",
        ctx.handle,
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


@launch_keywords
def softmax_backward(
    y: Any,
    dy: Any,
    *,
    algorithm: str = "accurate",
    mode: str = "channel",
    dx: Any = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``dx = alpha * softmax'(y) dy + beta * dx`` (``cudnnSoftmaxBackward``, current in cuDNN 9).

    ``y`` is :func:`softmax_forward`'s output and ``algorithm`` and ``mode`` are the forward's:
    ``dx = y * (dy - sum(dy * y))`` for ``"accurate"`` and ``"fast"``, ``dx = dy - exp(y) *
    sum(dy)`` for ``"log"``, the sums over the softmax's dims. ``y``, ``dy`` and ``dx`` share shape
    and dtype, and ``dy`` has ``y``'s strides (checked here); a ``dx`` allocated here is packed in
    ``y``'s memory order. The launch keywords are :func:`softmax_forward`'s. Returns ``dx``.
    """
    k = take_keywords("softmax_backward", kw, LAUNCH)
    algo = _choice(algorithm, "algorithm", _SOFTMAX_ALGOS)
    m = _choice(mode, "mode", _SOFTMAX_MODES)
    ctx = _resolve(k["handle"], k["stream"], dy, "dy")
    yv, dyv = ctx.operand(y, "y"), ctx.operand(dy, "dy")
    dtype = _same_dtype([("y", yv), ("dy", dyv)])
    _same_layout(dyv, yv, "dy", "y", "cudnnSoftmaxBackward")
    dx, dxv = ctx.output(dx, "dx", yv.shape, dtype, like=yv, beta=k["beta"],
                         inputs=[("y", yv), ("dy", dyv)])  # fmt: skip
    al, be = _scalars(dtype, alpha=k["alpha"], beta=k["beta"])
    _call(
        "cudnnSoftmaxBackward",
        ctx.handle,
        algo,
        m,
        ctypes.byref(al),
        _tensor_desc(yv, "y"),
        yv.ptr,
        _tensor_desc(dyv, "dy"),
        dyv.ptr,
        ctypes.byref(be),
        _tensor_desc(dxv, "dx"),
        dxv.ptr,
    )
    return dx
