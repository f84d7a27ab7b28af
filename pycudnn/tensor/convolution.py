"""The legacy convolution descriptor (``cudnnConvolutionDescriptor_t``) and its operand checks."""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from _nvbind.dtypes import dtype_name
from _nvbind.strides import packed_strides_in_order

from .. import _bindings as _b
from ._common import (
    _MAX_RANK,
    _TENSOR_CORE_ALIGNMENT,
    LegacyDescriptor,
    TensorCoreWarning,
    _c_ints,
    _check_padded_extent,
    _choice,
    _compute_type,
    _dtype_of_value,
    _enum_names,
    _int,
    _ints,
    _name_of,
    read_back,
    warn_deprecated_once,
)
from .descriptor import TensorDescriptor
from .filter import FilterDescriptor, channels_last_perm

_CONV_MODES = {
    "cross_correlation": int(_b.CUDNN_CROSS_CORRELATION),
    "convolution": int(_b.CUDNN_CONVOLUTION),
}
# "default", "tensor_op", "tensor_op_allow_conversion", "fma"
_MATH_TYPES = _enum_names(_b.cudnnMathType_t, drop="_MATH")
_TENSOR_OP_MATH = {_MATH_TYPES["tensor_op"], _MATH_TYPES["tensor_op_allow_conversion"]}
_CONV_COMPUTE_TYPES = ("float32", "float64", "float16", "bfloat16", "int32")


