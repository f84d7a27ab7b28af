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

import collections
import ctypes
import dataclasses
import functools
import hashlib
import json
import logging
import operator
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _bindings, known_bad, rewrites
from ._lib import LIB, check
from ._shared.arrays import as_array_view
from ._shared.dtypes import CUDNN_DATA_TYPE_NAMES, dtype_name
from ._shared.resource import ClosedError
from .backend import BackendDescriptor, check_plan_json
from .deviceprops import DeviceProperties, _error_lines
from .errors import CudnnError, CudnnNotSupportedError
from .graph import Graph, Tensor
from .rewrites import Variant as _Variant

__all__ = [
    "HEURISTIC_MODES",
    "AutotuneResult",
    "AutotuneResults",
    "EngineConfig",
    "GraphNotSupportedError",
    "HeuristicsResult",
    "KnobInfo",
    "Plan",
    "PlanCache",
    "PlanVersionError",
    "autotune",
    "build",
    "build_all",
    "default_plan_cache",
    "engine_configs",
    "run_heuristics",
    "smoke_checks",
]

_log = logging.getLogger("pycudnn")

HeurMode: Any = _bindings.cudnnBackendHeurMode_t

#: Heuristic modes by their short names (``cudnnBackendHeurMode_t``).
HEURISTIC_MODES: dict[str, Any] = {
    # the generator strips the enum's common prefix, which may leave "MODE_" on the members
    name.lower(): HeurMode[member]
    for name in ("INSTANT", "A", "B", "FALLBACK")
    for member in (name, "MODE_" + name)
    if member in HeurMode.__members__
}
_MODE_NAMES = {v: k for k, v in HEURISTIC_MODES.items()}
DEFAULT_HEURISTICS = ("a", "fallback")

_KNOB_TYPE_COUNT = max(
    int(getattr(_bindings.cudnnBackendKnobType_t, "COUNTS", 0)),
    len(_bindings.cudnnBackendKnobType_t),
)
_REDUCED_PRECISION_NOTES = frozenset({"REDUCED_PRECISION_REDUCTION", "DOWN_CONVERT_INPUTS"})


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class GraphNotSupportedError(CudnnNotSupportedError):
    """No engine could execute the graph: which heuristic modes were tried, what each returned,
    which configs were filtered out or failed to finalize, and what cuDNN logged."""

    def __init__(
        self, status: int, function: str = "", message: str = "", report: Any = None
    ) -> None:
        super().__init__(status, function, message)
        self.report = report

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status, self.function, self.message))


class PlanVersionError(ValueError):
    """A serialized plan was written by another cuDNN version (plans load only in the exact one)."""


def _check_graph(graph: Any) -> None:
    # The planning functions are public; anything but a Graph would fail deep inside with an
    # AttributeError instead of saying what is wrong.
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a pycudnn.Graph, not {type(graph).__name__}")


def _heur_mode(mode: Any) -> Any:
    if isinstance(mode, HeurMode):
        return mode
    if isinstance(mode, str):
        key = mode.strip().lower().removeprefix("cudnn_heur_mode_")
        if key in HEURISTIC_MODES:
            return HEURISTIC_MODES[key]
    elif isinstance(mode, int) and not isinstance(mode, bool):
        try:
            m = HeurMode(mode)
        except ValueError:
            pass
        else:
            if m in _MODE_NAMES:
                return m
    raise ValueError(f"unknown heuristic mode {mode!r}; choose from {', '.join(HEURISTIC_MODES)}")


def _heur_modes(modes: Any) -> list[Any]:
    if isinstance(modes, (str, int, HeurMode)):
        modes = [modes]
    if not isinstance(modes, Iterable):
        raise TypeError(f"heuristics must be a mode or a sequence of modes, not {modes!r}")
    out = []
    for m in modes:
        hm = _heur_mode(m)
        if hm not in out:
            out.append(hm)
    if not out:
        raise ValueError("heuristics must name at least one mode")
    return out


# --------------------------------------------------------------------------------------------------
# Engine configurations
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class KnobInfo:
    """A tunable knob of an engine (``CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR``)."""

    name: str
    minimum: int
    maximum: int
    stride: int


def _note_names(values: Iterable[Any]) -> tuple[str, ...]:
    return tuple(v.name if hasattr(v, "name") else str(v) for v in values)


class EngineConfig:
    """One engine configuration (``CUDNN_BACKEND_ENGINECFG_DESCRIPTOR``) from the heuristics.

    ``engine_id`` (``ENGINE_GLOBAL_INDEX``), ``knobs`` (``{knob name: value}`` from
    ``ENGINECFG_KNOB_CHOICES``), ``numerical_notes`` and ``behavior_notes`` (note names, e.g.
    ``TENSOR_CORE``, ``NONDETERMINISTIC``, ``RUNTIME_COMPILATION``), ``workspace_size`` (bytes, from
    ``ENGINECFG_WORKSPACE_SIZE``; None where the library cannot say), ``mode`` (the heuristic
    that proposed it) and ``rank`` (its position in that heuristic's list).
    """

    def __init__(self, descriptor: BackendDescriptor, *, mode: str = "", rank: int = 0) -> None:
        self.descriptor = descriptor
        self.mode = mode
        self.rank = rank
        engine = descriptor.get("ENGINECFG_ENGINE")
        self._engine = engine
        self.engine_id = int(engine.get("ENGINE_GLOBAL_INDEX"))
        self.numerical_notes = _note_names(engine.get("ENGINE_NUMERICAL_NOTE", many=True))
        self.behavior_notes = _note_names(engine.get("ENGINE_BEHAVIOR_NOTE", many=True))
        knobs: dict[str, int] = {}
        # A count query on KNOB_CHOICES answers 0; ask for one slot per knob type instead.
        for choice in descriptor.get("ENGINECFG_KNOB_CHOICES", count=_KNOB_TYPE_COUNT):
            ktype = choice.get("KNOB_CHOICE_KNOB_TYPE")
            knobs[ktype.name if hasattr(ktype, "name") else str(ktype)] = int(
                choice.get("KNOB_CHOICE_KNOB_VALUE")
            )
            choice.close()
        self.knobs = knobs
        self.workspace_size: int | None
        try:
            self.workspace_size = int(descriptor.get("ENGINECFG_WORKSPACE_SIZE"))
        except (CudnnError, KeyError, ValueError):
            self.workspace_size = None

    @property
    def identity(self) -> tuple[int, tuple[tuple[str, int], ...]]:
        """``(engine_id, sorted knob choices)``: equal for configs that are the same engine setup."""
        return self.engine_id, tuple(sorted(self.knobs.items()))

    def knob_info(self) -> list[KnobInfo]:
        """The engine's tunable knobs and their ranges (``ENGINE_KNOB_INFO``)."""
        out = []
        for info in self._engine.get("ENGINE_KNOB_INFO", many=True):
            ktype = info.get("KNOB_INFO_TYPE", attr_type="KNOB_TYPE", many=False)
            out.append(
                KnobInfo(
                    ktype.name if hasattr(ktype, "name") else str(ktype),
                    int(info.get("KNOB_INFO_MINIMUM_VALUE", attr_type="INT64", many=False)),
                    int(info.get("KNOB_INFO_MAXIMUM_VALUE", attr_type="INT64", many=False)),
                    int(info.get("KNOB_INFO_STRIDE", attr_type="INT64", many=False)),
                )
            )
            info.close()
        return out

    def describe(self) -> str:
        knobs = ", ".join(f"{k}={v}" for k, v in self.knobs.items()) or "no knobs"
        notes = ", ".join(self.numerical_notes + self.behavior_notes) or "no notes"
        ws = "?" if self.workspace_size is None else f"{self.workspace_size} B"
        return f"engine {self.engine_id} ({knobs}; {notes}; workspace {ws}; from heuristic {self.mode})"

    def __repr__(self) -> str:
        return f"<pycudnn.plan.EngineConfig {self.describe()}>"


@dataclasses.dataclass
class HeuristicsResult:
    """What one heuristic mode gave: the count query, the configs returned, and cuDNN's log."""

    mode: str
    count: int
    configs: list[EngineConfig]
    error: str = ""
    log: list[str] = dataclasses.field(default_factory=list)

    @property
    def returned(self) -> int:
        return len(self.configs)

    def describe(self) -> str:
        if self.error:
            return f"{self.mode}: failed ({self.error})"
        return f"{self.mode}: {self.count} counted, {self.returned} returned"


@dataclasses.dataclass
class PlanningReport:
    """Everything that happened while looking for a plan (kept on GraphNotSupportedError)."""

    heuristics: list[HeuristicsResult] = dataclasses.field(default_factory=list)
    filtered: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    log: list[str] = dataclasses.field(default_factory=list)
    device: str = ""
    #: Known-bad table entries that removed an engine config (see :mod:`pycudnn.known_bad`).
    known_bad: list[known_bad.KnownBadEngine] = dataclasses.field(default_factory=list)
    #: Equivalent descriptions tried because the graph as described had no engine, and how each
    #: went (see :mod:`pycudnn.rewrites`).
    rewrites: list[str] = dataclasses.field(default_factory=list)
    #: What would work instead, when nothing did.
    advice: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        lines = ["heuristics tried: " + "; ".join(h.describe() for h in self.heuristics)]
        if self.filtered:
            lines.append(
                f"filtered out: {len(self.filtered)} config(s) ("
                + "; ".join(f"{c}: {why}" for c, why in self.filtered[:6])
                + (" ..." if len(self.filtered) > 6 else "")
                + ")"
            )
        if self.failed:
            lines.append(
                f"plans that failed to finalize: {len(self.failed)} ("
                + "; ".join(f"{c}: {why}" for c, why in self.failed[:6])
                + (" ..." if len(self.failed) > 6 else "")
                + ")"
            )
        for entry in dict.fromkeys(self.known_bad):
            lines.append("excluded as known to give wrong results: " + entry.describe())
        for line in self.rewrites:
            lines.append("rewrite: " + line)
        if self.log:
            lines.append("cuDNN said: " + " | ".join(self.log[-8:]))
        if self.device:
            lines.append(self.device)
        for line in self.advice:
            lines.append("what would work: " + line)
        return "\n".join(lines)


