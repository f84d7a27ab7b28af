"""Convolution gradients: data (``cudnnConvolutionBackwardData``), filter
(``cudnnConvolutionBackwardFilter``) and bias (``cudnnConvolutionBackwardBias``).

Data and filter gradients share one shape of C API: an input and ``dy`` go in, a gradient comes
out, with the same algorithm-query, find, workspace-size and run functions per direction (only the
descriptor kinds differ). :class:`_Direction` names those functions, and one path runs both. The
conventions are :func:`~pycudnn.ops.convolution_forward`'s: the descriptor, filter layouts,
algorithm choice, workspace and Tensor Core warning work the same way.
"""

from __future__ import annotations

import ctypes
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

from _nvbind.arrays import ArrayView
from _nvbind.device_array import DeviceArray
from _nvbind.forksafe import fork_safe_lock
from _nvbind.memory import workspace
from _nvbind.strides import packed_strides_in_order

from .. import _bindings as _b
from ..errors import error_from_status
from ..handle import Handle
from ..tensor import ConvolutionDescriptor, FilterDescriptor, TensorDescriptor
from ..tensor._common import _choice, _ints, warn_deprecated_once
from ..tensor._common import call as _call
from ..tensor.filter import channels_last_perm
from ._common import (
    _GRAPH,
    _desc_for,
    _memory_order,
    _operand,
    _output,
    _resolve,
    _same_dtype,
    _scalars,
    _tensor_desc,
)
from .convolution import _conv_or_default, _filter_desc, _filter_desc_for


def _algos(enum: Any) -> dict[str, int]:
    return {name.lower(): int(v) for name, v in enum.__members__.items() if name != "COUNT"}


@dataclasses.dataclass(frozen=True)
class _Direction:
    """The C functions of one gradient direction; each takes ``(handle, in, dy, conv, out, ...)``.

    ``in`` is ``w`` for data gradients and ``x`` for filter gradients; ``out`` is ``dx`` or ``dw``.
    """

    what: str  # for messages
    algos: dict[str, int]
    perf: Any  # the ...AlgoPerf_t structure
    max_count: str
    heuristic: str
    find: str
    workspace_size: str
    run: str


_DATA = _Direction(
    "backward data",
    _algos(_b.cudnnConvolutionBwdDataAlgo_t),
    _b.cudnnConvolutionBwdDataAlgoPerf_t,
    "cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
    "cudnnFindConvolutionBackwardDataAlgorithmEx",
    "cudnnGetConvolutionBackwardDataWorkspaceSize",
    "cudnnConvolutionBackwardData",
)
_FILTER = _Direction(
    "backward filter",
    _algos(_b.cudnnConvolutionBwdFilterAlgo_t),
    _b.cudnnConvolutionBwdFilterAlgoPerf_t,
    "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount",
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
    "cudnnFindConvolutionBackwardFilterAlgorithmEx",
    "cudnnGetConvolutionBackwardFilterWorkspaceSize",
    "cudnnConvolutionBackwardFilter",
)
_algo_cache: dict[tuple[Any, ...], int] = {}
_algo_lock = fork_safe_lock(sys.modules[__name__], "_algo_lock")

_Descs = tuple[Any, TensorDescriptor, ConvolutionDescriptor, Any]


def _check_algo(algo: Any, d: _Direction) -> None:
    """Refuse an unknown algorithm name before any GPU work (the forward checks on use)."""
    if algo is not None and not (
        isinstance(algo, str) and algo.strip().lower() in ("heuristic", "find")
    ):
        _choice(algo, "algo", {**d.algos, "heuristic": -1, "find": -2})


def _first_usable(d: _Direction, perf: Any, returned: int, function: str) -> int:
    for i in range(returned):
        if perf[i].status == 0:
            return int(perf[i].algo)
    raise error_from_status(
        int(_b.CUDNN_STATUS_NOT_SUPPORTED),
        function,
        f"none of the {returned} {d.what} convolution algorithms supports this configuration",
    )


