"""DeviceArray: validation and the DLPack exporter (CPU tier), round trips and interop (GPU tier)."""

from __future__ import annotations

import ctypes
import gc
import weakref

import ml_dtypes
import numpy as np
import pytest

import pycudnn
import pycutensor
from _nvbind import array_checks, host_copy
from _nvbind import device_array as da
from _nvbind import dlpack as dl
from _nvbind.arrays import as_array_view
from _nvbind.cuda import driver_status
from pycudnn import DeviceArray, layout

# -- CPU tier: validation before any device is touched ----------------------------------------


def test_same_class_in_both_packages() -> None:
    assert pycudnn.DeviceArray is pycutensor.DeviceArray is DeviceArray


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"shape": (2, -1)}, ValueError, "non-negative"),
        ({"shape": "2x3"}, TypeError, "sequence"),
        ({"shape": (2.0, 3)}, TypeError, "int"),
        ({"shape": (True, 3)}, TypeError, "int"),
        ({"shape": (1,) * 33}, ValueError, "at most"),
        ({"shape": (2, 3), "dtype": object}, TypeError, "device memory"),
        ({"shape": (2, 3), "dtype": "not-a-type"}, TypeError, "dtype"),
        (
            {"shape": (2, 3), "dtype": np.dtype([("a", "f4"), ("b", "i4")])},
            TypeError,
            "device memory",
        ),
        ({"shape": (2, 3), "dtype": ">f4"}, TypeError, "big-endian"),
        ({"shape": (2, 3), "strides": (3, -1)}, ValueError, "negative"),
        ({"shape": (2, 3), "strides": (3,)}, ValueError, "entries"),
        ({"shape": (2, 3), "strides": (3, 1.0)}, TypeError, "int"),
        ({"shape": (2, 3, 4, 5), "strides": (60, 20, 5, 1), "fmt": "NHWC"}, ValueError, "disagree"),
        ({"shape": (2, 64, 4, 4), "fmt": "NC/32HW32"}, ValueError, "vectors"),
        ({"shape": (2, 3, 4), "fmt": "NCHW"}, ValueError, "format"),
        ({"shape": (0, 3, 4, 4), "fmt": "NHWC"}, ValueError, "positive"),
    ],
)
def test_empty_validates_before_touching_a_device(kwargs: dict, error: type, match: str) -> None:
    # Without a GPU a valid call raises RuntimeError; these must fail earlier, on the arguments.
    with pytest.raises(error, match=match):
        DeviceArray.empty(**kwargs)
    with pytest.raises(error, match=match):
        DeviceArray.zeros(**kwargs)


def test_factories_without_a_gpu_say_why() -> None:
    st = driver_status()
    if st.usable:
        pytest.skip("this machine has a usable GPU")
    for called, make in (
        ("DeviceArray.empty", lambda: DeviceArray.empty((2, 3))),
        ("DeviceArray.zeros", lambda: DeviceArray.zeros((2, 3), np.float16)),
        ("DeviceArray.from_numpy", lambda: DeviceArray.from_numpy(np.ones(3))),
    ):
        # The message names the factory that was called (zeros is built on empty).
        with pytest.raises(RuntimeError, match=rf"^{called} needs a CUDA GPU") as info:
            make()
        assert st.reason in str(info.value)


def test_from_numpy_validates_the_dtype_first() -> None:
    with pytest.raises(TypeError, match="device memory"):
        DeviceArray.from_numpy(np.array([object()]))


def test_from_array_refuses_host_and_non_arrays() -> None:
    with pytest.raises(TypeError, match="from_numpy"):
        DeviceArray.from_array(np.zeros(3))
    with pytest.raises(TypeError):
        DeviceArray.from_array(object())
    with pytest.raises(TypeError):
        DeviceArray.from_array([1, 2, 3])


def host_buffer(nbytes: int) -> tuple[object, np.ndarray]:
    """A cuda.core Buffer over host bytes: exercises DeviceArray's bookkeeping only (no device
    reads it, and nothing below asks for a device)."""
    from cuda.core import Buffer

    backing = np.zeros(nbytes, np.uint8)
    return Buffer.from_handle(backing.ctypes.data, nbytes, owner=backing), backing


