"""Adversarial input to every public entry point of pycutensor: refused in Python, before C.

Expectations come from NumPy (einsum's own parser, Fortran-ordered strides), from the cuTENSOR
user guide (generalized column-major layout, Einstein summation, the scalar-type and unary-operator
tables) and from the C types of the API (``int64_t`` extents and strides, ``int32_t`` modes), never
from the code under test. Without a GPU the checks are reached with NumPy arrays (everything but
the device is validated first, so the refusal names the bad argument, not the host memory) and with
objects in a closed state, which must refuse before any C call. The few tests marked ``gpu`` need
real device arrays.
"""

from __future__ import annotations

import math
import string
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import pycutensor
from _nvbind.resource import CResource
from pycutensor import operations
from pycutensor.errors import ClosedError
from pycutensor.handle import Handle
from pycutensor.operation import Operation
from pycutensor.operations import (
    UNARY_OPERATORS,
    Contraction,
    check_operation,
    expected_scalar_type,
)
from pycutensor.plan import (
    Plan,
    PlanPreference,
    PlanPreferenceObject,
    autotune,
    estimate_workspace,
)
from pycutensor.tensor import ModeMap, TensorDescriptor, TensorSpec, check_modes, check_pointer

INT64_MAX = 2**63 - 1


def numpy_shape(subscripts: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    # zero-stride operands: any shape costs no memory
    operands = [np.broadcast_to(np.zeros(()), s) for s in shapes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.einsum(subscripts, *operands).shape


# -- einsum subscripts against NumPy's parser -------------------------------------------------------
# Letters, the syntax characters, spaces (which NumPy skips) and whitespace NumPy refuses
# (tab, newline, vertical tab, form feed, the ideographic space) and a non-ASCII letter.
_ALPHABET = st.sampled_from(
    ["a", "b", "c", "A", "B", ".", "...", ",", "-", ">", "->", " ", "\t", "\n", "\x0b", "\u3000",
     "\u00e9", "1"]
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_ALPHABET, max_size=9).map("".join),
    st.lists(st.lists(st.integers(0, 3), max_size=3).map(tuple), min_size=1, max_size=3),
)
def test_subscripts_are_accepted_and_refused_as_numpy_does(
    subscripts: str, shapes: list[tuple[int, ...]]
) -> None:
    try:
        expected: tuple[int, ...] | None = numpy_shape(subscripts, *shapes)
    except (ValueError, TypeError):  # UnicodeEncodeError is a ValueError
        expected = None
    if expected is None:
        with pytest.raises(ValueError):
            pycutensor.parse_einsum(subscripts, *shapes)
    else:  # traces and diagonals included
        assert pycutensor.parse_einsum(subscripts, *shapes).output_shape == expected


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("i\tj->j", [(2, 3)]),  # regression: all whitespace used to be stripped
        ("i\nj", [(2, 3)]),
        ("ij\r", [(2, 3)]),
        ("i\u3000j", [(2, 3)]),  # an ideographic space
        ("ij - > j", [(2, 3)]),  # NumPy looks for "->" in the string as written
        ("ij- >j", [(2, 3)]),
        (". ..->...", [(2,)]),  # an ellipsis is three dots in a row
        ("..", [(2,)]),
        ("\u00e9", [(2,)]),  # not an ASCII letter
        ("\u01c5", [(2,)]),  # a title-case letter: str.isalpha() would accept it
        ("ij\x00k", [(2, 3)]),  # NumPy's C parser stops at the NUL; refusing it is safer
    ],
)
def test_subscripts_numpy_refuses_are_refused(
    subscripts: str, shapes: list[tuple[int, ...]]
) -> None:
    if "\x00" not in subscripts:
        with pytest.raises(ValueError):
            numpy_shape(subscripts, *shapes)
    with pytest.raises(ValueError):
        pycutensor.parse_einsum(subscripts, *shapes)


@pytest.mark.parametrize(
    ("subscripts", "shapes"),
    [
        ("i j -> j", [(2, 3)]),  # spaces between labels and around the arrow are skipped
        (" i , j -> ", [(2,), (3,)]),
        ("... i", [(4, 5, 2)]),
        ("->", [()]),  # 0-d operands
        (",->", [(), ()]),
        ("i,->i", [(3,), ()]),
        ("...,...->...", [(), (2, 1)]),
        ("i...->...", [(0, 2)]),  # empty extents
        ("ab,b->a", [(0, 3), (3,)]),
        ("ab,b->a", [(2, 0), (1,)]),  # extent 0 against a size-1 broadcast
        ("...a,...a->...", [(3, 1, 4), (2, 4)]),  # ellipsis broadcasting
    ],
)
def test_subscripts_numpy_accepts_parse_to_its_shape(
    subscripts: str, shapes: list[tuple[int, ...]]
) -> None:
    assert pycutensor.parse_einsum(subscripts, *shapes).output_shape == numpy_shape(
        subscripts, *shapes
    )


def test_all_52_labels_and_more_dimensions_through_an_ellipsis() -> None:
    letters = string.ascii_letters  # the 52 labels einsum has
    shape = (1,) * 49 + (2, 3, 4)
    spec = pycutensor.parse_einsum(letters, shape)
    assert spec.output_shape == numpy_shape(letters, shape)
    assert spec.output == tuple(sorted(letters))  # implicit output: alphabetical, upper first
    # 52 labels plus 8 dimensions an ellipsis stands for (NumPy arrays have at most 64 dims)
    wide = (2,) * 8 + shape
    assert pycutensor.parse_einsum("..." + letters, wide).output_shape == numpy_shape(
        "..." + letters, wide
    )


