"""cuDNN backend descriptors: one typed Python object per ``cudnnBackendDescriptor_t``.

The backend (graph) API is untyped in C: ``cudnnBackendSetAttribute`` and
``cudnnBackendGetAttribute`` take an attribute name, an attribute *type*, an element count and a
``void*``. :class:`BackendDescriptor` makes it typed again from the table that the bindings
generator extracts from ``cudnn_graph.h`` (``_bindings.ATTRIBUTES``: element type and documented
count of every attribute) and the ctypes type of each attribute type
(``_bindings.ATTRIBUTE_TYPE_CTYPES``):

>>> t = BackendDescriptor("TENSOR")
>>> t.set("TENSOR_DIMENSIONS", [1, 32, 16, 16])
>>> t.set("TENSOR_DATA_TYPE", "HALF")
>>> ...
>>> t.finalize()
>>> t.get("TENSOR_DIMENSIONS")
[1, 32, 16, 16]

Python values are checked before C sees them; a wrong one is a ``TypeError`` that names the
attribute and the type it takes. Where the header documents no type, ``attr_type=`` must be given.
A descriptor keeps every descriptor set on it alive (children keep parents alive), refuses changes
once finalized, and refuses everything once closed.
"""

from __future__ import annotations

import ctypes
import enum
import json
import numbers
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from . import _bindings
from ._lib import LIB, last_error_string
from ._shared.resource import CResource
from .deviceprops import _MAX_NAME_BYTES
from .errors import CudnnError, error_from_status

__all__ = [
    "BackendDescriptor",
    "attribute_name",
    "attribute_type_name",
    "check_plan_json",
    "descriptor_type",
    "descriptor_type_name",
]

# The generated enums (typed Any here: the type checker does not read the generated module).
AttrName: Any = _bindings.cudnnBackendAttributeName_t
AttrType: Any = _bindings.cudnnBackendAttributeType_t
DescType: Any = _bindings.cudnnBackendDescriptorType_t

# Attribute type -> the C enum its values belong to (the comment of each CUDNN_TYPE_* enumerator in
# cudnn_graph.h names it). Looked up by name so that enums missing from older headers are skipped.
_ENUM_OF_TYPE_NAMES = {
    "DATA_TYPE": "cudnnDataType_t",
    "CONVOLUTION_MODE": "cudnnConvolutionMode_t",
    "HEUR_MODE": "cudnnBackendHeurMode_t",
    "KNOB_TYPE": "cudnnBackendKnobType_t",
    "NAN_PROPOGATION": "cudnnNanPropagation_t",
    "NUMERICAL_NOTE": "cudnnBackendNumericalNote_t",
    "LAYOUT_TYPE": "cudnnBackendLayoutType_t",
    "ATTRIB_NAME": "cudnnBackendAttributeName_t",
    "POINTWISE_MODE": "cudnnPointwiseMode_t",
    "GENSTATS_MODE": "cudnnGenStatsMode_t",
    "BN_FINALIZE_STATS_MODE": "cudnnBnFinalizeStatsMode_t",
    "REDUCTION_OPERATOR_TYPE": "cudnnReduceTensorOp_t",
    "BEHAVIOR_NOTE": "cudnnBackendBehaviorNote_t",
    "TENSOR_REORDERING_MODE": "cudnnBackendTensorReordering_t",
    "RESAMPLE_MODE": "cudnnResampleMode_t",
    "PADDING_MODE": "cudnnPaddingMode_t",
    "SIGNAL_MODE": "cudnnSignalMode_t",
    "NORM_MODE": "cudnnBackendNormMode_t",
    "NORM_FWD_PHASE": "cudnnBackendNormFwdPhase_t",
    "RNG_DISTRIBUTION": "cudnnRngDistribution_t",
    "MOE_GROUPED_MATMUL_MODE": "cudnnMoeGroupedMatmulMode_t",
    "RESHAPE_MODE": "cudnnBackendReshapeMode_t",
    "OPERATIONGRAPH_MODE": "cudnnBackendOperationGraphMode_t",
    "CUDA_GRAPH_RETENTION": "cudnnCudaGraphRetention_t",
}
ENUM_OF_TYPE: dict[int, type[enum.IntEnum]] = {
    int(AttrType[t]): getattr(_bindings, e)
    for t, e in _ENUM_OF_TYPE_NAMES.items()
    if t in AttrType.__members__ and hasattr(_bindings, e)
}

