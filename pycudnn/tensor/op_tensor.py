"""The legacy op-tensor descriptor (``cudnnOpTensorDescriptor_t``): element-wise binary and unary ops."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import _bindings as _b
from ._common import (
    _FLOAT_COMPUTE_TYPES,
    LegacyDescriptor,
    _choice,
    _compute_type,
    _dtype_of_value,
    _name_of,
    _nan_opt,
    read_back,
    warn_deprecated_once,
)

_OP_TENSOR_OPS = {
    "add": int(_b.CUDNN_OP_TENSOR_ADD),
    "mul": int(_b.CUDNN_OP_TENSOR_MUL),
    "min": int(_b.CUDNN_OP_TENSOR_MIN),
    "max": int(_b.CUDNN_OP_TENSOR_MAX),
    "sqrt": int(_b.CUDNN_OP_TENSOR_SQRT),
    "not": int(_b.CUDNN_OP_TENSOR_NOT),
}


class OpTensorDescriptor(LegacyDescriptor):
    """A legacy element-wise operation descriptor (``cudnnSetOpTensorDescriptor``), deprecated.

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"sqrt"``, ``"not"`` (the last two are
    unary). ``compute_type``: float32 (for float, half and bfloat16 data) or float64.
    """

    _kind = "cuDNN op-tensor descriptor"
    _c_kind = "OpTensor"

    def __init__(
        self, op: str = "add", compute_type: Any = np.float32, *, nan_propagation: bool = False
    ) -> None:
        warn_deprecated_once("pycudnn.OpTensorDescriptor", "the graph API (pycudnn.Graph)")
        o = _choice(op, "op", _OP_TENSOR_OPS)
        ctype = _compute_type(compute_type, "compute_type", _FLOAT_COMPUTE_TYPES)
        nan = _nan_opt(nan_propagation)
        self._make(("cudnnSetOpTensorDescriptor", o, ctype, nan))
        self._key = (o, ctype, nan)

    def _read_back(self) -> tuple[int, int, int]:
        op, ctype, nan = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self._query("cudnnGetOpTensorDescriptor", op, ctype, nan)
        return op.value, ctype.value, nan.value

    op = read_back[str](0, convert=lambda v: _name_of(v, _OP_TENSOR_OPS))
    compute_type = read_back[np.dtype](1, convert=_dtype_of_value)

    @property
    def is_unary(self) -> bool:
        self._check_open()
        return self._key[0] in (_OP_TENSOR_OPS["sqrt"], _OP_TENSOR_OPS["not"])

    def _describe(self) -> str:
        return _name_of(self._key[0], _OP_TENSOR_OPS)
