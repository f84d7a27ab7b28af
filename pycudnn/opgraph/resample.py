"""Pooling and resampling (``OPERATION_RESAMPLE_FWD`` / ``_BWD`` with a ``RESAMPLE`` descriptor)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords

from .common import (
    GraphError,
    _check_bounds,
    _dims_text,
    _enum_member,
    _ints,
)
from .core import GraphCore
from .kinds import _need_dims, _start, require_kind
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Required, Unpack  # typing's are Python 3.11+

__all__ = ["ResampleKeywords", "ResampleOps"]

# The settings _resample_settings takes, in its order.
_SETTINGS = ("mode", "window", "stride", "padding", "post_padding", "padding_mode", "propagate_nan")


class ResampleKeywords(TypedDict, total=False):
    """The keywords of :meth:`ResampleOps.resample` that ``resample_backward`` takes too, with the
    same defaults: its fixed keyword list, for ``**kw: Unpack[ResampleKeywords]``."""

    mode: Any
    window: Required[Any]
    stride: Any
    padding: Any
    post_padding: Any
    padding_mode: Any
    propagate_nan: bool
    name: str | None
    out: Tensor | None


def _resample_enums() -> tuple[Any, Any, Any]:
    from .. import _bindings

    return (
        _bindings.cudnnResampleMode_t,
        _bindings.cudnnPaddingMode_t,
        _bindings.cudnnNanPropagation_t,
    )


class ResampleOps(GraphCore):
    """``resample`` (max/average pooling, nearest/bilinear) and ``resample_backward``."""

    def _resample_settings(  # noqa: PLR0917 - private, shared by forward and backward
        self,
        label: str,
        spatial: tuple[int, ...],
        mode: Any,
        window: Any,
        stride: Any,
        padding: Any,
        post_padding: Any,
        padding_mode: Any,
        propagate_nan: bool,
    ) -> tuple[dict[str, Any], tuple[int, ...]]:
        rmode_t, pad_t, nan_t = _resample_enums()
        n = len(spatial)
        rmode = _enum_member(rmode_t, mode, "CUDNN_RESAMPLE_", "resample mode")
        win = _ints(window, f"{label}: window", n)
        st = _ints(stride if stride is not None else win, f"{label}: stride", n)
        pre = _ints(padding, f"{label}: padding", n)
        post = _ints(post_padding if post_padding is not None else pre, f"{label}: post_padding", n)
        bounds = (("window", win, 1), ("stride", st, 1), ("padding", pre, 0))
        _check_bounds(label, *bounds, ("post_padding", post, 0))
        out_sp = []
        for i, (d, w, s, a, b) in enumerate(zip(spatial, win, st, pre, post, strict=True)):
            span = d + a + b - w
            if span < 0:
                raise GraphError(
                    f"{label}: window[{i}] ({w}) is larger than the padded input ({d + a + b})"
                )
            out_sp.append(span // s + 1)
        if padding_mode is None:
            padding_mode = "neg_inf_pad" if rmode.name == "MAXPOOL" else "zero_pad"
        pmode = _enum_member(pad_t, padding_mode, "CUDNN_", "padding mode")
        if not isinstance(propagate_nan, bool):
            raise TypeError(f"{label}: propagate_nan must be a bool, not {propagate_nan!r}")
        attrs = {
            "compute_dtype": self._compute_dtype,
            "mode": rmode,
            "padding_mode": pmode,
            "nan_propagation": nan_t.PROPAGATE_NAN if propagate_nan else nan_t.NOT_PROPAGATE_NAN,
            "window": win,
            "stride": st,
            "pre_padding": pre,
            "post_padding": post,
        }
        return attrs, tuple(out_sp)

    def resample(
        self,
        x: Tensor,
        *,
        mode: Any = "maxpool",
        window: Any,
        stride: Any = None,
        padding: Any = 0,
        post_padding: Any = None,
        padding_mode: Any = None,
        propagate_nan: bool = True,
        generate_index: bool = False,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Pool ``x`` (``[N, C, (D,) H, W]``) over spatial windows (``OPERATION_RESAMPLE_FWD``).

        ``mode``: ``maxpool``, ``avgpool_include_padding``, ``avgpool_exclude_padding``,
        ``nearest`` or ``bilinear`` (cuDNN 9.28 has engines for the H100 for the pooling modes
        only; see docs/operations.md); ``stride`` defaults to ``window``; output spatial dims are
        ``(in + padding + post_padding - window) // stride + 1``. ``generate_index=True`` (max
        pooling for training) also returns the int8 argmax index tensor that
        :meth:`resample_backward` takes. ``propagate_nan`` (default True, as cudnn-frontend, which
        always sets it, and PyTorch's pooling): a NaN in a window makes its output NaN; False
        (``NOT_PROPAGATE_NAN``) lets max pooling skip it. Returns ``y`` or ``(y, index)``.
        """
        kind = "resample"
        op_name, label = _start(self, kind, name, "OPERATION_RESAMPLE_FWD")
        x = self._own(x, label, "X")
        if x.ndim not in (4, 5):
            raise GraphError(f"{label}: X ('{x.name}') must be [N, C, H, W] or [N, C, D, H, W]")
        attrs, sp = self._resample_settings(
            label,
            x.dims[2:],
            mode,
            window,
            stride,
            padding,
            post_padding,
            padding_mode,
            propagate_nan,
        )
        od = (*x.dims[:2], *sp)
        require_kind("OPERATION_RESAMPLE_FWD", label)
        y = self._output(label, op_name, "y", od, x, out=out, out_dtype=None, inputs=(x,))
        outs = {"y": y}
        if generate_index:
            if attrs["mode"].name != "MAXPOOL":
                raise GraphError(f"{label}: generate_index is for max pooling only")
            outs["index"] = self._output(label, op_name, "index", od, x, out=None, out_dtype="int8")
        self._add_op(kind, op_name, {"x": x}, outs, attrs)
        return y if len(outs) == 1 else (y, outs["index"])

    def resample_backward(
        self,
        dy: Tensor,
        *,
        x: Tensor | None = None,
        y: Tensor | None = None,
        index: Tensor | None = None,
        dx_dims: Any = None,
        **kw: Unpack[ResampleKeywords],
    ) -> Tensor:
        """The gradient of :meth:`resample` (``OPERATION_RESAMPLE_BWD``): ``dx`` from ``dy``.

        Max pooling needs the forward ``index`` (or ``x`` and ``y``); ``dx`` has ``x``'s dims,
        or ``dx_dims`` when no ``x`` is given. The pooling keywords are :meth:`resample`'s, with
        its defaults (``window`` is required).
        """
        kind = "resample_backward"
        k = take_keywords(kind, kw, _RESAMPLE_DEFAULTS)
        op_name, label = _start(self, kind, k["name"], "OPERATION_RESAMPLE_BWD")
        dy = self._own(dy, label, "DY")
        ins = {"dy": dy}
        if x is not None:
            ins["x"] = self._own(x, label, "X")
            dxd = ins["x"].dims
        elif dx_dims is not None:
            dxd = self._check_dims(dx_dims, f"{label}: dx_dims")
        else:
            raise GraphError(f"{label}: give x= or dx_dims= (the dims of the gradient)")
        if y is not None:
            ins["y"] = self._own(y, label, "Y")
            _need_dims(ins["y"], dy.dims, label, "Y")
        if index is not None:
            ins["index"] = self._own(index, label, "INDEX")
            _need_dims(ins["index"], dy.dims, label, "INDEX")
        if len(dxd) != dy.ndim or dxd[:2] != dy.dims[:2]:
            raise GraphError(
                f"{label}: dx dims {_dims_text(dxd)} and DY {_dims_text(dy.dims)} must share rank, "
                "N and C"
            )
        settings = [k[key] for key in _SETTINGS]
        attrs, sp = self._resample_settings(label, dxd[2:], *settings)
        if tuple(sp) != dy.dims[2:]:
            raise GraphError(
                f"{label}: pooling {_dims_text(dxd)} with these settings gives spatial dims "
                f"{_dims_text(sp)}, but DY is {_dims_text(dy.dims)}"
            )
        if (
            attrs["mode"].name == "MAXPOOL"
            and "index" not in ins
            and not ("x" in ins and "y" in ins)
        ):
            raise GraphError(f"{label}: max pooling's gradient needs index=, or x= and y=")
        like = ins.get("x", dy)
        require_kind("OPERATION_RESAMPLE_BWD", label)
        dx = ("dx", dxd, like)
        return self._produce(
            kind, op_name, label, ins, dx, attrs=attrs, out=k["out"], out_dtype=None
        )


# resample spells out the keywords (and defaults) that resample_backward takes as ResampleKeywords.
_RESAMPLE_DEFAULTS = keyword_defaults(ResampleOps.resample, ResampleKeywords.__annotations__)
show_keywords(vars(ResampleOps), ResampleOps.resample, ResampleKeywords)
