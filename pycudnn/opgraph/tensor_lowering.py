"""The TENSOR descriptors of a graph's lowering.

A graph's tensors make most of its lowering's C calls: a descriptor, five attributes and a
finalize each (84 of the 139 calls that lower RoPE -> SDPA). A plain tensor (neither vectorized
nor ragged) is set here without :meth:`~pycudnn.backend.BackendDescriptor.set`'s general
checks, which took about 1.5 us of the 2.6 us each attribute cost: the descriptors are created
in one library call, each attribute is one ctypes call, and what ``set`` and ``finalize``
record on the descriptor (the attributes set, finalized) is recorded alike. What the general
checks would catch is checked first, in about 1 us a tensor: its dims and strides (or the view a
rewrite shows cuDNN instead), uid and alignment are ints (no bools) from 1 (a uid from 0) to the
int64 maximum, which a ctypes array would wrap silently. The graph checked them when it was
described, but a Tensor's attributes can be reassigned since. A tensor that fails that check
takes the general path, which says what is wrong; so do vectorized and ragged tensors, a data
type newer than the loaded cuDNN (which ``set`` refuses before C, naming the version it needs),
and every tensor of a recording lowering. The virtual tensors a lowering adds of its own (an
SDPA's score subgraph and softmax, the composite attention graph: :func:`set_virtual`) are set
the same way, after the same check.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from _nvbind.ffi import int64_arg
from _nvbind.interrupts import raise_deferred

from .._attrnames import AttrName, AttrType, DescType
from .._attrspec import _needs
from .._descriptor_memory import DescriptorBatch, _create, _raise_for
from .._lib import LIB
from ..backend import BackendDescriptor
from ..errors import CudnnError
from .common import _INT64_MAX, CudnnDataType, _cudnn_dtype, _dims_text

if TYPE_CHECKING:  # pragma: no cover
    from .tensors import Tensor

__all__ = ["lower_tensors", "renamed", "set_tensor", "set_virtual"]

_TENSOR = DescType.TENSOR_DESCRIPTOR
_INT64, _DATA_TYPE, _BOOLEAN = (
    int(AttrType.INT64), int(AttrType.DATA_TYPE), int(AttrType.BOOLEAN)
)  # fmt: skip
_UID, _DTYPE, _ALIGNMENT = (
    int(AttrName.TENSOR_UNIQUE_ID), int(AttrName.TENSOR_DATA_TYPE),
    int(AttrName.TENSOR_BYTE_ALIGNMENT),
)  # fmt: skip
_DIMS, _STRIDES = int(AttrName.TENSOR_DIMENSIONS), int(AttrName.TENSOR_STRIDES)
_VIRTUAL, _BY_VALUE = int(AttrName.TENSOR_IS_VIRTUAL), int(AttrName.TENSOR_IS_BY_VALUE)
_INTS = {int}
_ONE_INT = ctypes.c_int64 * 1
_ONE_ENUM = ctypes.c_int * 1  # cudnnDataType_t
_BASIC_KINDS: dict[int, None] = dict.fromkeys((_UID, _DTYPE, _ALIGNMENT, _DIMS, _STRIDES))
_ONE = int64_arg(1)  # an element count
_TRUE = (ctypes.c_bool * 1)(True)  # cuDNN copies what it is given: one array serves every call

Views = Mapping[int, tuple[tuple[int, ...], tuple[int, ...]]]


def renamed(exc: CudnnError, text: str) -> CudnnError:
    """``exc`` with ``text`` (what failed, in the graph's terms) before cuDNN's message."""
    return type(exc)(exc.status, exc.function, f"{text}: {exc.message}")


def _label(t: Tensor, dims: tuple[int, ...]) -> str:
    return f"tensor '{t.name}' {_dims_text(dims)}"


def set_tensor(d: BackendDescriptor, t: Tensor, dims: tuple[int, ...], strides: Any) -> None:
    """Every attribute of ``t`` on ``d`` through the general ``set`` (each value checked)."""
    assert t.element_type is not None
    vector = (t.vector_count, t.vectorized_dim) if t.is_vectorized else None
    dtype = _cudnn_dtype(t.element_type, t.name)
    flags = (bool(t.is_virtual), t.by_value)
    _set_each(d, (t.uid, dtype, t.alignment), dims, strides, flags, vector=vector)


def _set_each(
    d: BackendDescriptor,
    numbers: tuple[int, Any, int],
    dims: Any,
    strides: Any,
    flags: tuple[bool, bool],
    *,
    vector: tuple[int, int | None] | None = None,
) -> None:
    """A tensor's attributes on ``d``, each through ``set``: ``numbers`` (uid, data type,
    alignment), ``flags`` (virtual, by value), ``vector`` (count, dimension) when vectorized."""
    uid, dtype, alignment = numbers
    d.set("TENSOR_UNIQUE_ID", uid, attr_type="INT64")
    d.set("TENSOR_DATA_TYPE", dtype, attr_type="DATA_TYPE")
    d.set("TENSOR_BYTE_ALIGNMENT", alignment, attr_type="INT64")
    d.set("TENSOR_DIMENSIONS", dims, attr_type="INT64")
    d.set("TENSOR_STRIDES", strides, attr_type="INT64")
    if vector is not None:
        d.set("TENSOR_VECTOR_COUNT", vector[0], attr_type="INT64")
        d.set("TENSOR_VECTORIZED_DIMENSION", vector[1], attr_type="INT64")
    virtual, by_value = flags
    if virtual:
        d.set("TENSOR_IS_VIRTUAL", True, attr_type="BOOLEAN")
    if by_value:
        d.set("TENSOR_IS_BY_VALUE", True, attr_type="BOOLEAN")


def _as_described(uid: Any, alignment: Any, dims: Any, strides: Any) -> bool:
    """Whether ``dims``, ``strides`` (a tensor's own or a view's), the uid and the alignment are
    what a description guarantees: ints (no bools), as many dims as strides, dims, strides and
    alignment from 1 and none above the int64 maximum, which a ctypes int64 array would wrap
    silently. Checked again here (about 1 us a tensor) because a Tensor's attributes can be
    reassigned after the graph checked them."""
    return (
        0 < len(dims) == len(strides)
        and {*map(type, dims), *map(type, strides), type(uid), type(alignment)} == _INTS
        and min(dims) >= 1
        and min(strides) >= 1
        and max(dims) <= _INT64_MAX
        and max(strides) <= _INT64_MAX
        and 0 <= uid <= _INT64_MAX
        and 1 <= alignment <= _INT64_MAX
    )


def lower_tensors(
    tensors: list[Tensor],
    views: Views,
    new: Callable[[str], BackendDescriptor],
    finalize: Callable[[BackendDescriptor, Callable[[], str]], None],
    *,
    batch: DescriptorBatch | None,
    made: list[BackendDescriptor],
) -> dict[int, BackendDescriptor]:
    """Finalized TENSOR descriptors of ``tensors``, by uid. With a ``batch`` (which then owns
    them; they are appended to ``made``), the plain tensors are set directly (see the module);
    the others, and every tensor without a batch (``new`` makes them), through ``set``. Ragged
    tensors come last, after the offsets their descriptors hold."""
    out: dict[int, BackendDescriptor] = {}
    plain = [] if batch is None else [t for t in tensors if _is_plain(t)]
    if plain:
        assert batch is not None
        ptrs = _create(_TENSOR, len(plain))  # one library call
        for ptr in ptrs:
            batch.add(ptr)
        descs = BackendDescriptor._members(ptrs, _TENSOR, batch, ())
        made.extend(descs)
        for t, d in zip(plain, descs, strict=True):
            dims, strides = views.get(t.uid, (t.dims, t.strides))
            dtype = _direct_dtype(t)
            if dtype is not None and _as_described(t.uid, t.alignment, dims, strides):
                flags = (bool(t.is_virtual), t.by_value)
                _set_direct(d, t.uid, dtype, t.alignment, dims, strides, flags, (t, dims))
            else:
                set_tensor(d, t, dims, strides)
                finalize(d, partial(_label, t, dims))
            out[t.uid] = d
    rest = tensors if batch is None else [t for t in tensors if not _is_plain(t)]
    for t in sorted(rest, key=lambda t: t.ragged_offset is not None):
        d = new("TENSOR")
        # A vectorized tensor is shown with C counted in vectors (its strides already are).
        dims, strides = views.get(t.uid, (t.vector_dims, t.strides))
        set_tensor(d, t, dims, strides)
        if t.ragged_offset is not None:
            offsets = out[t.ragged_offset.uid]
            d.set("TENSOR_RAGGED_OFFSET_DESC", offsets, attr_type="BACKEND_DESCRIPTOR")
        finalize(d, partial(_label, t, dims))
        out[t.uid] = d
    return out


def _is_plain(t: Tensor) -> bool:
    return not t.is_vectorized and t.ragged_offset is None


def _direct_dtype(t: Tensor) -> int | None:
    """The number of ``t``'s cuDNN data type, or None where the general path must set it: a
    type newer than the loaded cuDNN, which ``set`` refuses before C, naming both versions."""
    assert t.element_type is not None
    member = _cudnn_dtype(t.element_type, t.name)
    return None if LIB.lacks(_needs_of(member)) else int(member)


@cache  # a handful of data types; the newest cuDNN each needs never changes
def _needs_of(member: Any) -> tuple[int, int, int] | None:
    return _needs(member)


def set_virtual(
    d: BackendDescriptor,
    uid: int,
    dtype: str,
    dims: tuple[int, ...],
    strides: tuple[int, ...],
    *,
    finalize: Callable[[BackendDescriptor, str], None],
    what: str,
    ragged: BackendDescriptor | None = None,
) -> None:
    """A virtual tensor of the lowering's own (an SDPA's score subgraph, its softmax, a
    composite attention graph) on ``d``, finalized: ``uid``, the data type ``dtype`` (a
    ``cudnnDataType_t`` name), 16-byte alignment, ``dims`` and ``strides``, and ``ragged`` (the
    descriptor of a graph tensor's ragged offsets) for a view of a ragged tensor; ``what`` names
    it in cuDNN's error. Set one ctypes call an attribute, as a plain tensor is, where ``d`` is
    a BackendDescriptor itself and the values are in range; otherwise through ``set``, which
    refuses what is wrong and which a subclass (the plan loader's recording descriptor) sees."""
    number = _VIRTUAL_TYPES.get(dtype)
    if (
        ragged is None
        and number is not None
        and type(d) is BackendDescriptor
        and _as_described(uid, 16, dims, strides)
    ):
        _set_direct(d, uid, number, 16, dims, strides, (True, False), what)
        return
    _set_each(d, (uid, dtype, 16), dims, strides, (True, False))
    if ragged is not None:
        d.set("TENSOR_RAGGED_OFFSET_DESC", ragged, attr_type="BACKEND_DESCRIPTOR")
    finalize(d, what)


#: The data types of the lowering's own virtual tensors set directly (all in cuDNN 9.0; any
#: other goes through ``set``, which checks it against the loaded cuDNN).
_VIRTUAL_TYPES = {
    n: int(CudnnDataType[n]) for n in ("FLOAT", "INT32", "BOOLEAN", "HALF", "BFLOAT16")
}


def _set_direct(  # noqa: PLR0917 - private: the values in the order of the calls
    d: BackendDescriptor,
    uid: int,
    dtype: int,
    alignment: int,
    dims: tuple[int, ...],
    strides: tuple[int, ...],
    flags: tuple[bool, bool],
    what: tuple[Tensor, tuple[int, ...]] | str,
) -> None:
    """A tensor's attributes on ``d`` and ``cudnnBackendFinalize``, one ctypes call each
    (spelled out: a loop over tuples of arguments cost as much again as the calls). ``flags``:
    (virtual, by value); ``what``: the tensor and its dims, or text, to name it in an error."""
    # Every argument is what C takes (the enums as ints, the counts as int64_t), so ctypes
    # converts none of them (see NativeLibrary.unconverted_function).
    set_attribute = LIB.unconverted_function("cudnnBackendSetAttribute")
    ptr, n = d._c_ptr, len(dims)
    array, count = ctypes.c_int64 * n, int64_arg(n)
    _ok(set_attribute(ptr, _UID, _INT64, _ONE, _ONE_INT(uid)), _UID, what)
    _ok(set_attribute(ptr, _DTYPE, _DATA_TYPE, _ONE, _ONE_ENUM(dtype)), _DTYPE, what)
    _ok(set_attribute(ptr, _ALIGNMENT, _INT64, _ONE, _ONE_INT(alignment)), _ALIGNMENT, what)
    _ok(set_attribute(ptr, _DIMS, _INT64, count, array(*dims)), _DIMS, what)
    _ok(set_attribute(ptr, _STRIDES, _INT64, count, array(*strides)), _STRIDES, what)
    kinds = d._set_kinds
    kinds.update(_BASIC_KINDS)  # as set() records values that are no descriptors
    virtual, by_value = flags
    if virtual:
        _ok(set_attribute(ptr, _VIRTUAL, _BOOLEAN, _ONE, _TRUE), _VIRTUAL, what)
        kinds[_VIRTUAL] = None
    if by_value:
        _ok(set_attribute(ptr, _BY_VALUE, _BOOLEAN, _ONE, _TRUE), _BY_VALUE, what)
        kinds[_BY_VALUE] = None
    status = LIB.function("cudnnBackendFinalize")(ptr)
    if status:
        try:
            _raise_for(status, "cudnnBackendFinalize", f"finalizing a {d.type_name}")
        except CudnnError as exc:
            raise renamed(exc, _what(what)) from None
    d._finalized = True
    raise_deferred()  # a Ctrl-C that landed in a log callback during these calls


def _what(what: tuple[Tensor, tuple[int, ...]] | str) -> str:
    return what if isinstance(what, str) else _label(*what)


def _ok(status: int, attr: int, what: tuple[Tensor, tuple[int, ...]] | str) -> None:
    if status:
        name = AttrName(attr).name
        context = f"{_what(what)}: setting CUDNN_ATTR_{name}"
        _raise_for(status, "cudnnBackendSetAttribute", context)
