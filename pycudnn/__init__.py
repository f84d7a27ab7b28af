"""pycudnn: NVIDIA cuDNN 9 from Python through ctypes.

``import pycudnn`` loads nothing heavy: the library is found and loaded on the first call that needs
it. Start with :func:`version`, :class:`Handle`, :class:`TensorDescriptor` and :class:`Graph`; the C
API is in :mod:`pycudnn.raw` under its C names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from _nvbind._version import __version__ as __version__
from _nvbind.package import package_face as _package_face

# Imported with the package; "X as X" marks a re-export for type checkers (__all__ is computed).
from .errors import ClosedError as ClosedError
from .errors import CudnnBadParamError as CudnnBadParamError
from .errors import CudnnError as CudnnError
from .errors import CudnnExecutionFailedError as CudnnExecutionFailedError
from .errors import CudnnInternalError as CudnnInternalError
from .errors import CudnnNotInitializedError as CudnnNotInitializedError
from .errors import CudnnNotSupportedError as CudnnNotSupportedError
from .errors import LibraryNotFoundError as LibraryNotFoundError
from .errors import UnsupportedByLibraryError as UnsupportedByLibraryError

# Public names that live in submodules, by module, imported on first access (PEP 562) so that
# importing the package stays cheap; those both packages have (version, Handle, DeviceArray, ...)
# are in _nvbind.package.LIBRARY_FACE. __all__ is these and the error classes above.
_LAZY = {
    "._versions": "require_version",
    ".tensor": "TensorDescriptor FilterDescriptor ConvolutionDescriptor",
    ".graph": "Graph",
    ".deviceprops": "DeviceProperties",
    ".plan": "Plan PlanCache PlanOptions GraphNotSupportedError NoTargetError",
}

_SUBMODULES = {"raw", "layout", "errors", "tensor", "handle", "graph", "backend", "plan", "ops"}

__all__, __getattr__, __dir__ = _package_face(__name__, globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover - the re-exports type checkers read ("X as X")
    from _nvbind.device_array import DeviceArray as DeviceArray

    from ._info import header_version as header_version
    from ._info import library_path as library_path
    from ._info import version as version
    from ._info import version_tuple as version_tuple
    from ._versions import require_version as require_version
    from .deviceprops import DeviceProperties as DeviceProperties
    from .graph import Graph as Graph
    from .handle import Handle as Handle
    from .handle import get_handle as get_handle
    from .log import disable_logging as disable_logging
    from .log import enable_logging as enable_logging
    from .plan import GraphNotSupportedError as GraphNotSupportedError
    from .plan import NoTargetError as NoTargetError
    from .plan import Plan as Plan
    from .plan import PlanCache as PlanCache
    from .plan import PlanOptions as PlanOptions
    from .tensor import ConvolutionDescriptor as ConvolutionDescriptor
    from .tensor import FilterDescriptor as FilterDescriptor
    from .tensor import TensorDescriptor as TensorDescriptor
