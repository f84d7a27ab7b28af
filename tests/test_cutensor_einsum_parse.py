"""pycutensor.parse_einsum against NumPy's own einsum parsing (no GPU needed)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pycutensor import parse_einsum


def numpy_shape(subscripts: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    return np.einsum(subscripts, *(np.empty(s) for s in shapes)).shape


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ij,jk", [(2, 3), (3, 4)]),
        ("ij,jk->ki", [(2, 3), (3, 4)]),
        ("mhkn,ukvh->munv", [(2, 3, 4, 5), (6, 4, 7, 3)]),  # the user guide's contraction
        ("ba", [(2, 3)]),
        ("Ba", [(2, 3)]),  # upper case sorts before lower case
        ("i j -> j", [(2, 3)]),  # whitespace is ignored
        ("...ij,...jk", [(7, 2, 3), (3, 4)]),
        ("a...b,b...->...a", [(2, 5, 3), (3, 5)]),
        ("...,...->...", [(2, 1, 3), (4, 3)]),
        ("ij,ij->ij", [(2, 1), (2, 3)]),  # size-1 broadcasting of a label
        ("ij,jk->ik", [(2, 1), (3, 4)]),  # ... also of a summed one
        ("ij...->", [(2, 3)]),  # an ellipsis standing for no dimension
        ("i->...", [(3,)]),
        ("->", [()]),
        ("i->", [(0,)]),
        ("i...->...i", [(2, 3, 4)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("abc,cd,de,ea->b", [(2, 3, 4), (4, 5), (5, 6), (6, 2)]),
    ],
)
def test_output_shape_matches_numpy(subscripts: str, shapes: list[tuple[int, ...]]) -> None:
    spec = parse_einsum(subscripts, *shapes)
    assert spec.output_shape == numpy_shape(subscripts, *shapes)


def test_guide_contraction_spec() -> None:
    spec = parse_einsum("mhkn,ukvh->munv", (2, 3, 4, 5), (6, 4, 7, 3))
    assert spec.inputs == (tuple("mhkn"), tuple("ukvh"))
    assert spec.output == tuple("munv")
    assert spec.contracted == ("h", "k")
    assert spec.kind == "contraction"
    assert dict(spec.extents) == {"m": 2, "h": 3, "k": 4, "n": 5, "u": 6, "v": 7}
    assert spec.explicit == "mhkn,ukvh->munv"


def test_implicit_output_is_sorted_letters_after_ellipsis() -> None:
    spec = parse_einsum("cb...,ba", (2, 3, 7), (3, 5))
    assert spec.output == ("...0", "a", "c")
    assert spec.explicit == "cb...,ba->...ac"


def test_ellipsis_labels_are_right_aligned() -> None:
    spec = parse_einsum("...i,...i->...i", (4, 5, 3), (5, 3))
    assert spec.inputs == (("...0", "...1", "i"), ("...1", "i"))
    assert spec.output_shape == (4, 5, 3)


@pytest.mark.parametrize(
    ("subscripts", "shapes", "kind"),
    [
        ("ij->ji", [(2, 3)], "permutation"),
        ("ij->ij", [(2, 3)], "permutation"),
        ("ij->i", [(2, 3)], "reduction"),
        ("ij->", [(2, 3)], "reduction"),
        ("ij,jk->ik", [(2, 3), (3, 4)], "contraction"),
        ("ij,ij->ij", [(2, 3), (2, 3)], "elementwise"),
        ("ij,j->ij", [(2, 3), (3,)], "elementwise"),
        ("i,j->ij", [(2,), (3,)], "contraction"),  # an outer product: neither operand is the output
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], "pairwise"),
    ],
)
def test_kind(subscripts: str, shapes: list[tuple[int, ...]], kind: str) -> None:
    assert parse_einsum(subscripts, *shapes).kind == kind


def test_broadcast_pairs_are_reported() -> None:
    spec = parse_einsum("ij,ij->ij", (2, 1), (2, 3))
    assert spec.broadcast == ((0, "j"),)


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ii->i", [(3, 3)]),
        ("ii", [(3, 3)]),
        ("ij,kkj->i", [(2, 3), (4, 4, 3)]),
        ("i...i", [(2, 5, 2)]),
        ("iji->j", [(2, 3, 2)]),
    ],
)
def test_repeated_label_in_one_operand_is_a_diagonal(
    subscripts: str, shapes: list[tuple[int, ...]]
) -> None:
    spec = parse_einsum(subscripts, *shapes)
    assert spec.output_shape == numpy_shape(subscripts, *shapes)
    assert spec.diagonals == tuple(
        i for i, t in enumerate(spec.subscripts.split("->")[0].split(","))
        if len(set(t.replace(".", ""))) != len(t.replace(".", ""))
    )  # fmt: skip


def test_repeated_label_extents_must_match_within_an_operand() -> None:
    with pytest.raises(ValueError):
        numpy_shape("ii->i", (1, 3))  # no size-1 broadcasting within one operand
    with pytest.raises(ValueError, match=r"collapsing index 'i' don't match \(1 != 3\)"):
        parse_einsum("ii->i", (1, 3))


@pytest.mark.parametrize(
    ("subscripts", "shapes", "match"),
    [
        ("...i->i", [(2, 3)], "no '...' ellipsis"),
        ("ij->ii", [(2, 2)], "multiple times"),
        ("i..j", [(2, 3)], "not part of an ellipsis"),
        (".i->i", [(2,)], "not part of an ellipsis"),
        ("i->j", [(2,)], "never appeared"),
        ("i,j", [(2,)], "fewer operands"),
        ("i", [(2,), (2,)], "more operands"),
        ("ij", [(2,)], "too many subscripts"),
        ("ijk", [(2, 3, 4, 5)], "too few subscripts"),
        ("1i->i", [(2,)], "subscripts must be letters"),
        ("i->i->i", [(2,)], "more than once"),
        ("ab,bc->ac", [(2, 3), (4, 5)], "could not be broadcast"),
        ("i-j", [(2, 3)], "not part of '->'"),
        ("......", [(2,)], "more than one ellipsis"),
    ],
)
def test_invalid_subscripts_raise_like_numpy(
    subscripts: str, shapes: list[tuple[int, ...]], match: str
) -> None:
    with pytest.raises(ValueError):
        numpy_shape(subscripts, *shapes)
    with pytest.raises(ValueError, match=match):
        parse_einsum(subscripts, *shapes)


def test_argument_types() -> None:
    with pytest.raises(TypeError, match="subscripts must be a str"):
        parse_einsum(b"ij", (2, 3))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence of ints"):
        parse_einsum("i", 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="hold ints"):
        parse_einsum("i", (2.0,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="negative extent"):
        parse_einsum("i", (-1,))


# -- property tests against NumPy -------------------------------------------------------------------
LETTERS = "abcdefABC"


@st.composite
def einsum_problems(draw: st.DrawFn) -> tuple[str, list[tuple[int, ...]]]:
    """Valid expressions without repeated labels per operand, with broadcasting and ellipses."""
    extents = {c: draw(st.integers(1, 3)) for c in LETTERS}
    n_ops = draw(st.integers(1, 3))
    ellipsis_rank = draw(st.integers(0, 2))
    ellipsis_extents = [draw(st.integers(1, 3)) for _ in range(ellipsis_rank)]
    terms, shapes = [], []
    for _ in range(n_ops):
        labels = draw(st.lists(st.sampled_from(LETTERS), max_size=4, unique=True))
        shape = [1 if draw(st.booleans()) and draw(st.booleans()) else extents[c] for c in labels]
        term = "".join(labels)
        if ellipsis_rank and draw(st.booleans()):
            e = draw(st.integers(0, ellipsis_rank))
            at = draw(st.integers(0, len(labels)))
            dims = [1 if draw(st.booleans()) else n for n in ellipsis_extents[ellipsis_rank - e :]]
            term = term[:at] + "..." + term[at:]
            shape = shape[:at] + dims + shape[at:]
        terms.append(term)
        shapes.append(tuple(shape))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        present = sorted({c for t in terms for c in t if c in LETTERS})
        out = draw(st.permutations(present))
        out = out[: draw(st.integers(0, len(out)))]
        out_term = "".join(out)
        if any("..." in t for t in terms) or draw(st.booleans()):
            at = draw(st.integers(0, len(out_term)))
            out_term = out_term[:at] + "..." + out_term[at:]
        subscripts += "->" + out_term
    return subscripts, shapes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(einsum_problems())
def test_random_valid_expressions_match_numpy(problem: tuple[str, list[tuple[int, ...]]]) -> None:
    subscripts, shapes = problem
    try:
        expected = numpy_shape(subscripts, *shapes)
    except ValueError:
        # NumPy refuses (e.g. the ellipsis dimensions do not broadcast): so must we.
        with pytest.raises(ValueError):
            parse_einsum(subscripts, *shapes)
        return
    spec = parse_einsum(subscripts, *shapes)
    assert spec.output_shape == expected
    # every label of the inputs is either in the output or summed, never both
    assert set(spec.contracted).isdisjoint(spec.output)
    assert set(spec.contracted) | set(spec.output) == {x for t in spec.inputs for x in t}


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="ab.,->1 A", max_size=10),
    st.lists(st.lists(st.integers(0, 3), max_size=3).map(tuple), min_size=1, max_size=3),
)
def test_random_strings_accept_and_refuse_as_numpy(
    subscripts: str, shapes: list[tuple[int, ...]]
) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected: tuple[int, ...] | None = numpy_shape(subscripts, *shapes)
    except (ValueError, TypeError):
        expected = None
    if expected is None:
        with pytest.raises((ValueError, NotImplementedError)):
            parse_einsum(subscripts, *shapes)
        return
    assert parse_einsum(subscripts, *shapes).output_shape == expected
