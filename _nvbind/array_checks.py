"""Argument checks of :class:`~pycudnn.DeviceArray`: shapes, dtypes, strides, layouts, devices.

Each raises before any memory is touched, naming the argument and the rule. Pure Python, except
:func:`_device_or_raise`, which asks ``cuda.core`` for the device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .cuda import driver_status, get_device
from .dtypes import as_numpy_dtype
from .strides import c_strides as _c_strides
from .strides import overlapping

_MAX_NDIM = 32
_INT64_MAX = 2**63 - 1  # DLPack, the CUDA array interface and NumPy hold extents in int64


# -- validation helpers ----------------------------------------------------------------------


def _check_shape(shape: Any, name: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(shape).__name__}")
    out = []
    for i, n in enumerate(shape):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{name}[{i}] must be an int, got {type(n).__name__} {n!r}")
        if n < 0:
            raise ValueError(f"{name}[{i}] = {n}: extents must be non-negative")
        if n > _INT64_MAX:  # a zero stride lets such an extent fit any buffer
            raise ValueError(f"{name}[{i}] = {n}: extents must fit in int64 (<= 2**63 - 1)")
        out.append(int(n))
    if len(out) > _MAX_NDIM:
        raise ValueError(f"{name} has {len(out)} dims; at most {_MAX_NDIM} are supported")
    return tuple(out)


def _check_dtype(dtype: Any) -> np.dtype:
    dt = as_numpy_dtype(dtype)
    if dt.hasobject or dt.fields is not None or dt.subdtype is not None or dt.itemsize == 0:
        raise TypeError(
            f"dtype {dt} cannot live in device memory: use a numeric, bool or ml_dtypes type"
        )
    if dt.byteorder == ">":
        raise TypeError(f"dtype {dt} is big-endian; GPUs use little-endian data")
    return dt


def _check_strides(
    strides: Any, shape: tuple[int, ...], *, allow_negative: bool
) -> tuple[int, ...]:
    if isinstance(strides, (str, bytes)) or not isinstance(strides, Sequence):
        raise TypeError(f"strides must be a sequence of ints, got {type(strides).__name__}")
    if len(strides) != len(shape):
        raise ValueError(f"strides has {len(strides)} entries but shape has {len(shape)}")
    out = []
    for i, s in enumerate(strides):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"strides[{i}] must be an int, got {type(s).__name__} {s!r}")
        if s < 0 and not allow_negative:
            raise ValueError(f"strides[{i}] = {s}: negative strides are not supported here")
        if abs(s) > _INT64_MAX:
            raise ValueError(f"strides[{i}] = {s}: strides must fit in int64 (|s| <= 2**63 - 1)")
        out.append(int(s))
    return tuple(out)


def _overlaps(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    return math.prod(shape) > 1 and overlapping(shape, strides)


def _device_or_raise(device: Any, what: str) -> Any:
    """``cuda.core.Device`` for ``device``; without a usable GPU a RuntimeError that says why."""
    try:
        return get_device(device)
    except (TypeError, ValueError, ImportError):
        raise
    except Exception as exc:  # cuda.core's CUDAError, cuda.pathfinder's DynamicLibNotFoundError
        reason = driver_status().reason or f"{type(exc).__name__}: {exc}"
        raise RuntimeError(f"{what} needs a CUDA GPU, but none is usable: {reason}") from exc


def _same_stream(a: int, b: int) -> bool:
    # 0 (NULL) and 1 (CU_STREAM_LEGACY) both name the legacy default stream.
    return (a or 1) == (b or 1)


def _layout_strides(
    shape: tuple[int, ...], strides: Sequence[int] | None, fmt: str | None
) -> tuple[int, ...]:
    packed: tuple[int, ...] | None = None
    if fmt is not None:
        from .formats import layout

        if math.prod(shape) == 0:
            raise ValueError(f"fmt={fmt!r} needs positive extents, got shape {shape}")
        f = layout.parse_format(fmt)
        try:  # NC/1HW1 and NC/CHWC are NCHW and NHWC; other vector widths have no strides
            packed = layout.packed_strides(shape, f)
        except ValueError:
            if not f.is_vectorized:
                raise
            view_shape, _ = layout.vectorized_dims_strides(shape, f)
            raise ValueError(
                f"fmt {f.name!r} splits C into vectors and has no per-dim strides; allocate its "
                f"packed view instead: DeviceArray.empty({view_shape}, ...)"
            ) from None
    if strides is None:
        return packed if packed is not None else _c_strides(shape)
    st = _check_strides(strides, shape, allow_negative=False)
    if packed is not None and st != packed:
        raise ValueError(f"strides {st} disagree with fmt {fmt!r} (packed strides {packed})")
    return st
