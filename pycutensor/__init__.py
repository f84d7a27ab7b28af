"""pycutensor: NVIDIA cuTENSOR 2 from Python through ctypes.

``import pycutensor`` loads nothing heavy. Start with :func:`einsum`, :class:`Handle` and the
operations in :mod:`pycutensor.operations`; the C API is in :mod:`pycutensor.raw`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# One version for the distribution (pyproject.toml reads it from _nvbind/_version.py).
from _nvbind._version import __version__ as __version__
from _nvbind.package import package_face

from .errors import (
    ClosedError,
    CutensorArchMismatchError,
    CutensorError,
    CutensorInsufficientWorkspaceError,
    CutensorInvalidValueError,
    CutensorNotSupportedError,
    LibraryNotFoundError,
    UnsupportedByLibraryError,
)

_LAZY: dict[str, str] = {
    "TensorDescriptor": ".tensor",
    "einsum": "._einsum",
    "parse_einsum": "._einsum",
    "EinsumSpec": "._einsum",
    "TensorSpec": ".tensor",
    "ModeMap": ".tensor",
    "Plan": ".plan",
    "PlanPreference": ".plan",
    "autotune": ".plan",
    "Contraction": ".operations",
    "ContractionTrinary": ".operations",
    "Reduction": ".operations",
    "ElementwiseBinary": ".operations",
    "ElementwiseTrinary": ".operations",
    "Permutation": ".operations",
    "contract": ".operations",
    "contract_trinary": ".operations",
    "reduce": ".operations",
    "elementwise_binary": ".operations",
    "elementwise_trinary": ".operations",
    "permute": ".operations",
}

_SUBMODULES = {
    "raw", "errors", "tensor", "handle", "tables", "checks", "operation", "preference", "plan",
    "operations", "distributed", "raw_mp", "raw_mg",
}  # fmt: skip

__all__ = [
    "ClosedError",
    "Contraction",
    "ContractionTrinary",
    "CutensorArchMismatchError",
    "CutensorError",
    "CutensorInsufficientWorkspaceError",
    "CutensorInvalidValueError",
    "CutensorNotSupportedError",
    "DeviceArray",
    "EinsumSpec",
    "ElementwiseBinary",
    "ElementwiseTrinary",
    "Handle",
    "LibraryNotFoundError",
    "ModeMap",
    "Permutation",
    "Plan",
    "PlanPreference",
    "Reduction",
    "TensorDescriptor",
    "TensorSpec",
    "UnsupportedByLibraryError",
    "autotune",
    "contract",
    "contract_trinary",
    "disable_logging",
    "einsum",
    "elementwise_binary",
    "elementwise_trinary",
    "enable_logging",
    "get_handle",
    "header_version",
    "library_path",
    "parse_einsum",
    "permute",
    "reduce",
    "version",
    "version_tuple",
]


__getattr__, __dir__ = package_face(__name__, globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover
    from _nvbind.device_array import DeviceArray

    from ._einsum import EinsumSpec, einsum, parse_einsum
    from ._info import header_version, library_path, version, version_tuple
    from .handle import Handle, get_handle
    from .log import disable_logging, enable_logging
    from .operations import (
        Contraction,
        ContractionTrinary,
        ElementwiseBinary,
        ElementwiseTrinary,
        Permutation,
        Reduction,
        contract,
        contract_trinary,
        elementwise_binary,
        elementwise_trinary,
        permute,
        reduce,
    )
    from .plan import Plan, PlanPreference, autotune
    from .tensor import ModeMap, TensorDescriptor, TensorSpec
