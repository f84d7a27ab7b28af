"""Convolution gradients: data (``cudnnConvolutionBackwardData``), filter
(``cudnnConvolutionBackwardFilter``) and bias (``cudnnConvolutionBackwardBias``).

Data and filter gradients share one shape of C API, the forward's: an input and ``dy`` go in, a
gradient comes out, with the same algorithm-query, find, workspace-size and run functions per
direction (only the descriptor kinds differ). :mod:`pycudnn.ops._conv_run` names those functions
per direction and runs all three on one path, so the conventions are
:func:`~pycudnn.ops.convolution_forward`'s: the descriptor, filter layouts, algorithm choice,
workspace and Tensor Core warning work the same way.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from _nvbind.arrays import ArrayView
from _nvbind.keywords import take_keywords
from _nvbind.strides import packed_strides_in_order

from ..tensor import ConvolutionDescriptor, FilterDescriptor, TensorDescriptor
from ..tensor._common import _choice, _ints, warn_deprecated_once
from ..tensor._common import call as _call
from ..tensor.filter import channels_last_perm
from ._common import (
    _GRAPH,
    _desc_for,
    _Launch,
    _memory_order,
    _resolve,
    _same_dtype,
    _scalars,
    _tensor_desc,
)
from ._conv_run import BACKWARD_DATA, BACKWARD_FILTER, Direction, run
from ._launch import LAUNCH, LaunchKeywords, launch_keywords
from .convolution import _conv_or_default, _filter_desc, _filter_desc_for

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+


def _check_algo(algo: Any, d: Direction) -> None:
    """Refuse an unknown algorithm name before any GPU work (the forward checks on use)."""
    if algo is not None and not (
        isinstance(algo, str) and algo.strip().lower() in ("heuristic", "find")
    ):
        _choice(algo, "algo", {**d.algos, "heuristic": -1, "find": -2})


def _check_dy(
    conv_desc: ConvolutionDescriptor,
    x_desc: TensorDescriptor,
    w_desc: FilterDescriptor,
    dyv: ArrayView,
    names: tuple[str, str],
) -> None:
    """``dy`` has the shape that the forward convolution of ``x`` with ``w`` gives."""
    want = conv_desc._output_dims(x_desc, w_desc)
    if dyv.shape != want:
        x_name, w_name = names
        raise ValueError(
            f"dy has shape {dyv.shape}, but the convolution of {x_name} {x_desc.dims} with "
            f"{w_name} {w_desc.dims} gives {want}"
        )


def _gradient_shape(
    given: Any, given_name: str, out: Any, out_name: str, *, rank: int, ctx: _Launch
) -> tuple[int, ...]:
    """The shape of the gradient: ``out``'s when given (then ``given`` must agree), else
    ``given``'s; the two ways of naming it, since ``dy``'s shape does not determine it."""
    shape = None if given is None else _ints(given, given_name, minimum=1)
    if out is not None:
        out_shape = ctx.operand(out, out_name, output=True).shape
        if shape is not None and out_shape != shape:
            raise ValueError(f"{out_name} has shape {out_shape} but {given_name} is {shape}")
        shape = out_shape
    if shape is None:
        raise TypeError(
            f"give {out_name} or {given_name}: with strides above 1, several shapes of "
            f"{out_name} convolve to dy's shape"
        )
    if len(shape) != rank:
        raise ValueError(f"{out_name} must have {rank} dims as dy has, got shape {shape}")
    return shape


def _begin(
    d: Direction,
    algo: Any,
    arrays: tuple[Any, Any],
    conv_desc: ConvolutionDescriptor | None,
    gradient: tuple[Any, Any],
    *,
    kw: Mapping[str, Any],
) -> tuple[
    _Launch, list[ArrayView], np.dtype, tuple[int, ...], ConvolutionDescriptor, dict[str, Any]
]:
    """What both gradients do first, in this order: complete the launch keywords ``kw`` (a
    misspelt one is a TypeError); warn once that the C function is deprecated; check ``algo``;
    the handle, from the data-shaped
    array (``dy`` for data gradients, ``x`` for filter gradients); the two ``arrays`` (``w, dy``
    or ``x, dy``, the C function's order) and their dtype; the gradient's shape, from
    ``gradient`` (``x_shape, dx`` or ``w_shape, dw``, see :func:`_gradient_shape`); the
    convolution descriptor. Returns the launch context, the two views, the dtype, the gradient's
    shape, the descriptor and the launch keywords."""
    function = f"convolution_{d.what.replace(' ', '_')}"  # the public function, for messages
    k = take_keywords(function, kw, LAUNCH)
    # stacklevel 4: the warning names the line that called the public function
    warn_deprecated_once(f"pycudnn.ops.{function} ({d.run})", _GRAPH, stacklevel=4)
    _check_algo(algo, d)
    in_name, dy_name, out_name = d.names
    lead = 1 if d is BACKWARD_DATA else 0  # the array laid out as data, not as a filter
    names = (in_name, dy_name)
    ctx = _resolve(k["handle"], k["stream"], arrays[lead], names[lead])
    views = [ctx.operand(obj, name) for name, obj in zip(names, arrays, strict=True)]
    dtype = _same_dtype([(names[lead], views[lead]), (names[1 - lead], views[1 - lead])])
    given, out = gradient
    shape = _gradient_shape(
        given, f"{out_name[1:]}_shape", out, out_name, rank=len(views[lead].shape), ctx=ctx
    )
    conv_desc = _conv_or_default(conv_desc, views[lead], names[lead], dtype)
    return ctx, views, dtype, shape, conv_desc, k


@launch_keywords
def convolution_backward_data(
    w: Any,
    dy: Any,
    conv_desc: ConvolutionDescriptor | None = None,
    *,
    dx: Any = None,
    x_shape: Sequence[int] | None = None,
    algo: str | int | None = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``dx = alpha * dgrad(w, dy) + beta * dx`` (``cudnnConvolutionBackwardData``; deprecated in
    cuDNN 9): the gradient of the forward convolution with respect to its input ``x``.

    ``w`` and ``conv_desc`` are the forward's (:func:`convolution_forward`); ``dy`` has the
    forward output's shape, in any positive-stride layout. ``dx`` or ``x_shape`` gives the input's
    shape (a strided convolution maps several input extents onto one output extent); a ``dx``
    allocated here is packed in ``dy``'s memory order. ``algo``: None or ``"heuristic"``
    (``cudnnGetConvolutionBackwardDataAlgorithm_v7``), ``"find"``
    (``cudnnFindConvolutionBackwardDataAlgorithmEx``; the choice is cached per shape), or a
    ``cudnnConvolutionBwdDataAlgo_t`` name (``"algo_0"``, ``"algo_1"``, ``"fft"``,
    ``"fft_tiling"``, ``"winograd"``, ``"winograd_nonfused"``) or value. ``conv_desc``'s
    ``math_type`` applies as in the forward, :class:`~pycudnn.tensor.TensorCoreWarning`
    included. ``alpha``, ``beta``, ``handle``, ``stream``: see
    :class:`~pycudnn.ops.LaunchKeywords`. Returns ``dx``.
    """
    ctx, (wv, dyv), dtype, shape, conv_desc, k = _begin(
        BACKWARD_DATA, algo, (w, dy), conv_desc, (x_shape, dx), kw=kw
    )
    w_desc = _filter_desc(wv, "w", dtype)
    strides = packed_strides_in_order(shape, _memory_order(dyv.shape, dyv.strides))
    # Checked before dx is allocated; the descriptor is the one an allocated dx gets.
    x_desc = _desc_for(shape, strides, dtype, "dx")
    _check_dy(conv_desc, x_desc, w_desc, dyv, ("dx" if dx is not None else "x_shape", "w"))
    dx, dxv = ctx.output(dx, "dx", shape, dtype, like=dyv, beta=k["beta"],
                         inputs=[("w", wv), ("dy", dyv)])  # fmt: skip
    dx_desc, dy_desc = _tensor_desc(dxv, "dx"), _tensor_desc(dyv, "dy")
    descs = (w_desc, dy_desc, conv_desc, dx_desc)
    run(BACKWARD_DATA, ctx, algo, descs, views=(wv, dyv, dxv), alpha=k["alpha"], beta=k["beta"])
    return dx


@launch_keywords
def convolution_backward_filter(
    x: Any,
    dy: Any,
    conv_desc: ConvolutionDescriptor | None = None,
    *,
    dw: Any = None,
    w_shape: Sequence[int] | None = None,
    algo: str | int | None = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``dw = alpha * wgrad(x, dy) + beta * dw`` (``cudnnConvolutionBackwardFilter``; deprecated
    in cuDNN 9): the gradient of the forward convolution with respect to its filter.

    ``x`` and ``conv_desc`` are the forward's; ``dy`` has the forward output's shape. ``dw``
    (packed KCRS or KRSC, as the forward's ``w``) or ``w_shape`` gives the filter's shape; a
    ``dw`` allocated here is KRSC (NHWC) when ``x`` is channels-last, else KCRS. ``algo``: None or
    ``"heuristic"`` (``cudnnGetConvolutionBackwardFilterAlgorithm_v7``), ``"find"``
    (``cudnnFindConvolutionBackwardFilterAlgorithmEx``; cached per shape), or a
    ``cudnnConvolutionBwdFilterAlgo_t`` name (``"algo_0"``, ``"algo_1"``, ``"fft"``, ``"algo_3"``,
    ``"winograd_nonfused"``, ``"fft_tiling"``) or value. ``conv_desc``'s ``math_type`` applies
    as in the forward. ``alpha``, ``beta``, ``handle``, ``stream``: see
    :class:`~pycudnn.ops.LaunchKeywords`. Returns ``dw``.

    Unverified on a GPU for NCHW 16-bit data: the graph API's engine 70 returns wrong NCHW 16-bit
    weight gradients on an H100 with cuDNN 9.19 (:mod:`pycudnn.known_bad`), and whether this
    legacy path can reach the same kernels is not known (docs/legacy-ops.md).
    """
    ctx, (xv, dyv), dtype, shape, conv_desc, k = _begin(
        BACKWARD_FILTER, algo, (x, dy), conv_desc, (w_shape, dw), kw=kw
    )
    x_desc = _tensor_desc(xv, "x")
    strides = None
    if dw is None:
        # The filter layout follows x's: KRSC for channels-last x, as cuDNN's NHWC kernels want.
        last = _memory_order(xv.shape, xv.strides) == channels_last_perm(len(xv.shape))
        dw_desc = _filter_desc_for(shape, "NHWC" if last else "NCHW", dtype)
        strides = packed_strides_in_order(
            shape, channels_last_perm(len(shape)) if last else range(len(shape))
        )
    else:
        dw_desc = _filter_desc(ctx.operand(dw, "dw", output=True), "dw", dtype)
    _check_dy(conv_desc, x_desc, dw_desc, dyv, ("x", "dw" if dw is not None else "w_shape"))
    dw, dwv = ctx.output(dw, "dw", shape, dtype, like=xv, beta=k["beta"], strides=strides,
                         inputs=[("x", xv), ("dy", dyv)])  # fmt: skip
    descs = (x_desc, _tensor_desc(dyv, "dy"), conv_desc, dw_desc)
    run(BACKWARD_FILTER, ctx, algo, descs, views=(xv, dyv, dwv), alpha=k["alpha"], beta=k["beta"])
    return dw


@launch_keywords
def convolution_backward_bias(
    dy: Any,
    *,
    db: Any = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``db = alpha * sum(dy over N and the spatial dims) + beta * db``
    (``cudnnConvolutionBackwardBias``; deprecated in cuDNN 9).

    ``db`` has shape ``1, K, 1, 1`` (``1, K, 1, 1, 1`` for 3-D), the bias :func:`add_tensor`
    broadcasts in the forward. ``alpha``, ``beta``, ``handle``, ``stream``: see
    :class:`~pycudnn.ops.LaunchKeywords`. Returns ``db``.
    """
    k = take_keywords("convolution_backward_bias", kw, LAUNCH)
    warn_deprecated_once(
        "pycudnn.ops.convolution_backward_bias (cudnnConvolutionBackwardBias)", _GRAPH
    )
    ctx = _resolve(k["handle"], k["stream"], dy, "dy")
    dyv = ctx.operand(dy, "dy")
    dy_desc = _tensor_desc(dyv, "dy")  # refuses ranks cuDNN does not take, before db is made
    shape = (1, dyv.shape[1], *([1] * (len(dyv.shape) - 2)))
    db, dbv = ctx.output(db, "db", shape, dyv.dtype, like=dyv, beta=k["beta"],
                         inputs=[("dy", dyv)])  # fmt: skip
    a, b = _scalars(dyv.dtype, alpha=k["alpha"], beta=k["beta"])
    _call(
        "cudnnConvolutionBackwardBias",
        ctx.handle,
        ctypes.byref(a),
        dy_desc,
        dyv.ptr,
        ctypes.byref(b),
        _tensor_desc(dbv, "db"),
        dbv.ptr,
    )
    return db
