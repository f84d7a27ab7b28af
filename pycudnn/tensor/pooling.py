"""The legacy pooling descriptor (``cudnnPoolingDescriptor_t``)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from .. import _bindings as _b
from ._common import (
    _MAX_RANK,
    LegacyDescriptor,
    _c_ints,
    _check_padded_extent,
    _choice,
    _ints,
    _name_of,
    _nan_opt,
    read_back,
    warn_deprecated_once,
)
from .descriptor import TensorDescriptor

_POOLING_MODES = {
    "max": int(_b.CUDNN_POOLING_MAX),
    "avg": int(_b.CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING),
    "avg_include_padding": int(_b.CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING),
    "avg_exclude_padding": int(_b.CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING),
    "max_deterministic": int(_b.CUDNN_POOLING_MAX_DETERMINISTIC),
}


class PoolingDescriptor(LegacyDescriptor, c_kind="Pooling"):
    """A legacy pooling descriptor (``cudnnSetPoolingNdDescriptor``), deprecated in cuDNN 9.

    ``mode``: ``"max"``, ``"avg"`` (= ``"avg_include_padding"``), ``"avg_exclude_padding"``,
    ``"max_deterministic"``. ``window`` has one extent per spatial dim; ``pads`` default to 0 and
    must be smaller than the window; ``strides`` default to the window.
    """

    def __init__(
        self,
        mode: str = "max",
        window: Sequence[int] = (2, 2),
        pads: Sequence[int] | None = None,
        strides: Sequence[int] | None = None,
        *,
        nan_propagation: bool = False,
    ) -> None:
        warn_deprecated_once("pycudnn.PoolingDescriptor", "the graph API (pycudnn.Graph)")
        m = _choice(mode, "mode", _POOLING_MODES)
        w = _ints(window, "window", minimum=1)
        if not 1 <= len(w) <= _MAX_RANK - 2:
            raise ValueError(f"window has {len(w)} entries: give one per spatial dim (1 to 6)")
        p = _ints(pads, "pads", minimum=0) if pads is not None else (0,) * len(w)
        s = _ints(strides, "strides", minimum=1) if strides is not None else w
        for name, values in (("pads", p), ("strides", s)):
            if len(values) != len(w):
                raise ValueError(f"{name} has {len(values)} entries but window has {len(w)}")
        for i, (pi, wi) in enumerate(zip(p, w, strict=True)):
            if pi >= wi:
                raise ValueError(
                    f"pads[{i}] = {pi} must be smaller than window[{i}] = {wi}: a window lying "
                    "entirely in the padding has nothing to pool"
                )
        nan = _nan_opt(nan_propagation)
        self._make(
            ("cudnnSetPoolingNdDescriptor", m, nan, len(w), _c_ints(w), _c_ints(p), _c_ints(s))
        )
        self._key = (m, nan, w, p, s)

    def _read_back(self) -> tuple[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        mode, nan, n = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        w, p, s = (ctypes.c_int * 6)(), (ctypes.c_int * 6)(), (ctypes.c_int * 6)()
        self._query("cudnnGetPoolingNdDescriptor", 6, mode, nan, n, w, p, s)
        k = n.value
        return mode.value, nan.value, tuple(w[:k]), tuple(p[:k]), tuple(s[:k])

    @property
    def mode(self) -> str:
        value = self._read_back()[0]
        return (
            "avg_include_padding"
            if value == _POOLING_MODES["avg"]
            else _name_of(value, _POOLING_MODES)
        )

    window = read_back[tuple[int, ...]](2)
    pads = read_back[tuple[int, ...]](3)
    strides = read_back[tuple[int, ...]](4)

    @property
    def spatial_dims(self) -> int:
        self._check_open()
        return len(self._key[2])

    def output_dims(self, x_desc: TensorDescriptor) -> tuple[int, ...]:
        """Dims of the pooled tensor (``cudnnGetPoolingNdForwardOutputDim``)."""
        if not isinstance(x_desc, TensorDescriptor):
            raise TypeError(f"x_desc must be a TensorDescriptor, got {type(x_desc).__name__}")
        self._check_open()
        x_desc._check_open()
        xd = x_desc._dims
        k = len(self._key[2])
        if len(xd) != k + 2:
            raise ValueError(f"a {k}-D pooling window needs a {k + 2}-D x, got dims {xd}")
        for i in range(k):
            _check_padded_extent(xd[2 + i], self._key[3][i], i)
            if self._key[2][i] > xd[2 + i] + 2 * self._key[3][i]:
                raise ValueError(
                    f"window[{i}] = {self._key[2][i]} exceeds the padded input extent "
                    f"{xd[2 + i] + 2 * self._key[3][i]}"
                )
        out = (ctypes.c_int * len(xd))()
        self._query("cudnnGetPoolingNdForwardOutputDim", x_desc, len(xd), out)
        return tuple(out)

    def _describe(self) -> str:
        m, _nan, w, p, s = self._key
        return f"{_name_of(m, _POOLING_MODES)} window={w} pads={p} strides={s}"
