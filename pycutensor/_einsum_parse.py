"""Parsing ``numpy.einsum`` subscripts: the string form and the sublist form, with NumPy's rules.

Pure Python and NumPy: no GPU and no library are needed (:func:`parse_einsum`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["EinsumSpec", "parse_einsum", "subscripts_from_sublists"]

_LETTERS = frozenset(string.ascii_letters)
_ELLIPSIS = "..."


@dataclass(frozen=True)
class EinsumSpec:
    """A parsed einsum expression (:func:`parse_einsum`).

    ``inputs``/``output``: the labels of each operand and of the result; the dimensions an
    ellipsis stands for get the labels ``"...0"``, ``"...1"``, ... (numbered from the left of the
    broadcast result). ``extents``: each label's extent after broadcasting. ``contracted``: the
    labels summed. ``broadcast``: ``(operand, label)`` pairs where a size-1 dimension broadcasts.
    ``kind``: ``"permutation"``, ``"reduction"``, ``"elementwise"``, ``"contraction"`` or
    ``"pairwise"`` (three operands or more), judged on each operand's distinct labels (``ii->i``
    is a permutation of the diagonal view); :func:`pycutensor.einsum` documents what runs.
    """

    subscripts: str
    inputs: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    extents: Mapping[str, int] = field(compare=False)
    contracted: tuple[str, ...]
    broadcast: tuple[tuple[int, str], ...]
    kind: str

    @property
    def output_shape(self) -> tuple[int, ...]:
        return tuple(self.extents[label] for label in self.output)

    @property
    def diagonals(self) -> tuple[int, ...]:
        """The operands with a label repeated (taken as a strided diagonal view)."""
        return tuple(i for i, t in enumerate(self.inputs) if len(set(t)) != len(t))

    @property
    def explicit(self) -> str:
        """The expression with its output written out (ellipsis dimensions as ``...``)."""
        return ",".join(_join(t) for t in self.inputs) + "->" + _join(self.output)


def _join(labels: Sequence[str]) -> str:
    out, in_ellipsis = [], False
    for label in labels:
        if label.startswith(_ELLIPSIS):
            if not in_ellipsis:
                out.append(_ELLIPSIS)
                in_ellipsis = True
        else:
            out.append(label)
    return "".join(out)


def _parse_term(term: str, where: str) -> tuple[list[str], bool, list[str]]:
    """Letters before an ellipsis, whether there is one, letters after it."""
    before: list[str] = []
    after: list[str] = []
    has_ellipsis = False
    i = 0
    while i < len(term):
        ch = term[i]
        if ch == " ":  # NumPy skips spaces (and only spaces) between labels
            i += 1
            continue
        if ch == ".":
            if term[i : i + 3] != _ELLIPSIS:
                raise ValueError(
                    f"einsum subscripts contain a '.' that is not part of an ellipsis ('...') in {where}"
                )
            if has_ellipsis:
                raise ValueError(
                    f"einsum subscripts contain more than one ellipsis ('...') in {where}"
                )
            has_ellipsis = True
            i += 3
            continue
        if ch not in _LETTERS:
            raise ValueError(
                f"invalid subscript {ch!r} in einsum subscripts ({where}); subscripts must be "
                "letters a-z, A-Z"
            )
        (after if has_ellipsis else before).append(ch)
        i += 1
    return before, has_ellipsis, after


def _check_shape(shape: Any, index: int) -> tuple[int, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(
            f"shape of operand {index} must be a sequence of ints, not {type(shape).__name__}"
        )
    out = []
    for n in shape:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"shape of operand {index} must hold ints, got {n!r}")
        if n < 0:
            raise ValueError(f"shape of operand {index} has a negative extent {n}")
        if n > 2**63 - 1:  # no array has it, and no int64_t extent can hold it
            raise ValueError(f"shape of operand {index} has an extent {n} beyond int64")
        out.append(int(n))
    return tuple(out)


def parse_einsum(subscripts: str, *shapes: Sequence[int]) -> EinsumSpec:
    """Parse ``subscripts`` for operands of the given shapes, with NumPy's rules and messages.

    No GPU and no library are needed. Raises ``ValueError`` for what NumPy refuses. A label
    repeated within one operand (``ii->i``, ``ii``) takes the diagonal of those dimensions, as in
    NumPy; :attr:`EinsumSpec.inputs` keeps the repeats.
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"subscripts must be a str, not {type(subscripts).__name__}")
    # Like NumPy, find "->" and the ellipses in the string as written and skip only the spaces
    # between labels: "i - > j", ". .." and tabs or other whitespace are refused as NumPy refuses
    # them (removing all whitespace first would accept them).
    text = subscripts.replace(" ", "")
    if subscripts.count("->") > 1:
        raise ValueError("einsum subscripts contain '->' more than once")
    if "->" in subscripts:
        lhs, rhs = subscripts.split("->")
    else:
        lhs, rhs = subscripts, None
    for part in (lhs, rhs or ""):
        if "-" in part or ">" in part:
            raise ValueError("einsum subscripts contain a '-' or '>' that is not part of '->'")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise ValueError(
            f"fewer operands ({len(shapes)}) provided to einsum than specified in the subscripts "
            f"({len(terms)})"
        )
    if len(terms) < len(shapes):
        raise ValueError(
            f"more operands ({len(shapes)}) provided to einsum than specified in the subscripts "
            f"({len(terms)})"
        )
    shp = tuple(_check_shape(s, i) for i, s in enumerate(shapes))
    parsed = []
    ellipsis_dims = 0
    for i, (term, shape) in enumerate(zip(terms, shp, strict=False)):
        before, has_ellipsis, after = _parse_term(term, f"operand {i}")
        named = len(before) + len(after)
        if has_ellipsis:
            if named > len(shape):
                raise ValueError(
                    f"einsum subscripts for operand {i} name {named} dimensions but it has {len(shape)}"
                )
            ellipsis_dims = max(ellipsis_dims, len(shape) - named)
        elif named != len(shape):
            many = "many" if named > len(shape) else "few"
            raise ValueError(
                f"einsum subscripts contain too {many} subscripts for operand {i}: {named} for "
                f"{len(shape)} dimensions"
            )
        parsed.append((before, has_ellipsis, after))
    ellipsis_labels = [f"{_ELLIPSIS}{k}" for k in range(ellipsis_dims)]
    inputs: list[tuple[str, ...]] = []
    for i, ((before, has_ellipsis, after), shape) in enumerate(zip(parsed, shp, strict=False)):
        e = len(shape) - len(before) - len(after) if has_ellipsis else 0
        labels = (*before, *ellipsis_labels[ellipsis_dims - e :], *after)
        # A label repeated within one operand takes a diagonal; NumPy requires its extents to
        # match exactly there (no size-1 broadcasting within an operand).
        first: dict[str, int] = {}
        for label, n in zip(labels, shape, strict=False):
            if first.setdefault(label, n) != n:
                raise ValueError(
                    f"dimensions in operand {i} for collapsing index {label!r} don't match "
                    f"({first[label]} != {n})"
                )
        inputs.append(labels)
    # Extents, with NumPy's size-1 broadcasting.
    extents: dict[str, int] = {}
    broadcast: list[tuple[int, str]] = []
    for i, (labels, shape) in enumerate(zip(inputs, shp, strict=False)):
        for label, n in zip(labels, shape, strict=False):
            seen = extents.get(label)
            if seen is None or seen == 1:
                extents[label] = n
            elif n not in (seen, 1):
                raise ValueError(
                    f"operands could not be broadcast together: label {label!r} has extent "
                    f"{seen} in one operand and {n} in operand {i}"
                )
    for i, (labels, shape) in enumerate(zip(inputs, shp, strict=False)):
        broadcast.extend(
            (i, label)
            for label, n in zip(labels, shape, strict=False)
            if n == 1 and extents[label] != 1
        )
    if rhs is None:
        counts: dict[str, int] = {}
        for labels in inputs:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        once = sorted(label for label, c in counts.items() if c == 1 and label in _LETTERS)
        output = (*ellipsis_labels, *once)
    else:
        before, has_ellipsis, after = _parse_term(rhs, "the output")
        for label in (*before, *after):
            if (*before, *after).count(label) > 1:
                raise ValueError(
                    f"einsum subscripts include output subscript {label!r} multiple times"
                )
            if label not in extents:
                raise ValueError(
                    f"einsum subscripts include output subscript {label!r}, which never appeared "
                    "in an input"
                )
        if ellipsis_dims and not has_ellipsis:
            raise ValueError(
                "output has more dimensions than subscripts given in einsum, but no '...' ellipsis "
                "provided to broadcast the extra dimensions"
            )
        output = (*before, *(ellipsis_labels if has_ellipsis else ()), *after)
    out_set = set(output)
    contracted: list[str] = []
    for labels in inputs:
        for label in labels:
            if label not in out_set and label not in contracted:
                contracted.append(label)
    if len(inputs) == 1:
        kind = "permutation" if not contracted else "reduction"
    elif len(inputs) == 2:
        full = [set(t) == out_set and len(set(t)) == len(t) for t in inputs]
        subset = [set(t) <= out_set for t in inputs]
        kind = "elementwise" if not contracted and any(full) and all(subset) else "contraction"
    else:
        kind = "pairwise"
    return EinsumSpec(
        subscripts=text,
        inputs=tuple(inputs),
        output=tuple(output),
        shapes=shp,
        extents=extents,
        contracted=tuple(contracted),
        broadcast=tuple(broadcast),
        kind=kind,
    )


