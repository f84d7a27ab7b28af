"""Any array in, one description out: pointer, shape, strides (in elements), dtype, device.

Operations accept every array that speaks a standard protocol: DLPack (``__dlpack__``, tried first,
and the only one that carries bf16/fp8), ``__cuda_array_interface__`` (CuPy, Numba, PyTorch, JAX),
our :class:`~pycudnn.DeviceArray`, and, for host-side work only, NumPy arrays (described from
``dtype``, ``strides`` and ``ctypes.data``, which name bf16/fp8 where ``__array_interface__`` shows
raw bytes) and other objects with ``__array_interface__``.

Everything an object declares is checked by this library's own readers before any other code (C
or ``cuda.core``) relies on it, and anything wrong is an exception naming the argument and the rule:
a DLPack capsule is read by :mod:`_nvbind.dlpack` only (``cuda.core`` 1.2's reader
dereferences a NULL shape array, reads DLPack 2.x capsules as 1.x and names no fp8 type; the
producer orders its stream before the consumer's given in ``__dlpack__(stream=)``), and a CUDA
array interface is checked here (types, ranges, version, mask, stream) before ``cuda.core``'s
``StridedMemoryView`` is handed exactly the checked dict (versions 0 to 2 as the version 3 they
are without a stream, the only version it reads) to find the device the memory is on and to order
the producer's stream before the consumer's. Without cuda.core, a CUDA-array-interface
array is refused: its device cannot be found out, and guessing one is wrong on a machine with
several GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cuda import driver_status
from .dlpack import check_span, import_dlpack
from .lazy_numpy import np
from .strides import c_strides as _c_strides
from .strides import element_extent
from .view import ArrayView, alignment_of

__all__ = [
    "ArrayView",
    "alignment_of",
    "array_view",
    "as_array_view",
    "describe_array",
    "element_extent",
]


_INT64_MAX = 2**63 - 1  # the protocols hold extents and strides in int64 (C's Py_ssize_t)


def _interface_ints(values: Any, what: str, name: str, *, minimum: int | None) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (tuple, list)):
        raise TypeError(
            f"{name}: its array interface's {what} must be a tuple of ints, got {values!r}"
        )
    if len(values) > _MAX_NDIM:
        raise ValueError(
            f"{name}: its array interface's {what} has {len(values)} entries; at most {_MAX_NDIM}"
        )
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}: its array interface's {what} must hold ints, got {values!r}")
        if minimum is not None and v < minimum:
            raise ValueError(
                f"{name}: its array interface's {what} {tuple(values)} has {v} < {minimum}"
            )
        if abs(int(v)) > _INT64_MAX:
            raise ValueError(
                f"{name}: its array interface's {what} {tuple(values)} has {v}, beyond int64"
            )
        out.append(int(v))
    return tuple(out)


_MAX_NDIM = 64
# Versions of the CUDA array interface (0 to 3) and of NumPy's array interface (3) whose keys this
# reader knows: a later one may mean something else by them, so it is refused, not guessed at.
_CAI_VERSIONS = (0, 1, 2, 3)
_AI_VERSIONS = (3,)


def _interface_dtype(iface: dict[str, Any], name: str) -> np.dtype:
    typestr = iface["typestr"]
    if not isinstance(typestr, str):
        raise TypeError(f"{name}: its array interface's typestr must be a str, got {typestr!r}")
    descr = iface.get("descr")
    # descr names fields; a one-field descr is the typestr again (and is what NumPy writes).
    spec: Any = descr if isinstance(descr, list) and len(descr) > 1 else typestr
    try:
        dtype: np.dtype = np.dtype(spec)
    except Exception as exc:  # NumPy raises TypeError, ValueError, KeyError, ... for junk
        raise TypeError(
            f"{name}: its array interface's typestr {typestr!r} is no element type: {exc}"
        ) from None
    if dtype.itemsize == 0:  # sizes and alignments divide by it
        raise TypeError(f"{name}: its element type {dtype} has no size")
    if dtype.kind == "V":
        raise TypeError(
            f"{name}: its array interface describes the element type only as {typestr!r} (raw "
            "bytes), which is how bfloat16 and fp8 appear there; pass the array through DLPack "
            "instead (most libraries: the array itself works once cuda.core is installed)"
        )
    _refuse_foreign_byte_order(dtype, name)
    return dtype


def _refuse_foreign_byte_order(dtype: np.dtype, name: str) -> None:
    if not dtype.isnative:
        raise TypeError(
            f"{name}: its element type {dtype.str} is big-endian; cuDNN and cuTENSOR read "
            f"little-endian data (convert it first, e.g. a.astype('{dtype.newbyteorder('=').str}'))"
        )


def _interface_stream(iface: dict[str, Any], name: str) -> None:
    # CUDA array interface v3: None (no ordering needed), 1 (legacy default), 2 (per-thread
    # default) or a stream address; 0 is forbidden as ambiguous.
    stream = iface.get("stream")
    if stream is None:
        return
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)):
        raise TypeError(
            f"{name}: its CUDA array interface's stream must be None or an int, got {stream!r}"
        )
    if not 0 < stream < 2**64:
        raise ValueError(
            f"{name}: its CUDA array interface's stream {stream} is not 1, 2 or a stream address "
            "(0 is forbidden by the protocol as ambiguous)"
        )


def _from_interface(
    obj: Any, iface: Any, device_id: int, name: str, *, cuda: bool = False
) -> ArrayView:
    # The interface comes from any object at all: check its parts before they describe memory
    # that C will read (a negative extent or pointer would otherwise travel on unnoticed).
    protocol = "__cuda_array_interface__" if cuda else "__array_interface__"
    if not isinstance(iface, dict) or not {"shape", "typestr", "data"} <= iface.keys():
        raise TypeError(
            f"{name}: its {protocol} must be a dict with 'shape', 'typestr' and 'data', "
            f"got {iface!r}"
        )
    version = iface.get("version")
    known = _CAI_VERSIONS if cuda else _AI_VERSIONS
    if isinstance(version, bool) or not isinstance(version, int) or version not in known:
        raise ValueError(
            f"{name}: its {protocol} has version {version!r}; this reader knows versions "
            f"{', '.join(map(str, known))}"
        )
    if iface.get("mask") is not None:
        raise ValueError(f"{name}: its {protocol} has a mask; masked arrays are not supported")
    if cuda:
        _interface_stream(iface, name)
    shape = _interface_ints(iface["shape"], "shape", name, minimum=0)
    dtype = _interface_dtype(iface, name)
    data = iface["data"]
    if not (isinstance(data, (tuple, list)) and len(data) == 2):
        raise TypeError(
            f"{name}: its array interface's data must be (pointer, read_only), got {data!r}"
        )
    ptr, readonly = data
    if ptr is None:
        ptr = 0
    if isinstance(ptr, bool) or not isinstance(ptr, (int, np.integer)) or not 0 <= ptr < 2**64:
        raise ValueError(f"{name}: its array interface's data pointer {ptr!r} is not an address")
    if not isinstance(readonly, (bool, np.bool_)):
        raise TypeError(
            f"{name}: its array interface's read_only flag must be a bool, got {data!r}"
        )
    if not ptr and all(shape):  # some element exists (no zero extent)
        raise ValueError(f"{name}: its array interface has a NULL data pointer for shape {shape}")
    strides_b = iface.get("strides")
    if strides_b is None:
        strides = _c_strides(shape)
    else:
        strides_b = _interface_ints(strides_b, "strides", name, minimum=None)
        if len(strides_b) != len(shape):
            raise ValueError(
                f"{name}: its array interface has {len(strides_b)} strides for {len(shape)} dims"
            )
        if any(s % dtype.itemsize for s in strides_b):
            raise ValueError(
                f"{name}: byte strides {tuple(strides_b)} are not whole elements of {dtype}"
            )
        strides = tuple(int(s) // dtype.itemsize for s in strides_b)
    check_span(int(ptr), shape, strides, dtype.itemsize, name, "array", ValueError)
    return ArrayView(int(ptr), shape, strides, dtype, device_id, bool(readonly), obj)


def _read_interface(obj: Any, protocol: str, name: str) -> Any:
    # A property that raises is the object's failure, reported as the argument's.
    try:
        return getattr(obj, protocol)
    except Exception as exc:
        raise TypeError(
            f"{name}: reading its {protocol} failed: {type(exc).__name__}: {exc}"
        ) from exc


class _CheckedInterface:
    """The CUDA array interface dict that was checked, the only thing cuda.core is shown: a
    property returning another dict on its second read cannot slip past the checks."""

    __slots__ = ("__cuda_array_interface__",)

    def __init__(self, iface: dict[str, Any]) -> None:
        checked = dict(iface)
        if checked["version"] < 3:
            # cuda.core reads version 3 only. An earlier version is version 3 without a stream
            # (the key came with version 3): nothing to order, whatever the dict holds under it.
            checked["version"] = 3
            checked.pop("stream", None)
        self.__cuda_array_interface__ = checked


def _from_cuda_interface(obj: Any, consumer: int, name: str) -> ArrayView:
    iface = _read_interface(obj, "__cuda_array_interface__", name)
    view = _from_interface(obj, iface, -1, name, cuda=True)
    StridedMemoryView = _memory_view_class()
    if StridedMemoryView is None:
        raise ImportError(
            f"{name} is a CUDA-array-interface array; reading one needs cuda.core, which finds "
            "the device its memory is on and orders the producer's stream before ours "
            f"(install the cu12 or cu13 extra; importing it failed with {_SMV[1]})"
        )
    try:
        smv = StridedMemoryView.from_cuda_array_interface(_CheckedInterface(iface), consumer)
        device_id = int(smv.device_id)
    except Exception as exc:  # cuda.core's CUDAError: no driver, no device, not a device pointer
        reason = driver_status().reason or f"{type(exc).__name__}: {exc}"
        raise RuntimeError(
            f"{name}: reading a CUDA-array-interface array asks the driver which device its "
            f"memory is on, and that failed: {reason}"
        ) from exc
    return view._replace(device_id=device_id, owner=(obj, smv))


# cuda.core's StridedMemoryView once looked up, and why it is missing ([None, reason] if it is).
_SMV: list[Any] = []


def _memory_view_class() -> Any:
    # Looked up once: an import statement costs over a microsecond per call even when cached.
    if not _SMV:
        try:
            from cuda.core.utils import StridedMemoryView

            _SMV[:] = [StridedMemoryView, ""]
        except Exception as exc:  # absent, or installed but broken: say which when it matters
            _SMV[:] = [None, f"{type(exc).__name__}: {exc}"]
    return _SMV[0]


def _from_ndarray(a: np.ndarray, name: str) -> ArrayView:
    # The dtype object names every type (ml_dtypes' bf16/fp8 included), where the array
    # interface's typestr shows them as raw bytes; reading these attributes is also cheaper.
    dtype = a.dtype
    if dtype.itemsize == 0:  # sizes and alignments divide by it
        raise TypeError(f"{name}: its element type {dtype} has no size")
    if dtype.type is np.void or dtype.hasobject:
        raise TypeError(
            f"{name}: its element type {dtype} is raw bytes or Python objects, not numbers"
        )
    _refuse_foreign_byte_order(dtype, name)
    item = dtype.itemsize
    strides_b = a.strides
    if any(st % item for st in strides_b):
        raise ValueError(f"{name}: byte strides {strides_b} are not whole elements of {dtype}")
    strides = tuple(st // item for st in strides_b)
    return ArrayView(a.ctypes.data, a.shape, strides, dtype, -1, not a.flags.writeable, a)


def _from_dlpack(obj: Any, consumer: int, name: str) -> ArrayView:
    """Through this library's own reader, which checks every field before relying on it."""
    return import_dlpack(obj, consumer, name)


