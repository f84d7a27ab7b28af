"""Building blocks of attention as separate operations: softmax with its statistics, rotary
position embedding (RoPE), loading a paged KV cache, and the band-matrix kinds (expand, contract,
diagonal band mask) used for sliding-window and speculative-decoding masks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords
from _nvbind.strides import c_strides

from .common import GraphError, _dims_text
from .core import GraphCore
from .kinds import _int_arg, _need_dims, _need_dtype, _start, require_kind
from .pointwise import pointwise_mode
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Required, Unpack  # typing's are Python 3.11+

__all__ = ["BandKeywords", "RopeKeywords", "SequenceOps"]


class RopeKeywords(TypedDict, total=False):
    """The keywords of :meth:`SequenceOps.rope` that ``rope_backward`` takes too, with the same
    defaults (all None): its fixed keyword list, for ``**kw: Unpack[RopeKeywords]``."""

    rope_dim: int | None
    output_scale: float | None
    name: str | None
    out: Tensor | None


class BandKeywords(TypedDict, total=False):
    """The keywords of :meth:`SequenceOps.expand_band_matrix` that ``contract_band_matrix`` takes
    too, with the same defaults: its fixed keyword list, for ``**kw: Unpack[BandKeywords]``."""

    lower_bandwidth: Required[int]
    upper_bandwidth: Required[int]
    axis: int
    pad_value: float | None
    name: str | None
    out: Tensor | None
    out_dtype: Any


class SequenceOps(GraphCore):
    """``softmax``, ``rope``/``rope_backward``, ``paged_cache_load`` and the band-matrix kinds."""

    def softmax(
        self,
        x: Tensor,
        *,
        sink: Tensor | None = None,
        stats: bool = False,
        max_and_sum_exp: bool = False,
        stats_log2: bool | None = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor | tuple[Tensor, ...]:
        """Softmax over the last axis (``OPERATION_SOFTMAX``, cuDNN 9.20+).

        ``sink``: an attention-sink logit per row group (``[1, H, 1, 1]`` for ``[B, H, S, S]``
        inputs). ``stats=True`` also returns the log-sum-exp per row (``[..., 1]``, float32);
        ``stats_log2`` (cuDNN 9.27+) writes it in base 2. ``max_and_sum_exp=True`` also returns
        the row maximum and sum of exponentials. Returns ``y``, or ``(y, stats)``,
        ``(y, max, sum_exp)`` or ``(y, stats, max, sum_exp)``.
        """
        kind = "softmax"
        op_name, label = _start(self, kind, name, "OPERATION_SOFTMAX")
        x = self._own(x, label, "X")
        _need_dtype(x, "f", label, "X", "softmax takes floating-point input")
        if x.ndim != 4:
            # cuDNN 9.28 refuses other ranks at finalize ("xPort.tensor.getNbDims() != 4")
            raise GraphError(
                f"{label}: X ('{x.name}') must have rank 4 ([B, H, S_q, S_kv]), not {x.ndim}"
            )
        for flag, what in ((stats, "stats"), (max_and_sum_exp, "max_and_sum_exp")):
            if not isinstance(flag, bool):
                raise TypeError(f"{label}: {what} must be a bool, not {flag!r}")
        ins = {"x": x}
        if sink is not None:
            ins["sink"] = self._own(sink, label, "SINK")
        attrs: dict[str, Any] = {"compute_dtype": self._compute_dtype}
        if stats_log2 is not None:
            if not isinstance(stats_log2, bool):
                raise TypeError(f"{label}: stats_log2 must be a bool, not {stats_log2!r}")
            if not stats:
                raise GraphError(f"{label}: stats_log2 is about the stats output; set stats=True")
            require_kind("OPERATION_SOFTMAX", f"{label}: stats_log2", since=(9, 27, 0))
            attrs["stats_log2"] = stats_log2
        require_kind("OPERATION_SOFTMAX", label)
        y = self._output(label, op_name, "y", x.dims, x, out=out, out_dtype=out_dtype, inputs=(x,))
        row = (*x.dims[:-1], 1)
        outs = {"y": y}
        extra = ["stats"] if stats else []
        extra += ["max", "sum_exp"] if max_and_sum_exp else []
        for role in extra:
            outs[role] = self._output(
                label, op_name, role, row, x, out=None, out_dtype="float32", strides=c_strides(row)
            )
        self._add_op(kind, op_name, ins, outs, attrs)
        return y if len(outs) == 1 else tuple(outs.values())

    def _rope(  # noqa: PLR0917 - private, shared by forward and backward
        self,
        kind: str,
        x: Tensor,
        freqs: Tensor,
        rope_dim: int | None,
        output_scale: float | None,
        name: str | None,
        out: Tensor | None,
    ) -> Tensor:
        desc = "OPERATION_ROPE_FWD" if kind == "rope" else "OPERATION_ROPE_BWD"
        since = (9, 24, 0) if kind == "rope" else (9, 25, 0)
        op_name, label = _start(self, kind, name, desc)
        xin, xout = ("x", "y") if kind == "rope" else ("dy", "dx")
        x = self._own(x, label, xin.upper())
        f = self._own(freqs, label, "FREQS")
        _need_dtype(x, "f", label, xin.upper(), "RoPE rotates floating-point data")
        d = x.dims[-1]
        attrs: dict[str, Any] = {"compute_dtype": self._compute_dtype}
        if rope_dim is not None:
            rd = _int_arg(rope_dim, f"{label}: rope_dim", minimum=2)
            if rd > d or rd % 2:
                raise GraphError(
                    f"{label}: rope_dim {rd} must be even and at most the head dim ({d})"
                )
            attrs["rope_dim"] = rd
        else:  # cuDNN's default, set: a plan for a partial rotation must not load for this one
            attrs["rope_dim"] = d
        if output_scale is not None:
            attrs["output_scale"] = self._real(output_scale, f"{label}: output_scale")
        if x.ndim != 4 or f.ndim != 4:
            raise GraphError(
                f"{label}: {xin.upper()} ('{x.name}') must be [B, H, S, D] and FREQS ('{f.name}') "
                f"[S, 1, 1, D] (rank 4), got ranks {x.ndim} and {f.ndim}"
            )
        _need_dtype(f, "f", label, "FREQS", "frequencies are angles (floating point)")
        require_kind(desc, label, since=since)
        # the rotated tensor keeps the input's type (attention after it takes fp16/bf16)
        ins, y = {xin: x, "freqs": f}, (xout, x.dims, x)
        return self._produce(
            kind, op_name, label, ins, y, attrs=attrs, out=out, out_dtype=x.element_type
        )

    def rope(
        self,
        x: Tensor,
        freqs: Tensor,
        *,
        rope_dim: int | None = None,
        output_scale: float | None = None,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """Rotary position embedding of ``x`` (``[B, H, S, D]``) by the raw angles ``freqs``
        (``[S, 1, 1, D]``) (``OPERATION_ROPE_FWD``, cuDNN 9.24+).

        Non-interleaved rotation of the trailing ``rope_dim`` entries of each head (default all
        ``D``); the leading ``D - rope_dim`` pass through. ``output_scale`` multiplies the whole
        output. cuDNN runs it fused with attention (``RoPE(Q) + RoPE(K) + SDPA``): alone it has no
        engine (docs/operations.md).
        """
        return self._rope("rope", x, freqs, rope_dim, output_scale, name, out)

    def rope_backward(self, dy: Tensor, freqs: Tensor, **kw: Unpack[RopeKeywords]) -> Tensor:
        """The gradient of :meth:`rope` (``OPERATION_ROPE_BWD``, cuDNN 9.25+): ``dx`` from ``dy``
        (rotation by the negated angles), fused after attention's backward like :meth:`rope`;
        the keywords are :meth:`rope`'s, with its defaults."""
        k = take_keywords("rope_backward", kw, _ROPE_DEFAULTS)
        settings = (k["rope_dim"], k["output_scale"], k["name"], k["out"])
        return self._rope("rope_backward", dy, freqs, *settings)

    def paged_cache_load(
        self,
        container: Tensor,
        page_table: Tensor,
        seq_len: Tensor,
        *,
        max_seq_len: int,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """Gather a KV cache kept in pages (``OPERATION_PAGED_CACHE_LOAD``, cuDNN 9.4+).

        ``container`` ``[num_blocks, H, block_size, D]``, ``page_table`` ``[B, 1, pages, 1]``
        int32, ``seq_len`` ``[B, 1, 1, 1]`` int32; the result is ``[B, H, max_seq_len, D]``.
        """
        kind = "paged_cache_load"
        op_name, label = _start(self, kind, name, "OPERATION_PAGED_CACHE_LOAD")
        c = self._own(container, label, "CONTAINER")
        pt = self._own(page_table, label, "PAGE_TABLE")
        sl = self._own(seq_len, label, "SEQUENCE")
        for t, role in ((c, "CONTAINER"), (pt, "PAGE_TABLE"), (sl, "SEQUENCE")):
            if t.ndim != 4:
                raise GraphError(f"{label}: {role} ('{t.name}') must have rank 4, not {t.ndim}")
        for t, role in ((pt, "PAGE_TABLE"), (sl, "SEQUENCE")):
            _need_dtype(t, "i", label, role, "page tables and sequence lengths are integers")
        b = pt.dims[0]
        _need_dims(sl, (b, 1, 1, 1), label, "SEQUENCE")
        if pt.dims[1] != 1 or pt.dims[3] != 1:
            raise GraphError(
                f"{label}: PAGE_TABLE ('{pt.name}') must be [B, 1, pages, 1], got "
                f"{_dims_text(pt.dims)}"
            )
        s = _int_arg(max_seq_len, f"{label}: max_seq_len", minimum=1)
        if s > pt.dims[2] * c.dims[2]:
            raise GraphError(
                f"{label}: max_seq_len {s} exceeds pages x block_size ({pt.dims[2]} x {c.dims[2]})"
            )
        od = (b, c.dims[1], s, c.dims[3])
        # gathered pages keep the cache's type (attention after it takes fp16/bf16)
        require_kind("OPERATION_PAGED_CACHE_LOAD", label)
        attrs = {"compute_dtype": self._compute_dtype}
        ins, y = {"container": c, "page_table": pt, "seq_len": sl}, ("y", od, c)
        return self._produce(kind, op_name, label, ins, y, attrs=attrs, out=out, out_dtype=c.dtype)

    def _band(  # noqa: PLR0917 - private, shared by expand and contract
        self,
        kind: str,
        x: Tensor,
        lower: int,
        upper: int,
        axis: int,
        pad_value: float | None,
        extra: dict[str, Any],
        name: str | None,
        out: Tensor | None,
        out_dtype: Any,
    ) -> Tensor:
        desc = (
            "OPERATION_EXPAND_BAND_MATRIX"
            if kind == "expand_band_matrix"
            else "OPERATION_CONTRACT_BAND_MATRIX"
        )
        op_name, label = _start(self, kind, name, desc)
        x = self._own(x, label, "X")
        lo = _int_arg(lower, f"{label}: lower_bandwidth", minimum=0)
        up = _int_arg(upper, f"{label}: upper_bandwidth", minimum=0)
        ax = _int_arg(axis, f"{label}: axis")
        if not -x.ndim <= ax < x.ndim:
            raise GraphError(f"{label}: axis {ax} is out of range for rank {x.ndim}")
        ax %= x.ndim
        attrs: dict[str, Any] = {
            "compute_dtype": self._compute_dtype,
            "lower": lo,
            "upper": up,
            "axis": ax,
        }
        if pad_value is not None:
            attrs["pad_value"] = self._real(pad_value, f"{label}: pad_value")
        od = list(x.dims)
        band = lo + up + 1
        ins = {"x": x}
        if kind == "expand_band_matrix":
            # the band (length lower+upper+1) along `axis` becomes a full square on the last two
            if x.dims[ax] != band:
                raise GraphError(
                    f"{label}: X's axis {ax} has {x.dims[ax]} entries but the band holds "
                    f"lower + upper + 1 = {band}"
                )
            od[ax] = x.dims[-1] if ax == x.ndim - 2 else x.dims[-2]
            for role in ("kv_token_offset", "speculative_mask"):
                if extra.get(role) is not None:
                    ins[role] = self._own(extra[role], label, role)
        else:
            od[ax] = band
            if extra.get("max_token") is not None:
                attrs["max_token"] = _int_arg(extra["max_token"], f"{label}: max_token", minimum=1)
        od_t = tuple(od)
        require_kind(desc, label)
        kw: dict[str, Any] = {"out": out, "strides": c_strides(od_t)}
        dt = x.dtype if out_dtype is None else out_dtype
        return self._produce(
            kind, op_name, label, ins, ("y", od_t, x), attrs=attrs, out_dtype=dt, **kw
        )

    def expand_band_matrix(
        self,
        x: Tensor,
        *,
        lower_bandwidth: int,
        upper_bandwidth: int,
        axis: int = -2,
        pad_value: float | None = None,
        kv_token_offset: Tensor | None = None,
        speculative_mask: Tensor | None = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Expand a band stored compactly (``lower + upper + 1`` entries along ``axis``) into the
        full matrix, filling outside the band with ``pad_value``
        (``OPERATION_EXPAND_BAND_MATRIX``, cuDNN 9.10+)."""
        extra = {"kv_token_offset": kv_token_offset, "speculative_mask": speculative_mask}
        return self._band(
            "expand_band_matrix",
            x,
            lower_bandwidth,
            upper_bandwidth,
            axis,
            pad_value,
            extra,
            name,
            out,
            out_dtype,
        )

    def contract_band_matrix(
        self, x: Tensor, *, max_token: int | None = None, **kw: Unpack[BandKeywords]
    ) -> Tensor:
        """Keep only the band of a matrix (``lower + upper + 1`` entries along ``axis``)
        (``OPERATION_CONTRACT_BAND_MATRIX``, cuDNN 9.10+); the inverse of
        :meth:`expand_band_matrix`, whose band keywords it takes, with their defaults
        (``lower_bandwidth`` and ``upper_bandwidth`` are required)."""
        k = take_keywords("contract_band_matrix", kw, _BAND_DEFAULTS)
        band = (k["lower_bandwidth"], k["upper_bandwidth"], k["axis"], k["pad_value"])
        rest = ({"max_token": max_token}, k["name"], k["out"], k["out_dtype"])
        return self._band("contract_band_matrix", x, *band, *rest)

    def diagonal_band_mask(
        self,
        x: Tensor,
        *,
        left_bound: Tensor | None = None,
        right_bound: Tensor | None = None,
        fill: Tensor | None = None,
        seq_len_q: Tensor | None = None,
        seq_len_kv: Tensor | None = None,
        comparison: Any = "cmp_ge",
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """Mask ``x`` (``[B, H, S_q, S_kv]`` scores) outside a diagonal band
        (``OPERATION_DIAGONAL_BAND_MASK``, cuDNN 9.20+), as sliding-window attention does.

        ``left_bound`` or ``right_bound`` (one of them: cuDNN 9.28 refuses both in one operation) is
        an all-1 int32 tensor (the band's extent left or right of the diagonal); ``fill`` is the value written outside the band (default -inf);
        ``seq_len_q``/``seq_len_kv`` (``[B, 1, 1, 1]`` int32) align the diagonal bottom-right per
        batch; ``comparison`` is the pointwise comparison of the band test.
        """
        kind = "diagonal_band_mask"
        op_name, label = _start(self, kind, name, "OPERATION_DIAGONAL_BAND_MASK")
        x = self._own(x, label, "X")
        if x.ndim != 4:
            raise GraphError(
                f"{label}: X ('{x.name}') must be [B, H, S_q, S_kv], got rank {x.ndim}"
            )
        ins = {"x": x}
        if left_bound is None and right_bound is None:
            raise GraphError(f"{label}: give left_bound= or right_bound=")
        if left_bound is not None and right_bound is not None:
            # cuDNN 9.28 refuses the pair at finalize ("shiftRightBoundPort.tensor.isFinalized()
            # && leftBoundPort.tensor.isFinalized()"): one bound per operation
            raise GraphError(
                f"{label}: give left_bound= or right_bound=, not both (cuDNN takes one bound per "
                "diagonal band mask; chain two masks for a band bounded on both sides)"
            )
        for role, t in (("left_bound", left_bound), ("right_bound", right_bound)):
            if t is None:
                continue
            ins[role] = self._own(t, label, role)
            if any(d != 1 for d in ins[role].dims):
                raise GraphError(f"{label}: {role} must have all dims 1")
            _need_dtype(ins[role], "i", label, role, "band bounds are integers")
        mode = pointwise_mode(comparison)
        if not mode.name.startswith("CMP_"):
            raise GraphError(
                f"{label}: comparison must be a cmp_* pointwise mode, not {mode.name.lower()}"
            )
        given_fill = None if fill is None else self._own(fill, label, "fill")
        lens = {}
        for role, sl in (("seq_len_q", seq_len_q), ("seq_len_kv", seq_len_kv)):
            if sl is not None:
                lens[role] = self._own(sl, label, role)
                _need_dims(lens[role], (x.dims[0], 1, 1, 1), label, role)
                _need_dtype(lens[role], "i", label, role, "sequence lengths are integers")
        require_kind("OPERATION_DIAGONAL_BAND_MASK", label)
        # cuDNN refuses the operation without its B tensor (9.28: "!bPort.tensor.isFinalized()")
        ins["fill"] = given_fill or self.scalar(
            float("-inf"), dtype="float32", rank=x.ndim,
            name=self._unique_name(None, f"{op_name}.fill"),
        )  # fmt: skip
        ins.update(lens)
        attrs = {"compute_dtype": self._compute_dtype, "comparison": mode}
        y = ("y", x.dims, x)
        return self._produce(
            kind, op_name, label, ins, y, attrs=attrs, out=out, out_dtype=x.element_type
        )


# rope and expand_band_matrix spell out the keywords (and defaults) that rope_backward and
# contract_band_matrix take as RopeKeywords and BandKeywords.
_ROPE_DEFAULTS = keyword_defaults(SequenceOps.rope)
_BAND_DEFAULTS = keyword_defaults(SequenceOps.expand_band_matrix, BandKeywords.__annotations__)
show_keywords(vars(SequenceOps), SequenceOps.rope, RopeKeywords)
show_keywords(vars(SequenceOps), SequenceOps.expand_band_matrix, BandKeywords)
