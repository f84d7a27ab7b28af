"""Sharing a handle between threads, without a GPU: the Python-side operation cache under threads,
and the ``handle=`` argument of every function on arrays (refused before any array is looked at).

The GPU side (threads executing through one shared handle) is in test_cutensor_tuning_gpu.py.
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pycutensor
from pycutensor import operations
from pycutensor.handle import OperationCache, handle_for


class Entry:
    """A cache entry that records whether it was closed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_cache_is_an_lru_of_the_capacity_given() -> None:
    cache = OperationCache(2)
    a, b, c = Entry("a"), Entry("b"), Entry("c")
    assert cache.add("a", a) is a and cache.add("b", b) is b
    assert cache.get("a") is a  # a is now the most recently used
    cache.add("c", c)
    assert cache.get("b") is None and cache.get("a") is a and cache.get("c") is c
    assert len(cache) == 2


def test_cache_keeps_the_first_entry_stored_under_a_key() -> None:
    # Two threads that both missed build two entries; both must end up using one.
    cache = OperationCache(4)
    first, second = Entry("first"), Entry("second")
    assert cache.add("k", first) is first
    assert cache.add("k", second) is first
    assert cache.get("k") is first


def test_dropped_entries_are_released_not_closed() -> None:
    # Another thread may be executing an entry it just looked up: eviction must not close it,
    # only drop the cache's reference (the C objects' finalizers run when the last one goes).
    cache = OperationCache(1)
    held = Entry("held")
    cache.add("held", held)
    cache.add("other", Entry("other"))
    assert cache.get("held") is None
    assert not held.closed
    gone = Entry("gone")
    ref = weakref.ref(gone)
    cache.add("gone", gone)
    del gone
    cache.add("next", Entry("next"))
    gc.collect()
    assert ref() is None


def test_clear_returns_the_entries_for_the_caller_to_close() -> None:
    cache = OperationCache(4)
    entries = [Entry(str(i)) for i in range(3)]
    for i, e in enumerate(entries):
        cache.add(i, e)
    assert cache.clear() == entries and len(cache) == 0


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [(0, ValueError, "must be at least 1"), (-3, ValueError, "must be at least 1"),
     (2.0, TypeError, "must be an int"), (True, TypeError, "must be an int")],
)  # fmt: skip
def test_cache_capacity_is_checked(value: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=f"max_cached_operations {match}"):
        OperationCache(value)


def test_shrinking_the_capacity_drops_the_oldest() -> None:
    cache = OperationCache(4)
    for i in range(4):
        cache.add(i, Entry(str(i)))
    cache.capacity = 2
    assert [cache.get(i) is not None for i in range(4)] == [False, False, True, True]


def test_unhashable_key_raises_type_error() -> None:
    # run() relies on this to name the unhashable label or operator.
    with pytest.raises(TypeError):
        OperationCache(2).get((["unhashable"],))


def test_cache_survives_threads_looking_up_and_evicting_the_same_keys() -> None:
    # Lookups take no lock: they race with other threads' adds and trims (evictions) of the same
    # keys. A lookup must still return its key's entry or None, never raise (an eviction between
    # its two dictionary calls is caught in get), adds must hand every thread the stored entry,
    # and trimming must keep the cache within its capacity. A tiny switch interval makes such
    # interleavings frequent.
    cache = OperationCache(3)
    errors: list[BaseException] = []
    seen: list[set[int]] = []

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        stored: set[int] = set()
        try:
            for _ in range(20000):
                key = int(rng.integers(0, 6))
                entry = cache.get(key)
                if entry is None:
                    entry = cache.add(key, Entry(str(key)))
                    stored.add(key)
                assert entry.name == str(key)
        except BaseException as exc:  # reported below, with the thread's failure
            errors.append(exc)
        seen.append(stored)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[:3]
    assert len(cache) <= 3 and len(seen) == 6


