"""Arguments of the functions on arrays and of :meth:`Plan.execute` that no descriptor describes
(the preference, the caller's workspace), run through the CPU interpreter of cuTENSOR's calls
(``tests/cutensor_interpreter.py``): each is refused with an exception naming it, before any
execute."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import pycutensor
from _nvbind.device_array import DeviceArray
from pycutensor import _lib
from pycutensor.operations import Contraction
from pycutensor.plan import PlanPreference
from pycutensor.tensor import TensorDescriptor
from tests.cutensor_interpreter import (
    COMPUTE_PTR,
    Interpreter,
    _through_ctypes,
    make,
    stand_in_handle,
)


@pytest.fixture
def cu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Interpreter]:
    interp = Interpreter("output")
    for name, impl in interp.functions().items():
        monkeypatch.setitem(_lib.LIB._bound, name, _through_ctypes(name, impl, interp))
    for name, ptr in COMPUTE_PTR.items():
        monkeypatch.setitem(_lib._compute_descriptors, name, ptr)
    interp.handle = stand_in_handle()
    yield interp
    interp.handle.clear_cached_operations()
    gc.collect()
    assert not interp.errors, interp.errors


def _contraction(cu: Interpreter) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    a, da = make(cu, rng, (2, 3), np.float32)
    b, db = make(cu, rng, (3, 4), np.float32)
    c, dc = make(cu, rng, (2, 4), np.float32)
    return a, b, c, da, db, dc


@pytest.mark.parametrize("preference", ["default", 5, "PlanPreferenceObject"])
def test_array_functions_refuse_a_preference_of_another_type(
    cu: Interpreter, preference: object
) -> None:
    # planning read preference.autotune: an AttributeError naming no argument
    if preference == "PlanPreferenceObject":
        preference = PlanPreference().create(cu.handle)
    *_, da, db, dc = _contraction(cu)
    with pytest.raises(TypeError, match="preference must be a PlanPreference or None"):
        pycutensor.contract(da, "ik", db, "kj", dc, "ij", preference=preference,
                            handle=cu.handle)  # fmt: skip
    assert not cu.executes


def _on_device(device: int, arr: np.ndarray) -> DeviceArray:
    strides = tuple(s // arr.itemsize for s in arr.strides)
    return DeviceArray.__new__(DeviceArray)._init(None, arr.ctypes.data, arr.shape, strides,
                                                  arr.dtype, device)  # fmt: skip


class _Buffer:
    """What a cuda.core Buffer shows of itself (handle, size, device_id)."""

    def __init__(self, ptr: int, size: int, device_id: int) -> None:
        self.handle, self.size, self.device_id = ptr, size, device_id
        self.is_device_accessible = True


def test_a_workspace_on_another_device_is_refused(cu: Interpreter) -> None:
    # The plan's kernels run on the handle's device (0): another device's memory is an illegal
    # address for them, which no check caught.
    _, _, _, da, db, dc = _contraction(cu)
    raw = cu.buffer(1024)
    plan = Contraction(TensorDescriptor.from_array(cu.handle, da), "ik",
                       TensorDescriptor.from_array(cu.handle, db), "kj",
                       TensorDescriptor.from_array(cu.handle, dc), "ij").plan()  # fmt: skip
    for workspace in (_on_device(1, raw), _Buffer(raw.ctypes.data, raw.nbytes, 1)):
        with pytest.raises(ValueError, match="workspace is on device 1"):
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", workspace=workspace,
                                handle=cu.handle)  # fmt: skip
        with pytest.raises(ValueError, match="workspace is on device 1"):
            plan.execute(da, db, dc, workspace=workspace)
    assert not cu.executes
    # the handle's own device is taken, in both forms
    pycutensor.contract(da, "ik", db, "kj", dc, "ij", workspace=_on_device(0, raw),
                        handle=cu.handle)  # fmt: skip
    plan.execute(da, db, dc, workspace=_Buffer(raw.ctypes.data, raw.nbytes, 0))
    assert len(cu.executes) == 2


def test_a_workspace_overlapping_an_operand_is_refused(cu: Interpreter) -> None:
    # cuTENSOR may write all the workspace it is given: over an operand, that is a wrong result
    # (an input read after its scratch use, or an output overwritten), and nothing said so.
    rng = np.random.default_rng(0)
    _, da = make(cu, rng, (2, 3), np.float32)
    _, db = make(cu, rng, (3, 4), np.float32)
    big, _ = make(cu, rng, (64, 64), np.float32)  # 16 KiB: C and, past it, an input
    dc = _on_device(0, big[:2, :4])
    past_c = _on_device(0, big[8:])
    whole = _on_device(0, big)
    plan = Contraction(TensorDescriptor.from_array(cu.handle, da), "ik",
                       TensorDescriptor.from_array(cu.handle, db), "kj",
                       TensorDescriptor.from_array(cu.handle, dc), "ij").plan()  # fmt: skip
    with pytest.raises(ValueError, match="workspace overlaps c in memory"):
        pycutensor.contract(da, "ik", db, "kj", dc, "ij", workspace=whole, handle=cu.handle)
    with pytest.raises(ValueError, match="workspace overlaps C in memory"):
        plan.execute(da, db, dc, workspace=whole)
    a_inside = _on_device(0, big.reshape(-1)[1024:1030].reshape(2, 3))  # within past_c
    with pytest.raises(ValueError, match="workspace overlaps A in memory"):
        plan.execute(a_inside, db, dc, workspace=past_c)
    with pytest.raises(ValueError, match="workspace overlaps a in memory"):
        pycutensor.contract(a_inside, "ik", db, "kj", dc, "ij", workspace=past_c,
                            handle=cu.handle)  # fmt: skip
    assert not cu.executes
    # apart from every operand: taken
    pycutensor.contract(da, "ik", db, "kj", dc, "ij", workspace=past_c, handle=cu.handle)
    plan.execute(da, db, dc, workspace=past_c)
    assert len(cu.executes) == 2


def test_a_workspace_cutensor_cannot_write_as_given_is_refused(cu: Interpreter) -> None:
    # cuTENSOR writes [pointer, pointer + size): a reversed array's pointer is its highest
    # element, so that range ran past its memory into whatever lay above; and a read-only array
    # was written all the same.
    _, _, _, da, db, dc = _contraction(cu)
    raw = cu.buffer(4096)
    plan = Contraction(TensorDescriptor.from_array(cu.handle, da), "ik",
                       TensorDescriptor.from_array(cu.handle, db), "kj",
                       TensorDescriptor.from_array(cu.handle, dc), "ij").plan()  # fmt: skip
    reversed_ = _on_device(0, raw[:2049][::-1])  # its pointer 256-byte aligned, 2048 bytes in
    read_only = DeviceArray.__new__(DeviceArray)._init(None, raw.ctypes.data, raw.shape, (1,),
                                                       raw.dtype, 0, readonly=True)  # fmt: skip
    for workspace, match in ((reversed_, "negative strides"), (read_only, "read-only")):
        with pytest.raises(ValueError, match=f"workspace .*{match}"):
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", workspace=workspace,
                                handle=cu.handle)  # fmt: skip
        with pytest.raises(ValueError, match=f"workspace .*{match}"):
            plan.execute(da, db, dc, workspace=workspace)
    assert not cu.executes