@st.composite
def _valid_problems(draw: st.DrawFn) -> tuple[str, list[tuple[int, ...]]]:
    labels = "abcdeAB"
    extent = {c: draw(st.integers(0, 3)) for c in labels}
    ell = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    terms: list[str] = []
    shapes: list[tuple[int, ...]] = []
    for _ in range(draw(st.integers(1, 3))):
        term: list[str] = draw(st.lists(st.sampled_from(labels), max_size=4, unique=True))
        shape = [1 if draw(st.integers(0, 4)) == 0 else extent[c] for c in term]
        if len(ell) > 0 and draw(st.booleans()):
            k = draw(st.integers(0, len(ell)))
            at = draw(st.integers(0, len(term)))
            term = [*term[:at], "...", *term[at:]]
            shape = (
                shape[:at]
                + [1 if draw(st.booleans()) else n for n in ell[len(ell) - k :]]
                + shape[at:]
            )
        terms.append("".join(term))
        shapes.append(tuple(shape))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        present = sorted({c for t in terms for c in t if c in labels})
        out = "".join(draw(st.permutations(present))[: draw(st.integers(0, len(present)))])
        if "..." in subscripts and draw(st.booleans()):
            out = "..." + out
        subscripts += "->" + out
    return subscripts, shapes


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_valid_problems())
def test_einstein_rules_against_numpy(problem: tuple[str, list[tuple[int, ...]]]) -> None:
    subscripts, shapes = problem
    try:
        expected = numpy_shape(subscripts, *shapes)
    except ValueError:  # extents that do not broadcast, or an ellipsis missing from the output
        with pytest.raises(ValueError):
            pycutensor.parse_einsum(subscripts, *shapes)
        return
    spec = pycutensor.parse_einsum(subscripts, *shapes)
    assert spec.output_shape == expected
    # The guide's rule, derived from the string: labels of the inputs absent from the output are
    # contracted (also those in one input only); no output label is contracted.
    lhs, _, rhs = subscripts.partition("->")
    inputs = {c for c in lhs if c in string.ascii_letters}
    if "->" in subscripts:
        output = {c for c in rhs if c in string.ascii_letters}
    else:  # implicit: the labels that appear once
        output = {c for c in inputs if lhs.count(c) == 1}
    letters = {x for x in spec.contracted if not x.startswith("...")}
    assert letters == inputs - output
    assert set(spec.output).isdisjoint(spec.contracted)
    if len(shapes) == 1:  # one operand: a permutation unless something is summed
        assert spec.kind == ("reduction" if spec.contracted else "permutation")