def test_constructor_checks_the_layout_fits_the_buffer() -> None:
    buf, backing = host_buffer(64)
    with pytest.raises(ValueError, match="buffer has 64"):
        DeviceArray(buf, (5, 4), np.float32)
    with pytest.raises(ValueError, match="buffer has 64"):
        DeviceArray(buf, (4, 4), np.float32, offset=4)
    with pytest.raises(ValueError, match="buffer has 64"):
        DeviceArray(buf, (4,), np.float32, strides=(-1,))  # element 0 at the start, the rest below
    with pytest.raises(ValueError, match="offset"):
        DeviceArray(buf, (4,), np.float32, offset=-4)
    with pytest.raises(TypeError, match=r"cuda\.core Buffer"):
        DeviceArray(backing, (4,), np.float32)
    a = DeviceArray(buf, (4,), np.float32, strides=(-1,), offset=12)  # a reversed view
    assert a.ptr == int(buf.handle) + 12  # type: ignore[attr-defined]
    assert DeviceArray(buf, (0, 100), np.float32).size == 0  # empty arrays reach no byte


def test_bookkeeping_and_cuda_array_interface_dict() -> None:
    buf, _ = host_buffer(96)
    a = DeviceArray(buf, (2, 3, 4), np.float32)
    assert (a.shape, a.strides, a.ndim, a.size, a.itemsize, a.nbytes) == (
        (2, 3, 4),
        (12, 4, 1),
        3,
        24,
        4,
        96,
    )
    assert a.is_c_contiguous and not a.readonly and a.buffer is buf
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (2, 3, 4)
    assert cai["strides"] is None  # C-contiguous
    assert cai["data"] == (int(buf.handle), False)  # type: ignore[attr-defined]
    t = DeviceArray(buf, (4, 3), np.float32, strides=(1, 4), readonly=True)  # column-major
    cai = t.__cuda_array_interface__
    assert cai["strides"] == (4, 16)  # bytes
    assert cai["data"][1] is True
    bf = DeviceArray(buf, (8,), ml_dtypes.bfloat16)
    assert bf.__cuda_array_interface__["typestr"] == "<V2"  # CAI cannot name bf16 (use DLPack)
    assert "shape=(2, 3, 4)" in repr(a) and "float32" in repr(a)


def test_close_and_closed_errors() -> None:
    buf, _ = host_buffer(16)
    a = DeviceArray(buf, (4,), np.float32)
    with a as same:
        assert same is a
    assert a.closed
    a.close()  # idempotent
    for use in (lambda: a.ptr, lambda: a.buffer, a._array_view, lambda: a.__cuda_array_interface__):
        with pytest.raises(pycudnn.ClosedError):
            use()
    with pytest.raises(pycudnn.ClosedError):
        a.__dlpack__()
    with pytest.raises(pycudnn.ClosedError), a:
        pass
    assert "closed" in repr(a)


# -- CPU tier: array views of NumPy arrays ----------------------------------------------------


def test_as_array_view_of_numpy_arrays() -> None:
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    v = as_array_view(a)
    assert (v.ptr, v.shape, v.strides, v.device_id) == (a.ctypes.data, (3, 4, 5), (20, 5, 1), -1)
    sliced = a[:, ::2, 1:]
    v = as_array_view(sliced)
    assert v.strides == (20, 10, 1) and v.ptr == a.ctypes.data + 4
    rev = a[:, ::-1]
    v = as_array_view(rev)
    assert v.strides == (20, -5, 1)
    assert v.ptr == rev.__array_interface__["data"][0] == a.ctypes.data + 3 * 5 * 4
    t = as_array_view(a.T)
    assert t.strides == (1, 5, 20) and not t.readonly
    ro = a.copy()
    ro.flags.writeable = False
    assert as_array_view(ro).readonly