def _has(obj: Any, attr: str) -> bool:
    # hasattr runs a property, and lets anything but AttributeError through: an object whose
    # protocol property raises has the protocol, and the failure is reported when it is read.
    try:
        return hasattr(obj, attr)
    except Exception:
        return True


def as_array_view(obj: Any, *, name: str = "array", stream_ptr: int | None = None) -> ArrayView:
    """Describe ``obj`` (see the module docstring for what is accepted).

    ``stream_ptr`` is the consumer stream (the one the operation will run on); ``None`` opts out of
    stream synchronisation, for host-side inspection only.
    """
    if isinstance(obj, ArrayView):
        return obj
    view_method = getattr(obj, "_array_view", None)  # DeviceArray: no protocol round trip needed
    if view_method is not None:
        # DeviceArray orders its allocation stream before the consumer's, as the protocols would
        on = getattr(obj, "_view_on", None)
        view = view_method() if on is None else on(-1 if stream_ptr is None else int(stream_ptr))
        if not isinstance(view, ArrayView):  # a duck that only looks like a DeviceArray
            raise TypeError(
                f"{name}: {type(obj).__name__}._array_view() returned {type(view).__name__}, not "
                "an ArrayView"
            )
        return view
    if isinstance(obj, np.ndarray):
        return _from_ndarray(obj, name)
    consumer = -1 if stream_ptr is None else int(stream_ptr)
    has_dlpack = _has(obj, "__dlpack__") and _has(obj, "__dlpack_device__")
    has_cai = _has(obj, "__cuda_array_interface__")
    if has_dlpack:
        try:
            return _from_dlpack(obj, consumer, name)
        except (BufferError, TypeError, NotImplementedError):
            if not has_cai:
                raise
    if has_cai:
        return _from_cuda_interface(obj, consumer, name)
    if _has(obj, "__array_interface__"):
        return _from_interface(obj, _read_interface(obj, "__array_interface__", name), -1, name)
    raise TypeError(
        f"{name} must be an array exposing DLPack or __cuda_array_interface__ (CuPy, PyTorch, JAX, "
        f"Numba, or this library's DeviceArray), not {type(obj).__name__}"
    )


