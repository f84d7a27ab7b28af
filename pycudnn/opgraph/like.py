"""Graph tensors described by an existing array (cudnn-frontend's ``tensor_like``)."""

from __future__ import annotations

from typing import Any

from _nvbind.arrays import as_array_view

from .common import MAX_RANK, MIN_RANK, GraphError
from .core import GraphCore
from .tensors import Tensor

__all__ = ["TensorLikeOps"]


class TensorLikeOps(GraphCore):
    """``tensor_like``."""

    def tensor_like(
        self,
        array: Any,
        *,
        name: str | None = None,
        virtual: bool = False,
        alignment: int | None = None,
    ) -> Tensor:
        """A graph tensor with the dims, strides and dtype of ``array``: any array speaking DLPack
        or ``__cuda_array_interface__`` (PyTorch, CuPy, JAX, Numba), a
        :class:`~pycudnn.DeviceArray`, or a NumPy array (its layout only).

        Arrays of rank 1 or 2 get leading size-1 dims (graph tensors have at least 3); a size-1
        dim's stride, which frameworks may report as 0, is taken as the packed one. ``alignment``
        defaults to what the array's own pointer offers, up to 16 bytes: arrays given at execute
        must offer at least as much.
        """

        view = as_array_view(array, name="array")
        dims, strides = list(view.shape), list(view.strides)
        if not dims:
            dims, strides = [1], [1]
        if not len(dims) <= MAX_RANK:
            raise GraphError(f"array has rank {len(dims)}; graph tensors have at most {MAX_RANK}")
        # size-1 dims: any stride addresses the same element; give the packed one
        span = 1
        for i in range(len(dims) - 1, -1, -1):
            if dims[i] == 1:
                strides[i] = span
            span = max(span, dims[i] * strides[i])
        while len(dims) < MIN_RANK:
            dims.insert(0, 1)
            strides.insert(0, span)
        if alignment is None:
            alignment = max(min(16, view.alignment), view.itemsize)
        return self.tensor(
            dims,
            strides,
            dtype=view.dtype,
            name=name,
            virtual=virtual,
            alignment=alignment,
        )