def _pick_algorithm(
    d: _Direction,
    algo: Any,
    handle: Handle,
    descs: _Descs,
    *,
    pointers: tuple[int, int, int],
    stream_ptr: int,
) -> int:
    """As the forward's: a name or value as given; the heuristic's or FindEx's first usable
    algorithm, cached per direction, mode, device and descriptors."""
    if algo is not None and not isinstance(algo, str):
        return _choice(algo, "algo", d.algos)
    mode = "heuristic" if algo is None else algo.strip().lower()
    if mode not in ("heuristic", "find"):
        return _choice(algo, "algo", d.algos)
    in_desc, dy_desc, conv_desc, out_desc = descs
    key = (
        d.run,
        mode,
        handle.device_id,
        in_desc.key(),
        dy_desc.key(),
        conv_desc.key(),
        out_desc.key(),
    )
    cached = _algo_cache.get(key)
    if cached is not None:
        return cached
    count = ctypes.c_int()
    _call(d.max_count, handle, ctypes.byref(count))
    n = max(int(count.value), 1)
    perf = (d.perf * n)()
    returned = ctypes.c_int()
    _call(
        d.heuristic, handle, in_desc, dy_desc, conv_desc, out_desc, n, ctypes.byref(returned), perf
    )
    if mode == "heuristic":
        choice = _first_usable(d, perf, returned.value, d.heuristic)
    else:
        # Time the candidates on the GPU with a workspace as large as the largest one needs.
        ws_size = max(
            (int(perf[i].memory) for i in range(returned.value) if perf[i].status == 0), default=0
        )
        ws = workspace(ws_size, device=handle.device_id, stream=stream_ptr or None)
        found = (d.perf * n)()
        got = ctypes.c_int()
        in_ptr, dy_ptr, out_ptr = pointers
        _call(
            d.find,
            handle,
            in_desc,
            in_ptr,
            dy_desc,
            dy_ptr,
            conv_desc,
            out_desc,
            out_ptr,
            n,
            ctypes.byref(got),
            found,
            ws or None,
            ws_size,
        )
        choice = _first_usable(d, found, got.value, d.find)
    with _algo_lock:
        _algo_cache[key] = choice
    return choice


def _run(
    d: _Direction,
    h: Handle,
    sp: int,
    algo: Any,
    descs: _Descs,
    *,
    views: tuple[ArrayView, ArrayView, ArrayView],
    alpha: Any,
    beta: Any,
    tensor_core_descs: tuple[TensorDescriptor, FilterDescriptor],
) -> None:
    """Pick the algorithm, size the workspace and run ``d`` (the forward's sequence)."""
    in_desc, dy_desc, conv_desc, out_desc = descs
    inv, dyv, outv = views
    a, b = _scalars(outv.dtype, alpha=alpha, beta=beta)
    find_out = outv.ptr
    scratch = None
    if isinstance(algo, str) and algo.strip().lower() == "find" and float(b.value) != 0.0:
        # FindEx overwrites the gradient while timing; keep the values beta blends in.
        scratch = DeviceArray.empty(
            outv.shape, outv.dtype, device=h.device_id, stream=sp or None, strides=outv.strides
        )
        find_out = scratch.ptr
    try:
        chosen = _pick_algorithm(
            d, algo, h, descs, pointers=(inv.ptr, dyv.ptr, find_out), stream_ptr=sp
        )
    finally:
        if scratch is not None:
            scratch.close()
    ws_size = ctypes.c_size_t()
    _call(
        d.workspace_size,
        h,
        in_desc,
        dy_desc,
        conv_desc,
        out_desc,
        chosen,
        ctypes.byref(ws_size),
    )
    ws = workspace(int(ws_size.value), device=h.device_id, stream=sp or None)
    if conv_desc.uses_tensor_ops:
        names = ("w", "dy", "dx") if d is _DATA else ("x", "dy", "dw")
        pointers = [(n, v.ptr) for n, v in zip(names, views, strict=True)]
        if ws:
            pointers.append(("workspace", ws))
        conv_desc.warn_tensor_cores(*tensor_core_descs, pointers, stacklevel=3)
    _call(
        d.run,
        h,
        ctypes.byref(a),
        in_desc,
        inv.ptr,
        dy_desc,
        dyv.ptr,
        conv_desc,
        chosen,
        ws or None,
        int(ws_size.value),
        ctypes.byref(b),
        out_desc,
        outv.ptr,
    )


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
    given: Any, given_name: str, out: Any, out_name: str, *, rank: int, h: Handle, sp: int
) -> tuple[int, ...]:
    """The shape of the gradient: ``out``'s when given (then ``given`` must agree), else
    ``given``'s; the two ways of naming it, since ``dy``'s shape does not determine it."""
    shape = None if given is None else _ints(given, given_name, minimum=1)
    if out is not None:
        out_shape = _operand(out, out_name, h, sp, output=True).shape
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


