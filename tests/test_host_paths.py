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

from typing import Any

import numpy as np
import pytest
from standins import BASE, recording_conv_plan
from standins import fake_device_array as fake

from _nvbind.arrays import ArrayView, array_view, as_array_view
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