class ConvolutionDescriptor(LegacyDescriptor, c_kind="Convolution"):
    """A legacy convolution descriptor (``cudnnConvolutionDescriptor_t``), deprecated in cuDNN 9.

    ``ConvolutionDescriptor(pads, strides=None, dilations=None, *, mode="cross_correlation",
    compute_type=np.float32, math_type="default", groups=1)`` over
    ``cudnnSetConvolutionNdDescriptor``, ``cudnnSetConvolutionMathType`` and
    ``cudnnSetConvolutionGroupCount``. One pad, stride and dilation per spatial dim (1 to 6);
    strides and dilations default to 1. ``mode="cross_correlation"`` is what deep-learning
    frameworks call convolution. ``math_type`` is one of ``"default"``, ``"tensor_op"``,
    ``"tensor_op_allow_conversion"``, ``"fma"`` (``cudnnMathType_t``).
    """

    def __init__(
        self,
        pads: Sequence[int],
        strides: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        *,
        mode: str = "cross_correlation",
        compute_type: Any = np.float32,
        math_type: str = "default",
        groups: int = 1,
    ) -> None:
        warn_deprecated_once("pycudnn.ConvolutionDescriptor", "the graph API (pycudnn.Graph)")
        p = _ints(pads, "pads", minimum=0)
        if not 1 <= len(p) <= _MAX_RANK - 2:
            raise ValueError(
                f"pads has {len(p)} entries: give one per spatial dim (1 to {_MAX_RANK - 2})"
            )
        s = _ints(strides, "strides", minimum=1) if strides is not None else (1,) * len(p)
        dl = _ints(dilations, "dilations", minimum=1) if dilations is not None else (1,) * len(p)
        for name, values in (("strides", s), ("dilations", dl)):
            if len(values) != len(p):
                raise ValueError(f"{name} has {len(values)} entries but pads has {len(p)}")
        conv_mode = _choice(mode, "mode", _CONV_MODES)
        ctype = _compute_type(compute_type, "compute_type", _CONV_COMPUTE_TYPES)
        math = _choice(math_type, "math_type", _MATH_TYPES)
        g = _int(groups, "groups", minimum=1)
        self._make(
            (
                "cudnnSetConvolutionNdDescriptor",
                len(p),
                _c_ints(p),
                _c_ints(s),
                _c_ints(dl),
                conv_mode,
                ctype,
            ),
            ("cudnnSetConvolutionMathType", math),
            ("cudnnSetConvolutionGroupCount", g),
        )
        self._spatial = len(p)
        self._key = (p, s, dl, conv_mode, ctype, math, g)

    def _read_back(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int, int]:
        n = ctypes.c_int()
        p, s, d = (ctypes.c_int * 6)(), (ctypes.c_int * 6)(), (ctypes.c_int * 6)()
        mode, ctype = ctypes.c_int(), ctypes.c_int()
        self._query("cudnnGetConvolutionNdDescriptor", 6, n, p, s, d, mode, ctype)
        k = n.value
        return tuple(p[:k]), tuple(s[:k]), tuple(d[:k]), mode.value, ctype.value

    @property
    def spatial_dims(self) -> int:
        """Number of spatial dimensions (2 or 3)."""
        self._check_open()
        return self._spatial

    pads = read_back[tuple[int, ...]](
        0, """Padding per spatial dimension (read back with ``cudnnGetConvolutionNdDescriptor``)."""
    )
    strides = read_back[tuple[int, ...]](
        1, """Filter strides per spatial dimension (``cudnnGetConvolutionNdDescriptor``)."""
    )
    dilations = read_back[tuple[int, ...]](
        2, """Dilations per spatial dimension (``cudnnGetConvolutionNdDescriptor``)."""
    )
    mode = read_back[str](
        3,
        """ "convolution" or "cross_correlation" (``cudnnGetConvolutionNdDescriptor``).""",
        convert=lambda v: _name_of(v, _CONV_MODES),
    )
    compute_type = read_back[np.dtype](
        4,
        """The accumulation dtype (``cudnnGetConvolutionNdDescriptor``'s computeType).""",
        convert=_dtype_of_value,
    )

    @property
    def math_type(self) -> str:
        """``cudnnGetConvolutionMathType`` as a name (``"default"``, ``"tensor_op"``, ...)."""
        return _name_of(self._query_value("cudnnGetConvolutionMathType"), _MATH_TYPES)

    @property
    def groups(self) -> int:
        """``cudnnGetConvolutionGroupCount``."""
        return int(self._query_value("cudnnGetConvolutionGroupCount"))

    @property
    def uses_tensor_ops(self) -> bool:
        """Whether the math type allows Tensor Core math (``cudnnSetConvolutionMathType``)."""
        self._check_open()
        return self._key[5] in _TENSOR_OP_MATH

    def key(self) -> tuple[Any, ...]:
        """A hashable tuple of every setting (equal keys describe the same convolution)."""
        return super().key()

    def _check_operands(self, x_desc: TensorDescriptor, w_desc: FilterDescriptor) -> None:
        if not isinstance(x_desc, TensorDescriptor):
            raise TypeError(f"x_desc must be a TensorDescriptor, got {type(x_desc).__name__}")
        if not isinstance(w_desc, FilterDescriptor):
            raise TypeError(f"w_desc must be a FilterDescriptor, got {type(w_desc).__name__}")
        self._check_open()
        x_desc._check_open()
        w_desc._check_open()
        xd, wd = x_desc._dims, w_desc._dims
        if len(xd) != self._spatial + 2 or len(wd) != self._spatial + 2:
            raise ValueError(
                f"a convolution with {self._spatial} spatial dims needs {self._spatial + 2}-D x and "
                f"w, got x dims {xd} and w dims {wd}"
            )
        pads, _strides, dils, _mode, _ct, _math, groups = self._key
        if xd[1] != wd[1] * groups:
            raise ValueError(
                f"x has C = {xd[1]} channels but w expects {wd[1]} per group x {groups} groups "
                f"= {wd[1] * groups}"
            )
        if wd[0] % groups:
            raise ValueError(
                f"w has K = {wd[0]} output channels, not a multiple of groups = {groups}"
            )
        for i in range(self._spatial):
            _check_padded_extent(xd[2 + i], pads[i], i)
            extent = dils[i] * (wd[2 + i] - 1) + 1
            if extent > xd[2 + i] + 2 * pads[i]:
                raise ValueError(
                    f"spatial dim {i}: the dilated filter spans {extent} but the padded input has "
                    f"only {xd[2 + i] + 2 * pads[i]} (x extent {xd[2 + i]}, pad {pads[i]})"
                )

    def output_dims(self, x_desc: TensorDescriptor, w_desc: FilterDescriptor) -> tuple[int, ...]:
        """Dims of the output tensor (``cudnnGetConvolutionNdForwardOutputDim``).

        With tensor-op math requested, also checks the Tensor Core guidelines that concern the
        layouts (see :meth:`tensor_core_issues`) and emits a :class:`TensorCoreWarning`.
        """
        dims = self._output_dims(x_desc, w_desc)
        if self.uses_tensor_ops:
            self.warn_tensor_cores(x_desc, w_desc, stacklevel=2)
        return dims

    def _output_dims(self, x_desc: TensorDescriptor, w_desc: FilterDescriptor) -> tuple[int, ...]:
        self._check_operands(x_desc, w_desc)
        n = len(x_desc._dims)
        out = (ctypes.c_int * n)()
        self._query("cudnnGetConvolutionNdForwardOutputDim", x_desc, w_desc, n, out)
        return tuple(out)

    def tensor_core_issues(
        self,
        x_desc: TensorDescriptor,
        w_desc: FilterDescriptor,
        pointers: Sequence[tuple[str, int]] = (),
    ) -> list[str]:
        """The Tensor Core guidelines of cuDNN's core concepts that this convolution breaks.

        The guidelines: inputs and filters in NHWC; channels and batch size multiples of 8; every
        buffer (named ``pointers``) aligned to 128 bits. cuDNN then falls back to non-Tensor-Core
        kernels ("scalar paths ... legitimate fallbacks"), so these cost speed, not correctness.
        """
        self._check_operands(x_desc, w_desc)
        issues = []
        xd, xs = x_desc._dims, x_desc._strides
        perm = channels_last_perm(len(xd))
        if x_desc._vector is None and xs != packed_strides_in_order(xd, perm):
            issues.append(f"x is not packed channels-last (NHWC); its strides are {xs}")
        if not w_desc._channels_last and w_desc._vector is None:
            # NC/xHWx filters are the layout cuDNN's IMMA kernels take; only plain ones can miss.
            issues.append("w is not in NHWC (KRSC) format")
        groups = self._key[6]
        for what, value in (
            ("the batch size N", xd[0]),
            ("the input channels per group C", w_desc._dims[1]),
            ("the output channels K", w_desc._dims[0] // groups),
        ):
            if value % 8:
                issues.append(f"{what} = {value} is not a multiple of 8")
        for name, ptr in pointers:
            if ptr % _TENSOR_CORE_ALIGNMENT:
                issues.append(f"{name} at 0x{ptr:x} is not aligned to 128 bits (16 bytes)")
        return issues

    def warn_tensor_cores(
        self,
        x_desc: TensorDescriptor,
        w_desc: FilterDescriptor,
        pointers: Sequence[tuple[str, int]] = (),
        *,
        stacklevel: int = 1,
    ) -> list[str]:
        """Emit one :class:`TensorCoreWarning` listing :meth:`tensor_core_issues`, if any.

        ``stacklevel`` counts from the caller of this method (1: the warning names the caller).
        """
        issues = self.tensor_core_issues(x_desc, w_desc, pointers)
        if issues:
            warnings.warn(
                f"math_type={_name_of(self._key[5], _MATH_TYPES)!r} asks for Tensor Cores, but "
                + "; ".join(issues)
                + " (cuDNN's Tensor Core guidelines); cuDNN may fall back to slower kernels",
                TensorCoreWarning,
                stacklevel=stacklevel + 1,
            )
        return issues

    def _describe(self) -> str:
        p, s, d, mode, ctype, math_type, g = self._key
        return (
            f"pads={p} strides={s} dilations={d} mode={_name_of(mode, _CONV_MODES)} "
            f"compute={dtype_name(_dtype_of_value(ctype))} math={_name_of(math_type, _MATH_TYPES)} "
            f"groups={g}"
        )
