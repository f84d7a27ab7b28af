"""The plan cache: a bounded in-memory LRU, optionally backed by a directory of plan JSON files."""

from __future__ import annotations

import collections
import logging
import os
import threading
from pathlib import Path
from threading import get_ident
from typing import Any

from _nvbind import files
from _nvbind.forksafe import fork_safe_lock

from .._plan_json import parse_json_for_cudnn
from ..errors import CudnnError
from ..opgraph import OperationGraph
from .execution import Plan
from .report import PlanVersionError
from .serialization import _version, _version_text
from .targets import _Target

__all__ = ["PlanCache", "default_plan_cache"]

_log = logging.getLogger("pycudnn")


# --------------------------------------------------------------------------------------------------
# Plan cache
# --------------------------------------------------------------------------------------------------


class PlanCache:
    """Plans by key: a bounded in-memory LRU, and optionally a directory of plan JSON files.

    The key covers everything that changes a plan: the graph's structure and attributes, dims,
    strides, dtypes and alignment of every tensor, the target device's properties (the GPU's, or
    the given :class:`DeviceProperties`), the cuDNN version, the heuristic modes and the filters.
    In memory, plans are also tied to the GPU ordinal they were built on.

    On disk each plan is cuDNN's execution-plan JSON in ``<directory>/<key>.json``: another
    process with the same graph, library and device loads it without running heuristics. A file
    written by another cuDNN version is refused (its ``cudnnVersion`` is read first), logged, and
    rebuilt. ``stats`` counts memory hits, disk hits, misses, stores and refusals.

    A PlanCache may be shared by threads (it locks), but the plans it hands out are not
    thread-safe; the default cache (:func:`default_plan_cache`) is per thread.
    """

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, *, max_size: int = 128
    ) -> None:
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ValueError(f"max_size must be a positive int, got {max_size!r}")
        self.directory = None if directory is None else _make_directory(Path(directory))
        self.max_size = max_size
        self._plans: collections.OrderedDict[str, Plan] = collections.OrderedDict()
        self._lock = fork_safe_lock(self, "_lock")
        self.stats: dict[str, int] = dict.fromkeys(
            ("memory_hits", "disk_hits", "misses", "stores", "version_mismatches", "disk_errors"), 0
        )

    def __len__(self) -> int:
        return len(self._plans)

    def clear(self) -> None:
        """Forget the in-memory plans (files on disk stay)."""
        with self._lock:
            self._plans.clear()

    def path_for(self, key: str) -> Path | None:
        """The file a plan with cache key ``key`` is kept in, or None for a memory-only cache."""
        return None if self.directory is None else self.directory / f"{key}.json"

    @staticmethod
    def _memory_key(key: str, target: _Target) -> str:
        return f"{key}@{target.device_id}"

    def _lookup(self, key: str, graph: OperationGraph, target: _Target) -> Plan | None:
        mkey = self._memory_key(key, target)
        with self._lock:
            plan = self._plans.get(mkey)
            # The execution plan outlives a caller's close() of the plan build() handed out (see
            # _remember): a closed Plan object is answered with a fresh view of the same plan.
            if plan is not None and not plan.descriptor.closed:
                self._plans.move_to_end(mkey)
                self.stats["memory_hits"] += 1
                # plans are not thread-safe: another thread gets a view of its own (the same
                # execution plan; its own bindings, scalars and variant packs)
                mine = plan.graph is graph and not plan.closed and plan._thread == get_ident()
                return plan if mine else plan._for_graph(graph)
        path = self.path_for(key)
        # No path.is_file() first: what is checked is the descriptor _load_file opens (a check of
        # the path, then an open of it, let a file swapped for a FIFO in between block forever).
        if path is not None:
            plan = self._load_file(path, graph, target)
            if plan is not None:
                self.stats["disk_hits"] += 1
                self._remember(mkey, plan)
                return plan
        self.stats["misses"] += 1
        return None

    def _load_file(self, path: Path, graph: OperationGraph, target: _Target) -> Plan | None:
        try:
            # A regular file of the cache's own, not a link (it could name a FIFO or a device),
            # at most files.MAX_FILE_BYTES: anything else is refused at once, logged and rebuilt.
            text = files.read_text(path, what="plan-cache file", follow_symlinks=False)
            data = parse_json_for_cudnn(text, "the file")
        except FileNotFoundError:
            return None  # not cached (yet): a plain miss
        except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON, nested too deep
            self.stats["disk_errors"] += 1
            _log.warning("plan cache: ignoring unreadable %s (%s); rebuilding", path, exc)
            return None
        if not isinstance(data, dict):
            self.stats["disk_errors"] += 1
            _log.warning(
                "plan cache: %s holds a JSON %s, not a cuDNN execution plan; rebuilding",
                path,
                type(data).__name__,
            )
            return None
        written = data.get("cudnnVersion")
        if isinstance(written, bool) or not isinstance(written, int):
            self.stats["disk_errors"] += 1
            _log.warning(
                "plan cache: %s has no valid cudnnVersion (%r), so is not a cuDNN execution plan; "
                "rebuilding",
                path,
                written,
            )
            return None
        if written != _version():
            self.stats["version_mismatches"] += 1
            _log.warning(
                "plan cache: %s was written by cuDNN %s, this is %s; plans load only in the exact "
                "version that wrote them: rebuilding it",
                path,
                _version_text(written),
                _version_text(_version()),
            )
            return None
        try:
            # the key holds the known-bad entries that apply and allow_known_bad: a plan of a
            # known-bad engine is here only because the request allowed it
            return Plan.from_json(data, graph=graph, device_properties=target.props,
                                  device=target.device_id, allow_known_bad=True)  # fmt: skip
        except PlanVersionError as exc:  # same version, another serialization schema
            self.stats["version_mismatches"] += 1
            _log.warning("plan cache: %s: %s", path, exc)
            return None
        except (CudnnError, ValueError, TypeError) as exc:
            self.stats["disk_errors"] += 1
            _log.warning("plan cache: %s could not be loaded (%s); rebuilding", path, exc)
            return None

    def _remember(self, mkey: str, plan: Plan) -> None:
        # The cache, not the caller, decides when the execution plan goes: a caller's close()
        # releases its variant packs but leaves the plan to the cache (it is destroyed once evicted
        # and unreferenced). Otherwise `with g.build() as plan:` in a loop made every later build
        # a miss, and a miss re-finalizes: for runtime-compiled engines that is a kernel
        # compilation (~0.5 s) and ~210 KiB that cuDNN never gives back (docs/reliability.md).
        plan._owns_descriptor = False
        with self._lock:
            self._plans[mkey] = plan
            self._plans.move_to_end(mkey)
            while len(self._plans) > self.max_size:
                self._plans.popitem(last=False)  # the plan closes when its last user drops it

    def _store(self, key: str, plan: Plan, target: _Target) -> None:
        self._remember(self._memory_key(key, target), plan)
        self.stats["stores"] += 1
        path = self.path_for(key)
        if path is None:
            return
        try:
            _write_atomically(path, plan.to_json())
        except (OSError, CudnnError) as exc:  # a full disk, a directory in the way, ...
            self.stats["disk_errors"] += 1
            _log.warning("plan cache: could not write %s: %s", path, exc)

    def __copy__(self) -> Any:
        # A copy would share the plans and the stats with the original but lock them with a lock
        # of its own, so threads using the two could change them at once.
        raise TypeError(
            "a PlanCache cannot be copied: a copy would share its plans but not its lock; make a "
            "new PlanCache (with the same directory to share the files)"
        )

    def __repr__(self) -> str:
        where = f" in {self.directory}" if self.directory is not None else ""
        return f"<pycudnn.PlanCache {len(self)} plan(s){where}, max {self.max_size}>"