@pytest.mark.parametrize(
    "dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2], ids=str
)
def test_as_array_view_names_ml_dtypes_host_arrays(dtype: object) -> None:
    # NumPy's array interface shows these as raw bytes ('<V2', '<V1'); the view reads the dtype
    # object instead, so host bf16/fp8 arrays are described as what they are.
    a = np.arange(24, dtype=np.float32).astype(dtype).reshape(2, 3, 4)[:, ::-1]
    v = as_array_view(a)
    assert v.dtype == np.dtype(dtype)
    assert v.shape == (2, 3, 4) and v.strides == (12, -4, 1)
    assert v.ptr == a.ctypes.data and v.device_id == -1


def test_as_array_view_refuses_raw_bytes() -> None:
    with pytest.raises(TypeError, match="raw bytes"):
        as_array_view(np.zeros(4, "V2"), name="b")


# -- CPU tier: the DLPack exporter, consumed by NumPy -----------------------------------------

# Type codes from dlpack.h (DLDataTypeCode).
DLPACK_CODES = [
    (np.bool_, 6, 8),
    (np.int8, 0, 8),
    (np.int64, 0, 64),
    (np.uint16, 1, 16),
    (np.float16, 2, 16),
    (np.float32, 2, 32),
    (np.float64, 2, 64),
    (np.complex64, 5, 64),
    (np.complex128, 5, 128),
    (ml_dtypes.bfloat16, 4, 16),
    (ml_dtypes.float8_e4m3fn, 10, 8),
    (ml_dtypes.float8_e5m2, 12, 8),
    (ml_dtypes.float8_e4m3fnuz, 11, 8),
    (ml_dtypes.float8_e5m2fnuz, 13, 8),
    (ml_dtypes.float8_e8m0fnu, 14, 8),
]


@pytest.mark.parametrize(("dtype", "code", "bits"), DLPACK_CODES)
def test_dlpack_type_codes(dtype: object, code: int, bits: int) -> None:
    assert dl.dlpack_dtype(np.dtype(dtype)) == (code, bits)


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.float4_e2m1fn, np.dtype("V3")])
def test_dlpack_refuses_types_without_a_code(dtype: object) -> None:
    with pytest.raises(BufferError):
        dl.dlpack_dtype(np.dtype(dtype))