def _capture() -> Any:
    from . import log

    # WARNING too: cuDNN explains empty heuristic results ("No viable engine configs ...") there.
    return log.capture(logging.WARNING)


def run_heuristics(
    graph: Graph,
    mode: Any = "a",
    *,
    device_properties: DeviceProperties | None = None,
    sm_count: int | None = None,
    device: Any = None,
) -> HeuristicsResult:
    """``CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR`` for one mode: count query, then the configs.

    The target is ``device_properties`` (deviceless: the unbound operation graph, DEVICEPROP on
    the heuristics), else the GPU ``device`` (None: the current one; the operation graph is bound
    to the calling thread's handle for it). cuDNN may return fewer configs than it counted (those
    that cannot be materialized for the target are dropped; with neither a GPU nor
    ``device_properties`` that is usually all of them).
    """
    _check_graph(graph)
    hm = _heur_mode(mode)
    if sm_count is not None and (
        isinstance(sm_count, bool) or not isinstance(sm_count, int) or sm_count < 1
    ):
        raise ValueError(f"sm_count must be a positive int, got {sm_count!r}")
    return _run_heuristics(graph, hm, _target(device_properties, device), sm_count)


def _run_heuristics(
    graph: Graph, hm: Any, target: _Target, sm_count: int | None, variant: _Variant | None = None
) -> HeuristicsResult:
    name = _MODE_NAMES[hm]
    if variant is None:
        op_graph = graph._descriptors_for(target.handle)["graph"]
    else:
        op_graph = graph._descriptors_for(target.handle, variant.name, variant.views)["graph"]
    with _capture() as records:
        heur = BackendDescriptor("ENGINEHEUR")
        try:
            heur.set("ENGINEHEUR_OPERATION_GRAPH", op_graph)
            heur.set("ENGINEHEUR_MODE", hm)
            if target.props is not None:
                heur.set("ENGINEHEUR_DEVICEPROP", target.props.descriptor)
            if sm_count is not None:
                heur.set("ENGINEHEUR_SM_COUNT_TARGET", sm_count, attr_type="INT32")
            heur.finalize()
            count = heur.element_count("ENGINEHEUR_RESULTS")
            descs = heur.get("ENGINEHEUR_RESULTS", many=True)
        except CudnnError as exc:
            heur.close()
            return HeuristicsResult(
                name, 0, [], f"{exc.status_name}: {exc.message}", _error_lines(records)
            )
        configs = []
        for i, d in enumerate(descs):
            try:
                configs.append(EngineConfig(d, mode=name, rank=i))
            except CudnnError as exc:
                _log.debug("engine config %d of %s unreadable: %s", i, name, exc)
                d.close()
    return HeuristicsResult(name, count, configs, "", _error_lines(records))


def _filter_reason(
    cfg: EngineConfig,
    *,
    deterministic: bool,
    allow_reduced_precision: bool,
    allow_runtime_compilation: bool,
    max_workspace: int | None,
) -> str:
    if deterministic and "NONDETERMINISTIC" in cfg.numerical_notes:
        return "nondeterministic"
    if not allow_reduced_precision:
        notes = _REDUCED_PRECISION_NOTES.intersection(cfg.numerical_notes)
        if notes:
            return "reduced precision (" + ", ".join(sorted(notes)) + ")"
    if not allow_runtime_compilation and "RUNTIME_COMPILATION" in cfg.behavior_notes:
        return "needs runtime compilation"
    if (
        max_workspace is not None
        and cfg.workspace_size is not None
        and cfg.workspace_size > max_workspace
    ):
        return f"workspace {cfg.workspace_size} B > max_workspace {max_workspace} B"
    return ""


def _check_filters(options: dict[str, Any]) -> dict[str, Any]:
    out = {
        "deterministic": options.pop("deterministic", False),
        "allow_reduced_precision": options.pop("allow_reduced_precision", True),
        "allow_runtime_compilation": options.pop("allow_runtime_compilation", True),
        "max_workspace": options.pop("max_workspace", None),
        "allow_known_bad": options.pop("allow_known_bad", False),
    }
    for key in (
        "deterministic",
        "allow_reduced_precision",
        "allow_runtime_compilation",
        "allow_known_bad",
    ):
        if not isinstance(out[key], bool):
            raise TypeError(f"{key} must be a bool, not {out[key]!r}")
    mw = out["max_workspace"]
    if mw is not None and (isinstance(mw, bool) or not isinstance(mw, int) or mw < 0):
        raise ValueError(f"max_workspace must be a non-negative int (bytes) or None, got {mw!r}")
    return out


def _collect(
    graph: Graph,
    *,
    heuristics: Any,
    target: _Target,
    sm_count: int | None,
    filters: dict[str, Any],
    report: PlanningReport,
    variant: _Variant | None = None,
) -> list[EngineConfig]:
    seen: set[Any] = set()
    out: list[EngineConfig] = []
    exclusions = [] if filters["allow_known_bad"] else known_bad.exclusions_for(graph, _version())
    for hm in _heur_modes(heuristics):
        res = _run_heuristics(graph, hm, target, sm_count, variant)
        report.heuristics.append(res)
        report.log.extend(line for line in res.log if line not in report.log)
        for cfg in res.configs:
            if cfg.identity in seen:
                continue  # dropped: released once unreferenced
            seen.add(cfg.identity)
            why = _filter_reason(
                cfg, **{k: v for k, v in filters.items() if k != "allow_known_bad"}
            )
            if not why:
                entry = known_bad.match(exclusions, cfg.engine_id)
                if entry is not None:
                    why = "known to give wrong results: " + entry.describe()
                    report.known_bad.append(entry)
            if why:
                report.filtered.append((f"engine {cfg.engine_id}", why))
                continue
            out.append(cfg)
    return out


def engine_configs(
    graph: Graph,
    *,
    heuristics: Any = DEFAULT_HEURISTICS,
    device_properties: DeviceProperties | None = None,
    sm_count: int | None = None,
    device: Any = None,
    deterministic: bool = False,
    allow_reduced_precision: bool = True,
    allow_runtime_compilation: bool = True,
    max_workspace: int | None = None,
    allow_known_bad: bool = False,
) -> list[EngineConfig]:
    """Engine configs from the heuristic ``heuristics`` (a mode or a list tried in order), filtered.

    The target is ``device_properties`` or the GPU ``device``, as in :func:`run_heuristics`.
    ``deterministic=True`` drops NONDETERMINISTIC engines; ``allow_reduced_precision=False`` drops
    REDUCED_PRECISION_REDUCTION and DOWN_CONVERT_INPUTS; ``allow_runtime_compilation=False`` drops
    engines with the RUNTIME_COMPILATION behaviour note; ``max_workspace`` (bytes) drops configs
    that need more. Engines in the known-bad table (:mod:`pycudnn.known_bad`) for this graph and
    cuDNN version are dropped unless ``allow_known_bad=True``. Duplicates across modes are kept
    once.
    """
    _check_graph(graph)
    filters = _check_filters(
        {
            "deterministic": deterministic,
            "allow_reduced_precision": allow_reduced_precision,
            "allow_runtime_compilation": allow_runtime_compilation,
            "max_workspace": max_workspace,
            "allow_known_bad": allow_known_bad,
        }
    )
    return _collect(
        graph,
        heuristics=heuristics,
        target=_target(device_properties, device),
        sm_count=sm_count,
        filters=filters,
        report=PlanningReport(),
    )


# --------------------------------------------------------------------------------------------------
# Targets: a GPU, or device properties
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Target:
    props: DeviceProperties | None  # set on the descriptors (deviceless, or explicitly given)
    device_id: int | None  # the GPU plans are built on, when there is one
    fingerprint: str  # what identifies the target in cache keys
    note: str  # for error messages
    # The calling thread's handle for device_id: bound to the operation graph (cuDNN plans an
    # unbound graph without DEVICEPROP for an all-zero device: smVersion 0, ARCH_MISMATCH).
    handle: Any = None


def _target(device_properties: Any, device: Any) -> _Target:
    from ._shared.cuda import driver_status

    if device_properties is not None:
        if not isinstance(device_properties, DeviceProperties):
            raise TypeError(
                "device_properties must be a pycudnn.DeviceProperties (DeviceProperties.load(path)), "
                f"not {type(device_properties).__name__}"
            )
        # The same fingerprint as the GPU itself gives (below): a plan cache directory filled
        # ahead of time from captured properties serves the real device.
        return _Target(device_properties, None, "device:" + device_properties.fingerprint, "")
    st = driver_status()
    if not st.usable:
        if device is not None:
            raise RuntimeError(f"device={device!r} was given but no GPU is usable: {st.reason}")
        return _Target(
            None,
            None,
            "no-device",
            f"no GPU is usable here ({st.reason}) and no device_properties were given: without "
            "either, cuDNN cannot materialize engine configs; pass device_properties= "
            "(DeviceProperties.load(FILE), captured on the target GPU) to plan devicelessly",
        )
    from ._shared.cuda import device_id_of, get_device
    from .handle import get_handle

    ordinal = device_id_of(device)
    get_device(ordinal).set_current()
    handle = get_handle(ordinal)
    try:
        fp = "device:" + DeviceProperties.for_device(ordinal).fingerprint
    except Exception as exc:  # fall back to what the driver says
        _log.debug("device properties of GPU %d unavailable (%s); keying by name", ordinal, exc)
        d = st.devices[ordinal] if ordinal < len(st.devices) else {}
        fp = f"gpu:{d.get('name')}:{d.get('compute_capability')}:{st.driver_version}"
    return _Target(None, ordinal, fp, "", handle)


