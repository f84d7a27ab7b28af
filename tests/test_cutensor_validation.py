"""Rules refused in Python before any cuTENSOR call: type tables, operators, modes, layouts.

The tables are compared with the ``cutensor.h`` the wheel ships (parsed here from its documentation
comments) and with the user guide's unary-operator table, written out below.
"""

from __future__ import annotations

import os
import re

import ml_dtypes
import numpy as np
import pytest

import pycutensor
from pycutensor import _bindings, operations
from pycutensor.operations import (
    BINARY_OPERATORS,
    COMPUTE_TYPES,
    CONTRACTION_TRINARY_TYPES,
    CONTRACTION_TYPES,
    ELEMENTWISE_BINARY_TYPES,
    ELEMENTWISE_TRINARY_TYPES,
    PERMUTATION_TYPES,
    REDUCTION_TYPES,
    UNARY_OPERATORS,
    UNARY_OPERATORS_BY_DATA_TYPE,
    binary_operator,
    check_operation,
    compute_type_name,
    expected_scalar_type,
    lower_layouts,
    unary_operator,
)
from pycutensor.plan import PlanPreference
from pycutensor.tables import KINDS
from pycutensor.tensor import TensorSpec


def spec(shape: tuple[int, ...], dtype: object = np.float32) -> TensorSpec:
    return TensorSpec.create(shape, dtype=dtype)


# -- the tables, against the header -----------------------------------------------------------------
def _header_tables() -> dict[str, set[tuple[str, ...]]]:
    try:
        from cuda import pathfinder

        directory = pathfinder.find_nvidia_header_directory("cutensor")
    except Exception as exc:  # pragma: no cover - depends on the installed wheels
        pytest.skip(f"cuTENSOR headers not found: {exc}")
    if directory is None or not os.path.isfile(os.path.join(directory, "cutensor.h")):
        pytest.skip("cuTENSOR headers not found (install the cutensor wheel)")
    with open(os.path.join(directory, "cutensor.h"), encoding="utf-8") as f:
        text = f.read()
    tables: dict[str, set[tuple[str, ...]]] = {}
    pattern = r"/\*\*(.*?)\*/\s*cutensorStatus_t\s+(cutensorCreate\w+)\s*\("
    for doc, function in re.findall(pattern, text, re.S):
        rows = set()
        for line in re.findall(r"^\s*\*\s*\|(.+)\|\s*$", doc, re.M):
            cells = [c.strip().strip("`").strip() for c in line.split("|")]
            if cells[0].startswith("CUDA_"):
                rows.add(tuple(c.removeprefix("CUDA_").removeprefix("CUTENSOR_COMPUTE_DESC_")
                               for c in cells))  # fmt: skip
        if rows:
            tables[function] = rows
    return tables


@pytest.fixture(scope="module")
def header_tables() -> dict[str, set[tuple[str, ...]]]:
    from pycutensor import _bindings

    if pycutensor.version_tuple()[:2] != _bindings.HEADER_VERSION[:2]:
        # The tables follow the headers the bindings come from; a version-matrix entry installs
        # older ones, whose lists are shorter (that cuTENSOR refuses the newer types itself).
        pytest.skip(
            f"the installed cuTENSOR {pycutensor.version_tuple()} is not the "
            f"{_bindings.HEADER_VERSION} the bindings and these tables come from"
        )
    return _header_tables()


@pytest.mark.parametrize(
    ("function", "ours", "types"),
    [
        ("cutensorCreateContraction", CONTRACTION_TYPES, 3),
        ("cutensorCreateContractionTrinary", CONTRACTION_TRINARY_TYPES, 4),
        ("cutensorCreateElementwiseBinary", ELEMENTWISE_BINARY_TYPES, 2),
        ("cutensorCreateElementwiseTrinary", ELEMENTWISE_TRINARY_TYPES, 3),
        ("cutensorCreatePermutation", PERMUTATION_TYPES, 2),
    ],
)
def test_type_tables_equal_the_header(
    header_tables: dict[str, set[tuple[str, ...]]],
    function: str,
    ours: tuple[tuple[str, ...], ...],
    types: int,
) -> None:
    header = {row[: types + 1] for row in header_tables[function]}
    assert set(ours) == header
    assert len(ours) == len(set(ours))


