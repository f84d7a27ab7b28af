"""Python values to and from the ``void*`` arrays of ``cudnnBackend{Set,Get}Attribute``.

The element type of every attribute comes from the table the bindings generator extracts from
``cudnn_graph.h`` (``_bindings.ATTRIBUTES``) and the ctypes type of each attribute type
(``_bindings.ATTRIBUTE_TYPE_CTYPES``). Values are checked before C sees them: a wrong one is a
``TypeError`` or ``ValueError`` naming the attribute and the rule, and an enum value newer than the
loaded cuDNN is an ``UnsupportedByLibraryError``.
"""

from __future__ import annotations

import ctypes
import enum
import functools
import numbers
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from _nvbind.suggest import did_you_mean

from . import _bindings
from ._attrnames import (
    _BOOL,
    _CHAR,
    _DESCRIPTOR,
    _FRACTION,
    _INT_TYPES,
    _POINTER_TYPES,
    _REAL_TYPES,
    ENUM_OF_TYPE,
    AttrName,
    AttrType,
    DescType,
    _attr_text,
    attribute_type_name,
    descriptor_type_name,
)
from ._versions import check_enum
from .handle import Handle

# Descriptor-valued attributes that are read back into descriptors the caller must create first
# (cuDNN fills in descriptors the caller creates: ENGINEHEUR_RESULTS needs ENGINECFGs, ...).
_GET_DESCRIPTOR_TYPES: dict[str, str] = {
    "ENGINEHEUR_RESULTS": "ENGINECFG_DESCRIPTOR",
    "ENGINECFG_ENGINE": "ENGINE_DESCRIPTOR",
    "ENGINECFG_KNOB_CHOICES": "KNOB_CHOICE_DESCRIPTOR",
    "ENGINECFG_INTERMEDIATE_INFO": "INTERMEDIATE_INFO_DESCRIPTOR",
    "ENGINE_KNOB_INFO": "KNOB_INFO_DESCRIPTOR",
    "ENGINE_LAYOUT_INFO": "LAYOUT_INFO_DESCRIPTOR",
    "ENGINE_OPERATION_GRAPH": "OPERATIONGRAPH_DESCRIPTOR",
    "EXECUTION_PLAN_ENGINE_CONFIG": "ENGINECFG_DESCRIPTOR",
}

# Attributes the header documents as "1 element" that in fact hold several.
_MANY_DESPITE_DOCS = {"ENGINE_KNOB_INFO"}

