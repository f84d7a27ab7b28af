"""Reading a plan-cache file into a handle (``cutensorHandleReadPlanCacheFromFile``).

cuTENSOR answers INSUFFICIENT_WORKSPACE with the number of cache lines the file needs; the cache
is then resized to that number (which empties it) and the file read again. That number comes from
a file cuTENSOR has just refused, so it is checked first: a file of N bytes holds at most N cache
lines, and a read that needs none was not short of any (resizing to 0 would leave the handle
without a plan cache). When the second read is refused too, the capacity the handle had is
restored. Every refusal names the file: cuTENSOR is given ``/proc/self/fd/N``.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from . import _bindings
from ._lib import LIB, check, clear_last_error, take_last_error
from .errors import CutensorError, error_from_status

_READ = "cutensorHandleReadPlanCacheFromFile"


def read_plan_cache(handle: Any, name: bytes, path: bytes) -> int:
    """Fill ``handle``'s plan cache from ``name`` (the opened ``path``, already checked), resizing
    the cache once if cuTENSOR asks; returns the number of entries read. ``handle._lock`` held."""
    read = LIB.function(_READ)
    count = ctypes.c_uint32(0)
    clear_last_error()
    status = read(handle, name, ctypes.byref(count))
    if status == int(_bindings.CUTENSOR_STATUS_INSUFFICIENT_WORKSPACE):
        needed, size = int(count.value), os.stat(name).st_size
        if not 0 < needed <= size:
            logged = take_last_error()
            raise error_from_status(status, _READ, (
                f"plan-cache file {_shown(path)} is refused: cuTENSOR asks for {needed} cache "
                f"lines to read it, but a file of {size} bytes holds between 1 and {size}"
                + (f" ({logged})" if logged else "")))  # fmt: skip
        previous = handle._plan_cache_size
        _resize(handle, needed)
        count.value = 0
        clear_last_error()
        status = read(handle, name, ctypes.byref(count))
        if status:
            try:
                _checked(status, path)
            finally:  # the capacity the handle had (its entries went with the first resize)
                _resize(handle, previous)
    _checked(status, path)
    return int(count.value)


def _resize(handle: Any, entries: int) -> None:
    clear_last_error()
    check(LIB.function("cutensorHandleResizePlanCache")(handle, entries),
          "cutensorHandleResizePlanCache")  # fmt: skip
    handle._plan_cache_size = entries


def _checked(status: int, path: bytes) -> None:
    try:
        check(status, _READ)
    except CutensorError as exc:
        text = f"plan-cache file {_shown(path)}"
        raise error_from_status(
            exc.status, exc.function, f"{text}: {exc.message}" if exc.message else text
        ) from None


def _shown(path: bytes) -> str:
    return repr(os.fsdecode(path))
