"""The planning choices as one object: :class:`PlanOptions`.

Every planning entry point (:func:`pycudnn.plan.engine_configs`, :func:`~pycudnn.plan.build`,
:func:`~pycudnn.plan.build_all`, :func:`~pycudnn.plan.autotune` and the :class:`~pycudnn.Graph`
methods of the same names) takes the nine planning filters either as keywords or together as
``options=`` (a :class:`PlanOptions` or a mapping with its field names), so that a program can
name its choices once and pass them everywhere::

    fast = PlanOptions(deterministic=True, max_workspace=64 << 20, exclude_notes=["TENSOR_CORE"])
    plan = graph.build(options=fast)
    configs = graph.engine_configs(options=fast)

A keyword given in the same call overrides the field of ``options`` (``build(options=fast,
deterministic=False)``). This module imports nothing of the graph or of planning, so that both can
use it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from _nvbind.suggest import did_you_mean

__all__ = ["PLAN_FILTERS", "PlanOptions", "merge_plan_options", "takes_plan_options"]

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class PlanOptions:
    """The heuristic modes and the filters of planning, as taken by every planning entry point.

    ``heuristics``: a mode or modes tried in order (None: the entry point's own default, which is
    ``("a", "fallback")`` for building and ``("a", "b", "fallback")`` for autotuning).
    ``deterministic=True`` drops NONDETERMINISTIC engines; ``allow_reduced_precision=False`` drops
    REDUCED_PRECISION_REDUCTION and DOWN_CONVERT_INPUTS; ``allow_runtime_compilation=False`` drops
    RUNTIME_COMPILATION engines; ``max_workspace`` (bytes) drops configs that need more;
    ``allow_known_bad=True`` keeps engines of the known-bad table; ``sm_count`` sets
    ``CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET``; ``exclude_engines`` (engine ids) and
    ``exclude_notes`` (note names such as ``"TENSOR_CORE"``) drop the configs they name.
    The values are checked where they are used, with the same errors as the keywords.
    """

    heuristics: Any = None
    deterministic: bool = False
    max_workspace: int | None = None
    allow_reduced_precision: bool = True
    allow_runtime_compilation: bool = True
    allow_known_bad: bool = False
    sm_count: int | None = None
    exclude_engines: Iterable[int] | None = None
    exclude_notes: Iterable[str] | None = None

    def __post_init__(self) -> None:
        # Lists become tuples: the object is frozen, and a caller's list changed later must not
        # change the options (nor the plan-cache key built from them).
        for name in ("heuristics", "exclude_engines", "exclude_notes"):
            value = getattr(self, name)
            if isinstance(value, (list, set, frozenset)):
                object.__setattr__(self, name, tuple(value))

    @classmethod
    def of(cls, options: PlanOptions | Mapping[str, Any]) -> PlanOptions:
        """``options`` as a :class:`PlanOptions`: itself, or one made from a mapping of field
        names (``TypeError`` naming an unknown key, or for anything else)."""
        if isinstance(options, PlanOptions):
            return options
        if not isinstance(options, Mapping):
            raise TypeError(
                f"options must be a PlanOptions or a mapping of its field names, "
                f"not {type(options).__name__}"
            )
        for key in options:
            if key not in PLAN_FILTERS:
                raise TypeError(
                    f"options: unknown planning option {key!r}{did_you_mean(str(key), PLAN_FILTERS)}"
                    f" (the options are {', '.join(PLAN_FILTERS)})"
                )
        return cls(**options)

    def keywords(self) -> dict[str, Any]:
        """The options as keywords of a planning function (``heuristics`` left out when None)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if out["heuristics"] is None:
            del out["heuristics"]
        return out


PLAN_FILTERS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(PlanOptions))


def merge_plan_options(
    options: PlanOptions | Mapping[str, Any] | None, keywords: dict[str, Any]
) -> dict[str, Any]:
    """``keywords`` (those the caller gave) on top of the fields of ``options``."""
    if options is None:
        return keywords
    return {**PlanOptions.of(options).keywords(), **keywords}


def takes_plan_options(function: _F) -> _F:
    """Let a planning function take ``options=`` besides its filter keywords: the options are
    spread into the keywords the caller did not give, and the function sees ``options=None``.

    The function declares ``options`` itself (last keyword, default None), so that ``help()`` and
    type checkers see it."""

    @functools.wraps(function)
    def call(*args: Any, options: Any = None, **keywords: Any) -> Any:
        return function(*args, **merge_plan_options(options, keywords))

    return call  # type: ignore[return-value]