# The kind of descriptor a descriptor-valued attribute holds. cuDNN does not always check it, and
# a wrong kind crashes the process (cuDNN 9.28, no GPU): setting ENGINEHEUR_OPERATION_GRAPH,
# OPERATIONGRAPH_OPS, ENGINECFG_ENGINE or EXECUTION_PLAN_DEVICEPROP to a TENSOR segfaults, and so
# does reading ENGINEHEUR_OPERATION_GRAPH into anything but an OPERATIONGRAPH. So the kind is
# checked in Python. From the header's "1 element of CUDNN_BACKEND_X_DESCRIPTOR" notes, corrected
# where they are wrong (OPERATION_REDUCTION_DESC holds a REDUCTION, not a TENSOR); attributes
# of operations and tensors that are not listed hold TENSORs; None means not known here.
_ANY_OPERATION = "OPERATION_*"
_VALUE_KINDS: dict[str, str | None] = {
    "ENGINEHEUR_OPERATION_GRAPH": "OPERATIONGRAPH_DESCRIPTOR",
    "ENGINEHEUR_RESULTS": "ENGINECFG_DESCRIPTOR",
    "ENGINEHEUR_DEVICEPROP": "DEVICEPROP_DESCRIPTOR",
    "ENGINECFG_ENGINE": "ENGINE_DESCRIPTOR",
    "ENGINECFG_INTERMEDIATE_INFO": "INTERMEDIATE_INFO_DESCRIPTOR",
    "ENGINECFG_KNOB_CHOICES": "KNOB_CHOICE_DESCRIPTOR",
    "ENGINE_OPERATION_GRAPH": "OPERATIONGRAPH_DESCRIPTOR",
    "ENGINE_KNOB_INFO": "KNOB_INFO_DESCRIPTOR",
    "ENGINE_LAYOUT_INFO": "LAYOUT_INFO_DESCRIPTOR",
    "ENGINE_DEVICEPROP": "DEVICEPROP_DESCRIPTOR",
    "EXECUTION_PLAN_ENGINE_CONFIG": "ENGINECFG_DESCRIPTOR",
    "EXECUTION_PLAN_KERNEL_CACHE": "KERNEL_CACHE_DESCRIPTOR",
    "EXECUTION_PLAN_DEVICEPROP": "DEVICEPROP_DESCRIPTOR",
    "KERNEL_CACHE_OPERATION_GRAPH": "OPERATIONGRAPH_DESCRIPTOR",
    "KERNEL_CACHE_IS_ENGINECFG_KERNEL_CACHED": "ENGINECFG_DESCRIPTOR",
    "OPERATIONGRAPH_OPS": _ANY_OPERATION,
    "OPERATION_CONVOLUTION_FORWARD_CONV_DESC": "CONVOLUTION_DESCRIPTOR",
    "OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC": "CONVOLUTION_DESCRIPTOR",
    "OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC": "CONVOLUTION_DESCRIPTOR",
    "OPERATION_POINTWISE_PW_DESCRIPTOR": "POINTWISE_DESCRIPTOR",
    "OPERATION_MATMUL_DESC": "MATMUL_DESCRIPTOR",
    "OPERATION_REDUCTION_DESC": "REDUCTION_DESCRIPTOR",
    "OPERATION_RESAMPLE_FWD_DESC": "RESAMPLE_DESCRIPTOR",
    "OPERATION_RESAMPLE_BWD_DESC": "RESAMPLE_DESCRIPTOR",
    "OPERATION_RNG_DESC": "RNG_DESCRIPTOR",
    "OPERATION_SDPA_FWD_SOFTMAX_DESC": "OPERATION_SOFTMAX_DESCRIPTOR",
    "OPERATION_REDUCTION_SUBGRAPH": None,
    "OPERATION_SDPA_FWD_SUBGRAPH": None,
    "OPERATION_SDPA_BWD_SUBGRAPH": None,
}


@functools.cache  # a function of the attribute alone; OPERATION_* walks every descriptor type
def _value_kinds(name: Any) -> frozenset[int] | None:
    """The descriptor types a descriptor-valued attribute accepts, or None when not known."""
    key = name.name
    if key in _VALUE_KINDS:
        kind = _VALUE_KINDS[key]
        if kind == _ANY_OPERATION:
            return frozenset(
                int(m)
                for m in DescType
                if m.name.startswith("OPERATION_") and m.name != "OPERATIONGRAPH_DESCRIPTOR"
            )
        if kind is None or kind not in DescType.__members__:
            return None
        return frozenset({int(DescType[kind])})
    if key.startswith(("OPERATION_", "TENSOR_")) and not key.startswith("OPERATIONGRAPH_"):
        return frozenset({int(DescType.TENSOR_DESCRIPTOR)})
    return None


_OPS_ATTR = int(AttrName.OPERATIONGRAPH_OPS)
_DESC_KINDS = frozenset(int(m) for m in DescType)
_CONVOLUTION_OPS = frozenset(
    {
        "OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR",
        "OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR",
        "OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR",
    }
)

# ctypes converts out-of-range Python ints by silently keeping the low bits (2**64 + 4 becomes 4
# in a c_int64), so every integer is range-checked before it is stored.
_INT64_RANGE = (-(2**63), 2**63 - 1)
_INT_RANGES: dict[int, tuple[int, int]] = {
    int(AttrType.INT64): _INT64_RANGE,
    int(AttrType.INT32): (-(2**31), 2**31 - 1),
}
_POINTER_MAX = 2**64 - 1
_DIM_MAX = int(getattr(_bindings, "CUDNN_DIM_MAX", 8))
_HANDLE = int(AttrType.HANDLE)

# The most elements one get() may ask for: a typo such as count=10**12 must be an error, not an
# attempt to allocate terabytes (or to create a million descriptors).
_MAX_GET_COUNT = 1 << 20

_MAX_GET_RETRIES = 4
_SIZE_INSUFFICIENT = int(_bindings.cudnnStatus_t.BAD_PARAM_SIZE_INSUFFICIENT)