def _deserialize_props(device_properties: Any, device: Any) -> tuple[DeviceProperties, int | None]:
    """Device properties to deserialize with: given, or queried from the GPU. Never neither
    (finalizing a deserialized plan with neither DEVICEPROP nor a handle crashes cuDNN)."""
    if device_properties is not None:
        if not isinstance(device_properties, DeviceProperties):
            raise TypeError(
                f"device_properties must be a pycudnn.DeviceProperties, not {type(device_properties).__name__}"
            )
        return device_properties, None
    from ._shared.cuda import device_id_of, driver_status, get_device

    st = driver_status()
    if not st.usable:
        raise ValueError(
            f"loading a serialized plan needs the target's device properties: no GPU is usable "
            f"here ({st.reason}); pass device_properties=DeviceProperties.load(FILE)"
        )
    ordinal = device_id_of(device)
    get_device(ordinal).set_current()
    return DeviceProperties.for_device(ordinal), ordinal


# --------------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------------

# cuDNN data type name (JSON spelling without CUDNN_DATA_) -> NumPy dtype
_DTYPE_BY_CUDNN_NAME = {name: dt for dt, name in CUDNN_DATA_TYPE_NAMES.items()}


@dataclasses.dataclass
class _Slot:
    """One non-virtual tensor of a plan, in variant-pack order."""

    uid: int
    name: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype | None
    alignment: int
    by_value: bool
    is_output: bool
    tensor: Tensor | None
    scalar: Any = None  # ctypes host buffer of a by-value tensor


def _slots_from_graph(graph: Graph) -> list[_Slot]:
    graph._resolve()
    return [
        _Slot(t.uid, t.name, t.dims, t.strides, t.dtype, t.alignment, t.by_value, t.is_output, t)
        for t in graph.tensors
        if not t.is_virtual
    ]


