"""Verifying a plan: execute it on seeded inputs and compare with an independent reference.

:func:`verify_plan` (behind ``Plan.verify()``) generates inputs (:mod:`.inputs`), copies them to
the GPU with the strides the graph describes, fills every output with NaN (so an element the
engine never writes shows up), executes the plan, and compares each output with the reference
under the tolerance of :mod:`.tolerance`. The reference is NumPy in float64 (:mod:`.reference`)
when the graph is small enough (``max_reference_cost`` multiply-adds); else NumPy on the first and
last batch elements (the last alone where two cost too much) when the graph is separable by batch
element and that slice is small enough (:mod:`.slicing`), every other element of a floating-point
output still required to be written (finite); else the same graph run by another engine,
preferring one without tensor cores, reduced precision or runtime compilation.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from _nvbind.cuda import driver_status, require_cuda_core
from _nvbind.device_array import DeviceArray

from .. import known_bad
from .._info import version
from ..errors import CudnnError
from ..opgraph import OperationGraph
from .common import is_float
from .inputs import make_inputs, strided_array
from .reference import NoReferenceError, evaluate, reference_cost
from .reference_attention_varlen import undefined_where_nan, valid_only
from .result import OutputCheck, VerifyResult, compare
from .slicing import batch_elements, batch_slice, slice_arrays
from .tolerance import SAFETY, Tolerance, tolerance_for


class Plan(Protocol):
    """What verification reads of a :class:`pycudnn.Plan`, named here: verification checks the
    plans it is given and sits below planning, which calls it (``Plan.verify``, ``verify=True``)."""

    graph: OperationGraph | None
    engine_id: int | None
    knobs: dict[str, int]
    numerical_notes: tuple[str, ...]
    behavior_notes: tuple[str, ...]

    @property
    def device_id(self) -> int | None: ...

    def execute(self, tensors: Any) -> Any: ...

    def close(self) -> None: ...


@runtime_checkable
class PlansItself(Protocol):
    """A graph that plans itself (:class:`pycudnn.Graph`; a bare
    :class:`~pycudnn.opgraph.OperationGraph` does not): how a second engine's plan is made."""

    def build_all(self, *, device: Any = None) -> list[Any]: ...


__all__ = [
    "DEFAULT_MAX_REFERENCE_COST",
    "initial_outputs",
    "known_bad_note",
    "prefilled_output",
    "reference_candidates",
    "uses_numpy",
    "verify_plan",
    "verify_plans",
]

#: Multiply-adds above which the host reference gives way to another engine (a few seconds of
#: NumPy on one core).
DEFAULT_MAX_REFERENCE_COST = 2 * 10**9

# Notes of engines least likely to share a fault with a fast engine under test: a reference
# engine with none of them reads its operands and accumulates as the math describes.
_PLAIN_UNFRIENDLY = frozenset(
    {"TENSOR_CORE", "REDUCED_PRECISION_REDUCTION", "DOWN_CONVERT_INPUTS", "FFT", "WINOGRAD"}
)


def initial_outputs(graph: OperationGraph, seed: int = 0) -> dict[int, np.ndarray]:
    """Contents before execution of outputs whose operation has ``beta != 0`` (it reads them)."""
    rng = np.random.default_rng(seed + 1)
    out: dict[int, np.ndarray] = {}
    for op in graph.operations:
        if op.attrs.get("beta", 0.0):
            for t in op.outputs.values():
                arr = strided_array(t.dims, t.strides, t.dtype)
                arr[...] = rng.uniform(-1.0, 1.0, size=t.dims).astype(t.dtype)
                out[t.uid] = arr
    return out


def prefilled_output(t: Any) -> np.ndarray:
    """What output ``t`` holds before the plan runs: NaN for floating-point types (an element the
    engine never writes stays NaN and fails the comparison), the largest value for integers."""
    host = strided_array(t.dims, t.strides, t.dtype)
    if is_float(t.dtype):
        host[...] = np.nan
    else:
        host[...] = np.iinfo(t.dtype).max if np.dtype(t.dtype).kind in "iu" else True
    return host


def known_bad_note(graph: OperationGraph, engine_id: int | None) -> str:
    """The known-bad table entry that covers ``engine_id`` for ``graph`` (loaded cuDNN), or ""."""
    entry = known_bad.match(known_bad.exclusions_for(graph, version()), engine_id)
    return entry.describe() if entry is not None else ""


