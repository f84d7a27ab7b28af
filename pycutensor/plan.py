"""Plans: the kernel cuTENSOR chose for an operation, executed many times with new pointers.

The sequence is cuTENSOR's: an operation descriptor (:mod:`pycutensor.operations`), a plan
preference (``cutensorCreatePlanPreference`` + ``cutensorPlanPreferenceSetAttribute``), a workspace
estimate (``cutensorEstimateWorkspaceSize`` with the MIN, DEFAULT or MAX preference), the plan
(``cutensorCreatePlan``, whose workspace limit is an upper bound) and the workspace the plan really
needs (``cutensorPlanGetAttribute(CUTENSOR_PLAN_REQUIRED_WORKSPACE)``, never more than the
estimate). Elementwise operations and permutations take no workspace, so they are planned with a
limit of 0 and no estimate, as NVIDIA's samples do.

:meth:`Plan.execute` runs the plan on a stream. Its workspace comes from a buffer kept per (thread,
device, stream) in the device's stream-ordered pool (256-byte aligned, as cuTENSOR requires), so
executing again allocates nothing; the only work per call is checking the arrays and one ctypes
call. :meth:`Plan.launch` skips the array checks for callers that pass raw device pointers.

Incremental autotuning (:func:`autotune`) follows NVIDIA's ``contraction_plan_cache`` sample: with
``PlanPreference(autotune="incremental", incremental_count=n)`` every new plan for the same problem
tries another kernel and cuTENSOR times it; after ``n`` such plans the fastest is in the handle's plan
cache and the next plan created is that one. The cache must be enabled
(``CUTENSOR_DISABLE_PLAN_CACHE`` unset); results are not bitwise reproducible while it tunes, and
plans that are still tuning should not be captured in CUDA graphs.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pycudnn._shared.arrays import alignment_of, as_array_view
from pycudnn._shared.cuda import stream_handle
from pycudnn._shared.resource import ClosedError, CResource

from . import _bindings
from ._lib import LIB, check, clear_last_error

if TYPE_CHECKING:  # pragma: no cover
    from .handle import Handle
    from .operations import Operation

__all__ = [
    "ALGORITHMS",
    "WORKSPACE_PREFERENCES",
    "Plan",
    "PlanPreference",
    "PlanPreferenceObject",
    "autotune",
    "estimate_workspace",
]

#: ``cutensorAlgo_t`` by name; any int >= 0 selects one GEMM-like algorithm and disables the heuristic.
ALGORITHMS: dict[str, int] = {
    "default": int(_bindings.CUTENSOR_ALGO_DEFAULT),
    "default_patient": int(_bindings.CUTENSOR_ALGO_DEFAULT_PATIENT),
    "gett": int(_bindings.CUTENSOR_ALGO_GETT),
    "tgett": int(_bindings.CUTENSOR_ALGO_TGETT),
    "ttgt": int(_bindings.CUTENSOR_ALGO_TTGT),
}
#: ``cutensorWorksizePreference_t`` by name.
WORKSPACE_PREFERENCES: dict[str, int] = {
    "min": int(_bindings.CUTENSOR_WORKSPACE_MIN),
    "default": int(_bindings.CUTENSOR_WORKSPACE_DEFAULT),
    "max": int(_bindings.CUTENSOR_WORKSPACE_MAX),
}
_AUTOTUNE = {
    "none": int(_bindings.CUTENSOR_AUTOTUNE_MODE_NONE),
    "incremental": int(_bindings.CUTENSOR_AUTOTUNE_MODE_INCREMENTAL),
}
_CACHE = {
    "none": int(_bindings.CUTENSOR_CACHE_MODE_NONE),
    "pedantic": int(_bindings.CUTENSOR_CACHE_MODE_PEDANTIC),
}
_JIT = {
    "none": int(_bindings.CUTENSOR_JIT_MODE_NONE),
    "default": int(_bindings.CUTENSOR_JIT_MODE_DEFAULT),
}
# CUTENSOR_PLAN_PREFERENCE_GPU_ARCH: "Currently only SM versions 80, 90 and 100 are supported".
_GPU_ARCHS = (80, 90, 100)
_WORKSPACE_ALIGNMENT = 256  # cutensorContract/Reduce: "the workspace must be aligned to 256 bytes"
_INT32_MAX = 2**31 - 1


def _int_option(value: Any, name: str, low: int, high: int = _INT32_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    v = int(value)
    if not low <= v <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {v}")
    return v


def _choice(value: Any, table: dict[str, int], name: str) -> str:
    if isinstance(value, bool) and ("default" if value else "none") in table:
        return "default" if value else "none"
    if isinstance(value, str) and value.lower() in table:
        return value.lower()
    raise ValueError(f"{name} must be one of {', '.join(map(repr, table))}, got {value!r}")


@dataclass(frozen=True)
class PlanPreference:
    """What a plan may use (``cutensorCreatePlanPreference`` + ``cutensorPlanPreferenceSetAttribute``).

    ``algo``: ``"default"`` (cuTENSOR's heuristic), ``"default_patient"``, ``"gett"``, ``"tgett"``,
    ``"ttgt"``, or an int >= 0 selecting one GEMM-like algorithm (NOT_SUPPORTED when it does not
    apply). ``jit``: ``False``/``"none"`` or ``True``/``"default"`` (just-in-time compiled
    kernels, compute capability 8.0 or newer; the first plan takes seconds). ``autotune``:
    ``"none"`` or ``"incremental"`` (see :func:`autotune`), trying up to ``incremental_count``
    kernels. ``cache_mode``: ``"pedantic"`` (cuTENSOR's default: a cached plan is reused only for
    an identical problem) or ``"none"`` (do not cache). ``kernel_rank``: 0 for the kernel the
    heuristic ranks best, 1 for the second best, ... ``gpu_arch``: plan for SM 80, 90 or 100
    instead of the current device. ``tag``: an int32 stored on the operation descriptor
    (``CUTENSOR_OPERATION_DESCRIPTOR_TAG``) before planning, so that otherwise identical problems
    get separate plan-cache entries. ``None`` leaves cuTENSOR's default.

    The dataclass is pure Python (hashable, usable as a cache key); :meth:`create` makes the C
    object.
    """

    algo: str | int = "default"
    jit: str | bool = "none"
    autotune: str = "none"
    incremental_count: int | None = None
    cache_mode: str | None = None
    kernel_rank: int | None = None
    gpu_arch: int | None = None
    tag: int | None = None

    def __post_init__(self) -> None:
        algo = self.algo
        if isinstance(algo, str):
            if algo.lower() not in ALGORITHMS:
                raise ValueError(
                    f"algo must be one of {', '.join(map(repr, ALGORITHMS))} or an int >= 0, "
                    f"got {algo!r}"
                )
            object.__setattr__(self, "algo", algo.lower())
        else:
            object.__setattr__(self, "algo", _int_option(algo, "algo", 0))
        object.__setattr__(self, "jit", _choice(self.jit, _JIT, "jit"))
        object.__setattr__(self, "autotune", _choice(self.autotune, _AUTOTUNE, "autotune"))
        if self.cache_mode is not None:
            object.__setattr__(self, "cache_mode", _choice(self.cache_mode, _CACHE, "cache_mode"))
        if self.incremental_count is not None:
            _int_option(self.incremental_count, "incremental_count", 1)
        if self.kernel_rank is not None:
            _int_option(self.kernel_rank, "kernel_rank", 0)
        if self.tag is not None:
            _int_option(self.tag, "tag", -(2**31))
        if self.gpu_arch is not None:
            arch = _int_option(self.gpu_arch, "gpu_arch", 0)
            if arch not in _GPU_ARCHS:
                raise ValueError(
                    f"gpu_arch must be one of {_GPU_ARCHS} (10 * SM major + minor; cuTENSOR: "
                    f"'Currently only SM versions 80, 90 and 100 are supported'), got {arch}"
                )
        if self.autotune == "incremental" and self.cache_mode == "none":
            raise ValueError(
                "autotune='incremental' needs the plan cache: cuTENSOR keeps the timings and the "
                "winning kernel there, so cache_mode='none' defeats it"
            )

    @property
    def algo_value(self) -> int:
        return ALGORITHMS[self.algo] if isinstance(self.algo, str) else int(self.algo)

    def attributes(self) -> list[tuple[int, int]]:
        """``(cutensorPlanPreferenceAttribute_t, int32 value)`` pairs to set after creation."""
        out: list[tuple[int, int]] = []
        if self.autotune != "none":
            out.append(
                (int(_bindings.CUTENSOR_PLAN_PREFERENCE_AUTOTUNE_MODE), _AUTOTUNE[self.autotune])
            )
        if self.cache_mode is not None:
            out.append(
                (int(_bindings.CUTENSOR_PLAN_PREFERENCE_CACHE_MODE), _CACHE[self.cache_mode])
            )
        if self.incremental_count is not None:
            out.append(
                (
                    int(_bindings.CUTENSOR_PLAN_PREFERENCE_INCREMENTAL_COUNT),
                    int(self.incremental_count),
                )
            )
        if self.kernel_rank is not None:
            out.append((int(_bindings.CUTENSOR_PLAN_PREFERENCE_KERNEL_RANK), int(self.kernel_rank)))
        if self.gpu_arch is not None:
            out.append((int(_bindings.CUTENSOR_PLAN_PREFERENCE_GPU_ARCH), int(self.gpu_arch)))
        return out

    def create(self, handle: Handle) -> PlanPreferenceObject:
        """The C object (``cutensorCreatePlanPreference`` and one ``SetAttribute`` per option)."""
        return PlanPreferenceObject(handle, self)


def _destroy_preference(ptr: int) -> None:
    LIB.function("cutensorDestroyPlanPreference")(ptr)


class PlanPreferenceObject(CResource):
    """A ``cutensorPlanPreference_t`` made from a :class:`PlanPreference`."""

    _kind = "cuTENSOR plan preference"

    def __init__(self, handle: Handle, preference: PlanPreference) -> None:
        from .handle import Handle

        if not isinstance(handle, Handle):
            raise TypeError(f"handle must be a pycutensor.Handle, not {type(handle).__name__}")
        if not isinstance(preference, PlanPreference):
            raise TypeError(f"preference must be a PlanPreference, not {type(preference).__name__}")
        handle._check_open()
        out = ctypes.c_void_p()
        clear_last_error()
        check(
            LIB.function("cutensorCreatePlanPreference")(
                handle, ctypes.byref(out), preference.algo_value, _JIT[str(preference.jit)]
            ),
            "cutensorCreatePlanPreference",
        )
        super().__init__(int(out.value or 0), _destroy_preference, parents=(handle,))
        self.preference = preference
        self.handle = handle
        setter = LIB.function("cutensorPlanPreferenceSetAttribute")
        for attribute, value in preference.attributes():
            buf = ctypes.c_int32(value)
            clear_last_error()
            check(
                setter(handle, self, attribute, ctypes.byref(buf), ctypes.sizeof(buf)),
                "cutensorPlanPreferenceSetAttribute",
            )

    def get(self, attribute: int) -> int:
        """Read an int32 attribute back (``cutensorPlanPreferenceGetAttribute``, cuTENSOR >= 2.4)."""
        buf = ctypes.c_int32(0)
        clear_last_error()
        check(
            LIB.function("cutensorPlanPreferenceGetAttribute")(
                self.handle, self, int(attribute), ctypes.byref(buf), ctypes.sizeof(buf)
            ),
            "cutensorPlanPreferenceGetAttribute",
        )
        return int(buf.value)


def _workspace_preference(value: Any) -> int:
    if isinstance(value, str) and value.lower() in WORKSPACE_PREFERENCES:
        return WORKSPACE_PREFERENCES[value.lower()]
    raise ValueError(
        f"workspace must be one of {', '.join(map(repr, WORKSPACE_PREFERENCES))} or a byte count, "
        f"got {value!r}"
    )


def estimate_workspace(
    operation: Operation,
    preference: PlanPreference | PlanPreferenceObject | None = None,
    workspace: str = "default",
) -> int:
    """Bytes of workspace ``operation`` may use (``cutensorEstimateWorkspaceSize``).

    ``workspace``: ``"min"`` (at least one algorithm is available), ``"default"`` or ``"max"``
    (every algorithm is available).
    """
    from .operations import Operation

    kind = _workspace_preference(workspace)
    if not isinstance(operation, Operation):
        raise TypeError(f"operation must be a pycutensor Operation, not {type(operation).__name__}")
    if not isinstance(preference, (PlanPreference, PlanPreferenceObject, type(None))):
        # Anything else would reach C as a pointer: ctypes passes a str as a wchar_t* there.
        raise TypeError(
            f"preference must be a PlanPreference or None, not {type(preference).__name__}"
        )
    operation._check_open()
    handle = operation.handle
    own = None
    if isinstance(preference, PlanPreferenceObject):
        pref_obj = preference
    else:
        own = (preference or PlanPreference()).create(handle)
        pref_obj = own
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
        check(status, "cutensorEstimateWorkspaceSize")
        return int(out.value)
    finally:
        if own is not None:
            own.close()


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

    ``preference``: a :class:`PlanPreference` (or its C object), None for cuTENSOR's defaults.
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
        from .operations import Operation

        if not isinstance(operation, Operation):
            raise TypeError(
                f"operation must be a pycutensor Operation, not {type(operation).__name__}"
            )
        if not isinstance(preference, (PlanPreference, PlanPreferenceObject, type(None))):
            raise TypeError(
                f"preference must be a PlanPreference or None, not {type(preference).__name__}"
            )
        # before any C object exists (a bad value used to surface after the preference was made)
        if isinstance(workspace, str):
            _workspace_preference(workspace)
        else:
            _int_option(workspace, "workspace", 0, 2**64 - 1)
        operation._check_open()
        handle = operation.handle
        handle._check_open()
        own_pref = None
        if preference is None:
            pref_obj = None
            options = PlanPreference()
        elif isinstance(preference, PlanPreference):
            own_pref = pref_obj = preference.create(handle)
            options = preference
        else:
            pref_obj, options = preference, preference.preference
        if options.tag is not None:
            operation.tag = int(options.tag)
        if operation.takes_workspace:
            if isinstance(workspace, str):
                limit = estimate_workspace(operation, pref_obj, workspace)
            else:
                limit = _int_option(workspace, "workspace", 0, 2**64 - 1)
        else:
            # Elementwise operations and permutations execute without a workspace.
            limit = (
                0
                if isinstance(workspace, str)
                else _int_option(workspace, "workspace", 0, 2**64 - 1)
            )
        out = ctypes.c_void_p()
        previous = handle.activate()
        try:
            clear_last_error()
            status = LIB.function("cutensorCreatePlan")(
                handle, ctypes.byref(out), operation, pref_obj, limit
            )
        finally:
            handle.restore(previous)
        try:
            check(status, "cutensorCreatePlan")
        except Exception:
            if own_pref is not None:
                own_pref.close()
            raise
        parents = (handle, operation) if pref_obj is None else (handle, operation, pref_obj)
        super().__init__(int(out.value or 0), _destroy_plan, parents=parents)
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
        previous = self.handle.activate()  # the workspace is allocated on the plan's device
        try:
            ws_ptr, ws_size = self._workspace(workspace, stream_ptr, stream)
            self._call(pointers, scalars, stream_ptr, ws_ptr, ws_size)
        finally:
            self.handle.restore(previous)
        return arrays[-1]

    def _workspace(self, workspace: Any, stream_ptr: int, stream: Any) -> tuple[int, int]:
        need = self.required_workspace
        if not self.operation.takes_workspace:
            return 0, 0
        if workspace is None:
            if need == 0:
                return 0, 0
            from pycudnn._shared.memory import workspace as pool_workspace

            ptr = pool_workspace(need, device=self._device, stream=stream_ptr)
            if ptr % _WORKSPACE_ALIGNMENT:
                raise RuntimeError(
                    f"the memory pool returned a workspace at 0x{ptr:x}, not 256-byte aligned"
                )
            return ptr, need
        ptr, size = _buffer_extent(workspace, stream_ptr)
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

        ``pointers`` are in :attr:`Operation.operand_names` order (all of them); ``scalars`` in
        :attr:`Operation.scalar_names` order. Pointers are checked only against the alignment the
        operation was described for; the caller vouches for everything else (device memory of
        the plan's device, layouts, a 256-byte aligned workspace of ``workspace_size`` bytes).
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
        previous = self.handle.activate()
        try:
            self._call(pointers, scalars, stream_ptr, workspace_ptr, workspace_size)
        finally:
            self.handle.restore(previous)

    def _call(
        self,
        pointers: Sequence[int],
        scalars: Sequence[Any],
        stream_ptr: int,
        workspace_ptr: int,
        workspace_size: int,
    ) -> None:
        # The execute itself; the caller has made the plan's device current.
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
        buf = self._scalars
        for i, value in enumerate(scalars):
            buf[i] = value
        clear_last_error()
        status = self._fn(
            *self._args(
                self._handle_ptr, self._plan_ptr, self._scalar_ptrs, pointers,
                workspace_ptr, workspace_size, stream_ptr,
            )
        )  # fmt: skip
        if status:
            check(status, self.operation.execute_function)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"0x{self.ptr:x}"
        op = getattr(self, "operation", None)
        kind = op.kind if op is not None else "?"
        return (
            f"<pycutensor.Plan {state} {kind} workspace={getattr(self, 'required_workspace', '?')}>"
        )


def _buffer_extent(buffer: Any, stream_ptr: int) -> tuple[int, int]:
    handle = getattr(buffer, "handle", None)
    size = getattr(buffer, "size", None)
    if handle is not None and isinstance(size, int) and not hasattr(buffer, "shape"):
        return int(handle), int(size)  # a cuda.core Buffer
    view = as_array_view(buffer, name="workspace", stream_ptr=stream_ptr)
    if not view.is_device:
        raise ValueError("workspace must be device memory, not a host array")
    return view.ptr, view.span_bytes()


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
    the wall time of each execute in seconds (the stream is synchronised after each).
    ``arrays`` are overwritten as by :meth:`Plan.execute`.
    """
    if preference is None:
        preference = PlanPreference(autotune="incremental", incremental_count=4)
    if preference.autotune != "incremental":
        raise ValueError("autotune() needs a PlanPreference with autotune='incremental'")
    from .handle import synchronize_stream

    count = preference.incremental_count or 4
    stream_ptr = stream_handle(stream)
    pref_obj = preference.create(operation.handle)  # the plans keep it alive
    times: list[float] = []
    plan = None
    for i in range(count + 1):
        plan = Plan(operation, pref_obj)
        start = time.perf_counter()
        plan.execute(*arrays, alpha=alpha, beta=beta, gamma=gamma, stream=stream)
        synchronize_stream(stream_ptr)
        times.append(time.perf_counter() - start)
        if i < count:
            plan.close()
    assert plan is not None
    return plan, times
