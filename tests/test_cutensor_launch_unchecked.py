"""``Plan.launch_unchecked``: the public execute for callers that checked their operands already.

The functions on arrays and the einsum programs end in it (``tests/test_host_paths.py`` runs a
program through it with recording plans). Here: it refuses a closed plan, or a plan whose handle is
closed, before any C call, with the same error as :meth:`Plan.execute`; and on a GPU it computes
what NumPy computes.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_cutensor_robustness import _closed

import pycutensor
from _nvbind.resource import CResource
from pycutensor.errors import ClosedError
from pycutensor.handle import Handle
from pycutensor.operations import Contraction
from pycutensor.plan import Plan
from pycutensor.tensor import TensorDescriptor

_POINTERS = [0x1000, 0x2000, 0x3000, 0x3000]


def _open_plan(handle: Handle) -> Plan:
    # A plan object that never reaches C: open (pointer 1, not owned) on the given handle.
    plan = Plan.__new__(Plan)
    CResource.__init__(plan, 1, None, owned=False)
    plan.handle = handle
    plan.operation = _closed(Contraction)
    plan._alignments = (4, 4, 4, 4)
    return plan


def test_launch_unchecked_refuses_a_closed_plan_as_execute_does() -> None:
    open_handle = Handle.__new__(Handle)
    CResource.__init__(open_handle, 1, None, owned=False)  # open, but never passed to C below
    plan = _open_plan(open_handle)
    CResource.close(plan)
    with pytest.raises(ClosedError) as by_execute:
        plan.execute(np.zeros(4, np.float32))
    with pytest.raises(ClosedError) as by_launch:
        plan.launch_unchecked(_POINTERS, [1.0, 0.0], 0, 0, 0)
    assert str(by_launch.value) == str(by_execute.value) == "this cuTENSOR plan is closed"


def test_launch_unchecked_refuses_a_plan_whose_handle_is_closed() -> None:
    plan = _open_plan(_closed(Handle))
    with pytest.raises(ClosedError, match="the handle of this cuTENSOR plan is closed"):
        plan.launch_unchecked(_POINTERS, [1.0, 0.0], 0, 0, 0)


def test_launch_unchecked_is_public_and_names_every_execute_function() -> None:
    doc = Plan.launch_unchecked.__doc__ or ""
    # the execute functions of cutensor.h, one per operation kind
    for name in ("cutensorContract", "cutensorContractTrinary", "cutensorReduce",
                 "cutensorElementwiseBinaryExecute", "cutensorElementwiseTrinaryExecute",
                 "cutensorPermute"):  # fmt: skip
        assert f"``{name}``" in doc, name


@pytest.mark.gpu
def test_launch_unchecked_computes_a_contraction(gpu_device: int) -> None:
    from cuda.core import Device

    from _nvbind.device_array import DeviceArray

    rng = np.random.default_rng(7)
    a_host = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    b_host = rng.uniform(-1, 1, (8, 12)).astype(np.float32)
    with pycutensor.Handle(gpu_device) as handle:
        a = TensorDescriptor(handle, (16, 8), dtype=np.float32)
        b = TensorDescriptor(handle, (8, 12), dtype=np.float32)
        c = TensorDescriptor(handle, (16, 12), dtype=np.float32)
        plan = Contraction(a, "mk", b, "kn", c, "mn").plan(workspace=0)
        da, db = DeviceArray.from_numpy(a_host), DeviceArray.from_numpy(b_host)
        dc = DeviceArray.from_numpy(np.full((16, 12), 5.0, np.float32))
        stream = Device(gpu_device).create_stream()
        previous = handle.activate()  # the caller makes the plan's device current
        try:
            pointers = [da.ptr, db.ptr, dc.ptr, dc.ptr]
            plan.launch_unchecked(pointers, [2.0, 0.0], int(stream.handle), 0, 0)
            stream.sync()
        finally:
            handle.restore(previous)
            stream.close()
        got = dc.to_numpy()
        want = 2.0 * (a_host.astype(np.float64) @ b_host.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        plan.close()
        with pytest.raises(ClosedError, match="this cuTENSOR plan is closed"):
            plan.launch_unchecked([da.ptr, db.ptr, dc.ptr, dc.ptr], [2.0, 0.0], 0, 0, 0)