_INT_TYPES = {int(AttrType.INT64), int(AttrType.INT32)}
_REAL_TYPES = {int(AttrType.FLOAT), int(AttrType.DOUBLE)}
_POINTER_TYPES = {int(AttrType.VOID_PTR), int(AttrType.HANDLE)}
_BOOL = int(AttrType.BOOLEAN)
_CHAR = int(AttrType.CHAR)
_FRACTION = int(AttrType.FRACTION)
_DESCRIPTOR = int(AttrType.BACKEND_DESCRIPTOR)

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
_SIZE_INSUFFICIENT = 2006


# --------------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------------


def _strip(text: str, prefixes: Iterable[str]) -> str:
    key = text.strip().upper()
    for p in prefixes:
        if key.startswith(p):
            return key[len(p) :]
    return key


def attribute_name(attr: Any) -> Any:
    """Normalise an attribute given as an enum member, an int, or a name with or without
    ``CUDNN_ATTR_`` (case-insensitive)."""
    if isinstance(attr, AttrName):
        return attr
    if isinstance(attr, str):
        key = _strip(attr, ("CUDNN_ATTR_",))
        try:
            return AttrName[key]
        except KeyError:
            raise ValueError(f"unknown backend attribute {attr!r}") from None
    if isinstance(attr, int) and not isinstance(attr, bool):
        try:
            return AttrName(attr)
        except ValueError:
            raise ValueError(
                f"{attr} is not a backend attribute (cudnnBackendAttributeName_t)"
            ) from None
    raise TypeError(
        f"attribute must be a cudnnBackendAttributeName_t, an int or a name, not {attr!r}"
    )


def attribute_type(attr_type: Any) -> Any:
    """Normalise an attribute type (enum member, int, or name with or without ``CUDNN_TYPE_``)."""
    if isinstance(attr_type, AttrType):
        return attr_type
    if isinstance(attr_type, str):
        key = _strip(attr_type, ("CUDNN_TYPE_",))
        try:
            return AttrType[key]
        except KeyError:
            raise ValueError(f"unknown backend attribute type {attr_type!r}") from None
    if isinstance(attr_type, int) and not isinstance(attr_type, bool):
        try:
            return AttrType(attr_type)
        except ValueError:
            raise ValueError(f"{attr_type} is not a cudnnBackendAttributeType_t value") from None
    raise TypeError(
        f"attr_type must be a cudnnBackendAttributeType_t, an int or a name, not {attr_type!r}"
    )


def descriptor_type(kind: Any) -> Any:
    """Normalise a descriptor type: an enum member, an int, or a name such as ``"TENSOR"``,
    ``"TENSOR_DESCRIPTOR"`` or ``"CUDNN_BACKEND_TENSOR_DESCRIPTOR"`` (case-insensitive)."""
    if isinstance(kind, DescType):
        return kind
    if isinstance(kind, str):
        key = _strip(kind, ("CUDNN_BACKEND_",))
        for candidate in (key, key + "_DESCRIPTOR"):
            if candidate in DescType.__members__:
                return DescType[candidate]
        raise ValueError(f"unknown backend descriptor type {kind!r}")
    if isinstance(kind, int) and not isinstance(kind, bool):
        try:
            return DescType(kind)
        except ValueError:
            raise ValueError(f"{kind} is not a cudnnBackendDescriptorType_t value") from None
    raise TypeError(
        f"descriptor type must be a cudnnBackendDescriptorType_t, an int or a name, not {kind!r}"
    )


