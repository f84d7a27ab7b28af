"""The execute paths' per-call reading of arrays (CPU tier).

``array_view`` (the execute paths' reader) must give exactly what ``as_array_view`` (the general
path) gives, and ``Plan.execute`` must check again any array whose description changed at an
address it has seen (a pooled allocator reuses addresses). The arrays here are DeviceArrays around
made-up device addresses: nothing reads their memory. The plan is built by cuDNN for the committed
H100 device properties and its variant packs by cuDNN; only the launch itself
(``cudnnBackendExecute``, which needs a GPU) is replaced by a recorder, on a handle stand-in. The
same checks with real launches, CuPy and PyTorch are in ``test_host_paths_gpu.py``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from standins import BASE, recording_conv_plan
from standins import fake_device_array as fake

import pycudnn
from _nvbind.arrays import ArrayView, array_view, as_array_view
from _nvbind.device_array import DeviceArray
from _nvbind.strides import c_strides


def test_device_array_fast_read_is_the_general_read() -> None:
    for a in (
        fake((2, 3, 4), np.float32, ptr=BASE),
        fake((5, 7), np.float16, ptr=BASE + 256, strides=(1, 5)),
        fake((3,), np.complex64, ptr=BASE + 512, readonly=True),
    ):
        for stream_ptr in (None, 0, 0x1234):
            assert array_view(a, "a", stream_ptr) == as_array_view(
                a, name="a", stream_ptr=stream_ptr
            )


def test_other_types_take_the_general_read() -> None:
    host = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    assert array_view(host, "h") == as_array_view(host, name="h")

    class Duck:  # looks like a DeviceArray but is not one: the general path checks its answer
        def _array_view(self) -> Any:
            return "not a view"

    with pytest.raises(TypeError, match="returned str, not an ArrayView"):
        array_view(Duck(), "duck")
    with pytest.raises(TypeError, match="must be an array exposing DLPack"):
        array_view(object(), "thing")


def test_a_closed_device_array_is_refused_on_the_fast_read() -> None:
    a = fake((4,), np.float32, ptr=BASE)
    a._ptr = None  # what close() leaves
    with pytest.raises(ValueError, match="closed"):
        array_view(a, "a", 0)


@pytest.fixture
def conv_plan(deviceprops_json: dict[str, Any]) -> Any:
    plan, *rest = recording_conv_plan(deviceprops_json, "host_paths")
    yield plan, *rest
    plan.close()


def test_new_objects_with_the_same_description_reuse_the_pack(conv_plan: Any) -> None:
    plan, arrays, ws, launches, _ = conv_plan
    plan.execute(arrays, workspace=ws)
    again = {k: fake(v.shape, v.dtype, ptr=v.ptr, strides=v.strides) for k, v in arrays.items()}
    plan.execute(again, workspace=ws)
    assert plan.variant_pack_builds == 1
    assert len(launches) == 2 and launches[0] == launches[1]


def test_an_address_reused_with_another_layout_is_checked_again(conv_plan: Any) -> None:
    plan, arrays, ws, launches, (x, _w, y) = conv_plan
    plan.execute(arrays, workspace=ws)
    xd = arrays[x]
    nchw = c_strides(xd.shape)  # the same address and shape, NCHW instead of NHWC strides
    assert nchw != xd.strides
    with pytest.raises(ValueError, match="strides"):
        plan.execute(
            {**arrays, x: fake(xd.shape, xd.dtype, ptr=xd.ptr, strides=nchw)}, workspace=ws
        )
    with pytest.raises(TypeError, match="float32"):
        plan.execute(
            {**arrays, x: fake(xd.shape, np.float32, ptr=xd.ptr, strides=xd.strides)}, workspace=ws
        )
    yd = arrays[y]
    with pytest.raises(ValueError, match="read-only"):
        plan.execute(
            {**arrays, y: fake(yd.shape, yd.dtype, ptr=yd.ptr, strides=yd.strides, readonly=True)},
            workspace=ws,
        )
    assert len(launches) == 1  # none of the refused calls launched


def test_the_views_are_array_views() -> None:
    a = fake((2, 2), np.float32, ptr=BASE)
    v = array_view(a, "a", 0)
    # the view holds what holds the memory (here nothing: a made-up address), never the array:
    # array and view naming each other kept the memory until the cyclic collector ran
    assert isinstance(v, ArrayView) and v.owner is None


def test_einsum_reads_its_operands_as_the_general_path_does() -> None:
    from pycutensor._einsum import _inspect

    a = fake((4, 8), np.float32, ptr=BASE)
    b = fake((8, 2), np.float32, ptr=BASE + 0x1000, strides=(1, 8))
    c = fake((4, 2), np.float32, ptr=BASE + 0x2000)
    views, out_view, beta_zero, out_align, key = _inspect(
        "ij,jk->ik", (a, b), c, 0, None, 0.0, "greedy", None
    )
    assert views == [
        as_array_view(a, name="a", stream_ptr=0),
        as_array_view(b, name="b", stream_ptr=0),
    ]
    assert out_view == as_array_view(c, name="out", stream_ptr=0)
    assert beta_zero and out_align == 256
    # the program key holds every operand's layout: another layout is another program
    assert key[-1] == (((4, 8), (8, 1), np.dtype(np.float32), 256),
                       ((8, 2), (1, 8), np.dtype(np.float32), 256))  # fmt: skip
    with pytest.raises(ValueError, match="beta other than 0 scales out"):
        _inspect("ij,jk->ik", (a, b), None, 0, None, 2.0, "greedy", None)


class _RecordingPlan:
    """Stands in for a cuTENSOR plan's execute (which needs a GPU): records what it is given."""

    operation = None
    scalar_dtype = np.dtype(np.float32)

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def launch_unchecked(
        self, ptrs: Any, values: Any, stream_ptr: int, ws_ptr: int, ws_size: int
    ) -> None:
        self.calls.append((list(ptrs), [float(v) for v in values], stream_ptr, ws_ptr, ws_size))


