"""Reading other libraries' arrays: DLPack (cuda.core first, our own reader for what it cannot name),
the CuPy negative-stride repair, the CUDA array interface without cuda.core, DeviceArray.from_dlpack.

The CPU tier drives every path through host (kDLCPU) tensors exported by small producer objects;
the GPU tier repeats what matters with torch and CuPy tensors.
"""

from __future__ import annotations

import ctypes
import gc
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from _nvbind import arrays
from _nvbind import dlpack as dl
from _nvbind.arrays import as_array_view
from pycudnn import DeviceArray

_KDL_CPU = (1, 0)


class HostProducer:
    """A DLPack producer of host memory, as a library would be (optionally with a bug)."""

    def __init__(
        self,
        a: np.ndarray,
        *,
        strides: tuple[int, ...] | None = None,
        legacy_only: bool = False,
    ) -> None:
        self.a = a
        self.strides = strides if strides is not None else tuple(s // a.itemsize for s in a.strides)
        self.legacy_only = legacy_only
        self.calls: list[dict[str, Any]] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return _KDL_CPU

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        if self.legacy_only and kwargs:  # a producer older than DLPack 1.0
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.calls.append({"stream": stream, **kwargs})
        a = self.a
        return dl.export_dlpack(
            a.ctypes.data,
            a.shape,
            self.strides,
            a.dtype,
            _KDL_CPU,
            owner=a,
            readonly=not a.flags.writeable,
            versioned=kwargs.get("max_version") is not None,
        )


FP8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu]


@pytest.mark.parametrize("dtype", FP8, ids=str)
@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
def test_fp8_tensors_are_read_where_cuda_core_cannot(dtype: object, legacy: bool) -> None:
    a = np.arange(1, 25, dtype=np.float32).astype(dtype).reshape(2, 3, 4)[:, 1:]
    if legacy:
        a.flags.writeable = True
    producer = HostProducer(a, legacy_only=legacy)
    v = as_array_view(producer, name="x")
    assert v.dtype == np.dtype(dtype)
    assert (v.ptr, v.shape, v.strides, v.device_id) == (a.ctypes.data, (2, 2, 4), (12, 4, 1), -1)
    # The memory the view points at holds the producer's elements.
    got = np.ndarray(
        v.shape,
        v.dtype,
        buffer=a.base,
        offset=v.ptr - a.base.ctypes.data,
        strides=tuple(s * v.itemsize for s in v.strides),
    )
    np.testing.assert_array_equal(got.astype(np.float32), a.astype(np.float32))


def test_the_reader_releases_what_it_consumed() -> None:
    a = np.arange(8, dtype=np.float32).astype(ml_dtypes.float8_e4m3fn)
    gc.collect()
    before = len(dl._exports)
    v = as_array_view(HostProducer(a))
    assert len(dl._exports) == before + 1  # our view holds the producer's tensor
    del v
    gc.collect()
    assert len(dl._exports) == before  # the producer's deleter ran, exactly once


def test_the_reader_reports_read_only_tensors() -> None:
    a = np.zeros((2, 3), ml_dtypes.float8_e5m2)
    a.flags.writeable = False
    t = dl.import_dlpack(HostProducer(a), -1, "x")
    assert t.readonly and t.dtype == np.dtype(ml_dtypes.float8_e5m2)


def test_the_reader_names_every_dlpack_type_code() -> None:
    for dtype in (np.int8, np.uint32, np.float16, np.complex64, np.bool_, ml_dtypes.bfloat16):
        code, bits = dl.dlpack_dtype(np.dtype(dtype))
        assert dl.numpy_dtype(code, bits, 1) == np.dtype(dtype)
    with pytest.raises(TypeError, match="lanes=4"):
        dl.numpy_dtype(2, 32, 4)
    with pytest.raises(TypeError, match="code 99"):
        dl.numpy_dtype(99, 8, 1)
    with pytest.raises(TypeError, match="code 2 with 24 bits"):
        dl.numpy_dtype(2, 24, 1)