# --------------------------------------------------------------------------------------------------
# The execute paths' fast read: the same ArrayView as as_array_view, from the type's own attributes
# --------------------------------------------------------------------------------------------------
# as_array_view goes through a protocol every call (a DLPack capsule or a CAI dict, then cuda.core's
# StridedMemoryView): about 5 us per CuPy array on an H100 host. For the types below the same
# description is read from the array's attributes instead, and only when skipping the protocol
# changes nothing: the protocols exist to order the producer's stream before the consumer's, so a
# reader answers only when the array's library's current stream *is* the consumer stream (nothing
# to order); otherwise it returns None and the caller takes as_array_view, which orders them.
# Everything else that could differ from the general path (an empty tensor, a type the protocol
# refuses or maps differently) also returns None.

_Reader = Callable[[Any, int], ArrayView | None]
_READERS: dict[type, _Reader] = {}
_TORCH: dict[Any, Any] = {}  # torch dtype -> NumPy dtype; "stream" -> current raw stream getter


def _device_array_reader(obj: Any, stream_ptr: int) -> ArrayView | None:
    view: ArrayView = obj._view_on(stream_ptr)  # what as_array_view does for a DeviceArray
    return view


def _torch_setup(torch: Any) -> None:
    import ml_dtypes

    names = {
        "float16": np.float16, "float32": np.float32, "float64": np.float64, "int8": np.int8,
        "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
        "complex64": np.complex64, "complex128": np.complex128,
        "bfloat16": ml_dtypes.bfloat16,
    }  # fmt: skip
    for name, np_type in names.items():
        tt = getattr(torch, name, None)
        if tt is not None:
            _TORCH[tt] = np.dtype(np_type)
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # the cudaStream_t, ~100 ns
    _TORCH["stream"] = raw or (lambda index: torch.cuda.current_stream(index).cuda_stream)


