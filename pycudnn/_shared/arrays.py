"""Any array in, one description out: pointer, shape, strides (in elements), dtype, device.

Operations accept every array that speaks a standard protocol: DLPack (``__dlpack__``, tried first,
and the only one that carries bf16/fp8), ``__cuda_array_interface__`` (CuPy, Numba, PyTorch, JAX),
our :class:`~pycudnn.DeviceArray`, and, for host-side work only, NumPy's ``__array_interface__``.
Device exchanges go through ``cuda.core``'s ``StridedMemoryView`` so that the producer's stream is
synchronised with the consumer's as both protocols require.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ArrayView", "alignment_of", "as_array_view", "data_pointer", "element_extent"]


def alignment_of(ptr: int, cap: int = 256) -> int:
    """Largest power of two (at most ``cap``) dividing ``ptr``; ``cap`` for a NULL pointer."""
    if ptr == 0:
        return cap
    return min(ptr & -ptr, cap)


def element_extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """``(lo, span)`` in elements for a strided array (strides in elements, any sign).

    Element 0 sits ``-lo`` elements above the lowest element reached, and ``span`` elements cover
    everything reached (``(0, 0)`` for an empty array).
    """
    if math.prod(shape) == 0:
        return 0, 0
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
    return lo, hi - lo + 1


class ArrayView(NamedTuple):
    """What an operation needs to know about an operand. ``owner`` keeps the exporter alive.

    A named tuple rather than a frozen dataclass: one is built per operand per call on the execute
    paths, and a frozen dataclass costs several times more to construct.
    """

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: np.dtype
    device_id: int  # -1 for host memory
    readonly: bool
    owner: Any

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return int(self.dtype.itemsize)

    @property
    def is_device(self) -> bool:
        return self.device_id >= 0

    @property
    def alignment(self) -> int:
        return alignment_of(self.ptr)

    def span_bytes(self) -> int:
        """Bytes from the lowest to one past the highest addressed element (0 when empty)."""
        return element_extent(self.shape, self.strides)[1] * self.itemsize


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _interface_ints(values: Any, what: str, name: str, *, minimum: int | None) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (tuple, list)):
        raise TypeError(
            f"{name}: its array interface's {what} must be a tuple of ints, got {values!r}"
        )
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}: its array interface's {what} must hold ints, got {values!r}")
        if minimum is not None and v < minimum:
            raise ValueError(
                f"{name}: its array interface's {what} {tuple(values)} has {v} < {minimum}"
            )
        out.append(int(v))
    return tuple(out)


def _from_interface(obj: Any, iface: dict[str, Any], device_id: int, name: str) -> ArrayView:
    # The interface comes from any object at all: check its parts before they describe memory
    # that C will read (a negative extent or pointer would otherwise travel on unnoticed).
    if not isinstance(iface, dict) or not {"shape", "typestr", "data"} <= iface.keys():
        raise TypeError(
            f"{name}: its array interface must be a dict with 'shape', 'typestr' and 'data', "
            f"got {iface!r}"
        )
    shape = _interface_ints(iface["shape"], "shape", name, minimum=0)
    typestr = iface["typestr"]
    descr = iface.get("descr")
    try:
        dtype = np.dtype(descr if descr and len(descr) > 1 else typestr)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: its array interface's typestr {typestr!r}: {exc}") from None
    if dtype.itemsize == 0:  # sizes and alignments divide by it
        raise TypeError(f"{name}: its element type {dtype} has no size")
    if dtype.kind == "V":
        raise TypeError(
            f"{name}: its array interface describes the element type only as {typestr!r} (raw "
            "bytes), which is how bfloat16 and fp8 appear there; pass the array through DLPack "
            "instead (most libraries: the array itself works once cuda.core is installed)"
        )
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
    return ArrayView(int(ptr or 0), shape, strides, dtype, device_id, bool(readonly), obj)


_SMV: list[Any] = []  # cuda.core's StridedMemoryView once looked up ([None] if unavailable)


def _memory_view_class() -> Any:
    # Looked up once: an import statement costs over a microsecond per call even when cached.
    if not _SMV:
        try:
            from cuda.core.utils import StridedMemoryView
        except Exception:
            StridedMemoryView = None
        _SMV.append(StridedMemoryView)
    return _SMV[0]


def _from_memory_view(obj: Any, smv: Any) -> ArrayView:
    shape = tuple(map(int, smv.shape))
    strides = tuple(map(int, smv.strides)) if smv.strides is not None else _c_strides(shape)
    device_id = int(smv.device_id) if smv.is_device_accessible else -1
    return ArrayView(
        int(smv.ptr), shape, strides, np.dtype(smv.dtype), device_id, bool(smv.readonly), (obj, smv)
    )


def as_array_view(obj: Any, *, name: str = "array", stream_ptr: int | None = None) -> ArrayView:
    """Describe ``obj`` (see the module docstring for what is accepted).

    ``stream_ptr`` is the consumer stream (the one the operation will run on); ``None`` opts out of
    stream synchronisation, for host-side inspection only.
    """
    if isinstance(obj, ArrayView):
        return obj
    view_method = getattr(obj, "_array_view", None)  # DeviceArray: no protocol round trip needed
    if view_method is not None:
        view = view_method()
        if not isinstance(view, ArrayView):  # a duck that only looks like a DeviceArray
            raise TypeError(
                f"{name}: {type(obj).__name__}._array_view() returned {type(view).__name__}, not "
                "an ArrayView"
            )
        return view
    if isinstance(obj, np.ndarray):
        iface = obj.__array_interface__
        return _from_interface(obj, iface, -1, name)
    consumer = -1 if stream_ptr is None else int(stream_ptr)
    has_dlpack = hasattr(obj, "__dlpack__")
    has_cai = hasattr(obj, "__cuda_array_interface__")
    if has_dlpack or has_cai:
        StridedMemoryView = _memory_view_class()
        if StridedMemoryView is not None:
            if has_dlpack:
                try:
                    return _from_memory_view(obj, StridedMemoryView.from_dlpack(obj, consumer))
                except (BufferError, TypeError, NotImplementedError):
                    if not has_cai:
                        raise
            return _from_memory_view(
                obj, StridedMemoryView.from_cuda_array_interface(obj, consumer)
            )
        if has_cai:
            iface = obj.__cuda_array_interface__
            if iface.get("stream") not in (None, consumer) and stream_ptr is not None:
                raise ImportError(
                    f"{name}: synchronising with the array's stream needs cuda.core; install the "
                    "cu12 or cu13 extra"
                )
            return _from_interface(obj, iface, _cai_device(iface), name)
    host_iface = getattr(obj, "__array_interface__", None)
    if host_iface is not None:
        return _from_interface(obj, host_iface, -1, name)
    raise TypeError(
        f"{name} must be an array exposing DLPack or __cuda_array_interface__ (CuPy, PyTorch, JAX, "
        f"Numba, pycudnn.DeviceArray) or a NumPy array, not {type(obj).__name__}"
    )


def _cai_device(iface: dict[str, Any]) -> int:
    # Without cuda.core the device of a CAI pointer cannot be queried; assume the current one (0).
    return 0


def data_pointer(obj: Any) -> int:
    """The data pointer of ``obj`` without full validation: the cheap path for cached plans."""
    ptr = getattr(obj, "ptr", None)
    if isinstance(ptr, int) and hasattr(obj, "_array_view"):
        return ptr
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is not None:
        return int(iface["data"][0] or 0)
    return as_array_view(obj).ptr
