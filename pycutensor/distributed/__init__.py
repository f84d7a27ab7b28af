"""Beyond one GPU: distributed contractions over NCCL (cuTENSORMp), several GPUs in one process
(cuTENSORMg), and block-sparse tensors.

``import pycutensor.distributed`` loads no library: cuTENSORMp (and NCCL) or cuTENSORMg load with
the first object that needs them, and without a GPU those objects raise
:class:`DeviceRequiredError` after their argument checks. The host-side rules (what each rank
holds: :class:`Distribution`; block structures: :class:`BlockStructure`) and the communication cost
model (:mod:`pycutensor.distributed.cost`) work anywhere. See ``docs/distributed.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from _nvbind.lazy import lazy_exports as _lazy_exports

from ._common import DeviceRequiredError as DeviceRequiredError

_LAZY = {
    ".comm": "Communicator",
    ".layout": "Distribution",
    ".mp": "MpHandle DistributedTensor MpPlanPreference ContractionPlan RedistributionPlan "
    "UnfoldPlan FoldPlan einsum gather scatter",
    ".mg": "MgHandle MgTensor MgCopyPlan MgContractionPlan",
    ".blocksparse": "BlockStructure BlockSparseTensor BlockSparseContractionPlan",
    ".cost": "cost_table",
}
_SUBMODULES = {"comm", "layout", "mp", "mg", "blocksparse", "cost"}

__all__, __getattr__, __dir__ = _lazy_exports(__name__, globals(), _LAZY, _SUBMODULES)

if TYPE_CHECKING:  # pragma: no cover - the re-exports type checkers read ("X as X")
    from .blocksparse import BlockSparseContractionPlan as BlockSparseContractionPlan
    from .blocksparse import BlockSparseTensor as BlockSparseTensor
    from .blocksparse import BlockStructure as BlockStructure
    from .comm import Communicator as Communicator
    from .cost import cost_table as cost_table
    from .layout import Distribution as Distribution
    from .mg import MgContractionPlan as MgContractionPlan
    from .mg import MgCopyPlan as MgCopyPlan
    from .mg import MgHandle as MgHandle
    from .mg import MgTensor as MgTensor
    from .mp import ContractionPlan as ContractionPlan
    from .mp import DistributedTensor as DistributedTensor
    from .mp import FoldPlan as FoldPlan
    from .mp import MpHandle as MpHandle
    from .mp import MpPlanPreference as MpPlanPreference
    from .mp import RedistributionPlan as RedistributionPlan
    from .mp import UnfoldPlan as UnfoldPlan
    from .mp import einsum as einsum
    from .mp import gather as gather
    from .mp import scatter as scatter
