"""Building plans for a target: the first (or every) engine config that finalizes, with rewrites when none does."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from _nvbind.shutdown import library_call

from .. import known_bad
from ..backend import BackendDescriptor
from ..deviceprops import DeviceProperties, _error_lines
from ..errors import CudnnError
from ..opgraph import OperationGraph, rewrites
from ..opgraph.attention_lowering import lowering_advice, lowering_notes
from ..opgraph.rewrites import Variant as _Variant
from .cache import PlanCache, _resolve_cache
from .exclusions import normalize_exclusions
from .execution import Plan
from .heuristics import (
    _MODE_NAMES,
    _SM_COUNT_ADVICE,
    DEFAULT_HEURISTICS,
    EngineConfig,
    _collect,
    _heur_modes,
    _Query,
    _query,
)
from .options import PlanFilters, PlanOptions, plan_values, takes_plan_options
from .report import (
    GraphNotSupportedError,
    NoTargetError,
    PlanningReport,
    _capture,
    _check_graph,
)
from .serialization import _version
from .targets import _Target, _target
from .verifying import check_verify, verified

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["build", "build_all"]

_log = logging.getLogger("pycudnn")


# --------------------------------------------------------------------------------------------------
# Building plans
# --------------------------------------------------------------------------------------------------


def _finalize_plan(cfg: EngineConfig, target: _Target, graph: OperationGraph) -> Plan:
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
    graph: OperationGraph,
    target: _Target,
    options: dict[str, Any],
    report: PlanningReport,
    *,
    limit: int | None,
) -> list[Plan]:
    query = _query(options, target)
    attempt = functools.partial(_plans_for, graph, query, report, limit=limit)
    if target.device_id is None and target.props is None:
        # Refused before cuDNN: its heuristics would count engines and return none, and "no
        # engine supports the graph" would hide the cause (and print cuDNN's warnings).
        report.device = target.note
        raise NoTargetError(3000, "", f"cannot plan graph '{graph.name}': {target.note}", report)
    # An SDPA lowered to the composite graph is a rewrite of the graph as described: say so.
    lowered = lowering_notes(graph.operations)
    report.rewrites.extend(lowered)
    plans = attempt(variant=None)
    if plans:
        for p in plans:
            p.rewrite = "; ".join(lowered)
        return plans
    # No engine for the graph as described: try the equivalent descriptions cuDNN has engines for.
    for variant in rewrites.variants(graph):
        plans = attempt(variant=variant)
        if plans:
            report.rewrites.append(f"planned the {variant.note}")
            for p in plans:
                p.rewrite = variant.note
            _log.info("graph '%s': %s", graph.name, variant.note)
            return plans
        report.rewrites.append(f"tried the {variant.note}: no engine either")
    report.advice.extend(lowering_advice(graph.operations))
    props, sm_count = target.props, query.sm_count
    if sm_count is not None and props is not None and sm_count < props.multiprocessor_count:
        report.advice.append(_SM_COUNT_ADVICE.format(sm=sm_count, mp=props.multiprocessor_count))
    return []


#: Building a variant's plans is one library call for exit and fork (see _nvbind.shutdown),
#: as a graph's lowering is: its C calls then pay only for nesting.
_PLANNING_CALL = library_call("cudnnBackendFinalize (building execution plans)")


def _plans_for(
    graph: OperationGraph,
    query: _Query,
    report: PlanningReport,
    *,
    limit: int | None,
    variant: _Variant | None,
) -> list[Plan]:
    plans: list[Plan] = []
    _PLANNING_CALL.run(
        functools.partial(
            _finalize_plans, graph, query, report, plans, limit=limit, variant=variant
        )
    )
    if plans:  # nothing to explain: the plans' report holds no finalize to make again
        report._unexplained.clear()
    return plans


def _finalize_plans(
    graph: OperationGraph,
    query: _Query,
    report: PlanningReport,
    plans: list[Plan],
    *,
    limit: int | None,
    variant: _Variant | None,
) -> None:
    # _plans_for's loop, as one library call: appends the plans made to ``plans``.
    target = query.target
    for cfg in _collect(graph, query, report, variant):
        try:
            plan = _finalize_plan(cfg, target, graph)
        except CudnnError as exc:
            report.failed.append((f"engine {cfg.engine_id}", f"{exc.status_name}: {exc.message}"))
            report._unexplained.append(functools.partial(_finalize_plan, cfg, target, graph))
            continue
        mw = query.filters["max_workspace"]
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
        if limit is not None and len(plans) >= limit:
            break  # before asking for the next config, which would read it from cuDNN


#: How many failed finalizes are finalized again to read cuDNN's log (see _explain).
_EXPLAINED = 4


def _explain(report: PlanningReport) -> None:
    """cuDNN's log of the first failed plan finalizes, into ``report.log``: they are finalized
    again with the log captured. cuDNN says why a finalize failed only in its log, and filling
    it costs every planning call while a callback takes it (a line formatted and read for each
    kernel rejected), so it is read only once planning has failed."""
    records: list[Any] = _PLANNING_CALL.run(_finalize_again, report._unexplained[:_EXPLAINED])
    report._unexplained.clear()
    for line in _error_lines(records, limit=12):
        if line not in report.log:
            report.log.append(line)


def _finalize_again(finalizes: list[Any]) -> list[Any]:
    # _explain's finalizes, as one library call with cuDNN's log captured: the records.
    with _capture() as records:
        for finalize in finalizes:
            try:
                finalize().close()
            except CudnnError:
                pass
    return list(records)


def _not_supported(graph: OperationGraph, report: PlanningReport) -> GraphNotSupportedError:
    _explain(report)
    for entry in dict.fromkeys(report.known_bad):
        if entry.advice and entry.advice not in report.advice:
            report.advice.append(entry.advice)
    # An entry for this graph that removed nothing: cuDNN offered no engine at all (deviceless
    # planning of NCHW 16-bit wgrad on 9.10 to 9.19 finds none, where a GPU finds only engine 70).
    # What works is the same, and the user should know the engine a GPU would offer is known bad.
    for entry in known_bad.exclusions_for(graph, _version()):
        if entry.advice and entry not in report.known_bad and entry.advice not in report.advice:
            seen = "; ".join(entry.seen_wrong_in) or "no version recorded"
            report.advice.append(
                f"{entry.advice} (where cuDNN offers engine {entry.engine_id} for this graph, it "
                f"is known to give wrong results: seen wrong in cuDNN {seen})"
            )
    for line in rewrites.advice(graph):
        if line not in report.advice:
            report.advice.append(line)
    function, step = _failed_step(report)
    message = f"no engine supports graph '{graph.name}': {step}\n" + report.describe()
    return GraphNotSupportedError(3000, function, message, report)


def _failed_step(report: PlanningReport) -> tuple[str, str]:
    """The C function of the step that left no plan, and that step in words: the heuristics
    returning no config is not a failed ``cudnnBackendFinalize`` of an execution plan."""
    if report.failed:
        return "cudnnBackendFinalize", "no execution plan finalized (EXECUTION_PLAN)"
    if report.filtered:
        # every config the heuristics returned was dropped by a filter or the known-bad table
        return "", "every engine config the heuristics returned was filtered out"
    if any(h.error for h in report.heuristics) and not any(h.count for h in report.heuristics):
        return "cudnnBackendFinalize", "the heuristics (ENGINEHEUR) did not run"
    return (
        "cudnnBackendGetAttribute",
        "the heuristics returned no engine config (CUDNN_ATTR_ENGINEHEUR_RESULTS)",
    )


def _cache_key(
    graph: OperationGraph,
    target: _Target,
    options: Mapping[str, Any],
    *,
    autotuned: bool,
    verified: bool = False,
    candidates: int | None = None,
) -> str:
    """The plan-cache key of planning ``graph`` for ``target`` with ``options`` (the planning
    values): the graph's digest, cuDNN's version, the target, the modes and filters, the
    known-bad entries that apply, and how the plan was chosen (``autotuned``, over how many
    ``candidates``; ``verified``). The values are checked first, as planning checks them, so
    that a bad one is refused with planning's message whether or not a cache is in use."""
    _query(dict(options), target)
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
    # Exclusions change which plan is chosen: part of the key (sorted, so order does not matter).
    engines, notes = normalize_exclusions(
        options.get("exclude_engines"), options.get("exclude_notes")
    )
    if engines or notes:
        filters["exclude"] = [sorted(engines), sorted(notes)]
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
    if verified:  # only when set, so that the keys of unverified plans stay as they were
        payload["verified"] = True
    if candidates is not None:  # the winner of the first N candidates is not autotune()'s
        payload["candidates"] = candidates
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@takes_plan_options
def build_all(
    graph: OperationGraph,
    *,
    heuristics: Any = DEFAULT_HEURISTICS,
    device_properties: DeviceProperties | None = None,
    device: Any = None,
    limit: int | None = None,
    verify: bool = False,
    options: PlanOptions | Mapping[str, Any] | None = None,
    **filters: Unpack[PlanFilters],
) -> list[Plan]:
    """Every execution plan that finalizes, in heuristic order (for autotuning or inspection).

    Target and filters as for :func:`build` (``cudnnBackendFinalize`` on each
    ``CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR``); ``limit`` stops after that many plans;
    ``verify=True`` keeps only the plans whose results agree with a reference
    (:mod:`pycudnn.plan.verifying`). Raises :class:`GraphNotSupportedError` when none finalizes
    (or none is right; its ``function`` is the C step that left none), :class:`NoTargetError`
    (before any cuDNN call) with no usable GPU and no ``device_properties``, ``ValueError`` for a
    bad ``limit`` or filter.
    """
    _check_graph(graph)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    verify = check_verify(verify)
    target = _target(device_properties, device)
    report = PlanningReport()
    values = plan_values(heuristics, filters)
    plans = _plans(graph, target, values, report, limit=limit)
    if verify:
        plans = verified(plans, report, first=False)
    if not plans:
        raise _not_supported(graph, report)
    return plans