def test_einsum_program_routes_pointers_and_scalars(monkeypatch: pytest.MonkeyPatch) -> None:
    """A two-step program (a contraction into an intermediate, then a permutation into out): each
    step gets the caller's operands, the intermediate's address in the block and the output, and
    alpha/beta/1/0 where its scalars say."""
    from pycutensor import _einsum_build

    block = 0x7F20_0000_0000
    monkeypatch.setattr(_einsum_build.memory, "workspace", lambda n, device, stream: block)
    first, second = _RecordingPlan(), _RecordingPlan()
    program = _einsum_build._Program()
    program.steps = [
        _einsum_build._Step([], first, [("in", 0), ("in", 1), ("tmp", 1), ("tmp", 1)],  # type: ignore[arg-type]
                            ("one", "zero")),
        _einsum_build._Step([], second, [("tmp", 1), ("out",)], ("alpha", "beta")),  # type: ignore[arg-type]
    ]  # fmt: skip
    program.tmp_offsets = [0, 4096]
    program.block, program.workspace_offset, program.workspace_size = 8192 + 512, 8192, 512
    a, b, out = BASE, BASE + 0x1000, BASE + 0x2000
    program.run([a, b], out, 2.5, 0.0, 0x55)
    assert first.calls == [
        ([a, b, block + 4096, block + 4096], [1.0, 0.0], 0x55, block + 8192, 512)
    ]
    assert second.calls == [([block + 4096, out], [2.5, 0.0], 0x55, block + 8192, 512)]


# -- by-value scalars, threads and workspaces on the execute path (found by a review) --------


def _scaled_plan(deviceprops_json: dict[str, Any]) -> Any:
    """``y = x * s`` with ``s`` a by-value scalar of value 2.0; the launch records the value the
    scalar's host buffer holds when cuDNN would read it."""
    import threading

    from standins import stand_in_handle

    from pycudnn.deviceprops import DeviceProperties

    g = pycudnn.Graph("scaled")
    x = g.tensor([1, 8, 16, 16], fmt="NHWC", dtype="float32", name="x")
    g.mul(x, g.scalar(2.0, name="s"), name="times")
    plan = g.build(device_properties=DeviceProperties.from_json(deviceprops_json), cache=False)
    slot = next(s for s in plan._slots if s.name == "s")
    seen: list[float] = []
    plan._exec = lambda *args: seen.append(float(slot.scalar[0])) or 0
    plan._handles[threading.get_ident()] = stand_in_handle()
    y = g["times.y"]
    arrays = {
        "x": fake((1, 8, 16, 16), np.float32, ptr=BASE, strides=x.strides),
        "times.y": fake((1, 8, 16, 16), np.float32, ptr=BASE + 0x10_0000, strides=y.strides),
    }
    return plan, arrays, seen


