"""DLPack in both directions, in ctypes: exporting our arrays and reading other libraries' tensors.

Export: ``cuda.core``'s own exporter refuses the ml_dtypes types (and ignores the consumer stream),
so :func:`export_dlpack` builds the ``DLManagedTensor(Versioned)`` structures itself, as DLPack's
Python example does: bfloat16 and the fp8 types travel as DLPack's ``kDLBfloat`` and
``kDLFloat8_*`` codes.

Import: :func:`import_dlpack` reads a producer's capsule itself. ``cuda.core`` 1.2's
``StridedMemoryView`` is the first choice (see :mod:`_nvbind.arrays`), but it maps no fp8
type code (a torch ``float8_e4m3fn`` tensor raises ``TypeError: Unsupported dtype. dtype code:
10``); this reader names every code ml_dtypes has a type for.

:func:`repair_strides` undoes a producer bug seen in the wild: CuPy before PR #10228 divided
negative byte strides by an unsigned item size (cupy/cupy#10172), exporting ``-1`` as
``2**62 - 1`` for 4-byte elements.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import weakref
from typing import Any

from .dtypes import as_numpy_dtype, dtype_name
from .forksafe import fork_safe_lock
from .interrupts import defer
from .lazy_numpy import np
from .strides import c_strides
from .view import ArrayView

__all__ = [
    "check_span",
    "dlpack_device",
    "dlpack_dtype",
    "export_dlpack",
    "import_dlpack",
    "repair_strides",
]

_INT64_MAX = 2**63 - 1  # DLPack holds extents and strides in int64

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13
_DLPACK_VERSION = (1, 1)
_FLAG_READ_ONLY = 1

# dlpack.h DLDataTypeCode values, by NumPy kind and by ml_dtypes name.
_KIND_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
# Item sizes (bytes) DLPack and NumPy mean the same thing by, per NumPy kind: a 16-byte NumPy
# float is x87 extended precision padded (longdouble), where DLPack's 128-bit float is IEEE quad.
_KIND_SIZES = {"i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8), "c": (8, 16), "b": (1,)}
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
_exports_lock = fork_safe_lock(sys.modules[__name__], "_exports_lock")


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


_pending_lock = fork_safe_lock(sys.modules[__name__], "_pending_lock")


def _take_pending() -> tuple[int | None, int | None, int | None]:
    # Read and cleared under a lock, so that two threads never restore the same references (a
    # thread switch right after the fetch could at worst make one report go missing).
    with _pending_lock:
        pending = (_PENDING[0].value, _PENDING[1].value, _PENDING[2].value)
        _PENDING[0].value = _PENDING[1].value = _PENDING[2].value = None
    return pending


def _deleter_body(address: int | None) -> None:  # called by the consumer, from C
    _PyErr_Fetch(*_FETCH_ARGS)  # first, see above
    pending = _take_pending()
    try:
        _release(address)
    except Exception:  # pragma: no cover - never raise into C
        pass
    if pending[0]:
        _PyErr_Restore(*pending)


# Wrapped by a call, not as a decorator, so that the body keeps its signature for type checkers;
# module-level, so the C function pointer lives as long as the process.
_deleter = _Deleter(_deleter_body)

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


def _capsule_destructor_body(capsule: int | None) -> None:
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


_capsule_destructor = _Deleter(
    _capsule_destructor_body
)  # PyCapsule_Destructor: void (*)(PyObject *)


def dlpack_dtype(dtype: np.dtype) -> tuple[int, int]:
    """``(DLDataTypeCode, bits)`` for ``dtype``; BufferError for types DLPack cannot carry."""
    dt = np.dtype(dtype)
    code = _NAMED_CODES.get(dt.name)
    if code is None and dt.kind in _KIND_CODES and dt.fields is None:
        code = _KIND_CODES[dt.kind]
    if code is None or (
        code == _KIND_CODES.get(dt.kind) and dt.itemsize not in _KIND_SIZES[dt.kind]
    ):
        raise BufferError(f"dtype {dtype_name(dt)} has no DLPack type code")
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


# -- import ----------------------------------------------------------------------------------

_USED_NAME = b"used_dltensor"  # PyCapsule_SetName keeps the pointer: module constants live on
_USED_NAME_VERSIONED = b"used_dltensor_versioned"
_CapsuleIsValid = _python_api("PyCapsule_IsValid", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_CapsuleGetPointer = _python_api(
    "PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p
)
_CapsuleSetName = _python_api("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
_CODE_NAMES = {code: name for name, code in _NAMED_CODES.items()}
_KIND_OF_CODE = {code: kind for kind, code in _KIND_CODES.items()}


@functools.lru_cache(maxsize=256)  # a handful of types in practice; parsing one costs microseconds
def numpy_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    """The NumPy / ml_dtypes type of a ``DLDataType``; TypeError naming it when there is none."""
    if lanes != 1:
        raise TypeError(f"DLPack vector types (lanes={lanes}) are not supported")
    name = _CODE_NAMES.get(code)
    if name is None:
        kind = _KIND_OF_CODE.get(code)
        if kind is None or bits % 8 or bits // 8 not in _KIND_SIZES[kind]:  # e.g. 24, 128 bits
            raise TypeError(f"DLPack type code {code} with {bits} bits has no NumPy type")
        dt = np.dtype(f"{kind}{bits // 8}")
    else:
        dt = as_numpy_dtype(name)
    if dt.itemsize * 8 != bits:
        raise TypeError(f"DLPack type code {code} with {bits} bits has no NumPy type")
    return dt


def repair_strides(strides: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Strides (elements) with unsigned-division damage undone; others unchanged.

    A stride whose byte value does not fit int64 addresses no memory. CuPy's exporter before the
    fix computed ``byte_stride // itemsize`` with an unsigned item size, turning ``-k * itemsize``
    into ``(2**64 - k * itemsize) // itemsize``; for a power-of-two item size that product wraps
    back to the true byte stride modulo 2**64, which is what is returned (in elements). Only such
    values are repaired: the damage is positive, and its bytes lie between 2**63 and 2**64, so any
    other stride beyond int64 (one whose bytes reach 2**64, or a negative one) is a BufferError,
    not wrapped into a small stride that would describe other memory.
    """
    bound = _INT64_MAX // max(itemsize, 1)
    if not strides or (max(strides) <= bound and min(strides) >= -bound):
        return strides  # every array in the wild: checked in two C loops (this is an execute path)
    out = []
    for stride in strides:
        b = stride * itemsize
        if -_INT64_MAX <= b <= _INT64_MAX:
            out.append(stride)
            continue
        wrapped = b - 2**64
        if not _INT64_MAX < b < 2**64 or wrapped % itemsize or itemsize & (itemsize - 1):
            raise BufferError(f"DLPack strides {strides} address no memory")
        out.append(wrapped // itemsize)
    return tuple(out)


class _Consumed:
    """Owns a consumed ``DLManagedTensor(Versioned)``: its deleter runs when this object dies."""

    __slots__ = ("__weakref__", "exporter")

    def __init__(self, exporter: Any, address: int, versioned: bool) -> None:
        self.exporter = exporter
        finalizer = weakref.finalize(self, _call_deleter, address, versioned)
        finalizer.atexit = False  # the producer may be torn down already at interpreter exit


def _call_deleter(address: int, versioned: bool) -> None:
    managed_type = _DLManagedTensorVersioned if versioned else _DLManagedTensor
    try:
        deleter = managed_type.from_address(address).deleter
        if deleter:
            deleter(address)
    except (KeyboardInterrupt, SystemExit) as exc:  # a finalizer would drop it (_nvbind.resource)
        defer(exc)


_MAX_NDIM = 64  # far above any library's limit (cuDNN: 8, NumPy: 64): more is a damaged tensor
_KNOWN_DEVICES = (_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED)


def _protocol_failure(name: str, method: str, exc: Exception) -> BufferError:
    # A producer's own failure, named for the argument: the consumer's caller sees which array
    # refused and why, and the producer's exception stays chained as the cause.
    return BufferError(f"{name}.{method}() failed: {type(exc).__name__}: {exc}")


def dlpack_device(obj: Any, name: str = "array") -> tuple[int, int]:
    """``obj.__dlpack_device__()`` checked: two ints, a device type this reader knows (CPU, CUDA,
    CUDA host, CUDA managed) and an ordinal from 0 to 2**31 - 1 (DLPack's ``int32_t``); a
    BufferError naming ``name`` and the rule otherwise."""
    try:
        device = obj.__dlpack_device__()
    except BufferError:
        raise
    except Exception as exc:
        raise _protocol_failure(name, "__dlpack_device__", exc) from exc
    if not (
        isinstance(device, tuple)
        and len(device) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in device)
    ):
        raise BufferError(f"{name}.__dlpack_device__() returned {device!r}, not (type, id) ints")
    device_type, ordinal = int(device[0]), int(device[1])
    if device_type not in _KNOWN_DEVICES:
        raise BufferError(f"{name} lives on DLPack device type {device_type}, not CPU or CUDA")
    if not 0 <= ordinal < 2**31:
        raise BufferError(
            f"{name}.__dlpack_device__() returned device id {ordinal}, not an ordinal from 0 to "
            "2**31 - 1"
        )
    return device_type, ordinal


