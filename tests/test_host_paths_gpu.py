"""GPU tier: the type-specific reads of CuPy arrays and PyTorch tensors give exactly what the
general path (DLPack / CAI through cuda.core) gives, and defer to it when the array's library is
on another stream than the consumer (the protocol then orders the two streams)."""

from __future__ import annotations

import pytest

from _nvbind.arrays import _READERS, array_view, as_array_view

pytestmark = pytest.mark.gpu


def _same(obj: object, stream_ptr: int | None) -> None:
    fast = array_view(obj, "a", stream_ptr)
    general = as_array_view(obj, name="a", stream_ptr=stream_ptr)
    assert fast[:6] == general[:6]
    assert _READERS[type(obj)](obj, -1 if stream_ptr is None else stream_ptr) is not None


def test_cupy_fast_read_is_the_general_read(gpu_device: int) -> None:
    cupy = pytest.importorskip("cupy")
    base = cupy.arange(2 * 3 * 4, dtype=cupy.float32).reshape(2, 3, 4)
    for a in (base, base.transpose(2, 0, 1), base[:, ::2], base.astype(cupy.float16),
              base.astype(cupy.complex64), cupy.zeros((1, 5, 1), cupy.float64)):  # fmt: skip
        for stream_ptr in (None, 0):
            _same(a, stream_ptr)


def test_cupy_on_another_stream_goes_through_the_protocol(gpu_device: int) -> None:
    cupy = pytest.importorskip("cupy")
    a = cupy.ones((4, 4), cupy.float32)
    array_view(a, "a", 0)  # the reader is chosen
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        assert _READERS[type(a)](a, 0) is None  # CuPy's current stream is not the consumer's
        assert array_view(a, "a", 0)[:6] == as_array_view(a, name="a", stream_ptr=0)[:6]
        assert _READERS[type(a)](a, s.ptr) is not None


def test_torch_fast_read_is_the_general_read(gpu_device: int) -> None:
    torch = pytest.importorskip("torch")
    base = torch.arange(24, dtype=torch.float32, device="cuda").reshape(2, 3, 4)
    for t in (base, base.permute(2, 0, 1), base[:, ::2], base.half(), base.bfloat16(),
              base.to(torch.complex64), torch.zeros((1, 5, 1), dtype=torch.float64,
              device="cuda").contiguous(memory_format=torch.contiguous_format)):  # fmt: skip
        for stream_ptr in (None, 0):
            _same(t, stream_ptr)


def test_torch_cases_the_protocol_refuses_stay_refused(gpu_device: int) -> None:
    torch = pytest.importorskip("torch")
    t = torch.ones(4, device="cuda", requires_grad=True)
    array_view(torch.ones(4, device="cuda"), "t", 0)  # the reader is chosen
    assert _READERS[torch.Tensor](t, 0) is None
    with pytest.raises(Exception):  # noqa: B017 - torch's own error, whichever it is
        as_array_view(t, name="t", stream_ptr=0)


def test_torch_on_another_stream_goes_through_the_protocol(gpu_device: int) -> None:
    torch = pytest.importorskip("torch")
    t = torch.ones((4, 4), device="cuda")
    array_view(t, "t", 0)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert _READERS[torch.Tensor](t, 0) is None
        assert _READERS[torch.Tensor](t, s.cuda_stream) is not None
        assert array_view(t, "t", 0)[:6] == as_array_view(t, name="t", stream_ptr=0)[:6]


def test_plan_execute_checks_an_address_reused_with_another_layout(gpu_device: int) -> None:
    """A pooled address reused by an array of another layout is checked again, never executed."""
    cupy = pytest.importorskip("cupy")
    import pycudnn

    g = pycudnn.Graph("reuse")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1, name="conv")
    plan = g.build(cache=False)
    xd = cupy.zeros((1, 16, 16, 32), cupy.float16).transpose(0, 3, 1, 2)
    wd = cupy.zeros((32, 3, 3, 32), cupy.float16).transpose(0, 3, 1, 2)
    yd = cupy.ones((1, 16, 16, 32), cupy.float16).transpose(0, 3, 1, 2)
    plan.execute({x: xd, w: wd, y: yd})
    cupy.cuda.Device().synchronize()
    assert float(abs(yd).max()) == 0.0  # zeros convolved
    nchw = cupy.ndarray((1, 32, 16, 16), cupy.float16, memptr=xd.data)  # same address
    with pytest.raises(ValueError, match="strides"):
        plan.execute({x: nchw, w: wd, y: yd})


def test_einsum_on_cupy_arrays_made_on_another_stream(gpu_device: int) -> None:
    """CuPy's current stream is not the one einsum runs on: the reader declines, the protocol
    orders CuPy's stream before ours, and the result is the one of the finished inputs."""
    cupy = pytest.importorskip("cupy")
    import numpy as np

    import pycutensor

    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a = cupy.random.random((512, 512), dtype=cupy.float32)
        b = cupy.random.random((512, 512), dtype=cupy.float32)
        array_view(a, "a", 0)  # the reader for CuPy arrays is chosen
        assert _READERS[type(a)](a, 0) is None  # and declines: CuPy is on another stream
        out = pycutensor.einsum("ij,jk->ik", a, b, stream=0)
    cupy.cuda.Device().synchronize()
    want = cupy.asnumpy(a).astype(np.float64) @ cupy.asnumpy(b).astype(np.float64)
    np.testing.assert_allclose(cupy.asnumpy(out), want, rtol=1e-3)


def test_a_device_array_on_another_stream_orders_its_allocation_stream(gpu_device: int) -> None:
    import numpy as np
    from cuda.core import Device

    from _nvbind.device_array import DeviceArray

    dev = Device(gpu_device)
    dev.set_current()
    made_on, used_on = dev.create_stream(), dev.create_stream()
    host = np.arange(64, dtype=np.float32)
    a = DeviceArray.from_numpy(host, stream=made_on)
    consumer = int(used_on.handle)
    assert array_view(a, "a", consumer)[:6] == as_array_view(a, name="a")[:6]
    assert a._ordered_for == consumer  # the wait was enqueued (cuStreamWaitEvent) without error
    used_on.sync()
    np.testing.assert_array_equal(a.to_numpy(stream=used_on), host)