@pytest.mark.parametrize(
    ("shape", "error", "match"),
    [
        ((2**63,), ValueError, "beyond int64"),
        ((2**64 + 3,), ValueError, "beyond int64"),
        ((-1,), ValueError, "negative extent"),
        ((True,), TypeError, "must hold ints"),
        ((2.0,), TypeError, "must hold ints"),
        ("2", TypeError, "sequence of ints"),
        (np.array([2]), TypeError, "sequence of ints"),
    ],
)
def test_parse_einsum_shapes(shape: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        pycutensor.parse_einsum("i", shape)


@pytest.mark.parametrize("subscripts", [None, 3, b"ij", ["ij"]])
def test_parse_einsum_subscripts_must_be_a_str(subscripts: Any) -> None:
    with pytest.raises(TypeError, match="subscripts must be a str"):
        pycutensor.parse_einsum(subscripts, (2, 3))


# -- tensor specifications ----------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 6), max_size=5), st.sampled_from([np.float32, np.complex128]))
def test_default_strides_are_the_guides_generalized_column_major(
    extents: list[int], dtype: Any
) -> None:
    # The guide: stride(i_1) = 1, stride(i_l) = stride(i_{l-1}) * extent(i_{l-1}); that is exactly
    # a Fortran-ordered NumPy array's layout, in elements.
    fortran = np.empty(extents, dtype=dtype, order="F")
    spec = TensorSpec.create(extents, dtype=dtype)
    assert spec.strides == tuple(s // fortran.itemsize for s in fortran.strides)
    assert TensorSpec.create((4, 8, 12)).strides == (1, 4, 32)  # the guide's own example


@pytest.mark.parametrize(
    ("extents", "strides", "match"),
    [
        ((2**63,), None, "int64_t"),  # regression: ctypes wrapped these silently
        ((2**64 + 5,), None, "int64_t"),  # would have reached cuTENSOR as extent 5
        ((np.uint64(2**64 - 1),), None, "int64_t"),
        ((2,), (2**64 + 1,), "int64_t"),
        ((2**40, 2**40), None, "more than cuTENSOR's int64_t offsets"),  # default strides overflow
        ((3, 2), (1, 2**62), "more than cuTENSOR's int64_t offsets"),
    ],
)
def test_extents_and_strides_beyond_int64_are_refused(
    extents: tuple[Any, ...], strides: tuple[int, ...] | None, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        TensorSpec.create(extents, strides)


def test_a_spec_built_directly_is_validated_too() -> None:
    # Regression: TensorSpec(...) skipped every check, and TensorDescriptor.from_spec passes a
    # spec straight to cutensorCreateTensorDescriptor.
    with pytest.raises(ValueError, match="int64_t"):
        TensorSpec((2**64 + 5,), (1,), np.dtype(np.float32), 256)
    with pytest.raises(ValueError, match="larger than zero"):
        TensorSpec((0,), (1,), np.dtype(np.float32), 256)
    with pytest.raises(ValueError, match="negative strides"):
        TensorSpec((3,), (-1,), np.dtype(np.float32), 256)
    with pytest.raises(ValueError, match="has 1 entries but there are 2 extents"):
        TensorSpec((3, 2), (1,), np.dtype(np.float32), 256)
    with pytest.raises(TypeError, match="not a cuTENSOR data type"):
        TensorSpec((3,), (1,), np.dtype(np.int64), 256)
    with pytest.raises(ValueError, match="power of two"):
        TensorSpec((3,), (1,), np.dtype(np.float32), 3)
    with pytest.raises(ValueError, match="power of two"):
        TensorSpec.create((3,)).with_alignment(512)
    spec = TensorSpec([3, np.int64(2)], [np.int32(1), 3], "float64", 8)  # type: ignore[arg-type]
    assert spec == TensorSpec((3, 2), (1, 3), np.dtype(np.float64), 8)
    assert type(spec.extents[1]) is int and hash(spec) == hash(
        TensorSpec.create((3, 2), None, "f8", 8)
    )


@pytest.mark.parametrize(
    ("extents", "error"),
    [((0,), ValueError), ((-3,), ValueError), ((True,), TypeError), ((2.0,), TypeError),
     (("2",), TypeError), (None, TypeError), ("ab", TypeError), ((1,) * 65, ValueError)],
)  # fmt: skip
def test_bad_extents(extents: Any, error: type) -> None:
    with pytest.raises(error):
        TensorSpec.create(extents)


@pytest.mark.parametrize("strides", [(0, 3), (1, -3), (1.0, 3), (1,), (1, 2, 3)])
def test_bad_strides(strides: tuple[Any, ...]) -> None:
    with pytest.raises((TypeError, ValueError)):
        TensorSpec.create((3, 4), strides)


def test_overlapping_output_strides_are_refused_inputs_are_not() -> None:
    # (3, 4) with strides (1, 2): element (2, 0) and (0, 1) share address 2.
    overlapping = TensorSpec.create((3, 4), (1, 2))
    packed = TensorSpec.create((3, 4))
    with pytest.raises(ValueError, match=r"overlapping strides .* written twice"):
        check_operation("permutation", [packed, overlapping], ["ij", "ij"])
    check_operation("permutation", [overlapping, packed], ["ij", "ij"])  # an input may overlap


@pytest.mark.parametrize("ptr", [-256, 2**64, 2**64 + 256])
def test_pointers_beyond_64_bits_are_refused(ptr: int) -> None:
    with pytest.raises(ValueError, match="not a 64-bit address"):
        check_pointer(ptr, 4, "a")


# -- mode labels ----------------------------------------------------------------------------------------
def test_labels_compare_as_python_values_everywhere() -> None:
    # Regression: the ModeMap told 1, 1.0 and True apart while the structure checks (sets and
    # dicts) did not, so C could receive different modes for labels Python had matched.
    a = c = TensorSpec.create((4,))
    check_operation("elementwise_binary", [a, c], [[1], [True]], binary=["add"])
    modes = ModeMap()
    assert modes[1] == modes[True] == modes[1.0] == modes[np.int64(1)]
    assert modes["1"] != modes[1]
    with pytest.raises(ValueError, match="appears twice"):
        check_modes([1, True], 2)
    with pytest.raises(ValueError, match="appears twice"):
        check_modes([2, 2.0], 2)


def test_mode_ids_are_distinct_int32_for_any_hashable_labels() -> None:
    labels: list[Any] = ["a", 97, "ab", None, ("site", 3), frozenset({1}), 2**40, -(2**31),
                         2**31 - 1, -(2**31) - 1, 1 << 20, "\u00e9"]  # fmt: skip
    modes = ModeMap(labels)
    ids = modes.ids(labels)
    assert len(set(ids)) == len(labels)
    assert all(-(2**31) <= i < 2**31 for i in ids)
    assert ids[0] == ord("a") and ids[7] == -(
        2**31
    )  # chars keep their code point, ints their value
    assert [modes.label(i) for i in ids] == labels


@pytest.mark.parametrize(
    ("modes", "error", "match"),
    [
        ({"i", "j"}, TypeError, "sequence of mode labels, not set"),  # regression: unordered
        (frozenset("ij"), TypeError, "sequence of mode labels"),
        ({"i": 0, "j": 1}, TypeError, "sequence of mode labels"),
        (b"ij", TypeError, "sequence of mode labels"),
        (None, TypeError, "sequence of mode labels"),
        ([["i"], "j"], TypeError, "not hashable"),
        ([("i", ["x"]), "j"], TypeError, "not hashable"),  # a tuple holding a list
        ("iji", ValueError, "has 3 labels"),
        ([None, None], ValueError, "appears twice"),
    ],
)
def test_bad_modes(modes: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        check_modes(modes, 2)


def test_generators_of_labels_are_accepted() -> None:
    assert check_modes((c for c in "ij"), 2) == ("i", "j")


# -- the guide's tables ------------------------------------------------------------------------------
# "标量类型": the scalar type is a function of the output type and the compute type.
_GUIDE_SCALAR_TABLE = [
    (("R_16F", "R_16BF", "R_32F"), ("16F", "16BF", "TF32", "3XTF32", "32F"), "R_32F"),
    (("R_64F",), ("32F", "64F"), "R_64F"),
    (("C_16F", "C_16BF", "C_32F"), ("16F", "16BF", "TF32", "3XTF32", "32F"), "C_32F"),
    (("C_64F",), ("32F", "64F"), "C_64F"),
]


def test_scalar_type_table_is_the_guides() -> None:
    for outputs, computes, scalar in _GUIDE_SCALAR_TABLE:
        for out in outputs:
            for compute in computes:
                assert expected_scalar_type(out, compute) == scalar, (out, compute)


# "支持的一元运算符", per data type (MISH, SWISH, SOFT_PLUS and SOFT_SIGN came later in
# cutensor/types.h as real-valued activations).
_GUIDE_REAL = {
    "IDENTITY", "SQRT", "RCP", "RELU", "SIGMOID", "TANH", "EXP", "LOG", "ABS", "NEG", "SIN", "COS",
    "TAN", "SINH", "COSH", "ASIN", "ACOS", "ATAN", "ASINH", "ACOSH", "ATANH", "CEIL", "FLOOR",
    "MISH", "SWISH", "SOFT_PLUS", "SOFT_SIGN",
}  # fmt: skip
_GUIDE_COMPLEX = {"IDENTITY", "CONJ"}


@pytest.mark.parametrize(
    ("dtype", "allowed"),
    [(np.float16, _GUIDE_REAL), (ml_dtypes.bfloat16, _GUIDE_REAL), (np.float32, _GUIDE_REAL),
     (np.float64, _GUIDE_REAL), (np.complex64, _GUIDE_COMPLEX), (np.complex128, _GUIDE_COMPLEX)],
)  # fmt: skip
def test_every_unary_operator_per_data_type(dtype: Any, allowed: set[str]) -> None:
    a = TensorSpec.create((2, 3), dtype=dtype)
    b = TensorSpec.create((3, 2), dtype=dtype)
    for op in UNARY_OPERATORS:
        if op.upper() in allowed:
            check_operation("permutation", [a, b], ["ij", "ji"], unary=[op])
        else:
            with pytest.raises(ValueError, match="the user guide's table lists"):
                check_operation("permutation", [a, b], ["ij", "ji"], unary=[op])


@pytest.mark.parametrize(
    ("kind", "shapes", "modes", "match"),
    [
        # a mode in one input only and not in the output is contracted: accepted
        ("contraction", [(2, 3), (3, 4), (2,)], ["ij", "jk", "i"], None),
        ("contraction", [(2, 3), (3, 4), (2, 4, 5)], ["ij", "jk", "ikx"], "appears in no input"),
        ("reduction", [(2, 3), (2,)], ["ij", "i"], None),
        ("reduction", [(2, 3), (5,)], ["ij", "x"], "appears in no input"),
        ("elementwise_binary", [(2, 3), (3,)], ["ij", "j"], "every mode of an input must appear"),
        ("elementwise_binary", [(3,), (2, 3)], ["j", "ij"], None),  # C broadcasts A
        ("permutation", [(2, 3), (3,)], ["ij", "j"], "every mode of an input must appear"),
        ("contraction", [(2, 3), (4, 4), (2, 4)], ["ij", "jk", "ik"], "same extent"),
    ],
)
def test_einstein_rules_of_each_kind(
    kind: str, shapes: list[tuple[int, ...]], modes: list[str], match: str | None
) -> None:
    specs = [TensorSpec.create(s) for s in shapes]
    binary = ["add"] if kind in ("reduction", "elementwise_binary") else []
    if match is None:
        check_operation(kind, specs, modes, binary=binary)
    else:
        with pytest.raises(ValueError, match=match):
            check_operation(kind, specs, modes, binary=binary)


# -- PlanPreference ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"algo": 2**31}, ValueError), ({"algo": -7}, ValueError), ({"algo": None}, TypeError),
        ({"algo": True}, TypeError), ({"algo": 1.0}, TypeError), ({"algo": "best"}, ValueError),
        ({"incremental_count": 2**31}, ValueError), ({"incremental_count": 0}, ValueError),
        ({"incremental_count": -4}, ValueError), ({"incremental_count": np.float64(4)}, TypeError),
        ({"kernel_rank": 2**31}, ValueError), ({"kernel_rank": -1}, ValueError),
        ({"tag": 2**31}, ValueError), ({"tag": -(2**31) - 1}, ValueError), ({"tag": "x"}, TypeError),
        ({"gpu_arch": 89}, ValueError), ({"gpu_arch": 90.0}, TypeError), ({"jit": 1}, ValueError),
        ({"jit": None}, ValueError), ({"autotune": "full"}, ValueError),
        ({"cache_mode": True}, ValueError), ({"cache_mode": "lru"}, ValueError),
    ],
)  # fmt: skip
def test_plan_preference_refusals(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        PlanPreference(**kwargs)


def test_plan_preference_extremes_of_int32_are_accepted() -> None:
    pref = PlanPreference(algo=2**31 - 1, incremental_count=2**31 - 1, kernel_rank=0, tag=-(2**31))
    assert pref.algo_value == 2**31 - 1
    assert PlanPreference(algo=np.int64(3)) == PlanPreference(algo=3)
    assert PlanPreference(cache_mode="NONE").cache_mode == "none"


# -- objects that are closed or of the wrong type: refused before C ------------------------------
def _closed(cls: Any) -> Any:
    """An instance of ``cls`` in the state ``close()`` leaves it in (its pointer never reaches C)."""
    obj = cls.__new__(cls)
    CResource.__init__(obj, 1, None, owned=False)
    CResource.close(obj)
    return obj


def test_closed_handle_never_reaches_c(tmp_path: Path) -> None:
    handle = _closed(Handle)
    existing = tmp_path / "cache.bin"
    existing.write_bytes(b"\0" * 16)
    with pytest.raises(ClosedError):
        TensorDescriptor(handle, (2, 3))
    with pytest.raises(ClosedError):
        handle.resize_plan_cache(8)
    with pytest.raises(ClosedError):
        handle.write_plan_cache(tmp_path / "plans.bin")
    with pytest.raises(ClosedError):
        handle.read_plan_cache(existing)
    with pytest.raises(ClosedError):
        handle.write_kernel_cache(tmp_path / "kernels.bin")
    with pytest.raises(ClosedError):
        handle.read_kernel_cache(existing)
    with pytest.raises(ClosedError):
        PlanPreference().create(handle)
    assert not (tmp_path / "plans.bin").exists() and not (tmp_path / "kernels.bin").exists()
    # argument checks still come first
    with pytest.raises(ValueError, match="uint32_t"):
        handle.resize_plan_cache(2**32)
    with pytest.raises(ValueError, match="NUL"):
        handle.write_plan_cache("a\0b")
    with pytest.raises(FileNotFoundError):
        handle.read_plan_cache(tmp_path / "missing.bin")


def test_closed_descriptor_operation_and_plan_never_reach_c() -> None:
    desc = _closed(TensorDescriptor)
    with pytest.raises(ClosedError):
        Contraction(desc, "ik", desc, "kj", desc, "ij")
    op = _closed(Contraction)
    with pytest.raises(ClosedError):
        Plan(op)
    with pytest.raises(ClosedError):
        op.plan()
    with pytest.raises(ClosedError):
        estimate_workspace(op)
    with pytest.raises(ClosedError):
        _ = op.tag
    plan = _closed(Plan)
    # regression: execute inspected arrays (and could allocate a workspace) before noticing
    with pytest.raises(ClosedError):
        plan.execute(np.ones(3, np.float32))


_NOT: Any = "not the object"  # an argument of the wrong type, typed Any for mypy


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: TensorDescriptor(_NOT, (2, 3)), "handle must be a pycutensor.Handle"),
        (lambda: TensorDescriptor(7, (2, 3)), "handle must be a pycutensor.Handle"),
        (lambda: Contraction(_NOT, "ik", _NOT, "kj", _NOT, "ij"), "A must be a pycutensor.TensorDescriptor"),
        (lambda: Plan(_NOT), "operation must be a pycutensor Operation"),
        (lambda: estimate_workspace(_NOT), "operation must be a pycutensor Operation"),
        # a str preference would reach cutensorEstimateWorkspaceSize as a wchar_t*
        (lambda: estimate_workspace(_closed(Contraction), _NOT), "preference must be a PlanPreference"),
        (lambda: estimate_workspace(_closed(Contraction), 0x1234), "preference must be a PlanPreference"),  # type: ignore[arg-type]
        (lambda: Plan(_closed(Contraction), _NOT), "preference must be a PlanPreference"),
        (lambda: PlanPreference().create(_NOT), "handle must be a pycutensor.Handle"),
        (lambda: PlanPreferenceObject(_closed(Handle), _NOT), "preference must be a PlanPreference"),
    ],
)  # fmt: skip
def test_wrong_object_types_are_refused(call: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        call()


@pytest.mark.parametrize(
    ("workspace", "error", "match"),
    [("huge", ValueError, "workspace must be one of 'min', 'default', 'max'"),
     (-1, ValueError, "between 0 and"), (2**64, ValueError, "between 0 and"),
     (True, TypeError, "must be an int"), (1.5, TypeError, "must be an int"),
     (None, TypeError, "must be an int")],
)  # fmt: skip
def test_workspace_preferences_are_checked_before_c(
    workspace: Any, error: type, match: str
) -> None:
    op = _closed(Contraction)
    with pytest.raises(error, match=match):
        Plan(op, workspace=workspace)
    if isinstance(workspace, str):
        with pytest.raises(error, match=match):
            estimate_workspace(op, None, workspace)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: autotune(object()), TypeError,  # type: ignore[arg-type]
         "operation must be a pycutensor Operation"),
        (lambda: autotune(_closed(Contraction), preference=PlanPreference()), ValueError,
         "autotune='incremental'"),
        (lambda: autotune(_closed(Contraction), preference="incremental"),  # type: ignore[arg-type]
         TypeError,
         "preference must be a PlanPreference"),
        (lambda: autotune(_closed(Contraction)), ClosedError, "closed"),
    ],
)  # fmt: skip
def test_autotune_checks_its_arguments_before_the_gpu(call: Any, error: Any, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def _launchable() -> Plan:
    # The state a plan's launch() inspects before any call: the operation's operand names.
    plan = Plan.__new__(Plan)
    CResource.__init__(plan, 1, None, owned=False)
    plan.operation = _closed(Contraction)
    return plan


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([256, 512, 768], [1.0, 0.0]), "launch takes 4 pointers"),
        ((["0x100", 256, 512, 512], [1.0, 0.0]), "pointers must hold"),  # would go as a wchar_t*
        (([256.0, 256, 512, 512], [1.0, 0.0]), "pointers must hold"),
        (([-256, 256, 512, 512], [1.0, 0.0]), "pointers must hold"),
        (([2**64, 256, 512, 512], [1.0, 0.0]), "pointers must hold"),
        (([True, 256, 512, 512], [1.0, 0.0]), "pointers must hold"),
        (([256, 256, 512, 512], [1.0, 0.0], "stream"), "stream_ptr must hold"),
        (([256, 256, 512, 512], [1.0, 0.0], 0, -1), "workspace_ptr must hold"),
        (([256, 256, 512, 512], [1.0, 0.0], 0, 0, 1.5), "workspace_size must hold"),
    ],
)
def test_launch_checks_the_types_of_raw_pointers(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(TypeError, match=match):
        _launchable().launch(*args)


@pytest.mark.parametrize(
    ("scalars", "error", "match"),
    [
        ([np.complex64(2 + 5j), 0.0], ValueError, "alpha=.* is complex"),  # would run as 2.0
        (["3.5", 0.0], TypeError, "alpha must be a number"),  # NumPy would parse it
        ([1.0, True], TypeError, "beta must be a number"),
        ([1.0, 0.0, 2.0], TypeError, "launch takes the scalars alpha, beta"),
        # every scalar: the plan's scalar buffer keeps the last call's values, so a beta left
        # out would run as the previous execute's (D = alpha A B + C instead of alpha A B)
        ([2.0], TypeError, "launch takes the scalars alpha, beta, got 1"),
    ],
)
def test_launch_checks_its_scalars_as_execute_does(scalars: Any, error: Any, match: str) -> None:
    plan = _launchable()
    plan.scalar_dtype = np.dtype(np.float32)
    with pytest.raises(error, match=match):
        plan.launch([256, 256, 512, 512], scalars)


def test_a_plan_refuses_pointers_less_aligned_than_it_was_made_for() -> None:
    # cutensorCreateTensorDescriptor's alignmentRequirement is a promise about every pointer used
    # with the plan: a 256-byte plan must not run on a pointer that is only 4-byte aligned.
    plan = _launchable()
    handle = Handle.__new__(Handle)
    CResource.__init__(handle, 1, None, owned=False)  # open, but never passed to C below
    plan.handle = handle
    plan._alignments = (256, 256, 256, 256)
    with pytest.raises(ValueError, match="is 4-byte aligned, but the plan was made for 256-byte"):
        plan.launch_unchecked([0x1000, 0x2000, 0x3000, 0x3004], [1.0, 0.0], 0, 0, 0)
    plan._alignments = (256, 256, 4, 4)
    with pytest.raises(ValueError, match="is 2-byte aligned, but the plan was made for 4-byte"):
        plan.launch_unchecked([0x1000, 0x2000, 0x3002, 0x3002], [1.0, 0.0], 0, 0, 0)
    CResource.close(plan)
    with pytest.raises(ClosedError):
        plan.launch_unchecked([0x1000, 0x2000, 0x3000, 0x3000], [1.0, 0.0], 0, 0, 0)


def test_launch_unchecked_refuses_a_missing_scalar() -> None:
    # As launch: a scalar left out would run with the value the previous call left in the plan's
    # buffer. One comparison, so the unchecked path makes it too.
    plan = _launchable()
    handle = Handle.__new__(Handle)
    CResource.__init__(handle, 1, None, owned=False)  # open, but never passed to C below
    plan.handle = handle
    plan._alignments = (1, 1, 1, 1)
    plan._scalar_ptrs = (0x100, 0x104)  # alpha and beta's places in the plan's scalar buffer
    with pytest.raises(TypeError, match="takes the scalars alpha, beta, got 1"):
        plan.launch_unchecked([0x1000, 0x2000, 0x3000, 0x3000], [2.0], 0, 0, 0)


# -- the functions on arrays: every check before the device (NumPy arrays here) ---------------
A = np.ones((4, 5), np.float32)
B = np.ones((5, 6), np.float32)
C = np.zeros((4, 6), np.float32)


def _readonly(shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
    x = np.zeros(shape, dtype)
    x.flags.writeable = False
    return x


def _self_overlapping(shape: tuple[int, int], dtype: Any = np.float32) -> np.ndarray:
    base = np.zeros(shape[0] + shape[1], dtype)
    return as_strided(base, shape, (base.itemsize, base.itemsize))  # (i, j) -> i + j


_HOST = "host memory"


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        # host arrays, once everything else is right: one clear message per function
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij"), ValueError, _HOST),
        (lambda: operations.contract_trinary(A, "ik", B, "kl", np.ones((6, 3), np.float32), "lj",
                                             np.zeros((4, 3), np.float32), "ij"), ValueError, _HOST),
        (lambda: operations.reduce(A, "ij", np.zeros(4, np.float32), "i"), ValueError, _HOST),
        (lambda: operations.elementwise_binary(A, "ij", C[:, :5].copy(), "ij"), ValueError, _HOST),
        (lambda: operations.elementwise_trinary(A, "ij", A, "ij", A.copy(), "ij"), ValueError, _HOST),
        (lambda: operations.permute(A, "ij", np.zeros((5, 4), np.float32), "ji"), ValueError, _HOST),
        # read-only outputs (regression: only refused after a plan had been built)
        (lambda: operations.contract(A, "ik", B, "kj", _readonly((4, 6)), "ij"), ValueError,
         "output c is read-only"),
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij", out=_readonly((4, 6))), ValueError,
         "output out is read-only"),
        (lambda: operations.permute(A, "ij", _readonly((5, 4)), "ji"), ValueError,
         "output b is read-only"),
        (lambda: operations.reduce(A, "ij", _readonly((4,)), "i"), ValueError, "read-only"),
        # outputs whose elements overlap
        (lambda: operations.contract(A, "ik", B, "kj", _self_overlapping((4, 6)), "ij"), ValueError,
         "overlapping strides"),
        (lambda: operations.permute(A, "ij", _self_overlapping((5, 4)), "ji"), ValueError,
         "overlapping strides"),
        (lambda: operations.elementwise_binary(A, "ij", _self_overlapping((4, 5)), "ij"),
         ValueError, "overlapping strides"),
        (lambda: operations.reduce(A, "ij", np.broadcast_to(np.zeros(1, np.float32), (4,)), "i"),
         ValueError, "output elements would overlap"),
        # scalars: real data take real scalars; numbers only
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij", alpha=1j), ValueError,
         "real data take real scalars"),
        (lambda: operations.reduce(A, "ij", np.zeros(4, np.float32), "i", beta=2 + 1j), ValueError,
         "real scalars"),
        (lambda: operations.permute(A, "ij", np.zeros((5, 4), np.float32), "ji", alpha=True),
         TypeError, "alpha must be a number, not bool"),
        (lambda: operations.elementwise_binary(A, "ij", A.copy(), "ij", gamma="2"), TypeError,
         "gamma must be a number"),
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij", beta=np.ones(2)), TypeError,
         "beta must be a number"),
        # modes
        (lambda: operations.contract(A, {"i", "k"}, B, "kj", C, "ij"), TypeError, "not set"),
        (lambda: operations.contract(A, [["i"], "k"], B, "kj", C, "ij"), TypeError, "not hashable"),
        (lambda: operations.contract(A, [1, True], B, [True, "j"], C, [1, "j"]), ValueError,
         "appears twice"),
        # layouts and types
        (lambda: operations.contract(A[::-1], "ik", B, "kj", C, "ij"), ValueError, "negative"),
        (lambda: operations.contract(A, "ik", B, "kj", C.astype(np.float64), "ij"), TypeError,
         "does not support"),
        (lambda: operations.contract(A.astype(np.float16), "ik", B.astype(np.float16), "kj",
                                     C.astype(np.float16), "ij", compute_type="TF32"), ValueError,
         "supports the compute types 32F"),
        (lambda: operations.reduce(A, "ij", np.zeros(4, np.float32), "i", op_reduce="sqrt"),
         ValueError, "not a binary cuTENSOR operator"),
        (lambda: operations.permute(A.astype(np.complex64), "ij", np.zeros((5, 4), np.complex64),
                                    "ji", op_a="exp"), ValueError, "table lists CONJ, IDENTITY"),
        (lambda: operations.permute(A, "ij", np.zeros((5, 4), np.float32), "ji", op_a=["exp"]),
         ValueError, "not a unary cuTENSOR operator"),
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij", stream="default"), TypeError,
         "stream must be"),
        (lambda: operations.contract(A, "ik", [[1.0]], "kj", C, "ij"), TypeError, "must be an array"),
    ],
)  # fmt: skip
def test_array_functions_refuse_before_the_device(call: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), -0.0, np.float32(2), 3, 10**30])
def test_any_real_number_is_a_scalar_for_real_data(alpha: Any) -> None:
    # NaN and inf are numbers: the guide defines how they propagate, so they are not refused.
    with pytest.raises(ValueError, match=_HOST):
        operations.permute(A, "ij", np.zeros((5, 4), np.float32), "ji", alpha=alpha)


