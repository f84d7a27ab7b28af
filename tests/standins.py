"""Stand-ins for the CPU tier: DeviceArrays around made-up device addresses (nothing reads their
memory) and a cuDNN Handle object that never held a real ``cudnnHandle_t`` (cudnnCreate needs a
GPU) and is never passed to C."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

import pycudnn
from _nvbind.device_array import DeviceArray
from _nvbind.resource import CResource
from _nvbind.strides import c_strides
from pycudnn import layout
from pycudnn.deviceprops import DeviceProperties
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
    ``DeviceArray._init``."""
    if strides is None:
        strides = layout.packed_strides(shape, fmt) if fmt else c_strides(shape)
    if ptr is None:
        _next[0] += 0x10_0000
        ptr = _next[0]
    return DeviceArray.__new__(DeviceArray)._init(
        None, ptr, tuple(shape), tuple(strides), np.dtype(dtype), 0, **kw
    )


def stand_in_handle(device: Any = None, *, several_devices: bool = False) -> Handle:
    """An open Handle on device 0 and the legacy default stream whose pointer (0x1000) never
    reaches C; ``device`` stands for its CUDA device (``None``: nothing may make it current),
    ``several_devices`` says whether the machine has more than one (see Handle.activate)."""
    h = Handle.__new__(Handle)
    CResource.__init__(h, 0x1000, None, owned=False)  # never reaches C
    h.device_id, h._device, h._stream_obj, h._stream_ptr = 0, device, None, 0
    h._several_devices = several_devices
    return h


class RecordedDevice:
    """Stands for a handle's cuda.core Device: appends "set_current" to ``events`` each time it is
    made current (see :func:`stand_in_handle`)."""

    device_id = 0

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def set_current(self) -> None:
        self.events.append("set_current")


def recording_conv_plan(deviceprops_json: dict[str, Any], name: str) -> tuple[Any, ...]:
    """A 3x3 conv plan built by cuDNN for the committed device properties, whose launch
    (``cudnnBackendExecute``, which needs a GPU) is a recorder, on a :func:`stand_in_handle`:
    ``(plan, arrays, workspace, launches, (x, w, y))``, the arrays stand-ins at made-up
    addresses and ``launches`` the variant pack of each launch. The caller closes the plan."""
    props = DeviceProperties.from_json(deviceprops_json)
    g = pycudnn.Graph(name)
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1, name="conv")
    plan = g.build(device_properties=props, cache=False)
    launches: list[Any] = []

    def launch(handle: Any, plan_ptr: Any, vpack: Any) -> int:  # cudnnBackendExecute needs a GPU
        launches.append(vpack.value)
        return 0

    plan._exec = launch
    plan._handles[threading.get_ident()] = stand_in_handle()
    ws = fake_device_array((max(plan.workspace_size, 1),), np.uint8, ptr=BASE + 0x30_0000)
    arrays = {
        t: fake_device_array(tuple(t.dims), np.float16, ptr=BASE + i * 0x10_0000, strides=t.strides)
        for i, t in enumerate((x, w, y))
    }
    return plan, arrays, ws, launches, (x, w, y)


class ShiftingStream:
    """A ``__cuda_stream__`` object that answers another handle each time it is asked (0x1000,
    0x2000, ...): a caller must read it once and use that handle throughout."""

    calls = 0

    def __cuda_stream__(self) -> tuple[int, int]:
        self.calls += 1
        return (0, 0x1000 * self.calls)


def record_set_stream(monkeypatch: Any) -> list[int]:
    """Replace ``cudnnSetStream`` (it needs a handle, which needs a GPU) with a recorder of the
    stream handles it is given; returns them."""
    from pycudnn import handle as handle_module

    set_on: list[int] = []

    class SetStream:
        def run(self, function: Any, handle: Any, ptr: int) -> int:
            set_on.append(ptr)
            return 0

    monkeypatch.setattr(handle_module, "_SET_STREAM", SetStream())
    return set_on
