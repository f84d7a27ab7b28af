"""A plan preference's ``tag`` applies to the plan made with it, not to later plans.

``PlanPreference.tag`` is written to the operation descriptor (``CUTENSOR_OPERATION_DESCRIPTOR_TAG``,
default 0 in ``cutensor.h``) before planning, and cuTENSOR keys its plan cache on it. It used to be
written only when the preference had a tag, so it stayed on the descriptor: a later
``Plan(operation)`` (tag None) was planned under the earlier tag and could be served that tag's cached
plan. cuTENSOR's planning calls take a handle, which needs a GPU: here they are recorders that keep
the descriptor's tag as cuTENSOR would and note the tag each ``cutensorCreatePlan`` saw.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from _nvbind.resource import CResource
from pycutensor import _bindings
from pycutensor._lib import LIB
from pycutensor.handle import Handle
from pycutensor.operations import Permutation
from pycutensor.plan import Plan
from pycutensor.preference import PlanPreference, PlanPreferenceObject

_TAG = int(_bindings.CUTENSOR_OPERATION_DESCRIPTOR_TAG)


class _Descriptor:
    """What cuTENSOR keeps of one operation descriptor here: its tag (0 when created)."""

    def __init__(self) -> None:
        self.tag = 0
        self.planned_with: list[int] = []  # the tag each cutensorCreatePlan saw
        self.next_ptr = 0x5000


@pytest.fixture
def descriptor(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Descriptor]:
    desc = _Descriptor()

    def set_attribute(handle: Any, op: Any, attr: int, buf: Any, size: int) -> int:
        if attr == _TAG:
            desc.tag = int(buf._obj.value)
        return 0

    def get_attribute(handle: Any, op: Any, attr: int, buf: Any, size: int) -> int:
        buf._obj.value = desc.tag if attr == _TAG else 0
        return 0

    def new_pointer(_handle: Any, out: Any, *rest: Any) -> int:
        desc.next_ptr += 0x100
        out._obj.value = desc.next_ptr
        return 0

    def create_plan(handle: Any, out: Any, op: Any, pref: Any, limit: int) -> int:
        desc.planned_with.append(desc.tag)
        return new_pointer(handle, out)

    def plan_attribute(handle: Any, plan: Any, attr: int, buf: Any, size: int) -> int:
        buf._obj.value = 0  # CUTENSOR_PLAN_REQUIRED_WORKSPACE
        return 0

    stand_ins = {
        "cutensorOperationDescriptorSetAttribute": set_attribute,
        "cutensorOperationDescriptorGetAttribute": get_attribute,
        "cutensorCreatePlanPreference": new_pointer,
        "cutensorPlanPreferenceSetAttribute": lambda *args: 0,
        "cutensorDestroyPlanPreference": lambda ptr: 0,
        "cutensorCreatePlan": create_plan,
        "cutensorPlanGetAttribute": plan_attribute,
        "cutensorDestroyPlan": lambda ptr: 0,
        "cutensorPermute": lambda *args: 0,
    }
    for name, fn in stand_ins.items():
        monkeypatch.setitem(LIB._bound, name, fn)
    yield desc
    gc.collect()  # anything left destroyed while the stand-ins are still in place


def _operation() -> Permutation:
    """A permutation on a stand-in handle (open, never passed to C but to the recorders)."""
    handle = Handle.__new__(Handle)
    CResource.__init__(handle, 0x1000, None, owned=False)
    handle.device_id, handle._device, handle._lock = 0, None, threading.Lock()
    handle._default_preference, handle._owned = None, []
    handle.activate = lambda: None  # type: ignore[method-assign]
    handle.restore = lambda previous: None  # type: ignore[method-assign]
    op = Permutation.__new__(Permutation)
    CResource.__init__(op, 0x2000, None, owned=False)
    op.handle = handle
    op._scalar_type = np.dtype(np.float32)
    operand = SimpleNamespace(spec=SimpleNamespace(alignment=4))
    op.operands = (operand, operand)  # type: ignore[assignment]
    return op


def _plan_tags(descriptor: _Descriptor, *tags: int | None) -> list[int]:
    op = _operation()
    for tag in tags:
        pref = PlanPreferenceObject(op.handle, PlanPreference(tag=tag))
        with pref, Plan(op, pref):
            pass
    with Plan(op):  # the handle's default preference: no tag
        pass
    return descriptor.planned_with


def test_a_tag_applies_to_its_plan_only(descriptor: _Descriptor) -> None:
    assert _plan_tags(descriptor, 5, None, -7, None) == [5, 0, -7, 0, 0]


def test_a_tag_set_on_the_operation_is_the_default_of_its_plans(descriptor: _Descriptor) -> None:
    op = _operation()
    op.tag = 3
    for tag in (None, 9, None):
        pref = PlanPreferenceObject(op.handle, PlanPreference(tag=tag))
        with pref, Plan(op, pref):
            pass
    assert descriptor.planned_with == [3, 9, 3]
    assert op.tag == 3


def test_planning_without_tags_sets_no_attribute(
    descriptor: _Descriptor, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setitem(LIB._bound, "cutensorOperationDescriptorSetAttribute",
                        lambda *args: calls.append(args) or 0)  # fmt: skip
    assert _plan_tags(descriptor, None) == [0, 0]
    assert calls == []  # no C call added to a plan made without a tag