def _verified_rest(
    graph: OperationGraph,
    target: _Target,
    options: Mapping[str, Any],
    report: PlanningReport,
    wrong: Plan,
) -> tuple[PlanningReport, list[Plan]]:
    """For ``build(verify=True)`` once the first candidate (``wrong``) failed: every candidate
    planned again (in a fresh report that keeps the verdicts so far), ``wrong``'s engine config
    left out, the first right one kept."""
    full = PlanningReport(verification=list(report.verification))
    same = (wrong.engine_id, wrong.knobs)
    rest = []
    for p in _plans(graph, target, dict(options), full, limit=None):
        if (p.engine_id, p.knobs) == same:
            p.close()
        else:
            rest.append(p)
    return full, verified(rest, full, first=True)


@takes_plan_options
def build(
    graph: OperationGraph,
    *,
    heuristics: Any = DEFAULT_HEURISTICS,
    device_properties: DeviceProperties | None = None,
    device: Any = None,
    cache: PlanCache | bool | None = None,
    verify: bool = False,
    options: PlanOptions | Mapping[str, Any] | None = None,
    **filters: Unpack[PlanFilters],
) -> Plan:
    """The execution plan for ``graph``: from the plan cache, else the first heuristic config
    (modes ``heuristics`` tried in order) that passes the filters and finalizes.

    ``device_properties``: plan for that GPU without one (deviceless); else the GPU ``device``
    (None: the current one). ``cache``: None (this thread's in-memory cache), a
    :class:`PlanCache` (memory and, if it has a directory, disk), or False (no caching).
    Filters as in :func:`engine_configs` (engines in the known-bad table are dropped unless
    ``allow_known_bad``), and those named by ``exclude_engines``/``exclude_notes``. When the
    graph as described has no engine, equivalent descriptions cuDNN has engines for are tried (:mod:`pycudnn.opgraph.rewrites`; ``plan.rewrite`` says which). The
    plan's ``report`` is the :class:`PlanningReport`. Raises :class:`GraphNotSupportedError` with
    the modes tried, the configs each returned, what was excluded and why, cuDNN's own
    explanation and what would work instead, when no plan can be built (its ``function`` is the
    C step that left none: ``cudnnBackendGetAttribute`` when the heuristics returned no config,
    ``cudnnBackendFinalize`` when no execution plan finalized). With no usable GPU and no
    ``device_properties`` it raises :class:`NoTargetError` (a :class:`GraphNotSupportedError`)
    before calling cuDNN.

    ``verify=True`` (on the GPU the plan is for) executes the candidates in heuristic order on
    seeded inputs and returns the first whose results agree with a reference computed without
    cuDNN (:mod:`pycudnn.verification`); wrong ones are closed and listed in the report
    (``report.verification``). The plan carries its verdict as ``plan.verification``.
    """
    _check_graph(graph)
    verify = check_verify(verify)
    values = plan_values(heuristics, filters)
    target = _target(device_properties, device)
    pc = _resolve_cache(cache)
    key = None
    if pc is not None:
        key = _cache_key(graph, target, values, autotuned=False, verified=verify)
        plan = pc._lookup(key, graph, target)
        if plan is not None:
            return plan
    report = PlanningReport()
    plans = _plans(graph, target, dict(values), report, limit=1)
    if verify and plans:
        first = plans[0]
        plans = verified(plans, report, first=True)
        if not plans:  # the first candidate was wrong: plan the others, and check them in order
            report, plans = _verified_rest(graph, target, values, report, first)
    if not plans:
        raise _not_supported(graph, report)
    plan = plans[0]
    if pc is not None and key is not None:
        pc._store(key, plan, target)
    return plan
