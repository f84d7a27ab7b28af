"""Block-scaled quantization (MX formats: fp8/fp4 data with one scale per block of elements)
and mixture-of-experts grouped matrix multiplication."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from _nvbind.keywords import show_keywords, take_keywords
from _nvbind.strides import packed_strides_in_order

from .common import GraphError, _dims_text, _enum_member
from .core import GraphCore
from .kinds import _axis_arg, _int_arg, _need_dims, _need_dtype, _start, require_kind
from .matmul import OUTPUT_DEFAULTS, MatmulOps, OutputKeywords
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["QuantizeOps"]


class QuantizeOps(GraphCore):
    """``block_scale_quantize``, ``block_scale_dequantize``, ``moe_grouped_matmul`` and
    ``moe_grouped_matmul_backward``."""

    def block_scale_quantize(
        self,
        x: Tensor,
        *,
        block_size: int,
        out_dtype: Any,
        scale_dtype: Any = "float8_e8m0fnu",
        axis: int = -1,
        transpose: bool = False,
        compute_dtype: Any = None,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Quantize ``x`` to ``out_dtype`` with one scale per ``block_size`` elements along
        ``axis`` (``OPERATION_BLOCK_SCALE_QUANTIZE``, cuDNN 9.7+). Returns ``(y, scale)``;
        ``scale`` has ``x``'s dims with ``axis`` divided by ``block_size``.

        ``axis`` (the frontend's ``set_axis``): the last dim by default; ``-2`` blocks a
        matmul's ``B [.., K, N]`` along K, as MX formats scale it. cuDNN reads the axis from the
        scale's dims. ``transpose=True`` (``set_transpose``) lays Y and the scale out with
        ``axis`` innermost, the other dims in ``x``'s memory order after it, as the frontend
        does; otherwise Y has ``x``'s strides and the scale ``x``'s memory order."""
        kind = "block_scale_quantize"
        op_name, label = _start(self, kind, name, "OPERATION_BLOCK_SCALE_QUANTIZE")
        x = self._own(x, label, "X")
        _need_dtype(x, "f", label, "X", "quantization takes floating-point input")
        if x.ndim == 3:
            # cuDNN 9.28 takes rank-3 input only with a scale tensor in F8_128x4 reordering,
            # which graph tensors do not express ("xDesc.getNbDims() == 3 && !(reordering)")
            raise GraphError(
                f"{label}: X ('{x.name}') has rank 3; cuDNN quantizes rank-3 tensors only into "
                "a scale reordered F8_128x4, which graph tensors cannot describe: add a leading 1"
            )
        bs = _int_arg(block_size, f"{label}: block_size", minimum=1)
        ax = _axis_arg(axis, x.ndim, f"{label}: axis")
        if not isinstance(transpose, bool):
            raise TypeError(f"{label}: transpose must be a bool, not {transpose!r}")
        sd = _blocked_dims(x, {ax: bs}, label)
        require_kind("OPERATION_BLOCK_SCALE_QUANTIZE", label)
        y_st = _axis_innermost(x.dims, x, ax) if transpose else x.strides
        y = self._output(
            label, op_name, "y", x.dims, x, out=out, out_dtype=out_dtype, strides=y_st, inputs=(x,)
        )
        s_st = _axis_innermost(sd, x, ax) if transpose else None
        scale = self._output(
            label, op_name, "scale", sd, x, out=None, out_dtype=scale_dtype, strides=s_st
        )
        attrs = {"compute_dtype": self._compute(compute_dtype, label), "block_size": bs}
        self._add_op(kind, op_name, {"x": x}, {"y": y, "scale": scale}, attrs)
        return y, scale

    def block_scale_dequantize(
        self,
        x: Tensor,
        scale: Tensor,
        *,
        block_size: int | Sequence[int],
        neg_scale: bool | None = None,
        **kw: Unpack[OutputKeywords],
    ) -> Tensor:
        """Multiply each block of ``x`` by its ``scale`` (``OPERATION_BLOCK_SCALE_DEQUANTIZE``,
        cuDNN 9.7+); ``neg_scale`` (9.13+) negates it.

        ``block_size``: an int blocks the last dim; a sequence gives the block over the last
        dims, as the frontend's ``set_block_size({1, 32})``: ``(32, 1)`` blocks a matmul's
        ``B [.., K, N]`` along K (an MX matmul's B operand). ``scale`` has ``x``'s dims with each
        of those divided by its block."""
        kind = "block_scale_dequantize"
        k = take_keywords(kind, kw, OUTPUT_DEFAULTS)
        op_name, label = _start(self, kind, k["name"], "OPERATION_BLOCK_SCALE_DEQUANTIZE")
        x, s = self._own(x, label, "X"), self._own(scale, label, "SCALE")
        blocks = _block_sizes(block_size, x.ndim, f"{label}: block_size")
        first = x.ndim - len(blocks)  # the blocks cover the last dims
        sd = _blocked_dims(x, {first + i: b for i, b in enumerate(blocks)}, label)
        _need_dims(s, sd, label, "SCALE")
        attrs: dict[str, Any] = {
            "compute_dtype": self._compute(k["compute_dtype"], label),
            # one int as before for the last dim (plans and JSON of earlier versions alike)
            "block_size": blocks[0] if len(blocks) == 1 else blocks,
        }
        if neg_scale is not None:
            if not isinstance(neg_scale, bool):
                raise TypeError(f"{label}: neg_scale must be a bool, not {neg_scale!r}")
            require_kind(
                "OPERATION_BLOCK_SCALE_DEQUANTIZE", f"{label}: neg_scale", since=(9, 13, 0)
            )
            attrs["neg_scale"] = neg_scale
        require_kind("OPERATION_BLOCK_SCALE_DEQUANTIZE", label)
        ins, y, st = {"x": x, "scale": s}, ("y", x.dims, x), x.strides
        return self._produce(
            kind,
            op_name,
            label,
            ins,
            y,
            attrs=attrs,
            out=k["out"],
            out_dtype=k["out_dtype"],
            strides=st,
        )

    def moe_grouped_matmul(
        self,
        token: Tensor,
        weight: Tensor,
        first_token_offset: Tensor,
        *,
        mode: Any = "none",
        token_index: Tensor | None = None,
        token_ks: Tensor | None = None,
        top_k: int | None = None,
        **kw: Unpack[OutputKeywords],
    ) -> Tensor:
        """Each expert's tokens times that expert's weight (``OPERATION_MOE_GROUPED_MATMUL``,
        cuDNN 9.15+).

        ``token`` ``[1, T, K]``, ``weight`` ``[E, K, N]``, ``first_token_offset`` ``[E, 1, 1]``
        int32 (where each expert's tokens start). ``mode``: ``none``, ``gather`` (rows chosen by
        ``token_index`` ``[1, T', 1]``) or ``scatter``; ``top_k`` and ``token_ks`` route each
        token to k experts. The result is ``[1, T (or T'), N]``.
        """
        from .. import _bindings

        kind = "moe_grouped_matmul"
        k = take_keywords(kind, kw, OUTPUT_DEFAULTS)
        op_name, label = _start(self, kind, k["name"], "OPERATION_MOE_GROUPED_MATMUL")
        t, w = self._own(token, label, "TOKEN"), self._own(weight, label, "WEIGHT")
        f = self._own(first_token_offset, label, "FIRST_TOKEN_OFFSET")
        mmode = _enum_member(
            _bindings.cudnnMoeGroupedMatmulMode_t,
            mode,
            "CUDNN_MOE_GROUPED_MATMUL_MODE_",
            "MoE mode",
        )
        if t.ndim != 3 or w.ndim != 3 or t.dims[0] != 1:
            raise GraphError(f"{label}: TOKEN must be [1, T, K] and WEIGHT [E, K, N]")
        if t.dims[2] != w.dims[1]:
            raise GraphError(
                f"{label}: TOKEN {_dims_text(t.dims)} and WEIGHT {_dims_text(w.dims)}: K differs"
            )
        _need_dims(f, (w.dims[0], 1, 1), label, "FIRST_TOKEN_OFFSET")
        _need_dtype(f, "i", label, "FIRST_TOKEN_OFFSET", "offsets are integers")
        ins = {"token": t, "weight": w, "first_token_offset": f}
        rows = t.dims[1]
        if mmode.name == "GATHER" and token_index is None:
            raise GraphError(f"{label}: gather mode needs token_index=")
        if token_index is not None:
            ins["token_index"] = self._own(token_index, label, "TOKEN_INDEX")
            _need_dtype(ins["token_index"], "i", label, "TOKEN_INDEX", "indices are integers")
            if mmode.name == "GATHER":
                rows = ins["token_index"].dims[1]
        attrs: dict[str, Any] = {
            "compute_dtype": self._compute(k["compute_dtype"], label),
            "mode": mmode,
        }
        if token_ks is not None:
            ins["token_ks"] = self._own(token_ks, label, "TOKEN_KS")
        if top_k is not None:
            attrs["top_k"] = _int_arg(top_k, f"{label}: top_k", minimum=1)
        od = (1, rows, w.dims[2])
        require_kind("OPERATION_MOE_GROUPED_MATMUL", label)
        y = ("output", od, t)
        return self._produce(
            kind, op_name, label, ins, y, attrs=attrs, out=k["out"], out_dtype=k["out_dtype"]
        )

    def moe_grouped_matmul_backward(
        self,
        token: Tensor,
        doutput: Tensor,
        first_token_offset: Tensor,
        **kw: Unpack[OutputKeywords],
    ) -> Tensor:
        """The weight gradient of :meth:`moe_grouped_matmul` (``OPERATION_MOE_GROUPED_MATMUL_BWD``,
        cuDNN 9.22+): ``dweight`` ``[E, K, N]`` from ``token`` ``[1, T, K]`` and ``doutput``
        ``[1, T, N]``; ``E`` is ``first_token_offset``'s first dim."""
        kind = "moe_grouped_matmul_backward"
        k = take_keywords(kind, kw, OUTPUT_DEFAULTS)
        op_name, label = _start(self, kind, k["name"], "OPERATION_MOE_GROUPED_MATMUL_BWD")
        t, dy = self._own(token, label, "TOKEN"), self._own(doutput, label, "DOUTPUT")
        f = self._own(first_token_offset, label, "FIRST_TOKEN_OFFSET")
        if t.ndim != 3 or dy.ndim != 3 or t.dims[:2] != dy.dims[:2] or t.dims[0] != 1:
            raise GraphError(
                f"{label}: TOKEN {_dims_text(t.dims)} must be [1, T, K] and DOUTPUT "
                f"{_dims_text(dy.dims)} [1, T, N]"
            )
        e = f.dims[0]
        _need_dims(f, (e, 1, 1), label, "FIRST_TOKEN_OFFSET")
        _need_dtype(f, "i", label, "FIRST_TOKEN_OFFSET", "offsets are integers")
        od = (e, t.dims[2], dy.dims[2])
        ins = {"token": t, "doutput": dy, "first_token_offset": f}
        require_kind("OPERATION_MOE_GROUPED_MATMUL_BWD", label)
        attrs = {"compute_dtype": self._compute(k["compute_dtype"], label)}
        dw = ("dweight", od, t)
        return self._produce(
            kind, op_name, label, ins, dw, attrs=attrs, out=k["out"], out_dtype=k["out_dtype"]
        )


