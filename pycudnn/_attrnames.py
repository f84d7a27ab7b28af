"""Names of cuDNN backend attributes, attribute types and descriptor types, and their versions.

Normalises what users write (an enum member, an int, or a C name with or without its prefix) to the
generated enum members, and refuses, before C, the ones newer than the loaded cuDNN (their
``@since`` tags are in the generated tables; see :mod:`pycudnn._versions`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from _nvbind.suggest import did_you_mean

from . import _bindings
from ._versions import check_enum

__all__ = [
    "ENUM_OF_TYPE",
    "attribute_name",
    "attribute_type",
    "attribute_type_name",
    "check_supported",
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


# --------------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------------


def _strip(text: str, prefixes: Iterable[str]) -> str:
    key = text.strip().upper()
    for p in prefixes:
        if key.startswith(p):
            return key[len(p) :]
    return key


def _member(value: Any, enum_cls: Any, prefix: str, *, what: str, not_one: str, arg: str) -> Any:
    """The member of ``enum_cls`` that ``value`` names: a member, an int, or a name with or without
    ``prefix`` (case-insensitive); a descriptor type's name also without its ``_DESCRIPTOR``.
    The errors name ``what`` it is, what an int of another value is ``not_one`` of, and ``arg``."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        key = _strip(value, (prefix,))
        suffix = "_DESCRIPTOR" if enum_cls is DescType else ""
        for candidate in (key, key + suffix) if suffix else (key,):
            if candidate in enum_cls.__members__:
                return enum_cls[candidate]
        names = [*enum_cls.__members__]
        if suffix:
            names += [m.removesuffix(suffix) for m in enum_cls.__members__]
        raise ValueError(f"unknown backend {what} {value!r}{did_you_mean(key, names)}")
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return enum_cls(value)
        except ValueError:
            raise ValueError(f"{value} is not {not_one}") from None
    raise TypeError(f"{arg} must be a {enum_cls.__name__}, an int or a name, not {value!r}")


def attribute_name(attr: Any) -> Any:
    """Normalise an attribute given as an enum member, an int, or a name with or without
    ``CUDNN_ATTR_`` (case-insensitive)."""
    not_one = "a backend attribute (cudnnBackendAttributeName_t)"
    return _member(
        attr, AttrName, "CUDNN_ATTR_", what="attribute", not_one=not_one, arg="attribute"
    )


def attribute_type(attr_type: Any) -> Any:
    """Normalise an attribute type (enum member, int, or name with or without ``CUDNN_TYPE_``)."""
    what, not_one = "attribute type", "a cudnnBackendAttributeType_t value"
    return _member(attr_type, AttrType, "CUDNN_TYPE_", what=what, not_one=not_one, arg="attr_type")


def descriptor_type(kind: Any) -> Any:
    """Normalise a descriptor type: an enum member, an int, or a name such as ``"TENSOR"``,
    ``"TENSOR_DESCRIPTOR"`` or ``"CUDNN_BACKEND_TENSOR_DESCRIPTOR"`` (case-insensitive)."""
    what, not_one = "descriptor type", "a cudnnBackendDescriptorType_t value"
    return _member(kind, DescType, "CUDNN_BACKEND_", what=what, not_one=not_one, arg=what)


def _c_name(enum_cls: Any, value: int, prefix: str, what: str) -> str:
    try:
        name: str = enum_cls(value).name
    except ValueError:
        return f"{what} {value}"
    return prefix + name


def attribute_type_name(attr_type: int) -> str:
    """The ``cudnnBackendAttributeType_t`` name of ``attr_type``, e.g. "CUDNN_TYPE_INT64"."""
    return _c_name(AttrType, attr_type, "CUDNN_TYPE_", "attribute type")


def descriptor_type_name(kind: int) -> str:
    """The ``cudnnBackendDescriptorType_t`` name of ``kind``, e.g.
    "CUDNN_BACKEND_TENSOR_DESCRIPTOR"."""
    return _c_name(DescType, kind, "CUDNN_BACKEND_", "descriptor type")


def _attr_text(attr: Any) -> str:
    name: str = attr.name
    return "CUDNN_ATTR_" + name


def _spec(attr: Any) -> Any:
    return _bindings.ATTRIBUTES.get(int(attr))


def _documented_type(attr: Any) -> int | None:
    spec = _spec(attr)
    return None if spec is None or spec.attr_type is None else int(spec.attr_type)


def check_supported(name: Any = None, attr_type: int | None = None, kind: Any = None) -> None:
    """Refuse an attribute, attribute type or descriptor type newer than the loaded cuDNN.

    An older library answers them with ``CUDNN_STATUS_BAD_PARAM`` (or worse): the error here names
    the symbol, the version that introduced it and the loaded version instead.
    """
    if kind is not None:
        check_enum(DescType, int(kind))
    if name is not None:
        check_enum(AttrName, int(name))
    if attr_type is not None:
        check_enum(AttrType, int(attr_type), f"the type of {_attr_text(name)}" if name else "")
