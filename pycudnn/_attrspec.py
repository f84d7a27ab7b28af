"""What ``BackendDescriptor.set`` and ``get`` work out once per attribute, type and descriptor.

Before each ``cudnnBackendSetAttribute`` the typed layer normalises the attribute's name, finds
its documented type, its owner, the cuDNN version that introduced both, the kind of values it
takes and the integer rule it falls under (``backend._integer_rule``); before each value, the
enumerator a name such as ``"HALF"`` spells. Done every time, that was 10-15 µs of Python per
attribute against about 1 µs for cuDNN's own call, and a convolution's plan sets some 60 of them.
None of it depends on the value, only on what names the attribute (its spelling, the type's
spelling, the descriptor's kind), so :class:`AttrSpec` keeps the answer, worked out by the same
functions with the same errors as before: a combination that is refused is never kept.

What can change once a combination is kept is the loaded cuDNN's version (tests declare it
older): each :class:`AttrSpec` and each enum value keeps the newest ``@since`` of the symbols it
uses (None when every one is as old as the oldest supported cuDNN), and a use checks it again
(``NativeLibrary.lacks``), leaving the refusal and its message to the full check.

:meth:`AttrSpec.encode` converts the common values (ints and sequences of ints, enum names and
members, bools, floats, finalized descriptors) straight to a ctypes array, and answers None for
anything else or anything wrong, which the general ``_attrs._encode`` then converts or refuses
with its message.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from typing import Any

from . import _bindings
from ._attrnames import _DESCRIPTOR, ENUM_OF_TYPE, AttrName, AttrType, DescType, _attr_text
from ._attrs import (
    _DIM_MAX,
    _INT64_RANGE,
    _INT_RANGES,
    _MANY_DESPITE_DOCS,
    _enum_value,
    _kind_of,
    _value_kinds,
)
from ._dims import INT64_MAX, vectorized_dim_rule, vectorized_extent
from ._lib import LIB, MINIMUM_VERSION
from ._versions import enum_since

__all__ = [
    "AttrSpec",
    "cached_spec",
    "check_integer_values",
    "descriptor_needs",
    "integer_maximum",
    "integer_rule",
    "keep_descriptor_type",
    "keep_spec",
    "vectorized_tensor_attrs",
]

#: Integer attributes cuDNN uses as extents or divides by: every element must be at least 1.
#: cuDNN does not refuse 0 for all of them; it finalizes the descriptor and later divides by it
#: (observed, cuDNN 9.27/9.28, SIGFPE at finalize: a MATMUL with a batch extent 0, a REDUCTION
#: whose output has an extent 0, a BLOCK_SCALE_QUANTIZE with BLOCK_SIZE 0). So the rule is kept
#: by the kind of the attribute (its name's last words), not for the values seen to crash:
#: dimensions, dilations, filter/window strides, window sizes, spatial ranks, vector counts, block
#: sizes, alignments, multipliers, batch and group counts, RoPE dims, top-k, sequence-length caps.
_POSITIVE_ATTR = re.compile(
    r"(?:_DIMENSIONS|_DILATIONS|_FILTER_STRIDES|RESAMPLE_STRIDES|SLICE_STRIDES|_WINDOW_DIMS"
    r"|_SPATIAL_DIMS|_VECTOR_COUNT|_BLOCK_SIZE|_BYTE_ALIGNMENT|_OFFSET_MULTIPLIER|_BATCH_COUNT"
    r"|_GROUP_COUNT|_GROUPS|_ROPE_DIM|_TOP_K|_MAX_TOTAL_SEQ_LEN_Q|_MAX_TOTAL_SEQ_LEN_KV)$"
)
#: Integer attributes that are offsets, paddings, memory strides or indices: at least 0 (cuDNN
#: refuses negative tensor strides and paddings itself for some descriptors, not for all).
_NON_NEGATIVE_ATTR = re.compile(
    r"(?:^TENSOR_STRIDES|_PADDINGS|_START_INDICES|_LIMIT_INDICES|_SM_COUNT_TARGET"
    r"|_SHARED_MEMORY_LIMIT|_INPLACE_INDEX|_DEVICE_ID|_GLOBAL_INDEX)$"
)


#: Integer attributes cuDNN keeps in 32 bits although they are set as INT64: at most 2**31 - 1.
#: A TENSOR_VECTOR_COUNT of 2**61 or 2**62 finalizes its tensor, then crashes the finalize of an
#: operation reading it (SIGFPE, cuDNN 9.28; found by fuzzing); no value below 2**31 did, over
#: random extents. cuDNN's vectorized layouts use 4 and 32.
_INT32_ATTR = re.compile(r"(?:_VECTOR_COUNT)$")
_INT32_MAX = 2**31 - 1


def integer_maximum(attr_name: str) -> tuple[int, str] | None:
    """``(maximum, why)`` for an integer attribute cuDNN narrows unchecked, else None."""
    if _INT32_ATTR.search(attr_name):
        return _INT32_MAX, "cuDNN keeps it in 32 bits (a larger one crashes the process, SIGFPE)"
    return None


def integer_rule(attr_name: str) -> tuple[int, str] | None:
    """``(minimum, why)`` for an integer attribute whose values cuDNN uses unchecked, else None."""
    if _NON_NEGATIVE_ATTR.search(attr_name):
        return 0, "it is an offset, padding, stride or index"
    if _POSITIVE_ATTR.search(attr_name):
        return 1, "cuDNN uses it as an extent or divides by it (0 crashes the process, SIGFPE)"
    return None


def check_integer_values(name: Any, values: Sequence[int]) -> None:
    """Refuse integer values of ``name`` (an attribute) below the minimum of its kind.

    Run on the encoded elements before ``cudnnBackendSetAttribute``, so it holds for every way a
    value reaches the typed layer (ints, NumPy scalars and arrays, any ``attr_type=``).
    """
    rule, cap = integer_rule(name.name), integer_maximum(name.name)
    if rule is None and cap is None:
        return
    for i, v in enumerate(values):
        if rule is not None and v < rule[0]:
            raise ValueError(
                f"{_attr_text(name)} must be at least {rule[0]}, got {v}"
                f"{_element(i, values)}: {rule[1]}"
            )
        if cap is not None and v > cap[0]:
            raise ValueError(
                f"{_attr_text(name)} must be at most {cap[0]}, got {v}"
                f"{_element(i, values)}: {cap[1]}"
            )


def _element(i: int, values: Sequence[int]) -> str:
    # Which element an error names, for several (formatted only for the error).
    return "" if len(values) == 1 else f" (element {i} of {list(values)})"


def _needs(*members: Any) -> tuple[int, int, int] | None:
    """The newest ``@since`` of ``members`` (enum members), or None when none is newer than the
    oldest supported cuDNN (such a symbol can never be missing from the loaded library)."""
    newest: tuple[int, int, int] | None = None
    for m in members:
        entry = enum_since(type(m), int(m))
        if (
            entry is not None
            and entry[1] > MINIMUM_VERSION
            and (newest is None or entry[1] > newest)
        ):
            newest = entry[1]
    return newest


# A bound on the kept entries: the keys are spellings a program uses, a handful per attribute,
# but nothing stops a program from generating them (case variants), and a cache must not grow
# without end. Past it, the cache starts again.
_MAX_ENTRIES = 4096

#: Keyed by (type(attr), attr, type(attr_type), attr_type, descriptor type as an int): the types
#: keep True from hitting the entry of 1 (a bool is refused as an attribute or type).
_SPECS: dict[tuple[Any, ...], AttrSpec] = {}
#: Keyed by (type(kind), kind): (the descriptor type, the newest @since it needs).
_KINDS: dict[tuple[Any, Any], tuple[Any, tuple[int, int, int] | None]] = {}
#: Keyed by (enum class, type(value), value): (the number, the newest @since it needs).
_ENUM_VALUES: dict[tuple[Any, ...], tuple[int, tuple[int, int, int] | None]] = {}


#: ``ctype * n`` by (ctype, n): making the array type each time took as long as filling it.
_ARRAY_TYPES: dict[tuple[Any, int], Any] = {}
#: What an encoded value that holds no object keeps alive.
_NOTHING: tuple[Any, ...] = ()
_ONE_POINTER = ctypes.c_void_p * 1


def _array(ctype: Any, n: int) -> Any:
    """The ctypes array type of ``n`` elements of ``ctype`` (kept: a handful per program)."""
    kind = _ARRAY_TYPES.get((ctype, n))
    if kind is None:
        kind = ctype * n
        if n <= 64:  # the lengths a plan uses; longer ones are rare and not kept
            _ARRAY_TYPES[(ctype, n)] = kind
    return kind


def _store(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= _MAX_ENTRIES:
        cache.clear()
    cache[key] = value


class AttrSpec:
    """One attribute as set or read on one kind of descriptor through one spelling: the facts
    ``BackendDescriptor.set``/``get`` check and use, worked out once (see the module)."""

    __slots__ = (
        "atype",
        "axis",
        "ctype",
        "enum_cls",
        "hi",
        "key",
        "kind",
        "minimum",
        "name",
        "needs",
        "range",
        "single",
        "value_kinds",
    )

    def __init__(self, name: Any, atype: int, documented_count: int | None) -> None:
        self.name = name
        self.key = int(name)
        self.atype = atype
        self.kind = _kind_of(atype)
        self.ctype: Any = _bindings.ATTRIBUTE_TYPE_CTYPES.get(atype)
        #: read as one element by default (the header documents one, and it does hold one)
        self.single = documented_count == 1 and name.name not in _MANY_DESPITE_DOCS
        rule = integer_rule(name.name) if self.kind == "int" else None
        lo, hi = _INT_RANGES.get(atype, _INT64_RANGE)
        cap = integer_maximum(name.name) if self.kind == "int" else None
        if cap is not None:
            hi = min(hi, cap[0])  # the fast path leaves a larger value to the refusal
        #: the smallest value the fast path accepts: the integer rule's minimum, else the range's
        self.minimum = max(lo, rule[0]) if rule is not None else lo
        self.range = (lo, hi)
        self.hi = hi
        #: a dimension index: [-1, CUDNN_DIM_MAX) (see _attrs._encode)
        self.axis = name.name.endswith("_AXIS")
        self.needs = _needs(name, AttrType(atype))
        self.value_kinds = _value_kinds(name) if atype == _DESCRIPTOR else None
        self.enum_cls = ENUM_OF_TYPE.get(atype) if self.kind == "enum" else None

    def encode(
        self, value: Any, descriptor_class: type[Any]
    ) -> tuple[Any, int, Sequence[Any]] | None:
        """``(ctypes array, count, descriptors to keep alive)`` for the common, valid values;
        None for anything else (``_attrs._encode`` converts it, or refuses it with its message)."""
        kind = self.kind
        if kind == "int":
            return self._encode_ints(value)
        if kind == "enum":
            return self._encode_enums(value)
        if kind == "desc":
            return self._encode_descriptors(value, descriptor_class)
        if kind == "bool" and type(value) is bool:
            return _array(ctypes.c_bool, 1)(value), 1, _NOTHING
        if kind == "real" and type(value) in (float, int):
            return _array(self.ctype, 1)(float(value)), 1, _NOTHING
        return None

    def _encode_ints(self, value: Any) -> tuple[Any, int, Sequence[Any]] | None:
        t = type(value)
        if t is int:
            if not self.minimum <= value <= self.hi or (self.axis and not -1 <= value < _DIM_MAX):
                return None
            return _array(self.ctype, 1)(value), 1, _NOTHING
        if t is not list and t is not tuple:
            return None
        for v in value:
            if type(v) is not int:
                return None
        if value and (min(value) < self.minimum or max(value) > self.hi):
            return None
        if self.axis and any(not -1 <= v < _DIM_MAX for v in value):
            return None
        n = len(value)
        return _array(self.ctype, n)(*value), n, _NOTHING

    def _encode_enums(self, value: Any) -> tuple[Any, int, Sequence[Any]] | None:
        enum_cls = self.enum_cls
        if enum_cls is None:
            return None
        items = value if type(value) is list or type(value) is tuple else (value,)
        numbers = []
        for v in items:
            key = (enum_cls, type(v), v)
            try:
                entry = _ENUM_VALUES.get(key)
            except TypeError:  # unhashable: not an enum value
                return None
            if entry is None:
                if type(v) is not str and not isinstance(v, enum_cls):
                    return None  # ints and the rest: the general path checks them
                try:
                    number = _enum_value(enum_cls, v)
                except TypeError:
                    return None
                entry = (number, _needs(enum_cls(number)))
                _store(_ENUM_VALUES, key, entry)
            if entry[1] is not None and LIB.lacks(entry[1]):
                return None  # the general path refuses it, naming both versions
            numbers.append(entry[0])
        n = len(numbers)
        return _array(self.ctype, n)(*numbers), n, _NOTHING

    def _encode_descriptors(
        self, value: Any, descriptor_class: type[Any]
    ) -> tuple[Any, int, Sequence[Any]] | None:
        kinds = self.value_kinds
        if isinstance(value, descriptor_class):  # one descriptor, the common case: no loop
            ptr = value._ptr
            if (
                ptr is None
                or not value._finalized
                or (kinds is not None and value._dtype not in kinds)
            ):
                return None
            return _ONE_POINTER(ptr), 1, (value,)
        if type(value) is list or type(value) is tuple:
            descs: Any = value
        else:
            return None
        ptrs = []
        for d in descs:
            # the descriptor class's own state: open (a pointer), finalized, of a kind it takes
            if (
                not isinstance(d, descriptor_class)
                or d._ptr is None
                or not d._finalized
                or (kinds is not None and d._dtype not in kinds)
            ):
                return None
            ptrs.append(d._ptr)
        n = len(ptrs)
        return _array(ctypes.c_void_p, n)(*ptrs), n, list(descs)


def cached_spec(
    attr: Any, attr_type: Any, descriptor_type: int
) -> tuple[tuple[Any, ...] | None, AttrSpec | None]:
    """``(key, spec)``: the cache key of an attribute spelled ``attr`` with ``attr_type`` on a
    descriptor of ``descriptor_type`` (None for an unhashable spelling, which is never kept),
    and its kept :class:`AttrSpec` while the loaded cuDNN still has what it uses, else None."""
    key: tuple[Any, ...] | None = (type(attr), attr, type(attr_type), attr_type, descriptor_type)
    try:
        spec = _SPECS.get(key)  # type: ignore[arg-type]
    except TypeError:  # unhashable: the full check says what is wrong with it
        return None, None
    if spec is None or (spec.needs is not None and LIB.lacks(spec.needs)):
        return key, None
    return key, spec


def keep_spec(key: tuple[Any, ...] | None, name: Any, atype: int) -> AttrSpec:
    """Make the :class:`AttrSpec` of an attribute the caller has checked, and keep it."""
    doc = _bindings.ATTRIBUTES.get(int(name))
    spec = AttrSpec(name, atype, None if doc is None else doc.count)
    if key is not None:
        _store(_SPECS, key, spec)
    return spec


def descriptor_needs(kind: Any) -> tuple[Any, tuple[int, int, int] | None] | None:
    """``(descriptor type, newest @since)`` kept for the spelling ``kind``, or None."""
    try:
        entry = _KINDS.get((type(kind), kind))
    except TypeError:  # unhashable: the full check says what is wrong with it
        return None
    if entry is None or (entry[1] is not None and LIB.lacks(entry[1])):
        return None
    return entry


def keep_descriptor_type(kind: Any, dtype: Any) -> None:
    """Keep the descriptor type that the spelling ``kind`` was checked to name."""
    try:
        _store(_KINDS, (type(kind), kind), (dtype, _needs(DescType(int(dtype)))))
    except TypeError:
        pass


#: A TENSOR's attributes whose product cuDNN divides by (see vectorized_tensor_attrs): their
#: keys, and the attribute names its error reports.
_TENSOR = int(DescType["TENSOR_DESCRIPTOR"])
_VECTOR_ATTRS = {
    int(AttrName[k]): k
    for k in ("TENSOR_DIMENSIONS", "TENSOR_VECTOR_COUNT", "TENSOR_VECTORIZED_DIMENSION")
    if k in AttrName.__members__
}


def vectorized_tensor_attrs(
    dtype: Any, key: int, arr: Any, count: int, before: dict[int, tuple[int, ...]] | None
) -> dict[int, tuple[int, ...]] | None:
    """A TENSOR's dims, vector count and vectorized dimension as they will be once ``key`` is set
    to ``arr[:count]`` (``before``: as set so far), or None for another attribute or descriptor.

    Refuses (naming whichever of the three is set last) a TENSOR vectorized along a dimension it
    does not have, which cuDNN 9.28 finalizes, and one whose vectorized extent, its dims' extent
    along the vectorized dimension times its vector count, exceeds int64: cuDNN multiplies them
    unchecked and divides by the product, and one that wraps to 0 crashes the process (SIGFPE,
    cuDNN 9.28: a reduction's output ``[2**62, 1, 1]`` by 4 along dim 0)."""
    if dtype != _TENSOR or key not in _VECTOR_ATTRS:
        return None
    attrs = dict(before or {})
    attrs[key] = tuple([int(arr[i]) for i in range(count)])
    dims = attrs.get(int(AttrName.TENSOR_DIMENSIONS), ())
    vector = attrs.get(int(AttrName.TENSOR_VECTOR_COUNT), (1,))
    vdim = attrs.get(int(AttrName.TENSOR_VECTORIZED_DIMENSION), (-1,))
    if len(vdim) == 1 and dims and (rule := vectorized_dim_rule(vdim[0], len(dims))):
        raise ValueError(
            f"CUDNN_ATTR_{_VECTOR_ATTRS[key]}: a TENSOR's vectorized dimension {rule}, got "
            f"{vdim[0]} (cuDNN 9.28 finalizes one the tensor does not have)"
        )
    if len(vector) == 1 and len(vdim) == 1:
        extent = vectorized_extent(dims, vector[0], vdim[0])
        if extent > INT64_MAX:
            raise ValueError(
                f"CUDNN_ATTR_{_VECTOR_ATTRS[key]}: a TENSOR's extent along its vectorized "
                f"dimension {vdim[0]} ({dims[vdim[0]]}) times its vector count "
                f"({vector[0]}) must be at most {INT64_MAX}, got {extent}: cuDNN multiplies "
                "them in 64 bits unchecked and divides by the product (one that wraps to 0 "
                "crashes the process, SIGFPE)"
            )
    return attrs
