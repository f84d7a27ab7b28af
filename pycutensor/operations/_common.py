"""The machinery shared by the operation kinds: planning an operation, and the functions on arrays.

:class:`PlannableOperation` adds ``plan()`` and ``estimate_workspace()`` to the operation
descriptor. :func:`run` is what :func:`~pycutensor.operations.contract` and the other array
functions do: describe the arrays as they lie in memory, validate everything that can be validated
without a GPU (:func:`prepare`), plan once and keep the descriptors, operation and plan in the
handle's cache under a key made of everything that changes the plan (modes, shapes, strides, dtypes,
pointer alignment, operators, compute type, preference), then execute. A repeated call checks the
arrays and executes only, except while a preference's incremental autotuning is unfinished: then
each call plans again (cuTENSOR's next candidate) until ``incremental_count`` candidates ran and
the winner is kept (:class:`~pycutensor.plan.IncrementalTuning`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

import numpy as np

from _nvbind.arrays import ArrayView, alignment_of, as_array_view
from _nvbind.cuda import stream_handle
from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords

from .._capture import capture_state, tuning_refusal
from ..checks import (
    LoweredTensor,
    check_device_view,
    check_laid_out_like,
    check_operation,
    coerce_scalar,
    label_tuple,
    lower_layouts,
    span,
    table_scalar_dtype,
)
from ..errors import GraphCaptureError
from ..handle import Handle, check_handle_argument, handle_for
from ..operation import Operation
from ..plan import (
    IncrementalTuning,
    Plan,
    PlanPreference,
    PlanPreferenceObject,
    estimate_workspace,
    require_plan_cache,
    tuning_count,
)
from ..tables import KINDS, Kind
from ..tensor import (
    MAX_ALIGNMENT,
    TensorDescriptor,
    TensorSpec,
    check_modes,
    check_pointer,
    data_type_name,
)

__all__ = [
    "LaunchKeywords",
    "OperationKeywords",
    "PlannableOperation",
    "WorkspaceLaunchKeywords",
    "prepare",
    "run",
    "show_operation_keywords",
]


class OperationKeywords(TypedDict, total=False):
    """The keywords every operation object takes (:class:`~pycutensor.Contraction`, ...); with
    :class:`LaunchKeywords`, every function on arrays takes them too. Each defaults to None."""

    compute_type: Any
    """cuTENSOR's compute type: ``"32F"``, ``"tf32"``, ``"CUTENSOR_COMPUTE_DESC_3XTF32"`` or a
    floating dtype; None: the first row of cuTENSOR's table for the data types (32F for 16-bit
    and 32-bit data, 64F for doubles)."""
    handle: Handle | None
    """The :class:`~pycutensor.Handle` to plan and execute with, bound to the tensors' device
    (share one between threads to share its plan cache); None: an operation object's
    descriptors' handle, or for a function on arrays the calling thread's own
    (:func:`~pycutensor.get_handle`)."""


class LaunchKeywords(OperationKeywords, total=False):
    """The keywords every function on arrays takes after its scalars, ``out`` and operators:
    :class:`OperationKeywords` and the stream; each defaults to None."""

    stream: Any
    """The CUDA stream to run on: a ``cudaStream_t`` int, an object with ``__cuda_stream__``
    (cuda.core, CuPy, ...) or a PyTorch stream; None: the legacy default stream."""


class WorkspaceLaunchKeywords(LaunchKeywords, total=False):
    """:class:`LaunchKeywords` and the plan's preference and workspace, for the functions whose
    execute takes a workspace (:func:`contract`, :func:`contract_trinary`, :func:`reduce`)."""

    preference: PlanPreference | None
    """A :class:`~pycutensor.PlanPreference` (algorithm, JIT, autotuning, ...), part of the plan
    cache's key; None: the handle's default preference."""
    workspace: Any
    """Device memory for the plan's workspace, 256-byte aligned and at least the plan's
    ``required_workspace``; None: taken from the device's stream-ordered memory pool (refused
    with :class:`~pycutensor.errors.GraphCaptureError` while the stream is being captured into
    a CUDA graph, which would keep the pool's address after the pool reused it)."""


