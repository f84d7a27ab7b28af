"""Keyword lists with one home: a primary callable (or a TypedDict) declares them, peers take
them as ``**kw: Unpack[K]``, and their signatures still show them.

A family of calls that share keywords (the backward convolutions take ``conv_fprop``'s, every
cuTENSOR function on arrays takes the same launch keywords, ...) declares the list once: type
checkers read it from the TypedDict ``K``; :func:`show_keywords` spells it out in each peer's
``__signature__`` (so ``help()``, :func:`inspect.signature` and the API reference list fixed
keywords, never ``**kw``); :func:`take_keywords` completes a call's keywords with the defaults
and refuses an unknown one as Python does, with a did-you-mean.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from .suggest import did_you_mean

__all__ = ["keyword_defaults", "show_keywords", "take_keywords"]


def keyword_defaults(
    declared: Callable[..., Any] | type, keys: Collection[str] | None = None
) -> dict[str, Any]:
    """The keywords and their defaults (``inspect.Parameter.empty`` for a required one): the
    keyword-only parameters of a callable (those in ``keys``, when given, which may also name
    parameters it takes by position or keyword), or every key of a TypedDict with default
    None."""
    if isinstance(declared, type) and hasattr(declared, "__optional_keys__"):
        return dict.fromkeys(declared.__annotations__)
    params = inspect.signature(declared).parameters.values()
    if keys is None:
        return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    # a named key may be a parameter taken by position or keyword too
    taken = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return {p.name: p.default for p in params if p.kind in taken and p.name in keys}


def take_keywords(
    function: str, given: Mapping[str, Any], defaults: Mapping[str, Any], own: Collection[str] = ()
) -> dict[str, Any]:
    """``given`` completed with ``defaults`` (see :func:`keyword_defaults`); ``TypeError``, as
    Python's own, for a keyword that is neither there nor in ``own`` or for a missing one."""
    for key in given:
        if key not in defaults and key not in own:
            hint = did_you_mean(key, [*defaults, *own])
            raise TypeError(f"{function}() got an unexpected keyword argument {key!r}{hint}")
    missing = [k for k, v in defaults.items() if v is inspect.Parameter.empty and k not in given]
    if missing:
        raise TypeError(f"{function}() missing required keyword-only argument: {missing[0]!r}")
    return {**defaults, **given}


def show_keywords(
    namespace: Mapping[str, Any],
    primary: Callable[..., Any] | Sequence[Callable[..., Any]] | None,
    *keywords: type,
    defaults: Mapping[str, Any] | None = None,
) -> None:
    """Spell out the shared keywords in the ``__signature__`` of every function in
    ``namespace`` (``vars(SomeClass)``, a module's ``globals()``) that takes ``**kw: Unpack[K]``
    for one of the TypedDicts ``keywords``: each key of ``K`` as ``primary`` declares it
    (annotation and default; with several primaries, the first that declares it); a key no
    primary declares (or every key, without a primary) is keyword-only with the TypedDict's
    annotation and its default in ``defaults`` (None when not there): a list that no signature
    spells out declares its types once (the TypedDict) and its defaults once (``defaults``)."""
    defaults = defaults or {}
    primaries = [] if primary is None else [primary] if callable(primary) else list(primary)
    declared: dict[str, inspect.Parameter] = {}
    for declaring in reversed(primaries):
        declared.update(inspect.signature(declaring).parameters)
    by_annotation = {f"Unpack[{k.__name__}]": k for k in keywords}
    for function in list(namespace.values()):
        typed = by_annotation.get(str(getattr(function, "__annotations__", {}).get("kw")))
        if typed is None:
            continue
        signature = inspect.signature(function)
        own = list(signature.parameters.values())
        taken = {p.name for p in own}
        spelled = [
            declared[key].replace(kind=inspect.Parameter.KEYWORD_ONLY)
            if key in declared
            else inspect.Parameter(
                key,
                inspect.Parameter.KEYWORD_ONLY,
                default=defaults.get(key),
                annotation=getattr(hint, "__forward_arg__", hint),
            )
            for key, hint in typed.__annotations__.items()
            if key not in taken
        ]
        # a function's attribute that mypy does not know: setattr
        setattr(function, "__signature__", signature.replace(parameters=[*own[:-1], *spelled]))  # noqa: B010


def place_keywords(function: Callable[..., Any], keywords: type, before: str) -> None:
    """Move the keys of the TypedDict ``keywords`` in ``function``'s ``__signature__`` (where
    :func:`show_keywords` spelled them, at its end) to stand, in their order, just before its
    parameter ``before``: a peer that takes a shared list keeps the keyword order its callers
    read in ``help()`` and :func:`inspect.signature`."""
    signature = inspect.signature(function)
    moved = [p for p in signature.parameters.values() if p.name in keywords.__annotations__]
    rest = [p for p in signature.parameters.values() if p.name not in keywords.__annotations__]
    at = [p.name for p in rest].index(before)
    placed = signature.replace(parameters=[*rest[:at], *moved, *rest[at:]])
    setattr(function, "__signature__", placed)  # noqa: B010 - an attribute mypy does not know
