"""The algorithm choice, workspace and run that forward and backward convolution share.

cuDNN gives each convolution direction (forward, backward data, backward filter) the same shape
of C API: a max-count query, a ``_v7`` heuristic, a ``FindEx`` timer, a workspace-size query and
the run itself, each taking ``(handle, in, other, conv, out, ...)``. :class:`Direction` names those
functions for one direction, and :func:`run` is the one path for all three (the forward's, as
verified on an H100): the algorithm named, or the heuristic's or ``FindEx``'s first usable one
(cached per direction, mode, device and descriptors), a workspace of the size cuDNN asks for, the
Tensor Core warning, the call.
"""

from __future__ import annotations

import ctypes
import dataclasses
import sys
from typing import Any

from _nvbind.arrays import ArrayView
from _nvbind.device_array import DeviceArray
from _nvbind.forksafe import fork_safe_lock
from _nvbind.memory import workspace

from .. import _bindings as _b
from ..errors import error_from_status
from ..handle import Handle
from ..tensor import ConvolutionDescriptor
from ..tensor._common import _choice, _enum_names
from ..tensor._common import call as _call
from ._common import _Launch, _own_strides, _scalars


@dataclasses.dataclass(frozen=True)
class Direction:
    """The C functions of one convolution direction; each takes ``(handle, in, other, conv, out,
    ...)``.

    ``names`` are the three arrays in that order, as the Tensor Core warning names them: ``x, w,
    y`` forward, ``w, dy, dx`` for data gradients, ``x, dy, dw`` for filter gradients.
    ``tensor_core`` picks the forward's ``(x, w)`` descriptors out of ``(in, other, conv, out)``
    for that warning.
    """

    what: str  # for messages
    names: tuple[str, str, str]
    tensor_core: tuple[int, int]
    algos: dict[str, int]
    perf: Any  # the ...AlgoPerf_t structure
    max_count: str
    heuristic: str
    find: str
    workspace_size: str
    run: str


def _direction(
    what: str, names: tuple[str, str, str], tensor_core: tuple[int, int], stem: str, short: str
) -> Direction:
    """The direction whose C functions are ``cudnn...Convolution<stem>...`` and whose types are
    ``cudnnConvolution<short>Algo_t`` and ``cudnnConvolution<short>AlgoPerf_t``."""
    return Direction(
        what,
        names,
        tensor_core,
        _enum_names(getattr(_b, f"cudnnConvolution{short}Algo_t")),
        getattr(_b, f"cudnnConvolution{short}AlgoPerf_t"),
        max_count=f"cudnnGetConvolution{stem}AlgorithmMaxCount",
        heuristic=f"cudnnGetConvolution{stem}Algorithm_v7",
        find=f"cudnnFindConvolution{stem}AlgorithmEx",
        workspace_size=f"cudnnGetConvolution{stem}WorkspaceSize",
        run=f"cudnnConvolution{stem}",
    )


FORWARD = _direction("forward", ("x", "w", "y"), (0, 1), "Forward", "Fwd")
BACKWARD_DATA = _direction("backward data", ("w", "dy", "dx"), (3, 0), "BackwardData", "BwdData")
BACKWARD_FILTER = _direction(
    "backward filter", ("x", "dy", "dw"), (0, 3), "BackwardFilter", "BwdFilter"
)

_algo_cache: dict[tuple[Any, ...], int] = {}
_algo_lock = fork_safe_lock(sys.modules[__name__], "_algo_lock")

# (in, other, conv, out): (x, w, conv, y) forward, (w, dy, conv, dx) and (x, dy, conv, dw) backward.
Descs = tuple[Any, Any, ConvolutionDescriptor, Any]


def _perf_results(d: Direction, n: int) -> Any:
    return (d.perf * max(n, 1))()


def _max_algo_count(d: Direction, handle: Handle) -> int:
    count = ctypes.c_int()
    _call(d.max_count, handle, ctypes.byref(count))
    return max(int(count.value), 1)


def _first_usable(d: Direction, perf: Any, returned: int, function: str) -> int:
    for i in range(returned):
        if perf[i].status == 0:
            return int(perf[i].algo)
    raise error_from_status(
        int(_b.CUDNN_STATUS_NOT_SUPPORTED),
        function,
        f"none of the {returned} {d.what} convolution algorithms supports this configuration",
    )


