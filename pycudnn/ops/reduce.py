"""Reductions (``cudnnReduceTensor``) with indices and workspace."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from _nvbind.arrays import as_array_view
from _nvbind.device_array import DeviceArray
from _nvbind.keywords import take_keywords
from _nvbind.memory import allocate, stream_object, workspace

from ..tensor import (
    ReduceTensorDescriptor,
)
from ..tensor._common import _ints, _nan_opt, warn_deprecated_once
from ..tensor._common import call as _call
from ._common import (
    _GRAPH,
    _cached,
    _check_broadcast,
    _resolve,
    _scalars,
    _tensor_desc,
)
from ._launch import LAUNCH, LaunchKeywords, launch_keywords

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+


@launch_keywords
def reduce_tensor(
    a: Any,
    *,
    op: str = "add",
    axes: Sequence[int] | int | None = None,
    c: Any = None,
    indices: bool = False,
    nan_propagation: bool = False,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``c = alpha * reduce(a) + beta * c`` (``cudnnReduceTensor``; deprecated in cuDNN 9).

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"amax"`` (max of absolute values),
    ``"avg"``, ``"norm1"``, ``"norm2"``, ``"mul_no_zeros"``. The reduced dims are ``axes``, or
    those where ``c`` has extent 1, or all. ``c`` keeps ``a``'s number of dims, with 1 in the
    reduced ones. With ``indices=True`` (min, max, amax) returns ``(c, indices)``: a uint32
    DeviceArray shaped like ``c`` holding, for each output, the index of the selected element
    within its reduced block, flattened in row-major order. The workspace comes from
    :func:`_nvbind.memory.workspace`. ``alpha``, ``beta``, ``handle``, ``stream``: see
    :class:`~pycudnn.ops.LaunchKeywords`. Returns ``c`` (or ``(c, indices)``).
    """
    k = take_keywords("reduce_tensor", kw, LAUNCH)
    warn_deprecated_once("pycudnn.ops.reduce_tensor (cudnnReduceTensor)", _GRAPH)
    ctx = _resolve(k["handle"], k["stream"], a, "a")
    av = ctx.operand(a, "a")
    n = len(av.shape)
    reduced: set[int] | None = None
    if axes is not None:
        axes_t = _ints((axes,) if isinstance(axes, (int, np.integer)) else axes, "axes")
        reduced = set()
        for ax in axes_t:
            if not -n <= ax < n:
                raise ValueError(f"axes contains {ax}, outside the {n} dims of a")
            reduced.add(ax % n)
    if c is not None and reduced is None:
        cv0 = as_array_view(c, name="c", stream_ptr=None)
        _check_broadcast(cv0, av, "c", "a")
        reduced = {i for i in range(n) if cv0.shape[i] == 1 and av.shape[i] != 1} or set(range(n))
    if reduced is None:
        reduced = set(range(n))
    c_shape = tuple(1 if i in reduced else d for i, d in enumerate(av.shape))
    dtype = av.dtype
    compute = np.float64 if dtype == np.float64 else np.float32
    if not isinstance(indices, (bool, np.bool_)):  # before the key: bool("False") is True
        raise TypeError(f"indices must be a bool, got {type(indices).__name__}")
    desc = _cached(
        "reductions",
        (str(op), compute, _nan_opt(nan_propagation), bool(indices)),
        lambda: ReduceTensorDescriptor(
            op, compute, nan_propagation=nan_propagation, indices=indices
        ),
    )
    c, cv = ctx.output(c, "c", c_shape, dtype, like=av, beta=k["beta"], inputs=[("a", av)])
    a_desc, c_desc = _tensor_desc(av, "a"), _tensor_desc(cv, "c")
    size = ctypes.c_size_t()
    _call("cudnnGetReductionWorkspaceSize", ctx.handle, desc, a_desc, c_desc, ctypes.byref(size))
    ws_size = int(size.value)
    ws = workspace(ws_size, device=ctx.handle.device_id, stream=ctx.stream_ptr or None)
    idx_array = None
    idx_ptr, idx_size = None, 0
    if indices:
        _call("cudnnGetReductionIndicesSize", ctx.handle, desc, a_desc, c_desc, ctypes.byref(size))
        idx_size = max(int(size.value), int(np.prod(c_shape)) * 4)
        s = stream_object(ctx.stream_ptr or None, ctx.handle.device)
        buf = allocate(idx_size, device=ctx.handle.device_id, stream=s)
        idx_array = DeviceArray(buf, c_shape, np.uint32, stream=s)
        idx_ptr = idx_array.ptr
    al, be = _scalars(dtype, alpha=k["alpha"], beta=k["beta"])
    _call(
        "cudnnReduceTensor",
        ctx.handle,
        desc,
        idx_ptr,
        idx_size,
        ws or None,
        ws_size,
        ctypes.byref(al),
        a_desc,
        av.ptr,
        ctypes.byref(be),
        c_desc,
        cv.ptr,
    )
    return (c, idx_array) if indices else c