def test_reduction_table_equals_the_header(header_tables: dict[str, set[tuple[str, ...]]]) -> None:
    # The header lists typeA, typeB, typeC, typeCompute; B and C are the same tensor (C == D).
    header = {(a, c, compute) for a, b, c, compute in header_tables["cutensorCreateReduction"]}
    assert set(REDUCTION_TYPES) == header


def test_scalar_types_equal_the_contraction_tables(
    header_tables: dict[str, set[tuple[str, ...]]],
) -> None:
    for row in header_tables["cutensorCreateContraction"]:
        _, _, c, compute, scalar = row[:5]
        assert expected_scalar_type(c, compute) == scalar, row
    for row in header_tables["cutensorCreateContractionTrinary"]:
        _, _, _, d, compute, scalar = row[:6]
        assert expected_scalar_type(d, compute) == scalar, row


def test_scalar_types_follow_the_guide_table() -> None:
    # The user guide's "scalar types" table: output type x compute -> scalar type.
    for out in ("R_16F", "R_16BF", "R_32F"):
        for compute in ("16F", "16BF", "TF32", "3XTF32", "32F"):
            assert expected_scalar_type(out, compute) == "R_32F"
    for compute in ("32F", "64F"):
        assert expected_scalar_type("R_64F", compute) == "R_64F"
        assert expected_scalar_type("C_64F", compute) == "C_64F"
    for out in ("C_16F", "C_16BF", "C_32F"):
        assert expected_scalar_type(out, "32F") == "C_32F"


def test_compute_types_are_the_exported_descriptors() -> None:
    assert COMPUTE_TYPES == (
        "16F",
        "16BF",
        "TF32",
        "3XTF32",
        "32F",
        "64F",
        "9X16BF",
        "8XINT8",
        "4X16F",
    )


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("32f", "32F"), ("TF32", "TF32"), ("3xtf32", "3XTF32"), ("CUTENSOR_COMPUTE_DESC_64F", "64F"),
        ("COMPUTE_DESC_16BF", "16BF"), (np.float16, "16F"), (ml_dtypes.bfloat16, "16BF"),
        (np.float32, "32F"), (np.dtype("float64"), "64F"), (None, None),
    ],
)  # fmt: skip
def test_compute_type_names(value: object, name: str | None) -> None:
    assert compute_type_name(value) == name


@pytest.mark.parametrize("value", ["32", "FP32", np.int32, 3])
def test_unknown_compute_types(value: object) -> None:
    with pytest.raises(ValueError, match=r"not a cuTENSOR compute descriptor.*; use one of: 16F"):
        compute_type_name(value)


# -- operators ------------------------------------------------------------------------------------
# The user guide's table of supported unary operators, per data type.
GUIDE_REAL = {
    "IDENTITY", "SQRT", "RCP", "RELU", "SIGMOID", "TANH", "EXP", "LOG", "ABS", "NEG", "SIN", "COS",
    "TAN", "SINH", "COSH", "ASIN", "ACOS", "ATAN", "ASINH", "ACOSH", "ATANH", "CEIL", "FLOOR",
}  # fmt: skip
# Documented in cutensor/types.h after the guide's table was written; allowed for real types.
HEADER_ACTIVATIONS = {"MISH", "SWISH", "SOFT_PLUS", "SOFT_SIGN"}


def test_unary_table_follows_the_guide() -> None:
    upper = {k: {o.upper() for o in v} for k, v in UNARY_OPERATORS_BY_DATA_TYPE.items()}
    for t in ("R_32F", "R_64F", "R_16F", "R_16BF"):
        assert upper[t] == GUIDE_REAL | HEADER_ACTIVATIONS
    for t in ("C_32F", "C_64F"):
        assert upper[t] == {"IDENTITY", "CONJ"}
    # The guide's C_16F and integer rows are left out: no operation accepts those types.
    assert set(upper) == {"R_32F", "R_64F", "R_16F", "R_16BF", "C_32F", "C_64F"}


