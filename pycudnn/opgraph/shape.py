"""Operations that move data without arithmetic: reshape, transpose, slice and concatenate."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import layout
from .common import GraphError, _dims_text, _enum_member, _ints
from .core import GraphCore
from .kinds import _axis_arg, _int_arg, _need_same_dtype, _start, require_kind
from .tensors import Tensor

__all__ = ["ShapeOps"]


def _reshape_mode(mode: Any) -> Any:
    from .. import _bindings

    return _enum_member(_bindings.cudnnBackendReshapeMode_t, mode, "CUDNN_RESHAPE_", "reshape mode")


def _like_x(x: Tensor, out: Tensor | None, strides: Any) -> dict[str, Any]:
    """The output keywords of a shape operation: its result keeps X's type, in ``strides``."""
    return {"out": out, "out_dtype": x.element_type, "strides": strides}


class ShapeOps(GraphCore):
    """Reshape, transpose, slice and concatenate (``OPERATION_RESHAPE``, ``_TRANSPOSE``,
    ``_SLICE``, ``_CONCAT``)."""

    def reshape(
        self,
        x: Tensor,
        dims: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
        mode: Any = None,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """``x`` with new ``dims`` (same element count) (``OPERATION_RESHAPE``).

        ``strides`` of the result default to row-major packed. ``mode`` (cuDNN 9.22+):
        ``"view_only"`` (the output aliases the input's memory) or ``"logical"`` (a logical
        reshape, elements in row-major order); left unset, cuDNN's default applies.
        """
        kind = "reshape"
        op_name, label = _start(self, kind, name, "OPERATION_RESHAPE")
        x = self._own(x, label, "X")
        od = self._check_dims(dims, f"{label}: dims")
        if math.prod(od) != math.prod(x.dims):
            raise GraphError(
                f"{label}: dims {_dims_text(od)} hold {math.prod(od)} elements but X ('{x.name}') "
                f"{_dims_text(x.dims)} holds {math.prod(x.dims)}; a reshape keeps the count"
            )
        st = self._check_strides(od, strides, None, f"{label}: strides")
        attrs: dict[str, Any] = {"compute_dtype": self._compute_dtype}
        if mode is not None:
            require_kind("OPERATION_RESHAPE", f"{label}: mode", since=(9, 22, 0))
            attrs["mode"] = _reshape_mode(mode)
        require_kind("OPERATION_RESHAPE", label)
        y = ("y", od, x)
        return self._produce(kind, op_name, label, {"x": x}, y, attrs=attrs, **_like_x(x, out, st))

    def transpose(
        self,
        x: Tensor,
        permutation: Sequence[int],
        *,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """Permute the axes of ``x`` (``OPERATION_TRANSPOSE``, cuDNN 9.22+): output dim ``i`` is
        input dim ``permutation[i]``; its strides are the input's, permuted alike (as
        cudnn-frontend infers them)."""
        kind = "transpose"
        op_name, label = _start(self, kind, name, "OPERATION_TRANSPOSE")
        x = self._own(x, label, "X")
        perm = _ints(permutation, f"{label}: permutation")
        if sorted(perm) != list(range(x.ndim)):
            raise GraphError(
                f"{label}: permutation {_dims_text(perm)} must order each of X's {x.ndim} axes "
                f"(0..{x.ndim - 1}) exactly once"
            )
        od = tuple(x.dims[p] for p in perm)
        st = tuple(x.strides[p] for p in perm)
        require_kind("OPERATION_TRANSPOSE", label)
        attrs = {"compute_dtype": self._compute_dtype, "permutation": perm}
        y = ("y", od, x)
        return self._produce(kind, op_name, label, {"x": x}, y, attrs=attrs, **_like_x(x, out, st))

    def slice(
        self,
        x: Tensor,
        slices: Sequence[Any],
        *,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """A strided window of ``x`` (``OPERATION_SLICE``, cuDNN 9.22+).

        ``slices`` has one entry per axis of ``x``: a Python ``slice`` (non-negative start and
        stop, positive step; ``slice(None)`` takes the whole axis) or a ``(start, stop)`` pair.
        The output's strides are the input's times the step (a view, as cudnn-frontend infers).
        """
        kind = "slice"
        op_name, label = _start(self, kind, name, "OPERATION_SLICE")
        x = self._own(x, label, "X")
        if isinstance(slices, (str, bytes)) or not isinstance(slices, Sequence):
            raise TypeError(f"{label}: slices must be a sequence of slices, not {slices!r}")
        if len(slices) != x.ndim:
            raise GraphError(
                f"{label}: slices has {len(slices)} entries but X ('{x.name}') has rank {x.ndim}"
            )
        start, limit, step = [], [], []
        for i, s in enumerate(slices):
            if isinstance(s, slice):
                a = 0 if s.start is None else _int_arg(s.start, f"{label}: slices[{i}].start")
                b = x.dims[i] if s.stop is None else _int_arg(s.stop, f"{label}: slices[{i}].stop")
                c = 1 if s.step is None else _int_arg(s.step, f"{label}: slices[{i}].step")
            elif isinstance(s, Sequence) and len(s) == 2:
                a = _int_arg(s[0], f"{label}: slices[{i}][0]")
                b = _int_arg(s[1], f"{label}: slices[{i}][1]")
                c = 1
            else:
                raise TypeError(f"{label}: slices[{i}] must be a slice or (start, stop), not {s!r}")
            if c < 1:
                raise GraphError(f"{label}: slices[{i}] has step {c}; steps must be positive")
            if not 0 <= a < b <= x.dims[i]:
                raise GraphError(
                    f"{label}: slices[{i}] is {a}:{b}; it needs 0 <= start < stop <= "
                    f"{x.dims[i]} (X's dim {i}); negative indices are not taken"
                )
            start.append(a)
            limit.append(b)
            step.append(c)
        od = tuple((b - a + c - 1) // c for a, b, c in zip(start, limit, step, strict=True))
        st = tuple(s * c for s, c in zip(x.strides, step, strict=True))
        require_kind("OPERATION_SLICE", label)
        attrs = {
            "compute_dtype": self._compute_dtype,
            "start": tuple(start),
            "limit": tuple(limit),
            "step": tuple(step),
        }
        y = ("y", od, x)
        return self._produce(kind, op_name, label, {"x": x}, y, attrs=attrs, **_like_x(x, out, st))

    def concatenate(
        self,
        inputs: Sequence[Tensor],
        *,
        axis: int,
        in_place_index: int | None = None,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """Join tensors along ``axis`` (``OPERATION_CONCAT``): every other dim must agree, and
        all inputs share one dtype. ``in_place_index`` names the input whose memory already is
        its slice of the output (cuDNN then does not copy it)."""
        kind = "concatenate"
        op_name, label = _start(self, kind, name, "OPERATION_CONCAT")
        if isinstance(inputs, Tensor) or not isinstance(inputs, Sequence) or len(inputs) < 2:
            raise GraphError(f"{label}: inputs must be a sequence of at least two tensors")
        xs = [self._own(t, label, f"inputs[{i}]") for i, t in enumerate(inputs)]
        first = xs[0]
        ax = _axis_arg(axis, first.ndim, f"{label}: axis")
        for i, t in enumerate(xs[1:], 1):
            if t.ndim != first.ndim or any(
                a != b for k, (a, b) in enumerate(zip(t.dims, first.dims, strict=True)) if k != ax
            ):
                raise GraphError(
                    f"{label}: inputs[{i}] ('{t.name}') is {_dims_text(t.dims)} but inputs[0] is "
                    f"{_dims_text(first.dims)}; all dims but axis {ax} must agree"
                )
            rule = "concatenated tensors share one dtype"
            _need_same_dtype(label, (f"inputs[{i}]", t), ("inputs[0]", first), rule)
        if len({id(t) for t in xs}) != len(xs):
            raise GraphError(f"{label}: a tensor appears twice in inputs")
        od = list(first.dims)
        od[ax] = sum(t.dims[ax] for t in xs)
        attrs: dict[str, Any] = {"compute_dtype": self._compute_dtype, "axis": ax}
        if in_place_index is not None:
            idx = _int_arg(in_place_index, f"{label}: in_place_index", minimum=0)
            if idx >= len(xs):
                raise GraphError(
                    f"{label}: in_place_index {idx} is out of range for {len(xs)} inputs"
                )
            attrs["in_place_index"] = idx
        fmt = first.format
        st = tuple(layout.packed_strides(tuple(od), fmt)) if len(fmt) == len(od) else None
        require_kind("OPERATION_CONCAT", label)
        ins, y = {f"x{i}": t for i, t in enumerate(xs)}, ("y", tuple(od), first)
        return self._produce(kind, op_name, label, ins, y, attrs=attrs, **_like_x(first, out, st))
