"""The einsum decomposition (pycutensor's plan) against NumPy, without a GPU.

Each generated expression is planned by ``pycutensor._einsum_plan.plan_einsum``; the plan's
steps are then executed here with NumPy kernels that take what cuTENSOR takes (a strided view for
a diagonal, ``astype`` for a cast, ``numpy.einsum`` on one or two operands with each label at
most once per operand for a reduction or contraction) and the result is compared with
``numpy.einsum`` on the whole expression. That proves the decomposition; the GPU tier
(``test_einsum_gpu.py``) proves cuTENSOR's values for the same steps.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pycutensor._einsum_build import build_program
from pycutensor._einsum_parse import subscripts_from_sublists
from pycutensor._einsum_plan import (
    Cast,
    Contract,
    Diagonal,
    EinsumPlan,
    Reduce,
    diagonal_strides,
    plan_einsum,
    result_dtype,
)


def run_on_host(plan: EinsumPlan, arrays: list[np.ndarray]) -> np.ndarray:
    """Execute ``plan`` with NumPy kernels, checking that every step is one cuTENSOR can run."""
    symbols: dict[str, str] = {}
    for t in plan.tensors:
        for label in t.labels:
            symbols.setdefault(label, string.ascii_letters[len(symbols)])

    def term(k: int) -> str:
        labels = plan.tensors[k].labels
        if plan.tensors[k].role != "operand":  # only the user's operands may repeat a label
            assert len(set(labels)) == len(labels), plan.tensors[k]
        return "".join(symbols[x] for x in labels)

    values: dict[int, np.ndarray] = dict(enumerate(arrays))
    for step in plan.steps:
        target = plan.tensors[step.target]
        if isinstance(step, Diagonal):
            assert plan.tensors[step.source].role == "operand" and target.role == "view"
            src = values[step.source]
            strides = diagonal_strides(src.strides, step.axes)  # byte strides: the same sums
            values[step.target] = np.lib.stride_tricks.as_strided(
                src, target.shape, strides, writeable=False
            )
        elif isinstance(step, Cast):  # a widening, and possibly a reordering of the labels
            src = values[step.source]
            assert np.can_cast(src.dtype, target.dtype, "safe"), (src.dtype, target.dtype)
            assert set(target.labels) == set(plan.tensors[step.source].labels)
            expr = f"{term(step.source)}->{term(step.target)}"
            values[step.target] = np.einsum(expr, src.astype(target.dtype))
        elif isinstance(step, Reduce):
            assert set(target.labels) <= set(plan.tensors[step.source].labels)
            expr = f"{term(step.source)}->{term(step.target)}"
            values[step.target] = np.einsum(expr, values[step.source]).astype(target.dtype)
        else:
            assert isinstance(step, Contract)
            left, right = plan.tensors[step.left], plan.tensors[step.right]
            assert left.dtype == right.dtype == target.dtype  # cuTENSOR: one type
            assert set(target.labels) <= set(left.labels) | set(right.labels)
            expr = f"{term(step.left)},{term(step.right)}->{term(step.target)}"
            values[step.target] = np.einsum(expr, values[step.left], values[step.right])
        assert values[step.target].shape == target.shape
        assert values[step.target].dtype == target.dtype
    return values[plan.output]


def assert_matches_numpy(
    subscripts: str,
    arrays: list[np.ndarray],
    optimize: Any,
    *,
    dtype: Any = None,
    out_dtype: Any = None,
) -> None:
    plan = plan_einsum(subscripts, [a.shape for a in arrays], [a.dtype for a in arrays], optimize,
                       dtype=dtype, out_dtype=out_dtype)  # fmt: skip
    if out_dtype is None:
        want = np.einsum(subscripts, *arrays, dtype=dtype)
        if dtype is None:
            assert plan.dtype == want.dtype
        else:  # NumPy ignores dtype= where it returns a view; pycutensor computes a new array
            assert plan.dtype == np.dtype(dtype) == plan.tensors[-1].dtype
            want = want.astype(dtype)
    else:
        shape = np.einsum(subscripts, *arrays).shape
        want = np.einsum(subscripts, *arrays, dtype=dtype, out=np.empty(shape, out_dtype))
        assert plan.tensors[-1].dtype == want.dtype == np.dtype(out_dtype)
    got = run_on_host(plan, arrays)
    assert plan.spec.output_shape == want.shape == got.shape
    assert plan.tensors[-1].role == "output"
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    bound = np.einsum(subscripts, *(abs(a).astype(np.float64) for a in arrays))
    tol = {2: 2e-3, 4: 1e-5, 8: 1e-12, 16: 1e-12}[want.dtype.itemsize]
    assert np.all(abs(got.astype(wide) - want.astype(wide)) <= tol * (bound + 1)), subscripts
    check_cutensor_rules(plan, arrays)


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(np.prod(shape[k + 1 :])) for k in range(len(shape)))


def check_cutensor_rules(plan: EinsumPlan, arrays: list[np.ndarray]) -> None:
    """Every step of the plan passes cuTENSOR's documented rules (structure, type tables,
    layouts), for C-ordered operands, with beta 0 and not: what einsum checks before a GPU."""
    layouts = [(a.shape, c_strides(a.shape), 256) for a in arrays]
    out_layout = (plan.spec.output_shape, c_strides(plan.spec.output_shape), 256)
    build_program(None, plan, layouts, out_layout, None, True)
    if plan.tensors[-1].dtype == plan.dtype:
        build_program(None, plan, layouts, out_layout, None, False)
    else:  # beta * out in another dtype: no cuTENSOR operation widens and adds
        with pytest.raises(ValueError, match="beta other than 0 needs out of the computed dtype"):
            build_program(None, plan, layouts, out_layout, None, False)


# -- generated expressions -----------------------------------------------------------------------
LABELS = "abcdeAB"
DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]
OPTIMIZE = [False, True, "greedy", "optimal", ("greedy", 10**6), "path"]


@st.composite
def problems(draw: st.DrawFn) -> tuple[str, list[np.ndarray], Any]:
    """Valid expressions with repeated labels, ellipses, size-1 broadcasting and mixed dtypes."""
    extents = {c: draw(st.integers(1, 3)) for c in LABELS}
    n_ops = draw(st.integers(1, 4))
    ell = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
    kind = draw(st.sampled_from(["real", "complex"]))
    pool = DTYPES[:3] if kind == "real" else DTYPES[3:]  # real with complex: refused, tested below
    terms: list[str] = []
    shapes: list[tuple[int, ...]] = []
    dtypes: list[str] = []
    for _ in range(n_ops):
        labels = draw(st.lists(st.sampled_from(LABELS), max_size=4))  # repeats allowed
        # a repeated label keeps one extent within the operand; across operands 1 broadcasts
        one = {c: draw(st.integers(0, 4)) == 0 for c in labels}
        shape = [1 if one[c] else extents[c] for c in labels]
        term = "".join(labels)
        if ell and draw(st.booleans()):
            k = draw(st.integers(0, len(ell)))
            at = draw(st.integers(0, len(labels)))
            term = term[:at] + "..." + term[at:]
            shape = (
                shape[:at]
                + [1 if draw(st.booleans()) else n for n in ell[len(ell) - k :]]
                + shape[at:]
            )
        terms.append(term)
        shapes.append(tuple(shape))
        dtypes.append(draw(st.sampled_from(pool)))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        present = sorted({c for t in terms for c in t if c in LABELS})
        out = "".join(draw(st.permutations(present))[: draw(st.integers(0, len(present)))])
        if "..." in subscripts:
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        subscripts += "->" + out
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    arrays = []
    for shape, dtype in zip(shapes, dtypes, strict=True):
        x = rng.integers(-3, 4, size=shape).astype(np.float64)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.integers(-3, 4, size=shape)
        arrays.append(np.asarray(x.astype(dtype)))
    optimize = draw(st.sampled_from(OPTIMIZE))
    if optimize == "path":  # an explicit path, as numpy.einsum_path returns it
        optimize = "path-of-numpy"
    return subscripts, arrays, optimize


def to_sublists(subscripts: str, arrays: list[np.ndarray]) -> list[Any]:
    """The same expression in NumPy's sublist form (A-Z are 0-25, a-z are 26-51)."""

    def sublist(term: str) -> list[Any]:
        out: list[Any] = []
        for part in term.split("..."):
            out += [ord(c) - ord("A") if c.isupper() else ord(c) - ord("a") + 26 for c in part]
            out.append(Ellipsis)
        return out[:-1]

    lhs, _, rhs = subscripts.partition("->")
    args: list[Any] = []
    for array, term in zip(arrays, lhs.split(","), strict=True):
        args += [array, sublist(term)]
    if "->" in subscripts:
        args.append(sublist(rhs))
    return args