# --------------------------------------------------------------------------------------------------
# Python value -> ctypes array
# --------------------------------------------------------------------------------------------------

_WHAT = {
    "int": "a sequence of ints",
    "real": "a sequence of floats",
    "bool": "bools",
    "ptr": "pointers as ints",
    "desc": "finalized BackendDescriptor objects",
    "char": "a str or bytes",
    "fraction": "fractions (numerator, denominator)",
}


def _kind_of(attr_type: int) -> str:
    if attr_type in _INT_TYPES:
        return "int"
    if attr_type in _REAL_TYPES:
        return "real"
    if attr_type == _BOOL:
        return "bool"
    if attr_type in _POINTER_TYPES:
        return "ptr"
    if attr_type == _DESCRIPTOR:
        return "desc"
    if attr_type == _CHAR:
        return "char"
    if attr_type == _FRACTION:
        return "fraction"
    if attr_type in ENUM_OF_TYPE:
        return "enum"
    return "int"


def _type_error(attr: Any, attr_type: int, value: Any, detail: str = "") -> TypeError:
    kind = _kind_of(attr_type)
    if kind == "enum":
        what = f"{ENUM_OF_TYPE[attr_type].__name__} members, ints or member names"
    else:
        what = _WHAT[kind]
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    extra = f" ({detail})" if detail else ""
    return TypeError(
        f"{_attr_text(attr)} takes {attribute_type_name(attr_type)} values ({what}), "
        f"got {text}{extra}"
    )


def _as_sequence(value: Any) -> list[Any]:
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError("a string is not a sequence of values here")
    if isinstance(value, Sequence) or hasattr(value, "__array__") or hasattr(value, "tolist"):
        seq = value.tolist() if hasattr(value, "tolist") else list(value)
        return seq if isinstance(seq, list) else [seq]
    if isinstance(value, Iterable):
        return list(value)
    return [value]


def _enum_value(enum_cls: type[enum.IntEnum], v: Any) -> int:
    if isinstance(v, enum.IntEnum):
        if not isinstance(v, enum_cls):
            raise TypeError(f"{v!r} is a {type(v).__name__}, not a {enum_cls.__name__}")
        return int(v)
    if isinstance(v, str):
        key = v.strip().upper()
        members = _member_spellings(enum_cls)
        prefixes = _enum_prefixes(enum_cls)
        spelled = (key, "CUDNN_" + key)  # the C name, also without its "CUDNN_"
        for candidate in (
            key,
            *(k[len(p) :] for k in spelled for p in prefixes if k.startswith(p)),
        ):
            if candidate in members:
                return int(members[candidate])
        hint = did_you_mean(key, enum_cls.__members__)
        for p in _enum_prefixes(enum_cls):  # also the spelling with the C prefix
            hint = hint or did_you_mean(key.removeprefix(p), enum_cls.__members__)
        raise TypeError(f"{v!r} is not a {enum_cls.__name__} member{hint}")
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        try:
            return int(enum_cls(int(v)))
        except ValueError:
            raise TypeError(f"{int(v)} is not a {enum_cls.__name__} value") from None
    raise TypeError(f"{v!r} is not a {enum_cls.__name__}")


@functools.cache
def _member_spellings(enum_cls: type[enum.IntEnum]) -> dict[str, enum.IntEnum]:
    """Upper-cased member names (``"int8x32"`` is INT8x32), and, where every member but a count
    starts with the same word, the names without it too (cudnnBackendHeurMode_t's MODE_A is
    also ``"A"``, as cudnn-frontend spells it)."""
    spellings = {name.upper(): member for name, member in enum_cls.__members__.items()}
    words = {name.split("_", 1)[0] for name in spellings if not name.endswith("_COUNT")}
    if len(words) == 1 and all("_" in name for name in spellings):
        word = words.pop() + "_"
        spellings |= {
            name.removeprefix(word): member for name, member in list(spellings.items())
            if name.startswith(word) and name.removeprefix(word) not in spellings
        }  # fmt: skip
    return spellings