def _slots_from_json(data: Mapping[str, Any]) -> list[_Slot]:
    out = []
    produced: set[str] = set()
    for node in data.get("operationGraph", {}).get("nodes", []):
        # Output roles as cuDNN spells them in the JSON: "Y" for pointwise/conv forward, "dX"
        # and "dW" for the convolution gradients, "matC" for matmul.
        for key in _OUTPUT_ROLE_KEYS:
            if isinstance(node.get(key), str):
                produced.add(node[key])
    for t in data.get("operationGraph", {}).get("tensors", []):
        if t.get("isVirtual"):
            continue
        try:
            uid = int(t["name"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                "the plan's JSON names tensors in a way this version cannot map to unique ids; "
                "load it with graph= to execute it"
            ) from None
        dt = _DTYPE_BY_CUDNN_NAME.get(str(t.get("dataType", "")).removeprefix("CUDNN_DATA_"))
        out.append(
            _Slot(
                uid,
                str(uid),
                tuple(t.get("dim", ())),
                tuple(t.get("stride", ())),
                dt,
                int(t.get("ptrAlignment", 16)),
                bool(t.get("isByValue")),
                t["name"] in produced,
                None,
            )
        )
    out.sort(key=lambda s: s.uid)
    return out


# Roles an operation writes (the graph's outputs among the tensors a plan JSON lists).
_OUTPUT_ROLE_KEYS = ("Y", "DX", "DW", "C", "dX", "dW", "matC")


def _check_json_matches_graph(data: Mapping[str, Any], graph: Graph) -> str:
    """Check that a plan JSON was built for ``graph`` (as described, or as one of its equivalent
    descriptions from :mod:`pycudnn.rewrites`); returns the rewrite's note ("" for none)."""
    by_uid = {}
    for t in data.get("operationGraph", {}).get("tensors", []):
        try:
            by_uid[int(t["name"])] = t
        except (KeyError, TypeError, ValueError):
            return ""  # unknown naming: nothing to compare
    if len(by_uid) != len(graph.tensors):
        raise ValueError(
            f"the plan has {len(by_uid)} tensors but the graph has {len(graph.tensors)}: it was "
            "built for another graph"
        )
    mismatch = first = ""
    for variant in [None, *rewrites.variants(graph)]:
        mismatch = ""
        for t in graph.tensors:
            j = by_uid.get(t.uid)
            if j is None:
                raise ValueError(
                    f"the plan has no tensor {t.uid} ('{t.name}'): it was built for another graph"
                )
            dims, strides = (t.dims, t.strides) if variant is None else variant.views[t.uid]
            jd, js = tuple(j.get("dim", ())), tuple(j.get("stride", ()))
            if jd != dims or (not t.is_virtual and js != strides):
                mismatch = (
                    f"the plan was built for another graph: tensor {t.uid} ('{t.name}') is "
                    f"{list(jd)} strides {list(js)} in the plan but {list(t.dims)} strides "
                    f"{list(t.strides)} in the graph"
                )
                break
        if not mismatch:
            return "" if variant is None else variant.note
        if variant is None:
            first = mismatch
    raise ValueError(first)


def _version() -> int:
    from ._info import version

    return version()


def _version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"


def _pointer_getter(obj: Any) -> Callable[[Any], int]:
    """A fast data-pointer reader for arrays of ``type(obj)``, chosen once per type.

    C-level accessors where the library has one (``operator.attrgetter``, unbound methods), so
    that reading the pointers of a cached call costs tens of nanoseconds per array.
    """
    tp = type(obj)
    module = tp.__module__ or ""
    if hasattr(obj, "_array_view") and isinstance(getattr(obj, "ptr", None), int):
        return operator.attrgetter("ptr")  # pycudnn.DeviceArray
    if module.startswith("torch") and hasattr(tp, "data_ptr"):
        return tp.data_ptr
    if module.startswith("cupy") and isinstance(
        getattr(getattr(obj, "data", None), "ptr", None), int
    ):
        return operator.attrgetter("data.ptr")
    if module.startswith("jax") and hasattr(obj, "unsafe_buffer_pointer"):
        return operator.methodcaller("unsafe_buffer_pointer")
    if hasattr(obj, "__cuda_array_interface__"):
        return lambda o: int(o.__cuda_array_interface__["data"][0] or 0)
    return lambda o: as_array_view(o).ptr


_VARIANT_PACK_CACHE_SIZE = 16
_get_ident = threading.get_ident


class Plan:
    """A finalized execution plan (``CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR``) and how to run it.

    Built by :meth:`Graph.build` / :func:`build`, :func:`autotune`, or loaded with
    :meth:`from_json` / :meth:`load`. ``engine_id``, ``knobs``, ``numerical_notes``,
    ``behavior_notes`` describe the engine; ``workspace_size`` is
    ``EXECUTION_PLAN_WORKSPACE_SIZE``. ``close()`` releases the plan and its variant packs.
    """

    def __init__(
        self,
        descriptor: BackendDescriptor,
        *,
        graph: Graph | None,
        config: EngineConfig | None = None,
        device_properties: DeviceProperties | None = None,
        device_id: int | None = None,
        json_data: Mapping[str, Any] | None = None,
        source: str = "heuristics",
    ) -> None:
        self._desc = descriptor
        self._ptr = descriptor._as_parameter_  # a c_void_p, for the execute call
        self.graph = graph
        self.config = config
        self.device_properties = device_properties
        self.source = source
        self.autotune_results: AutotuneResults | None = None
        #: The :class:`PlanningReport` of the build that made this plan (None when loaded).
        self.report: PlanningReport | None = None
        #: The equivalent description cuDNN planned instead of the graph's own ("" if none).
        self.rewrite = ""
        self.workspace_size = int(descriptor.get("EXECUTION_PLAN_WORKSPACE_SIZE"))
        if config is None and json_data is not None:
            # A deserialized plan: its engine config reads back like a heuristic one, which gives
            # the same knobs and notes as the plan had when it was built.
            try:
                config = EngineConfig(descriptor.get("EXECUTION_PLAN_ENGINE_CONFIG"), mode=source)
            except (CudnnError, ValueError, TypeError) as exc:
                _log.debug("engine config of a deserialized plan unreadable: %s", exc)
        if config is not None:
            self.engine_id: int | None = config.engine_id
            self.knobs: dict[str, int] = dict(config.knobs)
            self.numerical_notes: tuple[str, ...] = config.numerical_notes
            self.behavior_notes: tuple[str, ...] = config.behavior_notes
        else:
            engine = (json_data or {}).get("engine", {})
            self.engine_id = int(engine["engineId"]) if "engineId" in engine else None
            self.knobs = {
                str(k).removeprefix("CUDNN_KNOB_TYPE_"): int(v)
                for k, v in dict(engine.get("knobChoices", {})).items()
            }
            self.numerical_notes = ()
            self.behavior_notes = ()
        if graph is not None:
            slots = _slots_from_graph(graph)
        elif json_data is not None:
            slots = _slots_from_json(json_data)
        else:
            raise ValueError("a Plan needs its graph or its JSON to know its tensors")
        for s in slots:
            if s.by_value:
                s.scalar = self._scalar_buffer(s)
        self._slots = slots
        self.uids: tuple[int, ...] = tuple(s.uid for s in slots)
        self._slot_by_key: dict[Any, int] = {}
        for i, s in enumerate(slots):
            self._slot_by_key[s.uid] = i
            self._slot_by_key[s.name] = i
            if s.tensor is not None:
                self._slot_by_key[s.tensor] = i
        self._uid_array = (ctypes.c_int64 * len(slots))(*self.uids)
        self._device_id = device_id
        # hot-path state
        self._keys: tuple[Any, ...] | None = None
        self._order: tuple[int, ...] = ()
        self._getters: tuple[Callable[[Any], int], ...] = ()
        self._vpacks: collections.OrderedDict[Any, tuple[Any, int, BackendDescriptor]] = (
            collections.OrderedDict()
        )
        self._handles: dict[int, Any] = {}
        self._vp_canonical: dict[Any, tuple[Any, int, BackendDescriptor]] = {}
        self._last: tuple[Any, ...] = (None, None, None, None)  # ptrs, workspace, order, entry
        self._exec = LIB.function("cudnnBackendExecute")
        self.variant_pack_builds = 0
        self._closed = False
        self._owns_descriptor = True

    # -- scalars -----------------------------------------------------------------------------
    @staticmethod
    def _scalar_buffer(slot: _Slot) -> Any:
        dt = slot.dtype if slot.dtype is not None else np.dtype(np.float32)
        buf = np.zeros(1, dtype=dt)
        if slot.tensor is not None and slot.tensor.value is not None:
            buf[0] = slot.tensor.value
        return buf

    def _scalar_setter(self, slot: _Slot) -> Callable[[Any], int]:
        buf = slot.scalar
        address = int(buf.ctypes.data)
        name = slot.name

        def set_value(value: Any) -> int:
            if value is not None:
                try:
                    buf[0] = value
                except (TypeError, ValueError):
                    raise TypeError(
                        f"tensor '{name}' is a by-value scalar: pass a number, not {type(value).__name__}"
                    ) from None
            return address

        return set_value

    def set_scalar(self, tensor: Any, value: Any) -> None:
        """Set the value of a by-value scalar tensor for the following executions."""
        slot = self._slots[self._slot_index(tensor)]
        if not slot.by_value:
            raise ValueError(f"tensor '{slot.name}' is not a by-value scalar")
        self._scalar_setter(slot)(value)

    # -- properties --------------------------------------------------------------------------
    @property
    def descriptor(self) -> BackendDescriptor:
        return self._desc

    @property
    def closed(self) -> bool:
        return self._closed or self._desc.closed

    is_closed = closed

    @property
    def device_id(self) -> int | None:
        """The GPU the plan executes on (set by the first execution), or None."""
        return self._device_id

    def tensor_names(self) -> list[str]:
        return [s.name for s in self._slots]

    def describe(self) -> str:
        knobs = ", ".join(f"{k}={v}" for k, v in self.knobs.items()) or "no knobs"
        notes = ", ".join(self.numerical_notes + self.behavior_notes) or "no notes"
        g = f"graph '{self.graph.name}'" if self.graph is not None else "no graph"
        text = (
            f"plan for {g}: engine {self.engine_id} ({knobs}; {notes}), workspace "
            f"{self.workspace_size} B, from {self.source}"
        )
        return text + (f"; cuDNN was shown the {self.rewrite}" if self.rewrite else "")

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"engine {self.engine_id}"
        return f"<pycudnn.Plan {state}, workspace {getattr(self, 'workspace_size', '?')} B>"

    def close(self) -> None:
        """Release the variant packs and the execution plan. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for _, _, vp in self._vpacks.values():
            vp.close()
        self._vpacks.clear()
        self._vp_canonical.clear()
        self._last = (None, None, None, None)
        if self._owns_descriptor:
            self._desc.close()

    def _for_graph(self, graph: Graph) -> Plan:
        """This plan for another graph object with the same structure (a plan-cache hit): shares
        the execution plan, maps the other graph's tensors. Closing the original closes both."""
        view = Plan(
            self._desc,
            graph=graph,
            config=self.config,
            device_properties=self.device_properties,
            device_id=self._device_id,
            source=self.source,
        )
        view._owns_descriptor = False
        view.autotune_results = self.autotune_results
        view.engine_id, view.knobs = self.engine_id, dict(self.knobs)
        view.numerical_notes, view.behavior_notes = self.numerical_notes, self.behavior_notes
        return view

    def __reduce_ex__(self, protocol: Any) -> Any:
        # A copy would share the execution plan and the variant packs with the original while
        # tracking their state apart: after one is closed the other would execute destroyed
        # descriptors. Serialize with to_json() instead.
        raise TypeError(
            "a Plan owns cuDNN objects and cannot be copied or pickled; use to_json()/from_json()"
        )

    def __enter__(self) -> Plan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- serialization -----------------------------------------------------------------------
    def to_json(self) -> str:
        """cuDNN's JSON of the plan (``EXECUTION_PLAN_JSON_REPRESENTATION``), with its engine,
        knobs, device profile and, for runtime-compiled engines, the compiled kernels."""
        self._check_open()
        return str(self._desc.get("EXECUTION_PLAN_JSON_REPRESENTATION", attr_type="CHAR"))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path``."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_json(
        cls,
        source: str | bytes | Mapping[str, Any],
        *,
        graph: Graph | None = None,
        device_properties: DeviceProperties | None = None,
        device: Any = None,
    ) -> Plan:
        """Deserialize a plan: set the JSON on an EXECUTION_PLAN, with DEVICEPROP, then finalize.

        ``device_properties`` describe the GPU the plan will run on; without them the current GPU
        is queried (there must be one: cuDNN crashes finalizing a deserialized plan with neither).
        A plan written by another cuDNN version raises :class:`PlanVersionError` before cuDNN
        sees it. With ``graph``, the plan's tensors are checked against the graph's and execute
        accepts the graph's tensors as keys; without, keys are unique ids (``plan.uids``).
        """
        if isinstance(source, Mapping):
            data = dict(source)
            text = json.dumps(data)
        elif isinstance(source, (str, bytes, bytearray)):
            text = source.decode() if isinstance(source, (bytes, bytearray)) else source
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"the plan JSON does not parse: {exc}") from None
        else:
            raise TypeError(f"from_json takes a JSON string or a dict, not {type(source).__name__}")
        if not isinstance(data, dict) or "cudnnVersion" not in data:
            raise ValueError("this is not a cuDNN execution-plan JSON (no 'cudnnVersion' key)")
        written, loaded = data["cudnnVersion"], _version()
        if isinstance(written, bool) or not isinstance(written, int):
            raise ValueError(
                f"not a valid cuDNN execution-plan JSON: 'cudnnVersion' must be an int, got "
                f"{written!r}"
            )
        if written != loaded:
            shown = _version_text(written) if isinstance(written, int) else repr(written)
            raise PlanVersionError(
                f"this plan was serialized by cuDNN {shown} (cudnnVersion {written}) but the loaded "
                f"library is cuDNN {_version_text(loaded)}: cuDNN loads plans only in the exact "
                "version that wrote them; rebuild it"
            )
        check_plan_json(data)  # before cuDNN sees it: some malformed plans crash it
        if graph is not None:
            if not isinstance(graph, Graph):
                raise TypeError(f"graph must be a pycudnn.Graph, not {type(graph).__name__}")
            rewrite = _check_json_matches_graph(data, graph)
        else:
            rewrite = ""
        props, ordinal = _deserialize_props(device_properties, device)
        desc = BackendDescriptor("EXECUTION_PLAN")
        try:
            desc.set("EXECUTION_PLAN_DEVICEPROP", props.descriptor)
            desc.set("EXECUTION_PLAN_JSON_REPRESENTATION", text, attr_type="CHAR")
            with _capture() as records:
                try:
                    desc.finalize()
                except CudnnError as exc:
                    lines = _error_lines(records)
                    extra = ("; cuDNN log: " + " | ".join(lines)) if lines else ""
                    raise type(exc)(
                        exc.status, exc.function, f"loading a serialized plan: {exc.message}{extra}"
                    ) from None
            desc.keep_alive(props)
            plan = cls(
                desc,
                graph=graph,
                device_properties=props,
                device_id=ordinal,
                json_data=data,
                source="json",
            )
            plan.rewrite = rewrite
            return plan
        except BaseException:
            desc.close()
            raise

    @classmethod
    def load(cls, source: str | os.PathLike[str], **options: Any) -> Plan:
        """:meth:`from_json` from a file path (or a JSON text)."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            return cls.from_json(source, **options)
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise OSError(f"cannot read a plan from {os.fspath(source)!r}: {exc}") from exc
        return cls.from_json(text, **options)

    # -- execution ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError("this execution plan is closed")

    def _slot_index(self, key: Any) -> int:
        idx = self._slot_by_key.get(key) if isinstance(key, (int, str, Tensor)) else None
        if idx is None:
            if isinstance(key, Tensor):
                if self.graph is not None and key.graph is not self.graph:
                    raise KeyError(
                        f"tensor '{key.name}' belongs to graph '{key.graph.name}', not to this "
                        f"plan's graph '{self.graph.name}'"
                    )
                raise KeyError(
                    f"tensor '{key.name}' is virtual (an intermediate): it has no memory to pass"
                )
            raise KeyError(
                f"{key!r} is not a tensor of this plan; expected one of: "
                + ", ".join(s.name for s in self._slots)
            )
        return idx

    def _bind(self, keys: tuple[Any, ...], values: Iterable[Any]) -> None:
        """Map the caller's keys (in their order) to slots, check nothing is missing, and pick a
        pointer reader per position for the array types given."""
        order = tuple(self._slot_index(k) for k in keys)
        if len(set(order)) != len(order):
            dup = next(i for i in order if order.count(i) > 1)
            raise KeyError(f"tensor '{self._slots[dup].name}' is given twice")
        missing = [s.name for i, s in enumerate(self._slots) if i not in order and not s.by_value]
        if missing:
            raise KeyError("arrays are missing for tensor(s): " + ", ".join(missing))
        self._getters = tuple(
            self._scalar_setter(self._slots[i]) if self._slots[i].by_value else _pointer_getter(v)
            for i, v in zip(order, values, strict=True)
        )
        self._order = order
        self._keys = keys

    def _thread_handle(self, values: Iterable[Any]) -> Any:
        from .handle import get_handle

        if self._device_id is None:
            self._device_id = self._array_device(values)
        h = get_handle(self._device_id)
        self._handles[_get_ident()] = h
        return h

    def _array_device(self, values: Iterable[Any]) -> int:
        for slot_index, v in zip(self._order, values, strict=True):
            if self._slots[slot_index].by_value:
                continue
            view = as_array_view(v, name=f"tensor '{self._slots[slot_index].name}'")
            if view.device_id < 0:
                raise ValueError(
                    f"tensor '{self._slots[slot_index].name}': the array is in host memory; cuDNN "
                    "executes on device arrays (CuPy, PyTorch, JAX, pycudnn.DeviceArray, ...)"
                )
            return view.device_id
        from ._shared.cuda import current_device_id

        return current_device_id()

    def execute(
        self,
        tensors: Mapping[Any, Any],
        *,
        workspace: Any = None,
        stream: Any = None,
        handle: Any = None,
    ) -> None:
        """Run the plan (``cudnnBackendExecute``) on ``stream`` (None: the default stream).

        ``tensors`` maps each non-virtual tensor (the :class:`~pycudnn.graph.Tensor`, its name or
        its unique id) to a device array exposing ``__cuda_array_interface__`` or DLPack. By-value
        scalars may be given as numbers (else their value from the graph is used). ``workspace``:
        None (a cached per-thread workspace from the device's memory pool), or a buffer/array of at
        least ``workspace_size`` bytes. ``handle``: None (this thread's handle for the arrays'
        device) or a :class:`~pycudnn.Handle` on that device.

        The first time a set of data pointers is seen, the arrays are checked against the graph
        (device, dtype, dims, strides, alignment) and a variant pack is built; afterwards the same
        pointers reuse it with no descriptor work.
        """
        if self._closed or self._desc._ptr is None:  # the descriptor may be shared (cache views)
            raise ClosedError("this execution plan is closed")
        try:
            values = tensors.values()
        except AttributeError:  # free on the hot path, unlike an isinstance(Mapping) check
            raise TypeError(
                "tensors must be a mapping of graph tensors (or names, or unique ids) to arrays, "
                f"not {type(tensors).__name__}"
            ) from None
        keys = tuple(tensors)
        if keys != self._keys:  # tuple comparison checks identity first: cheap when unchanged
            self._bind(keys, values)
        try:
            ptrs = tuple([g(v) for g, v in zip(self._getters, values, strict=True)])
        except (AttributeError, TypeError):
            # An array of another type than last time: pick new pointer readers (or, for a
            # by-value scalar, report the bad value).
            self._bind(keys, values)
            ptrs = tuple([g(v) for g, v in zip(self._getters, values, strict=True)])
        if workspace is not None:
            ws = self._user_workspace(workspace)
        if handle is None:
            handle = self._handles.get(_get_ident()) or self._thread_handle(values)
        elif not isinstance(handle, _Handle()):
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        # Handle.use_stream sets the stream only on change; comparing here first saves its call.
        if (0 if stream is None else _stream_handle(stream)) != handle._stream_ptr:
            handle.use_stream(stream)
        if workspace is None:
            size = self.workspace_size
            ws = _workspace(size, handle.device, stream) if size else 0
        last = self._last
        if last[0] == ptrs and last[1] == ws and last[2] is self._order:
            entry = last[3]
        else:
            key = (self._order, ptrs, ws)
            entry = self._vpacks.get(key)
            if entry is None:
                entry = self._new_variant_pack(key, values, handle, stream)
            else:
                self._vpacks.move_to_end(key)
            self._last = (ptrs, ws, self._order, entry)
        if entry[1] != handle.device_id:
            self._wrong_device(handle, entry[1])
        status = self._exec(handle._as_parameter_, self._ptr, entry[0])
        if status:
            check(status, "cudnnBackendExecute")

    def execute_raw(
        self,
        pointers: Sequence[int | None],
        workspace: int = 0,
        *,
        handle: Any = None,
        stream: Any = None,
    ) -> None:
        """Run the plan with raw device pointers in :attr:`uids` order (no array validation).

        ``pointers`` are device pointers (ints) in :attr:`uids` order; by-value scalars take None
        and use the plan's own host buffer (set with :meth:`set_scalar`): a raw host pointer is
        not accepted, since cuDNN reads it on the host and a wrong one crashes the process.
        ``workspace`` is a device pointer to at least :attr:`workspace_size` bytes. The variant
        pack is cached per pointer set; the pointers are checked (count, ints) only when a new set
        is seen.
        """
        if self._closed or self._desc._ptr is None:
            raise ClosedError("this execution plan is closed")
        key = (tuple(pointers), workspace)
        entry = self._vpacks.get(key)
        ptrs: list[Any] = []
        if entry is None:
            # Checked before a handle is needed, so that mistakes are reported the same with or
            # without a GPU.
            ptrs = self._raw_pointers(key[0], workspace)
        if handle is None:
            handle = self._handles.get(_get_ident())
            if handle is None:
                from .handle import get_handle

                handle = self._handles[_get_ident()] = get_handle(self._device_id)
        elif not isinstance(handle, _Handle()):
            # anything else would reach cudnnBackendExecute as a garbage cudnnHandle_t
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        if stream is not None:
            handle.use_stream(stream)
        if entry is None:
            entry = self._store_variant_pack(key, ptrs, workspace, handle.device_id)
        elif entry[1] != handle.device_id:
            self._wrong_device(handle, entry[1])
        status = self._exec(handle._as_parameter_, self._ptr, entry[0])
        if status:
            check(status, "cudnnBackendExecute")

    def _raw_pointers(self, pointers: tuple[Any, ...], workspace: Any) -> list[Any]:
        """Check the pointers given to :meth:`execute_raw`; by-value slots get the plan's buffer."""
        if len(pointers) != len(self._slots):
            raise ValueError(
                f"execute_raw takes {len(self._slots)} pointers (uids {list(self.uids)}), got "
                f"{len(pointers)}"
            )
        ptrs = list(pointers)
        for i, s in enumerate(self._slots):
            p = ptrs[i]
            if s.by_value:
                if p is not None and p != 0:
                    raise ValueError(
                        f"execute_raw: tensor '{s.name}' (uid {s.uid}) is a by-value scalar: pass "
                        "None and set its value with plan.set_scalar()"
                    )
                ptrs[i] = int(s.scalar.ctypes.data)
            elif isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < 2**64:
                raise TypeError(
                    f"execute_raw: pointer {i} (tensor '{s.name}', uid {s.uid}) must be a device "
                    f"address as a non-negative 64-bit int, got {p!r}"
                )
        if (
            isinstance(workspace, bool)
            or not isinstance(workspace, int)
            or not 0 <= workspace < 2**64
        ):
            raise TypeError(
                f"execute_raw: workspace must be a device address as a non-negative 64-bit int "
                f"(0 for none), got {workspace!r}"
            )
        if self.workspace_size and not workspace:
            raise ValueError(
                f"execute_raw: the plan needs a workspace of {self.workspace_size} bytes"
            )
        return ptrs

    def _wrong_device(self, handle: Any, device_id: int) -> None:
        raise ValueError(
            f"the handle is on device {handle.device_id} but these arrays are on device {device_id}; "
            "a handle never changes device: pass handle=None or a handle of the arrays' device"
        )

    def _user_workspace(self, workspace: Any) -> int:
        if isinstance(workspace, int):
            raise TypeError(
                "workspace must be a buffer or array whose size can be checked (a cuda.core Buffer, "
                "a DeviceArray, a CuPy/PyTorch array), not a bare pointer; use execute_raw for raw "
                "pointers"
            )
        size = getattr(workspace, "size", None)
        handle = getattr(workspace, "handle", None)
        if (
            handle is not None
            and isinstance(size, int)
            and not hasattr(workspace, "__cuda_array_interface__")
        ):
            ptr, nbytes = int(handle), size  # a cuda.core Buffer
        else:
            view = as_array_view(workspace, name="workspace")
            if view.device_id < 0:
                raise ValueError("workspace is in host memory; it must be device memory")
            ptr, nbytes = view.ptr, view.span_bytes()
        if nbytes < self.workspace_size:
            raise ValueError(
                f"workspace has {nbytes} bytes but the plan needs {self.workspace_size}"
            )
        return ptr

    def _new_variant_pack(
        self, key: Any, values: Iterable[Any], handle: Any, stream: Any
    ) -> tuple[Any, int, BackendDescriptor]:
        """Validate the arrays for this pointer set, then build and cache a variant pack."""
        from ._shared.cuda import stream_handle

        sptr = stream_handle(stream)
        ptrs = [0] * len(self._slots)
        for s_index, v in zip(self._order, values, strict=True):
            slot = self._slots[s_index]
            if slot.by_value:
                ptrs[s_index] = int(slot.scalar.ctypes.data)
                continue
            ptrs[s_index] = self._validate(slot, v, handle.device_id, sptr)
        for i, slot in enumerate(self._slots):
            if slot.by_value and not ptrs[i]:
                ptrs[i] = int(slot.scalar.ctypes.data)
        if self._device_id is None:
            self._device_id = handle.device_id
        return self._store_variant_pack(key, ptrs, key[2], handle.device_id)

    def _validate(self, slot: _Slot, value: Any, device_id: int, stream_ptr: int) -> int:
        what = f"tensor '{slot.name}'"
        view = as_array_view(value, name=what, stream_ptr=stream_ptr)
        if view.device_id < 0:
            raise ValueError(
                f"{what}: the array is in host memory; cuDNN executes on device arrays"
            )
        if view.device_id != device_id:
            raise ValueError(
                f"{what}: the array is on device {view.device_id} but the handle is on device "
                f"{device_id}"
            )
        if slot.dtype is not None and view.dtype != slot.dtype:
            raise TypeError(
                f"{what}: the array is {dtype_name(view.dtype)} but the graph says "
                f"{dtype_name(slot.dtype)}"
            )
        if tuple(view.shape) != tuple(slot.dims):
            raise ValueError(
                f"{what}: the array has shape {list(view.shape)} but the graph says {list(slot.dims)}"
            )
        for i, (n, got, want) in enumerate(zip(slot.dims, view.strides, slot.strides, strict=True)):
            if n > 1 and got != want:
                raise ValueError(
                    f"{what}: the array has strides {list(view.strides)} (elements) but the graph "
                    f"says {list(slot.strides)} (dim {i} differs); make the layouts agree"
                )
        if view.ptr % slot.alignment:
            raise ValueError(
                f"{what}: the data pointer 0x{view.ptr:x} is not aligned to the {slot.alignment} "
                "bytes the graph promises (set alignment= on the tensor to promise less)"
            )
        if slot.is_output and view.readonly:
            raise ValueError(f"{what}: the array is read-only but the plan writes it")
        return view.ptr

    def _store_variant_pack(
        self, key: Any, ptrs: Sequence[int], workspace: int, device_id: int
    ) -> tuple[Any, int, BackendDescriptor]:
        # The same pointers given under other keys or in another order share one pack.
        canonical = (tuple(ptrs), workspace)
        entry = self._vp_canonical.get(canonical)
        if entry is None or entry[1] != device_id:
            vp = BackendDescriptor("VARIANT_PACK")
            try:
                vp.set("VARIANT_PACK_UNIQUE_IDS", self.uids, attr_type="INT64")
                vp.set(
                    "VARIANT_PACK_DATA_POINTERS", [p or None for p in ptrs], attr_type="VOID_PTR"
                )
                vp.set("VARIANT_PACK_WORKSPACE", workspace or None, attr_type="VOID_PTR")
                vp.finalize()
            except BaseException:
                vp.close()
                raise
            # The pack holds raw pointers only; the by-value buffers it points at live in the
            # slots. c_void_p objects pass through ctypes' argument conversion without work.
            entry = (vp._as_parameter_, device_id, vp)
            self._vp_canonical[canonical] = entry
            self.variant_pack_builds += 1
        self._vpacks[key] = entry
        while len(self._vpacks) > _VARIANT_PACK_CACHE_SIZE:
            _, evicted = self._vpacks.popitem(last=False)
            if self._last[3] is evicted:
                self._last = (None, None, None, None)
            if not any(e is evicted for e in self._vpacks.values()):
                self._vp_canonical = {
                    k: e for k, e in self._vp_canonical.items() if e is not evicted
                }
                evicted[2].close()
        return entry


@functools.cache
def _Handle() -> type:
    from .handle import Handle

    return Handle


def _stream_handle(stream: Any) -> int:
    from ._shared.cuda import stream_handle

    return stream_handle(stream)


def _workspace(nbytes: int, device: Any, stream: Any) -> int:
    from ._shared.memory import workspace

    return workspace(nbytes, device=device, stream=stream)


# --------------------------------------------------------------------------------------------------
# Building plans
# --------------------------------------------------------------------------------------------------


def _finalize_plan(cfg: EngineConfig, target: _Target, graph: Graph) -> Plan:
    desc = BackendDescriptor("EXECUTION_PLAN")
    try:
        desc.set("EXECUTION_PLAN_ENGINE_CONFIG", cfg.descriptor)
        if target.props is not None:
            desc.set("EXECUTION_PLAN_DEVICEPROP", target.props.descriptor)
            desc.keep_alive(target.props)
        desc.finalize()
        return Plan(
            desc,
            graph=graph,
            config=cfg,
            device_properties=target.props,
            device_id=target.device_id,
        )
    except BaseException:
        desc.close()
        raise


def _plans(
    graph: Graph,
    target: _Target,
    options: dict[str, Any],
    report: PlanningReport,
    *,
    limit: int | None,
) -> list[Plan]:
    heuristics = options.pop("heuristics", DEFAULT_HEURISTICS)
    sm_count = options.pop("sm_count", None)
    filters = _check_filters(options)
    if options:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(options))}")
    if target.device_id is None and target.props is None and report is not None:
        report.device = target.note
        return _plans_for(
            graph,
            target,
            heuristics=heuristics,
            sm_count=sm_count,
            filters=filters,
            report=report,
            limit=limit,
            variant=None,
        )
    plans = _plans_for(
        graph,
        target,
        heuristics=heuristics,
        sm_count=sm_count,
        filters=filters,
        report=report,
        limit=limit,
        variant=None,
    )
    if plans:
        return plans
    # No engine for the graph as described: try the equivalent descriptions cuDNN has engines for.
    for variant in rewrites.variants(graph):
        plans = _plans_for(
            graph,
            target,
            heuristics=heuristics,
            sm_count=sm_count,
            filters=filters,
            report=report,
            limit=limit,
            variant=variant,
        )
        if plans:
            report.rewrites.append(f"planned the {variant.note}")
            for p in plans:
                p.rewrite = variant.note
            _log.info("graph '%s': %s", graph.name, variant.note)
            return plans
        report.rewrites.append(f"tried the {variant.note}: no engine either")
    return []