def test_complex_scalars_for_complex_data() -> None:
    z = A.astype(np.complex64)
    with pytest.raises(ValueError, match=_HOST):
        operations.permute(z, "ij", np.zeros((5, 4), np.complex64), "ji", alpha=1 - 2j)


# -- einsum: every check before the device ----------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, beta=np.zeros(2), out=C), TypeError,
         "beta must be a number, not ndarray"),  # regression: NumPy's "truth value" error
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, beta="0"), TypeError, "beta must be a number"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, beta=False), TypeError, "not bool"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, alpha=1j), ValueError, "real scalars"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, alpha="2"), TypeError, "alpha must be a number"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, alpha=None), TypeError, "alpha must be a number"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, out=_readonly((4, 6))), ValueError,
         "out is read-only"),  # regression: only refused after planning
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, out=_self_overlapping((4, 6))), ValueError,
         "overlapping strides"),
        (lambda: pycutensor.einsum("ij->ij", A, out=_self_overlapping((4, 5))), ValueError,
         "overlapping strides"),
        (lambda: pycutensor.einsum("i\tj->ji", A), ValueError, "invalid subscript"),
        (lambda: pycutensor.einsum("ij->\u00e9", A), ValueError, "invalid subscript"),
        (lambda: pycutensor.einsum("ij,jk->ik", A.astype(np.float16), B.astype(np.float16),
                                   compute_type="TF32"), ValueError, "supports the compute types 32F"),
        (lambda: pycutensor.einsum("ij->i", A, compute_type="16F"), ValueError,
         "reduction with A=R_32F, C=R_32F supports the compute types 32F"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, stream=-1), ValueError, "stream handle must be"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, out=[[0.0]]), TypeError, "must be an array"),
        (lambda: pycutensor.einsum("ij->ji", A.astype(bool)), TypeError, "not a cuTENSOR data type"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, out=C.astype(np.float16)), TypeError,
         "out has dtype"),
    ],
)  # fmt: skip
def test_einsum_refuses_before_the_device(call: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("subscripts", "operands", "kwargs"),
    [
        ("->", [np.array(2.0, np.float32)], {}),  # 0-d operands
        (",->", [np.array(2.0, np.float32), np.array(3.0, np.float32)], {}),
        ("ij,ij->ij", [A, A], {"compute_type": "TF32"}),  # valid: runs as a contraction
        ("ij,jk->ik", [A.astype(np.float64), B.astype(np.float64)], {"compute_type": "32F"}),
        ("ij,jk->ik", [A, B], {"alpha": float("nan"), "beta": np.float32(0)}),
        ("ij,jk->ik", [A.astype(np.complex64), B.astype(np.complex64)], {"alpha": 2j}),
        ("ij,jk->ik", [A, B], {"out": C, "beta": np.float64(0.5)}),
    ],
)
def test_einsum_valid_requests_only_lack_a_device(
    subscripts: str, operands: list[np.ndarray], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=_HOST):
        pycutensor.einsum(subscripts, *operands, **kwargs)


