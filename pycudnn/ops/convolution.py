"""Forward convolution (``cudnnConvolutionForward``) with algorithm choice and workspace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from _nvbind.arrays import ArrayView
from _nvbind.keywords import take_keywords
from _nvbind.strides import packed_strides_in_order

from .. import layout
from ..tensor import (
    ConvolutionDescriptor,
    FilterDescriptor,
    TensorDescriptor,
)
from ..tensor._common import _choice, warn_deprecated_once
from ..tensor.filter import channels_last_perm
from ._common import (
    _GRAPH,
    _cached,
    _resolve,
    _same_dtype,
    _tensor_desc,
)
from ._conv_run import FORWARD, run
from ._launch import LAUNCH, LaunchKeywords, launch_keywords

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

_FWD_ALGOS = FORWARD.algos


def _default_compute(dtype: np.dtype) -> Any:
    if dtype == np.float64:
        return np.float64
    if dtype in (np.int8, np.uint8):
        return np.int32
    return np.float32


def _filter_format(wv: ArrayView, name: str = "w") -> str:
    n = len(wv.shape)

    def matches(order: Sequence[int]) -> bool:
        expected = packed_strides_in_order(wv.shape, order)
        return all(d == 1 or a == b for d, a, b in zip(wv.shape, wv.strides, expected, strict=True))

    if matches(range(n)):
        return "NCHW"
    if matches(channels_last_perm(n)):
        return "NHWC"
    raise ValueError(
        f"{name} has strides {wv.strides}: filters must be packed KCRS (NCHW) or KRSC (NHWC, channels "
        "last), the only filter layouts cuDNN has"
    )


def _filter_desc(wv: ArrayView, name: str, dtype: np.dtype) -> FilterDescriptor:
    """The cached filter descriptor of the packed KCRS or KRSC array ``wv``."""
    return _filter_desc_for(wv.shape, _filter_format(wv, name), dtype)


def _filter_desc_for(shape: tuple[int, ...], fmt: str, dtype: np.dtype) -> FilterDescriptor:
    """The cached filter descriptor of ``shape`` in ``fmt`` (``"NCHW"`` or ``"NHWC"``)."""
    return _cached("filters", (shape, fmt, dtype), lambda: FilterDescriptor(shape, dtype, fmt))


def _conv_or_default(
    conv_desc: ConvolutionDescriptor | None,
    xv: ArrayView,
    name: str,
    dtype: np.dtype,
    vec: layout.Format | None = None,
) -> ConvolutionDescriptor:
    """``conv_desc``, or the cached plain one (no padding, unit strides) for ``xv``'s rank (the
    logical rank of a vectorized ``vec`` array, one less than the packed view's)."""
    if conv_desc is None:
        spatial = len(xv.shape) - 2 if vec is None else vec.rank - 2
        if spatial < 1:
            raise ValueError(
                f"{name} must have at least 3 dims (N, C, spatial...), got shape {xv.shape}"
            )
        return _cached(
            "convs",
            (spatial, np.dtype(_default_compute(dtype))),
            lambda: ConvolutionDescriptor((0,) * spatial, compute_type=_default_compute(dtype)),
        )
    if not isinstance(conv_desc, ConvolutionDescriptor):
        raise TypeError(
            f"conv_desc must be a ConvolutionDescriptor, not {type(conv_desc).__name__}"
        )
    return conv_desc


# The legacy API's vectorized configurations (cudnnConvolutionForward's INT8x4_CONFIG,
# UINT8x4_CONFIG and INT8x32_CONFIG): x, w and y all NCHW_VECT_C of one vector type, an int32
# accumulator. INT8x32 runs on one algorithm only, IMPLICIT_PRECOMP_GEMM.
_VECTOR_WIDTHS = (4, 32)
_INT8X32_ALGO = "implicit_precomp_gemm"