def _torch_reader(t: Any, stream_ptr: int) -> ArrayView | None:
    # DLPack (the general path for torch) refuses tensors that need a gradient, conjugate or
    # negative views, and fp8 goes through another reader: all left to the general path.
    dev = t.device
    if dev.type != "cuda" or t.requires_grad or t.is_conj() or t.is_neg():
        return None
    dtype = _TORCH.get(t.dtype)
    if dtype is None or t.numel() == 0:
        return None
    index = dev.index
    if stream_ptr != -1 and _TORCH["stream"](index) != stream_ptr:
        return None  # torch's current stream is not ours: __dlpack__(stream=) orders them
    return ArrayView(t.data_ptr(), tuple(t.shape), tuple(t.stride()), dtype, index, False, t)


_CUPY_STREAM: list[Any] = []  # cupy.cuda.get_current_stream, looked up once


def _cupy_reader(a: Any, stream_ptr: int) -> ArrayView | None:
    if stream_ptr != -1 and _CUPY_STREAM[0]().ptr != stream_ptr:
        return None  # CuPy's current stream is not ours: the protocol orders them
    dtype = a.dtype
    if a.size == 0 or dtype.kind not in "iufc":  # bool and the rest: as the protocol says
        return None
    item = dtype.itemsize
    strides_b = a.strides
    if any(s % item for s in strides_b):
        return None
    return ArrayView(
        a.data.ptr,
        a.shape,
        tuple([s // item for s in strides_b]),
        dtype,
        a.device.id,
        False,
        a,
    )


def _no_reader(obj: Any, stream_ptr: int) -> ArrayView | None:
    return None


def _reader_for(tp: type, obj: Any) -> _Reader:
    module = tp.__module__ or ""
    reader: _Reader = _no_reader
    if hasattr(tp, "_array_view") and module == __name__.rsplit(".", 1)[0] + ".device_array":
        reader = _device_array_reader  # pycudnn.DeviceArray (not a subclass or a look-alike)
    elif module.startswith("torch") and hasattr(tp, "data_ptr"):
        import torch

        if tp is torch.Tensor or tp is getattr(torch.nn, "Parameter", None):
            if not _TORCH:
                _torch_setup(torch)
            reader = _torch_reader
    elif module.startswith("cupy") and type(obj).__name__ == "ndarray":
        import cupy

        if tp is cupy.ndarray:
            _CUPY_STREAM[:] = [cupy.cuda.get_current_stream]
            reader = _cupy_reader
    _READERS[tp] = reader
    return reader


def array_view(obj: Any, name: str = "array", stream_ptr: int | None = None) -> ArrayView:
    """:func:`as_array_view` for the execute paths: the same answer, read from the array's own
    attributes for ``pycudnn.DeviceArray``, ``cupy.ndarray`` and ``torch.Tensor`` when the array's
    library has nothing to order (its current stream is ``stream_ptr``), else through the protocol.
    """
    tp = type(obj)
    reader = _READERS.get(tp)
    if reader is None:
        reader = _reader_for(tp, obj)
    view = reader(obj, -1 if stream_ptr is None else stream_ptr)
    if view is None:
        return as_array_view(obj, name=name, stream_ptr=stream_ptr)
    return view


def describe_array(name: str, obj: Any, stream_ptr: int = -1) -> tuple[Any, ...]:
    """``array_view(obj, name, stream_ptr)[:6]`` (pointer, shape, strides, dtype, device,
    read-only: what a cached launch depends on), with the name first so that
    ``functools.partial(describe_array, name)`` is a per-slot reader with no Python frame of its
    own (``-1``: no stream ordering)."""
    tp = type(obj)
    reader = _READERS.get(tp)
    if reader is _device_array_reader:  # the common case, one call less
        own: ArrayView = obj._view_on(stream_ptr)
        return own[:6]
    if reader is None:
        reader = _reader_for(tp, obj)
    view = reader(obj, stream_ptr)
    if view is None:
        view = as_array_view(obj, name=name, stream_ptr=None if stream_ptr == -1 else stream_ptr)
    return view[:6]