def pick_algorithm(
    d: Direction,
    algo: Any,
    handle: Handle,
    descs: Descs,
    *,
    pointers: tuple[int, int, int],
    stream_ptr: int,
) -> int:
    """A name or value as given; the heuristic's or FindEx's first usable algorithm, cached per
    direction, mode, device and descriptors."""
    if algo is not None and not isinstance(algo, str):
        return _choice(algo, "algo", d.algos)
    mode = "heuristic" if algo is None else algo.strip().lower()
    if mode not in ("heuristic", "find"):
        return _choice(algo, "algo", {**d.algos, "heuristic": -1, "find": -2})
    in_desc, other_desc, conv_desc, out_desc = descs
    key = (
        d.run,
        mode,
        handle.device_id,
        in_desc.key(),
        other_desc.key(),
        conv_desc.key(),
        out_desc.key(),
    )
    cached = _algo_cache.get(key)
    if cached is not None:
        return cached
    n = _max_algo_count(d, handle)
    perf = _perf_results(d, n)
    returned = ctypes.c_int()
    _call(
        d.heuristic,
        handle,
        in_desc,
        other_desc,
        conv_desc,
        out_desc,
        n,
        ctypes.byref(returned),
        perf,
    )
    if mode == "heuristic":
        choice = _first_usable(d, perf, returned.value, d.heuristic)
    else:
        # Time the candidates on the GPU with a workspace as large as the largest one needs.
        ws_size = max(
            (int(perf[i].memory) for i in range(returned.value) if perf[i].status == 0), default=0
        )
        ws = workspace(ws_size, device=handle.device_id, stream=stream_ptr or None)
        found = _perf_results(d, n)
        got = ctypes.c_int()
        in_ptr, other_ptr, out_ptr = pointers
        _call(
            d.find,
            handle,
            in_desc,
            in_ptr,
            other_desc,
            other_ptr,
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


def run(
    d: Direction,
    ctx: _Launch,
    algo: Any,
    descs: Descs,
    *,
    views: tuple[ArrayView, ArrayView, ArrayView],
    alpha: Any,
    beta: Any,
) -> None:
    """Pick the algorithm, size the workspace and run ``d``: ``out = alpha * op(in, other) + beta
    * out``. ``views`` are the arrays of ``descs`` (``in``, ``other``, ``out``); the Tensor Core
    warning, if any, names the caller of the public function that called this."""
    h, sp = ctx
    in_desc, other_desc, conv_desc, out_desc = descs
    inv, otherv, outv = views
    a, b = _scalars(outv.dtype, alpha=alpha, beta=beta)
    find_out = outv.ptr
    scratch = None
    if isinstance(algo, str) and algo.strip().lower() == "find" and float(b.value) != 0.0:
        # FindEx overwrites the output while timing; keep the values beta blends in.
        # out_desc's strides: an extent-1 dim's made 1 (an exporter may give -1 there, which an
        # allocation refuses).
        scratch = DeviceArray.empty(
            outv.shape,
            outv.dtype,
            device=h.device_id,
            stream=sp or None,
            strides=_own_strides(outv),
        )
        find_out = scratch.ptr
    try:
        chosen = pick_algorithm(
            d, algo, h, descs, pointers=(inv.ptr, otherv.ptr, find_out), stream_ptr=sp
        )
    finally:
        if scratch is not None:
            scratch.close()
    ws_size = ctypes.c_size_t()
    _call(
        d.workspace_size,
        h,
        in_desc,
        other_desc,
        conv_desc,
        out_desc,
        chosen,
        ctypes.byref(ws_size),
    )
    ws = workspace(int(ws_size.value), device=h.device_id, stream=sp or None)
    if conv_desc.uses_tensor_ops:
        pointers = [(n, v.ptr) for n, v in zip(d.names, views, strict=True)]
        if ws:
            pointers.append(("workspace", ws))
        in_order: tuple[Any, ...] = descs
        x_desc, w_desc = (in_order[i] for i in d.tensor_core)
        conv_desc.warn_tensor_cores(x_desc, w_desc, pointers, stacklevel=3)
    _call(
        d.run,
        h,
        ctypes.byref(a),
        in_desc,
        inv.ptr,
        other_desc,
        otherv.ptr,
        conv_desc,
        chosen,
        ws or None,
        int(ws_size.value),
        ctypes.byref(b),
        out_desc,
        outv.ptr,
    )