def test_every_unary_table_row_is_a_type_some_operation_accepts() -> None:
    # A row for a type that no create call's table lists is dead: check_types refuses the
    # request before the unary table is consulted.
    accepted = {t for kind in KINDS.values() for row in kind.table for t in row[:-1]}
    assert set(UNARY_OPERATORS_BY_DATA_TYPE) <= accepted
    # and conversely every type an operation accepts has its operators listed
    assert accepted <= set(UNARY_OPERATORS_BY_DATA_TYPE)


def test_integer_operands_are_refused_by_the_type_table_not_the_operator() -> None:
    a = spec((4, 4), np.int8)
    with pytest.raises(TypeError, match="permutation does not support A=R_8I"):
        check_operation("permutation", [a, a], ["ij", "ji"], unary=["relu"])


def test_operator_names_map_to_the_header_values() -> None:
    assert unary_operator("identity") == 1 and unary_operator("conj") == 9
    assert (
        unary_operator("CUTENSOR_OP_SQRT") == 2 and unary_operator(_bindings.CUTENSOR_OP_EXP) == 22
    )
    assert binary_operator("add") == 3 and binary_operator("MUL") == 5
    assert binary_operator("max") == 6 and binary_operator(7) == 7
    assert set(BINARY_OPERATORS) == {"add", "mul", "max", "min"}
    assert "add" not in UNARY_OPERATORS and "unknown" not in UNARY_OPERATORS
    with pytest.raises(ValueError, match="not a binary cuTENSOR operator; use one of: add"):
        binary_operator("identity")
    with pytest.raises(ValueError, match="not a unary cuTENSOR operator"):
        unary_operator("add")
    with pytest.raises(ValueError, match="not a unary"):
        unary_operator(True)


# -- check_operation ----------------------------------------------------------------------------------
def test_valid_contraction_defaults_to_the_first_table_row() -> None:
    a, b, c = spec((4, 5)), spec((5, 6)), spec((4, 6))
    labels, unary, binary, compute = check_operation("contraction", [a, b, c], ["ik", "kj", "ij"])
    assert labels == (("i", "k"), ("k", "j"), ("i", "j"))
    assert unary == (1, 1, 1) and binary == () and compute == "32F"
    for dtype, expected in [(np.float16, "32F"), (ml_dtypes.bfloat16, "32F"), (np.float64, "64F"),
                            (np.complex64, "32F"), (np.complex128, "64F")]:  # fmt: skip
        s = [spec((4, 5), dtype), spec((5, 6), dtype), spec((4, 6), dtype)]
        assert check_operation("contraction", s, ["ik", "kj", "ij"])[3] == expected


def test_mixed_real_complex_double_contraction_is_in_the_table() -> None:
    a, b, c = spec((4, 5), np.float64), spec((5, 6), np.complex128), spec((4, 6), np.complex128)
    assert check_operation("contraction", [a, b, c], ["ik", "kj", "ij"])[3] == "64F"
    with pytest.raises(ValueError, match="supports the compute types 64F"):
        check_operation("contraction", [a, b, c], ["ik", "kj", "ij"], compute_type="32F")


@pytest.mark.parametrize(
    ("dtypes", "compute", "error", "match"),
    [
        ((np.float16,) * 3, "16F", ValueError, "R_16F.*supports the compute types 32F .*not 16F"),
        ((np.float32,) * 3, "64F", ValueError, "not 64F"),
        ((np.int32,) * 3, None, TypeError, "does not support A=R_32I, B=R_32I, C=R_32I; its table"),
        (
            (np.float32, np.float64, np.float64),
            None,
            TypeError,
            "does not support A=R_32F, B=R_64F",
        ),
        ((np.complex64,) * 3, "16BF", ValueError, "not 16BF"),
    ],
)
def test_contraction_table_refusals_quote_the_rule(
    dtypes: tuple[object, ...], compute: str | None, error: type, match: str
) -> None:
    specs = [spec((4, 5), dtypes[0]), spec((5, 6), dtypes[1]), spec((4, 6), dtypes[2])]
    with pytest.raises(error, match=match):
        check_operation("contraction", specs, ["ik", "kj", "ij"], compute_type=compute)