def attribute_type_name(attr_type: int) -> str:
    try:
        return "CUDNN_TYPE_" + AttrType(attr_type).name
    except ValueError:
        return f"attribute type {attr_type}"


def descriptor_type_name(kind: int) -> str:
    try:
        return "CUDNN_BACKEND_" + DescType(kind).name
    except ValueError:
        return f"descriptor type {kind}"


def _attr_text(attr: Any) -> str:
    return "CUDNN_ATTR_" + attr.name


def _spec(attr: Any) -> Any:
    return _bindings.ATTRIBUTES.get(int(attr))


def _documented_type(attr: Any) -> int | None:
    spec = _spec(attr)
    return None if spec is None or spec.attr_type is None else int(spec.attr_type)


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
        for candidate in (
            key,
            *(key[len(p) :] for p in _enum_prefixes(enum_cls) if key.startswith(p)),
        ):
            if candidate in enum_cls.__members__:
                return int(enum_cls[candidate])
        raise TypeError(f"{v!r} is not a {enum_cls.__name__} member")
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        try:
            return int(enum_cls(int(v)))
        except ValueError:
            raise TypeError(f"{int(v)} is not a {enum_cls.__name__} value") from None
    raise TypeError(f"{v!r} is not a {enum_cls.__name__}")


def _enum_prefixes(enum_cls: type[enum.IntEnum]) -> tuple[str, ...]:
    # The C spelling of a member is the module-level constant whose value is that member; take the
    # prefix from any one of them (e.g. "CUDNN_POINTWISE_" for cudnnPointwiseMode_t).
    member = next(iter(enum_cls))
    for name, value in vars(_bindings).items():
        if value is member and name.endswith(member.name) and name != member.name:
            return (name[: -len(member.name)],)
    return ()


def _encode(attr: Any, attr_type: int, value: Any) -> tuple[Any, int, list[Any]]:
    """Convert ``value`` to ``(ctypes array, element count, descriptors to keep alive)``."""
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
        descs: list[Any] | None = [value] if isinstance(value, BackendDescriptor) else None
        if descs is None:
            try:
                descs = _as_sequence(value)
            except TypeError:
                raise _type_error(attr, attr_type, value) from None
        kinds = _value_kinds(attr)
        for i, d in enumerate(descs):
            if not isinstance(d, BackendDescriptor):
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
        pairs = [value] if isinstance(value, (Fraction, tuple)) else None
        if pairs is None:
            try:
                pairs = _as_sequence(value)
            except TypeError:
                raise _type_error(attr, attr_type, value) from None
        arr = (ctype * len(pairs))()
        for i, f in enumerate(pairs):
            if isinstance(f, Fraction):
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
                out.append(_enum_value(ENUM_OF_TYPE[attr_type], v))
            except TypeError as exc:
                raise _type_error(attr, attr_type, value, str(exc)) from None
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
    from .handle import Handle

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


def _decode(attr_type: int, arr: Any, n: int) -> list[Any]:
    kind = _kind_of(attr_type)
    if kind == "bool":
        return [bool(arr[i]) for i in range(n)]
    if kind == "real":
        return [float(arr[i]) for i in range(n)]
    if kind == "ptr":
        return [int(arr[i] or 0) for i in range(n)]
    if kind == "fraction":
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


def _raise_for(status: int, function: str, context: str) -> None:
    if status:
        detail = last_error_string()
        message = f"{context}: {detail}" if detail else context
        raise error_from_status(status, function, message)


# Node keys that name tensors (the operation's roles as cuDNN writes them in plan JSON).
_TENSOR_ROLE_KEYS = frozenset(
    {"X", "Y", "W", "B", "T", "A", "C", "DX", "DY", "DW", "dX", "dY", "dW", "matA", "matB", "matC"}
)


def _is_uid_text(value: Any) -> bool:
    if not isinstance(value, str) or not value.isascii():
        return False
    digits = value[1:] if value.startswith("-") else value
    return digits.isdigit() and -(2**63) <= int(value) < 2**63