def _execute(
    plan: Plan,
    graph: OperationGraph,
    inputs: Mapping[int, np.ndarray],
    initial: Mapping[int, np.ndarray],
) -> dict[int, np.ndarray]:
    """Run ``plan`` once on copies of ``inputs``; the outputs, copied back, by uid."""

    arrays: dict[int, Any] = {}
    device = plan.device_id
    try:
        for t in graph.tensors:
            if t.is_virtual:
                continue
            if t.by_value:
                arrays[t.uid] = inputs[t.uid].reshape(-1)[0] if t.uid in inputs else None
                continue
            if t.producer is None:
                host = inputs[t.uid]
            elif t.uid in initial:
                host = initial[t.uid]
            else:
                host = prefilled_output(t)
            d = DeviceArray.empty(t.dims, t.dtype, strides=t.strides, device=device)
            arrays[t.uid] = d
            d.copy_from_numpy(host)
        plan.execute({uid: a for uid, a in arrays.items() if a is not None})
        # The plan ran on the handle's stream; the copies back use the arrays' stream.
        require_cuda_core().Device(arrays[graph.outputs[0].uid].device_id).sync()
        return {t.uid: arrays[t.uid].to_numpy() for t in graph.outputs}
    finally:
        for a in arrays.values():
            if isinstance(a, DeviceArray):
                a.close()


def uses_numpy(graph: OperationGraph, max_reference_cost: int = DEFAULT_MAX_REFERENCE_COST) -> bool:
    """Is ``graph`` small enough for the host reference (else another engine is the reference)?"""
    return reference_cost(graph) <= max_reference_cost


def _sliced_elements(graph: OperationGraph, max_reference_cost: int) -> tuple[int, ...]:
    """The batch elements the NumPy reference computes for a graph too costly whole: the first
    and the last where two fit in ``max_reference_cost``, else the last; none (``()``) when the
    graph is not separable by batch element or one element costs too much."""
    if batch_slice(graph) is None:
        return ()
    batch = graph.outputs[0].dims[0]
    # One batch element of a separable graph costs 1/N of the whole.
    for count in (2, 1):
        if count < batch and reference_cost(graph) * count // batch <= max_reference_cost:
            return batch_elements(batch, count)
    return ()


def _unwritten(
    check: OutputCheck, got: np.ndarray, ref: np.ndarray, elements: tuple[int, ...]
) -> OutputCheck:
    """``check`` of the compared batch ``elements`` of ``got``, failed where the elements the
    reference does not cover hold NaN or Inf (left as the plan found them, or overflowed) while
    the reference of the compared ones is finite (an output that may be Inf, a max over a fully
    masked row, is judged by the compared elements alone)."""
    if not np.isfinite(np.asarray(ref, dtype=np.float64)).all():
        return check
    rest = np.delete(np.asarray(got), list(elements), axis=0).astype(np.float64)
    bad = int(np.count_nonzero(~np.isfinite(rest)))
    if not bad:
        return check
    return dataclasses.replace(
        check,
        nonfinite=check.nonfinite + bad,
        mismatches=check.mismatches + bad,
        max_abs_error=float("inf"),
        max_rel_error=float("inf"),
    )


def reference_candidates(plans: Sequence[Plan], engine_id: int | None) -> list[Plan]:
    """The plans of engines other than ``engine_id`` that may serve as its reference, plainest
    first: fewest of tensor cores, reduced precision, down-conversion, FFT and Winograd, then
    without runtime compilation (an engine least likely to share a fast engine's fault)."""
    others = [p for p in plans if p.engine_id != engine_id]
    return sorted(
        others,
        key=lambda p: (
            len(_PLAIN_UNFRIENDLY.intersection(p.numerical_notes)),
            "RUNTIME_COMPILATION" in p.behavior_notes,
        ),
    )


def _reference_plan(plan: Plan, graph: OperationGraph) -> Plan | None:
    """Another engine's plan for ``graph``, the plainest one (None if there is none)."""
    # Through the graph, not pycudnn.plan: planning imports this module, never the reverse.
    if not isinstance(graph, PlansItself):
        return None
    plans = graph.build_all(device=plan.device_id)
    ranked = reference_candidates(plans, plan.engine_id)
    for p in plans:
        if not ranked or p is not ranked[0]:
            p.close()
    return ranked[0] if ranked else None


