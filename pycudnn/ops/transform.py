"""Layout transforms and element-wise sums and ops (``cudnnTransformTensor``, ``cudnnAddTensor``,
``cudnnOpTensor``).
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from _nvbind.arrays import ArrayView
from _nvbind.device_array import DeviceArray
from _nvbind.dtypes import dtype_name
from _nvbind.keywords import take_keywords
from _nvbind.strides import c_strides

from .. import layout
from ..handle import Handle
from ..tensor import (
    OpTensorDescriptor,
)
from ..tensor._common import _nan_opt, _real, warn_deprecated_once
from ..tensor._common import call as _call
from ._common import (
    _GRAPH,
    _cached,
    _check_broadcast,
    _desc_for,
    _resolve,
    _same_dtype,
    _scalars,
    _tensor_desc,
    _transform,
    check_apart,
)
from ._launch import LAUNCH, LaunchKeywords, launch_keywords

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+


def add_tensor(
    a: Any,
    c: Any,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``c = alpha * a + beta * c`` in place, ``a`` broadcast over ``c`` (``cudnnAddTensor``).

    Each dim of ``a`` is 1 or equal to ``c``'s (the bias-add of a ``1, C, 1, 1`` tensor, say).
    Deprecated in cuDNN 9. Returns ``c``.
    """
    warn_deprecated_once("pycudnn.ops.add_tensor (cudnnAddTensor)", _GRAPH)
    ctx = _resolve(handle, stream, c, "c")
    av = ctx.operand(a, "a")
    cv = ctx.operand(c, "c", output=True)
    dtype = _same_dtype([("c", cv), ("a", av)])
    _check_broadcast(av, cv, "a", "c")
    check_apart(cv, "c", [("a", av)])
    al, be = _scalars(dtype, alpha=alpha, beta=beta)
    a_desc, c_desc = _tensor_desc(av, "a"), _tensor_desc(cv, "c")
    h = ctx.handle
    _call("cudnnAddTensor", h, ctypes.byref(al), a_desc, av.ptr, ctypes.byref(be), c_desc, cv.ptr)
    return c


