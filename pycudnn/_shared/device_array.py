"""``DeviceArray``: a strided array in GPU memory, the seed's Majel ``Array``.

A :class:`DeviceArray` is a *place* (a device), an *allocation* (a ``cuda.core`` ``Buffer`` from the
device's stream-ordered memory pool), *dims* (``shape``), *strides* (in elements) and a *dtype*
(NumPy, or ml_dtypes for bfloat16 and the fp8 types). It converts from and to NumPy, exposes
``__cuda_array_interface__`` v3 and DLPack (so CuPy, PyTorch, JAX and Numba take it without a
copy), and wraps their arrays in turn (:meth:`DeviceArray.from_array`). ``pycudnn.DeviceArray``
and ``pycutensor.DeviceArray`` are this class.

DLPack is exported by this module itself (a few ctypes structures, as in DLPack's own Python
example) rather than through ``cuda.core``'s ``StridedMemoryView``, whose exporter refuses the
ml_dtypes types: here bfloat16 and the fp8 types travel as DLPack's ``kDLBfloat`` and
``kDLFloat8_*`` codes.
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .arrays import ArrayView, as_array_view, element_extent
from .cuda import driver_status, get_device, stream_handle
from .dtypes import as_numpy_dtype, dtype_name
from .memory import allocate, stream_object
from .resource import ClosedError

__all__ = ["DeviceArray"]

_MAX_NDIM = 32
_INT64_MAX = 2**63 - 1  # DLPack, the CUDA array interface and NumPy hold extents in int64


# -- validation helpers ----------------------------------------------------------------------


def _check_shape(shape: Any, name: str = "shape") -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(shape).__name__}")
    out = []
    for i, n in enumerate(shape):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{name}[{i}] must be an int, got {type(n).__name__} {n!r}")
        if n < 0:
            raise ValueError(f"{name}[{i}] = {n}: extents must be non-negative")
        if n > _INT64_MAX:  # a zero stride lets such an extent fit any buffer
            raise ValueError(f"{name}[{i}] = {n}: extents must fit in int64 (<= 2**63 - 1)")
        out.append(int(n))
    if len(out) > _MAX_NDIM:
        raise ValueError(f"{name} has {len(out)} dims; at most {_MAX_NDIM} are supported")
    return tuple(out)


def _check_dtype(dtype: Any) -> np.dtype:
    dt = as_numpy_dtype(dtype)
    if dt.hasobject or dt.fields is not None or dt.subdtype is not None or dt.itemsize == 0:
        raise TypeError(
            f"dtype {dt} cannot live in device memory: use a numeric, bool or ml_dtypes type"
        )
    if dt.byteorder == ">":
        raise TypeError(f"dtype {dt} is big-endian; GPUs use little-endian data")
    return dt


def _check_strides(
    strides: Any, shape: tuple[int, ...], *, allow_negative: bool
) -> tuple[int, ...]:
    if isinstance(strides, (str, bytes)) or not isinstance(strides, Sequence):
        raise TypeError(f"strides must be a sequence of ints, got {type(strides).__name__}")
    if len(strides) != len(shape):
        raise ValueError(f"strides has {len(strides)} entries but shape has {len(shape)}")
    out = []
    for i, s in enumerate(strides):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"strides[{i}] must be an int, got {type(s).__name__} {s!r}")
        if s < 0 and not allow_negative:
            raise ValueError(f"strides[{i}] = {s}: negative strides are not supported here")
        if abs(s) > _INT64_MAX:
            raise ValueError(f"strides[{i}] = {s}: strides must fit in int64 (|s| <= 2**63 - 1)")
        out.append(int(s))
    return tuple(out)


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _overlaps(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    if math.prod(shape) <= 1:
        return False
    from .. import layout  # pycudnn.layout is pure Python; imported late to keep this module light

    return layout.is_overlapping(shape, strides)


def _device_or_raise(device: Any, what: str) -> Any:
    """``cuda.core.Device`` for ``device``; without a usable GPU a RuntimeError that says why."""
    try:
        return get_device(device)
    except (TypeError, ValueError, ImportError):
        raise
    except Exception as exc:  # cuda.core's CUDAError, cuda.pathfinder's DynamicLibNotFoundError
        reason = driver_status().reason or f"{type(exc).__name__}: {exc}"
        raise RuntimeError(f"{what} needs a CUDA GPU, but none is usable: {reason}") from exc


# -- DLPack export ---------------------------------------------------------------------------

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13
_DLPACK_VERSION = (1, 1)
_FLAG_READ_ONLY = 1

# dlpack.h DLDataTypeCode values, by NumPy kind and by ml_dtypes name.
_KIND_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_NAMED_CODES = {
    "bfloat16": 4,
    "float8_e3m4": 7,
    "float8_e4m3": 8,
    "float8_e4m3b11fnuz": 9,
    "float8_e4m3fn": 10,
    "float8_e4m3fnuz": 11,
    "float8_e5m2": 12,
    "float8_e5m2fnuz": 13,
    "float8_e8m0fnu": 14,
}


class _DLDevice(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class _DLDataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class _DLTensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    )


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = (("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter))


class _DLPackVersion(ctypes.Structure):
    _fields_ = (("major", ctypes.c_uint32), ("minor", ctypes.c_uint32))


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = (
        ("version", _DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    )


# Exported tensors by the address of their managed struct: the struct, its shape/strides arrays
# and the exporting object stay alive until the consumer calls the deleter (or the unconsumed
# capsule dies).
_exports: dict[int, tuple[Any, ...]] = {}
_exports_lock = threading.Lock()


def _release(address: int | None) -> None:
    if address:
        with _exports_lock:
            entry = _exports.pop(int(address), None)
        # Dropped outside the lock: the owner's teardown can release another export (an owner
        # that is itself a consumer's view of one of ours), which would deadlock on the lock.
        del entry


def _has_live_exports(owner: Any) -> bool:
    """Whether a DLPack export of ``owner`` has not been released by its consumer yet."""
    with _exports_lock:
        return any(entry[3] is owner for entry in _exports.values())


def _python_api(name: str, restype: Any, *argtypes: Any) -> Any:
    # A private prototype: the function objects of ctypes.pythonapi are shared with every other
    # user, who may set their argtypes/restype (tests and user code do, e.g. PyCapsule_GetPointer
    # with a py_object argument), which silently broke the release of unconsumed exports.
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


# Python code cannot run while an exception is pending: the first call it makes fails (SystemError,
# or ctypes raising the pending exception) and the exception is lost. A capsule dies with one
# pending whenever a consumer refuses it (NumPy: "Unsupported device in DLTensor"), so the callbacks
# below first move it aside with PyErr_Fetch, through arguments built here and without argtypes:
# building them, or converting them, would be such a call. Their last act puts it back with
# PyErr_Restore, which hands it to sys.unraisablehook (ctypes callbacks cannot raise into C): the
# consumer's call then fails with SystemError, but the export is released and the cause reported.
_PyErr_Fetch = _python_api("PyErr_Fetch", None)  # no argtypes: no converter may run first
_PyErr_Restore = _python_api("PyErr_Restore", None, *(ctypes.c_void_p,) * 3)
_PENDING = (ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p())
_FETCH_ARGS = tuple(ctypes.byref(p) for p in _PENDING)


_pending_lock = threading.Lock()


def _take_pending() -> tuple[int | None, int | None, int | None]:
    # Read and cleared under a lock, so that two threads never restore the same references (a
    # thread switch right after the fetch could at worst make one report go missing).
    with _pending_lock:
        pending = (_PENDING[0].value, _PENDING[1].value, _PENDING[2].value)
        _PENDING[0].value = _PENDING[1].value = _PENDING[2].value = None
    return pending


@_Deleter
def _deleter(address: int | None) -> None:  # called by the consumer, from C
    _PyErr_Fetch(*_FETCH_ARGS)  # first, see above
    pending = _take_pending()
    try:
        _release(address)
    except Exception:  # pragma: no cover - never raise into C
        pass
    if pending[0]:
        _PyErr_Restore(*pending)


_NAME = b"dltensor"
_NAME_VERSIONED = b"dltensor_versioned"
_PyCapsule_New = _python_api(
    "PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)
_PyCapsule_IsValid = _python_api(
    "PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
)
_PyCapsule_GetPointer = _python_api(
    "PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p
)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int | None) -> None:
    # A consumer renames the capsule ("used_dltensor") and owns the tensor from then on; only a
    # capsule that was never consumed still carries our name and must release the export here.
    _PyErr_Fetch(*_FETCH_ARGS)  # first, see above _PyErr_Fetch
    pending = _take_pending()
    try:
        for name in (_NAME, _NAME_VERSIONED):
            if _PyCapsule_IsValid(capsule, name):
                _release(_PyCapsule_GetPointer(capsule, name))
                break
    except Exception:  # pragma: no cover - never raise into C
        pass
    if pending[0]:
        _PyErr_Restore(*pending)


def dlpack_dtype(dtype: np.dtype) -> tuple[int, int]:
    """``(DLDataTypeCode, bits)`` for ``dtype``; BufferError for types DLPack cannot carry."""
    dt = np.dtype(dtype)
    code = _NAMED_CODES.get(dt.name)
    if code is None and dt.kind in _KIND_CODES and dt.fields is None:
        code = _KIND_CODES[dt.kind]
    if code is None or (dt.kind in "iuf" and dt.itemsize not in (1, 2, 4, 8)):
        raise BufferError(f"dtype {dtype_name(dt)} has no DLPack type code")
    if dt.kind == "b" and dt.itemsize != 1:
        raise BufferError(f"dtype {dt} is not an 8-bit bool")
    return code, dt.itemsize * 8


def export_dlpack(
    ptr: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    dtype: np.dtype,
    device: tuple[int, int],
    *,
    owner: Any,
    readonly: bool = False,
    versioned: bool = True,
) -> Any:
    """A DLPack capsule for the given memory; ``owner`` is kept alive until the consumer is done.

    ``versioned`` gives a ``DLManagedTensorVersioned`` ("dltensor_versioned", DLPack >= 1.0, which
    can say read-only); otherwise a legacy ``DLManagedTensor`` ("dltensor"), refused for read-only
    data as NumPy does.
    """
    code, bits = dlpack_dtype(dtype)
    if readonly and not versioned:
        raise BufferError(
            "cannot export read-only data through DLPack < 1.0, which cannot signal read-only; "
            "the consumer should ask with max_version=(1, 0) or later"
        )
    ndim = len(shape)
    # ctypes masks an int to 64 bits without a word (2**64 + 5 becomes 5), and the consumer would
    # then read a tensor of the wrong size.
    if any(not 0 <= n <= _INT64_MAX for n in shape) or any(
        not -_INT64_MAX <= st <= _INT64_MAX for st in strides
    ):
        raise BufferError(f"shape {shape} or strides {strides} do not fit DLPack's int64 fields")
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides)
    managed: Any = _DLManagedTensorVersioned() if versioned else _DLManagedTensor()
    t = managed.dl_tensor
    t.data = ptr or None
    t.device = _DLDevice(*device)
    t.ndim = ndim
    t.dtype = _DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64)) if ndim else None
    t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64)) if ndim else None
    t.byte_offset = 0
    managed.manager_ctx = None
    managed.deleter = _deleter
    if versioned:
        managed.version = _DLPackVersion(*_DLPACK_VERSION)
        managed.flags = _FLAG_READ_ONLY if readonly else 0
    address = ctypes.addressof(managed)
    with _exports_lock:
        _exports[address] = (managed, shape_arr, strides_arr, owner)
    try:
        return _PyCapsule_New(
            address,
            _NAME_VERSIONED if versioned else _NAME,
            ctypes.cast(_capsule_destructor, ctypes.c_void_p),
        )
    except BaseException:
        _release(address)
        raise


def _same_stream(a: int, b: int) -> bool:
    # 0 (NULL) and 1 (CU_STREAM_LEGACY) both name the legacy default stream.
    return (a or 1) == (b or 1)


# -- DeviceArray -----------------------------------------------------------------------------


class DeviceArray:
    """A strided array in GPU memory: place (device), allocation, shape, strides, dtype.

    Create one with :meth:`empty`, :meth:`zeros`, :meth:`from_numpy` or :meth:`from_array` (a
    view of another library's array). The constructor wraps an existing ``cuda.core`` ``Buffer``:
    ``DeviceArray(buffer, shape, dtype, strides=None, *, offset=0, readonly=False, stream=None)``
    with ``strides`` in elements (default C order), ``offset`` the byte offset of element 0 from
    the buffer's start (every element must lie inside the buffer) and ``stream`` the stream the
    data is produced on. The array takes the buffer over: :meth:`close` closes it.

    Memory is freed by :meth:`close` (or when the last reference goes), in the order of the
    stream it was allocated on, so work already queued there still sees valid memory.
    """

    __slots__ = (
        "__weakref__",
        "_buffer",
        "_deferred_buffer",
        "_device_id",
        "_dtype",
        "_owner",
        "_ptr",
        "_readonly",
        "_shape",
        "_stream",
        "_strides",
        "_view",
    )

    def __init__(
        self,
        buffer: Any,
        shape: Sequence[int] | int,
        dtype: Any,
        strides: Sequence[int] | None = None,
        *,
        offset: int = 0,
        readonly: bool = False,
        stream: Any = None,
    ) -> None:
        if not (hasattr(buffer, "handle") and hasattr(buffer, "size")):
            raise TypeError(
                f"buffer must be a cuda.core Buffer (use DeviceArray.empty / from_numpy / "
                f"from_array to make one), not {type(buffer).__name__}"
            )
        shp = _check_shape(shape)
        dt = _check_dtype(dtype)
        st = (
            _check_strides(strides, shp, allow_negative=True)
            if strides is not None
            else _c_strides(shp)
        )
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
            raise ValueError(f"offset must be a non-negative int (bytes), got {offset!r}")
        lo, span = element_extent(shp, st)
        first = int(offset) + lo * dt.itemsize
        if span and (first < 0 or first + span * dt.itemsize > int(buffer.size)):
            raise ValueError(
                f"shape {shp} with strides {st} at byte offset {offset} reaches bytes "
                f"[{first}, {first + span * dt.itemsize}) but the buffer has {int(buffer.size)}"
            )
        if stream is not None:
            from .cuda import require_cuda_core

            core = require_cuda_core()
            if not isinstance(stream, core.Stream):
                handle = stream_handle(stream)
                stream = core.Stream.from_handle(handle) if handle else None
        self._init(
            buffer,
            int(buffer.handle) + int(offset),
            shp,
            st,
            dt,
            None,
            readonly=bool(readonly),
            stream=stream,
            owner=None,
        )

    def _init(  # noqa: PLR0917 - private initialiser shared by the factories
        self,
        buffer: Any,
        ptr: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: np.dtype,
        device_id: int | None,
        *,
        readonly: bool,
        stream: Any,
        owner: Any,
    ) -> None:
        self._buffer = buffer
        self._ptr: int | None = ptr
        self._shape = shape
        self._strides = strides
        self._dtype = dtype
        self._device_id = device_id
        self._readonly = readonly
        self._stream = stream
        self._owner = owner
        self._view: ArrayView | None = None

    @classmethod
    def _new(  # noqa: PLR0917 - private constructor
        cls,
        buffer: Any,
        ptr: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: np.dtype,
        device_id: int | None,
        *,
        readonly: bool = False,
        stream: Any = None,
        owner: Any = None,
    ) -> DeviceArray:
        self = cls.__new__(cls)
        self._init(
            buffer,
            ptr,
            shape,
            strides,
            dtype,
            device_id,
            readonly=readonly,
            stream=stream,
            owner=owner,
        )
        return self

    # -- factories -----------------------------------------------------------------------
    @classmethod
    def empty(
        cls,
        shape: Sequence[int] | int,
        dtype: Any = np.float32,
        *,
        device: Any = None,
        stream: Any = None,
        strides: Sequence[int] | None = None,
        fmt: str | None = None,
    ) -> DeviceArray:
        """An uninitialised array from the device's stream-ordered pool.

        ``strides`` (elements, non-negative) or ``fmt`` (a :mod:`pycudnn.layout` format such as
        ``"NHWC"``, with ``shape`` in logical order) choose the layout; default C order.
        """
        shp = _check_shape(shape)
        dt = _check_dtype(dtype)
        st = _layout_strides(shp, strides, fmt)
        _, span = element_extent(shp, st)
        if span * dt.itemsize > _INT64_MAX:  # refused here rather than by the allocator
            raise ValueError(
                f"shape {shp} of {dtype_name(dt)} spans {span * dt.itemsize} bytes, more memory "
                "than exists"
            )
        dev = _device_or_raise(device, "DeviceArray.empty")
        s = stream_object(stream, dev)
        buf = allocate(span * dt.itemsize, device=dev, stream=s)
        return cls._new(buf, int(buf.handle), shp, st, dt, int(dev.device_id), stream=s)

    @classmethod
    def zeros(
        cls,
        shape: Sequence[int] | int,
        dtype: Any = np.float32,
        *,
        device: Any = None,
        stream: Any = None,
        strides: Sequence[int] | None = None,
        fmt: str | None = None,
    ) -> DeviceArray:
        """Like :meth:`empty`, filled with zero bytes (0 in every supported type)."""
        out = cls.empty(shape, dtype, device=device, stream=stream, strides=strides, fmt=fmt)
        out._buffer.fill(0, stream=out._stream)
        return out

    @classmethod
    def from_numpy(cls, array: Any, *, device: Any = None, stream: Any = None) -> DeviceArray:
        """Copy a NumPy array to the GPU (waits until the copy is done).

        The array's strides are kept when they are non-negative, whole elements, non-overlapping
        and not much sparser than the data (the span copied is at most twice the data); otherwise
        the copy is C-contiguous.
        """
        a = np.asarray(array)
        dt = _check_dtype(a.dtype)
        shp = a.shape
        item = dt.itemsize
        keep = (
            a.size > 0
            and all(s >= 0 and s % item == 0 for s in a.strides)
            and not _overlaps(shp, tuple(s // item for s in a.strides))
        )
        if keep:
            st = tuple(s // item for s in a.strides)
            keep = element_extent(shp, st)[1] <= 2 * a.size
        if not keep:
            a = np.ascontiguousarray(a)
        st = tuple(s // item for s in a.strides) if a.size else _c_strides(shp)
        dev = _device_or_raise(device, "DeviceArray.from_numpy")
        s = stream_object(stream, dev)
        _, span = element_extent(shp, st)
        buf = allocate(span * item, device=dev, stream=s)
        out = cls._new(buf, int(buf.handle), shp, st, dt, int(dev.device_id), stream=s)
        if span:
            _copy(dev, s, dst=buf, src=_host_buffer(a.ctypes.data, span * item, a))
            s.sync()
        return out

    @classmethod
    def from_array(cls, obj: Any, *, stream: Any = None) -> DeviceArray:
        """A view (no copy) of another library's GPU array: CuPy, PyTorch, JAX, Numba, ...

        Works through DLPack or ``__cuda_array_interface__``; ``stream`` is the stream the view
        will be used on (the producer's work is ordered before it). The view keeps ``obj`` alive
        and never frees its memory. Host arrays are refused (use :meth:`from_numpy`).
        """
        if isinstance(obj, DeviceArray):
            return obj
        if isinstance(obj, np.ndarray):
            raise TypeError("obj is a NumPy (host) array; copy it with DeviceArray.from_numpy(obj)")
        view = as_array_view(obj, name="obj", stream_ptr=stream_handle(stream))
        if view.device_id < 0:
            raise ValueError("obj is host memory; copy it with DeviceArray.from_numpy")
        return cls._new(
            None,
            view.ptr,
            view.shape,
            view.strides,
            _check_dtype(view.dtype),
            view.device_id,
            readonly=view.readonly,
            stream=None,
            owner=view.owner,
        )

    # -- properties ----------------------------------------------------------------------
    @property
    def ptr(self) -> int:
        """Address of element 0 (an int); ClosedError once closed."""
        ptr = self._ptr
        if ptr is None:
            raise ClosedError("this DeviceArray is closed")
        return ptr

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements (NumPy's ``strides`` are in bytes)."""
        return self._strides

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def itemsize(self) -> int:
        return int(self._dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes of data (``size * itemsize``), not counting gaps a strided layout leaves."""
        return self.size * self.itemsize

    @property
    def device_id(self) -> int:
        if self._device_id is None:
            self._device_id = int(self._buffer.device_id)
        return self._device_id

    @property
    def buffer(self) -> Any:
        """The ``cuda.core`` Buffer holding the data (None for a view of a foreign array)."""
        self.ptr  # noqa: B018 - raises ClosedError once closed
        return self._buffer

    @property
    def stream(self) -> Any:
        """The ``cuda.core`` Stream the memory was allocated on (None for foreign views)."""
        return self._stream

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def closed(self) -> bool:
        return self._ptr is None

    is_closed = closed

    @property
    def is_c_contiguous(self) -> bool:
        return all(
            n <= 1 or s == c
            for n, s, c in zip(self._shape, self._strides, _c_strides(self._shape), strict=True)
        )

    # -- the operations' fast path -------------------------------------------------------
    def _array_view(self) -> ArrayView:
        view = self._view
        if view is None:
            view = self._view = ArrayView(
                self.ptr,
                self._shape,
                self._strides,
                self._dtype,
                self.device_id,
                self._readonly,
                self,
            )
        elif self._ptr is None:
            raise ClosedError("this DeviceArray is closed")
        return view

    # -- interchange ---------------------------------------------------------------------
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """CUDA array interface v3: byte strides, and the allocation stream to synchronise on.

        bfloat16 and fp8 have no NumPy type string and appear as raw bytes (``'<V2'``, ``'<V1'``),
        as with other libraries; exchange them through DLPack, which names them.
        """
        ptr = self.ptr
        stream = None
        if self._stream is not None:
            stream = int(self._stream.handle) or 1  # 0 is not allowed here; 1 = legacy default
        return {
            "shape": self._shape,
            "typestr": self._dtype.str,
            "descr": [("", self._dtype.str)],
            "data": (ptr if self.size else 0, self._readonly),
            "strides": None
            if self.is_c_contiguous
            else tuple(s * self.itemsize for s in self._strides),
            "version": 3,
            "stream": stream,
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        self.ptr  # noqa: B018 - raises ClosedError once closed
        return (_KDL_CUDA, self.device_id)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export through DLPack (any dtype with a DLPack code, bfloat16 and fp8 included).

        ``stream`` is the consumer's stream (None: the legacy default stream, -1: no
        synchronisation); it is made to wait for this array's allocation stream.
        """
        self.ptr  # noqa: B018
        if copy:
            raise BufferError("DeviceArray exports without copying; copy=True is not supported")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"DeviceArray lives on {self.__dlpack_device__()}, not {dl_device}")
        if any(s < 0 for n, s in zip(self._shape, self._strides, strict=True) if n > 1):
            raise BufferError("arrays with negative strides cannot be exported through DLPack")
        if stream is not None and stream != -1:
            if isinstance(stream, bool) or not isinstance(stream, int) or stream == 0:
                raise BufferError(
                    f"stream must be None, -1 or a CUDA stream handle > 0, got {stream!r}"
                )
            self._order_before(stream)
        elif stream is None:
            self._order_before(1)
        versioned = max_version is not None and int(max_version[0]) >= 1
        return export_dlpack(
            self.ptr if self.size else 0,
            self._shape,
            self._strides,
            self._dtype,
            (_KDL_CUDA, self.device_id),
            owner=self,
            readonly=self._readonly,
            versioned=versioned,
        )

    def _order_before(self, consumer: int) -> None:
        producer = self._stream
        if producer is None or _same_stream(int(producer.handle), consumer):
            return
        from .cuda import require_cuda_core

        core = require_cuda_core()
        core.Stream.from_handle(consumer).wait(producer)

    # -- host transfers ------------------------------------------------------------------
    def _span(self) -> tuple[int, int]:
        """``(address of the lowest element, bytes spanned)``."""
        lo, span = element_extent(self._shape, self._strides)
        return self.ptr + lo * self.itemsize, span * self.itemsize

    def _copy_stream(self, stream: Any) -> tuple[Any, Any]:
        dev = _device_or_raise(self.device_id, "DeviceArray host transfer")
        return dev, (
            stream_object(stream, dev) if stream is not None else self._stream or dev.default_stream
        )

    def to_numpy(self, stream: Any = None) -> np.ndarray:
        """Copy to a new C-contiguous NumPy array (waits for the copy; strides are honoured).

        ``stream`` defaults to the stream the array was allocated on.
        """
        self.ptr  # noqa: B018
        host = np.empty(self._shape, dtype=self._dtype)
        base, nbytes = self._span()
        if not nbytes:
            return host
        dev, s = self._copy_stream(stream)
        staging = np.empty(nbytes // self.itemsize, dtype=self._dtype)
        _copy(
            dev,
            s,
            dst=_host_buffer(staging.ctypes.data, nbytes, staging),
            src=_device_buffer(base, nbytes, self),
        )
        s.sync()
        lo = (self.ptr - base) // self.itemsize
        view = np.lib.stride_tricks.as_strided(
            staging[lo:],
            self._shape,
            tuple(st * self.itemsize for st in self._strides),
            writeable=False,
        )
        host[...] = view
        return host

    def copy_from_numpy(self, array: Any, stream: Any = None) -> None:
        """Overwrite this array with a NumPy array of the same shape and dtype (waits).

        Strided layouts are honoured; bytes in the gaps between elements are preserved (read
        back and written again).
        """
        self.ptr  # noqa: B018
        a = np.asarray(array)
        if a.shape != self._shape:
            raise ValueError(f"array has shape {a.shape}, this DeviceArray {self._shape}")
        if a.dtype != self._dtype:
            raise TypeError(
                f"array has dtype {dtype_name(a.dtype)}, this DeviceArray {dtype_name(self._dtype)}; "
                "convert it first (array.astype(...))"
            )
        if self._readonly:
            raise ValueError("this DeviceArray is read-only")
        base, nbytes = self._span()
        if not nbytes:
            return
        dev, s = self._copy_stream(stream)
        staging = np.empty(nbytes // self.itemsize, dtype=self._dtype)
        device_span = _device_buffer(base, nbytes, self)
        if nbytes != self.nbytes:  # gaps between elements belong to someone else: keep them
            _copy(dev, s, dst=_host_buffer(staging.ctypes.data, nbytes, staging), src=device_span)
            s.sync()
        lo = (self.ptr - base) // self.itemsize
        np.lib.stride_tricks.as_strided(
            staging[lo:], self._shape, tuple(st * self.itemsize for st in self._strides)
        )[...] = a
        _copy(dev, s, dst=device_span, src=_host_buffer(staging.ctypes.data, nbytes, staging))
        s.sync()

    # -- lifetime ------------------------------------------------------------------------
    def close(self, stream: Any = None) -> None:
        """Free the memory now, in stream order (``stream`` defaults to the allocation stream).

        Views of foreign arrays just drop their reference. Calling it again does nothing.
        """
        if self._ptr is None:
            return
        self._ptr = None
        self._view = None
        buf, self._buffer = self._buffer, None
        self._owner = None
        if buf is not None and _has_live_exports(self):
            # A DLPack consumer still uses this memory: freeing it now would hand the consumer
            # freed memory. The export keeps this object (and so the buffer) alive; the memory
            # goes back to the pool when the consumer releases its last export.
            self._deferred_buffer = buf
            return
        if buf is not None:
            if stream is not None:
                dev = get_device(self.device_id)
                buf.close(stream_object(stream, dev))
            else:
                buf.close(self._stream)

    def __enter__(self) -> DeviceArray:
        self.ptr  # noqa: B018
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._ptr is None:
            return f"DeviceArray(closed, shape={self._shape}, dtype={dtype_name(self._dtype)})"
        device = self._device_id if self._device_id is not None else "?"
        return (
            f"DeviceArray(shape={self._shape}, dtype={dtype_name(self._dtype)}, "
            f"strides={self._strides}, device={device})"
        )


def _layout_strides(
    shape: tuple[int, ...], strides: Sequence[int] | None, fmt: str | None
) -> tuple[int, ...]:
    packed: tuple[int, ...] | None = None
    if fmt is not None:
        from .. import layout

        if math.prod(shape) == 0:
            raise ValueError(f"fmt={fmt!r} needs positive extents, got shape {shape}")
        f = layout.parse_format(fmt)
        if f.is_vectorized:
            view_shape, _ = layout.vectorized_dims_strides(shape, f)
            raise ValueError(
                f"fmt {f.name!r} splits C into vectors and has no per-dim strides; allocate its "
                f"packed view instead: DeviceArray.empty({view_shape}, ...)"
            )
        packed = layout.packed_strides(shape, f)
    if strides is None:
        return packed if packed is not None else _c_strides(shape)
    st = _check_strides(strides, shape, allow_negative=False)
    if packed is not None and st != packed:
        raise ValueError(f"strides {st} disagree with fmt {fmt!r} (packed strides {packed})")
    return st


def _host_buffer(ptr: int, nbytes: int, owner: Any) -> Any:
    from .cuda import require_cuda_core

    return require_cuda_core().Buffer.from_handle(ptr, nbytes, owner=owner)


def _device_buffer(ptr: int, nbytes: int, owner: DeviceArray) -> Any:
    buf = owner._buffer
    if buf is not None and int(buf.handle) == ptr and int(buf.size) == nbytes:
        return buf
    return _host_buffer(ptr, nbytes, owner)  # a non-owning Buffer over device memory


def _copy(device: Any, stream: Any, *, dst: Any, src: Any) -> None:
    # cuMemcpyAsync through cuda.core; the driver infers the direction from the pointers (unified
    # addressing). Pageable host memory makes it return only when the host side is done.
    device.set_current()
    dst.copy_from(src, stream=stream)
