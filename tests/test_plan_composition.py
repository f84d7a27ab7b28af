"""Plan owns its variant-pack cache and its CUDA-graph calls (composition, no mixins), CPU tier.

The plan is built by cuDNN for the committed H100 device properties and its variant packs by
cuDNN; only the launch (``cudnnBackendExecute``, which needs a GPU) is replaced by a recorder on a
handle stand-in, as in ``test_host_paths.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from standins import BASE, RecordedDevice, recording_conv_plan, stand_in_handle
from standins import fake_device_array as fake

import pycudnn
from pycudnn.plan import Plan
from pycudnn.plan.cuda_graph import CudaGraphCalls
from pycudnn.plan.variant_pack import VariantPackCache


@pytest.fixture
def conv_plan(deviceprops_json: dict[str, Any]) -> Any:
    plan, arrays, ws, launches, _ = recording_conv_plan(deviceprops_json, "composition")
    yield plan, arrays, ws, launches
    plan.close()


def test_plan_has_no_mixins_and_owns_its_parts(conv_plan: Any) -> None:
    plan = conv_plan[0]
    assert Plan.__mro__ == (Plan, object)
    assert isinstance(plan._packs, VariantPackCache)
    assert isinstance(plan._graphs, CudaGraphCalls)


def test_the_cache_builds_one_pack_per_pointer_set_and_close_releases_them(
    conv_plan: Any,
) -> None:
    plan, arrays, ws, launches = conv_plan
    plan.execute(arrays, workspace=ws)
    plan.execute(arrays, workspace=ws)  # the last pack again: no descriptor work
    y = list(arrays)[2]
    out = arrays[y]
    moved = {**arrays, y: fake(out.shape, np.float16, ptr=BASE + 0x40_0000, strides=out.strides)}
    plan.execute(moved, workspace=ws)
    plan.execute(arrays, workspace=ws)  # the first set, from the cache
    assert plan.variant_pack_builds == 2 == plan._packs.builds
    assert len(launches) == 4 and launches[0] == launches[1] == launches[3] != launches[2]
    packs = [entry[2] for entry in plan._packs.entries.values()]
    assert len(packs) == 2 and not any(p.closed for p in packs)
    plan.close()
    assert all(p.closed for p in packs)
    assert not plan._packs.entries and plan._packs.last == (None, None, None, None)
    with pytest.raises(pycudnn.ClosedError):
        plan.execute(arrays, workspace=ws)


def test_execute_raw_shares_the_cache_and_its_checks(conv_plan: Any) -> None:
    plan, arrays, ws, launches = conv_plan
    by_uid = {t.uid: a.ptr for t, a in arrays.items()}
    pointers = [by_uid[u] for u in plan.uids]
    plan.execute_raw(pointers, ws.ptr)
    plan.execute_raw(pointers, ws.ptr)
    assert plan.variant_pack_builds == 1 and len(launches) == 2
    with pytest.raises(ValueError, match="takes 3 pointers"):
        plan.execute_raw(pointers[:2], ws.ptr)
    with pytest.raises(TypeError, match=r"handle must be a pycudnn\.Handle"):
        plan.execute_raw(pointers, ws.ptr, handle=object())


def test_a_pack_is_refused_on_a_handle_of_another_device(conv_plan: Any) -> None:
    plan, arrays, ws, launches = conv_plan
    plan.execute(arrays, workspace=ws)
    other = stand_in_handle()
    other.device_id = 1  # the arrays are on device 0
    with pytest.raises(ValueError, match="handle is on device 1 but these arrays are on device 0"):
        plan.execute(arrays, workspace=ws, handle=other)
    assert len(launches) == 1


def test_cuda_graph_refusal_names_the_missing_note(conv_plan: Any) -> None:
    plan = conv_plan[0]
    assert "SUPPORTS_CUDA_GRAPH_NATIVE_API" not in plan.behavior_notes
    handle = stand_in_handle()
    entry: Any = (None, handle.device_id, None)  # no pack: the call is a stand-in
    refused = int(pycudnn.raw.cudnnStatus_t.NOT_SUPPORTED)  # what cuDNN answers such an engine
    with pytest.raises(pycudnn.CudnnError, match="lacks the SUPPORTS_CUDA_GRAPH_NATIVE_API"):
        plan._graphs.call(lambda *a: refused, "cudnnBackendPopulateCudaGraph", handle, entry, 1)
    unknown = CudaGraphCalls(plan._ptr, None)  # a plan read from JSON alone: notes unknown
    with pytest.raises(pycudnn.CudnnError) as info:
        unknown.call(lambda *a: refused, "cudnnBackendPopulateCudaGraph", handle, entry, 1)
    assert "lacks" not in str(info.value)


@pytest.mark.parametrize("several_devices", [False, True])
def test_cuda_graph_calls_make_the_handles_device_current(
    conv_plan: Any, several_devices: bool
) -> None:
    """As an execute: cuDNN works in the thread's current context, so with several GPUs the
    handle's device is made current for the call (no context is current here, so it is)."""
    plan = conv_plan[0]
    events: list[str] = []
    handle = stand_in_handle(RecordedDevice(events), several_devices=several_devices)
    entry: Any = (None, handle.device_id, None)  # no pack: the call is a stand-in

    def populate(*args: Any) -> int:  # cudnnBackendPopulateCudaGraph needs a GPU
        events.append("populate")
        return 0

    plan._graphs.call(populate, "cudnnBackendPopulateCudaGraph", handle, entry, 1)
    assert events == (["set_current", "populate"] if several_devices else ["populate"])