def _plans_for(
    graph: Graph,
    target: _Target,
    *,
    heuristics: Any,
    sm_count: int | None,
    filters: dict[str, Any],
    report: PlanningReport,
    limit: int | None,
    variant: _Variant | None,
) -> list[Plan]:
    plans: list[Plan] = []
    with _capture() as records:
        configs = _collect(
            graph,
            heuristics=heuristics,
            target=target,
            sm_count=sm_count,
            filters=filters,
            report=report,
            variant=variant,
        )
        if target.props is None and target.device_id is None:
            # No GPU and no DEVICEPROP: cuDNN cannot finalize plans here (and configs are empty).
            for cfg in configs:
                report.failed.append((f"engine {cfg.engine_id}", "no target device"))
            configs = []
        for cfg in configs:
            if limit is not None and len(plans) >= limit:
                break
            try:
                plan = _finalize_plan(cfg, target, graph)
            except CudnnError as exc:
                report.failed.append(
                    (f"engine {cfg.engine_id}", f"{exc.status_name}: {exc.message}")
                )
                continue
            mw = filters["max_workspace"]
            if mw is not None and plan.workspace_size > mw:
                report.filtered.append(
                    (
                        f"engine {cfg.engine_id}",
                        f"workspace {plan.workspace_size} B > max_workspace {mw} B",
                    )
                )
                plan.close()
                continue
            plan.report = report
            plans.append(plan)
    for line in _error_lines(records, limit=12):
        if line not in report.log:
            report.log.append(line)
    return plans


