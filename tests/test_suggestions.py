"""A misspelt attribute, enum, format or dtype name gets the nearest valid names in its error."""

from __future__ import annotations

import importlib

import pytest

import pycudnn
from _nvbind.dtypes import as_numpy_dtype
from _nvbind.suggest import did_you_mean
from pycudnn import layout
from pycudnn.backend import BackendDescriptor
from pycudnn.graph import GraphError
from pycutensor.checks import check_operation
from pycutensor.preference import PlanPreference
from pycutensor.tables import binary_operator, compute_type_name, unary_operator


def test_did_you_mean_lists_the_closest_names_in_the_callers_spelling() -> None:
    assert did_you_mean("nchq", ["NCHW", "NHWC", "BMN"]).startswith("; did you mean 'NCHW'")
    assert did_you_mean("relu_fw", ["relu_fwd", "tanh_fwd"]) == "; did you mean 'relu_fwd'?"
    assert did_you_mean("xyzzy", ["NCHW", "NHWC"]) == ""


@pytest.mark.parametrize(
    ("call", "error", "suggested"),
    [
        (lambda: layout.packed_strides((1, 2, 3, 4), "NCHQ"), ValueError, "'NCHW'"),
        (lambda: as_numpy_dtype("flaot16"), TypeError, "'float16'"),
        (lambda: as_numpy_dtype("bfloat61"), TypeError, "'bfloat16'"),
        (
            lambda: BackendDescriptor("TENSOR").set("TENSOR_DIMENSOINS", [1]),
            ValueError,
            "'TENSOR_DIMENSIONS'",
        ),
        (lambda: BackendDescriptor("TENSR"), ValueError, "'TENSOR'"),
        (
            lambda: BackendDescriptor("POINTWISE").set("POINTWISE_MODE", "RELU_FWDD"),
            TypeError,
            "'RELU_FWD'",
        ),
        (
            lambda: pycudnn.Graph("g").pointwise(
                "RELU_FW", pycudnn.Graph("g").tensor([1, 2, 3, 4])
            ),
            GraphError,
            "'relu_fwd'",
        ),
    ],
    ids=["format", "dtype", "ml_dtype", "attribute", "descriptor", "enum", "graph enum"],
)
def test_a_misspelt_name_gets_the_nearest_valid_one(
    call: object, error: type[Exception], suggested: str
) -> None:
    with pytest.raises(error, match="did you mean") as info:
        call()  # type: ignore[operator]
    assert suggested in str(info.value)


def test_a_name_far_from_every_valid_one_gets_no_guess() -> None:
    with pytest.raises(ValueError, match="unknown format") as info:
        layout.packed_strides((1, 2, 3, 4), "QXYZ")
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("call", "suggested"),
    [
        (lambda: unary_operator("conjj"), "'conj'"),
        (lambda: binary_operator("ad"), "'add'"),
        (lambda: compute_type_name("3xtf23"), "'3XTF32'"),
        (lambda: compute_type_name("FP32"), "'32F'"),
        (lambda: compute_type_name("bf16"), "'16BF'"),
        (lambda: PlanPreference(jit="defualt"), "'default'"),
        (lambda: PlanPreference(algo="get"), "'gett'"),
        (lambda: PlanPreference(cache_mode="pedantik"), "'pedantic'"),
        (lambda: check_operation("contractoin", [], []), "'contraction'"),
    ],
    ids=[
        "unary op",
        "binary op",
        "compute type",
        "FP32",
        "bf16",
        "jit",
        "algo",
        "cache mode",
        "kind",
    ],
)
def test_pycutensor_names_get_the_nearest_valid_one(call: object, suggested: str) -> None:
    # None of these reaches cuTENSOR: the names are checked in Python (no GPU needed).
    with pytest.raises(ValueError, match="did you mean") as info:
        call()  # type: ignore[operator]
    assert suggested in str(info.value)


@pytest.mark.parametrize(
    ("module", "name", "suggested"),
    [
        ("pycudnn.raw", "cudnnCreat", "'cudnnCreate'"),
        ("pycudnn.raw", "CUDNN_STATUS_SUCES", "'CUDNN_STATUS_SUCCESS'"),
        ("pycutensor.raw", "cutensorCreat", "'cutensorCreate'"),
    ],
)
def test_raw_layers_suggest_the_c_name_meant(module: str, name: str, suggested: str) -> None:
    # pycudnn.raw has more names than Python's own suggestion looks through.
    raw_module = importlib.import_module(module)
    with pytest.raises(AttributeError, match="did you mean") as info:
        getattr(raw_module, name)
    assert suggested in str(info.value)
    assert not hasattr(raw_module, "__wrapped__")  # a tool's probe: still a plain miss
