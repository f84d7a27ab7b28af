"""Excluding engines and notes from planning (cudnn-frontend's ``deselect_engines`` and
``deselect_numeric_notes``/``deselect_behavior_notes``): the ``exclude_engines=`` and
``exclude_notes=`` options of :func:`~pycudnn.plan.build`, :func:`~pycudnn.plan.build_all`,
:func:`~pycudnn.plan.engine_configs` and :func:`~pycudnn.plan.autotune`."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Protocol

from _nvbind.suggest import did_you_mean

from .. import _bindings

__all__ = ["exclusion_reason", "normalize_exclusions"]


class EngineConfig(Protocol):
    """What an exclusion reads of a :class:`pycudnn.plan.EngineConfig` (the heuristics module,
    which imports this one, defines it)."""

    @property
    def engine_id(self) -> int | None: ...

    @property
    def numerical_notes(self) -> tuple[str, ...]: ...

    @property
    def behavior_notes(self) -> tuple[str, ...]: ...


_NOTES = frozenset(
    {m.name for m in _bindings.cudnnBackendNumericalNote_t}
    | {m.name for m in _bindings.cudnnBackendBehaviorNote_t}
) - {"TYPE_COUNT"}
_BY_UPPER = {n.upper(): n for n in _NOTES}


def normalize_exclusions(
    exclude_engines: Iterable[int] | None, exclude_notes: Iterable[str] | None
) -> tuple[frozenset[int], frozenset[str]]:
    """Check and normalise ``exclude_engines`` (engine ids) and ``exclude_notes`` (numerical or
    behaviour note names, e.g. ``"TENSOR_CORE"``, ``"RUNTIME_COMPILATION"``)."""
    engines: set[int] = set()
    for e in exclude_engines or ():
        if isinstance(e, bool) or not isinstance(e, numbers.Integral) or e < 0:
            raise TypeError(f"exclude_engines holds engine ids (non-negative ints), not {e!r}")
        engines.add(int(e))
    if isinstance(exclude_notes, str):  # read letter by letter, it would name note 'T'
        raise TypeError(
            f"exclude_notes takes a list of note names, not one str: [{exclude_notes!r}]"
        )
    notes: set[str] = set()
    for n in exclude_notes or ():
        if not isinstance(n, str):
            raise TypeError(f"exclude_notes holds note names (str), not {n!r}")
        key = (
            n.strip()
            .upper()
            .removeprefix("CUDNN_NUMERICAL_NOTE_")
            .removeprefix("CUDNN_BEHAVIOR_NOTE_")
        )
        # names such as WINOGRAD_TILE_4x4 are mixed-case: match without case
        key = _BY_UPPER.get(key, key)
        if key not in _NOTES:
            raise ValueError(
                f"unknown note {n!r}{did_you_mean(key, _NOTES)} (the notes: "
                f"{', '.join(sorted(_NOTES))})"
            )
        notes.add(key)
    return frozenset(engines), frozenset(notes)


def exclusion_reason(cfg: EngineConfig, engines: frozenset[int], notes: frozenset[str]) -> str:
    """Why ``cfg`` is excluded (empty when it is not)."""
    if cfg.engine_id in engines:
        return "engine excluded (exclude_engines)"
    hit = notes.intersection(cfg.numerical_notes + cfg.behavior_notes)
    if hit:
        return "note excluded (exclude_notes: " + ", ".join(sorted(hit)) + ")"
    return ""