WIDER = {"float16": ["float32", "float64"], "float32": ["float64"], "complex64": ["complex128"]}


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.booleans(), st.sampled_from([None, None, "dtype", "out"]), st.randoms())
def test_decomposition_matches_numpy(
    problem: tuple[str, list[np.ndarray], Any], sublists: bool, cast: str | None, rand: Any
) -> None:
    subscripts, arrays, optimize = problem
    # dtype= (compute in a wider type) or out= of a wider type, when the result type has one
    result = np.result_type(*arrays).name
    wider = rand.choice(WIDER[result]) if cast and result in WIDER else None
    if sublists:  # NumPy's sublist form: converted as NumPy converts it
        args = to_sublists(subscripts, arrays)
        subscripts, operands = subscripts_from_sublists(args)
        assert all(x is y for x, y in zip(operands, arrays, strict=True))
        try:
            want_shape = np.einsum(*args).shape
        except ValueError:
            want_shape = None
        if want_shape is not None:
            assert np.einsum(subscripts, *arrays).shape == want_shape
    try:
        np.einsum(subscripts, *arrays)
    except ValueError:  # e.g. ellipsis dimensions that do not broadcast: refused alike
        with pytest.raises(ValueError):
            plan_einsum(subscripts, [a.shape for a in arrays], [a.dtype for a in arrays])
        return
    if optimize == "path-of-numpy":
        optimize = np.einsum_path(subscripts, *arrays, optimize="greedy")[0]
    dtype = wider if cast == "dtype" else None
    out_dtype = wider if cast == "out" else None
    assert_matches_numpy(subscripts, arrays, optimize, dtype=dtype, out_dtype=out_dtype)