def check_plan_json(data: Mapping[str, Any]) -> None:
    """Refuse plan JSON that cuDNN crashes on instead of rejecting (observed with cuDNN 9.28).

    cuDNN parses tensor names and the tensor references of nodes with ``std::stoll`` and lets its
    exception escape (the process aborts), walks ``tensors``/``nodes`` without checking they are
    arrays (segfault), divides by tensor dims that are 0 or not integers (SIGFPE), and copies
    ``GPUProfile.deviceName`` into a 256-byte buffer unchecked (heap corruption). Everything else
    malformed it reports as an error, which is raised as a CudnnError.
    """

    def bad(where: str, rule: str, got: Any) -> ValueError:
        text = repr(got)
        text = text if len(text) <= 60 else text[:57] + "..."
        return ValueError(f"not a valid cuDNN execution-plan JSON: {where} {rule}, got {text}")

    profile = data.get("GPUProfile")
    if isinstance(profile, dict):
        _check_device_name(
            profile.get("deviceName"),
            "not a valid cuDNN execution-plan JSON: GPUProfile.deviceName",
        )
    # Missing members are reported by cuDNN itself; present ones of the wrong type are not.
    og = data.get("operationGraph", {})
    if not isinstance(og, dict):
        raise bad("'operationGraph'", "must be an object", og)
    for key in ("tensors", "nodes"):
        if not isinstance(og.get(key, []), list):
            raise bad(f"operationGraph.{key}", "must be an array", og.get(key))
    for i, t in enumerate(og.get("tensors", [])):
        where = f"operationGraph.tensors[{i}]"
        if not isinstance(t, dict):
            raise bad(where, "must be an object", t)
        if not _is_uid_text(t.get("name")):
            raise bad(
                f"{where}.name", "must be a unique id written as a decimal int64", t.get("name")
            )
        for key, low in (("dim", 1), ("stride", -(2**63))):
            values = t.get(key)
            if values is None:
                continue
            if not isinstance(values, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) and low <= v < 2**63 for v in values
            ):
                rule = "must be an array of positive int64s" if low == 1 else "must be int64s"
                raise bad(f"{where}.{key}", rule, values)
    for i, node in enumerate(og.get("nodes", [])):
        where = f"operationGraph.nodes[{i}]"
        if not isinstance(node, dict):
            raise bad(where, "must be an object", node)
        for key, value in node.items():
            if not isinstance(value, str):
                continue
            # Tensor references are unique ids; every other string cuDNN writes in a node is an
            # enumerator name (CUDNN_...).
            is_reference = key in _TENSOR_ROLE_KEYS or not value.startswith("CUDNN_")
            if is_reference and not _is_uid_text(value):
                raise bad(f"{where}.{key}", "must name a tensor by its unique id", value)


def _check_device_name(name: Any, where: str) -> None:
    if isinstance(name, str) and len(name.encode("utf-8")) > _MAX_NAME_BYTES:
        raise ValueError(
            f"{where} must be at most {_MAX_NAME_BYTES} bytes (UTF-8), got "
            f"{len(name.encode('utf-8'))}: cuDNN copies it into a 256-byte buffer unchecked"
        )


def _check_json_attribute(name: Any, value: Any) -> None:
    """Refuse the JSON texts that corrupt cuDNN's memory instead of being rejected (see
    :func:`check_plan_json`); unparsable JSON is left to cuDNN, which reports it."""
    if name.name not in ("DEVICEPROP_JSON_REPRESENTATION", "EXECUTION_PLAN_JSON_REPRESENTATION"):
        return
    try:
        data = json.loads(value)
    except (TypeError, ValueError):
        return
    if not isinstance(data, dict):
        return
    if name.name == "DEVICEPROP_JSON_REPRESENTATION":
        _check_device_name(data.get("deviceName"), "device-properties key 'deviceName'")
    else:
        check_plan_json(data)


