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

The filter keywords have one home, :class:`PlanOptions` (names, types, defaults): an entry point
declares ``heuristics`` (its default differs) and ``**filters: Unpack[PlanFilters]`` (the same
names, typed for type checkers), and :func:`takes_plan_options` spells the filters out in its
``__signature__``, so that ``help()`` and ``inspect.signature`` show fixed keywords.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypedDict, TypeVar

from _nvbind.suggest import did_you_mean

__all__ = [
    "PLAN_FILTERS",
    "PlanFilters",
    "PlanOptions",
    "merge_plan_options",
    "plan_values",
    "takes_plan_options",
]

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


class PlanFilters(TypedDict, total=False):
    """The filter keywords of a planning entry point, for ``**filters: Unpack[PlanFilters]``: the
    fields of :class:`PlanOptions` but ``heuristics`` (which each entry point declares with its
    own default), typed for type checkers; the defaults are :class:`PlanOptions`'s (a test keeps
    the two lists the same)."""

    deterministic: bool
    max_workspace: int | None
    allow_reduced_precision: bool
    allow_runtime_compilation: bool
    allow_known_bad: bool
    sm_count: int | None
    exclude_engines: Iterable[int] | None
    exclude_notes: Iterable[str] | None


# The filters at their defaults, and as the keyword-only parameters the signatures show.
_FILTER_FIELDS = [f for f in dataclasses.fields(PlanOptions) if f.name != "heuristics"]
_FILTER_DEFAULTS: dict[str, Any] = {f.name: f.default for f in _FILTER_FIELDS}
_FILTER_PARAMETERS = [
    inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
    for f in _FILTER_FIELDS
]


def plan_values(heuristics: Any, filters: PlanFilters) -> dict[str, Any]:
    """The nine planning values of a call: ``heuristics`` and each filter, as given (``filters``,
    the entry point's ``**filters``) or at its :class:`PlanOptions` default. The values are passed
    on as given, but for a one-shot iterator (a generator, ``iter(...)``), which is read into a
    tuple here: the plan-cache key and the heuristics query both read it, and the query would
    otherwise find it empty (a filter silently dropped, its plan cached under the filter's key).
    They are checked where they are used."""
    values: dict[str, Any] = {"heuristics": heuristics, **_FILTER_DEFAULTS, **filters}
    for name in _ITERABLE_VALUES:
        if isinstance(values[name], Iterator):
            values[name] = tuple(values[name])
    return values


#: The planning values that may be iterables (a sequence of heuristic modes, of exclusions).
_ITERABLE_VALUES = ("heuristics", "exclude_engines", "exclude_notes")


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

    The function declares ``heuristics``, ``options`` (default None) and, last,
    ``**filters: Unpack[PlanFilters]``; its ``__signature__`` shows the filters as keyword-only
    parameters with :class:`PlanOptions`'s defaults, just before ``options``, and a keyword that
    is neither is a ``TypeError`` naming it (as for any function with fixed keywords)."""
    own = list(inspect.signature(function).parameters.values())
    if own[-1].kind is not inspect.Parameter.VAR_KEYWORD or own[-2].name != "options":
        raise TypeError(f"{function.__qualname__} must end with options=None, **filters")
    shown = [*own[:-2], *_FILTER_PARAMETERS, own[-2]]
    known = frozenset(p.name for p in shown)
    name = function.__name__

    @functools.wraps(function)
    def call(*args: Any, options: Any = None, **keywords: Any) -> Any:
        for key in keywords.keys() - known:  # the **filters would take it: refused here
            raise TypeError(
                f"{name}() got an unexpected keyword argument {key!r}{did_you_mean(key, known)}"
            )
        return function(*args, **merge_plan_options(options, keywords))

    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        shown, return_annotation=inspect.signature(function).return_annotation
    )
    return call  # type: ignore[return-value]
