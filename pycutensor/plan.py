"""Plans: the kernel cuTENSOR chose for an operation, executed many times with new pointers.

The sequence is cuTENSOR's: an operation descriptor (:mod:`pycutensor.operation`), a plan
preference (:mod:`pycutensor.preference`; the handle's default one when none is given, since
cuTENSOR 2.8 refuses NULL), a workspace estimate (``cutensorEstimateWorkspaceSize`` with the MIN,
DEFAULT or MAX preference), the plan (``cutensorCreatePlan``, whose workspace limit is an upper
bound) and the workspace the plan really needs (``cutensorPlanGetAttribute(CUTENSOR_PLAN_REQUIRED_
WORKSPACE)``, never more than the estimate). Elementwise operations and permutations take no
workspace, so they are planned with a limit of 0 and no estimate, as NVIDIA's samples do.

:meth:`Plan.execute` runs the plan on a stream. Its workspace comes from a buffer kept per (thread,
device, stream) in the device's stream-ordered pool (256-byte aligned, as cuTENSOR requires), so
executing again allocates nothing; the only work per call is checking the arrays and one ctypes
call. :meth:`Plan.launch` skips the array checks for callers that pass raw device pointers, and
:meth:`Plan.launch_unchecked` also the type checks, for callers that checked everything already.

Incremental autotuning (:func:`autotune`) follows NVIDIA's ``contraction_plan_cache`` sample: with
``PlanPreference(autotune="incremental", incremental_count=n)`` every new plan for the same problem
tries another kernel and cuTENSOR times it; after ``n`` such plans the fastest is in the handle's plan
cache and the next plan created is that one. The functions on arrays (:func:`pycutensor.contract`,
...) do the same across calls (:class:`IncrementalTuning`). The cache must be enabled
(``CUTENSOR_DISABLE_PLAN_CACHE`` unset, a capacity above 0: :func:`autotune` refuses otherwise);
results are not bitwise reproducible while it tunes, and plans that are still tuning must not be
captured in CUDA graphs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from _nvbind.arrays import alignment_of
from _nvbind.cuda import require_cuda_core, stream_handle
from _nvbind.forksafe import fork_safe_lock
from _nvbind.memory import stream_object
from _nvbind.memory import workspace as pool_workspace
from _nvbind.resource import ClosedError, CResource
from _nvbind.shutdown import library_call
from _nvbind.suggest import did_you_mean

from . import _bindings
from ._capture import capture_state, jit_planning_refusal, tuning_refusal
from ._lib import LIB, check, clear_last_error
from .checks import check_workspace_apart, coerce_scalar, operand_spans, workspace_extent
from .errors import GraphCaptureError
from .handle import Handle
from .operation import Operation
from .preference import (
    ALGORITHMS,
    PlanPreference,
    PlanPreferenceObject,
    check_planning,
    default_preference,
    int_option,
)
from .tuning import IncrementalTuning, require_plan_cache, tuning_count

__all__ = [
    "ALGORITHMS",
    "WORKSPACE_PREFERENCES",
    "IncrementalTuning",
    "Plan",
    "PlanPreference",
    "PlanPreferenceObject",
    "autotune",
    "default_preference",
    "estimate_workspace",
    "require_plan_cache",
    "tuning_count",
]

#: ``cutensorWorksizePreference_t`` by name.
WORKSPACE_PREFERENCES: dict[str, int] = {
    "min": int(_bindings.CUTENSOR_WORKSPACE_MIN),
    "default": int(_bindings.CUTENSOR_WORKSPACE_DEFAULT),
    "max": int(_bindings.CUTENSOR_WORKSPACE_MAX),
}
_WORKSPACE_ALIGNMENT = 256  # cutensorContract/Reduce: "the workspace must be aligned to 256 bytes"


def _workspace_preference(value: Any) -> int:
    if isinstance(value, str) and value.lower() in WORKSPACE_PREFERENCES:
        return WORKSPACE_PREFERENCES[value.lower()]
    hint = did_you_mean(value, WORKSPACE_PREFERENCES) if isinstance(value, str) else ""
    raise ValueError(
        f"workspace must be one of {', '.join(map(repr, WORKSPACE_PREFERENCES))} or a byte count, "
        f"got {value!r}{hint}"
    )


def _preference_object(
    handle: Handle, preference: PlanPreference | PlanPreferenceObject | None
) -> tuple[PlanPreferenceObject, PlanPreferenceObject | None]:
    """The C preference to plan with, and the one made here for this call (to close), if any."""
    if preference is None:
        return default_preference(handle), None
    if isinstance(preference, PlanPreferenceObject):
        return preference, None
    own = preference.create(handle)
    return own, own


def _check_preference_argument(preference: Any) -> None:
    # Anything else would reach C as a pointer: ctypes passes a str as a wchar_t* there.
    if not isinstance(preference, (PlanPreference, PlanPreferenceObject, type(None))):
        raise TypeError(
            f"preference must be a PlanPreference or None, not {type(preference).__name__}"
        )


def estimate_workspace(
    operation: Operation,
    preference: PlanPreference | PlanPreferenceObject | None = None,
    workspace: str = "default",
) -> int:
    """Bytes of workspace ``operation`` may use (``cutensorEstimateWorkspaceSize``).

    ``workspace``: ``"min"`` (at least one algorithm is available), ``"default"`` or ``"max"``
    (every algorithm is available). ``preference`` None uses the handle's default preference.
    """
    kind = _workspace_preference(workspace)
    if not isinstance(operation, Operation):
        raise TypeError(f"operation must be a pycutensor Operation, not {type(operation).__name__}")
    _check_preference_argument(preference)
    operation._check_open()
    handle = operation.handle
    pref_obj, own = _preference_object(handle, preference)
    try:
        out = ctypes.c_uint64(0)
        previous = handle.activate()
        try:
            clear_last_error()
            status = LIB.function("cutensorEstimateWorkspaceSize")(
                handle, operation, pref_obj, kind, ctypes.byref(out)
            )
        finally:
            handle.restore(previous)
        check_planning(status, "cutensorEstimateWorkspaceSize", pref_obj.preference)
        return int(out.value)
    finally:
        if own is not None:
            own.close()


def _create_plan(
    handle: Handle, operation: Operation, preference: PlanPreferenceObject, limit: int
) -> int:
    """``cutensorCreatePlan`` on the handle's device; returns the plan's pointer.

    The one place the library calls ``cutensorCreatePlan``. ``preference`` must be a C object:
    cuTENSOR 2.8 refuses NULL ("pref must not be nullptr"), though ``cutensor.h`` allows it.
    With just-in-time compilation enabled it raises :class:`~pycutensor.errors.GraphCaptureError`
    while a blocking stream of the handle's device is being captured (see :mod:`._capture`).
    """
    if not isinstance(preference, PlanPreferenceObject):
        raise TypeError(
            "preference must be a PlanPreferenceObject, not "
            f"{type(preference).__name__}: cuTENSOR 2.8's cutensorCreatePlan refuses a NULL pref "
            "('pref must not be nullptr'); plans made without one use default_preference(handle)"
        )
    out = ctypes.c_void_p()
    previous = handle.activate()
    try:
        if preference.preference.jit != "none":
            # JIT planning must not be captured; the legacy stream of the handle's (now current)
            # context tells whether a blocking stream is capturing. One driver call, JIT only.
            refusal = jit_planning_refusal(capture_state(None), jit=True)
            if refusal is not None:
                raise GraphCaptureError(refusal)
        clear_last_error()
        # JIT compiles kernels: exit waits for it
        status = library_call("cutensorCreatePlan").run(
            LIB.function("cutensorCreatePlan"),
            handle,
            ctypes.byref(out),
            operation,
            preference,
            limit,
        )
    finally:
        handle.restore(previous)
    check_planning(status, "cutensorCreatePlan", preference.preference)
    return int(out.value or 0)


def _destroy_plan(ptr: int) -> None:
    LIB.function("cutensorDestroyPlan")(ptr)


# Execute argument orders, one per operation kind: (handle, plan, scalars, pointers, ws, size, s).
def _args_contraction(  # noqa: PLR0917
    h: int, p: int, s: Sequence[int], x: Sequence[int], w: int, n: int, st: int
) -> tuple[Any, ...]:
    return (h, p, s[0], x[0], x[1], s[1], x[2], x[3], w or None, n, st or None)


def _args_contraction_trinary(  # noqa: PLR0917
    h: int, p: int, s: Sequence[int], x: Sequence[int], w: int, n: int, st: int
) -> tuple[Any, ...]:
    return (h, p, s[0], x[0], x[1], x[2], s[1], x[3], x[4], w or None, n, st or None)


def _args_reduction(  # noqa: PLR0917
    h: int, p: int, s: Sequence[int], x: Sequence[int], w: int, n: int, st: int
) -> tuple[Any, ...]:
    return (h, p, s[0], x[0], s[1], x[1], x[2], w or None, n, st or None)


def _args_elementwise_binary(  # noqa: PLR0917
    h: int, p: int, s: Sequence[int], x: Sequence[int], w: int, n: int, st: int
) -> tuple[Any, ...]:
    return (h, p, s[0], x[0], s[1], x[1], x[2], st or None)


def _args_elementwise_trinary(  # noqa: PLR0917
    h: int, p: int, s: Sequence[int], x: Sequence[int], w: int, n: int, st: int
) -> tuple[Any, ...]:
    return (h, p, s[0], x[0], s[1], x[1], s[2], x[2], x[3], st or None)


def _args_permutation(  # noqa: PLR0917
    h: int, p: int, s: Sequence[int], x: Sequence[int], w: int, n: int, st: int
) -> tuple[Any, ...]:
    return (h, p, s[0], x[0], x[1], st or None)


_ARGUMENTS: dict[str, Callable[..., tuple[Any, ...]]] = {
    "contraction": _args_contraction,
    "contraction_trinary": _args_contraction_trinary,
    "reduction": _args_reduction,
    "elementwise_binary": _args_elementwise_binary,
    "elementwise_trinary": _args_elementwise_trinary,
    "permutation": _args_permutation,
}


class Plan(CResource):
    """A ``cutensorPlan_t`` for one operation (``cutensorCreatePlan``).

    ``preference``: a :class:`PlanPreference` (or its C object); None plans with cuTENSOR's
    defaults through the handle's :func:`default_preference` (created once per handle).
    ``workspace``: for operations that take a workspace (contractions, reductions), the
    ``cutensorWorksizePreference_t`` used for the estimate (``"min"``, ``"default"``, ``"max"``) or
    an explicit limit in bytes; elementwise operations and permutations are planned with 0.

    The plan keeps its operation, preference and handle alive. Executes make the handle's device
    current if another one is, and restore the caller's context afterwards.
    """

    _kind = "cuTENSOR plan"

    def __init__(
        self,
        operation: Operation,
        preference: PlanPreference | PlanPreferenceObject | None = None,
        *,
        workspace: str | int = "default",
    ) -> None:
        if not isinstance(operation, Operation):
            raise TypeError(
                f"operation must be a pycutensor Operation, not {type(operation).__name__}"
            )
        _check_preference_argument(preference)
        # before any C object exists (a bad value used to surface after the preference was made)
        if isinstance(workspace, str):
            _workspace_preference(workspace)
        else:
            int_option(workspace, "workspace", 0, 2**64 - 1)
        operation._check_open()
        handle = operation.handle
        handle._check_open()
        pref_obj, own_pref = _preference_object(handle, preference)
        options = pref_obj.preference
        try:
            # this plan's tag, or the operation's own: never an earlier plan's (plan-cache key)
            operation._tag_for_plan(options.tag)
            if not isinstance(workspace, str):
                limit = int_option(workspace, "workspace", 0, 2**64 - 1)
            elif operation.takes_workspace:
                limit = estimate_workspace(operation, pref_obj, workspace)
            else:
                limit = 0  # elementwise operations and permutations execute without a workspace
            ptr = _create_plan(handle, operation, pref_obj, limit)
        except BaseException:
            if own_pref is not None:
                own_pref.close()
            raise
        super().__init__(ptr, _destroy_plan, parents=(handle, operation, pref_obj))
        self.handle = handle
        self.operation = operation
        self.preference = options
        self.workspace_limit = limit
        required = ctypes.c_uint64(0)
        clear_last_error()
        check(
            LIB.function("cutensorPlanGetAttribute")(
                handle, self, int(_bindings.CUTENSOR_PLAN_REQUIRED_WORKSPACE),
                ctypes.byref(required), ctypes.sizeof(required),
            ),
            "cutensorPlanGetAttribute",
        )  # fmt: skip
        #: Exact bytes of workspace this plan needs (``CUTENSOR_PLAN_REQUIRED_WORKSPACE``).
        self.required_workspace = int(required.value)
        self._prepare()

    def _prepare(self) -> None:
        # Everything an execute needs, computed once: the bound C function, the raw pointers, the
        # argument builder and one host buffer per scalar (cuTENSOR reads scalars from host memory,
        # typed as the operation's SCALAR_TYPE).
        op = self.operation
        self._fn = LIB.function(op.execute_function)
        self._args = _ARGUMENTS[op.kind]
        self._handle_ptr = self.handle.ptr
        self._plan_ptr = self.ptr
        self.scalar_dtype: np.dtype = op.scalar_type
        self._scalars = np.zeros(max(len(op.scalar_names), 1), dtype=self.scalar_dtype)
        base = int(self._scalars.ctypes.data)
        size = self._scalars.itemsize
        self._scalar_ptrs = tuple(base + i * size for i in range(len(op.scalar_names)))
        self._alignments = tuple(o.spec.alignment for o in op.operands)
        self._device = self.handle.device
        # Threads sharing a handle share its cached plans: the lock keeps one thread's scalars in
        # the buffer until cuTENSOR has read them (ctypes releases the GIL during the call).
        self._call_lock = fork_safe_lock(self, "_call_lock")

    # -- executing ----------------------------------------------------------------------------
    def execute(
        self,
        *arrays: Any,
        alpha: Any = None,
        beta: Any = None,
        gamma: Any = None,
        stream: Any = None,
        workspace: Any = None,
    ) -> Any:
        """Run the plan on ``stream`` and return the output array.

        ``arrays`` are the operation's operands in C order (:attr:`Operation.operand_names`):
        ``a, b, c[, d]`` for a contraction (``d`` defaults to ``c``: C may equal D), ``a, b, c, d[,
        e]`` for a trinary contraction, ``a, c[, d]`` for a reduction or an elementwise binary
        operation, ``a, b, c[, d]`` for an elementwise trinary one, ``a, b`` for a permutation.
        Each is an array (DLPack or ``__cuda_array_interface__``) laid out exactly as the
        operation was described, or a raw device pointer (int; only its alignment is checked).
        Scalars not given take the operation's defaults (:attr:`Operation.scalar_defaults`).
        ``workspace``: None (a reusable buffer from the pool) or a device buffer/array of at least
        :attr:`required_workspace` bytes, 256-byte aligned.
        """
        if self._ptr is None:  # before any array inspection or workspace allocation
            raise ClosedError("this cuTENSOR plan is closed")
        op = self.operation
        names = op.operand_names
        if op.output_shares_descriptor and len(arrays) == len(names) - 1 and arrays:
            arrays = (*arrays, arrays[-1])  # the output defaults to C (C may equal D)
        if len(arrays) != len(names):
            optional = (
                f" (the last may be omitted: it then is {names[-2]})"
                if op.output_shares_descriptor
                else ""
            )
            raise TypeError(
                f"a {op.kind} plan takes the arrays {', '.join(names)}{optional}, got {len(arrays)}"
            )
        stream_ptr = stream_handle(stream)
        pointers = op.check_arrays(arrays, stream_ptr)
        scalars = op.scalar_values(alpha=alpha, beta=beta, gamma=gamma)
        # a workspace of the caller's must lie apart from the operands (the pool's does)
        spans = () if workspace is None else operand_spans(arrays, names, stream_ptr)
        previous = self.handle.activate()  # the workspace is allocated on the plan's device
        try:
            ws_ptr, ws_size = self._workspace(workspace, stream_ptr, stream, spans)
            self.launch_unchecked(pointers, scalars, stream_ptr, ws_ptr, ws_size)
        finally:
            self.handle.restore(previous)
        return arrays[-1]

    def _workspace(
        self, workspace: Any, stream_ptr: int, stream: Any, spans: Sequence[Any] = ()
    ) -> tuple[int, int]:
        # spans: (name, lowest, one past highest address) of the operands (operand_spans)
        need = self.required_workspace
        if not self.operation.takes_workspace:
            return 0, 0
        if workspace is None:
            if need == 0:
                return 0, 0

            ptr = pool_workspace(need, device=self._device, stream=stream_ptr)
            if ptr % _WORKSPACE_ALIGNMENT:
                raise RuntimeError(
                    f"the memory pool returned a workspace at 0x{ptr:x}, not 256-byte aligned"
                )
            return ptr, need
        ptr, size = workspace_extent(workspace, stream_ptr, self.handle.device_id)
        check_workspace_apart(ptr, size, spans)
        if ptr % _WORKSPACE_ALIGNMENT:
            raise ValueError(
                f"workspace at 0x{ptr:x} is not 256-byte aligned (cuTENSOR requires it)"
            )
        if size < need:
            raise ValueError(
                f"workspace has {size} bytes but this plan requires {need} "
                "(CUTENSOR_PLAN_REQUIRED_WORKSPACE)"
            )
        return ptr, size

    def launch(
        self,
        pointers: Sequence[int],
        scalars: Sequence[Any],
        stream_ptr: int = 0,
        workspace_ptr: int = 0,
        workspace_size: int = 0,
    ) -> None:
        """Execute with raw device pointers: the hot path, no array inspection.

        ``pointers`` are in :attr:`Operation.operand_names` order, ``scalars`` in
        :attr:`Operation.scalar_names` order (all of each). Pointers are checked only against the
        alignment the operation was described for; the caller vouches for everything else (device
        memory of the plan's device, layouts, a 256-byte aligned workspace of ``workspace_size``
        bytes).
        """
        # Only the types are checked: ctypes would pass a str as a wchar_t* and wrap negative or
        # oversized ints into other addresses.
        n = len(self.operation.operand_names)
        if len(pointers) != n:
            raise TypeError(f"launch takes {n} pointers, got {len(pointers)}")
        for value, what in (*((p, "pointers") for p in pointers),
                            (stream_ptr or 0, "stream_ptr"), (workspace_ptr or 0, "workspace_ptr"),
                            (workspace_size, "workspace_size")):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
                raise TypeError(f"{what} must hold 64-bit unsigned ints, got {value!r}")
        names = self.operation.scalar_names
        # all of them: the plan's scalar buffer keeps the previous call's values, so a scalar
        # left out would run with whatever the last execute or launch put there
        if len(scalars) != len(names):
            raise TypeError(f"launch takes the scalars {', '.join(names)}, got {len(scalars)}")
        # as execute checks them: NumPy would drop an imaginary part or parse a str silently
        dtype = self.scalar_dtype
        scalars = [coerce_scalar(v, dtype, n) for v, n in zip(scalars, names, strict=False)]
        previous = self.handle.activate()
        try:
            self.launch_unchecked(pointers, scalars, stream_ptr, workspace_ptr, workspace_size)
        finally:
            self.handle.restore(previous)

    def launch_unchecked(
        self,
        pointers: Sequence[int],
        scalars: Sequence[Any],
        stream_ptr: int,
        workspace_ptr: int,
        workspace_size: int,
    ) -> None:
        """Execute for a caller that has already checked every argument: one C call, nothing else.

        Calls the operation's execute function (:attr:`Operation.execute_function`:
        ``cutensorContract``, ``cutensorContractTrinary``, ``cutensorReduce``,
        ``cutensorElementwiseBinaryExecute``, ``cutensorElementwiseTrinaryExecute`` or
        ``cutensorPermute``) with this plan. It is what :meth:`execute` and :meth:`launch` end in,
        and what :mod:`pycutensor`'s functions on arrays and einsum programs call once their
        operands are checked. ``pointers`` are all of :attr:`Operation.operand_names`, in order, as
        64-bit unsigned ints; ``scalars`` are :attr:`Operation.scalar_names`' values, in order;
        ``stream_ptr`` a ``cudaStream_t`` (0: the legacy stream); ``workspace_ptr`` and
        ``workspace_size`` a 256-byte aligned device buffer of at least
        :attr:`required_workspace` bytes (0, 0 when the plan needs none). The caller must have
        made the plan's device current (:meth:`Handle.activate`). Checked here, because they are
        cheap and a wrong answer would be silent: the plan and its handle are open
        (:class:`~_nvbind.resource.ClosedError` otherwise) and each pointer has the alignment the
        operation was described for (``ValueError``), and every scalar is given (``TypeError``:
        one left out would run with the previous call's value). Anything else wrong (a host
        pointer, a short buffer, a str where an int belongs) reaches C unchecked: use
        :meth:`launch` for raw pointers from elsewhere.
        """
        if self._ptr is None:
            raise ClosedError("this cuTENSOR plan is closed")
        if self.handle._ptr is None:
            raise ClosedError("the handle of this cuTENSOR plan is closed")
        for ptr, need in zip(pointers, self._alignments, strict=False):
            if ptr & (need - 1):
                raise ValueError(
                    f"pointer 0x{ptr:x} is {alignment_of(ptr)}-byte aligned, but the plan was "
                    f"made for {need}-byte aligned operands; describe the tensors with "
                    f"alignment={alignment_of(ptr)} and plan again"
                )
        if len(scalars) != len(self._scalar_ptrs):  # one left out: the last call's value
            names = ", ".join(self.operation.scalar_names)
            raise TypeError(f"launch_unchecked takes the scalars {names}, got {len(scalars)}")
        args = self._args(self._handle_ptr, self._plan_ptr, self._scalar_ptrs, pointers,
                          workspace_ptr, workspace_size, stream_ptr)  # fmt: skip
        buf = self._scalars
        with self._call_lock:  # cuTENSOR reads the scalars from buf during the call
            for i, value in enumerate(scalars):
                buf[i] = value
            clear_last_error()
            status = self._fn(*args)
        if status:
            check(status, self.operation.execute_function)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"0x{self.ptr:x}"
        op = getattr(self, "operation", None)
        kind = op.kind if op is not None else "?"
        return (
            f"<pycutensor.Plan {state} {kind} workspace={getattr(self, 'required_workspace', '?')}>"
        )


def autotune(
    operation: Operation,
    *arrays: Any,
    preference: PlanPreference | None = None,
    alpha: Any = None,
    beta: Any = None,
    gamma: Any = None,
    stream: Any = None,
) -> tuple[Plan, list[float]]:
    """Incremental autotuning as in NVIDIA's ``contraction_plan_cache`` sample.

    With ``preference`` (default ``PlanPreference(autotune="incremental", incremental_count=4)``)
    this creates a fresh plan, executes it on ``arrays`` and destroys it, ``incremental_count + 1``
    times: each of the first ``incremental_count`` plans tries another kernel, which cuTENSOR
    times; the last one is the winner, taken from the handle's plan cache. Returns that plan and
    the GPU time of each execute in seconds, measured between two CUDA events recorded on
    ``stream`` around it (``cuda.core`` events with timing, as :mod:`pycudnn`'s autotune does), so
    host work and plan creation are not counted. ``arrays`` are overwritten as by
    :meth:`Plan.execute`.

    Raises :class:`~pycutensor.errors.GraphCaptureError` when ``stream`` is being captured in a
    CUDA graph (tuning plans must not be captured), and ``ValueError`` when the operation's handle
    has no plan cache
    (``CUTENSOR_DISABLE_PLAN_CACHE=1`` when it was created, or a capacity of 0): every plan would
    then be an untimed candidate, not the tuned one.
    """
    if not isinstance(operation, Operation):
        raise TypeError(f"operation must be a pycutensor Operation, not {type(operation).__name__}")
    if preference is None:
        preference = PlanPreference(autotune="incremental", incremental_count=4)
    if not isinstance(preference, PlanPreference):
        raise TypeError(f"preference must be a PlanPreference, not {type(preference).__name__}")
    if preference.autotune != "incremental":
        raise ValueError("autotune() needs a PlanPreference with autotune='incremental'")

    operation._check_open()
    handle = operation.handle
    require_plan_cache(handle, "autotune()")
    core = require_cuda_core()
    timing = core.EventOptions(timing_enabled=True)
    times: list[float] = []
    previous = handle.activate()  # events and the stream belong to the handle's device
    try:
        s = stream_object(stream, handle.device)
        pref_obj = preference.create(handle)  # one for every plan of the run; they keep it alive
        # cuTENSOR's own count when none is given (the loop used to assume 4)
        count = tuning_count(preference, pref_obj)
        refusal = tuning_refusal(capture_state(stream_handle(s)), 0, count)
        if refusal is not None:
            raise GraphCaptureError(refusal)
        for i in range(count + 1):
            plan = Plan(operation, pref_obj)
            try:
                start = s.record(options=timing)
                plan.execute(*arrays, alpha=alpha, beta=beta, gamma=gamma, stream=s)
                end = s.record(options=timing)
                end.sync()
            except BaseException:
                plan.close()
                raise
            times.append(float(end - start) / 1e3)  # cuda.core gives milliseconds
            if i < count:
                plan.close()
    finally:
        handle.restore(previous)
    return plan, times