@functools.cache  # it walks the bindings' ~10,000 names: 18 µs a value before it was kept
def _enum_prefixes(enum_cls: type[enum.IntEnum]) -> tuple[str, ...]:
    # The C spelling of a member is the module-level constant whose value is that member; take the
    # prefix from any one of them (e.g. "CUDNN_POINTWISE_" for cudnnPointwiseMode_t).
    member = next(iter(enum_cls))
    for name, value in vars(_bindings).items():
        if value is member and name.endswith(member.name) and name != member.name:
            return (name[: -len(member.name)],)
    return ()


def _encode(
    attr: Any, attr_type: int, value: Any, descriptor_class: type[Any]
) -> tuple[Any, int, list[Any]]:
    """Convert ``value`` to ``(ctypes array, element count, descriptors to keep alive)``.

    ``descriptor_class`` is :class:`~pycudnn.backend.BackendDescriptor` (passed in, so that this
    module does not import the one that uses it). Enum values newer than the loaded cuDNN raise
    ``UnsupportedByLibraryError``.
    """
    ctype: Any = _bindings.ATTRIBUTE_TYPE_CTYPES.get(attr_type)
    if ctype is None:
        raise ValueError(f"{_attr_text(attr)}: attribute type {attr_type} has no ctypes mapping")
    kind = _kind_of(attr_type)
    if kind == "char":
        if isinstance(value, str):
            data = value.encode("utf-8")
        elif isinstance(value, (bytes, bytearray)):
            data = bytes(value)
        else:
            raise _type_error(attr, attr_type, value)
        # cuDNN reads `count` characters; the buffer carries a NUL as well for C string readers.
        return ctypes.create_string_buffer(data, len(data) + 1), len(data), []
    if kind == "desc":
        descs: list[Any] | None = [value] if isinstance(value, descriptor_class) else None
        if descs is None:
            try:
                descs = _as_sequence(value)
            except TypeError:
                raise _type_error(attr, attr_type, value) from None
        kinds = _value_kinds(attr)
        for i, d in enumerate(descs):
            if not isinstance(d, descriptor_class):
                raise _type_error(attr, attr_type, value, f"element {i} is {type(d).__name__}")
            d._check_open()
            if not d.is_finalized:
                raise ValueError(
                    f"{_attr_text(attr)}: {d.type_name} (element {i}) is not finalized; cuDNN "
                    "only accepts finalized descriptors as attribute values"
                )
            if kinds is not None and int(d.descriptor_type) not in kinds:
                # cuDNN does not check this for every attribute; a wrong kind crashes it.
                expected = " or ".join(sorted(descriptor_type_name(k) for k in kinds))
                if len(kinds) > 3:
                    expected = "CUDNN_BACKEND_OPERATION_* descriptors"
                raise TypeError(
                    f"{_attr_text(attr)} takes {expected}, but element {i} is a {d.type_name}"
                )
        arr = (ctypes.c_void_p * len(descs))(*[d.ptr for d in descs])
        return arr, len(descs), list(descs)
    if kind == "fraction":
        pairs = [value] if isinstance(value, tuple) or is_fraction(value) else None
        if pairs is None:
            try:
                pairs = _as_sequence(value)
            except TypeError:
                raise _type_error(attr, attr_type, value) from None
        arr = (ctype * len(pairs))()
        for i, f in enumerate(pairs):
            if is_fraction(f):
                num, den = f.numerator, f.denominator
            elif (
                isinstance(f, tuple)
                and len(f) == 2
                and all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in f)
            ):
                num, den = int(f[0]), int(f[1])
            else:
                raise _type_error(attr, attr_type, value)
            lo, hi = _INT64_RANGE
            if not (lo <= num <= hi and lo <= den <= hi):
                raise _range_error(attr, attr_type, f"{num}/{den}", "numerator and denominator")
            arr[i].numerator, arr[i].denominator = num, den
        return arr, len(pairs), []
    if attr_type == _HANDLE:
        return _encode_handles(attr, attr_type, value)
    try:
        items = [value] if kind == "enum" and isinstance(value, str) else _as_sequence(value)
    except TypeError:
        raise _type_error(attr, attr_type, value) from None
    out: list[Any] = []
    for v in items:
        if kind == "int":
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise _type_error(attr, attr_type, value)
            lo, hi = _INT_RANGES.get(attr_type, _INT64_RANGE)
            if not lo <= int(v) <= hi:
                raise _range_error(attr, attr_type, int(v), f"values in [{lo}, {hi}]")
            if attr.name.endswith("_AXIS") and not -1 <= int(v) < _DIM_MAX:
                # cuDNN indexes a tensor's dims with it unchecked: OPERATION_CONCAT_AXIS = 2**31
                # segfaulted finalizing. -1 is the documented "not set" (POINTWISE_AXIS).
                raise ValueError(
                    f"{_attr_text(attr)} is a dimension index: it must be in [-1, {_DIM_MAX - 1}], "
                    f"got {int(v)}"
                )
            out.append(int(v))
        elif kind == "real":
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise _type_error(attr, attr_type, value)
            out.append(float(v))
        elif kind == "bool":
            if not isinstance(v, bool) and type(v).__name__ != "bool_":  # also NumPy's bool_
                raise _type_error(attr, attr_type, value)
            out.append(bool(v))
        elif kind == "ptr":
            if v is None:
                out.append(None)
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < 0:
                raise _type_error(attr, attr_type, value)
            if int(v) > _POINTER_MAX:
                raise _range_error(attr, attr_type, int(v), "64-bit addresses")
            out.append(int(v) or None)
        else:  # enum
            try:
                number = _enum_value(ENUM_OF_TYPE[attr_type], v)
            except TypeError as exc:
                raise _type_error(attr, attr_type, value, str(exc)) from None
            check_enum(ENUM_OF_TYPE[attr_type], number, f"a value of {_attr_text(attr)}")
            out.append(number)
    arr = (ctype * len(out))(*out)
    return arr, len(out), []


