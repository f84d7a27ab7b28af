"""Reductions over axes (``OPERATION_REDUCTION``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .common import (
    GraphError,
    ReduceOp,
    _dims_text,
    _enum_member,
    _ints,
)
from .core import GraphCore
from .tensors import Tensor

__all__ = ["ReductionOps", "reduction_operator"]


def reduction_operator(op: Any) -> Any:
    """A ``cudnnReduceTensorOp_t`` from a member, int or name (``"add"``, ``"max"``, ``"amax"``)."""
    return _enum_member(ReduceOp, op, "CUDNN_REDUCE_TENSOR_", "reduction operator")


#: Every ``cudnnPointwiseMode_t`` of the headers and its number of inputs.


class ReductionOps(GraphCore):
    """Reductions over axes (``OPERATION_REDUCTION``)."""

    def reduction(
        self,
        x: Tensor,
        *,
        op: Any = "add",
        axes: Iterable[int] | None = None,
        out_dims: Sequence[int] | None = None,
        compute_dtype: Any = None,
        deterministic: bool | None = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Reduce ``x`` (``OPERATION_REDUCTION``) over ``axes``, or to ``out_dims`` (1 where reduced).

        ``op``: any ``cudnnReduceTensorOp_t`` name (``add``, ``mul``, ``min``, ``max``, ``amax``,
        ``avg``, ``norm1``, ``norm2``, ``mul_no_zeros``). cuDNN 9.28 finalizes ADD, MUL, MIN, MAX
        and AMAX and reports the others as not supported when the graph is finalized.
        """
        rop = reduction_operator(op)
        kind = "reduction"
        op_name = self._op_name(kind, name)
        label = f"{kind} '{op_name}'"
        self._check_mutable()
        x = self._own(x, label, "X")
        if (axes is None) == (out_dims is None):
            raise GraphError(f"{label}: give exactly one of axes= or out_dims=")
        if axes is not None:
            ax = _ints(list(axes) if not isinstance(axes, Sequence) else axes, f"{label}: axes")
            for a in ax:
                if not -x.ndim <= a < x.ndim:
                    raise GraphError(f"{label}: axis {a} is out of range for rank {x.ndim}")
            reduced = {a % x.ndim for a in ax}
            od = tuple(1 if i in reduced else d for i, d in enumerate(x.dims))
        else:
            od = self._check_dims(out_dims, f"{label}: out_dims")
            if len(od) != x.ndim:
                raise GraphError(
                    f"{label}: out_dims {_dims_text(od)} has rank {len(od)} but X has rank {x.ndim}"
                )
            for i, (o, d) in enumerate(zip(od, x.dims, strict=True)):
                if o not in (1, d):
                    raise GraphError(
                        f"{label}: out_dims[{i}] is {o}; each output dim is X's ({d}) or 1 (reduced)"
                    )
        attrs: dict[str, Any] = {"op": rop, "compute_dtype": self._compute(compute_dtype, label)}
        if deterministic is not None:
            if not isinstance(deterministic, bool):
                raise TypeError(f"{label}: deterministic must be a bool, not {deterministic!r}")
            attrs["deterministic"] = deterministic
        y = ("y", od, x)
        return self._produce(
            kind, op_name, label, {"x": x}, y, attrs=attrs, out=out, out_dtype=out_dtype
        )