def _vector_format(fmt: Any, algo: Any, conv_desc: Any) -> layout.Format | None:
    """The parsed vectorized ``fmt`` (None for None), after the checks that need no GPU."""
    if fmt is None:
        return None
    try:
        f = layout.parse_format(fmt)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"fmt: {exc}") from None
    if f.vector not in _VECTOR_WIDTHS:
        raise ValueError(
            f"fmt={fmt!r}: convolution_forward's fmt names a vectorized layout, NC/4HW4 or "
            "NC/32HW32 (NC/4DHW4, NC/32DHW32); plain layouts follow from the arrays' strides"
        )
    if f.vector == 32:
        name = algo.strip().lower() if isinstance(algo, str) else None
        ok = algo is None or name in ("heuristic", "find", _INT8X32_ALGO)
        if not ok and not isinstance(algo, str):
            ok = _choice(algo, "algo", _FWD_ALGOS) == _FWD_ALGOS[_INT8X32_ALGO]
        if not ok:
            raise ValueError(
                f"algo={algo!r}: cuDNN runs INT8x32 (NC/32HW32) convolutions with "
                f"{_INT8X32_ALGO!r} only (cudnnConvolutionForward's INT8x32_CONFIG)"
            )
    if isinstance(conv_desc, ConvolutionDescriptor) and conv_desc.compute_type != np.int32:
        raise ValueError(
            f"conv_desc has compute_type {conv_desc.compute_type}, but vectorized int8 "
            f"convolutions ({f.name}) accumulate in int32: pass compute_type=np.int32"
        )
    return f


def _vector_descs(
    xv: ArrayView, wv: ArrayView, dtype: np.dtype, f: layout.Format
) -> tuple[TensorDescriptor, FilterDescriptor]:
    """The NCHW_VECT_C descriptors of the packed ``[N, C/x, H, W, x]`` arrays ``xv`` and ``wv``."""
    x = int(f.vector or 0)
    dims = []
    for name, view in (("x", xv), ("w", wv)):
        shape = tuple(view.shape)
        if len(shape) != f.rank + 1 or shape[-1] != x:
            raise ValueError(
                f"{name} has shape {shape}; in fmt {f.name!r} it is the packed "
                f"[N, C/{x}, {', '.join(f.spatial)}, {x}] array ({f.rank + 1} dims, the last {x})"
            )
        logical = (shape[0], shape[1] * x, *shape[2:-1])
        packed = layout.vectorized_dims_strides(logical, f)[1]
        if any(n > 1 and a != b for n, a, b in zip(shape, view.strides, packed, strict=True)):
            raise ValueError(
                f"{name} has strides {view.strides}; {f.name} arrays are packed (C-contiguous, "
                f"strides {packed})"
            )
        dims.append(logical)
    try:
        x_desc = _cached(
            "tensors",
            (dims[0], f.name, dtype),
            lambda: TensorDescriptor(dims[0], dtype=dtype, fmt=f.name),
        )
        w_desc = _cached(
            "filters", (dims[1], f.name, dtype), lambda: FilterDescriptor(dims[1], dtype, f.name)
        )
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"x and w: {exc}") from None
    return x_desc, w_desc


