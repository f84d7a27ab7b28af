"""``Handle.read_plan_cache``: what cuTENSOR answers for a file it refuses is checked, and the error
names the file.

cuTENSOR answers INSUFFICIENT_WORKSPACE with the number of cache lines the file needs; the handle
then resizes its cache to that number (which empties it) and reads again. That number used to be
trusted: a count of 0 resized the cache to nothing (no plan cache, no autotuning) and a count in the
billions was handed to ``cutensorHandleResizePlanCache``. A file of N bytes cannot hold more than N
cache lines, and a read needing none cannot be short of them. When the second read is refused too,
the capacity the handle had is restored. Every refusal names the file (cuTENSOR is given
``/proc/self/fd/N``). ``cutensorHandleReadPlanCacheFromFile`` and ``cutensorHandleResizePlanCache``
take a handle, which needs a GPU: they are recorders here.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from _nvbind.files import UnsafeFileError
from _nvbind.resource import CResource
from pycutensor import _bindings
from pycutensor._lib import LIB
from pycutensor.errors import CutensorError, CutensorInvalidValueError
from pycutensor.handle import Handle

_SHORT = int(_bindings.CUTENSOR_STATUS_INSUFFICIENT_WORKSPACE)
_INVALID = int(_bindings.CUTENSOR_STATUS_INVALID_VALUE)


def _handle() -> Handle:
    handle = Handle.__new__(Handle)
    CResource.__init__(handle, 0x1000, None, owned=False)  # passed to the recorders only
    handle._lock = threading.Lock()  # type: ignore[assignment]
    handle._plan_cache_size = 64
    return handle


def _stand_in(monkeypatch: pytest.MonkeyPatch, answers: list[tuple[int, int]]) -> list[int]:
    """cuTENSOR answering ``answers`` (status, count) to successive reads; returns the sizes
    resized to."""
    resized: list[int] = []

    def read(handle: Any, name: bytes, count: Any) -> int:
        status, value = answers.pop(0)
        count._obj.value = value
        return status

    def resize(handle: Any, entries: int) -> int:
        resized.append(entries)
        return 0

    monkeypatch.setitem(LIB._bound, "cutensorHandleReadPlanCacheFromFile", read)
    monkeypatch.setitem(LIB._bound, "cutensorHandleResizePlanCache", resize)
    return resized


@pytest.mark.parametrize("needed", [0, 1000, 2**32 - 1])
def test_a_count_the_file_cannot_need_is_refused_without_resizing(
    needed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "plans.bin"
    path.write_bytes(b"\x13" * 100)  # garbage, 100 bytes: at most 100 cache lines
    resized = _stand_in(monkeypatch, [(_SHORT, needed), (_SHORT, needed)])
    handle = _handle()
    with pytest.raises(CutensorError, match=f"plan-cache file '{path}'.* {needed} cache lines"):
        handle.read_plan_cache(path)
    assert resized == []
    assert handle.plan_cache_size == 64


def test_a_genuine_count_resizes_then_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "plans.bin"
    path.write_bytes(b"\0" * 4096)
    resized = _stand_in(monkeypatch, [(_SHORT, 100), (0, 100)])
    handle = _handle()
    assert handle.read_plan_cache(path) == 100
    assert resized == [100]
    assert handle.plan_cache_size == 100


def test_a_second_refusal_restores_the_capacity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "plans.bin"
    path.write_bytes(b"\0" * 4096)
    resized = _stand_in(monkeypatch, [(_SHORT, 100), (_INVALID, 0)])
    handle = _handle()
    with pytest.raises(CutensorInvalidValueError, match=f"plan-cache file '{path}'"):
        handle.read_plan_cache(path)
    assert resized == [100, 64]
    assert handle.plan_cache_size == 64


def test_a_refused_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # another cuTENSOR version's file, a truncated one: INVALID_VALUE, or IO_ERROR, from cuTENSOR
    path = tmp_path / "other-version.bin"
    path.write_bytes(b"\0" * 16)
    resized = _stand_in(monkeypatch, [(_INVALID, 0)])
    with pytest.raises(CutensorInvalidValueError, match=f"plan-cache file '{path}'"):
        _handle().read_plan_cache(path)
    assert resized == []


def test_a_directory_never_reaches_cutensor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stand_in(monkeypatch, [])  # a read would pop from an empty list
    with pytest.raises(UnsafeFileError, match="is a directory"):
        _handle().read_plan_cache(tmp_path)
