"""The legacy op-tensor descriptor (``cudnnOpTensorDescriptor_t``): element-wise binary and unary ops."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import _bindings as _b
from ._common import OpDescriptor, warn_deprecated_once

_OP_TENSOR_OPS = {
    "add": int(_b.CUDNN_OP_TENSOR_ADD),
    "mul": int(_b.CUDNN_OP_TENSOR_MUL),
    "min": int(_b.CUDNN_OP_TENSOR_MIN),
    "max": int(_b.CUDNN_OP_TENSOR_MAX),
    "sqrt": int(_b.CUDNN_OP_TENSOR_SQRT),
    "not": int(_b.CUDNN_OP_TENSOR_NOT),
}


class OpTensorDescriptor(OpDescriptor, c_kind="OpTensor"):
    """A legacy element-wise operation descriptor (``cudnnSetOpTensorDescriptor``), deprecated.

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"sqrt"``, ``"not"`` (the last two are
    unary). ``compute_type``: float32 (for float, half and bfloat16 data) or float64.
    """

    _ops = _OP_TENSOR_OPS

    def __init__(
        self, op: str = "add", compute_type: Any = np.float32, *, nan_propagation: bool = False
    ) -> None:
        warn_deprecated_once("pycudnn.OpTensorDescriptor", "the graph API (pycudnn.Graph)")
        o, ctype, nan = self._settings(op, compute_type, nan_propagation)
        self._make(("cudnnSetOpTensorDescriptor", o, ctype, nan))
        self._key = (o, ctype, nan)

    def _read_back(self) -> tuple[int, int, int]:
        op, ctype, nan = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self._query("cudnnGetOpTensorDescriptor", op, ctype, nan)
        return op.value, ctype.value, nan.value

    @property
    def is_unary(self) -> bool:
        self._check_open()
        return self._key[0] in (_OP_TENSOR_OPS["sqrt"], _OP_TENSOR_OPS["not"])
