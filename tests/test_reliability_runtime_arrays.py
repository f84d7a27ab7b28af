"""Hostile array objects: every array-taking entry point refuses a broken DLPack capsule or CUDA
array interface with an exception that names the argument and the rule, and nothing crashes.

A DLPack tensor with a NULL shape array used to reach cuda.core's reader first, which dereferenced
it (SIGSEGV) before this library's own reader could refuse it; a DLPack 2.x capsule was read as
1.x; CUDA-array-interface dicts with junk raised AttributeError, OverflowError or the driver's
CUDA_ERROR_NOT_INITIALIZED. The sweep over entry points runs in a child process, so that a crash
fails the test instead of ending the test run.
"""

from __future__ import annotations

import gc
import json
from typing import Any

import numpy as np
import pytest
from children import run_python
from hostile_arrays import DLPACK_DAMAGES, CudaInterface, DamagedDLPack, good_interface

from _nvbind import dlpack as dl
from _nvbind.arrays import as_array_view

_SWEEP = """
import json, sys
sys.path.insert(0, "tests")
from hostile_arrays import DLPACK_DAMAGES, DamagedDLPack
import pycudnn, pycutensor
from pycudnn import DeviceArray, DeviceProperties

g = pycudnn.Graph("conv")
x = g.tensor([1, 8, 4, 4], fmt="NHWC", dtype="float16", name="x")
w = g.tensor([8, 8, 1, 1], fmt="NHWC", dtype="float16", name="w")
g.conv_fprop(x, w, name="conv")
plan = g.build(
    device_properties=DeviceProperties.load("tests/data/deviceprops/h100-sxm-80gb.json"),
    cache=False,
)
consumers = {
    "Graph.tensor_like": lambda p: pycudnn.Graph().tensor_like(p),
    "DeviceArray.from_array": lambda p: DeviceArray.from_array(p),
    "DeviceArray.from_dlpack": lambda p: DeviceArray.from_dlpack(p),
    "Plan.execute": lambda p: plan.execute({"x": p, "w": p, "conv.y": p}),
    "pycutensor.einsum": lambda p: pycutensor.einsum("ij->ji", p),
    "pycutensor.contract": lambda p: pycutensor.contract(p, "ij", p, "jk", p, "ik"),
}
out = {}
for damage in DLPACK_DAMAGES:
    for consumer, call in consumers.items():
        try:
            call(DamagedDLPack(damage))
            out[f"{damage} / {consumer}"] = ["accepted", ""]
        except Exception as exc:
            out[f"{damage} / {consumer}"] = [type(exc).__name__, str(exc)]
print(json.dumps(out))
"""


def test_damaged_dlpack_capsules_are_refused_by_every_entry_point_in_a_child(
    h100_props: object,  # the child plans for them (cuDNN 9.10+ without a GPU)
) -> None:
    r = run_python(_SWEEP, timeout=300)
    assert r.returncode == 0, f"the child died ({r.returncode}): {r.stderr[-3000:]}"
    results = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(results) == len(DLPACK_DAMAGES) * 6
    for key, (kind, message) in results.items():
        damage = key.split(" / ")[0]
        assert kind in {"BufferError", "TypeError"}, f"{key}: {kind}: {message}"
        assert DLPACK_DAMAGES[damage] in message, f"{key}: {message}"


@pytest.mark.parametrize("damage", sorted(DLPACK_DAMAGES))
def test_damaged_capsules_are_released_exactly_once(damage: str) -> None:
    gc.collect()
    before = len(dl._exports)
    with pytest.raises((BufferError, TypeError), match=r"^x"):
        as_array_view(DamagedDLPack(damage), name="x")
    gc.collect()
    assert len(dl._exports) == before  # the consumed tensor's deleter ran


def test_a_dlpack_2_capsule_is_not_read_as_1() -> None:
    # Through the cuda-device path too (what cuda.core read as 1.x): refused before any device use.
    with pytest.raises(BufferError, match=r"x was exported with DLPack 2\.1; this reader knows 1"):
        as_array_view(DamagedDLPack("version 2", device=(2, 0)), name="x", stream_ptr=0)


