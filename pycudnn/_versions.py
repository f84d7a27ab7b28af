"""Which cuDNN version each symbol needs, and the checks that refuse what the loaded one lacks.

The bindings come from the newest headers, but the process runs whatever cuDNN 9 its environment
loads. Every enumerator of the headers carries an ``@since`` tag (``_bindings.ENUMERATOR_SINCE``),
so a backend attribute, attribute type, descriptor type or enum value newer than the loaded library
is refused here, before C sees it, with :class:`~pycudnn.UnsupportedByLibraryError` naming the
symbol, the version that introduced it and the loaded version. An older cuDNN answers such values
with a bare ``CUDNN_STATUS_BAD_PARAM`` at best.

Nothing here is listed by hand: the tables are the generated ones, and the features that
:func:`missing_features` reports are named by the symbol that introduces them, except two
behaviours measured on real libraries (``docs/versions.md``): plans for device properties without
a GPU (9.10), heuristics without a GPU or device properties (9.9), named with the reason.
"""

from __future__ import annotations

import enum
import functools

from _nvbind.ffi import format_version

from . import _bindings
from ._lib import LIB

__all__ = [
    "DEVICELESS_PLANS_SINCE",
    "DEVICEPROP_SINCE",
    "HEURISTICS_WITHOUT_TARGET_SINCE",
    "FEATURES",
    "check_enum",
    "enum_since",
    "missing_features",
    "require_version",
    "supported_range",
]


@functools.cache
def _since_by_member() -> dict[tuple[type, int], tuple[str, tuple[int, int, int]]]:
    """(enum class, value) -> (C name, @since) of the oldest enumerator with that value."""
    out: dict[tuple[type, int], tuple[str, tuple[int, int, int]]] = {}
    for c_name, since in _bindings.ENUMERATOR_SINCE.items():
        member = getattr(_bindings, c_name, None)
        if not isinstance(member, enum.IntEnum):
            continue
        key = (type(member), int(member))
        known = out.get(key)
        if known is None or since < known[1]:  # an alias may be newer than the value it names
            out[key] = (c_name, since)
    return out


def enum_since(enum_cls: type, value: int) -> tuple[str, tuple[int, int, int]] | None:
    """``(C name, version)`` of the enumerator ``value`` of ``enum_cls``; None when unknown."""
    return _since_by_member().get((enum_cls, int(value)))


def check_enum(enum_cls: type, value: int, context: str = "") -> None:
    """Refuse ``value`` of ``enum_cls`` when it is newer than the loaded cuDNN (loads it)."""
    entry = _since_by_member().get((enum_cls, int(value)))
    if entry is None:
        return
    c_name, since = entry
    LIB.check_since(c_name, since, context)


def require_version(version: tuple[int, ...], feature: str) -> None:
    """Raise :class:`~pycudnn.UnsupportedByLibraryError` unless the loaded cuDNN is at least
    ``version``; ``feature`` names what needs it, e.g. ``require_version((9, 8), "deviceless
    planning")``. Loads the library."""
    if not isinstance(version, tuple) or not 1 <= len(version) <= 3:
        raise TypeError(f"version must be a tuple such as (9, 8), got {version!r}")
    if not isinstance(feature, str) or not feature:
        raise TypeError(f"feature must be a non-empty str, got {feature!r}")
    LIB.require(version, feature)


def supported_range() -> str:
    """The supported cuDNN versions, e.g. ``">= 9.0, < 10 (bindings from 9.28.0 headers)"``."""
    low = format_version(LIB.minimum_version[:2])
    return (
        f">= {low}, < {LIB.minimum_version[0] + 1} "
        f"(bindings from {format_version(_bindings.HEADER_VERSION)} headers)"
    )


def _enumerator(c_name: str) -> tuple[int, int, int] | None:
    return _bindings.ENUMERATOR_SINCE.get(c_name)


#: cuDNN 9.8 introduced ``CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR``: heuristics and plans for device
#: properties need it.
DEVICEPROP_SINCE = (9, 8)
#: Execution plans for device properties without a GPU need cuDNN 9.10: without one, 9.8 and 9.9
#: fail to finalize runtime-compiled engines (``cuLibraryLoadData``: initialization error) and
#: cannot serialize the plans they do finalize (``ConvolutionEngine::getStatus()``); measured on
#: both. With a GPU present they are not refused (not measured on a GPU for 9.8 and 9.9).
DEVICELESS_PLANS_SINCE = (9, 10)
#: Heuristics without a GPU and without DEVICEPROP need cuDNN 9.9: before it, cuDNN runs them on
#: device properties it never initialized (9.0: the same graph counts 0, 4, 11 or 12 configs from
#: call to call, and finalizing the heuristics fails at random with "target_sm_count >
#: multiProcessorCount"; measured). 9.9 and newer count configs and return none, as they should.
HEURISTICS_WITHOUT_TARGET_SINCE = (9, 9)


def _function(name: str) -> tuple[int, int, int] | None:
    spec = _bindings.FUNCTIONS.get(name)
    return None if spec is None else spec.since


# Features a user notices, each dated by the symbol that introduces it.
FEATURES: dict[str, tuple[int, int, int] | None] = {
    "device properties and planning for them (CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR)": _enumerator(
        "CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR"
    ),
    "execution plans for device properties without a GPU (9.8 and 9.9 cannot build them)": (
        *DEVICELESS_PLANS_SINCE,
        0,
    ),
    "heuristics without a GPU or device properties (before 9.9 cuDNN reads uninitialized "
    "properties; pycudnn does not run them)": (*HEURISTICS_WITHOUT_TARGET_SINCE, 0),
    "engine-config workspace sizes before planning (CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE)": (
        _enumerator("CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE")
    ),
    "adaptive layer norm (CUDNN_ADA_LAYER_NORM)": _enumerator("CUDNN_ADA_LAYER_NORM"),
    "kernel cache (CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR)": _enumerator(
        "CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR"
    ),
    "CUDA graph population (cudnnBackendPopulateCudaGraph)": _function(
        "cudnnBackendPopulateCudaGraph"
    ),
    "CUDA graph retention (CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION)": _enumerator(
        "CUDNN_ATTR_EXECUTION_PLAN_CUDA_GRAPH_RETENTION"
    ),
}


def missing_features() -> list[str]:
    """What the loaded cuDNN lacks that the bindings know: the :data:`FEATURES`, then every
    graph operation (``CUDNN_BACKEND_OPERATION_*``) and pointwise mode newer than it, each with
    the version that introduced it. Loads the library."""
    out = [
        f"{name}: needs {format_version(since)}"
        for name, since in FEATURES.items()
        if LIB.lacks(since)
    ]
    families: list[tuple[type, str]] = [
        (_bindings.cudnnBackendDescriptorType_t, "CUDNN_BACKEND_OPERATION_"),
        (_bindings.cudnnPointwiseMode_t, "CUDNN_POINTWISE_"),
    ]
    for enum_cls, prefix in families:
        for (cls, _value), (c_name, since) in sorted(
            _since_by_member().items(), key=lambda kv: (kv[1][1], kv[1][0])
        ):
            if cls is enum_cls and c_name.startswith(prefix) and LIB.lacks(since):
                out.append(f"{c_name}: needs {format_version(since)}")
    return out
