"""CUDA graph capture and cuTENSOR: what must not be captured, and the driver query behind it.

The user guide ("CUDA Graph Support") allows every cuTENSOR operation in a captured graph except:

* ``cutensorCreatePlan`` with just-in-time compilation enabled (``cutensorJitMode_t`` other than
  ``CUTENSOR_JIT_MODE_NONE``); the documented workaround is to capture on a stream created with
  the ``cudaStreamNonBlocking`` flag. So the dangerous case is a capture on a *blocking* stream,
  which the driver reports without knowing the capturing stream: ``cuStreamIsCapturing`` on the
  legacy stream answers ``CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`` while a blocking stream of the
  current context is capturing.
* an operation that is still being incrementally autotuned: cuTENSOR iterates over kernels, so a
  capture could record a suboptimal one.

:func:`jit_planning_refusal` and :func:`tuning_refusal` decide from a capture state (pure Python,
tested without a GPU); :func:`~_nvbind.capture.capture_state` asks the driver. They run where
plans are created, never on the execute path of a finished plan. (A workspace from the pool is
refused in a capture for both libraries, by :mod:`_nvbind.capture`.)
"""

from __future__ import annotations

from _nvbind.capture import capture_state

__all__ = ["capture_state", "jit_planning_refusal", "tuning_refusal"]


def jit_planning_refusal(legacy_state: str, jit: bool) -> str | None:
    """Why ``cutensorCreatePlan`` must not run now, or None.

    ``legacy_state``: :func:`capture_state` of the legacy stream (``"implicit"`` means a blocking
    stream is being captured); ``jit``: whether the plan's preference enables just-in-time
    compilation.
    """
    if not jit or legacy_state != "implicit":
        return None
    return (
        "cutensorCreatePlan with just-in-time compilation (PlanPreference(jit='default')) must not "
        "be captured in a CUDA graph (cuTENSOR user guide, 'CUDA Graph Support'), and a blocking "
        "stream of this device is being captured. Plan before the capture begins (call the "
        "function once outside the capture: its plan is cached and the capture then only "
        "executes; or make the Plan beforehand), capture on a stream created non-blocking "
        "(cudaStreamNonBlocking; cuda.core: StreamOptions(nonblocking=True)), which is cuTENSOR's "
        "documented workaround, or plan with jit='none'"
    )


def tuning_refusal(stream_state: str, planned: int, count: int) -> str | None:
    """Why a problem whose incremental autotuning is unfinished must not run on a stream now, or
    None. ``stream_state``: :func:`capture_state` of the stream it would run on; ``planned`` of
    the ``count`` candidates (plus the final plan) have been planned so far."""
    if stream_state not in ("active", "invalidated", "implicit"):
        return None
    left = count + 1 - planned
    return (
        f"this problem's incremental autotuning is unfinished ({planned} of {count + 1} plans made: "
        f"{count} candidates and the winner) and its stream is being captured in a CUDA graph; "
        "cuTENSOR's user guide says plans that are still tuning should not be captured (cuTENSOR "
        "iterates over kernels, so the graph could record a suboptimal one). Finish tuning "
        f"before the capture (call it {left} more time{'s' if left != 1 else ''} outside the "
        "capture, or tune with pycutensor.autotune()), or capture a preference without "
        "autotune='incremental'"
    )
