"""gather and scatter release their redistribution plan only after synchronizing: the plan's
execute is asynchronous on the handle's stream, and the plan (its cuTENSORMp object, its device
workspace) must outlive the work it enqueued.

cuTENSORMp needs GPUs and NCCL, so the rooted tensor, the plan and the synchronization are
recorders here (the GPU tier runs the real ones); what is checked is the order of the calls."""

from __future__ import annotations

import weakref
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pycutensor.distributed import mp


def _record(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], Any]:
    events: list[str] = []

    class Plan:
        def __init__(self, dst: Any, src: Any) -> None:
            weakref.finalize(self, events.append, "plan released")

        def execute(self) -> None:
            events.append("execute")

        def close(self) -> None:
            events.append("plan released")

    whole = SimpleNamespace(
        close=lambda: events.append("whole closed"),
        local_to_numpy=lambda: np.zeros((2, 3)),
        local_from_numpy=lambda host: None,
    )
    monkeypatch.setattr(mp, "RedistributionPlan", Plan)
    monkeypatch.setattr(mp, "_rooted_like", lambda *args: whole)
    monkeypatch.setattr(mp, "_synchronize", lambda handle: events.append("synchronize"))
    tensor = SimpleNamespace(
        handle=SimpleNamespace(rank=0), extents=(2, 3), dtype=np.dtype(np.float64)
    )
    return events, tensor


def test_gather_keeps_its_plan_until_the_work_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    events, tensor = _record(monkeypatch)
    assert mp.gather(tensor, 0) is not None  # type: ignore[arg-type]
    assert events[:3] == ["execute", "synchronize", "plan released"], events


def test_scatter_keeps_its_plan_until_the_work_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    events, tensor = _record(monkeypatch)
    mp.scatter(np.zeros((2, 3)), tensor, 0)  # type: ignore[arg-type]
    assert events[:3] == ["execute", "synchronize", "plan released"], events
