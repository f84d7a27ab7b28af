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
import numbers
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from . import _bindings
from ._lib import LIB, last_error_string
from ._shared.resource import CResource
from .errors import CudnnError, error_from_status

__all__ = [
    "BackendDescriptor",
    "attribute_name",
    "attribute_type_name",
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
# (cudnn.md: ENGINEHEUR_RESULTS needs pre-created ENGINECFGs, ENGINECFG_ENGINE an ENGINE, ...).
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
        for i, d in enumerate(descs):
            if not isinstance(d, BackendDescriptor):
                raise _type_error(attr, attr_type, value, f"element {i} is {type(d).__name__}")
            d._check_open()
            if not d.is_finalized:
                raise ValueError(
                    f"{_attr_text(attr)}: {d.type_name} (element {i}) is not finalized; cuDNN "
                    "only accepts finalized descriptors as attribute values"
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
            arr[i].numerator, arr[i].denominator = num, den
        return arr, len(pairs), []
    try:
        items = [value] if kind == "enum" and isinstance(value, str) else _as_sequence(value)
    except TypeError:
        raise _type_error(attr, attr_type, value) from None
    out: list[Any] = []
    for v in items:
        if kind == "int":
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise _type_error(attr, attr_type, value)
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
            out.append(int(v) or None)
        else:  # enum
            try:
                out.append(_enum_value(ENUM_OF_TYPE[attr_type], v))
            except TypeError as exc:
                raise _type_error(attr, attr_type, value, str(exc)) from None
    arr = (ctype * len(out))(*out)
    return arr, len(out), []


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
        status = LIB.function("cudnnBackendFinalize")(self)
        _raise_for(status, "cudnnBackendFinalize", f"finalizing a {self.type_name}")
        self._finalized = True

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
        status = LIB.function("cudnnBackendSetAttribute")(self, int(name), atype, count, arr)
        _raise_for(
            status,
            "cudnnBackendSetAttribute",
            f"setting {_attr_text(name)} ({attribute_type_name(atype)} x {count}) on a "
            f"{self.type_name}",
        )
        self._refs.extend(keep)

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
        return max(self._get_raw(name, atype, 0, None), 0)

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
        Descriptor-valued attributes are read into descriptors created here, of
        ``descriptor_type`` (known for the engine/heuristic attributes); surplus ones are closed.
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
            many = True
        if atype == _CHAR:
            return self._get_text(name)
        if atype == _DESCRIPTOR:
            kind = descriptor_type or _GET_DESCRIPTOR_TYPES.get(name.name)
            if kind is None:
                raise TypeError(
                    f"{_attr_text(name)} holds descriptors; pass descriptor_type= to say which "
                    "kind cuDNN should fill in"
                )
            descs = self._get_descriptors(name, globals()["descriptor_type"](kind), many, count)
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

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("finalized" if self._finalized else "not finalized")
        return f"<pycudnn.backend.BackendDescriptor {self.descriptor_type.name} {state}>"