def _check_tensor(t: _DLTensor, device: tuple[int, int], name: str) -> tuple[Any, ...]:
    """Read a consumed ``DLTensor`` field by field, each checked before the next one relies on it
    (a NULL ``shape`` with ``ndim > 0`` would otherwise be dereferenced)."""
    ndim = int(t.ndim)
    if not 0 <= ndim <= _MAX_NDIM:
        raise BufferError(f"{name}: DLPack tensor claims {ndim} dims (0 to {_MAX_NDIM} are valid)")
    if ndim and not t.shape:  # reading it would dereference NULL
        raise BufferError(f"{name}: DLPack tensor of {ndim} dims has no shape array")
    in_capsule = (int(t.device.device_type), int(t.device.device_id))
    if in_capsule != device:
        # A producer that names one device and exports another (CUDA for a host pointer) would
        # have C read the wrong memory space.
        raise BufferError(
            f"{name}: its DLPack tensor is on device {in_capsule} but __dlpack_device__() said "
            f"{device}"
        )
    try:
        dtype = numpy_dtype(int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes))
    except TypeError as exc:
        raise TypeError(f"{name}: {exc}") from None
    shape = tuple(t.shape[:ndim]) if ndim else ()  # one ctypes call for the whole array
    if shape and min(shape) < 0:
        raise BufferError(f"{name}: DLPack shape {shape} has a negative extent")
    if ndim and t.strides:
        try:
            strides = repair_strides(tuple(t.strides[:ndim]), dtype.itemsize)
        except BufferError as exc:
            raise BufferError(f"{name}: {exc}") from None
    else:  # NULL strides: compact row-major (DLPack)
        strides = c_strides(shape)
    data = int(t.data or 0)
    ptr = data + int(t.byte_offset)
    check_span(ptr, shape, strides, dtype.itemsize, name, "DLPack tensor")
    if not data and all(shape):
        raise BufferError(f"{name}: DLPack tensor of shape {shape} has a NULL data pointer")
    return ptr, shape, strides, dtype


