"""Plan preferences: what a plan may use (``cutensorPlanPreference_t``).

:class:`PlanPreference` is the pure-Python description (a frozen dataclass, usable as a cache key);
:class:`PlanPreferenceObject` is the C object made from it (``cutensorCreatePlanPreference`` and one
``cutensorPlanPreferenceSetAttribute`` per option). :func:`default_preference` is the C object with
cuTENSOR's defaults that every plan made without a preference uses: cuTENSOR 2.8 refuses a NULL
preference in ``cutensorCreatePlan`` ("pref must not be nullptr", measured on an H100, although
``cutensor.h`` still says it may be NULL), so one is created per handle on first use, owned by the
handle and destroyed with it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from _nvbind.resource import CResource
from _nvbind.suggest import did_you_mean

from . import _bindings
from ._lib import LIB, check, check_enum, clear_last_error, take_last_error
from .errors import error_from_status
from .handle import Handle

__all__ = [
    "ALGORITHMS",
    "PlanPreference",
    "PlanPreferenceObject",
    "algorithm_note",
    "check_planning",
    "default_preference",
]

#: ``cutensorAlgo_t`` by name. ``cutensor.h`` once documented that any int >= 0 selects one GEMM-like
#: algorithm and disables the heuristic; cuTENSOR 2.8 refuses such numbers (see algorithm_note).
ALGORITHMS: dict[str, int] = {
    "default": int(_bindings.CUTENSOR_ALGO_DEFAULT),
    "default_patient": int(_bindings.CUTENSOR_ALGO_DEFAULT_PATIENT),
    "gett": int(_bindings.CUTENSOR_ALGO_GETT),
    "tgett": int(_bindings.CUTENSOR_ALGO_TGETT),
    "ttgt": int(_bindings.CUTENSOR_ALGO_TTGT),
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
_INT32_MAX = 2**31 - 1
_NOT_SUPPORTED = int(_bindings.CUTENSOR_STATUS_NOT_SUPPORTED)


def int_option(value: Any, name: str, low: int, high: int = _INT32_MAX) -> int:
    """``value`` as an int from ``low`` to ``high``, or a TypeError/ValueError naming ``name``."""
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
    hint = did_you_mean(value, table) if isinstance(value, str) else ""
    raise ValueError(f"{name} must be one of {', '.join(map(repr, table))}, got {value!r}{hint}")


@dataclass(frozen=True)
class PlanPreference:
    """What a plan may use (``cutensorCreatePlanPreference`` + ``cutensorPlanPreferenceSetAttribute``).

    ``algo``: ``"default"`` (cuTENSOR's heuristic), ``"default_patient"``, ``"gett"``, ``"tgett"``,
    ``"ttgt"``, or an int >= 0 selecting one GEMM-like algorithm by number (passed on to cuTENSOR,
    but cuTENSOR 2.8 refuses the numbers 0-3 with NOT_SUPPORTED for every contraction measured on
    an H100: the error then says so; prefer the names). ``jit``: ``False``/``"none"`` or ``True``/``"default"`` (just-in-time compiled
    kernels, compute capability 8.0 or newer; the first plan takes seconds). ``autotune``:
    ``"none"`` or ``"incremental"`` (see :func:`pycutensor.plan.autotune`), trying up to ``incremental_count``
    kernels. ``cache_mode``: ``"pedantic"`` (cuTENSOR's default: a cached plan is reused only for
    an identical problem) or ``"none"`` (do not cache). ``kernel_rank``: 0 for the kernel the
    heuristic ranks best, 1 for the second best, ... ``gpu_arch``: plan for SM 80, 90 or 100
    instead of the current device. ``tag``: an int32 stored on the operation descriptor
    (``CUTENSOR_OPERATION_DESCRIPTOR_TAG``) before planning, so that otherwise identical problems
    get separate plan-cache entries; it applies to the plan made with this preference only.
    ``None`` plans with the operation's own tag (``Operation.tag`` as last set, else cuTENSOR's
    default 0).

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
                    f"got {algo!r}{did_you_mean(algo, ALGORITHMS)}"
                )
            object.__setattr__(self, "algo", algo.lower())
        else:
            object.__setattr__(self, "algo", int_option(algo, "algo", 0))
        object.__setattr__(self, "jit", _choice(self.jit, _JIT, "jit"))
        object.__setattr__(self, "autotune", _choice(self.autotune, _AUTOTUNE, "autotune"))
        if self.cache_mode is not None:
            object.__setattr__(self, "cache_mode", _choice(self.cache_mode, _CACHE, "cache_mode"))
        if self.incremental_count is not None:
            int_option(self.incremental_count, "incremental_count", 1)
        if self.kernel_rank is not None:
            int_option(self.kernel_rank, "kernel_rank", 0)
        if self.tag is not None:
            int_option(self.tag, "tag", -(2**31))
        if self.gpu_arch is not None:
            arch = int_option(self.gpu_arch, "gpu_arch", 0)
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
        """The ``cutensorAlgo_t`` value of :attr:`algo` (``cutensorCreatePlanPreference``)."""
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