# -- named cases ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("ii->i", [(3, 3)]),  # a diagonal
        ("ii", [(3, 3)]),  # a trace
        ("ii->", [(1, 1)]),
        ("iij->ji", [(2, 2, 3)]),
        ("ijij->ij", [(2, 3, 2, 3)]),  # two repeated labels
        ("i...i->...", [(2, 4, 5, 2)]),
        ("ij,kkj->i", [(2, 3), (4, 4, 3)]),
        ("ii,ii->i", [(3, 3), (3, 3)]),
        ("ii,jj,ij->", [(2, 2), (3, 3), (2, 3)]),
        ("abc,cd,de,ea->b", [(2, 3, 4), (4, 5), (5, 6), (6, 2)]),
        ("i,i,i,i->i", [(3,), (3,), (1,), (3,)]),
        ("ij,jk", [(2, 1), (3, 4)]),  # a summed label broadcast from 1
        ("->", [()]),
        (",,->", [(), (), ()]),
    ],
)
@pytest.mark.parametrize("optimize", [False, "greedy", "optimal"])
def test_named_expressions(subscripts: str, shapes: list[tuple[int, ...]], optimize: Any) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    assert_matches_numpy(subscripts, arrays, optimize)


def test_a_diagonal_is_a_view_and_a_trace_a_reduction() -> None:
    plan = plan_einsum("ii->i", [(3, 3)], ["float32"])
    assert [type(s) for s in plan.steps] == [Diagonal, Reduce]
    assert plan.tensors[1].role == "view" and plan.tensors[1].base == 0
    assert diagonal_strides((12, 4), plan.steps[0].axes) == (16,)  # type: ignore[union-attr]
    trace = plan_einsum("ii", [(3, 3)], ["float32"])
    assert trace.tensors[-1].shape == ()