def _range_error(attr: Any, attr_type: int, value: Any, rule: str) -> ValueError:
    return ValueError(
        f"{_attr_text(attr)} takes {attribute_type_name(attr_type)} {rule}; {value} is out of "
        "range (ctypes would silently keep only its low bits)"
    )


def _encode_handles(attr: Any, attr_type: int, value: Any) -> tuple[Any, int, list[Any]]:
    # cuDNN dereferences a HANDLE attribute (OPERATIONGRAPH_HANDLE, DEVICEPROP_HANDLE, ...): a raw
    # int that is not a live cudnnHandle_t crashes the process, so only Handle objects are taken.

    # NULL is refused too: EXECUTION_PLAN_HANDLE accepts it, and finalizing a deserialized plan
    # with a NULL handle (and no DEVICEPROP) segfaults.
    items = [value] if isinstance(value, Handle) else None
    if items is None:
        try:
            items = _as_sequence(value)
        except TypeError:
            items = [value]
    for v in items:
        if not isinstance(v, Handle):
            raise TypeError(
                f"{_attr_text(attr)} takes {attribute_type_name(attr_type)} values (pycudnn.Handle "
                f"objects), got {type(v).__name__}: cuDNN dereferences it, so raw handle "
                "pointers (and None) are not accepted"
            )
    ptrs = [v.ptr for v in items]  # ClosedError for a closed handle
    arr = (ctypes.c_void_p * len(ptrs))(*ptrs)
    return arr, len(ptrs), list(items)


def is_fraction(value: Any) -> bool:
    """Whether ``value`` is a ``fractions.Fraction``. The module (and ``decimal`` with it, about
    2 ms) is imported where a FRACTION value is made, not with this one: a value can be a
    Fraction only once something has imported it."""
    module = sys.modules.get("fractions")
    return module is not None and isinstance(value, module.Fraction)


def _decode(attr_type: int, arr: Any, n: int) -> list[Any]:
    kind = _kind_of(attr_type)
    if kind == "bool":
        return [bool(arr[i]) for i in range(n)]
    if kind == "real":
        return [float(arr[i]) for i in range(n)]
    if kind == "ptr":
        return [int(arr[i] or 0) for i in range(n)]
    if kind == "fraction":
        from fractions import Fraction

        return [Fraction(arr[i].numerator, arr[i].denominator or 1) for i in range(n)]
    if kind == "enum":
        enum_cls = ENUM_OF_TYPE[attr_type]
        out: list[Any] = []
        for i in range(n):
            try:
                out.append(enum_cls(arr[i]))
            except ValueError:  # a value newer than the headers: keep the number
                out.append(int(arr[i]))
        return out
    return [int(arr[i]) for i in range(n)]