# -- the handle= argument ---------------------------------------------------------------------------
def _host(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


CALLS: dict[str, Callable[[Any], Any]] = {
    "contract": lambda h: operations.contract(_host(2, 3), "ik", _host(3, 4), "kj", _host(2, 4),
                                              "ij", handle=h),
    "contract_trinary": lambda h: operations.contract_trinary(
        _host(2, 3), "ik", _host(3, 4), "kl", _host(4, 5), "lj", _host(2, 5), "ij", handle=h),
    "reduce": lambda h: operations.reduce(_host(2, 3), "ik", _host(2), "i", handle=h),
    "elementwise_binary": lambda h: operations.elementwise_binary(_host(2, 3), "ij", _host(2, 3),
                                                                  "ij", handle=h),
    "elementwise_trinary": lambda h: operations.elementwise_trinary(
        _host(2, 3), "ij", _host(2, 3), "ij", _host(2, 3), "ij", handle=h),
    "permute": lambda h: operations.permute(_host(2, 3), "ij", _host(3, 2), "ji", handle=h),
    "einsum": lambda h: pycutensor.einsum("ij,jk->ik", _host(2, 3), _host(3, 4), handle=h),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_function_on_arrays_refuses_a_handle_that_is_not_one(name: str) -> None:
    # Named before the arrays are looked at (these host arrays would be refused next).
    with pytest.raises(TypeError, match=r"handle must be a pycutensor\.Handle or None, not int"):
        CALLS[name](7)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_handle_none_keeps_the_default_path(name: str) -> None:
    # With handle=None the call goes on to the array checks, as before the argument existed.
    with pytest.raises(ValueError, match="device"):
        CALLS[name](None)


def test_handle_for_refuses_a_non_handle() -> None:
    with pytest.raises(TypeError, match=r"handle must be a pycutensor\.Handle or None, not str"):
        handle_for("handle", 0)


class _RecordingPlan:
    """A plan whose launch (which needs a GPU) records the pointers it was given."""

    def __init__(self) -> None:
        self.launches: list[list[int]] = []

    def _workspace(
        self, workspace: Any, stream_ptr: int, stream: Any, spans: Any = ()
    ) -> tuple[int, int]:
        return 0, 0

    def launch_unchecked(self, pointers: Any, values: Any, *_: Any) -> None:
        self.launches.append(list(pointers))


def test_an_out_of_another_dtype_is_refused_on_a_cache_hit_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The operation cache's key held out's shape, strides and alignment, not its dtype: after a
    call with a float32 out, a float64 out of the same element strides hit the entry built for
    float32 and was written with float32 bits. The entry is built by the real checks (prepare);
    only the plan and the handle, which need a GPU, are stand-ins."""
    from standins import fake_device_array as fake

    from _nvbind.resource import CResource
    from pycutensor.handle import Handle
    from pycutensor.operations import _common

    plan = _RecordingPlan()

    def build(*args: Any) -> Any:  # _build's arguments, in its order
        _, _, info, views, labels, out_view, unary, binary, compute_type, _, scalars = args[:11]
        prepared = _common.prepare(info, views, labels, out_view, unary, binary, compute_type,
                                   scalars)  # fmt: skip
        offsets = [
            _common._byte_offsets(shape, strides, v.itemsize)
            for (shape, strides), v in zip(prepared.layouts, views, strict=True)
        ]
        operation = type("Op", (), {"scalar_values": lambda self, **kw: list(kw.values())})()
        return _common._Ready([], operation, plan, [*offsets, offsets[-1]])  # type: ignore[arg-type]

    monkeypatch.setattr(_common, "_build", build)
    handle = Handle.__new__(Handle)
    CResource.__init__(handle, 0x1000, None, owned=False)
    handle.device_id, handle._device, handle._operations = 0, None, OperationCache(8)
    monkeypatch.setattr(handle, "activate", lambda: None, raising=False)
    monkeypatch.setattr(handle, "restore", lambda previous: None, raising=False)
    a, b, c = fake((4, 5)), fake((5, 6)), fake((4, 6))
    operations.contract(a, "ik", b, "kj", c, "ij", out=fake((4, 6)), handle=handle)
    assert len(plan.launches) == 1
    with pytest.raises(TypeError, match="out has dtype float64, c has float32"):
        operations.contract(a, "ik", b, "kj", c, "ij", out=fake((4, 6), np.float64), handle=handle)
    assert len(plan.launches) == 1
