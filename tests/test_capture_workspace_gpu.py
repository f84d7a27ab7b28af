"""``plan.execute`` inside a stream capture (GPU tier: ``pytest -m gpu``): without ``workspace=``
it is refused before anything is recorded (the pool's workspace would be reused and freed while
the graph still points at it); with one, the captured graph replays the plan's result.
The refusal's logic with a stand-in for the driver's answer: ``test_capture_workspace.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pycudnn
from _nvbind.capture import GraphCaptureError, capture_state

pytestmark = pytest.mark.gpu


def _ok(result: Any) -> Any:
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert int(err) == 0, f"CUDA driver error {err}"
    return rest[0] if len(rest) == 1 else (rest or None)


def test_execute_in_a_capture_needs_its_workspace_given() -> None:
    from cuda.bindings import driver

    from _nvbind.device_array import DeviceArray

    g = pycudnn.Graph("capture_ws_gpu")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1)
    plans = g.build_all()
    plan = next((p for p in plans if p.workspace_size), None)
    if plan is None:
        pytest.skip("no engine of this cuDNN needs a workspace for the conv on this GPU")
    rng = np.random.default_rng(11)
    xs = {t: rng.standard_normal(t.dims).astype(np.float16) for t in (x, w)}
    # NHWC in memory, as the tensors were described: from_numpy keeps a view's strides
    nhwc = {t: np.ascontiguousarray(v.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
            for t, v in xs.items()}  # fmt: skip
    arrays = {t: DeviceArray.from_numpy(v) for t, v in nhwc.items()}
    g.key()  # resolves y's dtype and strides
    out = DeviceArray.empty(y.dims, np.float16, strides=y.strides)
    stream = int(_ok(driver.cuStreamCreate(int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING))))
    tensors = {**arrays, y: out}
    plan.execute(tensors, stream=stream)  # outside a capture: the pool's workspace is fine
    _ok(driver.cuStreamSynchronize(stream))
    want = out.to_numpy()

    workspace = DeviceArray.empty((plan.workspace_size,), np.uint8)
    relaxed = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
    _ok(driver.cuStreamBeginCapture(stream, relaxed))
    try:
        assert capture_state(stream) == "active"
        with pytest.raises(GraphCaptureError, match="workspace="):
            plan.execute(tensors, stream=stream)
        plan.execute(tensors, stream=stream, workspace=workspace)
    finally:
        graph = _ok(driver.cuStreamEndCapture(stream))
    assert capture_state(stream) == "none"
    exe = _ok(driver.cuGraphInstantiate(graph, 0))
    out.copy_from_numpy(np.zeros(out.shape, np.float16))
    _ok(driver.cuGraphLaunch(exe, stream))
    _ok(driver.cuStreamSynchronize(stream))
    np.testing.assert_array_equal(out.to_numpy(), want)  # the same engine on the same inputs
    _ok(driver.cuGraphExecDestroy(exe))
    _ok(driver.cuGraphDestroy(graph))
    _ok(driver.cuStreamDestroy(stream))
    for p in plans:
        p.close()