def test_a_closed_thread_handle_is_replaced_on_every_path(
    conv_plan: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # execute replaced the thread's handle once it was closed (a with-block over
    # pycudnn.get_handle()); execute_raw and the CUDA-graph calls kept using it and raised
    # ClosedError for a handle the caller never gave.
    import threading

    from pycudnn.plan import execution

    plan, arrays, ws, launches = conv_plan
    fresh = stand_in_handle()  # what get_handle gives (cudnnCreate needs a GPU)
    monkeypatch.setattr(execution, "get_handle", lambda device=None: fresh)
    used: list[Any] = []

    class Graphs:  # cudnnBackendPopulateCudaGraph needs a GPU: its handle argument is recorded
        prepare = staticmethod(lambda function, cuda_graph: (None, 1))

        def call(self, fn: Any, function: str, handle: Any, entry: Any, graph: int) -> None:
            used.append(handle._as_parameter_)

    plan._graphs = Graphs()
    by_uid = {t.uid: a.ptr for t, a in arrays.items()}
    pointers = [by_uid[u] for u in plan.uids]
    for run in (
        lambda: plan.execute(arrays, workspace=ws),
        lambda: plan.execute_raw(pointers, ws.ptr),
        lambda: plan.populate_cuda_graph(arrays, 1, workspace=ws),
    ):
        thread_handle = stand_in_handle()
        plan._handles[threading.get_ident()] = thread_handle
        thread_handle.close()
        run()
        assert plan._handles[threading.get_ident()] is fresh
    assert len(launches) == 2 and len(used) == 1


@pytest.mark.parametrize(
    ("capability", "sms", "refused"),
    [((9, 0), 132, False), ((8, 0), 108, True), ((9, 0), 114, True), ((10, 0), 148, True)],
)
def test_a_plan_made_for_device_properties_runs_only_on_that_gpu(
    conv_plan: Any, monkeypatch: pytest.MonkeyPatch, capability: Any, sms: int, refused: bool
) -> None:
    # A plan built for device properties carries the properties' GPU's kernels and launch
    # shapes; cuDNN refuses it deserialized for another GPU (ARCH_MISMATCH) but executed it
    # there without a word. The driver's answer about device 0 stands in for a GPU.
    from _nvbind.cuda import DriverStatus
    from pycudnn.plan import targets

    plan, arrays, ws, launches = conv_plan
    assert plan.device_properties.compute_capability == (9, 0)  # the committed H100's
    gpu = {"ordinal": 0, "name": "a GPU", "compute_capability": capability,
           "multiprocessor_count": sms, "total_memory": 1 << 34}  # fmt: skip
    answer = DriverStatus(True, 12080, 0, 1, (gpu,), "")
    monkeypatch.setattr(targets, "driver_status", lambda: answer)
    by_uid = {t.uid: a.ptr for t, a in arrays.items()}
    pointers = [by_uid[u] for u in plan.uids]
    if refused:
        with pytest.raises(ValueError, match=r"made for .* 132 SMs.*on device 0, a GPU"):
            plan.execute(arrays, workspace=ws)
        with pytest.raises(ValueError, match="plan for this GPU"):
            plan.execute_raw(pointers, ws.ptr)
        assert not launches
    else:
        plan.execute(arrays, workspace=ws)
        plan.execute_raw(pointers, ws.ptr)
        assert len(launches) == 2
