"""The legacy activation descriptor (``cudnnActivationDescriptor_t``)."""

from __future__ import annotations

import ctypes
from typing import Any

from _nvbind.resource import CResource

from .. import _bindings as _b
from .._lib import LIB
from ._common import (
    _call,
    _choice,
    _name_of,
    _nan_opt,
    _real,
    warn_deprecated_once,
)

_ACTIVATION_MODES = {
    "sigmoid": int(_b.CUDNN_ACTIVATION_SIGMOID),
    "relu": int(_b.CUDNN_ACTIVATION_RELU),
    "tanh": int(_b.CUDNN_ACTIVATION_TANH),
    "clipped_relu": int(_b.CUDNN_ACTIVATION_CLIPPED_RELU),
    "elu": int(_b.CUDNN_ACTIVATION_ELU),
    "identity": int(_b.CUDNN_ACTIVATION_IDENTITY),
    "swish": int(_b.CUDNN_ACTIVATION_SWISH),
}


class ActivationDescriptor(CResource):
    """A legacy activation descriptor (``cudnnSetActivationDescriptor``), deprecated in cuDNN 9.

    ``mode``: ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"clipped_relu"`` (``coef`` is the ceiling,
    > 0), ``"elu"`` (``coef`` is alpha), ``"swish"`` (``swish_beta``, set with
    ``cudnnSetActivationDescriptorSwishBeta``), ``"identity"``.
    """

    _kind = "cuDNN activation descriptor"

    def __init__(
        self,
        mode: str = "relu",
        coef: float = 0.0,
        *,
        swish_beta: float = 1.0,
        nan_propagation: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.ActivationDescriptor", "the graph API (pycudnn.Graph)")
        m = _choice(mode, "mode", _ACTIVATION_MODES)
        c = _real(coef, "coef")
        if m == _ACTIVATION_MODES["clipped_relu"] and c <= 0:
            raise ValueError(f"clipped_relu needs coef (the ceiling) > 0, got {c}")
        beta = _real(swish_beta, "swish_beta")
        nan = _nan_opt(nan_propagation)
        out = ctypes.c_void_p()
        _call("cudnnCreateActivationDescriptor", ctypes.byref(out))
        ptr = int(out.value or 0)
        try:
            _call("cudnnSetActivationDescriptor", ptr, m, nan, c)
            if m == _ACTIVATION_MODES["swish"]:
                _call("cudnnSetActivationDescriptorSwishBeta", ptr, beta)
        except BaseException:
            _destroy_activation(ptr)
            raise
        super().__init__(ptr, _destroy_activation)
        self._key = (m, nan, c, beta if m == _ACTIVATION_MODES["swish"] else None)

    @property
    def mode(self) -> str:
        """``cudnnGetActivationDescriptor``'s mode as a name."""
        return _name_of(self._read_back()[0], _ACTIVATION_MODES)

    @property
    def coef(self) -> float:
        return self._read_back()[2]

    @property
    def swish_beta(self) -> float:
        """``cudnnGetActivationDescriptorSwishBeta``."""
        out = ctypes.c_double()
        _call("cudnnGetActivationDescriptorSwishBeta", self, ctypes.byref(out))
        return float(out.value)

    def _read_back(self) -> tuple[int, int, float]:
        mode, nan, coef = ctypes.c_int(), ctypes.c_int(), ctypes.c_double()
        _call(
            "cudnnGetActivationDescriptor",
            self,
            ctypes.byref(mode),
            ctypes.byref(nan),
            ctypes.byref(coef),
        )
        return mode.value, nan.value, float(coef.value)

    def key(self) -> tuple[Any, ...]:
        self._check_open()
        return self._key

    def __repr__(self) -> str:
        if self.closed:
            return "<pycudnn.ActivationDescriptor closed>"
        return f"<pycudnn.ActivationDescriptor {_name_of(self._key[0], _ACTIVATION_MODES)} coef={self._key[2]}>"


def _destroy_activation(ptr: int) -> None:
    LIB.function("cudnnDestroyActivationDescriptor")(ptr)
