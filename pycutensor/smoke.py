"""Checks run by ``python -m pycutensor smoke``: real cuTENSOR work, or a plain account of what could not run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pycudnn._shared.cuda import driver_status
from pycudnn._shared.smoke import SkipCheck

__all__ = ["checks"]


def _library() -> dict[str, Any]:
    from . import _info

    v = _info.version_tuple()
    return {
        "summary": f"cuTENSOR {'.'.join(map(str, v))} at {_info.library_path()} "
        f"(bindings from headers {'.'.join(map(str, _info.header_version()))}, "
        f"built with CUDA runtime {_info.cudart_version()})",
        "version": _info.version(),
        "path": _info.library_path(),
    }


def _compute_descriptors() -> str:
    from . import _bindings
    from ._lib import compute_descriptor

    names = [s.removeprefix("CUTENSOR_COMPUTE_DESC_") for s in _bindings.COMPUTE_DESCRIPTOR_SYMBOLS]
    ptrs = {n: compute_descriptor(n) for n in names}
    if len(set(ptrs.values())) != len(ptrs):
        raise AssertionError(f"compute descriptors are not distinct: {ptrs}")
    return f"{len(ptrs)} compute descriptors readable: {', '.join(names)}"


def _handle() -> str:
    st = driver_status()
    if not st.usable:
        raise SkipCheck(f"cutensorCreate needs a GPU: {st.reason}", needs_gpu=True)
    from .handle import Handle

    with Handle() as handle:
        return f"cutensorCreate on device {handle.device_id}"


def checks() -> list[tuple[str, Callable[[], Any]]]:
    """The smoke checks in the order they run."""
    return [
        ("library", _library),
        ("compute descriptors", _compute_descriptors),
        ("handle", _handle),
    ]