def check_span(  # noqa: PLR0917 - one description of an array, positional as everywhere else
    ptr: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    itemsize: int,
    name: str,
    what: str,
    error: type[Exception] = BufferError,
) -> None:
    """``error`` unless every element of the strided array lies in the 64-bit address space
    (a wrapped address would have C read memory the array does not describe)."""
    if not 0 <= ptr < 2**64:
        raise error(f"{name}: {what} at {ptr:#x} is not a 64-bit address")
    # element_extent's arithmetic, inlined: this runs for every array read through a protocol.
    lo = hi = 0
    for n, s in zip(shape, strides, strict=True):
        if not n:
            return  # empty: no element is addressed
        step = (n - 1) * s
        if step < 0:
            lo += step
        else:
            hi += step
    if ptr + lo * itemsize < 0 or ptr + (hi + 1) * itemsize > 2**64:
        raise error(
            f"{name}: {what} of shape {shape}, strides {strides} (elements) at {ptr:#x} reaches "
            "outside the 64-bit address space"
        )


def import_dlpack(obj: Any, consumer_stream: int, name: str = "array") -> ArrayView:
    """Consume ``obj.__dlpack__`` and describe the tensor (``consumer_stream`` -1: no ordering).

    The producer is asked for DLPack 1.1 (falling back to a legacy call), with the consumer's
    stream so that it orders its work before ours, as the protocol requires. Every field is
    checked before it is relied on (DLPack version, dims, shape array, device, type, address
    range), and anything wrong is a BufferError naming ``name``; the consumed tensor's deleter
    runs exactly once either way.
    """
    device = dlpack_device(obj, name)
    device_type, device_ordinal = device
    if device_type == _KDL_CPU:
        stream: int | None = None
    else:
        stream = consumer_stream or None  # 0 is not a DLPack stream value; None is "default"
    try:
        try:
            capsule = obj.__dlpack__(stream=stream, max_version=_DLPACK_VERSION)
        except TypeError:  # a producer older than DLPack 1.0 takes no max_version
            capsule = obj.__dlpack__(stream=stream)
    except BufferError:
        raise
    except Exception as exc:
        raise _protocol_failure(name, "__dlpack__", exc) from exc
    versioned = bool(_CapsuleIsValid(capsule, _NAME_VERSIONED))
    if not versioned and not _CapsuleIsValid(capsule, _NAME):
        raise BufferError(f"{name}.__dlpack__() returned {capsule!r}, not an unused DLPack capsule")
    address = int(_CapsuleGetPointer(capsule, _NAME_VERSIONED if versioned else _NAME) or 0)
    if not address:
        raise BufferError(f"{name}.__dlpack__() returned a DLPack capsule holding NULL")
    _CapsuleSetName(capsule, _USED_NAME_VERSIONED if versioned else _USED_NAME)
    owner = _Consumed(obj, address, versioned)  # from here on the deleter runs exactly once
    readonly = False
    if versioned:
        managed = _DLManagedTensorVersioned.from_address(address)
        # DLPack keeps the version, manager_ctx and deleter at the start of the struct in every
        # major version, so the deleter above is safe to call; the rest may be laid out otherwise.
        if managed.version.major != _DLPACK_VERSION[0]:
            raise BufferError(
                f"{name} was exported with DLPack {managed.version.major}.{managed.version.minor}; "
                f"this reader knows {_DLPACK_VERSION[0]}.x"
            )
        readonly = bool(managed.flags & _FLAG_READ_ONLY)
        t = managed.dl_tensor
    else:
        t = _DLManagedTensor.from_address(address).dl_tensor
    ptr, shape, strides, dtype = _check_tensor(t, device, name)
    device_id = -1 if device_type == _KDL_CPU else device_ordinal
    return ArrayView(ptr, shape, strides, dtype, device_id, readonly, owner)
