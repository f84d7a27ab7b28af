"""The legacy activation descriptor (``cudnnActivationDescriptor_t``)."""

from __future__ import annotations

import ctypes

from .. import _bindings as _b
from ._common import (
    LegacyDescriptor,
    _choice,
    _name_of,
    _nan_opt,
    _real,
    read_back,
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


class ActivationDescriptor(LegacyDescriptor, c_kind="Activation"):
    """A legacy activation descriptor (``cudnnSetActivationDescriptor``), deprecated in cuDNN 9.

    ``mode``: ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"clipped_relu"`` (``coef`` is the ceiling,
    > 0, and must be given), ``"elu"`` (``coef`` is alpha, default 1.0 as the graph API's
    ``ELU_ALPHA`` and PyTorch's), ``"swish"`` (``swish_beta``, set with
    ``cudnnSetActivationDescriptorSwishBeta``), ``"identity"``; the other modes ignore ``coef``.
    """

    def __init__(
        self,
        mode: str = "relu",
        coef: float | None = None,
        *,
        swish_beta: float = 1.0,
        nan_propagation: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.ActivationDescriptor", "the graph API (pycudnn.Graph)")
        m = _choice(mode, "mode", _ACTIVATION_MODES)
        if coef is None:
            # An ELU with alpha 0 is a ReLU: the C default would compute something else than
            # "elu" says without a word.
            coef = 1.0 if m == _ACTIVATION_MODES["elu"] else 0.0
            if m == _ACTIVATION_MODES["clipped_relu"]:
                raise ValueError("clipped_relu needs coef (the ceiling) > 0, got None")
        c = _real(coef, "coef")
        if m == _ACTIVATION_MODES["clipped_relu"] and c <= 0:
            raise ValueError(f"clipped_relu needs coef (the ceiling) > 0, got {c}")
        beta = _real(swish_beta, "swish_beta")
        nan = _nan_opt(nan_propagation)
        swish = m == _ACTIVATION_MODES["swish"]
        self._make(
            ("cudnnSetActivationDescriptor", m, nan, c),
            *([("cudnnSetActivationDescriptorSwishBeta", beta)] if swish else []),
        )
        self._key = (m, nan, c, beta if m == _ACTIVATION_MODES["swish"] else None)

    mode = read_back[str](
        0,
        """``cudnnGetActivationDescriptor``'s mode as a name.""",
        convert=lambda v: _name_of(v, _ACTIVATION_MODES),
    )
    coef = read_back[float](2)

    @property
    def swish_beta(self) -> float:
        """``cudnnGetActivationDescriptorSwishBeta``."""
        return float(self._query_value("cudnnGetActivationDescriptorSwishBeta", ctypes.c_double))

    def _read_back(self) -> tuple[int, int, float]:
        mode, nan, coef = ctypes.c_int(), ctypes.c_int(), ctypes.c_double()
        self._query("cudnnGetActivationDescriptor", mode, nan, coef)
        return mode.value, nan.value, float(coef.value)

    def _describe(self) -> str:
        return f"{_name_of(self._key[0], _ACTIVATION_MODES)} coef={self._key[2]}"
