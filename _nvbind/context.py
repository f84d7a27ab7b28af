"""The calling thread's current CUDA context: which device it is, and making a handle's device
current for one library call (restoring the caller's afterwards).

cuDNN and cuTENSOR launch their kernels in the thread's current context, not in the context of the
device their handle was created on: a handle's call made while another GPU is current runs in the
wrong context (cuTENSOR answers ``CUTENSOR_STATUS_ARCH_MISMATCH``; cuDNN's documentation leaves it
undefined). Both packages' handles use :func:`activate` and :func:`restore` around their calls.

These run on the execute paths, so each check is one call of cuda.bindings' driver API
(cuda-core depends on cuda-bindings), not a round trip through cuda.core; the module is imported
on first use, so that importing either package stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["activate", "current_context", "current_device_ordinal", "driver", "restore"]

_driver_module: Any = None


def driver() -> Any:
    """``cuda.bindings.driver``, imported on first use (an ImportError that says how to get it)."""
    global _driver_module  # noqa: PLW0603 - a cache filled once
    drv = _driver_module
    if drv is None:
        try:
            from cuda.bindings import driver as module
        except ImportError as exc:
            raise ImportError(
                "cuda.bindings (installed with cuda-core: `pip install "
                f"'cudnn-cutensor-ctypes[cu12]'` or `[cu13]`) is needed to drive CUDA devices: {exc}"
            ) from exc
        drv = _driver_module = module
    return drv


def current_device_ordinal() -> int:
    """The ordinal of the device whose context is current on this thread, or -1 if none is
    (``cuCtxGetDevice``)."""
    status, dev = driver().cuCtxGetDevice()
    return -1 if status != 0 or dev is None else int(dev)


def current_context() -> int:
    """The address of this thread's current context (``cuCtxGetCurrent``), 0 when none is."""
    status, ctx = driver().cuCtxGetCurrent()
    return 0 if status != 0 or ctx is None else int(ctx)


def activate(device: Any, device_id: int) -> int | None:
    """Make ``device`` (the ``cuda.core.Device`` of ordinal ``device_id``) current on this thread
    unless it is already; return the context to give :func:`restore` afterwards, or None when
    nothing was changed."""
    status, dev = driver().cuCtxGetDevice()
    if status == 0 and dev is not None and int(dev) == device_id:
        return None
    previous = current_context()
    device.set_current()
    return previous


def restore(previous: int | None) -> None:
    """Make ``previous`` (a value :func:`activate` returned) current again; None or 0 (no context
    was current) leaves the current context alone (``cuCtxSetCurrent``)."""
    if previous:
        driver().cuCtxSetCurrent(previous)
