"""Autotuning: time every candidate plan on the GPU with CUDA events and keep the fastest."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from _nvbind.cuda import driver_status, require_cuda_core
from _nvbind.memory import stream_object

from .. import _bindings
from ..errors import CudnnError, CudnnNotSupportedError
from ..handle import Handle, get_handle
from ..opgraph import OperationGraph
from .autotune_results import AutotuneResult, AutotuneResults
from .building import _cache_key, _not_supported, _plans
from .cache import PlanCache, _resolve_cache
from .execution import Plan
from .heuristics import _NOT_NOTE_FILTERS, _query, _why_filtered
from .options import PlanFilters, PlanOptions, plan_values, takes_plan_options
from .report import GraphNotSupportedError, PlanningReport, _check_graph
from .targets import _target
from .verifying import check_verify, verify_row

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = ["AutotuneResult", "AutotuneResults", "autotune"]

_log = logging.getLogger("pycudnn")


# --------------------------------------------------------------------------------------------------
# Autotuning
# --------------------------------------------------------------------------------------------------


_PROGRESS_MIN_CANDIDATES = 16


def _progress(total: int, progress: Any) -> Any:
    if progress is False:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="autotune", unit="plan", leave=False)


def _row(plan: Plan) -> AutotuneResult:
    notes = plan.numerical_notes + plan.behavior_notes
    return AutotuneResult(plan.engine_id, dict(plan.knobs), notes, plan.workspace_size, None)


def _allowed(
    graph: OperationGraph, listed: list[Plan], filters: dict[str, Any], report: PlanningReport
) -> tuple[list[Plan], list[tuple[AutotuneResult, Plan]]]:
    """The caller's candidate plans that pass the filters, and a row for each one that does not
    (it is not timed and cannot win; it is listed in ``report.filtered``). The known-bad table is
    not applied again: a plan of a known-bad engine exists only where its builder allowed it."""
    note_filters = {k: v for k, v in filters.items() if k not in _NOT_NOTE_FILTERS}
    kept: list[Plan] = []
    dropped: list[tuple[AutotuneResult, Plan]] = []
    for plan in listed:
        why, _ = _why_filtered(plan, note_filters, filters["exclude"], [])  # type: ignore[arg-type]
        if not why:
            kept.append(plan)
            continue
        report.filtered.append((f"engine {plan.engine_id}", why))
        row = _row(plan)
        row.error = f"filtered out: {why}"
        dropped.append((row, plan))
    if not kept:
        raise GraphNotSupportedError(
            3000,
            "",
            f"no candidate plan of graph '{graph.name}' passes the filters: "
            + "; ".join(f"{c}: {why}" for c, why in report.filtered),
            report,
        )
    return kept, dropped


@takes_plan_options
def autotune(
    graph: OperationGraph,
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
    verify: bool = False,
    options: PlanOptions | Mapping[str, Any] | None = None,
    **filters: Unpack[PlanFilters],
) -> Plan:
    """Time every candidate plan on the GPU with CUDA events and return the fastest.

    ``candidates``: None (every plan the heuristics give), an int (the first N), or a list of
    plans (the filters apply to them as well: one a filter drops is not timed, and its row in
    the table says why). Each runs ``warmup`` times, then ``repeats`` times between timing
    events; the median decides. The outputs in ``tensors`` are overwritten. The winner carries
    ``autotune_results`` (an :class:`AutotuneResults` table; not a winner read back from a cache
    directory, whose timings were not saved); with a list of plans the winner is the caller's
    plan, marked in place. A progress bar (tqdm, if installed) appears when the run takes more
    than a second, unless ``progress=False``. The result is cached like ``build``.
    ``verify=True`` first checks each candidate against a reference (:mod:`pycudnn.verification`):
    a wrong engine is not timed, cannot win, and its row in the table says how wrong it was.
    The filters (``deterministic`` ... ``exclude_notes``) are :func:`build`'s. Raises
    ``RuntimeError`` without a usable GPU, :class:`GraphNotSupportedError` when no plan finalizes.
    """
    _check_graph(graph)

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
    verify = check_verify(verify)
    values = plan_values(heuristics, filters)
    if handle is not None:
        if not isinstance(handle, Handle):
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        device = handle.device_id if device is None else device
    target = _target(None, device)
    if handle is not None:
        target.handle = handle  # plan with the handle the plans will be timed on
    listed = list(candidates) if isinstance(candidates, Sequence) else None
    count = None if isinstance(candidates, Sequence) else candidates
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(
            f"candidates must be a positive int, a list of plans or None, got {candidates!r}"
        )
    pc = _resolve_cache(cache)
    key = None
    if pc is not None and listed is None:
        key = _cache_key(graph, target, values, autotuned=True, verified=verify, candidates=count)
        cached = pc._lookup(key, graph, target)
        if cached is not None:
            if cached.source == "json":  # read from a cache directory: chosen by autotuning
                cached.source = "autotune"  # (its timings were not saved: no table)
            return cached
    report = PlanningReport()
    results: list[tuple[AutotuneResult, Plan]] = []
    if listed is not None:
        if not listed or not all(isinstance(p, Plan) for p in listed):
            raise TypeError("candidates must be a non-empty list of Plan objects")
        plans, results = _allowed(graph, listed, _query(dict(values), target).filters, report)
    else:
        plans = _plans(graph, target, dict(values), report, limit=count)
        if not plans:
            raise _not_supported(graph, report)

    core = require_cuda_core()
    if handle is None:
        handle = get_handle(target.device_id)
    s = stream_object(stream, handle.device)
    event_options = core.EventOptions(timing_enabled=True)
    bar = None
    start = time.perf_counter()
    for i, plan in enumerate(plans):
        row = _row(plan)
        try:
            # A wrong engine is not timed: it must not win, and its row says how wrong it was.
            row.error = verify_row(plan, report) if verify else ""
            if not row.error:
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
            int(_bindings.cudnnStatus_t.NOT_SUPPORTED),
            "cudnnBackendExecute",
            "every candidate plan failed to execute (or, with verify=True, was wrong): "
            + "; ".join(r.error for r, _ in results),
        )
    timed.sort(key=lambda rp: rp[0].time_ms)  # type: ignore[arg-type, return-value]
    failed = [(r, p) for r, p in results if r.time_ms is None]
    best = timed[0][1]
    best.source = "autotune"
    best.autotune_results = AutotuneResults([r for r, _ in timed + failed])
    for _, p in timed[1:] + failed:
        if p is not best and listed is None:
            p.close()
    if pc is not None and key is not None:
        pc._store(key, best, target)
    return best