@launch_keywords
def transform_tensor(
    x: Any,
    fmt: str | None = None,
    *,
    y: Any = None,
    x_fmt: str | None = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """Copy ``x`` into another layout on the GPU (``cudnnTransformTensor``; deprecated in cuDNN 9).

    ``fmt`` is the layout of the result (``"NHWC"``, ``"NCHW"``, ``"CHWN"``, ``"NC/32HW32"``,
    ...), or give ``y`` in any layout with ``x``'s shape. ``x_fmt`` names a vectorised layout of
    ``x``, given as its packed array ``[N, C/x, H, W, x]``. For ``NC/xHWx`` the result is that
    packed array (:func:`pycudnn.layout.vectorized_dims_strides`).

    Vectorised layouts are described to cuDNN as plain strided tensors with C split in two,
    ``[N, C/x, x, H, W]``, on both sides: the same elements at the same addresses as cuDNN's
    ``NCHW_VECT_C`` (NC/xHWx "is really N x (C/x) x H x W x x"), without the vector data types,
    whose descriptors ``cudnnTransformTensor`` refuses for INT8x32 ("isTensorSameDims", seen on an
    H100 with cuDNN 9.19). So any width and any legacy data type work. ``alpha``, ``beta``,
    ``handle``, ``stream``: see :class:`~pycudnn.ops.LaunchKeywords`. Returns ``y``.
    """
    k = take_keywords("transform_tensor", kw, LAUNCH)
    warn_deprecated_once("pycudnn.ops.transform_tensor (cudnnTransformTensor)", _GRAPH)
    ctx = _resolve(k["handle"], k["stream"], x, "x")
    xv = ctx.operand(x, "x")
    x_vec = _vectorized(x_fmt, "x_fmt", required=True) if x_fmt is not None else None
    dims = _logical_dims(xv, x_vec, "x") if x_vec is not None else xv.shape
    al, be = _scalars(xv.dtype, alpha=k["alpha"], beta=k["beta"])
    y_vec = _vectorized(fmt, "fmt") if fmt is not None else None
    if y_vec is not None:
        view_shape, _ = layout.vectorized_dims_strides(dims, y_vec)
        y, yv = ctx.output(y, "y", view_shape, xv.dtype, like=xv, beta=k["beta"])
        _logical_dims(yv, y_vec, "y")  # checks that y is the packed view
    else:
        if y is None:
            if _real(k["beta"], "beta") != 0.0:
                raise ValueError("beta != 0 blends into the existing y, so y must be given")
            y = DeviceArray.empty(
                dims,
                xv.dtype,
                device=ctx.handle.device_id,
                stream=ctx.stream_ptr or None,
                fmt=fmt or "ABCDEFGH"[: len(dims)],
            )
        elif fmt is not None:
            raise ValueError("give either fmt (a new array in that layout) or y, not both")
        yv = ctx.operand(y, "y", output=True)
        if yv.shape != dims or yv.dtype != xv.dtype:
            raise ValueError(
                f"y has shape {yv.shape} and dtype {dtype_name(yv.dtype)}; expected {dims} and "
                f"{dtype_name(xv.dtype)}"
            )
    check_apart(yv, "y", [("x", xv)])
    if x_vec is None and y_vec is None:
        x_desc, y_desc = _tensor_desc(xv, "x"), _tensor_desc(yv, "y")
    else:
        x_split, y_split = split_descriptions(xv, x_vec, yv, y_vec)
        x_desc = _desc_for(*x_split, xv.dtype, "x")
        y_desc = _desc_for(*y_split, xv.dtype, "y")
    _transform(ctx.handle, al, x_desc, xv, be, y_desc, yv)
    return y


def _vectorized(fmt: str, name: str, *, required: bool = False) -> layout.Format | None:
    """``fmt`` parsed if it is a vectorised format (NC/xHWx, NC/xDHWx), else None."""
    f = layout.parse_format(fmt)
    if required and not f.is_vectorized:
        raise ValueError(f"{name}={fmt!r} is not a vectorised format (NC/4HW4, NC/32HW32, ...)")
    return f if f.is_vectorized else None


def _logical_dims(view: ArrayView, f: layout.Format, name: str) -> tuple[int, ...]:
    """Logical ``(N, C, *spatial)`` of a packed ``[N, C/x, *spatial, x]`` view, checked."""
    x = int(f.vector or 1)
    if len(view.shape) != f.rank + 1 or view.shape[-1] != x:
        raise ValueError(
            f"{name} in {f.name} is the packed array [N, C/{x}, {', '.join(f.logical[2:])}, {x}], "
            f"got shape {view.shape}"
        )
    packed = c_strides(view.shape)
    if any(n > 1 and a != b for n, a, b in zip(view.shape, view.strides, packed, strict=True)):
        raise ValueError(f"{name} must be packed (strides {packed}), got {view.strides}")
    return (view.shape[0], view.shape[1] * x, *view.shape[2:-1])


Description = tuple[tuple[int, ...], tuple[int, ...]]


def split_descriptions(
    xv: ArrayView, x_vec: layout.Format | None, yv: ArrayView, y_vec: layout.Format | None
) -> tuple[Description, Description]:
    """``(dims, strides)`` of ``x`` and ``y`` with C split into ``(C/x, x)``, in logical order.

    A plain side ``(N, C, *S)`` with strides ``(sN, sC, *sS)`` becomes ``(N, C/x, x, *S)`` with
    strides ``(sN, x*sC, sC, *sS)``; a packed view ``[N, C/x, *S, x]`` becomes the same dims with
    its own strides moved to match. Both sides then address element ``(n, c, *s)`` alike. Spatial
    dims that both sides lay out contiguously are then merged (H, W -> HW), so packed tensors
    reach cuDNN as 4-D ``[N, C/x, x, HW]`` (or ``DHW``), the rank every legacy routine takes.
    """
    widths = {int(f.vector or 1) for f in (x_vec, y_vec) if f is not None}
    if len(widths) != 1:
        raise ValueError(
            f"x_fmt {x_vec.name if x_vec else None!r} and fmt {y_vec.name if y_vec else None!r} "
            "group channels differently; transform through NCHW in two calls"
        )
    (x,) = widths
    return _fold_spatial(
        _split_side(xv, x_vec is not None, x), _split_side(yv, y_vec is not None, x)
    )


def _split_side(view: ArrayView, is_view: bool, x: int) -> Description:
    shape, st = view.shape, view.strides
    if is_view:  # [N, C/x, *S, x] -> [N, C/x, x, *S]
        return (shape[0], shape[1], shape[-1], *shape[2:-1]), (st[0], st[1], st[-1], *st[2:-1])
    if shape[1] % x:
        raise ValueError(f"C = {shape[1]} is not a multiple of the vector width {x}")
    return (shape[0], shape[1] // x, x, *shape[2:]), (st[0], st[1] * x, st[1], *st[2:])


def _fold_spatial(a: Description, b: Description) -> tuple[Description, Description]:
    """Merge adjacent spatial dims (index 3 on, after N, C/x, x) where both descriptions allow."""
    sides = [(list(a[0]), list(a[1])), (list(b[0]), list(b[1]))]
    i = len(sides[0][0]) - 2
    while i >= 3:
        # Dims i and i+1 act as one dim when stepping i is stepping i+1 all the way (or either
        # has extent 1, whose stride addresses nothing).
        if all(d[i] == 1 or d[i + 1] == 1 or s[i] == d[i + 1] * s[i + 1] for d, s in sides):
            for d, s in sides:
                s[i : i + 2] = [s[i] if d[i + 1] == 1 else s[i + 1]]
                d[i : i + 2] = [d[i] * d[i + 1]]
        i -= 1
    (ad, as_), (bd, bs) = sides
    return (tuple(ad), tuple(as_)), (tuple(bd), tuple(bs))


def op_tensor(
    a: Any,
    b: Any = None,
    op: str = "add",
    *,
    c: Any = None,
    alpha1: float = 1.0,
    alpha2: float = 1.0,
    beta: float = 0.0,
    nan_propagation: bool = False,
    handle: Handle | None = None,
    stream: Any = None,
) -> Any:
    """``c = op(alpha1 * a, alpha2 * b) + beta * c`` (``cudnnOpTensor``; deprecated in cuDNN 9).

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"`` (binary: ``b`` required, each of its dims
    1 or equal to ``a``'s) or ``"sqrt"``, ``"not"`` (unary: ``b`` must be None). cuDNN's rule
    for in-place use: ``c`` may be ``a``, and may be ``b`` only if it is ``a`` too. Computes in
    float64 for float64 data, else float32. Returns ``c``.
    """
    warn_deprecated_once("pycudnn.ops.op_tensor (cudnnOpTensor)", _GRAPH)
    ctx = _resolve(handle, stream, a, "a")
    av = ctx.operand(a, "a")
    dtype = av.dtype
    compute = np.float64 if dtype == np.float64 else np.float32
    desc = _cached(
        "op_tensors",
        (str(op), compute, _nan_opt(nan_propagation)),
        lambda: OpTensorDescriptor(op, compute, nan_propagation=nan_propagation),
    )
    if desc.is_unary:
        if b is not None:
            raise ValueError(f"op={op!r} is unary; b must be None")
        bv = av
    else:
        if b is None:
            raise TypeError(f"op={op!r} is binary; b is required")
        bv = ctx.operand(b, "b")
        _same_dtype([("a", av), ("b", bv)])
        _check_broadcast(bv, av, "b", "a")
    # c may be a (and b only if it is a too: checked below), as cudnnOpTensor documents
    c, cv = ctx.output(c, "c", av.shape, dtype, like=av, beta=beta,
                       inputs=[("a", av), ("b", bv)], in_place=["a", "b"])  # fmt: skip
    if bv is not av and cv.ptr == bv.ptr and cv.ptr != av.ptr and cv.size:
        raise ValueError("c may be b only if it is a as well (cudnnOpTensor's in-place rule)")
    a1, a2, be = _scalars(dtype, alpha1=alpha1, alpha2=alpha2, beta=beta)
    a_desc = _tensor_desc(av, "a")
    _call(
        "cudnnOpTensor",
        ctx.handle,
        desc,
        ctypes.byref(a1),
        a_desc,
        av.ptr,
        ctypes.byref(a2),
        a_desc if bv is av else _tensor_desc(bv, "b"),
        bv.ptr,
        ctypes.byref(be),
        _tensor_desc(cv, "c"),
        cv.ptr,
    )
    return c
