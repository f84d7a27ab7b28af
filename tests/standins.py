"""Stand-ins for the CPU tier: DeviceArrays around made-up device addresses (nothing reads their
memory) and a cuDNN Handle object that never held a real ``cudnnHandle_t`` (cudnnCreate needs a
GPU) and is never passed to C."""

from __future__ import annotations

from typing import Any

import numpy as np

from _nvbind.device_array import DeviceArray
from _nvbind.resource import CResource
from _nvbind.strides import c_strides
from pycudnn import layout
from pycudnn.handle import Handle

BASE = 0x7F00_0000_0000
_next = [BASE]


def fake_device_array(
    shape: tuple[int, ...],
    dtype: Any = np.float32,
    fmt: str | None = None,
    *,
    ptr: int | None = None,
    strides: Any = None,
    **kw: Any,
) -> Any:
    """A DeviceArray on device 0 at ``ptr`` (default: a fresh made-up address), with ``strides``
    or else packed in layout ``fmt`` (default C order); ``kw`` (``readonly=True``, say) goes to
    ``DeviceArray._new``."""
    if strides is None:
        strides = layout.packed_strides(shape, fmt) if fmt else c_strides(shape)
    if ptr is None:
        _next[0] += 0x10_0000
        ptr = _next[0]
    return DeviceArray._new(None, ptr, tuple(shape), tuple(strides), np.dtype(dtype), 0, **kw)


def stand_in_handle(device: Any = None) -> Handle:
    """An open Handle on device 0 and the legacy default stream whose pointer (0x1000) never
    reaches C; ``device`` stands for its CUDA device (``None``: nothing may make it current)."""
    h = Handle.__new__(Handle)
    CResource.__init__(h, 0x1000, None, owned=False)  # never reaches C
    h.device_id, h._device, h._stream_obj, h._stream_ptr = 0, device, None, 0
    return h