def _make_directory(directory: Path) -> Path:
    """Create the cache directory, or say in one sentence why it cannot be one."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(
            f"plan cache directory {os.fspath(directory)!r} exists and is not a directory: pass "
            "a directory (it is created if missing)"
        ) from None
    except OSError as exc:  # a read-only parent or file system, a file in the path, ...
        raise type(exc)(
            exc.errno,
            f"plan cache directory {os.fspath(directory)!r} cannot be created: {exc.strerror} "
            f"({os.fspath(exc.filename) if exc.filename else 'a parent'} is not writable by this "
            "user or not a directory); choose a writable location",
        ) from None
    return directory


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that no reader ever sees a part of it (a temporary file of
    its own, flushed to disk, renamed over ``path``; see :func:`_nvbind.files.write_text`).
    A FIFO, device or directory in the way is refused (an ``OSError``), not written into; a link
    there is replaced, not written through."""
    files.write_text(path, text, what="plan-cache file", follow_symlinks=False)


_thread_caches = threading.local()


def default_plan_cache() -> PlanCache:
    """This thread's in-memory plan cache (used by ``build`` when no cache is given)."""
    pc: PlanCache | None = getattr(_thread_caches, "cache", None)
    if pc is None:
        pc = _thread_caches.cache = PlanCache(None, max_size=256)
    return pc


def _resolve_cache(cache: Any) -> PlanCache | None:
    if cache is None or cache is True:
        return default_plan_cache()
    if cache is False:
        return None
    if isinstance(cache, PlanCache):
        return cache
    raise TypeError(f"cache must be None, True, False or a PlanCache, not {type(cache).__name__}")
