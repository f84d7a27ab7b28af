"""gather and scatter release their redistribution plan only after synchronizing: the plan's
execute is asynchronous on the handle's stream, and the plan (its cuTENSORMp object, its device
workspace) must outlive the work it enqueued.

scatter's root tells every rank whether it took its array before any data moves (a refusal
raised on the root alone left the other ranks waiting in the collective).

cuTENSORMp needs GPUs and NCCL, so the rooted and distributed tensors, the plans and the
synchronization are recorders here (the GPU tier runs the real ones); what is checked is the
order of the calls."""

from __future__ import annotations

import weakref
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pycutensor.distributed import mp


def _record(
    monkeypatch: pytest.MonkeyPatch, rank: int = 0, root_ok: bool = True
) -> tuple[list[str], Any]:
    """Recorders for the rooted tensors, the verdict spread one element a rank, the plans and
    the synchronization; ``root_ok`` is what each rank's element reads back."""
    events: list[str] = []
    written: list[np.ndarray] = []  # what the root wrote into its rooted tensors, in order

    class Plan:
        def __init__(self, dst: Any, src: Any) -> None:
            self.what = "flag" if len(src.extents) == 1 else "data"
            events.append(f"{self.what} plan")
            weakref.finalize(self, events.append, "plan released")

        def execute(self) -> None:
            events.append(f"{self.what} execute")

        def close(self) -> None:
            events.append("plan released")

    def rooted(handle: Any, extents: Any, dtype: Any, root: int) -> Any:
        return SimpleNamespace(
            extents=tuple(extents),
            close=lambda: events.append("rooted closed"),
            local_to_numpy=lambda: np.zeros((2, 3)),
            local_from_numpy=lambda host: (
                events.append(f"root wrote {host.shape}"),
                written.append(np.array(host)),
            ),
        )

    def one_per_rank(handle: Any, extents: Any, dtype: Any, *, ranks_per_mode: Any) -> Any:
        assert tuple(extents) == ranks_per_mode == (handle.size,)  # one element on each rank
        return SimpleNamespace(
            close=lambda: None,
            local_to_numpy=lambda: np.array([1.0 if root_ok else 0.0], dtype=np.float32),
        )

    monkeypatch.setattr(mp, "RedistributionPlan", Plan)
    monkeypatch.setattr(mp, "_rooted_like", rooted)
    monkeypatch.setattr(mp, "DistributedTensor", one_per_rank)
    monkeypatch.setattr(mp, "_synchronize", lambda handle: events.append("synchronize"))
    tensor = SimpleNamespace(
        handle=SimpleNamespace(rank=rank, size=2),
        extents=(2, 3),
        dtype=np.dtype(np.float64),
        written=written,
    )
    return events, tensor


def test_gather_keeps_its_plan_until_the_work_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    events, tensor = _record(monkeypatch)
    assert mp.gather(tensor, 0) is not None  # type: ignore[arg-type]
    assert events[1:4] == ["data execute", "synchronize", "plan released"], events


def test_scatter_keeps_its_plan_until_the_work_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    events, tensor = _record(monkeypatch)
    mp.scatter(np.zeros((2, 3)), tensor, 0)  # type: ignore[arg-type]
    data = events.index("data execute")
    assert events[data : data + 3] == ["data execute", "synchronize", "plan released"], events


def test_the_root_says_whether_its_array_is_taken_before_the_data_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flag's collective runs on every rank before the data's, so that a refusal only the
    root can make reaches the others instead of leaving them in the data's collective."""
    events, tensor = _record(monkeypatch)
    mp.scatter(np.zeros((2, 3)), tensor, 0)  # type: ignore[arg-type]
    assert events.index("flag execute") < events.index("data plan"), events
    assert "root wrote (2,)" in events and "root wrote (2, 3)" in events
    assert tensor.written[0].tolist() == [1.0, 1.0]  # "taken", to each of the two ranks


class _Unreadable:
    def __array__(self, *args: Any, **kw: Any) -> Any:
        raise RuntimeError("this object cannot be read")


@pytest.mark.parametrize(
    "bad",
    [np.zeros((3, 2)), None, "text", _Unreadable()],
    ids=["shape", "none", "text", "raising"],
)
def test_a_root_refusing_its_array_raises_on_the_root_after_telling_the_others(
    monkeypatch: pytest.MonkeyPatch, bad: Any
) -> None:
    events, tensor = _record(monkeypatch, rank=0, root_ok=False)
    with pytest.raises(ValueError, match=r"scatter: array "):
        mp.scatter(bad, tensor, 0)  # type: ignore[arg-type]
    assert "flag execute" in events and "data plan" not in events, events
    assert "root wrote (2,)" in events  # its verdict, one element per rank, sent
    assert [w.tolist() for w in tensor.written] == [[0.0, 0.0]]  # "refused", to both ranks


def test_the_other_ranks_raise_when_the_root_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    events, tensor = _record(monkeypatch, rank=1, root_ok=False)
    with pytest.raises(ValueError, match=r"the root \(rank 0\) refused its array"):
        mp.scatter(None, tensor, 0)  # type: ignore[arg-type]
    assert "flag execute" in events and "data plan" not in events, events
    assert not any(e.startswith("root wrote") for e in events)  # not the root: writes nothing
