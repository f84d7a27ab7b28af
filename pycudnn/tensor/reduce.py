"""The legacy reduce-tensor descriptor (``cudnnReduceTensorDescriptor_t``)."""

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


class ReduceTensorDescriptor(CResource):
    """A legacy reduction descriptor (``cudnnSetReduceTensorDescriptor``), deprecated in cuDNN 9.

    ``op``: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"amax"``, ``"avg"``, ``"norm1"``,
    ``"norm2"``, ``"mul_no_zeros"``. ``indices=True`` (min, max and amax only) also returns the
    flattened index of the selected element, as 32-bit unsigned integers (the only index type
    cuDNN fully supports).
    """

    _kind = "cuDNN reduce-tensor descriptor"

    def __init__(
        self,
        op: str = "add",
        compute_type: Any = np.float32,
        *,
        nan_propagation: bool = False,
        indices: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.ReduceTensorDescriptor", "the graph API (pycudnn.Graph)")
        o = _choice(op, "op", _REDUCE_OPS)
        ctype = _compute_type(compute_type, "compute_type", _FLOAT_COMPUTE_TYPES)
        nan = _nan_opt(nan_propagation)
        if not isinstance(indices, (bool, np.bool_)):
            raise TypeError(f"indices must be a bool, got {type(indices).__name__}")
        if indices and o not in _INDEXED_REDUCE_OPS:
            raise ValueError(f"indices=True needs op 'min', 'max' or 'amax', not {op!r}")
        ind = int(
            _b.CUDNN_REDUCE_TENSOR_FLATTENED_INDICES
            if indices
            else _b.CUDNN_REDUCE_TENSOR_NO_INDICES
        )
        out = ctypes.c_void_p()
        _call("cudnnCreateReduceTensorDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call(
                "cudnnSetReduceTensorDescriptor",
                ptr,
                o,
                ctype,
                nan,
                ind,
                int(_b.CUDNN_32BIT_INDICES),
            )
        except BaseException:
            _destroy_reduce(ptr)
            raise
        super().__init__(ptr, _destroy_reduce)
        self._key = (o, ctype, nan, ind)

    def _read_back(self) -> tuple[int, int, int, int, int]:
        vals = [ctypes.c_int() for _ in range(5)]
        _call("cudnnGetReduceTensorDescriptor", self, *(ctypes.byref(v) for v in vals))
        return tuple(v.value for v in vals)  # type: ignore[return-value]

    @property
    def op(self) -> str:
        return _name_of(self._read_back()[0], _REDUCE_OPS)

    @property
    def compute_type(self) -> np.dtype:
        return _dtype_of_value(self._read_back()[1])

    @property
    def indices(self) -> bool:
        return self._read_back()[3] == int(_b.CUDNN_REDUCE_TENSOR_FLATTENED_INDICES)

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.ReduceTensorDescriptor closed>"
        return f"<pycudnn.ReduceTensorDescriptor {_name_of(self._key[0], _REDUCE_OPS)} indices={bool(self._key[3])}>"


def _destroy_reduce(ptr: int) -> None:
    LIB.function("cudnnDestroyReduceTensorDescriptor")(ptr)