# --------------------------------------------------------------------------------------------------
# The descriptor
# --------------------------------------------------------------------------------------------------


def _destroy(ptr: int) -> None:
    LIB.function("cudnnBackendDestroyDescriptor")(ptr)


class BackendDescriptor(CResource):
    """One ``cudnnBackendDescriptor_t`` (``cudnnBackendCreateDescriptor``).

    ``kind`` is a descriptor type: ``"TENSOR"``, ``"OPERATION_CONVOLUTION_FORWARD"``,
    ``raw.CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR``, ... ``parents`` are objects this descriptor must
    keep alive (descriptors set as attributes are added automatically).
    """

    _kind = "backend descriptor"

    def __init__(self, kind: Any, *, parents: Iterable[Any] = ()) -> None:
        dtype = descriptor_type(kind)
        out = ctypes.c_void_p()
        status = LIB.function("cudnnBackendCreateDescriptor")(int(dtype), ctypes.byref(out))
        _raise_for(
            status, "cudnnBackendCreateDescriptor", f"creating a {descriptor_type_name(dtype)}"
        )
        # The finalizer holds this list, so every descriptor appended to it outlives this one.
        self._refs: list[Any] = list(parents)
        super().__init__(int(out.value or 0), _destroy, parents=(self._refs,))
        self.descriptor_type: Any = dtype
        self._finalized = False
        # Attributes set through this object (int name -> descriptor types set, or None for a
        # non-descriptor value): what finalize() and get() need to know to keep cuDNN from
        # crashing (see _check_finalizable and _descriptor_kind_to_read).
        self._set_kinds: dict[int, tuple[int, ...] | None] = {}

    # -- state -----------------------------------------------------------------------------
    @property
    def type_name(self) -> str:
        """The C name of this descriptor's type, e.g. ``CUDNN_BACKEND_TENSOR_DESCRIPTOR``."""
        return descriptor_type_name(self.descriptor_type)

    @property
    def is_finalized(self) -> bool:
        return self._finalized

    def keep_alive(self, obj: Any) -> None:
        """Hold a strong reference to ``obj`` for as long as this descriptor exists."""
        self._refs.append(obj)

    def finalize(self) -> None:
        """``cudnnBackendFinalize``: validate and freeze the attributes."""
        self._check_open()
        if self._finalized:
            return
        self._check_finalizable()
        status = LIB.function("cudnnBackendFinalize")(self)
        _raise_for(status, "cudnnBackendFinalize", f"finalizing a {self.type_name}")
        self._finalized = True

    def _has(self, attr_name: str) -> bool:
        member = AttrName.__members__.get(attr_name)
        return member is not None and int(member) in self._set_kinds

    def _check_finalizable(self) -> None:
        """Refuse the finalizations that crash cuDNN instead of failing (observed, cuDNN 9.28):
        an ENGINECFG without its ENGINE, an EXECUTION_PLAN without an ENGINE_CONFIG (even with
        only optional attributes set), a deserialized EXECUTION_PLAN (JSON set) with neither
        DEVICEPROP nor a handle, a handle attribute whose Handle was closed since, and an
        OPERATIONGRAPH mixing matmuls and convolutions (its heuristics crash)."""
        from .handle import Handle

        kind = self.descriptor_type.name
        missing = ""
        if any(isinstance(ref, Handle) and ref.closed for ref in self._refs):
            # set as a HANDLE attribute, then closed: cuDNN would dereference it
            missing = "a pycudnn.Handle set on it has been closed"
        elif kind == "ENGINECFG_DESCRIPTOR" and not self._has("ENGINECFG_ENGINE"):
            missing = "CUDNN_ATTR_ENGINECFG_ENGINE is not set"
        elif kind == "EXECUTION_PLAN_DESCRIPTOR":
            if self._has("EXECUTION_PLAN_JSON_REPRESENTATION"):
                if not (
                    self._has("EXECUTION_PLAN_DEVICEPROP") or self._has("EXECUTION_PLAN_HANDLE")
                ):
                    missing = (
                        "CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION is set but neither "
                        "CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP nor a handle is"
                    )
            elif not self._has("EXECUTION_PLAN_ENGINE_CONFIG"):
                missing = (
                    "neither CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG nor "
                    "CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION is set"
                )
        elif kind == "OPERATIONGRAPH_DESCRIPTOR":
            names = {
                DescType(k).name
                for k in self._set_kinds.get(_OPS_ATTR, None) or ()
                if k in _DESC_KINDS
            }
            if "OPERATION_MATMUL_DESCRIPTOR" in names and names & _CONVOLUTION_OPS:
                # No engine runs such a graph, and heuristics crash on some (cuDNN 9.28).
                raise ValueError(
                    f"cannot finalize this {self.type_name}: it mixes OPERATION_MATMUL with "
                    f"{', '.join(sorted(names & _CONVOLUTION_OPS))}; cuDNN has no engine for "
                    "that and its heuristics crash the process on such graphs"
                )
        if missing:
            raise ValueError(
                f"cannot finalize this {self.type_name}: {missing} (cuDNN crashes the process "
                "finalizing it like this instead of returning an error)"
            )

    # -- set ---------------------------------------------------------------------------------
    def set(self, attr: Any, value: Any, *, attr_type: Any = None) -> None:
        """``cudnnBackendSetAttribute`` with the element type from the header documentation.

        ``value`` is a scalar or a sequence of the attribute's element type: ints, floats, bools,
        enum members (or their names), pointer ints, finalized descriptors, a string (CHAR), or
        ``(numerator, denominator)`` pairs (FRACTION). ``attr_type`` overrides the documented type
        (needed where the header documents none, and for FLOAT-or-DOUBLE attributes).
        """
        self._check_open()
        name = attribute_name(attr)
        if attr_type is None:
            atype = _documented_type(name)
            if atype is None:
                raise TypeError(
                    f"{_attr_text(name)}: cudnn_graph.h documents no attribute type for it, so "
                    "pass attr_type= explicitly (e.g. attr_type='INT64')"
                )
        else:
            atype = int(attribute_type(attr_type))
        self._check_owner(name)
        if self._finalized:
            raise ValueError(
                f"cannot set {_attr_text(name)}: this {self.type_name} is finalized and cuDNN "
                "freezes attributes at cudnnBackendFinalize"
            )
        arr, count, keep = _encode(name, atype, value)
        if atype == _CHAR:
            _check_json_attribute(name, value)
        status = LIB.function("cudnnBackendSetAttribute")(self, int(name), atype, count, arr)
        _raise_for(
            status,
            "cudnnBackendSetAttribute",
            f"setting {_attr_text(name)} ({attribute_type_name(atype)} x {count}) on a "
            f"{self.type_name}",
        )
        self._refs.extend(keep)
        self._set_kinds[int(name)] = (
            tuple(int(d.descriptor_type) for d in keep) if atype == _DESCRIPTOR else None
        )

    def _check_owner(self, name: Any) -> None:
        spec = _spec(name)
        owner = None if spec is None else spec.descriptor_type
        if owner is not None and int(owner) != int(self.descriptor_type):
            raise ValueError(
                f"{_attr_text(name)} is an attribute of {descriptor_type_name(owner)}, not of "
                f"this {self.type_name}"
            )

    def _check_readable(self, name: Any) -> None:
        self._check_owner(name)
        if not self._finalized:
            raise ValueError(
                f"cannot read {_attr_text(name)}: this {self.type_name} is not finalized "
                "(cudnnBackendGetAttribute reads finalized descriptors; call finalize() first)"
            )

    # -- get ---------------------------------------------------------------------------------
    def _get_raw(self, name: Any, atype: int, requested: int, array: Any) -> int:
        count = ctypes.c_int64(0)
        status = LIB.function("cudnnBackendGetAttribute")(
            self, int(name), atype, requested, ctypes.byref(count), array
        )
        if status == _SIZE_INSUFFICIENT:  # a concurrent change grew it: the caller retries
            last_error_string()
            return -max(int(count.value), requested + 1)
        _raise_for(
            status,
            "cudnnBackendGetAttribute",
            f"reading {_attr_text(name)} ({attribute_type_name(atype)}) from a {self.type_name}",
        )
        return int(count.value)

    def element_count(self, attr: Any, *, attr_type: Any = None) -> int:
        """The number of elements available (the count query: ``requestedElementCount=0``)."""
        self._check_open()
        name = attribute_name(attr)
        atype = self._get_type(name, attr_type)
        self._check_readable(name)
        if atype == _DESCRIPTOR:
            self._descriptor_kind_to_read(name, None)  # a count query can crash as well
        return max(self._get_raw(name, atype, 0, None), 0)

    def _descriptor_kind_to_read(self, name: Any, requested: Any) -> Any:
        """The descriptor type to read a descriptor-valued attribute into, or an error.

        cuDNN writes into descriptors the caller creates, without checking their kind for every
        attribute, and crashes reading some attributes that were never set (TENSOR_RAGGED_OFFSET_DESC
        counts 1 and then segfaults). So reads are allowed for the attributes cuDNN fills itself
        (heuristic results, engine configs, engines, knobs) and for attributes set through this
        object, always into descriptors of the kind the attribute holds.
        """
        known = _GET_DESCRIPTOR_TYPES.get(name.name)
        set_kinds = self._set_kinds.get(int(name))
        if known is not None:
            allowed = {int(DescType[known])}
        elif set_kinds:
            allowed = set(set_kinds)
        else:
            raise ValueError(
                f"cannot read {_attr_text(name)} from this {self.type_name}: it was not set through "
                "this object and is not an attribute cuDNN fills in, so the kind of descriptor it "
                "holds (if any) is unknown here, and cuDNN crashes reading it into the wrong kind "
                "or reading it unset"
            )
        if requested is None:
            if len(allowed) != 1:
                raise ValueError(
                    f"cannot read {_attr_text(name)}: it holds descriptors of several kinds "
                    f"({', '.join(sorted(descriptor_type_name(k) for k in allowed))}), and cuDNN "
                    "reads them into descriptors of one kind"
                )
            return DescType(next(iter(allowed)))
        kind = descriptor_type(requested)
        if int(kind) not in allowed or len(allowed) != 1:
            raise TypeError(
                f"{_attr_text(name)} holds "
                + " and ".join(sorted(descriptor_type_name(k) for k in allowed))
                + f" descriptors; reading it into {descriptor_type_name(kind)} descriptors would "
                "crash cuDNN"
            )
        return kind

    def _get_type(self, name: Any, attr_type: Any) -> int:
        if attr_type is not None:
            return int(attribute_type(attr_type))
        atype = _documented_type(name)
        if atype is None:
            raise TypeError(
                f"{_attr_text(name)}: cudnn_graph.h documents no attribute type for it, so pass "
                "attr_type= explicitly"
            )
        return atype

    def get(
        self,
        attr: Any,
        *,
        attr_type: Any = None,
        descriptor_type: Any = None,
        many: bool | None = None,
        count: int | None = None,
    ) -> Any:
        """``cudnnBackendGetAttribute``: a count query, then the read.

        Returns a scalar for single-element attributes (``many=False``, the default where the
        header documents one element), else a list, using the count cuDNN returns from the read
        (it can be smaller than the count query). CHAR attributes are returned as ``str``.
        Descriptor-valued attributes are read into descriptors created here, of the kind the
        attribute holds (``descriptor_type``, if given, must be that kind); only attributes that
        cuDNN fills in (engine/heuristic/plan attributes) or that were set through this object can
        be read, because cuDNN crashes on the others. Surplus descriptors are closed.
        ``count`` skips the count query and asks for up to that many elements (some attributes,
        such as ``ENGINECFG_KNOB_CHOICES``, answer a count query with 0).
        """
        self._check_open()
        name = attribute_name(attr)
        atype = self._get_type(name, attr_type)
        self._check_readable(name)
        if count is not None:
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"count must be a positive int, got {count!r}")
            if count > _MAX_GET_COUNT:
                raise ValueError(f"count must be at most {_MAX_GET_COUNT}, got {count}")
            many = True
        if atype == _CHAR:
            return self._get_text(name)
        if atype == _DESCRIPTOR:
            kind = self._descriptor_kind_to_read(name, descriptor_type)
            descs = self._get_descriptors(name, kind, many, count)
            if self._single(name, many):
                return descs[0] if descs else None
            return descs
        ctype: Any = _bindings.ATTRIBUTE_TYPE_CTYPES[atype]
        if self._single(name, many):
            arr = (ctype * 1)()
            n = self._get_raw(name, atype, 1, arr)
            return _decode(atype, arr, 1)[0] if n > 0 else None
        values: list[Any] = []
        available = count if count is not None else self._get_raw(name, atype, 0, None)
        for _ in range(_MAX_GET_RETRIES):
            size = max(abs(available), 0)
            if size == 0:
                return []
            arr = (ctype * size)()
            got = self._get_raw(name, atype, size, arr)
            if got >= 0:
                values = _decode(atype, arr, min(got, size))
                break
            available = got  # grew between the two calls: ask again
        return values

    def _single(self, name: Any, many: bool | None) -> bool:
        if many is not None:
            return not many
        if name.name in _MANY_DESPITE_DOCS:
            return False
        spec = _spec(name)
        return spec is not None and spec.count == 1

    def _get_text(self, name: Any) -> str:
        available = self._get_raw(name, _CHAR, 0, None)
        for _ in range(_MAX_GET_RETRIES):
            size = abs(available)
            if size == 0:
                return ""
            buf = ctypes.create_string_buffer(size + 1)  # the count may or may not include the NUL
            got = self._get_raw(name, _CHAR, size, buf)
            if got >= 0:
                return buf.raw[: min(got, size)].rstrip(b"\0").decode("utf-8", "replace")
            available = got
        raise CudnnError(
            _SIZE_INSUFFICIENT, "cudnnBackendGetAttribute", f"{_attr_text(name)} kept growing"
        )

    def _get_descriptors(
        self, name: Any, kind: Any, many: bool | None, count: int | None = None
    ) -> list[Any]:
        if count is not None:
            available = count
        elif self._single(name, many):
            available = 1
        else:
            available = self._get_raw(name, _DESCRIPTOR, 0, None)
        for _ in range(_MAX_GET_RETRIES):
            size = abs(available)
            if size == 0:
                return []
            # cuDNN fills descriptors the caller created; they stay tied to this one.
            created = [BackendDescriptor(kind, parents=(self,)) for _ in range(size)]
            arr = (ctypes.c_void_p * size)(*[d.ptr for d in created])
            try:
                got = self._get_raw(name, _DESCRIPTOR, size, arr)
            except BaseException:
                for d in created:
                    d.close()
                raise
            if got >= 0:
                kept = created[: min(got, size)]
                for d in created[len(kept) :]:
                    d.close()  # the count query promised more than the read delivered
                for d in kept:
                    d._finalized = True  # cuDNN hands back finalized objects
                return kept
            for d in created:
                d.close()
            available = got
        return []

    def __reduce_ex__(self, protocol: Any) -> Any:
        # copy.copy() would make a second Python owner of the same C pointer: once one copy is
        # closed, the other one hands a destroyed descriptor to cuDNN (observed: segfault). The
        # same rule refuses deepcopy and pickling, which cannot duplicate a C object either.
        raise TypeError(
            f"a {type(self).__name__} owns a cuDNN object and cannot be copied or pickled; "
            "build a new one"
        )

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("finalized" if self._finalized else "not finalized")
        return f"<pycudnn.backend.BackendDescriptor {self.descriptor_type.name} {state}>"