def _not_supported(graph: Graph, report: PlanningReport) -> GraphNotSupportedError:
    for entry in dict.fromkeys(report.known_bad):
        if entry.advice and entry.advice not in report.advice:
            report.advice.append(entry.advice)
    for line in rewrites.advice(graph):
        if line not in report.advice:
            report.advice.append(line)
    message = f"no engine supports graph '{graph.name}'\n" + report.describe()
    return GraphNotSupportedError(3000, "cudnnBackendFinalize", message, report)


def _cache_key(
    graph: Graph, target: _Target, options: Mapping[str, Any], *, autotuned: bool
) -> str:
    filters = {
        k: options.get(k, d)
        for k, d in (
            ("deterministic", False),
            ("allow_reduced_precision", True),
            ("allow_runtime_compilation", True),
            ("max_workspace", None),
            ("sm_count", None),
            ("allow_known_bad", False),
        )
    }
    modes = [_MODE_NAMES[m] for m in _heur_modes(options.get("heuristics", DEFAULT_HEURISTICS))]
    payload = {
        "graph": graph.key(),
        # Entries that apply change which plan is chosen: a table edit must not serve old plans.
        "known_bad": [dataclasses.astuple(e) for e in known_bad.exclusions_for(graph, _version())],
        "cudnn": _version(),
        "target": target.fingerprint,
        "heuristics": modes,
        "filters": filters,
        "autotuned": autotuned,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def build_all(
    graph: Graph,
    *,
    device_properties: DeviceProperties | None = None,
    device: Any = None,
    limit: int | None = None,
    **options: Any,
) -> list[Plan]:
    """Every execution plan that finalizes, in heuristic order (for autotuning or inspection).

    Options as for :func:`build`; ``limit`` stops after that many plans. Raises
    :class:`GraphNotSupportedError` when none finalizes.
    """
    _check_graph(graph)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    target = _target(device_properties, device)
    report = PlanningReport()
    plans = _plans(graph, target, dict(options), report, limit=limit)
    if not plans:
        raise _not_supported(graph, report)
    return plans


def build(
    graph: Graph,
    *,
    heuristics: Any = DEFAULT_HEURISTICS,
    device_properties: DeviceProperties | None = None,
    device: Any = None,
    deterministic: bool = False,
    max_workspace: int | None = None,
    allow_reduced_precision: bool = True,
    allow_runtime_compilation: bool = True,
    allow_known_bad: bool = False,
    sm_count: int | None = None,
    cache: PlanCache | bool | None = None,
) -> Plan:
    """The execution plan for ``graph``: from the plan cache, else the first heuristic config
    (modes ``heuristics`` tried in order) that passes the filters and finalizes.

    ``device_properties``: plan for that GPU without one (deviceless); else the GPU ``device``
    (None: the current one). ``cache``: None (this thread's in-memory cache), a
    :class:`PlanCache` (memory and, if it has a directory, disk), or False (no caching).
    Filters as in :func:`engine_configs` (engines in the known-bad table are dropped unless
    ``allow_known_bad``). When the graph as described has no engine, equivalent descriptions
    cuDNN has engines for are tried (:mod:`pycudnn.rewrites`; ``plan.rewrite`` says which). The
    plan's ``report`` is the :class:`PlanningReport`. Raises :class:`GraphNotSupportedError` with
    the modes tried, the configs each returned, what was excluded and why, cuDNN's own
    explanation and what would work instead, when no plan can be built.
    """
    _check_graph(graph)
    options = {
        "heuristics": heuristics,
        "deterministic": deterministic,
        "max_workspace": max_workspace,
        "allow_reduced_precision": allow_reduced_precision,
        "allow_runtime_compilation": allow_runtime_compilation,
        "allow_known_bad": allow_known_bad,
        "sm_count": sm_count,
    }
    target = _target(device_properties, device)
    pc = _resolve_cache(cache)
    key = None
    if pc is not None:
        key = _cache_key(graph, target, options, autotuned=False)
        plan = pc._lookup(key, graph, target)
        if plan is not None:
            return plan
    report = PlanningReport()
    plans = _plans(graph, target, dict(options), report, limit=1)
    if not plans:
        raise _not_supported(graph, report)
    plan = plans[0]
    if pc is not None and key is not None:
        pc._store(key, plan, target)
    return plan


# --------------------------------------------------------------------------------------------------
# Plan cache
# --------------------------------------------------------------------------------------------------


class PlanCache:
    """Plans by key: a bounded in-memory LRU, and optionally a directory of plan JSON files.

    The key covers everything that changes a plan: the graph's structure and attributes, dims,
    strides, dtypes and alignment of every tensor, the target device's properties (the GPU's, or
    the given :class:`DeviceProperties`), the cuDNN version, the heuristic modes and the filters.
    In memory, plans are also tied to the GPU ordinal they were built on.

    On disk each plan is cuDNN's execution-plan JSON in ``<directory>/<key>.json``: another
    process with the same graph, library and device loads it without running heuristics. A file
    written by another cuDNN version is refused (its ``cudnnVersion`` is read first), logged, and
    rebuilt. ``stats`` counts memory hits, disk hits, misses, stores and refusals.

    A PlanCache may be shared by threads (it locks), but the plans it hands out are not
    thread-safe; the default cache (:func:`default_plan_cache`) is per thread.
    """

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, *, max_size: int = 128
    ) -> None:
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ValueError(f"max_size must be a positive int, got {max_size!r}")
        self.directory = None if directory is None else Path(directory)
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self.max_size = max_size
        self._plans: collections.OrderedDict[str, Plan] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.stats: dict[str, int] = dict.fromkeys(
            ("memory_hits", "disk_hits", "misses", "stores", "version_mismatches", "disk_errors"), 0
        )

    def __len__(self) -> int:
        return len(self._plans)

    def clear(self) -> None:
        """Forget the in-memory plans (files on disk stay)."""
        with self._lock:
            self._plans.clear()

    def path_for(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{key}.json"

    @staticmethod
    def _memory_key(key: str, target: _Target) -> str:
        return f"{key}@{target.device_id}"

    def _lookup(self, key: str, graph: Graph, target: _Target) -> Plan | None:
        mkey = self._memory_key(key, target)
        with self._lock:
            plan = self._plans.get(mkey)
            if plan is not None and not plan.closed:
                self._plans.move_to_end(mkey)
                self.stats["memory_hits"] += 1
                return plan if plan.graph is graph else plan._for_graph(graph)
        path = self.path_for(key)
        if path is not None and path.is_file():
            plan = self._load_file(path, graph, target)
            if plan is not None:
                self.stats["disk_hits"] += 1
                self._remember(mkey, plan)
                return plan
        self.stats["misses"] += 1
        return None

    def _load_file(self, path: Path, graph: Graph, target: _Target) -> Plan | None:
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text)
        except (OSError, ValueError) as exc:
            self.stats["disk_errors"] += 1
            _log.warning("plan cache: ignoring unreadable %s (%s); rebuilding", path, exc)
            return None
        written = data.get("cudnnVersion") if isinstance(data, dict) else None
        if written != _version():
            self.stats["version_mismatches"] += 1
            _log.warning(
                "plan cache: %s was written by cuDNN %s, this is %s; plans load only in the exact "
                "version that wrote them: rebuilding it",
                path,
                _version_text(written) if isinstance(written, int) else written,
                _version_text(_version()),
            )
            return None
        try:
            return Plan.from_json(
                data, graph=graph, device_properties=target.props, device=target.device_id
            )
        except (CudnnError, ValueError) as exc:
            self.stats["disk_errors"] += 1
            _log.warning("plan cache: %s could not be loaded (%s); rebuilding", path, exc)
            return None

    def _remember(self, mkey: str, plan: Plan) -> None:
        with self._lock:
            self._plans[mkey] = plan
            self._plans.move_to_end(mkey)
            while len(self._plans) > self.max_size:
                self._plans.popitem(last=False)  # the plan closes when its last user drops it

    def _store(self, key: str, plan: Plan, target: _Target) -> None:
        self._remember(self._memory_key(key, target), plan)
        self.stats["stores"] += 1
        path = self.path_for(key)
        if path is not None:
            try:
                tmp = path.with_suffix(f".tmp{os.getpid()}")
                tmp.write_text(plan.to_json(), encoding="utf-8")
                os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new
            except (OSError, CudnnError) as exc:
                self.stats["disk_errors"] += 1
                _log.warning("plan cache: could not write %s: %s", path, exc)

    def __repr__(self) -> str:
        where = f" in {self.directory}" if self.directory is not None else ""
        return f"<pycudnn.PlanCache {len(self)} plan(s){where}, max {self.max_size}>"


