"""A workspace from the per-thread pool is refused while the stream is being captured (CPU tier).

A captured graph keeps the addresses its launches used; the pool hands the same workspace to later
launches on that thread and stream and frees it when a larger one is asked for, so a graph that
recorded it would write memory something else owns on replay. ``cuStreamIsCapturing`` needs a
GPU to answer anything but an error; here a ctypes function of its signature stands in for the
driver's answer (nothing else is replaced: the plan is built by cuDNN, the launch is the
recorder of ``standins``). The same with a real capture is in ``test_capture_workspace_gpu.py``.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np
import pytest
from standins import BASE, stand_in_handle
from standins import fake_device_array as fake

import pycudnn
from _nvbind import capture, memory
from _nvbind.cuda import DriverStatus, driver_status
from pycudnn.deviceprops import DeviceProperties

_USABLE = DriverStatus(True, 12080, 0, 1, (), "")
_PROTO = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int))


def _driver_answering(monkeypatch: pytest.MonkeyPatch, status: int, state: int) -> list[Any]:
    """Make ``cuStreamIsCapturing`` answer ``(status, state)``; returns the streams it is asked
    about."""
    asked: list[Any] = []

    def answer(stream: Any, out: Any) -> int:
        asked.append(stream)
        out[0] = state
        return status

    fn = _PROTO(answer)
    monkeypatch.setattr(capture, "_is_capturing", lambda: fn)
    monkeypatch.setattr(capture, "driver_status", lambda: _USABLE)  # the GPU the answer implies
    return asked


def test_without_a_context_the_state_is_unknown() -> None:
    if driver_status().usable:
        pytest.skip("a GPU is usable here: the GPU tests check the real states")
    if capture._is_capturing() is None:
        pytest.skip("libcuda.so.1 is not installed")
    assert capture.capture_state(None) == "unknown"
    assert capture.capture_state(0) == "unknown"


@pytest.mark.parametrize(
    ("status", "state", "expected"),
    [(0, 0, "none"), (0, 1, "active"), (0, 2, "invalidated"), (906, 0, "implicit"),
     (3, 0, "unknown"), (0, 7, "unknown")],
)  # fmt: skip
def test_the_drivers_answers_are_named(
    monkeypatch: pytest.MonkeyPatch, status: int, state: int, expected: str
) -> None:
    asked = _driver_answering(monkeypatch, status, state)
    assert capture.capture_state(0x5000) == expected
    assert capture.capture_state(None) == expected
    assert asked == [0x5000, 1]  # a stream as given; None is CU_STREAM_LEGACY


class _Stream:
    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


@pytest.mark.parametrize("state", [1, 2])
def test_the_pool_refuses_a_capturing_stream(monkeypatch: pytest.MonkeyPatch, state: int) -> None:
    asked = _driver_answering(monkeypatch, 0, state)
    with pytest.raises(capture.GraphCaptureError, match="Pass workspace="):
        memory.workspace(4096, stream=_Stream(0x5000))
    assert asked == [0x5000]
    assert memory.workspace(0, stream=_Stream(0x5000)) == 0  # nothing to hand out: no question


def test_the_error_is_each_packages_graph_capture_error() -> None:
    import pycutensor.errors

    assert pycudnn.errors.GraphCaptureError is capture.GraphCaptureError
    assert pycutensor.errors.GraphCaptureError is capture.GraphCaptureError


@pytest.fixture
def workspace_plan(deviceprops_json: dict[str, Any]) -> Any:
    """A conv plan that needs a workspace (built by cuDNN for the committed properties), its
    launch a recorder on a handle stand-in: ``(plan, arrays, launches)``."""
    props = DeviceProperties.from_json(deviceprops_json)
    g = pycudnn.Graph("capture_ws")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1)
    plans = g.build_all(device_properties=props)
    plan = next((p for p in plans if p.workspace_size), None)
    for p in plans:
        if p is not plan:
            p.close()
    if plan is None:
        pytest.skip("no engine of this cuDNN needs a workspace for the conv")
    launches: list[Any] = []
    plan._exec = lambda handle, plan_ptr, vpack: launches.append(vpack.value) or 0
    plan._handles[threading.get_ident()] = stand_in_handle()
    arrays = {
        t: fake(tuple(t.dims), np.float16, ptr=BASE + i * 0x10_0000, strides=t.strides)
        for i, t in enumerate((x, w, y))
    }
    yield plan, arrays, launches
    plan.close()


def test_a_plan_executed_in_a_capture_needs_its_workspace_given(
    monkeypatch: pytest.MonkeyPatch, workspace_plan: Any
) -> None:
    plan, arrays, launches = workspace_plan
    _driver_answering(monkeypatch, 0, 1)  # the handle's stream (legacy) is being captured
    with pytest.raises(pycudnn.errors.GraphCaptureError, match="workspace="):
        plan.execute(arrays)
    assert not launches  # refused before anything reached cuDNN
    ws = fake((plan.workspace_size,), np.uint8, ptr=BASE + 0x40_0000)
    plan.execute(arrays, workspace=ws)  # given: the graph keeps memory the caller owns
    assert len(launches) == 1


def test_an_einsum_in_a_capture_is_told_what_it_can_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """einsum takes its intermediates and workspace from the pool, and has no workspace=: the
    refusal told it to pass one (einsum(..., workspace=...) is a TypeError)."""
    from types import SimpleNamespace

    from pycutensor._einsum_build import _Program

    _driver_answering(monkeypatch, 0, 1)
    program = _Program()  # a two-step einsum's: an intermediate in the pool's block
    program.block = 4096
    program.steps = [SimpleNamespace(plan=SimpleNamespace(scalar_dtype=np.dtype(np.float32)))]
    with pytest.raises(capture.GraphCaptureError, match=r"pycutensor\.einsum"):
        program.run([BASE], BASE + 0x1000, 1.0, 0.0, 0x5000)
