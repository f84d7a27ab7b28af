"""The autotuning table: one timed candidate per row, fastest first (``plan.autotune_results``)."""

from __future__ import annotations

import dataclasses

__all__ = ["AutotuneResult", "AutotuneResults"]


@dataclasses.dataclass
class AutotuneResult:
    """One timed candidate."""

    engine_id: int | None
    knobs: dict[str, int]
    notes: tuple[str, ...]
    workspace_size: int
    time_ms: float | None  # median of the repeats; None when the candidate failed
    times_ms: list[float] = dataclasses.field(default_factory=list)
    error: str = ""


class AutotuneResults(list[AutotuneResult]):
    """The autotuning table, fastest first; ``print()`` it for a readable version."""

    def __str__(self) -> str:
        header = f"{'#':>3} {'engine':>6} {'median ms':>10} {'workspace':>10}  knobs / notes"
        lines = [header, "-" * len(header)]
        for i, r in enumerate(self):
            t = f"{r.time_ms:10.4f}" if r.time_ms is not None else f"{'failed':>10}"
            knobs = ",".join(f"{k}={v}" for k, v in r.knobs.items())
            extra = r.error or " ".join(r.notes)
            lines.append(
                f"{i:>3} {r.engine_id!s:>6} {t} {r.workspace_size:>10}  {knobs} {extra}".rstrip()
            )
        return "\n".join(lines)

    @property
    def best(self) -> AutotuneResult | None:
        """The fastest result that ran, or None when none did."""
        return self[0] if self and self[0].time_ms is not None else None