def test_elementwise_permutation_reduction_tables() -> None:
    h, f, d = spec((4, 5), np.float16), spec((5, 4), np.float32), spec((5, 4), np.float64)
    # permutation converts 16F -> 32F with 32F compute, and 32F -> 64F with 64F
    assert check_operation("permutation", [h, f], ["ij", "ji"])[3] == "32F"
    assert check_operation("permutation", [spec((4, 5)), d], ["ij", "ji"])[3] == "64F"
    with pytest.raises(TypeError, match="permutation does not support A=R_16F, B=R_64F"):
        check_operation("permutation", [h, d], ["ij", "ji"])
    # elementwise 16F may compute in 16F; a reduction of 16BF too
    hh = spec((5, 4), np.float16)
    assert check_operation("elementwise_binary", [hh, hh], ["ij", "ij"], binary=["add"],
                           compute_type="16F")[3] == "16F"  # fmt: skip
    bf = spec((4, 5), ml_dtypes.bfloat16)
    bf1 = spec((4,), ml_dtypes.bfloat16)
    assert check_operation("reduction", [bf, bf1], ["ij", "i"], binary=["max"],
                           compute_type="16BF")[3] == "16BF"  # fmt: skip
    with pytest.raises(TypeError, match="reduction does not support A=R_32F, C=R_16F"):
        check_operation("reduction", [spec((4, 5)), spec((4,), np.float16)], ["ij", "i"],
                        binary=["add"])  # fmt: skip


@pytest.mark.parametrize(
    ("dtype", "op", "allowed"),
    [
        (np.float32, "conj", "ABS, ACOS"),
        (np.complex64, "exp", "CONJ, IDENTITY"),
        (np.complex128, "relu", "CONJ, IDENTITY"),
    ],
)
def test_unary_operator_refused_per_data_type(dtype: object, op: str, allowed: str) -> None:
    a, c = spec((4, 5), dtype), spec((5, 4), dtype)
    with pytest.raises(ValueError, match=f"op_a={op.upper()} is not supported .*lists {allowed}"):
        check_operation("permutation", [a, c], ["ij", "ji"], unary=[op])


def test_unary_operators_accepted_per_data_type() -> None:
    f = spec((4, 5))
    for op in ("sqrt", "relu", "tanh", "floor", "atanh"):
        check_operation("permutation", [f, spec((5, 4))], ["ij", "ji"], unary=[op])
    z = spec((4, 5), np.complex64)
    check_operation("permutation", [z, spec((5, 4), np.complex64)], ["ij", "ji"], unary=["conj"])
    check_operation("contraction", [z, z, spec((4, 4), np.complex64)], ["ij", "kj", "ik"],
                    unary=["conj", "identity"])  # fmt: skip


def test_contraction_c_must_be_identity() -> None:
    a, b, c = spec((4, 5)), spec((5, 6)), spec((4, 6))
    with pytest.raises(ValueError, match="op_c of a contraction must be IDENTITY"):
        check_operation(
            "contraction", [a, b, c], ["ik", "kj", "ij"], unary=["identity", "identity", "relu"]
        )


def test_binary_operator_count_and_names() -> None:
    a, c = spec((4, 5)), spec((4,))
    with pytest.raises(TypeError, match="takes 1 binary operators"):
        check_operation("reduction", [a, c], ["ij", "i"])
    with pytest.raises(ValueError, match="op_reduce='sqrt' is not a binary"):
        check_operation("reduction", [a, c], ["ij", "i"], binary=["sqrt"])