def test_a_scalar_given_to_one_execute_is_that_calls_only(deviceprops_json: dict[str, Any]) -> None:
    """The value was written into the plan's one buffer and kept: a later call that left it out
    ran with it (not the graph's, as documented), a refused call left its value behind, and
    to_json saved it as the graph's."""
    plan, arrays, seen = _scaled_plan(deviceprops_json)
    plan.execute({**arrays, "s": 5.0})
    plan.execute(arrays)
    with pytest.raises(ValueError, match="host memory"):
        plan.execute({**arrays, "x": np.zeros((1, 8, 16, 16), np.float32), "s": 9.0})
    plan.execute(arrays)
    assert seen == [5.0, 2.0, 2.0]
    assert '"2.0", "FLOAT"' in plan.to_json()
    plan.set_scalar("s", 3.0)  # the new default
    plan.execute(arrays)
    plan.execute_raw([BASE, None, BASE + 0x10_0000])
    assert seen[-2:] == [3.0, 3.0]
    plan.close()


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (1e40, ValueError, "1e.40 is out of the range of float32"),
        ("3", TypeError, "a by-value scalar is a real number, not '3'"),
        (2 + 1j, TypeError, "a by-value scalar is a real number"),
    ],
)
def test_a_scalar_numpy_would_convert_silently_is_refused(
    deviceprops_json: dict[str, Any], value: Any, error: Any, match: str
) -> None:
    plan, arrays, seen = _scaled_plan(deviceprops_json)
    with pytest.raises(error, match=match):
        plan.execute({**arrays, "s": value})
    with pytest.raises(error, match=match):
        plan.set_scalar("s", value)
    assert not seen
    plan.close()


def test_an_integer_scalar_takes_integers_in_its_range() -> None:
    from pycudnn.plan.slots import checked_scalar

    assert checked_scalar(7, np.int32, "k") == 7
    for bad in (2.7, True, 2**31):
        with pytest.raises(ValueError, match="tensor 'k': "):
            checked_scalar(bad, np.int32, "k")
    assert checked_scalar(float("-inf"), np.float32, "mask") == float("-inf")  # as given


def test_a_caller_workspace_is_checked_for_what_cudnn_writes(conv_plan: Any) -> None:
    plan, arrays, _, launches, _ = conv_plan
    n = max(plan.workspace_size, 16)
    with pytest.raises(ValueError, match="workspace is read-only"):
        plan.execute(arrays, workspace=fake((n,), np.uint8, ptr=BASE + 0x40_0000, readonly=True))
    reversed_view = fake((n,), np.uint8, ptr=BASE + 0x50_0000 + n - 1, strides=(-1,))
    with pytest.raises(ValueError, match="negative strides"):
        plan.execute(arrays, workspace=reversed_view)
    elsewhere = DeviceArray.__new__(DeviceArray)._init(
        None, BASE + 0x60_0000, (n,), (1,), np.dtype(np.uint8), 1
    )  # on device 1, the handle on device 0
    with pytest.raises(ValueError, match="workspace: the memory is on device 1"):
        plan.execute(arrays, workspace=elsewhere)
    assert not launches


def test_a_workspace_on_another_device_is_refused_when_given_again(conv_plan: Any) -> None:
    """The workspace's layout is checked once per layout (the same workspace comes every call),
    its device whenever a variant pack is built: a workspace on another device given again after
    a cuda.core Buffer came in between was taken for the Buffer's device, and ran."""
    plan, arrays, _, launches, _ = conv_plan
    n = max(plan.workspace_size, 16)
    elsewhere = DeviceArray.__new__(DeviceArray)._init(
        None, BASE + 0x60_0000, (n,), (1,), np.dtype(np.uint8), 1
    )  # on device 1, the handle on device 0
    buffer = SimpleNamespace(handle=BASE + 0x70_0000, size=n, device_id=0)  # a cuda.core Buffer
    with pytest.raises(ValueError, match="workspace: the memory is on device 1"):
        plan.execute(arrays, workspace=elsewhere)
    plan.execute(arrays, workspace=buffer)
    assert len(launches) == 1
    with pytest.raises(ValueError, match="workspace: the memory is on device 1"):
        plan.execute(arrays, workspace=elsewhere)
    assert len(launches) == 1


def test_a_plan_cache_shared_by_threads_gives_each_thread_its_own_plan(
    deviceprops_json: dict[str, Any],
) -> None:
    """Plans are not thread-safe; a PlanCache shared by threads handed both the same object."""
    import threading

    from pycudnn.deviceprops import DeviceProperties
    from pycudnn.plan import PlanCache

    props = DeviceProperties.from_json(deviceprops_json)
    g = pycudnn.Graph("shared")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1)
    cache = PlanCache()
    mine = g.build(device_properties=props, cache=cache)
    got: list[Any] = []
    worker = threading.Thread(
        target=lambda: got.append(g.build(device_properties=props, cache=cache))
    )
    worker.start()
    worker.join()
    assert got[0] is not mine and got[0].descriptor is mine.descriptor
    assert g.build(device_properties=props, cache=cache) is mine  # this thread's own


class _AllocationStream:
    """Stands in for the cuda.core Stream an array was allocated on (read only by the recorder)."""

    handle = 0x5000