def verify_plan(
    plan: Plan,
    *,
    seed: int = 0,
    max_reference_cost: int = DEFAULT_MAX_REFERENCE_COST,
    reference_plan: Plan | None = None,
    reference_values: Mapping[int, np.ndarray] | None = None,
) -> VerifyResult:
    """Execute ``plan`` on seeded inputs and compare every output with a reference.

    The reference is NumPy (float64) unless the graph costs more than ``max_reference_cost``
    multiply-adds: then NumPy on the first and last batch elements (or the last alone) where the
    graph allows (the outputs of those elements are compared, and every other element of a
    floating-point output must be finite), else another engine's plan for the graph (or
    ``reference_plan``, when given) run on the same inputs, with the sum of both engines'
    tolerances.
    ``reference_values`` (uid -> float64 array, from :func:`~.reference.evaluate` on the same
    seed's inputs) skips recomputing the NumPy reference when several plans of one graph are
    verified.
    Needs a GPU. Returns a :class:`VerifyResult`; a plan that cannot execute gives
    ``status="error"`` rather than raising.
    """

    graph = plan.graph
    if graph is None:
        raise ValueError(
            "this plan was loaded without its graph: pass graph= to Plan.from_json/load so that "
            "there is a description to compute a reference from"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, not {seed!r}")
    vectorized = [t.name for t in graph.tensors if t.is_vectorized]
    if vectorized:
        # The seeded inputs and the NumPy reference work on logical-order strided arrays; an
        # NC/xHWx tensor has no such strides (its strides count whole vectors).
        raise ValueError(
            f"verifying graphs with vectorized (NC/xHWx) tensors is not supported (tensors "
            f"{', '.join(repr(n) for n in vectorized)}); compare with a reference yourself, "
            "reading outputs with pycudnn.layout.from_format"
        )
    st = driver_status()
    if not st.usable:
        raise RuntimeError(
            f"verifying a plan executes it on a GPU, and none is usable here: {st.reason}"
        )
    graph.signature()  # the graph's dtypes and virtual flags are decided
    start = time.perf_counter()
    result = VerifyResult(
        graph=graph.name,
        engine_id=plan.engine_id,
        knobs=dict(plan.knobs),
        notes=tuple(plan.numerical_notes) + tuple(plan.behavior_notes),
        reference="",
        seed=seed,
        known_bad=known_bad_note(graph, plan.engine_id),
    )
    inputs = make_inputs(graph, seed)
    initial = initial_outputs(graph, seed)
    extra: dict[int, float] = {}
    sliced: dict[int, tuple[int, ...]] = {}
    elements: tuple[int, ...] = ()
    try:
        if reference_values is not None:
            refs = dict(reference_values)
            result.reference = "NumPy (float64)"
        elif reference_plan is None and uses_numpy(graph, max_reference_cost):
            refs = evaluate(graph, inputs, initial)
            result.reference = "NumPy (float64)"
        elif reference_plan is None and (elements := _sliced_elements(graph, max_reference_cost)):
            sliced = batch_slice(graph, len(elements)) or {}
            refs = evaluate(
                graph,
                slice_arrays(inputs, sliced, elements),
                slice_arrays(initial, sliced, elements),
                dims=sliced,
            )
            which = " and ".join(map(str, elements))
            result.reference = (
                f"NumPy (float64) on batch element{'s' if len(elements) > 1 else ''} {which} of "
                f"{graph.outputs[0].dims[0]}"
            )
        else:
            ref_plan = (
                reference_plan if reference_plan is not None else _reference_plan(plan, graph)
            )
            if ref_plan is None:
                raise NoReferenceError(
                    f"the graph costs {reference_cost(graph):.3g} multiply-adds (host limit "
                    f"{max_reference_cost:.3g}) and no other engine can run it"
                )
            refs = {
                k: v.astype(np.float64)
                for k, v in _execute(ref_plan, graph, inputs, initial).items()
            }
            result.reference = f"engine {ref_plan.engine_id} (another engine, same inputs)"
            for t in graph.outputs:
                extra[t.uid] = tolerance_for(t, ref_plan.numerical_notes).rtol
            if reference_plan is None:
                ref_plan.close()
    except NoReferenceError as exc:  # a bug in the reference (a KeyError) is no skip
        result.status, result.error = "skipped", str(exc)
        return result
    try:
        got = _execute(plan, graph, inputs, initial)
    except CudnnError as exc:
        result.status, result.error = "error", f"{exc.status_name}: {exc.message}"
        return result
    # NaN in a NumPy reference of variable-length attention marks what cuDNN leaves undefined
    undefined = undefined_where_nan(graph) if result.reference.startswith("NumPy") else set()
    for t in graph.outputs:
        tol = tolerance_for(t, plan.numerical_notes)
        if t.uid in extra:
            ref_term = ("reference engine's tolerance / SAFETY", extra[t.uid] / SAFETY)
            tol = Tolerance(tol.rtol + extra[t.uid], tol.exact, (*tol.terms, ref_term))
        out = got[t.uid][list(elements)] if t.uid in sliced else got[t.uid]
        if t.uid in undefined:  # past a sequence's length: not compared
            out = valid_only(out, refs[t.uid])
        check = compare(t.name, out, refs[t.uid], tol)
        if t.uid in sliced and t.uid not in undefined:
            check = _unwritten(check, got[t.uid], refs[t.uid], elements)
        result.outputs.append(check)
    result.seconds = time.perf_counter() - start
    return result.finish()


def verify_plans(
    plans: Sequence[Plan],
    *,
    seed: int = 0,
    max_reference_cost: int = DEFAULT_MAX_REFERENCE_COST,
) -> list[VerifyResult]:
    """:func:`verify_plan` for plans of one graph; the NumPy reference is computed once."""
    if not plans:
        return []
    graph = plans[0].graph
    values = None
    if graph is not None and all(p.graph is graph for p in plans):
        graph.signature()
        if uses_numpy(graph, max_reference_cost):
            try:
                values = evaluate(graph, make_inputs(graph, seed), initial_outputs(graph, seed))
            except NoReferenceError:
                values = None  # each plan's result then says why it was skipped
    return [
        verify_plan(p, seed=seed, max_reference_cost=max_reference_cost, reference_values=values)
        for p in plans
    ]