def test_einsum_takes_the_elementwise_route_only_where_its_table_allows() -> None:
    # Regression: "ij,ij->ij" with float32 data and TF32 compute (valid for a contraction) was
    # planned as an elementwise product, whose table lists only 32F for float32 data, and failed.
    from pycutensor._einsum import _table_allows
    from pycutensor.operations import CONTRACTION_TYPES, ELEMENTWISE_BINARY_TYPES

    for dtype, name in [(np.float16, "R_16F"), (np.float32, "R_32F"), (np.float64, "R_64F"),
                        (np.complex64, "C_32F"), (np.complex128, "C_64F")]:  # fmt: skip
        for compute in ("16F", "16BF", "TF32", "3XTF32", "32F", "64F"):
            listed = (name, name, compute) in ELEMENTWISE_BINARY_TYPES
            assert _table_allows("elementwise_binary", np.dtype(dtype), compute) == listed
            listed = (name, name, name, compute) in CONTRACTION_TYPES
            assert _table_allows("contraction", np.dtype(dtype), compute) == listed


# -- import stays light ---------------------------------------------------------------------------
def test_import_and_pure_python_work_load_nothing_heavy() -> None:
    code = """
import sys
import pycutensor
from pycutensor import operations, plan, tensor, handle, smoke, _einsum
pycutensor.parse_einsum("mhkn,ukvh->munv", (2, 3, 4, 5), (6, 4, 7, 3))
s = tensor.TensorSpec.create((4, 4))
operations.check_operation("contraction", [s, s, s], ["ik", "kj", "ij"])
plan.PlanPreference(autotune="incremental", incremental_count=3)
maps = open("/proc/self/maps").read() if sys.platform == "linux" else ""
loaded = [m for m in ("libcutensor", "libcudnn", "libcublas", "libcuda.so") if m in maps]
heavy = [m for m in ("cuda.core", "torch", "cupy", "jax", "opt_einsum") if m in sys.modules]
print(loaded, heavy)
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] []"


# -- GPU tier: the same rules with real device arrays ---------------------------------------------
def _device(host: np.ndarray) -> Any:
    from _nvbind.device_array import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(host))


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dtype", "compute", "tol"),
    [(np.float32, "TF32", 4e-3), (np.float32, "3XTF32", 1e-5), (np.float64, "32F", 1e-5)],
)
def test_gpu_elementwise_pattern_with_a_contraction_only_compute_type(
    gpu_device: int, dtype: Any, compute: str, tol: float
) -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (33, 17)).astype(dtype)
    y = rng.uniform(-1, 1, (33, 17)).astype(dtype)
    got = pycutensor.einsum("ij,ij->ij", _device(x), _device(y), compute_type=compute).to_numpy()
    want = x.astype(np.float64) * y.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.gpu
def test_gpu_labels_equal_in_python_are_one_mode(gpu_device: int) -> None:
    rng = np.random.default_rng(8)
    a = rng.uniform(-1, 1, (6, 5)).astype(np.float64)
    b = rng.uniform(-1, 1, (5, 4)).astype(np.float64)
    c = _device(np.zeros((6, 4), np.float64))
    operations.contract(_device(a), [1, "k"], _device(b), ["k", 2], c, [True, 2.0])
    np.testing.assert_allclose(c.to_numpy(), a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
def test_gpu_unhashable_labels_and_operators_name_the_argument(gpu_device: int) -> None:
    a, b = _device(np.ones((4, 5), np.float32)), _device(np.ones((5, 6), np.float32))
    c = _device(np.zeros((4, 6), np.float32))
    with pytest.raises(TypeError, match="not hashable"):
        operations.contract(a, [["i"], "k"], b, "kj", c, "ij")
    with pytest.raises(ValueError, match="not a unary cuTENSOR operator"):
        operations.contract(a, "ik", b, "kj", c, "ij", op_a=["identity"])


@pytest.mark.gpu
def test_gpu_numpy_scalar_beta(gpu_device: int) -> None:
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    y = rng.uniform(-1, 1, (3, 5)).astype(np.float32)
    nan = _device(np.full((8, 5), np.nan, np.float32))
    # the guide: a zero beta ignores NaN in C, whatever the scalar's Python type
    pycutensor.einsum("ij,jk->ik", _device(x), _device(y), out=nan, beta=np.float32(0))
    np.testing.assert_allclose(nan.to_numpy(), x @ y, rtol=1e-5, atol=1e-5)
    half = _device(np.ones((8, 5), np.float32))
    pycutensor.einsum("ij,jk->ik", _device(x), _device(y), out=half, beta=np.float64(0.5))
    np.testing.assert_allclose(half.to_numpy(), x @ y + 0.5, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="beta must be a number"):
        pycutensor.einsum("ij,jk->ik", _device(x), _device(y), out=half, beta=np.zeros(1))


@pytest.mark.gpu
def test_gpu_plan_refuses_foreign_preferences_and_raw_pointer_types(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    a = _device(np.ones((4, 4), np.float32))
    desc = TensorDescriptor.from_array(handle, a)
    op = Contraction(desc, "ik", desc, "kj", desc, "ij")
    with pytest.raises(TypeError, match="preference must be a PlanPreference"):
        estimate_workspace(op, "max")  # type: ignore[arg-type]
    plan = op.plan()
    ptr = a.ptr
    with pytest.raises(TypeError, match="pointers must hold"):
        plan.launch([_NOT, ptr, ptr, ptr], [1.0, 0.0])
    with pytest.raises(TypeError, match="stream_ptr must hold"):
        plan.launch([ptr] * 4, [1.0, 0.0], stream_ptr="0")  # type: ignore[arg-type]
    assert math.isfinite(float(op.flops))


def test_a_raw_pointer_past_64_bits_is_refused_not_wrapped() -> None:
    """Plan.execute takes raw ints as device pointers; ctypes passes 2**64 + p on as p, another
    (valid) address, so such a pointer is refused as launch() refuses it."""
    from types import SimpleNamespace

    op = Operation.__new__(Operation)
    op.handle = SimpleNamespace(device_id=0)  # type: ignore[assignment]
    op.operands = (SimpleNamespace(name="A"), SimpleNamespace(name="B"))  # type: ignore[assignment]
    assert op.check_arrays([0x7F00_0000_1000, 0x7F00_0000_2000], 0) == [
        0x7F00_0000_1000,
        0x7F00_0000_2000,
    ]
    for bad in (2**64 + 0x7F00_0000_2000, 0, -256):
        with pytest.raises(ValueError, match="B: a device pointer must be a positive 64-bit int"):
            op.check_arrays([0x7F00_0000_1000, bad], 0)
