"""Convolution operations: forward, backward data, backward filter (2-D and 3-D, grouped)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from _nvbind.dtypes import as_data_type, dtype_name
from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords

from .common import (
    GraphError,
    _check_bounds,
    _dims_text,
    _ints,
    check_scalar_value,
)
from .core import GraphCore
from .kinds import _need_same_dtype
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["ConvolutionKeywords", "ConvolutionOps", "DgradKeywords", "WgradKeywords"]


class ConvolutionKeywords(TypedDict, total=False):
    """The keywords of :meth:`ConvolutionOps.conv_fprop` that the backward convolutions take too,
    with the same defaults: their fixed keyword list, for ``**kw: Unpack[...]``."""

    padding: int | Sequence[int]
    stride: int | Sequence[int]
    dilation: int | Sequence[int]
    post_padding: int | Sequence[int] | None
    groups: int
    mode: str
    compute_dtype: Any
    alpha: float
    beta: float
    name: str | None
    out: Tensor | None
    out_dtype: Any


class DgradKeywords(ConvolutionKeywords, total=False):
    """:class:`ConvolutionKeywords` and ``dx_dims`` (default None), for ``conv_dgrad``."""

    dx_dims: Sequence[int] | None


class WgradKeywords(ConvolutionKeywords, total=False):
    """:class:`ConvolutionKeywords` and ``dw_dims`` (default None), for ``conv_wgrad``."""

    dw_dims: Sequence[int] | None


# The keywords a convolution's settings are made of (see ConvolutionOps._conv_settings).
_SETTINGS = ("padding", "stride", "dilation", "post_padding", "mode")


class _ConvCall(NamedTuple):
    """A backward convolution being added: what :meth:`ConvolutionOps._conv_start` checked."""

    kind: str
    op_name: str
    label: str
    a: Tensor
    b: Tensor
    groups: int
    dims: Sequence[int] | None  # dx_dims or dw_dims as given
    keywords: dict[str, Any]  # every keyword of ConvolutionKeywords, defaults filled in
    inputs: dict[str, Tensor]


def _per_spatial_dim(
    a: Sequence[int], b: Sequence[int], s: dict[str, Any]
) -> Iterator[tuple[int, int, int, int, int, int]]:
    """``(a, b, pre-padding, post-padding, stride, dilation)`` for each spatial dim."""
    keys = ("pre_padding", "post_padding", "stride", "dilation")
    return zip(a, b, *(s[k] for k in keys), strict=True)


class ConvolutionOps(GraphCore):
    """Convolution operations: forward, backward data, backward filter (2-D and 3-D, grouped)."""

    def _conv_settings(
        self,
        label: str,
        spatial: int,
        *,
        padding: Any,
        stride: Any,
        dilation: Any,
        post_padding: Any,
        mode: str,
    ) -> dict[str, Any]:
        pre = _ints(padding, f"{label}: padding", spatial)
        post = (
            pre if post_padding is None else _ints(post_padding, f"{label}: post_padding", spatial)
        )
        strides = _ints(stride, f"{label}: stride", spatial)
        dil = _ints(dilation, f"{label}: dilation", spatial)
        bounds = (("padding", pre, 0), ("post_padding", post, 0), ("stride", strides, 1))
        _check_bounds(label, *bounds, ("dilation", dil, 1))
        if not isinstance(mode, str) or mode.lower() not in ("cross_correlation", "convolution"):
            raise GraphError(
                f"{label}: mode must be 'cross_correlation' (the deep-learning convolution) or "
                f"'convolution' (flipped filter), not {mode!r}"
            )
        return {
            "pre_padding": pre,
            "post_padding": post,
            "stride": strides,
            "dilation": dil,
            "mode": mode.lower(),
        }

    @staticmethod
    def _conv_out(in_sp: Sequence[int], k_sp: Sequence[int], s: dict[str, Any]) -> tuple[int, ...]:
        return tuple(
            (i + a + b - d * (k - 1) - 1) // st + 1
            for i, k, a, b, st, d in _per_spatial_dim(in_sp, k_sp, s)
        )

    def _check_conv_rank(self, label: str, **tensors: Tensor) -> int:
        ranks = {t.ndim for t in tensors.values()}
        first = next(iter(tensors))
        for role, t in tensors.items():
            if t.ndim != tensors[first].ndim:
                raise GraphError(
                    f"{label}: {role.upper()} ('{t.name}') has rank {t.ndim} but "
                    f"{first.upper()} ('{tensors[first].name}') has rank {tensors[first].ndim}"
                )
            if not 3 <= t.ndim <= 5:
                raise GraphError(
                    f"{label}: {role.upper()} ('{t.name}') has rank {t.ndim}; convolutions take "
                    "rank 3 to 5 tensors (N, C and 1 to 3 spatial dims)"
                )
        return ranks.pop() - 2

    def _conv_operands(
        self, label: str, a: tuple[str, Any], b: tuple[str, Any], groups: Any
    ) -> tuple[Tensor, Tensor, int, int]:
        """Check a convolution's two operands (given as ``(role, tensor)``) and its ``groups``.

        Returns the two tensors, the number of spatial dims and the group count.
        """
        (ra, ta), (rb, tb) = a, b
        ta, tb = self._own(ta, label, ra), self._own(tb, label, rb)
        spatial = self._check_conv_rank(label, **{ra.lower(): ta, rb.lower(): tb})
        self._check_conv_dtypes(label, (ra, ta), (rb, tb))
        return ta, tb, spatial, self._groups(groups, label)

    def _conv_attrs(
        self, label: str, s: dict[str, Any], compute_dtype: Any, alpha: Any, beta: Any
    ) -> dict[str, Any]:
        """The attributes every convolution records: its settings, compute type and scales."""
        scales = {n: self._real(v, f"{label}: {n}") for n, v in (("alpha", alpha), ("beta", beta))}
        for n, v in scales.items():  # cuDNN takes them as floats: 1e39 would be inf
            check_scalar_value(v, as_data_type("float32"), f"{label}: {n}")
        return dict(s, compute_dtype=self._compute(compute_dtype, label), **scales)

    def _check_conv_dtypes(self, label: str, a: tuple[str, Tensor], b: tuple[str, Tensor]) -> None:
        for role, t in (a, b):
            if t.element_type is not None and t.element_type.kind == "b":
                raise GraphError(
                    f"{label}: {role} ('{t.name}') is boolean; convolutions need numbers"
                )
        _need_same_dtype(label, a, b, "convolution operands must have the same data type")

    def conv_fprop(
        self,
        x: Tensor,
        w: Tensor,
        *,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        post_padding: int | Sequence[int] | None = None,
        groups: int = 1,
        mode: str = "cross_correlation",
        compute_dtype: Any = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Convolution forward (``OPERATION_CONVOLUTION_FORWARD``): ``Y = alpha*conv(X, W) + beta*Y``.

        ``X`` is ``[N, C, spatial...]``, ``W`` is ``[K, C/groups, filter...]``, ``Y`` is
        ``[N, K, out...]`` with ``out = (in + pre + post - dilation*(filter-1) - 1) // stride + 1``.
        ``padding`` is the pre-padding (and the post-padding unless ``post_padding`` is given).
        """
        kind = "conv_fprop"
        op_name, label = self._begin_op(kind, name)
        x, w, spatial, g = self._conv_operands(label, ("X", x), ("W", w), groups)
        if x.dims[1] != w.dims[1] * g:
            expect = w.dims[1] * g
            raise GraphError(
                f"{label}: X has {x.dims[1]} channels but W expects {expect} "
                f"(W dims {_dims_text(w.dims)}" + (f", {g} groups)" if g > 1 else ")")
            )
        if w.dims[0] % g:
            raise GraphError(
                f"{label}: W has {w.dims[0]} output channels, not a multiple of groups={g}"
            )
        vectorized = self._check_vectorized(label, x, w, out_dtype)
        if vectorized and compute_dtype is None:
            compute_dtype = "int32"  # the only accumulator int8 vector engines have
        s = self._conv_settings(
            label,
            spatial,
            padding=padding,
            stride=stride,
            dilation=dilation,
            post_padding=post_padding,
            mode=mode,
        )
        out_sp = self._conv_out(x.dims[2:], w.dims[2:], s)
        for i, v in enumerate(out_sp):
            if v < 1:
                raise GraphError(
                    f"{label}: spatial dim {i} of the output would be {v} (X {_dims_text(x.dims)}, "
                    f"W {_dims_text(w.dims)}, padding {list(s['pre_padding'])}/"
                    f"{list(s['post_padding'])}, stride {list(s['stride'])}, dilation "
                    f"{list(s['dilation'])}): the filter does not fit"
                )
        y_dims = (x.dims[0], w.dims[0], *out_sp)
        attrs = self._conv_attrs(label, s, compute_dtype, alpha, beta)
        if vectorized and attrs["compute_dtype"] != "int32":
            raise GraphError(
                f"{label}: compute_dtype is {dtype_name(attrs['compute_dtype'])}, but a vectorized "
                "int8 convolution accumulates in int32 (cuDNN 9.28 has no engine for another "
                "compute type); leave compute_dtype unset or pass 'int32'"
            )
        y = self._output(
            label,
            op_name,
            "y",
            y_dims,
            x,
            out=out,
            # Y of a vectorized convolution has X's element type (int8), never the io default.
            out_dtype=x.element_type if vectorized and out_dtype is None else out_dtype,
            inputs=(x, w),
            vectorized=vectorized,
        )
        self._add_op(kind, op_name, {"x": x, "w": w}, {"y": y}, attrs)
        return y

    @staticmethod
    def _check_vectorized(label: str, x: Tensor, w: Tensor, out_dtype: Any) -> bool:
        """Whether a forward convolution is vectorized (NC/xHWx), after checking that it can be.

        cuDNN's vectorized convolutions take X and W vectorized alike and write Y in the same
        layout and type: K is Y's C, so it must be a multiple of the vector width too.
        """
        if not (x.is_vectorized or w.is_vectorized):
            return False
        if x.vector_count != w.vector_count:
            raise GraphError(
                f"{label}: X ('{x.name}') is {x.format} but W ('{w.name}') is {w.format}; a "
                "vectorized convolution takes both in the same NC/xHWx layout"
            )
        k, vec = w.dims[0], w.vector_count
        if k % vec:
            raise GraphError(
                f"{label}: W has K = {k} output channels, not a multiple of {vec}: Y, {x.format} "
                "like X, splits its K channels into vectors of that width"
            )
        dx = x.element_type
        if out_dtype is not None and dx is not None and as_data_type(out_dtype) != dx:
            raise GraphError(
                f"{label}: out_dtype is {dtype_name(as_data_type(out_dtype))}, but a vectorized "
                f"convolution writes Y in X's layout and type ({dtype_name(dx)} {x.format})"
            )
        return True

    @staticmethod
    def _groups(groups: Any, label: str) -> int:
        if isinstance(groups, bool) or not isinstance(groups, int):
            raise TypeError(f"{label}: groups must be an int, not {groups!r}")
        if groups < 1:
            raise GraphError(f"{label}: groups is {groups}; it must be positive")
        return groups

    def conv_dgrad(self, dy: Tensor, w: Tensor, **kw: Unpack[DgradKeywords]) -> Tensor:
        """Convolution backward data (``OPERATION_CONVOLUTION_BACKWARD_DATA``): ``dX`` from ``dY``, ``W``.

        ``dx_dims`` defaults to the smallest input that the forward formula maps to ``dY``'s
        spatial dims; give it when ``stride > 1`` and the forward input was larger. The other
        keywords are :meth:`conv_fprop`'s, with its defaults.
        """
        c = self._conv_start("conv_dgrad", ("DY", dy), ("W", w), kw)
        dy, w, g, label = c.a, c.b, c.groups, c.label
        if dy.dims[1] != w.dims[0]:
            raise GraphError(
                f"{label}: DY has {dy.dims[1]} channels but W has {w.dims[0]} output channels "
                f"(W dims {_dims_text(w.dims)})"
            )
        s = self._conv_keyword_settings(c)
        if c.dims is None:
            sp = tuple(
                (o - 1) * st - a - b + d * (k - 1) + 1
                for o, k, a, b, st, d in _per_spatial_dim(dy.dims[2:], w.dims[2:], s)
            )
            dxd = (dy.dims[0], w.dims[1] * g, *sp)
            for i, v in enumerate(sp):
                if v < 1:
                    raise GraphError(f"{label}: spatial dim {i} of DX would be {v}; check padding")
        else:
            dxd = self._check_dims(c.dims, f"{label}: dx_dims")
            if len(dxd) != dy.ndim:
                raise GraphError(f"{label}: dx_dims has rank {len(dxd)} but DY has rank {dy.ndim}")
            if dxd[0] != dy.dims[0] or dxd[1] != w.dims[1] * g:
                raise GraphError(
                    f"{label}: DX dims {_dims_text(dxd)} must be [N={dy.dims[0]}, "
                    f"C={w.dims[1] * g}, ...] for DY {_dims_text(dy.dims)} and W {_dims_text(w.dims)}"
                )
        source = f"DX {_dims_text(dxd)} with W {_dims_text(w.dims)}"
        return self._conv_finish(c, s, (dxd, w.dims, source), ("dx", dxd, dy), dy)

    def conv_wgrad(self, x: Tensor, dy: Tensor, **kw: Unpack[WgradKeywords]) -> Tensor:
        """Convolution backward filter (``OPERATION_CONVOLUTION_BACKWARD_FILTER``): ``dW`` from ``X``, ``dY``.

        ``dw_dims`` (``[K, C/groups, filter...]``) defaults to the filter size that maps ``X`` onto
        ``dY`` exactly; give it when ``stride > 1``. The other keywords are :meth:`conv_fprop`'s,
        with its defaults.
        """
        c = self._conv_start("conv_wgrad", ("X", x), ("DY", dy), kw)
        x, dy, g, label = c.a, c.b, c.groups, c.label
        if x.dims[0] != dy.dims[0]:
            raise GraphError(f"{label}: X has batch {x.dims[0]} but DY has batch {dy.dims[0]}")
        if x.dims[1] % g:
            raise GraphError(f"{label}: X has {x.dims[1]} channels, not a multiple of groups={g}")
        s = self._conv_keyword_settings(c)
        if c.dims is None:
            ks = []
            for i, (xi, oi, a, b, st, d) in enumerate(_per_spatial_dim(x.dims[2:], dy.dims[2:], s)):
                span = xi + a + b - 1 - (oi - 1) * st
                if span < 0 or span % d:
                    raise GraphError(
                        f"{label}: no filter size maps X {_dims_text(x.dims)} onto DY "
                        f"{_dims_text(dy.dims)} in spatial dim {i}; pass dw_dims"
                    )
                ks.append(span // d + 1)
            dwd = (dy.dims[1], x.dims[1] // g, *ks)
        else:
            dwd = self._check_dims(c.dims, f"{label}: dw_dims")
            if len(dwd) != x.ndim:
                raise GraphError(f"{label}: dw_dims has rank {len(dwd)} but X has rank {x.ndim}")
            if dwd[0] != dy.dims[1] or dwd[1] * g != x.dims[1]:
                raise GraphError(
                    f"{label}: DW dims {_dims_text(dwd)} must be [K={dy.dims[1]}, "
                    f"C={x.dims[1] // g}, ...] for X {_dims_text(x.dims)} and DY {_dims_text(dy.dims)}"
                )
        source = f"X {_dims_text(x.dims)} with a {_dims_text(dwd)} filter"
        return self._conv_finish(c, s, (x.dims, dwd, source), ("dw", dwd, x), dy)

    def _conv_start(
        self, kind: str, a: tuple[str, Any], b: tuple[str, Any], kw: Mapping[str, Any]
    ) -> _ConvCall:
        """Begin a backward convolution: its keywords (``TypeError`` naming an unknown one; the
        others take :meth:`conv_fprop`'s defaults), name, operands and groups."""
        dims_key = "dx_dims" if kind == "conv_dgrad" else "dw_dims"
        k = take_keywords(kind, kw, _CONV_DEFAULTS, (dims_key,))
        op_name, label = self._begin_op(kind, k["name"])
        ta, tb, _, g = self._conv_operands(label, a, b, k["groups"])
        inputs = {a[0].lower(): ta, b[0].lower(): tb}
        return _ConvCall(kind, op_name, label, ta, tb, g, kw.get(dims_key), k, inputs)

    def _conv_keyword_settings(self, c: _ConvCall) -> dict[str, Any]:
        settings = {key: c.keywords[key] for key in _SETTINGS}
        return self._conv_settings(c.label, c.a.ndim - 2, **settings)

    def _conv_finish(
        self,
        c: _ConvCall,
        s: dict[str, Any],
        forward: tuple[tuple[int, ...], tuple[int, ...], str],
        output: tuple[str, tuple[int, ...], Tensor],
        dy: Tensor,
    ) -> Tensor:
        """Check that the forward convolution of ``forward`` (input dims, filter dims, how to
        name them) gives ``dy``'s spatial dims, then add the backward convolution."""
        fwd = self._conv_out(forward[0][2:], forward[1][2:], s)
        if fwd != dy.dims[2:]:
            raise GraphError(
                f"{c.label}: a forward convolution of {forward[2]} gives spatial dims "
                f"{_dims_text(fwd)}, but DY has {_dims_text(dy.dims[2:])}"
            )
        k = c.keywords
        attrs = self._conv_attrs(c.label, s, k["compute_dtype"], k["alpha"], k["beta"])
        out = {"out": k["out"], "out_dtype": k["out_dtype"]}
        return self._produce(c.kind, c.op_name, c.label, c.inputs, output, attrs=attrs, **out)


# conv_fprop spells out the convolution keywords and their defaults; the backward convolutions
# take the same (ConvolutionKeywords) with these defaults, read from that one signature.
_CONV_DEFAULTS = keyword_defaults(ConvolutionOps.conv_fprop)
show_keywords(vars(ConvolutionOps), ConvolutionOps.conv_fprop, DgradKeywords, WgradKeywords)