def test_paths_follow_optimize() -> None:
    shapes = [(2, 30), (30, 40), (40, 3)]
    subscripts = "ij,jk,kl->il"
    arrays = [np.empty(s) for s in shapes]
    greedy = np.einsum_path(subscripts, *arrays, optimize="greedy")[0][1:]
    dtypes = ["float32"] * 3
    assert list(plan_einsum(subscripts, shapes, dtypes, "greedy").path) == greedy
    assert list(plan_einsum(subscripts, shapes, dtypes, True).path) == greedy
    assert plan_einsum(subscripts, shapes, dtypes, False).path == ((0, 1), (0, 1))
    explicit = plan_einsum(subscripts, shapes, dtypes, ["einsum_path", (1, 2), (0, 1)])
    assert explicit.path == ((1, 2), (0, 1))
    # a first step that contracts operands 1 and 2: its target holds j and l only
    first = explicit.steps[0]
    assert isinstance(first, Contract) and (first.left, first.right) == (1, 2)
    assert explicit.tensors[first.target].labels == ("j", "l")
    # one step of three operands is done pairwise
    three = plan_einsum(subscripts, shapes, dtypes, [(0, 1, 2)])
    assert [type(s) for s in three.steps] == [Contract, Contract]


@pytest.mark.parametrize(
    ("optimize", "error", "match"),
    [
        ([(0, 1)], ValueError, "leaves 2 tensors"),
        ([(0, 3), (0, 1)], ValueError, "refers to tensor 3"),
        ([(0, 0), (0, 1)], ValueError, "names a tensor twice"),
        ([(0, 1), ()], ValueError, "non-empty tuple"),
        ([("a", 1)], ValueError, "must hold ints"),
        (3, TypeError, "a bool, a strategy name or a path"),
    ],
)
def test_bad_paths_are_refused(optimize: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        plan_einsum("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], ["float32"] * 3, optimize)


def test_opt_einsum_strategies_when_installed() -> None:
    pytest.importorskip("opt_einsum", reason="opt_einsum is optional")
    plan = plan_einsum("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], ["float64"] * 3, "dp")
    assert len(plan.path) == 2
    with pytest.raises(ValueError, match="not an opt_einsum strategy"):
        plan_einsum("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], ["float64"] * 3, "no-such")


@pytest.mark.parametrize(
    ("dtypes", "expected"),
    [
        (["float16", "float32"], "float32"),
        (["float32", "float64"], "float64"),
        (["float16", "float64"], "float64"),
        (["complex64", "complex128"], "complex128"),
        (["float32", "complex64"], "complex64"),
    ],
)
def test_result_dtype_is_numpys(dtypes: list[str], expected: str) -> None:
    assert result_dtype(dtypes) == np.result_type(*dtypes) == np.dtype(expected)


def test_casts_follow_permutation_table() -> None:
    plan = plan_einsum("i,i->i", [(3,), (3,)], ["float16", "float64"])
    casts = [s for s in plan.steps if isinstance(s, Cast)]
    assert [plan.tensors[c.target].dtype.name for c in casts] == ["float32", "float64"]
    with pytest.raises(TypeError, match="cast operand 0 to complex64 first"):
        plan_einsum("i,i->i", [(3,), (3,)], ["float32", "complex64"])


def test_out_of_a_wider_dtype_is_a_final_widening() -> None:
    plan = plan_einsum("ij->ji", [(2, 3)], ["float16"], out_dtype="float64")
    assert plan.dtype == np.float16
    assert [type(s) for s in plan.steps] == [Cast, Cast]  # float16 -> float32 -> float64
    assert plan.tensors[-1].labels == ("j", "i") and plan.tensors[-1].dtype == np.float64
    summed = plan_einsum("ij->i", [(2, 3)], ["float32"], out_dtype="float64")
    assert [type(s) for s in summed.steps] == [Reduce, Cast]  # summed in float32, then widened
    with pytest.raises(TypeError, match="cannot be cast to float16 safely"):
        plan_einsum("ij->i", [(2, 3)], ["float32"], out_dtype="float16")
    with pytest.raises(TypeError, match="cuTENSOR converts only"):
        plan_einsum("ij->i", [(2, 3)], ["float32"], out_dtype="complex64")  # safe in NumPy


def test_dtype_forces_the_computation_type() -> None:
    plan = plan_einsum("ij,jk", [(2, 3), (3, 4)], ["float32", "float16"], dtype="float64")
    assert plan.dtype == np.float64 and plan.tensors[-1].dtype == np.float64
    assert sum(isinstance(s, Cast) for s in plan.steps) == 3  # 32->64, 16->32->64
    with pytest.raises(TypeError, match="cannot be cast to dtype=float16 safely"):
        plan_einsum("ij,jk", [(2, 3), (3, 4)], ["float32", "float32"], dtype="float16")
    with pytest.raises(TypeError, match="not a cuTENSOR data type"):
        plan_einsum("ij,jk", [(2, 3), (3, 4)], ["float32", "float32"], dtype="complex256")


@pytest.mark.parametrize("dtypes", [["int32"], ["int64", "float32"], ["bool"], ["float32", "int8"]])
def test_dtypes_cutensor_cannot_compute_are_refused(dtypes: list[str]) -> None:
    subscripts = ",".join(["i"] * len(dtypes)) + "->i"
    with pytest.raises(TypeError, match=r"not a cuTENSOR data type|cuTENSOR converts only"):
        plan_einsum(subscripts, [(3,)] * len(dtypes), dtypes)


def test_sublist_form_is_numpys() -> None:
    a, b = np.ones((2, 3)), np.ones((3, 4))
    subscripts, operands = subscripts_from_sublists([a, [0, 1], b, [1, 27], [27, 0]])
    assert subscripts == "AB,Bb->bA"
    assert np.einsum(subscripts, *operands).shape == np.einsum(a, [0, 1], b, [1, 27], [27, 0]).shape
    subscripts, _ = subscripts_from_sublists([a, [Ellipsis, 1]])
    assert subscripts == "...B"
    with pytest.raises(ValueError, match=r"valid range \[0, 52\)"):
        subscripts_from_sublists([a, [0, 52]])
    with pytest.raises(TypeError, match="integer or an ellipsis"):
        subscripts_from_sublists([a, [0, True]])
    with pytest.raises(TypeError, match="list of integers"):
        subscripts_from_sublists([a, "ij"])


def test_the_elementwise_route_describes_out_with_outs_own_alignment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An elementwise product writes D through C's descriptor: that descriptor promised C's
    alignment (256 bytes) while out was a 4-byte aligned view, and every call was refused."""
    from pycutensor import _einsum_build

    seen: list[tuple[str, list[int]]] = []
    real = _einsum_build.check_operation

    def record(kind: str, specs: Any, labels: Any, **kw: Any) -> None:
        seen.append((kind, [s.alignment for s in specs]))
        real(kind, specs, labels, **kw)

    monkeypatch.setattr(_einsum_build, "check_operation", record)
    plan = plan_einsum("ij,ij->ij", [(64, 64), (64, 64)], ["float32", "float32"])
    layouts = [((64, 64), (64, 1), 256), ((64, 64), (64, 1), 256)]
    build_program(None, plan, layouts, ((64, 64), (64, 1), 4), None, True)
    assert seen == [("elementwise_binary", [256, 4])]  # A's, and C's which is also D's