def _check_versions(preference: PlanPreference) -> None:
    """Refuse, before any C call, an algorithm, JIT mode, attribute or attribute value newer than
    the loaded cuTENSOR (``CUTENSOR_PLAN_PREFERENCE_GPU_ARCH`` needs 2.6, for instance)."""
    context = "PlanPreference"
    check_enum(_bindings.cutensorAlgo_t, preference.algo_value, context)
    check_enum(_bindings.cutensorJitMode_t, _JIT[str(preference.jit)], context)
    for attribute, value in preference.attributes():
        check_enum(_bindings.cutensorPlanPreferenceAttribute_t, attribute, context)
        if attribute == _bindings.CUTENSOR_PLAN_PREFERENCE_AUTOTUNE_MODE:
            check_enum(_bindings.cutensorAutotuneMode_t, value, context)
        elif attribute == _bindings.CUTENSOR_PLAN_PREFERENCE_CACHE_MODE:
            check_enum(_bindings.cutensorCacheMode_t, value, context)


def _destroy_preference(ptr: int) -> None:
    LIB.function("cutensorDestroyPlanPreference")(ptr)


class PlanPreferenceObject(CResource):
    """A ``cutensorPlanPreference_t`` made from a :class:`PlanPreference`
    (``cutensorCreatePlanPreference``, ``cutensorPlanPreferenceSetAttribute``;
    ``cutensorDestroyPlanPreference`` on close).

    ``owned_by_handle=True`` hands the C object to the handle, which destroys it when it is itself
    closed or collected (how :func:`default_preference` keeps one per handle).
    """

    _kind = "cuTENSOR plan preference"

    def __init__(
        self, handle: Handle, preference: PlanPreference, *, owned_by_handle: bool = False
    ) -> None:
        if not isinstance(handle, Handle):
            raise TypeError(f"handle must be a pycutensor.Handle, not {type(handle).__name__}")
        if not isinstance(preference, PlanPreference):
            raise TypeError(f"preference must be a PlanPreference, not {type(preference).__name__}")
        handle._check_open()
        _check_versions(preference)
        out = ctypes.c_void_p()
        clear_last_error()
        check_planning(
            LIB.function("cutensorCreatePlanPreference")(
                handle, ctypes.byref(out), preference.algo_value, _JIT[str(preference.jit)]
            ),
            "cutensorCreatePlanPreference",
            preference,
        )
        ptr = int(out.value or 0)
        if owned_by_handle:
            # Destroyed with the handle (before cutensorDestroy); the wrapper only reads as closed.
            handle._adopt(_destroy_preference, ptr)
            super().__init__(ptr, None, parents=(handle,), owned=False)
        else:
            super().__init__(ptr, _destroy_preference, parents=(handle,))
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
        check_enum(_bindings.cutensorPlanPreferenceAttribute_t, int(attribute), "get")
        buf = ctypes.c_int32(0)
        clear_last_error()
        check(
            LIB.function("cutensorPlanPreferenceGetAttribute")(
                self.handle, self, int(attribute), ctypes.byref(buf), ctypes.sizeof(buf)
            ),
            "cutensorPlanPreferenceGetAttribute",
        )
        return int(buf.value)


def default_preference(handle: Handle) -> PlanPreferenceObject:
    """The plan preference with cuTENSOR's defaults (``PlanPreference()``) for ``handle``.

    Created once per handle, on first use, owned by the handle and destroyed with it: plans made
    without a preference use it, since cuTENSOR 2.8's ``cutensorCreatePlan`` refuses a NULL one.
    Creating it per plan (or per einsum call) would add two C calls to every planning.
    """
    pref = handle._default_preference
    if isinstance(pref, PlanPreferenceObject) and not pref.closed:
        return pref
    handle._check_open()
    with handle._lock:  # a handle may be shared between threads (handle=)
        pref = handle._default_preference
        if not isinstance(pref, PlanPreferenceObject) or pref.closed:
            pref = PlanPreferenceObject(handle, PlanPreference(), owned_by_handle=True)
            handle._default_preference = pref
    return pref


def algorithm_note(preference: PlanPreference) -> str:
    """What to add to a NOT_SUPPORTED error of a plan whose preference named an algorithm number.

    ``cutensor.h`` documents only the named ``CUTENSOR_ALGO_*`` values; on an H100 cuTENSOR 2.8
    refused explicit numbers 0-3 for every contraction tried (GEMM-like, batched, 4-mode, mixed;
    fp16 to complex64) with NOT_SUPPORTED, while every named algorithm ran.
    """
    if isinstance(preference.algo, str):
        return ""
    named = ", ".join(repr(a) for a in ALGORITHMS)
    return (
        f"algo={preference.algo} asks cuTENSOR for one GEMM-like algorithm by number; cuTENSOR "
        f"2.8 refused the numbers 0-3 for every contraction measured on an H100 (only the named "
        f"algorithms work there): use one of {named}"
    )


def check_planning(status: int, function: str, preference: PlanPreference) -> None:
    """``check`` for the calls that plan with ``preference`` (creating the preference, estimating
    the workspace, creating the plan): a NOT_SUPPORTED where an algorithm number was asked for
    carries :func:`algorithm_note`."""
    if status:
        message = take_last_error()
        note = algorithm_note(preference) if status == _NOT_SUPPORTED else ""
        raise error_from_status(status, function, f"{message}; {note}" if note else message)