def test_execute_orders_the_allocation_stream_before_its_own(
    conv_plan: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The execute paths read a DeviceArray without its protocols, and so without the stream
    ordering the protocols do: a stream other than the allocation's could use pool memory before
    work queued on the allocation stream was done. Each array now orders it, once per stream."""
    plan, arrays, ws, launches, (x, _w, _y) = conv_plan
    waits: list[tuple[int, int]] = []
    monkeypatch.setattr(
        DeviceArray, "_order_before", lambda self, consumer: waits.append((self.ptr, consumer))
    )
    arrays[x]._stream = _AllocationStream()  # the others have no allocation stream
    plan.execute(arrays, workspace=ws)  # on the handle's stream, the legacy one (0)
    plan.execute(arrays, workspace=ws)
    assert waits == [(arrays[x].ptr, 1)]  # once; 0 and 1 both name the legacy stream
    assert len(launches) == 2
    array_view(arrays[x], "x", 0x7000)  # another stream: ordered again
    as_array_view(arrays[x], stream_ptr=0x7000)  # the same stream: not again
    as_array_view(arrays[x])  # host-side inspection: no stream, nothing to order
    array_view(arrays[x], "x", None)
    assert waits == [(arrays[x].ptr, 1), (arrays[x].ptr, 0x7000)]


def test_execute_orders_a_given_workspaces_allocation_stream_before_its_own(
    conv_plan: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cuDNN writes the workspace on the execute's stream: a DeviceArray workspace allocated on
    another stream is ordered after its allocation as the tensors are (it was read with no
    stream, so a pooled workspace could be written before the allocation stream's work was done)."""
    plan, arrays, ws, launches, _ = conv_plan
    waits: list[tuple[int, int]] = []
    monkeypatch.setattr(
        DeviceArray, "_order_before", lambda self, consumer: waits.append((self.ptr, consumer))
    )
    ws._stream = _AllocationStream()
    plan.execute(arrays, workspace=ws)  # on the legacy stream (0)
    plan.execute(arrays, workspace=ws)
    assert waits == [(ws.ptr, 1)]  # once, as for the tensors
    assert len(launches) == 2


def test_execute_runs_on_the_stream_it_ordered_its_arrays_on(
    conv_plan: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """execute read the stream's handle to order the arrays, then Handle.use_stream read it
    again to set it on cuDNN: a __cuda_stream__ answering another stream the second time had
    cuDNN run on a stream the arrays were not ordered on."""
    from standins import ShiftingStream, record_set_stream

    plan, arrays, ws, launches, (x, _w, _y) = conv_plan
    waits: list[int] = []
    set_on = record_set_stream(monkeypatch)
    monkeypatch.setattr(DeviceArray, "_order_before", lambda self, c: waits.append(c))
    arrays[x]._stream = _AllocationStream()
    plan.execute(arrays, workspace=ws, stream=ShiftingStream())
    assert len(launches) == 1
    assert set_on == waits == [0x1000]


@pytest.mark.parametrize("several_devices", [False, True])
def test_execute_makes_the_handles_device_current_where_another_can_be(
    deviceprops_json: dict[str, Any], several_devices: bool
) -> None:
    """cuDNN launches in the thread's current context, not the handle's: on a machine with
    several GPUs, execute makes the handle's device current around cudnnBackendExecute (the
    driver's cuCtxGetDevice answers here that no context is current, so the device is made
    current); with one GPU it asks the driver nothing."""
    import threading

    from standins import RecordedDevice, stand_in_handle

    plan, arrays, ws, launches, _ = recording_conv_plan(deviceprops_json, "activate")
    events: list[str] = []
    handle = stand_in_handle(RecordedDevice(events), several_devices=several_devices)
    plan._handles[threading.get_ident()] = handle
    launch = plan._exec

    def recorded_launch(*args: Any) -> int:
        events.append("launch")
        return launch(*args)

    plan._exec = recorded_launch
    try:
        plan.execute(arrays, workspace=ws)
        plan.execute_raw([int(a.ptr) for a in arrays.values()], int(ws.ptr), handle=handle)
    finally:
        plan.close()
    want = ["set_current", "launch"] if several_devices else ["launch"]
    assert events == want * 2
    assert len(launches) == 2


def test_a_bool_key_is_no_unique_id(conv_plan: Any) -> None:
    """True == 1 and hashes alike: {True: x} bound x to the tensor of unique id 1."""
    plan, arrays, ws, launches, (x, w, y) = conv_plan
    assert x.uid == 1
    with pytest.raises(KeyError, match="True is not a tensor of this plan"):
        plan.execute({True: arrays[x], w: arrays[w], y: arrays[y]}, workspace=ws)
    assert launches == []
    plan.execute({1: arrays[x], w: arrays[w], y: arrays[y]}, workspace=ws)  # the uid itself
    assert len(launches) == 1