@launch_keywords
def convolution_forward(
    x: Any,
    w: Any,
    conv_desc: ConvolutionDescriptor | None = None,
    *,
    y: Any = None,
    algo: str | int | None = None,
    fmt: str | None = None,
    **kw: Unpack[LaunchKeywords],
) -> Any:
    """``y = alpha * conv(x, w) + beta * y`` (``cudnnConvolutionForward``; deprecated in cuDNN 9).

    ``x`` is ``N, C, [D,] H, W`` in any positive-stride layout; ``w`` is ``K, C/groups, [T,] R, S``
    packed KCRS or KRSC (NHWC); ``conv_desc`` defaults to no padding, unit strides and
    dilations (``mode="cross_correlation"``, what frameworks call convolution). ``algo``: None or
    ``"heuristic"`` (``cudnnGetConvolutionForwardAlgorithm_v7``), ``"find"`` (times the candidates
    with ``cudnnFindConvolutionForwardAlgorithmEx``; the choice is cached per shape), or an
    algorithm name (``"implicit_gemm"``, ``"winograd"``, ...) or ``cudnnConvolutionFwdAlgo_t``
    value. The workspace comes from :func:`_nvbind.memory.workspace`. With tensor-op math
    in ``conv_desc``, layouts and pointers that break cuDNN's Tensor Core guidelines draw a
    :class:`~pycudnn.tensor.TensorCoreWarning`. ``alpha``, ``beta``, ``handle``, ``stream``: see
    :class:`~pycudnn.ops.LaunchKeywords`. Returns ``y``.

    ``fmt="NC/32HW32"`` or ``"NC/4HW4"`` runs cuDNN's vectorized int8 convolution (INT8x32,
    INT8x4, UINT8x4 with ``CUDNN_TENSOR_NCHW_VECT_C``): ``x``, ``w`` and ``y`` are then the packed
    ``[N, C/x, H, W, x]`` int8 (uint8 for NC/4HW4) arrays that :func:`pycudnn.layout.to_format`
    lays out, ``K`` must be a multiple of x as well, and ``y`` is int8 in the same layout. The
    accumulator is int32 (the default ``conv_desc`` has it). INT8x32 runs only with
    ``"implicit_precomp_gemm"``, which ``algo=None`` then picks; other algorithms raise ValueError.
    """
    k = take_keywords("convolution_forward", kw, LAUNCH)
    warn_deprecated_once("pycudnn.ops.convolution_forward (cudnnConvolutionForward)", _GRAPH)
    vec = _vector_format(fmt, algo, conv_desc)
    if vec is not None and vec.vector == 32 and algo is None:
        algo = _INT8X32_ALGO  # the only INT8x32 algorithm; no heuristic query needed
    ctx = _resolve(k["handle"], k["stream"], x, "x")
    xv = ctx.operand(x, "x")
    wv = ctx.operand(w, "w")
    dtype = _same_dtype([("x", xv), ("w", wv)])
    conv_desc = _conv_or_default(conv_desc, xv, "x", dtype, vec)
    if vec is not None:
        x_desc, w_desc = _vector_descs(xv, wv, dtype, vec)
        y_dims = conv_desc._output_dims(x_desc, w_desc)
        if y_dims[1] % int(vec.vector or 1):
            raise ValueError(
                f"w has K = {y_dims[1]} output channels; y in {vec.name} needs a multiple of "
                f"{vec.vector}"
            )
        y_shape = layout.vectorized_dims_strides(y_dims, vec)[0]
    else:
        x_desc = _tensor_desc(xv, "x")
        w_desc = _filter_desc(wv, "w", dtype)
        y_dims = y_shape = conv_desc._output_dims(x_desc, w_desc)
    y, yv = ctx.output(y, "y", y_shape, dtype, like=xv, beta=k["beta"],
                       inputs=[("x", xv), ("w", wv)])  # fmt: skip
    if vec is not None:
        packed = layout.vectorized_dims_strides(y_dims, vec)[1]
        if any(n > 1 and a != b for n, a, b in zip(yv.shape, yv.strides, packed, strict=True)):
            # its descriptor is the packed layout: cuDNN would write past a strided view
            raise ValueError(
                f"y has strides {yv.strides}; {vec.name} arrays are packed (C-contiguous, "
                f"strides {packed})"
            )
        y_desc = _cached(
            "tensors",
            (y_dims, vec.name, dtype),
            lambda: TensorDescriptor(y_dims, dtype=dtype, fmt=vec.name, output=True),
        )
    else:
        y_desc = _tensor_desc(yv, "y")
    descs = (x_desc, w_desc, conv_desc, y_desc)
    run(FORWARD, ctx, algo, descs, views=(xv, wv, yv), alpha=k["alpha"], beta=k["beta"])
    return y
