"""Planning and executing cuDNN graphs: heuristics, engine configs, execution plans, autotuning, caches.

The workflow (cuDNN's backend API, wrapped)::

    graph.finalize()                      # OPERATIONGRAPH
    cfgs = graph.engine_configs()         # ENGINEHEUR (one or more modes) -> ENGINECFGs, filtered
    plan = graph.build()                  # the first config whose EXECUTION_PLAN finalizes
    plan.execute({x: x_gpu, w: w_gpu, y: y_gpu})

``build`` looks the plan up first in a plan cache (by default an in-memory LRU per thread, keyed by
the graph's structure, dims, strides, dtypes, alignment, the target device's properties, the cuDNN
version, the heuristic modes and the filters); ``build(cache=PlanCache("dir"))`` also keeps plans on
disk as cuDNN's execution-plan JSON, so another process reuses them without running heuristics.

Without a GPU, pass ``device_properties=DeviceProperties.load(...)`` (captured on the target GPU):
heuristics and execution plans then build devicelessly and serialize for later use on that GPU.

Executing a plan is the hot path: the variant pack (pointers + workspace) is built once per set of
data pointers and cached, so a repeated call with the same arrays does a tuple of pointer reads, a
dictionary lookup, the stream check and ``cudnnBackendExecute``. Arrays are validated (device,
dtype, dims, strides, alignment) the first time a set of pointers is seen.

Plans are not thread-safe (cuDNN gives no guarantee that sharing one across threads is safe): keep a
plan per thread, which the default plan cache does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from _nvbind.lazy import lazy_exports as _lazy_exports

# Imported with the package; "X as X" marks a re-export for type checkers (__all__ is computed).
from .building import build as build
from .building import build_all as build_all
from .cache import PlanCache as PlanCache
from .cache import default_plan_cache as default_plan_cache
from .execution import Plan as Plan
from .heuristics import HEURISTIC_MODES as HEURISTIC_MODES
from .heuristics import EngineConfig as EngineConfig
from .heuristics import KnobInfo as KnobInfo
from .heuristics import engine_configs as engine_configs
from .heuristics import run_heuristics as run_heuristics
from .options import PlanOptions as PlanOptions
from .report import GraphNotSupportedError as GraphNotSupportedError
from .report import HeuristicsResult as HeuristicsResult
from .report import NoTargetError as NoTargetError
from .report import PlanningReport as PlanningReport
from .report import PlanVersionError as PlanVersionError

# Autotuning, engine selection and the smoke checks are imported on first use (PEP 562): a process
# that only builds or loads plans (``Graph.build``, a plan-cache directory) never needs them, and
# they pull timing, NumPy reference and statistics code with them.
_LAZY = {
    ".autotuning": "AutotuneResult AutotuneResults autotune",
    ".selection": "build_engine engine_config",
    ".smoke": "smoke_checks",
}

# Submodules that used to be imported with the package: still reachable as attributes.
_SUBMODULES = {"autotuning", "selection", "smoke", "verifying"}


__all__, __getattr__, __dir__ = _lazy_exports(__name__, globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover - the re-exports type checkers read ("X as X")
    from .autotuning import AutotuneResult as AutotuneResult
    from .autotuning import AutotuneResults as AutotuneResults
    from .autotuning import autotune as autotune
    from .selection import build_engine as build_engine
    from .selection import engine_config as engine_config
    from .smoke import smoke_checks as smoke_checks