# CuPy before PR #10228 (cupy/cupy#10172) divided byte strides by an unsigned item size, so a
# stride of -1 float32 element arrived as (2**64 - 4) // 4 = 2**62 - 1.
CUPY_MINUS_ONE_F4 = (2**64 - 4) // 4


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.float8_e4m3fn], ids=str)
def test_cupy_unsigned_stride_damage_is_undone(dtype: object) -> None:
    a = np.arange(12, dtype=np.float32).astype(dtype).reshape(3, 4)[:, ::-1]
    item = a.itemsize
    # C's unsigned division, stored in DLPack's int64 field (for 1-byte types it wraps back to -1).
    damaged = tuple(
        s // item if s >= 0 else ((2**64 + s) // item + 2**63) % 2**64 - 2**63 for s in a.strides
    )
    assert damaged[1] == (CUPY_MINUS_ONE_F4 if item == 4 else -1)
    v = as_array_view(HostProducer(a, strides=damaged))
    assert v.strides == (4, -1)
    assert v.ptr == a.ctypes.data


def test_repair_strides_leaves_real_strides_alone() -> None:
    assert dl.repair_strides((4, -1, 0, 2**40), 4) == (4, -1, 0, 2**40)
    assert dl.repair_strides((CUPY_MINUS_ONE_F4, 5), 4) == (-1, 5)
    assert dl.repair_strides(((2**64 - 8 * 3) // 8,), 8) == (-3,)


@pytest.mark.parametrize(
    "stride",
    [
        2**62,  # 2**64 bytes: wrapped, it was stride 0 (every row read the first one)
        2**62 + 3,  # wrapped, it was the true stride 3
        2**63 - 1,  # wrapped, it was -1
        -(2**62),  # negative: CuPy's damage is never negative; wrapped, it was 0
        -(2**62) + 3,  # wrapped, it was 3
    ],
)
def test_strides_beyond_int64_that_are_not_cupy_damage_are_refused(stride: int) -> None:
    # CuPy's unsigned division gives (2**64 - k * 4) // 4 = 2**62 - k (k >= 1) for float32; any
    # other stride whose bytes overflow int64 addresses no memory and must not be wrapped into one.
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(BufferError, match=r"x: DLPack strides .* address no memory"):
        as_array_view(HostProducer(a, strides=(stride, 1)), name="x")
    with pytest.raises(BufferError, match="address no memory"):
        dl.repair_strides((stride, 1), 4)
    assert dl.repair_strides((2**62 - 3, 1), 4) == (-3, 1)  # the damage itself is still undone


def test_cuda_array_interface_without_cuda_core_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without cuda.core the device of a CAI pointer cannot be asked; guessing device 0 is wrong on
    # a machine with several GPUs, so the view is refused and the import failure is named.
    class Cai:
        __cuda_array_interface__: dict[str, Any] = {  # noqa: RUF012 - a fixed test double
            "shape": (4,),
            "typestr": "<f4",
            "data": (0x7F0000000000, False),
            "version": 3,
            "stream": None,
        }

    monkeypatch.setattr(arrays, "_SMV", [None, "ImportError: no module named cuda.core"])
    with pytest.raises(ImportError, match=r"needs cuda.core.*no module named cuda.core"):
        as_array_view(Cai(), name="x", stream_ptr=0)


def test_dlpack_without_cuda_core_uses_our_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrays, "_SMV", [None, "ImportError: no cuda.core"])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = as_array_view(HostProducer(a))
    assert v.dtype == np.float32 and v.strides == (3, 1) and v.ptr == a.ctypes.data


def test_from_dlpack_refuses_host_and_non_dlpack_objects() -> None:
    with pytest.raises(ValueError, match="host memory"):
        DeviceArray.from_dlpack(HostProducer(np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match="must export DLPack"):
        DeviceArray.from_dlpack([1, 2, 3])


# -- GPU tier --------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "bfloat16"])
def test_torch_narrow_tensors_through_from_dlpack(gpu_device: int, name: str) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(1, 25, dtype=torch.float32, device=f"cuda:{gpu_device}")
    t = t.reshape(2, 3, 4).to(getattr(torch, name))[:, 1:]
    d = DeviceArray.from_dlpack(t)
    assert d.dtype == np.dtype(getattr(ml_dtypes, name))
    assert d.shape == (2, 2, 4) and d.strides == (12, 4, 1) and d.ptr == t.data_ptr()
    want = t.float().cpu().numpy()
    np.testing.assert_array_equal(d.to_numpy().astype(np.float32), want)
    # Operations see the same description through as_array_view.
    assert as_array_view(t, stream_ptr=0).dtype == d.dtype


@pytest.mark.gpu
def test_cupy_negative_strides_through_from_dlpack(gpu_device: int) -> None:
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(gpu_device):
        c = cp.arange(60, dtype=cp.float32).reshape(3, 4, 5)[:, ::2, ::-1]
    d = DeviceArray.from_dlpack(c)
    assert d.strides == tuple(s // 4 for s in c.strides) == (20, 10, -1)
    np.testing.assert_array_equal(d.to_numpy(), cp.asnumpy(c))


class DamagedProducer(HostProducer):
    """Exports a valid tensor, then damages one field of it as a buggy producer might."""

    def __init__(self, a: np.ndarray, damage: str) -> None:
        super().__init__(a)
        self.damage = damage

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        capsule = super().__dlpack__(stream=stream, **kwargs)
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
        managed = dl._DLManagedTensorVersioned.from_address(get(capsule, b"dltensor_versioned"))
        t = managed.dl_tensor
        if self.damage == "null shape":
            t.shape = None
        elif self.damage == "ndim":
            t.ndim = -3
        elif self.damage == "lanes":
            t.dtype.lanes = 2
        elif self.damage == "version":
            managed.version.major = 7
        elif self.damage == "extent":
            t.shape[0] = -5
        elif self.damage == "quad":  # 16-byte elements relabelled as 128-bit floats
            t.dtype.code = 2
        return capsule


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        ("null shape", "no shape array"),
        ("ndim", "claims -3 dims"),
        ("lanes", "lanes=2"),
        ("version", "DLPack 7"),
        ("extent", "negative extent"),
    ],
)
def test_damaged_dlpack_tensors_are_refused_and_released(damage: str, match: str) -> None:
    a = np.arange(6, dtype=np.float32).astype(ml_dtypes.float8_e5m2).reshape(2, 3)
    gc.collect()
    before = len(dl._exports)
    # Our reader, directly: cuda.core 1.2's view dereferences a NULL shape array (a crash).
    with pytest.raises((BufferError, TypeError), match=match):
        dl.import_dlpack(DamagedProducer(a, damage), -1, "x")
    gc.collect()
    assert len(dl._exports) == before  # the consumed tensor's deleter still ran


@pytest.mark.parametrize("device", [None, (1,), ("1", 0), (True, 0)])
def test_a_malformed_dlpack_device_is_refused(device: Any) -> None:
    class Odd(HostProducer):
        def __dlpack_device__(self) -> Any:
            return device

    with pytest.raises(BufferError, match="__dlpack_device__"):
        dl.import_dlpack(Odd(np.zeros(3, np.float32)), -1, "x")


def test_ieee_quad_dlpack_types_are_not_read_as_longdouble() -> None:
    # DLPack's 128-bit float is IEEE quad precision (its 256-bit complex a pair of them); NumPy's
    # 16-byte float is x87 extended precision padded: another number format altogether.
    with pytest.raises(TypeError, match="code 2 with 128 bits"):
        dl.numpy_dtype(2, 128, 1)
    with pytest.raises(TypeError, match="code 5 with 256 bits"):
        dl.numpy_dtype(5, 256, 1)
    for dtype in (np.dtype(np.longdouble), np.dtype(np.clongdouble)):
        if dtype.itemsize > (16 if dtype.kind == "c" else 8):  # not where long double is double
            with pytest.raises(BufferError, match="has no DLPack type code"):
                dl.dlpack_dtype(dtype)
    producer = DamagedProducer(np.zeros(4, np.complex128), "quad")
    with pytest.raises(TypeError, match="x: DLPack type code 2 with 128 bits has no NumPy type"):
        as_array_view(producer, name="x")
    gc.collect()
