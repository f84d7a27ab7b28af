"""pycudnn: NVIDIA cuDNN 9 from Python through ctypes.

``import pycudnn`` loads nothing heavy: the library is found and loaded on the first call that needs
it. Start with :func:`version`, :class:`Handle`, :class:`TensorDescriptor` and :class:`Graph`; the C
API is in :mod:`pycudnn.raw` under its C names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from _nvbind._version import __version__ as __version__
from _nvbind.package import package_face

from .errors import (
    ClosedError,
    CudnnBadParamError,
    CudnnError,
    CudnnExecutionFailedError,
    CudnnInternalError,
    CudnnNotInitializedError,
    CudnnNotSupportedError,
    LibraryNotFoundError,
    UnsupportedByLibraryError,
)

# Public names that live in submodules, imported on first access (PEP 562) so that importing the
# package stays cheap; those both packages have (version, Handle, DeviceArray, ...) are in
# _nvbind.package.LIBRARY_FACE.
_LAZY: dict[str, str] = {
    "require_version": "._versions",
    "TensorDescriptor": ".tensor",
    "FilterDescriptor": ".tensor",
    "ConvolutionDescriptor": ".tensor",
    "Graph": ".graph",
    "DeviceProperties": ".deviceprops",
    "Plan": ".plan",
    "PlanCache": ".plan",
    "PlanOptions": ".plan",
    "GraphNotSupportedError": ".plan",
    "NoTargetError": ".plan",
}

_SUBMODULES = {"raw", "layout", "errors", "tensor", "handle", "graph", "backend", "plan", "ops"}

__all__ = [
    "ClosedError",
    "ConvolutionDescriptor",
    "CudnnBadParamError",
    "CudnnError",
    "CudnnExecutionFailedError",
    "CudnnInternalError",
    "CudnnNotInitializedError",
    "CudnnNotSupportedError",
    "DeviceArray",
    "DeviceProperties",
    "FilterDescriptor",
    "Graph",
    "GraphNotSupportedError",
    "Handle",
    "LibraryNotFoundError",
    "NoTargetError",
    "Plan",
    "PlanCache",
    "PlanOptions",
    "TensorDescriptor",
    "UnsupportedByLibraryError",
    "disable_logging",
    "enable_logging",
    "get_handle",
    "header_version",
    "library_path",
    "require_version",
    "version",
    "version_tuple",
]


__getattr__, __dir__ = package_face(__name__, globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover
    from _nvbind.device_array import DeviceArray

    from ._info import header_version, library_path, version, version_tuple
    from ._versions import require_version
    from .deviceprops import DeviceProperties
    from .graph import Graph
    from .handle import Handle, get_handle
    from .log import disable_logging, enable_logging
    from .plan import GraphNotSupportedError, NoTargetError, Plan, PlanCache, PlanOptions
    from .tensor import ConvolutionDescriptor, FilterDescriptor, TensorDescriptor
