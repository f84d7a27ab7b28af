"""The legacy op-tensor descriptor (``cudnnOpTensorDescriptor_t``): element-wise binary and unary ops."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from _nvbind.resource import CResource

from .. import _bindings as _b
from .._lib import LIB
from ._common import (
    _FLOAT_COMPUTE_TYPES,
    _call,
    _choice,
    _compute_type,
    _dtype_of_value,
    _name_of,
    _nan_opt,
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


class OpTensorDescriptor(CResource):
    """A legacy element-wise operation descriptor (``cudnnSetOpTensorDescriptor``), deprecated.

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"sqrt"``, ``"not"`` (the last two are
    unary). ``compute_type``: float32 (for float, half and bfloat16 data) or float64.
    """

    _kind = "cuDNN op-tensor descriptor"

    def __init__(
        self, op: str = "add", compute_type: Any = np.float32, *, nan_propagation: bool = False
    ) -> None:
        warn_deprecated_once("pycudnn.OpTensorDescriptor", "the graph API (pycudnn.Graph)")
        o = _choice(op, "op", _OP_TENSOR_OPS)
        ctype = _compute_type(compute_type, "compute_type", _FLOAT_COMPUTE_TYPES)
        nan = _nan_opt(nan_propagation)
        out = ctypes.c_void_p()
        _call("cudnnCreateOpTensorDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call("cudnnSetOpTensorDescriptor", ptr, o, ctype, nan)
        except BaseException:
            _destroy_op_tensor(ptr)
            raise
        super().__init__(ptr, _destroy_op_tensor)
        self._key = (o, ctype, nan)

    def _read_back(self) -> tuple[int, int, int]:
        op, ctype, nan = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        _call(
            "cudnnGetOpTensorDescriptor",
            self,
            ctypes.byref(op),
            ctypes.byref(ctype),
            ctypes.byref(nan),
        )
        return op.value, ctype.value, nan.value

    @property
    def op(self) -> str:
        return _name_of(self._read_back()[0], _OP_TENSOR_OPS)

    @property
    def compute_type(self) -> np.dtype:
        return _dtype_of_value(self._read_back()[1])

    @property
    def is_unary(self) -> bool:
        self._check_open()
        return self._key[0] in (_OP_TENSOR_OPS["sqrt"], _OP_TENSOR_OPS["not"])

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.OpTensorDescriptor closed>"
        return f"<pycudnn.OpTensorDescriptor {_name_of(self._key[0], _OP_TENSOR_OPS)}>"


def _destroy_op_tensor(ptr: int) -> None:
    LIB.function("cudnnDestroyOpTensorDescriptor")(ptr)