def convolution_backward_data(
    w: Any,
    dy: Any,
    conv_desc: ConvolutionDescriptor | None = None,
    *,
    dx: Any = None,
    x_shape: Sequence[int] | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    algo: str | int | None = None,
    handle: Handle | None = None,
    stream: Any = None,
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
    included. Returns ``dx``.
    """
    warn_deprecated_once(
        "pycudnn.ops.convolution_backward_data (cudnnConvolutionBackwardData)", _GRAPH
    )
    _check_algo(algo, _DATA)
    h, sp = _resolve(handle, stream, dy, "dy")
    wv = _operand(w, "w", h, sp)
    dyv = _operand(dy, "dy", h, sp)
    dtype = _same_dtype([("dy", dyv), ("w", wv)])
    shape = _gradient_shape(x_shape, "x_shape", dx, "dx", rank=len(dyv.shape), h=h, sp=sp)
    conv_desc = _conv_or_default(conv_desc, dyv, "dy", dtype)
    w_desc = _filter_desc(wv, "w", dtype)
    strides = packed_strides_in_order(shape, _memory_order(dyv.shape, dyv.strides))
    # Checked before dx is allocated; the descriptor is the one an allocated dx gets.
    x_desc = _desc_for(shape, strides, dtype, "dx")
    _check_dy(conv_desc, x_desc, w_desc, dyv, ("dx" if dx is not None else "x_shape", "w"))
    dx, dxv = _output(dx, "dx", shape, dtype, like=dyv, handle=h, stream_ptr=sp, beta=beta)
    dx_desc, dy_desc = _tensor_desc(dxv, "dx"), _tensor_desc(dyv, "dy")
    descs = (w_desc, dy_desc, conv_desc, dx_desc)
    _run(
        _DATA,
        h,
        sp,
        algo,
        descs,
        views=(wv, dyv, dxv),
        alpha=alpha,
        beta=beta,
        tensor_core_descs=(dx_desc, w_desc),
    )
    return dx


def convolution_backward_filter(
    x: Any,
    dy: Any,
    conv_desc: ConvolutionDescriptor | None = None,
    *,
    dw: Any = None,
    w_shape: Sequence[int] | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    algo: str | int | None = None,
    handle: Handle | None = None,
    stream: Any = None,
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
    as in the forward. Returns ``dw``.

    Unverified on a GPU for NCHW 16-bit data: the graph API's engine 70 returns wrong NCHW 16-bit
    weight gradients on an H100 with cuDNN 9.19 (:mod:`pycudnn.known_bad`), and whether this
    legacy path can reach the same kernels is not known (docs/legacy-ops.md).
    """
    warn_deprecated_once(
        "pycudnn.ops.convolution_backward_filter (cudnnConvolutionBackwardFilter)", _GRAPH
    )
    _check_algo(algo, _FILTER)
    h, sp = _resolve(handle, stream, x, "x")
    xv = _operand(x, "x", h, sp)
    dyv = _operand(dy, "dy", h, sp)
    dtype = _same_dtype([("x", xv), ("dy", dyv)])
    shape = _gradient_shape(w_shape, "w_shape", dw, "dw", rank=len(xv.shape), h=h, sp=sp)
    conv_desc = _conv_or_default(conv_desc, xv, "x", dtype)
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
        dw_desc = _filter_desc(_operand(dw, "dw", h, sp, output=True), "dw", dtype)
    _check_dy(conv_desc, x_desc, dw_desc, dyv, ("x", "dw" if dw is not None else "w_shape"))
    dw, dwv = _output(
        dw, "dw", shape, dtype, like=xv, handle=h, stream_ptr=sp, beta=beta, strides=strides
    )
    descs = (x_desc, _tensor_desc(dyv, "dy"), conv_desc, dw_desc)
    _run(
        _FILTER,
        h,
        sp,
        algo,
        descs,
        views=(xv, dyv, dwv),
        alpha=alpha,
        beta=beta,
        tensor_core_descs=(x_desc, dw_desc),
    )
    return dw


def convolution_backward_bias(
    dy: Any,
    *,
    db: Any = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``db = alpha * sum(dy over N and the spatial dims) + beta * db``
    (``cudnnConvolutionBackwardBias``; deprecated in cuDNN 9).

    ``db`` has shape ``1, K, 1, 1`` (``1, K, 1, 1, 1`` for 3-D), the bias :func:`add_tensor`
    broadcasts in the forward. Returns ``db``.
    """
    warn_deprecated_once(
        "pycudnn.ops.convolution_backward_bias (cudnnConvolutionBackwardBias)", _GRAPH
    )
    h, sp = _resolve(handle, stream, dy, "dy")
    dyv = _operand(dy, "dy", h, sp)
    dy_desc = _tensor_desc(dyv, "dy")  # refuses ranks cuDNN does not take, before db is made
    shape = (1, dyv.shape[1], *([1] * (len(dyv.shape) - 2)))
    db, dbv = _output(db, "db", shape, dyv.dtype, like=dyv, handle=h, stream_ptr=sp, beta=beta)
    a, b = _scalars(dyv.dtype, alpha=alpha, beta=beta)
    _call(
        "cudnnConvolutionBackwardBias",
        h,
        ctypes.byref(a),
        dy_desc,
        dyv.ptr,
        ctypes.byref(b),
        _tensor_desc(dbv, "db"),
        dbv.ptr,
    )
    return db
