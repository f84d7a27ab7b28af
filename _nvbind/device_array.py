"""``DeviceArray``: a strided array in GPU memory, the seed's Majel ``Array``.

A :class:`DeviceArray` is a *place* (a device), an *allocation* (a ``cuda.core`` ``Buffer`` from the
device's stream-ordered memory pool), *dims* (``shape``), *strides* (in elements) and a *dtype*
(NumPy, or ml_dtypes for bfloat16 and the fp8 types). It converts from and to NumPy, exposes
``__cuda_array_interface__`` v3 and DLPack (so CuPy, PyTorch, JAX and Numba take it without a
copy), and wraps their arrays in turn (:meth:`DeviceArray.from_array`). ``pycudnn.DeviceArray``
and ``pycutensor.DeviceArray`` are this class.

DLPack is exported and read by :mod:`_nvbind.dlpack` (a few ctypes structures) rather
than only through ``cuda.core``'s ``StridedMemoryView``, which refuses the ml_dtypes types: here
bfloat16 and the fp8 types travel as DLPack's ``kDLBfloat`` and ``kDLFloat8_*`` codes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from . import host_copy
from .array_checks import (
    _check_dtype,
    _check_shape,
    _check_strides,
    _device_or_raise,
    _layout_strides,
    _overlaps,
    _same_stream,
)
from .arrays import ArrayView, _from_dlpack, as_array_view
from .cuda import get_device, require_cuda_core, stream_handle
from .dlpack import _KDL_CUDA, _has_live_exports, export_dlpack
from .dtypes import dtype_name
from .host_copy import _copy, _host_buffer
from .keywords import keyword_defaults, show_keywords, take_keywords
from .memory import allocate, stream_object
from .resource import ClosedError
from .strides import c_strides as _c_strides
from .strides import element_extent
from .view import ArrayGeometry

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["AllocationKeywords", "DeviceArray"]

_INT64_MAX = 2**63 - 1  # DLPack, the CUDA array interface and NumPy hold extents in int64


class AllocationKeywords(TypedDict, total=False):
    """The keywords of :meth:`DeviceArray.empty` that :meth:`DeviceArray.zeros` takes too, with
    the same defaults: its fixed keyword list, for ``**kw: Unpack[AllocationKeywords]``."""

    device: Any
    stream: Any
    strides: Sequence[int] | None
    fmt: str | None


# -- DeviceArray -----------------------------------------------------------------------------


class DeviceArray(ArrayGeometry):
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
        "_ordered_for",
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
        )

    def _init(  # noqa: PLR0917 - private initialiser shared by __init__ and the factories
        self,
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
        """Set every field; returns the array, so that a factory makes one without ``__init__``'s
        checks as ``cls.__new__(cls)._init(...)``."""
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
        self._ordered_for: int | None = None  # the last stream ordered after the allocation's
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
        return cls._allocate("DeviceArray.empty", shape, dtype, device, stream, strides, fmt)

    @classmethod
    def _allocate(  # noqa: PLR0917 - private: the arguments of empty/zeros, in their order
        cls,
        what: str,  # the factory called, for the no-GPU error (zeros must not say "empty")
        shape: Sequence[int] | int,
        dtype: Any,
        device: Any,
        stream: Any,
        strides: Sequence[int] | None,
        fmt: str | None,
    ) -> DeviceArray:
        shp = _check_shape(shape)
        dt = _check_dtype(dtype)
        st = _layout_strides(shp, strides, fmt)
        _, span = element_extent(shp, st)
        if span * dt.itemsize > _INT64_MAX:  # refused here rather than by the allocator
            raise ValueError(
                f"shape {shp} of {dtype_name(dt)} spans {span * dt.itemsize} bytes, more memory "
                "than exists"
            )
        dev = _device_or_raise(device, what)
        s = stream_object(stream, dev)
        buf = allocate(span * dt.itemsize, device=dev, stream=s)
        return cls.__new__(cls)._init(
            buf, int(buf.handle), shp, st, dt, int(dev.device_id), stream=s
        )

    @classmethod
    def zeros(
        cls,
        shape: Sequence[int] | int,
        dtype: Any = np.float32,
        **kw: Unpack[AllocationKeywords],
    ) -> DeviceArray:
        """Like :meth:`empty` (the same keywords and defaults), filled with zero bytes (0 in every
        supported type)."""
        k = take_keywords("DeviceArray.zeros", kw, _ALLOCATION)
        layout = k["device"], k["stream"], k["strides"], k["fmt"]
        out = cls._allocate("DeviceArray.zeros", shape, dtype, *layout)
        out._buffer.fill(0, stream=out._stream)
        # waited for, as from_numpy waits for its copy: an operation on another stream must not
        # read the array before its zeros are there
        out._stream.sync()
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
        out = cls.__new__(cls)._init(
            buf, int(buf.handle), shp, st, dt, int(dev.device_id), stream=s
        )
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
        return cls._from_view(as_array_view(obj, name="obj", stream_ptr=stream_handle(stream)))

    @classmethod
    def from_dlpack(cls, obj: Any, *, stream: Any = None) -> DeviceArray:
        """A view (no copy) of a GPU tensor exported through DLPack (``obj.__dlpack__``).

        Like :meth:`from_array`, restricted to DLPack: every type DLPack names travels, fp8
        included (torch ``float8_e4m3fn`` tensors, which ``cuda.core`` 1.2 cannot read, are read
        by :mod:`_nvbind.dlpack`). ``stream`` is the stream the view will be used on; the
        producer orders its work before it. Host tensors are refused (use :meth:`from_numpy`).
        """
        if isinstance(obj, DeviceArray):
            return obj
        if not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")):
            raise TypeError(
                f"obj must export DLPack (__dlpack__ and __dlpack_device__), not "
                f"{type(obj).__name__}"
            )
        return cls._from_view(_from_dlpack(obj, stream_handle(stream), "obj"))

    @classmethod
    def _from_view(cls, view: ArrayView) -> DeviceArray:
        # A view of another library's GPU memory (from_array, from_dlpack): kept alive by
        # ``view.owner``, never freed here.
        if view.device_id < 0:
            raise ValueError("obj is host memory; copy it with DeviceArray.from_numpy")
        return cls.__new__(cls)._init(
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
        """Extents, in logical order (as NumPy's ``shape``)."""
        return self._shape

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements (NumPy's ``strides`` are in bytes)."""
        return self._strides

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements (``ml_dtypes`` types for bf16 and fp8)."""
        return self._dtype

    @property
    def device_id(self) -> int:
        """Ordinal of the GPU that holds the memory."""
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
        """True for a view that must not be written (exported read-only through the protocols)."""
        return self._readonly

    @property
    def closed(self) -> bool:
        """True once :meth:`close` returned the memory to its pool."""
        return self._ptr is None

    is_closed = closed

    @property
    def is_c_contiguous(self) -> bool:
        """True when the strides are those of a C-ordered (row-major) packed array."""
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
                # what holds the memory, not this array: a view naming the array would make a
                # reference cycle, and the memory would wait for the cyclic collector after del
                self._buffer if self._buffer is not None else self._owner,
            )
        elif self._ptr is None:
            raise ClosedError("this DeviceArray is closed")
        return view

    def _view_on(self, stream_ptr: int) -> ArrayView:
        """:meth:`_array_view` for work about to run on ``stream_ptr`` (-1: none, host-side
        inspection): when that stream is not the one the array was allocated on, it is first made
        to wait for it, once per change of stream. The pool's allocation is ordered on its stream
        only: another stream could otherwise use the memory before work already queued on the
        allocation stream (which may have freed it) is done. The CUDA array interface's
        ``stream`` and DLPack's ``stream`` argument do the same for the arrays other libraries
        take from this one."""
        view = self._view
        if view is None or self._ptr is None:
            view = self._array_view()
        if stream_ptr != self._ordered_for and stream_ptr >= 0:
            if self._stream is not None:
                self._order_before(stream_ptr or 1)  # 0 and 1 both name the legacy stream
            self._ordered_for = stream_ptr
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
            if isinstance(stream, bool) or not isinstance(stream, int) or not 0 < stream < 2**64:
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

        core = require_cuda_core()
        core.Stream.from_handle(consumer).wait(producer)

    # -- host transfers (_nvbind.host_copy) ------------------------------------------
    def to_numpy(self, stream: Any = None) -> np.ndarray:
        """Copy to a new C-contiguous NumPy array (waits for the copy; strides are honoured).

        ``stream`` defaults to the stream the array was allocated on.
        """
        return host_copy.to_numpy(self, stream)

    def copy_from_numpy(self, array: Any, stream: Any = None) -> None:
        """Overwrite this array with a NumPy array of the same shape and dtype (waits).

        Strided layouts are honoured; bytes in the gaps between elements are preserved (read
        back and written again).
        """
        host_copy.copy_from_numpy(self, array, stream)

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
        owner, self._owner = self._owner, None
        if _has_live_exports(self):
            # A DLPack consumer still uses this memory: freeing it now (or dropping the foreign
            # array a view holds) would hand the consumer freed memory. The export keeps this
            # object, and what is parked on it, alive until the consumer releases it.
            self._deferred_buffer = buf if buf is not None else owner
            return
        if buf is not None:
            if stream is not None:  # the device read from the buffer: self's is cleared
                ordinal = self._device_id if self._device_id is not None else int(buf.device_id)
                buf.close(stream_object(stream, get_device(ordinal)))
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


# empty spells out the keywords (and defaults) that zeros takes as AllocationKeywords.
_ALLOCATION = keyword_defaults(DeviceArray.empty)
show_keywords({"zeros": vars(DeviceArray)["zeros"].__func__}, DeviceArray.empty, AllocationKeywords)