@pytest.mark.parametrize(
    ("kind", "shapes", "modes", "binary", "match"),
    [
        ("contraction", [(4, 5), (5, 6), (4, 7)], ["ik", "kj", "ix"], (),
         "mode 'x' of the output C appears in no input"),
        ("reduction", [(4, 5), (4, 3)], ["ij", "ix"], ("add",), "mode 'x' of the output C"),
        ("permutation", [(4, 5), (5,)], ["ij", "j"], (), "mode 'i' of A does not appear in the output B"),
        ("elementwise_binary", [(4, 5), (4,)], ["ij", "i"], ("add",), "every mode of an input must appear"),
        ("elementwise_trinary", [(4,), (5,), (4,)], ["i", "j", "i"], ("add", "mul"), "mode 'j' of B"),
        ("contraction", [(4, 5), (6, 6), (4, 6)], ["ik", "kj", "ij"], (),
         "mode 'k' has extent 5 in A but 6 in B: a mode must have the same extent"),
        ("contraction", [(4, 5), (5, 6), (4, 6)], ["ii", "kj", "ij"], (), "appears twice"),
        ("contraction", [(4, 5), (5, 6), (4, 6)], ["ikx", "kj", "ij"], (), "has 3 labels"),
    ],
)  # fmt: skip
def test_structural_rules(
    kind: str, shapes: list[tuple[int, ...]], modes: list[str], binary: tuple[str, ...], match: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        check_operation(kind, [spec(s) for s in shapes], modes, binary=binary)


def test_overlapping_output_is_refused() -> None:
    a, b = spec((4, 5)), spec((5, 6))
    c = TensorSpec.create((4, 6), (1, 2))  # element (2, 0) and (0, 1) share an address
    with pytest.raises(ValueError, match="overlapping strides"):
        check_operation("contraction", [a, b, c], ["ik", "kj", "ij"])


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        check_operation("convolution", [], [])


# -- lowering array layouts -------------------------------------------------------------------------
def test_lowering_drops_extent_one_modes_everywhere() -> None:
    low, extent = lower_layouts(["ikx", "kj", "ijx"], [(4, 5, 1), (5, 6), (4, 6, 1)],
                                [(5, 1, 7), (6, 1), (6, 1, 0)], 2, names="abc")  # fmt: skip
    assert [t.labels for t in low] == [("i", "k"), ("k", "j"), ("i", "j")]
    assert low[0].strides == (5, 1) and low[2].extents == (4, 6)
    assert extent == {"i": 4, "k": 5, "x": 1, "j": 6}


def test_lowering_omits_broadcast_input_modes_kept_elsewhere() -> None:
    # A broadcast along k (stride 0), k kept in B: A's k is left out and cuTENSOR contracts it in B.
    low, _ = lower_layouts(["ik", "kj", "ij"], [(4, 5), (5, 6), (4, 6)],
                           [(1, 0), (6, 1), (6, 1)], 2, names="abc")  # fmt: skip
    assert low[0].labels == ("i",)
    # elementwise: a broadcast mode may be one of the output's only
    low, _ = lower_layouts(["ij", "ij"], [(4, 5), (4, 5)], [(0, 1), (5, 1)], 1, names="ac",
                           output_broadcasts=True)  # fmt: skip
    assert low[0].labels == ("j",)


def test_lowering_refusals() -> None:
    with pytest.raises(ValueError, match="summed within that tensor alone"):
        lower_layouts(["ij", "i"], [(4, 5), (4,)], [(1, 0), (1,)], 1, names="ac")
    with pytest.raises(ValueError, match="an output mode that no other input has"):
        lower_layouts(["ik", "kj", "ij"], [(4, 5), (5, 6), (4, 6)], [(0, 1), (6, 1), (6, 1)], 2,
                      names="abc")  # fmt: skip
    with pytest.raises(ValueError, match="the output c has stride 0 along mode 'i'"):
        lower_layouts(["ik", "kj", "ij"], [(4, 5), (5, 6), (4, 6)], [(5, 1), (6, 1), (0, 1)], 2,
                      names="abc")  # fmt: skip
    with pytest.raises(ValueError, match="negative stride"):
        lower_layouts(["i", "i"], [(4,), (4,)], [(-1,), (1,)], 1, names="ab")
    with pytest.raises(ValueError, match="extent 0"):
        lower_layouts(["i", "i"], [(0,), (0,)], [(1,), (1,)], 1, names="ab")
    with pytest.raises(ValueError, match="same extent in every tensor"):
        lower_layouts(["i", "i"], [(4,), (1,)], [(1,), (1,)], 1, names="ab")
    low, extent = lower_layouts(
        ["i", "i"], [(4,), (1,)], [(1,), (1,)], 1, names="ab", broadcast=True
    )
    assert extent["i"] == 4 and low[1].labels == ()
    with pytest.raises(ValueError, match="must match or be 1"):
        lower_layouts(["i", "i"], [(4,), (3,)], [(1,), (1,)], 1, names="ab", broadcast=True)


# -- plan preferences -------------------------------------------------------------------------------
def test_plan_preference_normalises_and_maps_to_header_values() -> None:
    pref = PlanPreference(algo="GETT", jit=True, autotune="incremental", incremental_count=4,
                          cache_mode="pedantic", kernel_rank=1, gpu_arch=90, tag=7)  # fmt: skip
    assert pref.algo == "gett" and pref.jit == "default" and pref.algo_value == -4
    attrs = dict(pref.attributes())
    assert attrs == {
        int(_bindings.CUTENSOR_PLAN_PREFERENCE_AUTOTUNE_MODE): 1,
        int(_bindings.CUTENSOR_PLAN_PREFERENCE_CACHE_MODE): 1,
        int(_bindings.CUTENSOR_PLAN_PREFERENCE_INCREMENTAL_COUNT): 4,
        int(_bindings.CUTENSOR_PLAN_PREFERENCE_KERNEL_RANK): 1,
        int(_bindings.CUTENSOR_PLAN_PREFERENCE_GPU_ARCH): 90,
    }
    assert PlanPreference().attributes() == []
    assert PlanPreference(algo=3).algo_value == 3
    assert hash(PlanPreference(jit=False)) == hash(PlanPreference(jit="none"))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"algo": "fastest"}, ValueError, "algo must be one of"),
        ({"algo": -1}, ValueError, "between 0 and"),
        ({"algo": 1.5}, TypeError, "must be an int"),
        ({"jit": "all"}, ValueError, "jit must be one of 'none', 'default'"),
        ({"autotune": True}, ValueError, "autotune must be one of"),
        ({"cache_mode": "lazy"}, ValueError, "cache_mode must be one of"),
        ({"incremental_count": 0}, ValueError, "between 1"),
        ({"kernel_rank": -1}, ValueError, "between 0"),
        ({"gpu_arch": 75}, ValueError, "Currently only SM versions 80, 90 and 100"),
        ({"tag": 2**31}, ValueError, "between"),
        ({"autotune": "incremental", "cache_mode": "none"}, ValueError, "needs the plan cache"),
    ],
)
def test_plan_preference_refusals(kwargs: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        PlanPreference(**kwargs)  # type: ignore[arg-type]


# -- the functions on arrays: everything is checked before devices (NumPy arrays here) ------------
A = np.ones((4, 5), np.float32)
B = np.ones((5, 6), np.float32)
C = np.zeros((4, 6), np.float32)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij", compute_type="64F"), ValueError, "not 64F"),
        (lambda: operations.contract(A, "ii", B, "kj", C, "ij"), ValueError, "appears twice"),
        (lambda: operations.contract(A, "ik", B, "kj", C, "ix"), ValueError, "appears in no input"),
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij", op_a="conj"), ValueError, "CONJ"),
        (lambda: operations.contract(A, "ikx", B, "kj", C, "ij"), ValueError, "has 3 labels"),
        (lambda: operations.contract(A, 3, B, "kj", C, "ij"), TypeError, "sequence of mode labels"),
        (lambda: operations.contract(A, "ik", B.astype(np.float64), "kj", C, "ij"), TypeError,
         "does not support"),
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij", out=np.zeros((6, 4), np.float32)),
         ValueError, "out must be laid out like c"),
        (lambda: operations.contract(np.broadcast_to(np.ones(5, np.float32), (4, 5)), "ik", B, "kj",
                                     C, "ij"), ValueError, "an output mode that no other input has"),
        (lambda: operations.contract(A, "ik", B, "kj", np.broadcast_to(C[0], (4, 6)), "ij"),
         ValueError, "output elements would overlap"),
        (lambda: operations.reduce(A, "ij", np.zeros(4, np.float16), "i"), TypeError, "reduction"),
        (lambda: operations.reduce(A, "ij", np.zeros(4, np.float32), "i", op_reduce="conj"),
         ValueError, "not a binary"),
        (lambda: operations.permute(A, "ij", np.zeros((5, 4), np.float32), "jk"), ValueError,
         "mode 'i' of A does not appear in the output B"),
        (lambda: operations.elementwise_binary(A, "ij", np.zeros(4, np.float32), "i"), ValueError,
         "every mode of an input"),
        (lambda: operations.elementwise_trinary(A, "ij", A, "ij", A, "ij", op_ab="exp"), ValueError,
         "not a binary"),
        (lambda: operations.contract(np.ones((0, 5), np.float32), "ik", B, "kj", np.ones((0, 6),
                                     np.float32), "ij"), ValueError, "extent 0"),
        (lambda: operations.contract(A[:, ::-1], "ik", B, "kj", C, "ij"), ValueError, "negative"),
        (lambda: operations.contract(A, "ik", B, "kj", C, "ij"), ValueError, "host memory"),
        (lambda: operations.contract("A", "ik", B, "kj", C, "ij"), TypeError, "must be an array"),
    ],
)  # fmt: skip
def test_functions_refuse_before_any_device_work(call: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]