# Each list's keys, default None.
_OPERATION_DEFAULTS = keyword_defaults(OperationKeywords)
_ARRAY_DEFAULTS = keyword_defaults(LaunchKeywords)
_LAUNCH_DEFAULTS = keyword_defaults(WorkspaceLaunchKeywords)


def show_operation_keywords(namespace: Mapping[str, Any]) -> None:
    """Spell out the shared keyword lists in the signatures of the functions on arrays in
    ``namespace`` (``**kw: Unpack[LaunchKeywords]`` or ``Unpack[WorkspaceLaunchKeywords]``) and of
    its operation classes (``__init__(..., **kw: Unpack[OperationKeywords])``), so that help(),
    :func:`inspect.signature` and the API reference list every keyword; the package calls it once
    with its own namespace, which holds every kind's function and class."""
    show_keywords(namespace, None, LaunchKeywords, WorkspaceLaunchKeywords)
    for value in list(namespace.values()):
        if isinstance(value, type) and issubclass(value, PlannableOperation):
            show_keywords(vars(value), None, OperationKeywords)


#: Argument names of the array functions per kind ("a", "b", "c"), for messages.
_ARRAY_NAMES: dict[str, tuple[str, ...]] = {name: k.array_names for name, k in KINDS.items()}


class PlannableOperation(Operation):
    """An operation of a concrete kind: the descriptor, plus planning (:mod:`pycutensor.plan`)."""

    def _describe(
        self,
        tensors: Sequence[tuple[TensorDescriptor, Any]],
        kw: Mapping[str, Any],
        *,
        unary: Sequence[Any] = (),
        binary: Sequence[Any] = (),
    ) -> None:
        """``__init__``'s work: the operation of ``tensors`` with the :class:`OperationKeywords`
        ``kw`` (``TypeError`` for any other keyword, as Python's own)."""
        k = take_keywords(f"{type(self).__name__}.__init__", kw, _OPERATION_DEFAULTS)
        self._create(k["handle"], tensors, unary=unary, binary=binary,
                     compute_type=k["compute_type"])  # fmt: skip

    def plan(
        self,
        preference: PlanPreference | PlanPreferenceObject | None = None,
        *,
        workspace: str | int = "default",
    ) -> Plan:
        """A :class:`~pycutensor.plan.Plan` for this operation (``cutensorCreatePlan``); without a
        preference, the handle's default one."""
        return Plan(self, preference, workspace=workspace)

    def estimate_workspace(
        self,
        preference: PlanPreference | PlanPreferenceObject | None = None,
        workspace: str = "default",
    ) -> int:
        """``cutensorEstimateWorkspaceSize`` with the ``"min"``, ``"default"`` or ``"max"`` preference."""
        return estimate_workspace(self, preference, workspace)


# -- the functions on arrays --------------------------------------------------------------------------
class _Prepared(NamedTuple):
    specs: list[TensorSpec]  # per described tensor (output last)
    lowered: list[LoweredTensor]
    layouts: list[tuple[tuple[int, ...], tuple[int, ...]]]


