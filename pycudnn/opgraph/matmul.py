"""Batched matrix multiplication with broadcast batch dims."""

from __future__ import annotations

from typing import Any, TypedDict

from _nvbind.keywords import keyword_defaults

from .. import layout
from .common import (
    GraphError,
    _broadcast,
    _dims_text,
)
from .core import GraphCore
from .tensors import Tensor

__all__ = ["MatmulOps", "OutputKeywords"]


class OutputKeywords(TypedDict, total=False):
    """The keywords that end :meth:`MatmulOps.matmul` and the operations that, like it, make one
    output (the block-scale and MoE kinds), with matmul's defaults: their fixed keyword list, for
    ``**kw: Unpack[OutputKeywords]``."""

    compute_dtype: Any
    name: str | None
    out: Tensor | None
    out_dtype: Any


class MatmulOps(GraphCore):
    """Batched matrix multiplication with broadcast batch dims."""

    def matmul(
        self,
        a: Tensor,
        b: Tensor,
        *,
        compute_dtype: Any = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Batched matrix product (``OPERATION_MATMUL``): ``[..., M, K] x [..., K, N] -> [..., M, N]``.

        Batch dims broadcast (a size-1 batch dim pairs with any size); transposes are expressed by
        strides. Tensors have rank 3 or more (a batch dimension of 1 for a single product).
        """
        kind = "matmul"
        op_name, label = self._begin_op(kind, name)
        a, b = self._own(a, label, "A"), self._own(b, label, "B")
        if a.ndim != b.ndim:
            raise GraphError(
                f"{label}: A ('{a.name}') has rank {a.ndim} but B ('{b.name}') has rank {b.ndim}; "
                "add size-1 batch dims to the smaller one"
            )
        if a.dims[-1] != b.dims[-2]:
            raise GraphError(
                f"{label}: A ('{a.name}') is {_dims_text(a.dims)} and B ('{b.name}') is "
                f"{_dims_text(b.dims)}: A's K ({a.dims[-1]}) must equal B's K ({b.dims[-2]})"
            )
        batch = _broadcast(a.dims[:-2], b.dims[:-2])
        if batch is None:
            raise GraphError(
                f"{label}: batch dims of A {_dims_text(a.dims[:-2])} and B "
                f"{_dims_text(b.dims[:-2])} do not broadcast (each pair equal, or one of them 1)"
            )
        for role, t in (("A", a), ("B", b)):
            if t.element_type is not None and t.element_type.kind == "b":
                raise GraphError(f"{label}: {role} ('{t.name}') is boolean; matmul needs numbers")
            if t.strides[-1] != 1 and t.strides[-2] != 1:
                raise GraphError(
                    f"{label}: {role} ('{t.name}') strides {_dims_text(t.strides)}: one of the two "
                    "matrix dims must have stride 1 (row- or column-major)"
                )
        c_dims = (*batch, a.dims[-2], b.dims[-1])
        st = tuple(layout.packed_strides(c_dims, "ABCDEFGH"[: len(c_dims)]))  # row-major
        attrs = {"compute_dtype": self._compute(compute_dtype, label)}
        ins, c = {"a": a, "b": b}, ("c", c_dims, a)
        return self._produce(
            kind, op_name, label, ins, c, attrs=attrs, out=out, out_dtype=out_dtype, strides=st
        )


# matmul spells out the keywords (and defaults) that its peers take as OutputKeywords.
OUTPUT_DEFAULTS = keyword_defaults(MatmulOps.matmul, OutputKeywords.__annotations__)