def _sublist_label(value: Any, where: str) -> str:
    if value is Ellipsis:
        return _ELLIPSIS
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"each subscript of {where} must be either an integer or an ellipsis, got {value!r}"
        )
    if not 0 <= value < 52:
        raise ValueError(f"subscript {value} of {where} is not within the valid range [0, 52)")
    # NumPy's mapping: 0-25 are 'A'-'Z', 26-51 are 'a'-'z'
    return chr(ord("A") + value) if value < 26 else chr(ord("a") + value - 26)


def _sublist(value: Any, where: str) -> str:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(
            f"{where} must be a list of integers (and Ellipsis) in einsum's sublist form, not "
            f"{type(value).__name__}"
        )
    return "".join(_sublist_label(v, where) for v in value)


def subscripts_from_sublists(args: Sequence[Any]) -> tuple[str, list[Any]]:
    """NumPy's sublist form ``(op0, sublist0, op1, sublist1, ..., [sublistout])`` as a subscripts
    string and the operands: integers 0-25 are the labels ``A``-``Z``, 26-51 ``a``-``z``, and
    ``Ellipsis`` is ``...``, as in :func:`numpy.einsum`."""
    if not args:
        raise ValueError("einsum needs at least one operand")
    operands = list(args[0::2][: len(args) // 2])
    terms = [_sublist(args[k], f"the sublist of operand {k // 2}") for k in range(1, len(args), 2)]
    if len(args) % 2 and len(args) > 1:
        subscripts = ",".join(terms) + "->" + _sublist(args[-1], "the output sublist")
    elif len(args) % 2:
        raise ValueError("einsum's sublist form needs a sublist after each operand")
    else:
        subscripts = ",".join(terms)
    return subscripts, operands
