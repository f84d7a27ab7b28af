"""CUDA stream capture: whether work put on a stream now would be recorded into a CUDA graph.

Some things are right on a running stream and wrong inside a capture, where each launch is
recorded with the addresses it used and replayed later. A workspace from the per-thread pool
(:func:`_nvbind.memory.workspace`) is one: the graph would keep its address while the pool frees
it in stream order when a larger one is asked for, and hands it to every other launch on that
thread and stream, so a replay would write memory something else owns, silently. cuTENSOR's
planning with just-in-time compilation and its unfinished incremental autotuning are others
(``pycutensor._capture``). :func:`capture_state` asks the driver (``cuStreamIsCapturing``,
through ``libcuda.so.1`` directly: about 0.3 us, no context created).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

from .cuda import driver_status, libcuda

__all__ = ["GraphCaptureError", "capture_state", "refuse_pooled_workspace"]

#: ``CUstreamCaptureStatus`` values.
_STATUS_NAMES = {0: "none", 1: "active", 2: "invalidated"}
_CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906
_CU_STREAM_LEGACY = 1  # ((CUstream)0x1)


class GraphCaptureError(RuntimeError):
    """Refused before a call that must not be recorded into a CUDA graph while a stream is being
    captured (a pooled workspace; for cuTENSOR also planning with just-in-time compilation on a
    blocking stream, or a problem whose incremental autotuning is unfinished). The message gives
    the way around it."""


@functools.lru_cache(maxsize=1)
def _is_capturing() -> Any:
    lib = libcuda()
    if lib is None:
        return None
    fn = lib.cuStreamIsCapturing
    fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    fn.restype = ctypes.c_int
    return fn


def capture_state(stream_ptr: int | None) -> str:
    """The capture state of a stream (``cuStreamIsCapturing``).

    ``stream_ptr`` None asks about the legacy stream (``CU_STREAM_LEGACY``), which answers
    ``"implicit"`` while any blocking stream of the current context is capturing. Returns
    ``"none"``, ``"active"``, ``"invalidated"``, ``"implicit"`` (work on this stream would join
    a capture on a blocking stream) or ``"unknown"`` (the driver could not tell: no context, no
    driver library, no usable GPU: the driver reads a stream handle only once it has devices, and
    dereferences a stale one after a failed ``cuInit``).
    """
    fn = _is_capturing()
    if fn is None or not driver_status().usable:
        return "unknown"
    state = ctypes.c_int(-1)
    stream = _CU_STREAM_LEGACY if stream_ptr is None else int(stream_ptr)
    status = fn(stream or None, ctypes.byref(state))
    if status == _CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
        return "implicit"
    if status != 0:
        return "unknown"
    return _STATUS_NAMES.get(state.value, "unknown")


def refuse_pooled_workspace(stream_ptr: int) -> None:
    """Raise :class:`GraphCaptureError` when ``stream_ptr`` is being captured (or its capture was
    invalidated): a workspace from the pool must not be recorded into a graph (module
    docstring). A stream whose state the driver cannot tell is not refused."""
    state = capture_state(stream_ptr)
    if state in ("active", "invalidated"):
        raise GraphCaptureError(
            f"stream 0x{stream_ptr:x} is being captured into a CUDA graph, and this call would "
            "take its workspace from the per-thread pool: the graph would keep that address while "
            "the pool reuses it for other launches and frees it when a larger workspace is asked "
            "for, so replays would write memory something else owns. Pass workspace= (device "
            "memory of at least the plan's workspace size that outlives the graph): "
            "pycudnn's Plan.execute and pycutensor's plans and operations take it; a legacy "
            "pycudnn.ops call, which takes none, can be captured only when its algorithm needs "
            "no workspace, and pycutensor.einsum, which takes none either, only when it needs "
            "neither a workspace nor an intermediate (else capture pycutensor's operations)"
        )