class _Raising(DamagedDLPack):
    def __init__(self, where: str, exc: Exception) -> None:
        super().__init__("null shape")
        self.where, self.exc = where, exc

    def __dlpack_device__(self) -> Any:
        if self.where == "device":
            raise self.exc
        return super().__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        if self.where == "dlpack":
            raise self.exc
        return super().__dlpack__(**kwargs)


@pytest.mark.parametrize("where", ["device", "dlpack"])
@pytest.mark.parametrize("exc", [RuntimeError("producer broke"), ZeroDivisionError("boom")])
def test_a_raising_producer_is_named_as_the_argument(where: str, exc: Exception) -> None:
    method = "__dlpack_device__" if where == "device" else "__dlpack__"
    with pytest.raises(
        BufferError, match=rf"^x\.{method}\(\) failed: {type(exc).__name__}"
    ) as info:
        as_array_view(_Raising(where, exc), name="x")
    assert info.value.__cause__ is exc  # the producer's own exception stays attached


@pytest.mark.parametrize(
    ("device", "rule"),
    [
        ((1, -1), "not an ordinal"),
        ((2, 2**31), "not an ordinal"),
        ((2, 2**70), "not an ordinal"),
        ((7, 0), "device type 7"),
        ((-1, 0), "device type -1"),
        ((1.0, 0), "not \\(type, id\\) ints"),
        ([1, 0], "not \\(type, id\\) ints"),
        ((1, 0, 0), "not \\(type, id\\) ints"),
        ("cuda", "not \\(type, id\\) ints"),
    ],
)
def test_dlpack_device_junk_is_refused(device: Any, rule: str) -> None:
    class Junk(DamagedDLPack):
        def __dlpack_device__(self) -> Any:
            return device

    with pytest.raises(BufferError, match=rf"^x.*{rule}"):
        as_array_view(Junk("null shape"), name="x")


def test_the_ops_device_lookup_checks_dlpack_device_too() -> None:
    from pycudnn.ops._common import _device_of

    class Junk(DamagedDLPack):
        def __dlpack_device__(self) -> Any:
            return (2, -4)

    with pytest.raises(BufferError, match=r"^x.*not an ordinal"):
        _device_of(Junk("null shape"), "x")


# -- the CUDA array interface ------------------------------------------------------------------

_INTERFACE_JUNK: list[tuple[Any, type[Exception], str]] = [
    (None, TypeError, "must be a dict"),
    ([("shape", (4,))], TypeError, "must be a dict"),
    ({"shape": (4,)}, TypeError, "'typestr' and 'data'"),
    (good_interface(version=4), ValueError, "version 4; this reader knows"),
    (good_interface(version="3"), ValueError, "version '3'"),
    (good_interface(version=True), ValueError, "version True"),
    ({k: v for k, v in good_interface().items() if k != "version"}, ValueError, "version None"),
    (good_interface(mask=CudaInterface(None)), ValueError, "mask"),
    (good_interface(shape=(4, -1)), ValueError, "has -1 < 0"),
    (good_interface(shape=(2**63, 1)), ValueError, "beyond int64"),
    (good_interface(shape=(4.0, 4)), TypeError, "must hold ints"),
    (good_interface(shape="4,4"), TypeError, "tuple of ints"),
    (good_interface(shape=(1,) * 65), ValueError, "at most 64"),
    (good_interface(strides=(2**63, 4)), ValueError, "beyond int64"),
    (good_interface(strides=(4,)), ValueError, "1 strides for 2 dims"),
    (
        good_interface(shape=(8, 4), strides=(2**62, 4)),
        ValueError,
        "outside the 64-bit address space",
    ),
    (good_interface(strides=(-(2**62), 4)), ValueError, "outside the 64-bit address space"),
    (good_interface(strides=(6, 4)), ValueError, "not whole elements"),
    (good_interface(typestr=42), TypeError, "typestr must be a str"),
    (good_interface(typestr="garbage"), TypeError, "typestr 'garbage' is no element type"),
    (good_interface(typestr="<f0"), TypeError, "no element type|no size"),
    (good_interface(typestr=">f4"), TypeError, "big-endian"),
    (good_interface(typestr="|V2"), TypeError, "raw bytes"),
    (good_interface(data=None), TypeError, "data must be"),
    (good_interface(data=(1.5, False)), ValueError, "not an address"),
    (good_interface(data=(-8, False)), ValueError, "not an address"),
    (good_interface(data=(2**64, False)), ValueError, "not an address"),
    (good_interface(data=(0, False)), ValueError, "NULL data pointer"),
    (good_interface(data=(2**64 - 8, False)), ValueError, "outside the 64-bit address space"),
    (good_interface(data=(4096, "no")), TypeError, "read_only flag must be a bool"),
    (good_interface(stream=0), ValueError, "0 is forbidden"),
    (good_interface(stream=-5), ValueError, "not 1, 2 or a stream address"),
    (good_interface(stream=2**64), ValueError, "not 1, 2 or a stream address"),
    (good_interface(stream=1.5), TypeError, "stream must be None or an int"),
    (good_interface(stream=True), TypeError, "stream must be None or an int"),
    (good_interface(stream="1"), TypeError, "stream must be None or an int"),
    (RuntimeError("property broke"), TypeError, "reading its __cuda_array_interface__ failed"),
]