class HostExporter:
    """Exports a NumPy array through pycudnn's DLPack exporter, as kDLCPU."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)

    def __dlpack__(
        self, *, stream: object = None, max_version: object = None, **_: object
    ) -> object:
        a = self.array
        versioned = max_version is not None and max_version[0] >= 1  # type: ignore[index]
        return dl.export_dlpack(
            a.ctypes.data if a.size else 0,
            a.shape,
            tuple(s // a.itemsize for s in a.strides),
            a.dtype,
            (1, 0),
            owner=a,
            readonly=not a.flags.writeable,
            versioned=versioned,
        )


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        lambda: np.arange(60, dtype=np.float64).reshape(3, 4, 5)[:, ::2, 1:],
        lambda: np.arange(12, dtype=np.int16).reshape(3, 4).T,
        lambda: np.zeros((0, 3), np.float32),
        lambda: np.array(2.5),
        lambda: np.array([True, False, True]),
        lambda: np.arange(6, dtype=np.complex64),
    ],
)
def test_numpy_consumes_our_dlpack_export(make: object) -> None:
    a = make()  # type: ignore[operator]
    before = len(dl._exports)
    b = np.from_dlpack(HostExporter(a))
    assert b.shape == a.shape and b.dtype == a.dtype
    np.testing.assert_array_equal(b, a)
    if a.size:
        assert b.__array_interface__["data"][0] == a.__array_interface__["data"][0]  # no copy
        assert b.strides == a.strides
    del b
    gc.collect()
    assert len(dl._exports) == before  # the consumer's deleter released the export


def test_read_only_export_needs_versioned_dlpack() -> None:
    a = np.arange(4.0)
    a.flags.writeable = False
    if np.lib.NumpyVersion(np.__version__) >= "2.1.0":
        b = np.from_dlpack(HostExporter(a))  # NumPy 2.1+ asks for DLPack >= 1.0
        assert not b.flags.writeable
    else:  # NumPy 2.0 asks for a legacy capsule, which cannot say read-only: refused
        with pytest.raises(BufferError, match="read-only"):
            np.from_dlpack(HostExporter(a))
    with pytest.raises(BufferError, match="read-only"):
        HostExporter(a).__dlpack__()  # a legacy capsule cannot say read-only


def test_unconsumed_capsule_releases_its_export() -> None:
    a = np.arange(8, dtype=np.float32)
    before = len(dl._exports)
    for versioned in (True, False):
        capsule = dl.export_dlpack(
            a.ctypes.data, (8,), (1,), a.dtype, (1, 0), owner=a, versioned=versioned
        )
        assert len(dl._exports) == before + 1
        del capsule
        gc.collect()
        assert len(dl._exports) == before


def _read_capsule(capsule: object, name: bytes) -> dl._DLManagedTensorVersioned:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
    return dl._DLManagedTensorVersioned.from_address(get(capsule, name))


def test_bf16_and_fp8_travel_with_their_dlpack_codes() -> None:
    # NumPy cannot import these types, so read the exported structure directly.
    for dtype, code in (
        (ml_dtypes.bfloat16, 4),
        (ml_dtypes.float8_e4m3fn, 10),
        (ml_dtypes.float8_e5m2, 12),
    ):
        a = np.ones((3, 5), dtype)
        capsule = dl.export_dlpack(a.ctypes.data, (3, 5), (5, 1), a.dtype, (2, 0), owner=a)
        m = _read_capsule(capsule, b"dltensor_versioned")
        t = m.dl_tensor
        assert (m.version.major, m.version.minor) == (1, 1) and m.flags == 0
        assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (code, a.itemsize * 8, 1)
        assert (t.device.device_type, t.device.device_id) == (2, 0)
        assert t.ndim == 2 and list(t.shape[:2]) == [3, 5] and list(t.strides[:2]) == [5, 1]
        assert t.data == a.ctypes.data and t.byte_offset == 0
        del capsule


# -- GPU tier ---------------------------------------------------------------------------------

ROUND_TRIP_DTYPES = [
    np.float32,
    np.float64,
    np.float16,
    np.int8,
    np.uint8,
    np.int32,
    np.int64,
    np.bool_,
    np.complex64,
    ml_dtypes.bfloat16,
    ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2,
]


def sample(shape: tuple[int, ...], dtype: object, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0, 100, shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES)
def test_numpy_round_trip(gpu_device: int, dtype: object) -> None:
    a = sample((3, 4, 5), dtype)
    d = DeviceArray.from_numpy(a, device=gpu_device)
    assert d.shape == a.shape and d.dtype == a.dtype and d.device_id == gpu_device
    assert d.ptr % 256 == 0  # pool allocations are 256-byte aligned
    back = d.to_numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back.view(np.uint8), a.view(np.uint8))  # bit-exact
    d.close()
    assert d.closed


@pytest.mark.gpu
def test_strided_round_trips(gpu_device: int) -> None:
    base = sample((4, 6, 8), np.float32)
    kept = base[:, ::2, :]  # gaps, non-negative, non-overlapping: strides kept
    d = DeviceArray.from_numpy(kept)
    assert d.strides == tuple(s // 4 for s in kept.strides)
    np.testing.assert_array_equal(d.to_numpy(), kept)
    mirrored = base[:, ::-1]  # negative strides: copied C-contiguous
    m = DeviceArray.from_numpy(mirrored)
    assert m.is_c_contiguous
    np.testing.assert_array_equal(m.to_numpy(), mirrored)
    transposed = base.transpose(2, 0, 1)  # a permutation: kept
    t = DeviceArray.from_numpy(transposed)
    assert t.strides == (1, 48, 8)
    np.testing.assert_array_equal(t.to_numpy(), transposed)
    sparse = base[::4, ::6, ::8]  # much sparser than its data: compacted
    assert DeviceArray.from_numpy(sparse).is_c_contiguous


@pytest.mark.gpu
def test_empty_zeros_fmt_and_copy_from_numpy(gpu_device: int) -> None:
    x = sample((2, 3, 4, 5), np.float32)
    d = DeviceArray.empty(x.shape, np.float32, fmt="NHWC")
    assert d.strides == layout.packed_strides(x.shape, "NHWC")
    d.copy_from_numpy(x)
    np.testing.assert_array_equal(d.to_numpy(), x)
    # The bytes in memory are the NHWC order of the seed's definition.
    flat = DeviceArray(d.buffer, (x.size,), np.float32)
    np.testing.assert_array_equal(flat.to_numpy(), layout.to_format(x, "NHWC"))
    z = DeviceArray.zeros((3, 7), np.float16)
    np.testing.assert_array_equal(z.to_numpy(), np.zeros((3, 7), np.float16))
    with pytest.raises(ValueError, match="shape"):
        d.copy_from_numpy(x[0])
    with pytest.raises(TypeError, match="dtype"):
        d.copy_from_numpy(x.astype(np.float64))
    assert DeviceArray.empty((0, 4)).to_numpy().shape == (0, 4)


@pytest.mark.gpu
def test_copy_into_a_strided_view_keeps_the_gaps(gpu_device: int) -> None:
    whole = DeviceArray.from_numpy(np.full((4, 6), -1.0, np.float32))
    view = DeviceArray(whole.buffer, (4, 3), np.float32, strides=(6, 2), offset=4)  # odd columns
    view.copy_from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))
    expected = np.full((4, 6), -1.0, np.float32)
    expected[:, 1::2] = np.arange(12).reshape(4, 3)
    np.testing.assert_array_equal(whole.to_numpy(), expected)
    readonly = DeviceArray(whole.buffer, (4, 6), np.float32, readonly=True)
    with pytest.raises(ValueError, match="read-only"):
        readonly.copy_from_numpy(expected)


@pytest.mark.gpu
def test_cuda_array_interface_on_the_gpu(gpu_device: int) -> None:
    d = DeviceArray.from_numpy(sample((2, 3), np.float32))
    cai = d.__cuda_array_interface__
    assert cai["data"] == (d.ptr, False) and cai["strides"] is None
    assert cai["stream"] is not None and cai["stream"] != 0
    assert d.__dlpack_device__() == (2, gpu_device)


@pytest.mark.gpu
def test_dlpack_to_cupy(gpu_device: int) -> None:
    cp = pytest.importorskip("cupy")
    a = sample((3, 4, 5), np.float32)
    d = DeviceArray.from_numpy(a)
    c = cp.from_dlpack(d)
    assert c.data.ptr == d.ptr
    np.testing.assert_array_equal(cp.asnumpy(c), a)
    strided = DeviceArray.from_numpy(a[:, ::2])
    np.testing.assert_array_equal(cp.asnumpy(cp.from_dlpack(strided)), a[:, ::2])
    via_cai = cp.asarray(d)  # CuPy reads __cuda_array_interface__
    assert via_cai.data.ptr == d.ptr
    np.testing.assert_array_equal(cp.asnumpy(via_cai), a)


@pytest.mark.gpu
def test_dlpack_to_torch_including_bf16(gpu_device: int) -> None:
    torch = pytest.importorskip("torch")
    a = sample((4, 5), np.float32)
    t = torch.from_dlpack(DeviceArray.from_numpy(a))
    assert t.is_cuda and t.dtype == torch.float32
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    b = sample((4, 5), ml_dtypes.bfloat16)
    tb = torch.from_dlpack(DeviceArray.from_numpy(b))
    assert tb.dtype == torch.bfloat16
    np.testing.assert_array_equal(tb.float().cpu().numpy(), b.astype(np.float32))
    f8 = sample((8,), ml_dtypes.float8_e4m3fn)
    if hasattr(torch, "float8_e4m3fn"):
        t8 = torch.from_dlpack(DeviceArray.from_numpy(f8))
        assert t8.dtype == torch.float8_e4m3fn
        np.testing.assert_array_equal(t8.float().cpu().numpy(), f8.astype(np.float32))


@pytest.mark.gpu
def test_dlpack_to_jax(gpu_device: int) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    if not any(dev.platform == "gpu" for dev in jax.devices()):
        pytest.skip("JAX sees no GPU")
    a = sample((3, 4), np.float32)
    j = jnp.from_dlpack(DeviceArray.from_numpy(a))
    np.testing.assert_array_equal(np.asarray(j), a)


@pytest.mark.gpu
def test_device_array_wraps_foreign_arrays(gpu_device: int) -> None:
    a = sample((3, 4, 5), np.float32)
    cp = pytest.importorskip("cupy")
    c = cp.asarray(a)
    w = DeviceArray.from_array(c)
    assert w.ptr == c.data.ptr and w.shape == c.shape and w.buffer is None
    np.testing.assert_array_equal(w.to_numpy(), a)
    cs = c[:, ::2, ::-1]  # CuPy allows negative strides; the view keeps them
    ws = DeviceArray.from_array(cs)
    assert ws.strides == tuple(s // 4 for s in cs.strides)
    np.testing.assert_array_equal(ws.to_numpy(), a[:, ::2, ::-1])
    with pytest.raises(BufferError):
        ws.__dlpack__()  # negative strides do not travel
    w.close()  # a view: the CuPy array keeps its memory
    np.testing.assert_array_equal(cp.asnumpy(c), a)


@pytest.mark.gpu
def test_device_array_wraps_torch_and_jax(gpu_device: int) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.bfloat16, device="cuda").reshape(3, 4)
    w = DeviceArray.from_array(t)
    assert w.dtype == np.dtype(ml_dtypes.bfloat16) and w.ptr == t.data_ptr()
    np.testing.assert_array_equal(w.to_numpy().astype(np.float32), np.arange(12).reshape(3, 4))
    tt = t.t()
    wt = DeviceArray.from_array(tt)
    assert wt.strides == (1, 4)
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    if any(dev.platform == "gpu" for dev in jax.devices()):
        j = jnp.arange(6, dtype=jnp.float32)
        wj = DeviceArray.from_array(j)
        np.testing.assert_array_equal(wj.to_numpy(), np.arange(6, dtype=np.float32))


@pytest.mark.gpu
def test_dlpack_export_errors(gpu_device: int) -> None:
    d = DeviceArray.from_numpy(np.ones(3, np.float32))
    with pytest.raises(BufferError, match="copy"):
        d.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError):
        d.__dlpack__(stream=0)  # ambiguous per the DLPack spec
    assert d.__dlpack__(dl_device=(2, gpu_device), stream=-1) is not None


def test_close_defers_the_free_while_a_dlpack_export_is_alive() -> None:
    # DLPack: the producer's memory must stay valid until the consumer calls the deleter. close()
    # on an exported array therefore closes the array but hands the buffer's release to the
    # export. (The export is made with the same registry DeviceArray.__dlpack__ uses; asking the
    # array itself needs a device for its __dlpack_device__.)
    buf, _backing = host_buffer(64)
    a = DeviceArray(buf, (4,), np.float32)
    capsule = dl.export_dlpack(a.ptr, (4,), (1,), np.dtype(np.float32), (1, 0), owner=a)
    a.close()
    assert a.closed
    assert not buf.is_closed, "memory freed while a consumer still holds an export"
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is not None, "the export must keep the array (and its buffer) alive"
    del capsule  # an unconsumed capsule releases its export when it dies
    gc.collect()
    assert ref() is None


def test_close_frees_at_once_without_exports() -> None:
    buf, _backing = host_buffer(64)
    a = DeviceArray(buf, (4,), np.float32)
    a.close()
    assert buf.is_closed


@pytest.mark.gpu
def test_consumer_view_survives_producer_close() -> None:
    torch = pytest.importorskip("torch")
    a = np.arange(1024, dtype=np.float32)
    d = DeviceArray.from_numpy(a)
    t = torch.from_dlpack(d)
    d.close()  # the memory must stay valid until torch drops its view
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    del t


# -- CPU tier: the host side of transfers ---------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn, ml_dtypes.bfloat16, np.int16], ids=str
)
def test_staged_host_view_names_every_type(dtype: object) -> None:
    # Regression (H100 run): to_numpy of an fp8 array failed in as_strided with "data type '<f1'
    # not understood", because as_strided goes through the array interface. The staging view
    # that to_numpy/copy_from_numpy copy through is exercised here on host memory: a strided,
    # partly reversed array over a staging buffer holding its span.
    src = np.arange(1, 31, dtype=np.float32).astype(dtype).reshape(2, 3, 5)[:, ::-1, ::2]
    item = src.itemsize
    strides = tuple(s // item for s in src.strides)
    base = src.base
    assert base is not None
    lo, span = da.element_extent(src.shape, strides)
    low_address = src.ctypes.data + lo * item
    staging = np.frombuffer(
        (ctypes.c_char * (span * item)).from_address(low_address), dtype=src.dtype
    ).copy()
    arr = DeviceArray.__new__(DeviceArray)._init(
        None, src.ctypes.data, src.shape, strides, src.dtype, 0
    )
    view = host_copy._staged_view(arr, staging, low_address)
    assert view.dtype == src.dtype
    np.testing.assert_array_equal(view.astype(np.float32), src.astype(np.float32))


def test_layout_strides_of_a_vector_of_one_or_of_c() -> None:
    assert array_checks._layout_strides((2, 8, 3, 5), None, "NC/1HW1") == layout.packed_strides(
        (2, 8, 3, 5), "NCHW"
    )
    assert array_checks._layout_strides((2, 8, 3, 5), None, "NC/8HW8") == layout.packed_strides(
        (2, 8, 3, 5), "NHWC"
    )
    with pytest.raises(ValueError, match=r"DeviceArray.empty\(\(2, 2, 3, 5, 4\)"):
        array_checks._layout_strides((2, 8, 3, 5), None, "NC/4HW4")


# -- lifetimes and writes found wrong by a review ---------------------------------------------


def test_closing_a_view_of_a_foreign_array_keeps_it_while_an_export_lives() -> None:
    """close() dropped the foreign array a view holds before it looked for live exports, so
    `v.close()` with a consumer's capsule alive freed (say) CuPy's memory under the consumer."""
    from _nvbind.view import ArrayView

    class Foreign:  # the CuPy or PyTorch array that owns the memory
        def __init__(self) -> None:
            self.mem = np.arange(8, dtype=np.float32)

    src = Foreign()
    view = ArrayView(src.mem.ctypes.data, (8,), (1,), np.dtype(np.float32), 0, False, src)
    v = DeviceArray._from_view(view)  # as from_array and from_dlpack build it
    alive = weakref.ref(src)
    del src, view
    capsule = v.__dlpack__(stream=-1)
    v.close()
    gc.collect()
    assert v.closed and alive() is not None  # held while the consumer holds the capsule
    del capsule, v
    gc.collect()
    assert alive() is None


def test_an_array_read_by_an_operation_is_freed_when_its_last_reference_goes() -> None:
    """The cached view named the array (a reference cycle): after any operation read it, `del`
    left the memory to the cyclic collector, which does not count GPU bytes."""
    from _nvbind.arrays import array_view

    buf, _ = host_buffer(64)
    a = DeviceArray.__new__(DeviceArray)._init(buf, int(buf.handle), (16,), (1,),
                                               np.dtype(np.float32), 0)  # fmt: skip
    array_view(a, "x", 0)
    gone = weakref.ref(a)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del a
        assert gone() is None
    finally:
        if enabled:
            gc.enable()


def test_writing_through_a_layout_that_reaches_an_element_twice_is_refused() -> None:
    """Strides (3, 0) over shape (2, 2): the copy's span equalled the data's bytes, so it
    skipped reading back the gaps and wrote uninitialised staging bytes over them."""
    buf, _ = host_buffer(64)
    a = DeviceArray.__new__(DeviceArray)._init(buf, int(buf.handle), (2, 2), (3, 0),
                                               np.dtype(np.float32), 0)  # fmt: skip
    with pytest.raises(ValueError, match="reach some elements twice"):
        a.copy_from_numpy(np.ones((2, 2), np.float32))