_thread_caches = threading.local()


def default_plan_cache() -> PlanCache:
    """This thread's in-memory plan cache (used by ``build`` when no cache is given)."""
    pc: PlanCache | None = getattr(_thread_caches, "cache", None)
    if pc is None:
        pc = _thread_caches.cache = PlanCache(None, max_size=256)
    return pc


def _resolve_cache(cache: Any) -> PlanCache | None:
    if cache is None or cache is True:
        return default_plan_cache()
    if cache is False:
        return None
    if isinstance(cache, PlanCache):
        return cache
    raise TypeError(f"cache must be None, True, False or a PlanCache, not {type(cache).__name__}")


# --------------------------------------------------------------------------------------------------
# Autotuning
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class AutotuneResult:
    """One timed candidate."""

    engine_id: int | None
    knobs: dict[str, int]
    notes: tuple[str, ...]
    workspace_size: int
    time_ms: float | None  # median of the repeats; None when the candidate failed
    times_ms: list[float] = dataclasses.field(default_factory=list)
    error: str = ""


class AutotuneResults(list[AutotuneResult]):
    """The autotuning table, fastest first; ``print()`` it for a readable version."""

    def __str__(self) -> str:
        header = f"{'#':>3} {'engine':>6} {'median ms':>10} {'workspace':>10}  knobs / notes"
        lines = [header, "-" * len(header)]
        for i, r in enumerate(self):
            t = f"{r.time_ms:10.4f}" if r.time_ms is not None else f"{'failed':>10}"
            knobs = ",".join(f"{k}={v}" for k, v in r.knobs.items())
            extra = r.error or " ".join(r.notes)
            lines.append(
                f"{i:>3} {r.engine_id!s:>6} {t} {r.workspace_size:>10}  {knobs} {extra}".rstrip()
            )
        return "\n".join(lines)

    @property
    def best(self) -> AutotuneResult | None:
        return self[0] if self and self[0].time_ms is not None else None


_PROGRESS_MIN_CANDIDATES = 16


def _progress(total: int, progress: Any) -> Any:
    if progress is False:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="autotune", unit="plan", leave=False)


