"""pycutensor: NVIDIA cuTENSOR 2 from Python through ctypes.

``import pycutensor`` loads nothing heavy. Start with :func:`einsum`, :class:`Handle` and the
operations in :mod:`pycutensor.operations`; the C API is in :mod:`pycutensor.raw`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# One version for the distribution (pyproject.toml reads it from _nvbind/_version.py).
from _nvbind._version import __version__ as __version__
from _nvbind.package import package_face as _package_face

# Imported with the package; "X as X" marks a re-export for type checkers (__all__ is computed).
from .errors import ClosedError as ClosedError
from .errors import CutensorArchMismatchError as CutensorArchMismatchError
from .errors import CutensorError as CutensorError
from .errors import CutensorInsufficientWorkspaceError as CutensorInsufficientWorkspaceError
from .errors import CutensorInvalidValueError as CutensorInvalidValueError
from .errors import CutensorNotSupportedError as CutensorNotSupportedError
from .errors import LibraryNotFoundError as LibraryNotFoundError
from .errors import UnsupportedByLibraryError as UnsupportedByLibraryError

# Public names that live in submodules, by module, imported on first access (PEP 562) so that
# importing the package stays cheap; those both packages have (version, Handle, DeviceArray, ...)
# are in _nvbind.package.LIBRARY_FACE. __all__ is these and the error classes above.
_LAZY = {
    "._einsum": "einsum parse_einsum EinsumSpec",
    ".tensor": "TensorDescriptor TensorSpec ModeMap",
    ".plan": "Plan PlanPreference autotune",
    ".operations": "Contraction ContractionTrinary Reduction ElementwiseBinary ElementwiseTrinary "
    "Permutation contract contract_trinary reduce elementwise_binary elementwise_trinary permute",
}

_SUBMODULES = {
    "raw", "errors", "tensor", "handle", "tables", "checks", "operation", "preference", "plan",
    "operations", "distributed", "raw_mp", "raw_mg",
}  # fmt: skip

__all__, __getattr__, __dir__ = _package_face(__name__, globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover - the re-exports type checkers read ("X as X")
    from _nvbind.device_array import DeviceArray as DeviceArray

    from ._einsum import EinsumSpec as EinsumSpec
    from ._einsum import einsum as einsum
    from ._einsum import parse_einsum as parse_einsum
    from ._info import header_version as header_version
    from ._info import library_path as library_path
    from ._info import version as version
    from ._info import version_tuple as version_tuple
    from .handle import Handle as Handle
    from .handle import get_handle as get_handle
    from .log import disable_logging as disable_logging
    from .log import enable_logging as enable_logging
    from .operations import Contraction as Contraction
    from .operations import ContractionTrinary as ContractionTrinary
    from .operations import ElementwiseBinary as ElementwiseBinary
    from .operations import ElementwiseTrinary as ElementwiseTrinary
    from .operations import Permutation as Permutation
    from .operations import Reduction as Reduction
    from .operations import contract as contract
    from .operations import contract_trinary as contract_trinary
    from .operations import elementwise_binary as elementwise_binary
    from .operations import elementwise_trinary as elementwise_trinary
    from .operations import permute as permute
    from .operations import reduce as reduce
    from .plan import Plan as Plan
    from .plan import PlanPreference as PlanPreference
    from .plan import autotune as autotune
    from .tensor import ModeMap as ModeMap
    from .tensor import TensorDescriptor as TensorDescriptor
    from .tensor import TensorSpec as TensorSpec