# matmul spells out the keywords (and defaults) that the one-output kinds here take as
# OutputKeywords.
show_keywords(vars(QuantizeOps), MatmulOps.matmul, OutputKeywords)


def _block_sizes(value: Any, ndim: int, what: str) -> tuple[int, ...]:
    """``block_size`` of a dequantize: an int (the last dim) or one positive int per last dim."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (numbers.Integral, Sequence)):
        raise TypeError(f"{what} must be an int or a sequence of ints, not {value!r}")
    given = (value,) if isinstance(value, numbers.Integral) else tuple(value)
    if not 1 <= len(given) <= ndim:
        raise GraphError(f"{what} {list(given)} must give 1 to {ndim} block extents")
    return tuple(_int_arg(b, f"{what}[{i}]", minimum=1) for i, b in enumerate(given))


def _blocked_dims(x: Tensor, blocks: dict[int, int], label: str) -> tuple[int, ...]:
    """``x``'s dims with each dim of ``blocks`` (dim -> block extent) divided by its block."""
    for dim, b in blocks.items():
        if x.dims[dim] % b:
            raise GraphError(
                f"{label}: X's dim {dim} ({x.dims[dim]}) is not a multiple of block_size {b}"
            )
    return tuple(d // blocks.get(i, 1) for i, d in enumerate(x.dims))


def _axis_innermost(dims: tuple[int, ...], x: Tensor, axis: int) -> tuple[int, ...]:
    """Packed strides for ``dims`` with ``axis`` innermost, then the other dims in ``x``'s
    memory order (innermost first; a size-1 dim before another of the same stride), as
    cudnn-frontend lays out a transposed block-scale quantization's Y and scale."""
    inner_first = sorted(range(x.ndim), key=lambda i: (x.strides[i], x.dims[i] != 1))
    k = inner_first.index(axis)
    return packed_strides_in_order(dims, (inner_first[k:] + inner_first[:k])[::-1])
