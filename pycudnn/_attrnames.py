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
            hint = did_you_mean(key, AttrName.__members__)
            raise ValueError(f"unknown backend attribute {attr!r}{hint}") from None
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
            hint = did_you_mean(key, AttrType.__members__)
            raise ValueError(f"unknown backend attribute type {attr_type!r}{hint}") from None
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
        hint = did_you_mean(
            key,
            [*DescType.__members__, *(m.removesuffix("_DESCRIPTOR") for m in DescType.__members__)],
        )
        raise ValueError(f"unknown backend descriptor type {kind!r}{hint}")
    if isinstance(kind, int) and not isinstance(kind, bool):
        try:
            return DescType(kind)
        except ValueError:
            raise ValueError(f"{kind} is not a cudnnBackendDescriptorType_t value") from None
    raise TypeError(
        f"descriptor type must be a cudnnBackendDescriptorType_t, an int or a name, not {kind!r}"
    )


def attribute_type_name(attr_type: int) -> str:
    """The ``cudnnBackendAttributeType_t`` name of ``attr_type``, e.g. "CUDNN_TYPE_INT64"."""
    try:
        name: str = AttrType(attr_type).name
        return "CUDNN_TYPE_" + name
    except ValueError:
        return f"attribute type {attr_type}"


def descriptor_type_name(kind: int) -> str:
    """The ``cudnnBackendDescriptorType_t`` name of ``kind``, e.g.
    "CUDNN_BACKEND_TENSOR_DESCRIPTOR"."""
    try:
        name: str = DescType(kind).name
        return "CUDNN_BACKEND_" + name
    except ValueError:
        return f"descriptor type {kind}"


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
