"""The legacy reduce-tensor descriptor (``cudnnReduceTensorDescriptor_t``)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import _bindings as _b
from ._common import OpDescriptor, warn_deprecated_once

_REDUCE_OPS = {
    "add": int(_b.CUDNN_REDUCE_TENSOR_ADD),
    "mul": int(_b.CUDNN_REDUCE_TENSOR_MUL),
    "min": int(_b.CUDNN_REDUCE_TENSOR_MIN),
    "max": int(_b.CUDNN_REDUCE_TENSOR_MAX),
    "amax": int(_b.CUDNN_REDUCE_TENSOR_AMAX),
    "avg": int(_b.CUDNN_REDUCE_TENSOR_AVG),
    "norm1": int(_b.CUDNN_REDUCE_TENSOR_NORM1),
    "norm2": int(_b.CUDNN_REDUCE_TENSOR_NORM2),
    "mul_no_zeros": int(_b.CUDNN_REDUCE_TENSOR_MUL_NO_ZEROS),
}
_INDEXED_REDUCE_OPS = {_REDUCE_OPS["min"], _REDUCE_OPS["max"], _REDUCE_OPS["amax"]}


class ReduceTensorDescriptor(OpDescriptor, c_kind="ReduceTensor"):
    """A legacy reduction descriptor (``cudnnSetReduceTensorDescriptor``), deprecated in cuDNN 9.

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"amax"``, ``"avg"``, ``"norm1"``,
    ``"norm2"``, ``"mul_no_zeros"``. ``indices=True`` (min, max and amax only) also returns the
    flattened index of the selected element, as 32-bit unsigned integers (the only index type
    cuDNN fully supports).
    """

    _ops = _REDUCE_OPS

    def __init__(
        self,
        op: str = "add",
        compute_type: Any = np.float32,
        *,
        nan_propagation: bool = False,
        indices: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.ReduceTensorDescriptor", "the graph API (pycudnn.Graph)")
        o, ctype, nan = self._settings(op, compute_type, nan_propagation)
        if not isinstance(indices, (bool, np.bool_)):
            raise TypeError(f"indices must be a bool, got {type(indices).__name__}")
        if indices and o not in _INDEXED_REDUCE_OPS:
            raise ValueError(f"indices=True needs op 'min', 'max' or 'amax', not {op!r}")
        ind = int(
            _b.CUDNN_REDUCE_TENSOR_FLATTENED_INDICES
            if indices
            else _b.CUDNN_REDUCE_TENSOR_NO_INDICES
        )
        self._make(
            ("cudnnSetReduceTensorDescriptor", o, ctype, nan, ind, int(_b.CUDNN_32BIT_INDICES))
        )
        self._key = (o, ctype, nan, ind)

    def _read_back(self) -> tuple[int, int, int, int, int]:
        vals = [ctypes.c_int() for _ in range(5)]
        self._query("cudnnGetReduceTensorDescriptor", *vals)
        return tuple(v.value for v in vals)  # type: ignore[return-value]

    @property
    def indices(self) -> bool:
        return self._read_back()[3] == int(_b.CUDNN_REDUCE_TENSOR_FLATTENED_INDICES)

    def _describe(self) -> str:
        return f"{super()._describe()} indices={bool(self._key[3])}"