def prepare(  # noqa: PLR0917 - internal, one argument per part of the request
    info: Kind,
    views: Sequence[ArrayView],
    labels: Sequence[tuple[Hashable, ...]],
    out_view: ArrayView | None,
    unary: Sequence[Any],
    binary: Sequence[Any],
    compute_type: Any,
    scalars: Mapping[str, Any],
) -> _Prepared:
    """Everything that can be checked without a GPU, from the arrays' layouts."""
    names = [t.lower() for t in info.tensors]
    for view, tensor_labels, name in zip(views, labels, names, strict=False):
        check_modes(tensor_labels, view.ndim, f"modes_{name}")
        data_type_name(view.dtype, name=f"{name}.dtype")
    # The scalars' types are known before any plan exists: refuse them here, not after a plan
    # was built (the execute path checks them again per call).
    scalar_dtype = table_scalar_dtype(data_type_name(views[-1].dtype))
    for scalar_name, value in scalars.items():
        if value is not None and scalar_dtype is not None:
            coerce_scalar(value, scalar_dtype, scalar_name)
    lowered, _ = lower_layouts(
        labels,
        [v.shape for v in views],
        [v.strides for v in views],
        len(views) - 1,
        names=names,
        output_broadcasts=info.rule == "elementwise",
    )
    out_name = names[-1]
    if out_view is not None:
        last = views[-1]
        check_laid_out_like(out_view, "out", last.dtype, last.shape, last.strides, out_name,
                            "cuTENSOR describes both with one descriptor")  # fmt: skip
    for view, name in zip(views, names, strict=False):
        check_pointer(view.ptr, view.itemsize, name)
    specs = []
    for i, (view, low) in enumerate(zip(views, lowered, strict=False)):
        alignment = alignment_of(view.ptr, MAX_ALIGNMENT)
        if i == len(views) - 1 and out_view is not None:
            alignment = min(alignment, alignment_of(out_view.ptr, MAX_ALIGNMENT))
        dt = np.dtype(view.dtype)
        specs.append(TensorSpec(low.extents, low.strides, dt, alignment))
    check_operation(info.name, specs, [low.labels for low in lowered], unary=unary,
                    binary=binary, compute_type=compute_type)  # fmt: skip
    # Known before any plan exists too (the execute path checks it again per call).
    target = out_view if out_view is not None else views[-1]
    if target.readonly:
        raise ValueError(f"the output {'out' if out_view is not None else out_name} is read-only")
    layouts = [(tuple(v.shape), tuple(v.strides)) for v in views]
    return _Prepared(specs, lowered, layouts)


class _Ready:
    """A planned operation kept in a handle's cache: descriptors, operation, plan, and for a
    preference with ``autotune="incremental"`` the tuning state and the preference's C object
    (every plan of the tuning is made with the same one, as in NVIDIA's sample)."""

    __slots__ = ("descriptors", "offsets", "operation", "plan", "preference", "tuning")

    def __init__(self, descriptors: list[TensorDescriptor], operation: Operation, plan: Plan,
                 offsets: list[tuple[int, int]], *, preference: PlanPreferenceObject | None = None,
                 tuning: IncrementalTuning[Plan] | None = None) -> None:  # fmt: skip
        self.descriptors = descriptors
        self.operation = operation
        self.plan = plan
        self.offsets = offsets  # per operand: (lowest, one past highest) byte offset
        self.preference = preference
        self.tuning = tuning  # None once tuning is finished (one attribute test per call)

    def next_plan(self, stream_ptr: int) -> Plan:
        """The plan for this call while incremental tuning is unfinished: cuTENSOR's next
        candidate (``cutensorCreatePlan`` again with the same operation and preference), or, once
        ``incremental_count`` candidates ran, the winner from its plan cache, kept from then on.
        Refused while ``stream_ptr`` is being captured in a CUDA graph."""
        tuning = self.tuning
        if tuning is None:
            return self.plan
        if not tuning.finished:
            _refuse_tuning_capture(stream_ptr, tuning.plans_made, tuning.count)
        plan = tuning.next_plan(self._replan)
        if tuning.finished:
            # plan first, then tuning: a thread that sees tuning None must find the winner
            self.plan = tuning.plan
            self.tuning = None
        return plan

    def _replan(self) -> Plan:
        return Plan(self.operation, self.preference)

    def close(self) -> None:
        tuning = self.tuning
        if tuning is not None:
            tuning.plan.close()
        self.plan.close()
        self.operation.close()
        for d in self.descriptors:
            d.close()