def autotune(
    graph: Graph,
    tensors: Mapping[Any, Any],
    *,
    heuristics: Any = ("a", "b", "fallback"),
    candidates: int | Sequence[Plan] | None = None,
    warmup: int = 3,
    repeats: int = 10,
    stream: Any = None,
    handle: Any = None,
    device: Any = None,
    progress: bool | None = None,
    cache: PlanCache | bool | None = None,
    **filters: Any,
) -> Plan:
    """Time every candidate plan on the GPU with CUDA events and return the fastest.

    ``candidates``: None (every plan the heuristics give), an int (the first N), or a list of
    plans. Each runs ``warmup`` times, then ``repeats`` times between timing events; the median
    decides. The outputs in ``tensors`` are overwritten. The winner carries ``autotune_results``
    (an :class:`AutotuneResults` table). A progress bar (tqdm, if installed) appears when the
    run takes more than a second, unless ``progress=False``. The result is cached like ``build``.
    """
    _check_graph(graph)
    from ._shared.cuda import driver_status, require_cuda_core
    from ._shared.memory import stream_object

    for name, v in (("warmup", warmup), ("repeats", repeats)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "warmup" else 1):
            raise ValueError(f"{name} must be an int >= {0 if name == 'warmup' else 1}, got {v!r}")
    if not isinstance(tensors, Mapping):
        raise TypeError(
            f"tensors must be a mapping of graph tensors to arrays, not {type(tensors).__name__}"
        )
    st = driver_status()
    if not st.usable:
        raise RuntimeError(
            f"autotuning times plans on the GPU, and none is usable here: {st.reason}"
        )
    options = {"heuristics": heuristics, **filters}
    if handle is not None:
        from .handle import Handle

        if not isinstance(handle, Handle):
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        device = handle.device_id if device is None else device
    target = _target(None, device)
    if handle is not None:
        target.handle = handle  # plan with the handle the plans will be timed on
    pc = _resolve_cache(cache)
    key = None
    if pc is not None and not isinstance(candidates, Sequence):
        key = _cache_key(graph, target, {**options}, autotuned=True)
        cached = pc._lookup(key, graph, target)
        if cached is not None:
            return cached
    if isinstance(candidates, Sequence):
        plans = list(candidates)
        if not plans or not all(isinstance(p, Plan) for p in plans):
            raise TypeError("candidates must be a non-empty list of Plan objects")
    else:
        if candidates is not None and (
            isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1
        ):
            raise ValueError(
                f"candidates must be a positive int, a list of plans or None, got {candidates!r}"
            )
        report = PlanningReport()
        plans = _plans(graph, target, dict(options), report, limit=candidates)
        if not plans:
            raise _not_supported(graph, report)

    core = require_cuda_core()
    if handle is None:
        from .handle import get_handle

        handle = get_handle(target.device_id)
    s = stream_object(stream, handle.device)
    event_options = core.EventOptions(timing_enabled=True)
    results: list[tuple[AutotuneResult, Plan]] = []
    bar = None
    start = time.perf_counter()
    for i, plan in enumerate(plans):
        row = AutotuneResult(
            plan.engine_id,
            dict(plan.knobs),
            plan.numerical_notes + plan.behavior_notes,
            plan.workspace_size,
            None,
        )
        try:
            for _ in range(warmup):
                plan.execute(tensors, stream=s, handle=handle)
            events = []
            for _ in range(repeats):
                e0 = s.record(options=event_options)
                plan.execute(tensors, stream=s, handle=handle)
                events.append((e0, s.record(options=event_options)))
            events[-1][1].sync()
            row.times_ms = [float(e1 - e0) for e0, e1 in events]
            row.time_ms = statistics.median(row.times_ms)
        except CudnnError as exc:
            row.error = f"{exc.status_name}: {exc.message}"
        results.append((row, plan))
        # A bar once the run takes more than a moment: over a second, or many candidates.
        slow = time.perf_counter() - start > 1.0 or len(plans) > _PROGRESS_MIN_CANDIDATES
        if bar is None and progress is not False and (progress or slow):
            bar = _progress(len(plans), progress)
            if bar is not None:
                bar.update(i)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    timed = [(r, p) for r, p in results if r.time_ms is not None]
    if not timed:
        raise CudnnNotSupportedError(
            3000,
            "cudnnBackendExecute",
            "every candidate plan failed to execute: " + "; ".join(r.error for r, _ in results),
        )
    timed.sort(key=lambda rp: rp[0].time_ms)  # type: ignore[arg-type, return-value]
    failed = [(r, p) for r, p in results if r.time_ms is None]
    best = timed[0][1]
    best.source = "autotune"
    best.autotune_results = AutotuneResults([r for r, _ in timed + failed])
    for _, p in timed[1:] + failed:
        if p is not best and not isinstance(candidates, Sequence):
            p.close()
    if pc is not None and key is not None:
        pc._store(key, best, target)
    return best


# --------------------------------------------------------------------------------------------------
# Smoke checks (python -m pycudnn smoke)
# --------------------------------------------------------------------------------------------------


def _smoke_graphs() -> dict[str, Graph]:
    g = Graph("conv_bias_relu")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
    g.relu(g.add(g.conv_fprop(x, w, padding=1, name="conv"), b, name="bias_add"), name="relu")
    m = Graph("matmul")
    a = m.tensor([1, 64, 32], dtype="float16", name="a")
    bb = m.tensor([1, 32, 48], dtype="float16", name="b")
    m.matmul(a, bb, name="mm", out_dtype="float32")
    return {"conv_bias_relu": g, "matmul": m}


def _smoke_deviceprops() -> tuple[DeviceProperties | None, str]:
    env = os.environ.get("PYCUDNN_DEVICEPROPS")
    if env:
        return DeviceProperties.load(env), env
    folder = Path(__file__).resolve().parent.parent / "tests" / "data" / "deviceprops"
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if files:
        return DeviceProperties.load(files[0]), str(files[0])
    return None, ""


def _smoke_heuristics() -> dict[str, Any]:
    from ._shared.cuda import driver_status
    from ._shared.smoke import SkipCheck

    if not driver_status().library_found:
        raise SkipCheck("cuDNN's backend needs libcuda.so.1 (Debian: libcuda1), not installed")
    out: dict[str, Any] = {}
    parts = []
    for name, g in _smoke_graphs().items():
        counts = {}
        for mode in ("a", "fallback"):
            res = g.heuristics(mode)
            counts[mode] = [res.count, res.returned]
        out[name] = {"engines": g.engine_count, "heuristics": counts}
        parts.append(
            f"{name}: {g.engine_count} engines, "
            + ", ".join(f"{m} {c[0]} counted/{c[1]} returned" for m, c in counts.items())
        )
    out["summary"] = "graphs finalized; " + "; ".join(parts)
    return out


def _smoke_deviceless() -> dict[str, Any]:
    from ._shared.cuda import driver_status
    from ._shared.smoke import SkipCheck

    if not driver_status().library_found:
        raise SkipCheck("cuDNN's backend needs libcuda.so.1 (Debian: libcuda1), not installed")
    props, where = _smoke_deviceprops()
    if props is None:
        raise SkipCheck(
            "no device-properties JSON (set PYCUDNN_DEVICEPROPS or add one captured with "
            "`python -m pycudnn deviceprops --save FILE` to tests/data/deviceprops/)"
        )
    parts: list[str] = []
    data: dict[str, Any] = {}
    for name, g in _smoke_graphs().items():
        plan = g.build(device_properties=props, cache=False)
        text = plan.to_json()
        data[name] = {
            "engine_id": plan.engine_id,
            "workspace": plan.workspace_size,
            "json_bytes": len(text),
        }
        parts.append(f"{name}: engine {plan.engine_id}, {len(text)} B JSON")
        plan.close()
    data["summary"] = f"plans for {props.device_name} (from {where}): " + "; ".join(parts)
    return data


def _smoke_gpu_conv() -> dict[str, Any]:
    return _smoke_gpu("conv_bias_relu")


def _smoke_gpu_matmul() -> dict[str, Any]:
    return _smoke_gpu("matmul")


def _smoke_gpu(which: str) -> dict[str, Any]:
    from ._shared.cuda import driver_status
    from ._shared.smoke import SkipCheck

    st = driver_status()
    if not st.usable:
        raise SkipCheck(f"executing a plan needs a GPU: {st.reason}", needs_gpu=True)
    from ._shared.device_array import DeviceArray

    rng = np.random.default_rng(0)
    g = _smoke_graphs()[which]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype[Any]
    plan = g.build(cache=False)
    if which == "conv_bias_relu":
        x = rng.standard_normal((1, 32, 16, 16)).astype(np.float16)
        w = (rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float16)
        b = rng.standard_normal((1, 32, 1, 1)).astype(np.float16)
        ref = np.maximum(
            _conv2d_reference(x.astype(np.float32), w.astype(np.float32), 1) + b.astype(np.float32),
            0,
        )
        arrays = {"x": _nhwc(x), "w": _nhwc(w), "bias": _nhwc(b)}
        out_name, out_shape, out_dtype = "relu.y", (1, 32, 16, 16), np.dtype(np.float16)
    else:
        a = rng.standard_normal((1, 64, 32)).astype(np.float16)
        bm = rng.standard_normal((1, 32, 48)).astype(np.float16)
        ref = a.astype(np.float32) @ bm.astype(np.float32)
        arrays = {"a": a, "b": bm}
        out_name, out_shape, out_dtype = "mm.c", (1, 64, 48), np.dtype(np.float32)
    dev = {k: DeviceArray.from_numpy(v) for k, v in arrays.items()}
    out_tensor = g[out_name]
    y = DeviceArray.empty(out_shape, out_dtype, strides=out_tensor.strides)
    dev[out_name] = y
    plan.execute(dev)
    plan.execute(dev)
    t0 = time.perf_counter()
    n = 20
    for _ in range(n):
        plan.execute(dev)
    got = y.to_numpy().astype(np.float32)
    ms = (time.perf_counter() - t0) / n * 1e3
    err = float(np.max(np.abs(got - ref)))
    tol = 2e-2 * max(1.0, float(np.max(np.abs(ref))))
    if not err <= tol:
        raise AssertionError(f"{which}: max error {err:.3g} exceeds {tol:.3g}")
    plan.close()
    return {
        "summary": f"{which} on GPU: engine {plan.engine_id}, max |error| {err:.3g} vs NumPy, "
        f"{ms:.3f} ms per call (host-timed, incl. sync once)",
        "engine_id": plan.engine_id,
        "max_error": err,
        "ms_per_call": ms,
    }


def _nhwc(a: np.ndarray) -> np.ndarray:
    """A logical-NCHW array stored channels-last (NHWC memory)."""
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _conv2d_reference(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Cross-correlation, stride 1, symmetric padding (NumPy, float32)."""
    n, _, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - r + 1, wd + 2 * pad - s + 1
    out = np.zeros((n, k, oh, ow), dtype=np.float32)
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i : i + oh, j : j + ow]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return out


def smoke_checks() -> list[tuple[str, Callable[[], Any]]]:
    """The graph API's checks for ``python -m pycudnn smoke``."""
    return [
        ("graph heuristics (conv+bias+ReLU, matmul)", _smoke_heuristics),
        ("deviceless plans from device properties", _smoke_deviceless),
        ("graph conv+bias+ReLU on the GPU vs NumPy", _smoke_gpu_conv),
        ("graph matmul on the GPU vs NumPy", _smoke_gpu_matmul),
    ]