# -- einsum with NumPy operands: the checks that need no GPU ------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: pycutensor.einsum("ij,jk->ik", A, B), ValueError, "operand 0 is in host memory"),
        (lambda: pycutensor.einsum("ii->i", np.ones((3, 3))), ValueError, "host memory"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B.astype(np.float64)), ValueError, "host memory"),
        (lambda: pycutensor.einsum("ij,jk->ik", A.astype(np.int8), B.astype(np.int8)), TypeError,
         "computes in int8"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, compute_type="64F"), ValueError, "not 64F"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, compute_type="fast"), ValueError,
         "not a cuTENSOR compute descriptor"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, beta=1.0), ValueError, "needs out="),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, out=np.zeros((6, 4), np.float32)), ValueError,
         r"out has shape \(6, 4\), the result has \(4, 6\)"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B, out=np.zeros((4, 6), np.float16)), TypeError,
         "out has dtype"),
        (lambda: pycutensor.einsum("ij,jk->ik", A, B[:0]), ValueError, "could not be broadcast"),
        (lambda: pycutensor.einsum("ij,jk->ik", np.ones((4, 0), np.float32), np.ones((0, 6), np.float32)),
         ValueError, "summed over extent 0"),
        (lambda: pycutensor.einsum("ij,jk->ik", np.broadcast_to(np.ones(5, np.float32), (4, 5)), B),
         ValueError, "stride 0 along mode 'i'"),
        (lambda: pycutensor.einsum("ij,jk->ik"), ValueError, "at least one operand"),
        (lambda: pycutensor.einsum(["ij"], A), TypeError, "sublist form"),
        (lambda: pycutensor.einsum("ij->j", np.ones((0, 3), np.float32)), ValueError,
         "summed over extent 0"),
        (lambda: pycutensor.einsum("ij->ij", np.ones((0, 3), np.float32)), ValueError, "host memory"),
        (lambda: pycutensor.einsum("ij,jk,kl->il", A, B, B.T), ValueError, "host memory"),
        (lambda: pycutensor.einsum("ij,jk,kl->il", A, B, B.T.astype(np.complex64)), TypeError,
         "cast operand 0 to complex64"),
    ],
)  # fmt: skip
def test_einsum_refuses_before_any_device_work(call: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]
