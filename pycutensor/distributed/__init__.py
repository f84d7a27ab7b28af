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

from _nvbind.lazy import lazy_module_attributes

from ._common import DeviceRequiredError

_LAZY: dict[str, str] = {
    "Communicator": ".comm",
    "Distribution": ".layout",
    "MpHandle": ".mp",
    "DistributedTensor": ".mp",
    "MpPlanPreference": ".mp",
    "ContractionPlan": ".mp",
    "RedistributionPlan": ".mp",
    "UnfoldPlan": ".mp",
    "FoldPlan": ".mp",
    "einsum": ".mp",
    "gather": ".mp",
    "scatter": ".mp",
    "MgHandle": ".mg",
    "MgTensor": ".mg",
    "MgCopyPlan": ".mg",
    "MgContractionPlan": ".mg",
    "BlockStructure": ".blocksparse",
    "BlockSparseTensor": ".blocksparse",
    "BlockSparseContractionPlan": ".blocksparse",
    "cost_table": ".cost",
}
_SUBMODULES = {"comm", "layout", "mp", "mg", "blocksparse", "cost"}

__all__ = [
    "BlockSparseContractionPlan",
    "BlockSparseTensor",
    "BlockStructure",
    "Communicator",
    "ContractionPlan",
    "DeviceRequiredError",
    "Distribution",
    "DistributedTensor",
    "FoldPlan",
    "MgContractionPlan",
    "MgCopyPlan",
    "MgHandle",
    "MgTensor",
    "MpHandle",
    "MpPlanPreference",
    "RedistributionPlan",
    "UnfoldPlan",
    "cost_table",
    "einsum",
    "gather",
    "scatter",
]

__getattr__, __dir__ = lazy_module_attributes(__name__, globals(), _LAZY, _SUBMODULES)

if TYPE_CHECKING:  # pragma: no cover
    from .blocksparse import BlockSparseContractionPlan, BlockSparseTensor, BlockStructure
    from .comm import Communicator
    from .cost import cost_table
    from .layout import Distribution
    from .mg import MgContractionPlan, MgCopyPlan, MgHandle, MgTensor
    from .mp import (
        ContractionPlan,
        DistributedTensor,
        FoldPlan,
        MpHandle,
        MpPlanPreference,
        RedistributionPlan,
        UnfoldPlan,
        einsum,
        gather,
        scatter,
    )