def _refuse_tuning_capture(stream_ptr: int, planned: int, count: int) -> None:
    # Only while tuning (one driver call per tuning call), never for a finished entry.
    refusal = tuning_refusal(capture_state(stream_ptr), planned, count)
    if refusal is not None:
        raise GraphCaptureError(refusal)


def _byte_offsets(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> tuple[int, int]:
    lo, hi = span(0, shape, strides, itemsize)
    return lo, hi


def _common_device(views: Sequence[ArrayView], names: Sequence[str]) -> int:
    device = None
    for view, name in zip(views, names, strict=False):
        check_device_view(view, name, device)
        device = view.device_id
    assert device is not None
    return device


def run(  # noqa: PLR0917 - called from the public functions only
    cls: type[PlannableOperation],
    arrays: Sequence[Any],
    modes: Sequence[Any],
    out: Any,
    scalars: dict[str, Any],
    unary: tuple[Any, ...],
    binary: tuple[Any, ...],
    kw: Mapping[str, Any],
    function: str,
) -> Any:
    """``cls``'s operation on ``arrays`` (see the module docstring); returns the output array.

    ``kw``: the keywords ``function`` was given of its :class:`LaunchKeywords` (or, when the
    kind's execute takes a workspace, :class:`WorkspaceLaunchKeywords`); ``TypeError`` for any
    other, as Python's own. ``handle`` among them must be on the arrays' device; None uses the
    calling thread's handle for that device."""
    info = KINDS[cls.kind]
    k = take_keywords(function, kw, _LAUNCH_DEFAULTS if info.takes_workspace else _ARRAY_DEFAULTS)
    compute_type, preference, stream = k["compute_type"], k.get("preference"), k["stream"]
    handle: Handle | None = k["handle"]
    check_handle_argument(handle)
    if preference is not None and not isinstance(preference, PlanPreference):
        # planning reads its fields (autotune, ...); a C PlanPreferenceObject belongs to a handle
        raise TypeError(
            f"preference must be a PlanPreference or None, not {type(preference).__name__}"
        )
    kind = cls.kind
    names = _ARRAY_NAMES[kind]  # built once, not per call
    stream_ptr = stream_handle(stream)
    views = [
        as_array_view(x, name=n, stream_ptr=stream_ptr) for x, n in zip(arrays, names, strict=False)
    ]
    out_view = None if out is None else as_array_view(out, name="out", stream_ptr=stream_ptr)
    labels = tuple(label_tuple(m, f"modes_{n}") for m, n in zip(modes, names, strict=False))
    all_views = [*views, out_view] if out_view is not None else views
    all_names = [*names, "out"] if out_view is not None else names
    if any(not v.is_device for v in all_views):
        prepare(
            info, views, labels, out_view, unary, binary, compute_type, scalars
        )  # the specific error first
    device = _common_device(all_views, all_names)
    handle = handle_for(handle, device)
    key = (
        kind, labels,
        tuple((v.shape, v.strides, v.dtype, alignment_of(v.ptr, MAX_ALIGNMENT)) for v in views),
        None if out_view is None else (out_view.shape, out_view.strides, out_view.dtype,
                                       alignment_of(out_view.ptr, MAX_ALIGNMENT)),
        unary, binary, compute_type, preference,
    )  # fmt: skip
    try:
        ready: _Ready | None = handle.cached(key)
    except TypeError:  # an unhashable label or operator: _prepare names the argument
        prepare(info, views, labels, out_view, unary, binary, compute_type, scalars)
        raise
    if ready is None:
        ready = _build(
            cls,
            handle,
            info,
            views,
            labels,
            out_view,
            unary,
            binary,
            compute_type,
            preference,
            scalars,
            stream_ptr,
        )
        ready = handle.cache(key, ready)  # another thread sharing the handle may have won
        plan = ready.plan
    else:
        # while incremental tuning is unfinished, every call plans again (the next candidate)
        plan = ready.plan if ready.tuning is None else ready.next_plan(stream_ptr)
    target = out_view if out_view is not None else views[-1]
    if target.readonly:
        raise ValueError(f"the output {'out' if out_view is not None else names[-1]} is read-only")
    pointers = [v.ptr for v in views]
    if len(info.operands) > len(info.tensors):
        pointers.append(target.ptr)
    lo, hi = ready.offsets[-1]
    out_lo, out_hi = pointers[-1] + lo, pointers[-1] + hi
    for i in range(len(views) - (0 if len(info.operands) > len(info.tensors) else 1)):
        if i == len(views) - 1 and pointers[i] == pointers[-1]:
            continue  # C is D
        a, b = ready.offsets[i]
        if pointers[i] + a < out_hi and out_lo < pointers[i] + b:
            raise ValueError(
                f"{names[i]} overlaps the output in memory: cuTENSOR requires inputs not to "
                "overlap the output"
            )
    values = ready.operation.scalar_values(**scalars)
    workspace = k.get("workspace")
    spans: tuple[tuple[str, int, int], ...] = ()
    if workspace is not None:  # a workspace of the caller's must lie apart from the operands
        operand_names = (*names, "out" if out_view is not None else names[-1])
        spans = tuple((n, p + lo, p + hi) for n, p, (lo, hi) in
                      zip(operand_names, pointers, ready.offsets, strict=False))  # fmt: skip
    previous = handle.activate()  # the workspace is allocated on the handle's device
    try:
        ws_ptr, ws_size = plan._workspace(workspace, stream_ptr, stream, spans)
        plan.launch_unchecked(pointers, values, stream_ptr, ws_ptr, ws_size)
    finally:
        handle.restore(previous)
    return out if out is not None else arrays[-1]


def _build(  # noqa: PLR0917 - private
    cls: type[PlannableOperation],
    handle: Handle,
    info: Kind,
    views: Sequence[ArrayView],
    labels: Sequence[tuple[Hashable, ...]],
    out_view: ArrayView | None,
    unary: tuple[Any, ...],
    binary: tuple[Any, ...],
    compute_type: Any,
    preference: PlanPreference | None,
    scalars: Mapping[str, Any],
    stream_ptr: int = 0,
) -> _Ready:
    prepared = prepare(info, views, labels, out_view, unary, binary, compute_type, scalars)
    tuned = preference is not None and preference.autotune == "incremental"
    if tuned:
        require_plan_cache(handle, "PlanPreference(autotune='incremental')")
    descriptors: list[TensorDescriptor] = []
    pref_obj: PlanPreferenceObject | None = None
    tuning: IncrementalTuning[Plan] | None = None
    try:
        for spec in prepared.specs:
            descriptors.append(TensorDescriptor.from_spec(handle, spec))
        tensors = [(d, low.labels) for d, low in zip(descriptors, prepared.lowered, strict=False)]
        operation = cls.__new__(cls)
        lowered_layouts = [(low.extents, low.strides) for low in prepared.lowered]
        operation._create(handle, tensors, unary=unary, binary=binary, compute_type=compute_type,
                          layouts=lowered_layouts)  # fmt: skip
        if tuned:
            assert preference is not None
            # one C preference for every plan of the tuning, kept with the entry
            pref_obj = preference.create(handle)
            count = tuning_count(preference, pref_obj)
            _refuse_tuning_capture(stream_ptr, 0, count)
            plan = Plan(operation, pref_obj)
            tuning = IncrementalTuning(count, plan)
        else:
            plan = Plan(operation, preference)
    except BaseException:
        for d in descriptors:
            d.close()
        raise
    offsets = [_byte_offsets(shape, strides, v.itemsize)
               for (shape, strides), v in zip(prepared.layouts, views, strict=False)]  # fmt: skip
    if len(info.operands) > len(info.tensors):
        offsets.append(offsets[-1])
    return _Ready(descriptors, operation, plan, offsets, preference=pref_obj, tuning=tuning)
