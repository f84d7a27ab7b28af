"""Heuristics and filters: engine configurations for a graph and a target."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from _nvbind.lazy import cached_attribute
from _nvbind.shutdown import library_call
from _nvbind.suggest import did_you_mean

from .. import _bindings, known_bad
from .._lib import LIB
from .._versions import HEURISTICS_WITHOUT_TARGET_SINCE
from ..backend import BackendDescriptor
from ..deviceprops import DeviceProperties, _error_lines
from ..errors import CudnnError, UnsupportedByLibraryError
from ..opgraph import OperationGraph
from ..opgraph.rewrites import Variant as _Variant
from .exclusions import exclusion_reason, normalize_exclusions
from .options import PlanFilters, PlanOptions, plan_values, takes_plan_options
from .report import HeuristicsResult, PlanningReport, _capture, _check_graph
from .serialization import _version
from .targets import _Target, _target

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["HEURISTIC_MODES", "EngineConfig", "KnobInfo", "engine_configs", "run_heuristics"]

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
    hint = did_you_mean(mode, HEURISTIC_MODES) if isinstance(mode, str) else ""
    raise ValueError(
        f"unknown heuristic mode {mode!r}{hint} (the modes: {', '.join(HEURISTIC_MODES)})"
    )


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


def _knob_infos(engine: BackendDescriptor) -> list[KnobInfo]:
    """The knobs of a finalized ``ENGINE`` descriptor (``ENGINE_KNOB_INFO``, read with
    ``cudnnBackendGetAttribute``)."""
    out = []
    for info in engine.get("ENGINE_KNOB_INFO", many=True):
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


def _note_names(values: Iterable[Any]) -> tuple[str, ...]:
    return tuple(v.name if hasattr(v, "name") else str(v) for v in values)


#: Knob choices read first: every engine of cuDNN 9 has fewer, and a full read (one descriptor per
#: knob type) is only made when these slots all come back filled.
_FIRST_KNOB_SLOTS = 8


def _knob_choices(descriptor: BackendDescriptor) -> dict[str, int]:
    """``ENGINECFG_KNOB_CHOICES`` as ``{knob name: value}``. A count query on it answers 0, and
    cuDNN fills as many descriptors as it is given, up to the config's knob count, without saying
    whether more were left: ask for a few, and for one per knob type when those few all fill."""
    for slots in (_FIRST_KNOB_SLOTS, _KNOB_TYPE_COUNT):
        choices = descriptor.get("ENGINECFG_KNOB_CHOICES", count=slots)
        if len(choices) < slots or slots == _KNOB_TYPE_COUNT:
            break
        for choice in choices:
            choice.close()
    knobs: dict[str, int] = {}
    for choice in choices:
        ktype = choice.get("KNOB_CHOICE_KNOB_TYPE")
        knobs[ktype.name if hasattr(ktype, "name") else str(ktype)] = int(
            choice.get("KNOB_CHOICE_KNOB_VALUE")
        )
        choice.close()
    return knobs


class EngineConfig:
    """One engine configuration (``CUDNN_BACKEND_ENGINECFG_DESCRIPTOR``) from the heuristics.

    ``engine_id`` (``ENGINE_GLOBAL_INDEX``), ``knobs`` (``{knob name: value}`` from
    ``ENGINECFG_KNOB_CHOICES``), ``numerical_notes`` and ``behavior_notes`` (note names, e.g.
    ``TENSOR_CORE``, ``NONDETERMINISTIC``, ``RUNTIME_COMPILATION``), ``workspace_size`` (bytes, from
    ``ENGINECFG_WORKSPACE_SIZE``; None where the library cannot say), ``mode`` (the heuristic
    that proposed it) and ``rank`` (its position in that heuristic's list).

    Each is read from cuDNN (``cudnnBackendGetAttribute``) the first time it is asked for and then
    kept: planning reads only what it needs of the configs it does not build (a conv's heuristics
    return ~40 configs, whose knobs alone took ~2,000 descriptors to read eagerly).
    """

    def __init__(self, descriptor: BackendDescriptor, *, mode: str = "", rank: int = 0) -> None:
        self.descriptor = descriptor
        self.mode = mode
        self.rank = rank

    def _read(self) -> EngineConfig:
        """Read every property now (raising the ``CudnnError`` of one that cannot be read): for a
        config that is built, or read back from a plan, where an unreadable one must fail here."""
        for name in ("engine_id", "numerical_notes", "behavior_notes", "knobs", "workspace_size"):
            getattr(self, name)
        return self

    @cached_attribute
    def _engine(self) -> BackendDescriptor:
        engine: BackendDescriptor = self.descriptor.get("ENGINECFG_ENGINE")
        return engine

    @cached_attribute
    def engine_id(self) -> int:
        """``ENGINE_GLOBAL_INDEX`` of the config's engine."""
        return int(self._engine.get("ENGINE_GLOBAL_INDEX"))

    @cached_attribute
    def numerical_notes(self) -> tuple[str, ...]:
        """``ENGINE_NUMERICAL_NOTE`` names."""
        return _note_names(self._engine.get("ENGINE_NUMERICAL_NOTE", many=True))

    @cached_attribute
    def behavior_notes(self) -> tuple[str, ...]:
        """``ENGINE_BEHAVIOR_NOTE`` names."""
        return _note_names(self._engine.get("ENGINE_BEHAVIOR_NOTE", many=True))

    @cached_attribute
    def knobs(self) -> dict[str, int]:
        """``{knob name: value}`` (``ENGINECFG_KNOB_CHOICES``)."""
        return _knob_choices(self.descriptor)

    @cached_attribute
    def workspace_size(self) -> int | None:
        """``ENGINECFG_WORKSPACE_SIZE`` in bytes; None where the library cannot say."""
        try:
            return int(self.descriptor.get("ENGINECFG_WORKSPACE_SIZE"))
        except (CudnnError, KeyError, ValueError, UnsupportedByLibraryError):  # before 9.2
            return None

    @property
    def identity(self) -> tuple[int, tuple[tuple[str, int], ...]]:
        """``(engine_id, sorted knob choices)``: equal for configs that are the same engine setup."""
        return self.engine_id, tuple(sorted(self.knobs.items()))

    def knob_info(self) -> list[KnobInfo]:
        """The engine's tunable knobs and their ranges (``ENGINE_KNOB_INFO``)."""
        return _knob_infos(self._engine)

    def describe(self) -> str:
        """One readable line: engine id, knobs, notes, workspace and heuristic mode."""
        knobs = ", ".join(f"{k}={v}" for k, v in self.knobs.items()) or "no knobs"
        notes = ", ".join(self.numerical_notes + self.behavior_notes) or "no notes"
        ws = "?" if self.workspace_size is None else f"{self.workspace_size} B"
        return f"engine {self.engine_id} ({knobs}; {notes}; workspace {ws}; from heuristic {self.mode})"

    def __copy__(self) -> Any:
        # A copy would hold the same ENGINECFG descriptor, which closing either would destroy under
        # the other. deepcopy and pickle already fail on the descriptor.
        raise TypeError(
            "an EngineConfig owns a cuDNN descriptor and cannot be copied; use the original"
        )

    def __repr__(self) -> str:
        return f"<pycudnn.plan.EngineConfig {self.describe()}>"


def run_heuristics(
    graph: OperationGraph,
    mode: Any = "a",
    *,
    device_properties: DeviceProperties | None = None,
    sm_count: int | None = None,
    device: Any = None,
) -> HeuristicsResult[EngineConfig]:
    """``CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR`` for one mode: count query, then the configs.

    The target is ``device_properties`` (deviceless: the unbound operation graph, DEVICEPROP on
    the heuristics), else the GPU ``device`` (None: the current one; the operation graph is bound
    to the calling thread's handle for it). cuDNN may return fewer configs than it counted (those
    that cannot be materialized for the target are dropped; with neither a GPU nor
    ``device_properties`` that is all of them, and the result's ``note`` says so).
    """
    _check_graph(graph)
    hm = _heur_mode(mode)
    target = _target(device_properties, device, plans=False)
    _check_sm_count(sm_count, target)
    return _run_heuristics(graph, hm, target, sm_count)


def _check_sm_count(sm_count: Any, target: _Target) -> None:
    """``sm_count`` (``ENGINEHEUR_SM_COUNT_TARGET``): a positive int, and for device properties
    at most their ``multiProcessorCount``: cuDNN 9.19 fails the heuristics beyond it
    (``target_sm_count > multiProcessorCount``; 9.28 plans as for the whole GPU), measured
    deviceless for an H100."""
    if sm_count is None:
        return
    if isinstance(sm_count, bool) or not isinstance(sm_count, int) or sm_count < 1:
        raise ValueError(f"sm_count must be a positive int, got {sm_count!r}")
    if target.props is not None and sm_count > target.props.multiprocessor_count:
        raise ValueError(
            f"sm_count={sm_count} exceeds the target's {target.props.multiprocessor_count} SMs "
            f"(multiProcessorCount of {target.props.device_name!r}); cuDNN refuses a target SM "
            "count above the device's"
        )


#: Advice when planning with ``sm_count`` below the device's SMs found nothing (measured).
_SM_COUNT_ADVICE = (
    "sm_count={sm} is below the target's {mp} SMs, and most engines do not support such an SM "
    "carveout (cuDNN 9.28: 'SM carveout not supported for this engine'; measured deviceless for an "
    "H100 with cuDNN 9.19 and 9.28: matmul and pointwise graphs have no engine for any sm_count "
    "below 132, a convolution only engine 41, up to sm_count 16). Leave sm_count=None (the whole GPU)"
)


# Not run where cuDNN would read uninitialized device properties (HEURISTICS_WITHOUT_TARGET_SINCE).
_NO_TARGET_BEFORE_9_9 = (
    "not run: cuDNN before 9.9 runs heuristics on uninitialized device properties when there is "
    "no GPU and no device_properties="
)
# 9.9 and newer count configs without a target but materialize none (measured on 9.9 to 9.28).
_NO_TARGET_NOTE = "none without a target: no GPU is usable and no device_properties= were given"


#: A heuristics query is one library call for exit and fork (see _nvbind.shutdown): its C calls
#: then pay only for nesting (about 1 us less each), as a graph's lowering does.
_HEURISTICS_CALL = library_call("cudnnBackendFinalize (cuDNN's heuristics)")


def _run_heuristics(
    graph: OperationGraph,
    hm: Any,
    target: _Target,
    sm_count: int | None,
    variant: _Variant | None = None,
) -> HeuristicsResult[EngineConfig]:
    name = _MODE_NAMES[hm]
    if variant is None:
        op_graph = graph._descriptors_for(target.handle)["graph"]
    else:
        op_graph = graph._descriptors_for(target.handle, variant.name, variant.views)["graph"]
    if (
        target.props is None
        and target.device_id is None
        and LIB.version < HEURISTICS_WITHOUT_TARGET_SINCE
    ):
        return HeuristicsResult(name, 0, [], _NO_TARGET_BEFORE_9_9)
    result: HeuristicsResult[EngineConfig]
    ask = functools.partial(_ask, name, op_graph, hm, target, sm_count, records=None)
    result = _HEURISTICS_CALL.run(ask)
    if result.error or not result.configs:
        # cuDNN says why a query gave nothing only in its log, and filling the log costs every
        # query while a callback takes it (a line formatted and read for each kernel it rejects:
        # up to a sixth of a query), so the log is captured only when asked again here.
        result = _HEURISTICS_CALL.run(_ask_captured, name, op_graph, hm, target, sm_count)
    if not result.configs and target.props is None and target.device_id is None:
        result.note = _NO_TARGET_NOTE
    return result


def _ask_captured(
    name: str, op_graph: Any, hm: Any, target: _Target, sm_count: int | None
) -> HeuristicsResult[EngineConfig]:
    """:func:`_ask` with cuDNN's log captured around it."""
    with _capture() as records:
        return _ask(name, op_graph, hm, target, sm_count, records=records)


def _ask(
    name: str, op_graph: Any, hm: Any, target: _Target, sm_count: int | None, *, records: Any
) -> HeuristicsResult[EngineConfig]:
    """One ``ENGINEHEUR`` query of mode ``hm``; cuDNN's explanation from the log ``records``
    captured around it (None: not captured)."""
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
        # count= reads without a second count query; cuDNN fills up to that many configs and
        # says how many it did (fewer where a config cannot be materialized for the target).
        descs = heur.get("ENGINEHEUR_RESULTS", count=count) if count > 0 else []
    except CudnnError as exc:
        heur.close()
        error = f"{exc.status_name}: {exc.message}"
        return HeuristicsResult(name, 0, [], error, _explanation(records))
    # Nothing is read from the configs here (EngineConfig reads on demand).
    configs = [EngineConfig(d, mode=name, rank=i) for i, d in enumerate(descs)]
    return HeuristicsResult(name, count, configs, "", _explanation(records))


def _explanation(records: Any) -> list[str]:
    """The explanatory lines of a query's log, read only when it gave nothing: the first twelve
    (a query's first lines name the first configs it rejected; the cause that rejected them all,
    such as no SM grid for the target, can come later)."""
    return [] if records is None else _error_lines(records, limit=12)


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
        "exclude": normalize_exclusions(
            options.pop("exclude_engines", None), options.pop("exclude_notes", None)
        ),
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


_NOT_NOTE_FILTERS = frozenset({"allow_known_bad", "exclude"})
# The note and workspace filters at their defaults, which drop no config.
_NO_NOTE_FILTERS = {
    "deterministic": False,
    "allow_reduced_precision": True,
    "allow_runtime_compilation": True,
    "max_workspace": None,
}


@dataclasses.dataclass(frozen=True)
class _Query:
    """What one planning call asks of cuDNN's heuristics, checked (:func:`_query` makes it): the
    modes, the target, the SM count and the filters."""

    heuristics: Any
    target: _Target
    sm_count: int | None
    filters: dict[str, Any]


def _query(values: dict[str, Any], target: _Target) -> _Query:
    """The planning values of a call (:func:`~pycudnn.plan.options.plan_values`; consumed)
    checked for ``target``: the filters, no value besides them, the SM count."""
    heuristics = values.pop("heuristics", DEFAULT_HEURISTICS)
    sm_count = values.pop("sm_count", None)
    filters = _check_filters(values)
    if values:
        raise TypeError(f"unexpected option(s): {', '.join(sorted(values))}")
    _check_sm_count(sm_count, target)
    return _Query(heuristics, target, sm_count, filters)


def _collect(
    graph: OperationGraph,
    query: _Query,
    report: PlanningReport,
    variant: _Variant | None = None,
) -> Iterator[EngineConfig]:
    """The configs of every mode ``query`` asks for, in order, without duplicates and without
    those its filters drop (each listed in ``report.filtered``).

    Every mode's heuristics run first, and the filters are applied to every config before the
    first is yielded, so the report says the same whether or not the caller stops early. What is
    read of each config is what the filters in force need (engine id, notes, workspace: no knobs);
    with none in force nothing is read until a config is yielded. Knobs are read only to tell
    configs of the same engine apart (duplicates across modes are yielded once).
    """
    filters = query.filters
    exclusions = [] if filters["allow_known_bad"] else known_bad.exclusions_for(graph, _version())
    results = []
    for hm in _heur_modes(query.heuristics):
        res = _run_heuristics(graph, hm, query.target, query.sm_count, variant)
        report.heuristics.append(res)
        report.log.extend(line for line in res.log if line not in report.log)
        results.append(res)
    note_filters = {k: v for k, v in filters.items() if k not in _NOT_NOTE_FILTERS}
    # Read nothing of a config for filters that cannot drop it (the defaults drop nothing).
    filtering = bool(exclusions or any(filters["exclude"])) or note_filters != _NO_NOTE_FILTERS
    kept: list[EngineConfig] = []
    dropped: dict[int, list[EngineConfig]] = {}  # filtered, by engine id
    for res in results:
        for cfg in res.configs:
            try:
                why, entry = (
                    _why_filtered(cfg, note_filters, filters["exclude"], exclusions)
                    if filtering
                    else ("", None)
                )
                if not why:
                    kept.append(cfg)
                    continue
                # A config the same as one already dropped is not listed twice (the same config
                # gives the same verdict, so it can only repeat a dropped one).
                same_engine = dropped.setdefault(cfg.engine_id, [])
                if any(other.knobs == cfg.knobs for other in same_engine):
                    continue
            except CudnnError as exc:  # unreadable: skipped, as cuDNN gave nothing to plan with
                _log.debug("engine config %d of %s unreadable: %s", cfg.rank, cfg.mode, exc)
                continue
            same_engine.append(cfg)
            if entry is not None:
                report.known_bad.append(entry)
            report.filtered.append((f"engine {cfg.engine_id}", why))
    return _unique(kept)


def _why_filtered(
    cfg: EngineConfig,
    note_filters: dict[str, Any],
    exclude: tuple[Any, Any],
    exclusions: list[known_bad.KnownBadEngine],
) -> tuple[str, known_bad.KnownBadEngine | None]:
    """Why ``cfg`` is dropped ("" when it is not), and the known-bad entry when that is why."""
    why = _filter_reason(cfg, **note_filters) or exclusion_reason(cfg, *exclude)
    if not why and exclusions:
        entry = known_bad.match(exclusions, cfg.engine_id)
        if entry is not None:
            return "known to give wrong results: " + entry.describe(), entry
    return why, None


def _unique(configs: list[EngineConfig]) -> Iterator[EngineConfig]:
    """``configs`` less repeats (the same engine and knobs, e.g. a config mode A and FALLBACK both
    return), read only as far as the caller iterates: the engine id of each config yielded, its
    knobs where an earlier one has the same engine."""
    seen: dict[int, list[EngineConfig]] = {}
    for cfg in configs:
        try:
            same_engine = seen.setdefault(cfg.engine_id, [])
            if any(other.knobs == cfg.knobs for other in same_engine):
                continue  # dropped: released once unreferenced
        except CudnnError as exc:
            _log.debug("engine config %d of %s unreadable: %s", cfg.rank, cfg.mode, exc)
            continue
        same_engine.append(cfg)
        yield cfg


@takes_plan_options
def engine_configs(
    graph: OperationGraph,
    *,
    heuristics: Any = DEFAULT_HEURISTICS,
    device_properties: DeviceProperties | None = None,
    device: Any = None,
    options: PlanOptions | Mapping[str, Any] | None = None,
    **filters: Unpack[PlanFilters],
) -> list[EngineConfig]:
    """Engine configs from the heuristic ``heuristics`` (a mode or a list tried in order), filtered.

    The target is ``device_properties`` or the GPU ``device``, as in :func:`run_heuristics`.
    ``deterministic=True`` drops NONDETERMINISTIC engines; ``allow_reduced_precision=False`` drops
    REDUCED_PRECISION_REDUCTION and DOWN_CONVERT_INPUTS; ``allow_runtime_compilation=False`` drops
    engines with the RUNTIME_COMPILATION behaviour note; ``max_workspace`` (bytes) drops configs
    that need more. Engines in the known-bad table (:mod:`pycudnn.known_bad`) for this graph and
    cuDNN version are dropped unless ``allow_known_bad=True``. ``exclude_engines`` (engine ids)
    and ``exclude_notes`` (note names, e.g. ``"TENSOR_CORE"``) drop the configs they name.
    Duplicates across modes are kept once.
    """
    _check_graph(graph)
    target = _target(device_properties, device, plans=False)
    query = _query(plan_values(heuristics, filters), target)
    return list(_collect(graph, query, PlanningReport()))