@pytest.mark.parametrize(
    ("iface", "error", "rule"), _INTERFACE_JUNK, ids=[str(i) for i in range(len(_INTERFACE_JUNK))]
)
def test_cuda_array_interface_junk_names_the_argument_and_the_rule(
    iface: Any, error: type[Exception], rule: str
) -> None:
    with pytest.raises(error, match=rf"^x: .*({rule})"):
        as_array_view(CudaInterface(iface), name="x", stream_ptr=0)


def test_a_junk_descr_falls_back_to_the_typestr() -> None:
    # Checked before the driver is asked for the device: with no GPU that question fails, naming x.
    with pytest.raises(RuntimeError, match=r"^x: reading a CUDA-array-interface array asks"):
        as_array_view(CudaInterface(good_interface(descr=5)), name="x", stream_ptr=0)


def test_a_well_formed_interface_without_a_gpu_names_the_argument_and_the_reason() -> None:
    pytest.importorskip("cuda.core")
    from _nvbind.cuda import gpu_available

    if gpu_available()[0]:
        pytest.skip("a GPU is usable here: the driver would answer")
    with pytest.raises(RuntimeError, match=r"^x: .*which device its memory is on.*cuInit|device"):
        as_array_view(CudaInterface(good_interface()), name="x", stream_ptr=0)


def test_host_array_interface_junk_is_refused_too() -> None:
    class Host:
        def __init__(self, iface: Any) -> None:
            self.__array_interface__ = iface

    a = np.zeros(4, np.float32)
    iface = dict(a.__array_interface__)
    assert as_array_view(Host(iface), name="x").ptr == a.ctypes.data
    with pytest.raises(ValueError, match=r"^x: .*version 2"):
        as_array_view(Host({**iface, "version": 2}), name="x")
    with pytest.raises(TypeError, match=r"^x: .*big-endian"):
        as_array_view(Host({**iface, "typestr": ">f4"}), name="x")


def test_big_endian_numpy_arrays_are_refused_with_the_reason() -> None:
    # cuDNN's type lookup used to say "no data type for float32", blaming the type instead.
    with pytest.raises(TypeError, match=r"^array: .*>f4 is big-endian"):
        as_array_view(np.zeros(3, ">f4"), name="array")


@pytest.mark.parametrize("version", [0, 1, 2])
def test_cuda_array_interface_before_version_3_reaches_the_device_lookup(version: int) -> None:
    # Versions 0 to 2 are read (RMM's DeviceBuffer and cuDF export version 0, PyTorch version 2),
    # but cuda.core's reader takes version 3 only: handed the producer's dict as it is, it refused
    # with a BufferError that was reported as the driver failing to find the device.
    pytest.importorskip("cuda.core")
    with pytest.raises(RuntimeError, match=r"^x: reading a CUDA-array-interface") as info:
        as_array_view(CudaInterface(good_interface(version=version)), name="x", stream_ptr=0)
    assert not isinstance(info.value.__cause__, BufferError), info.value.__cause__
