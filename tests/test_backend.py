"""Backend descriptors against the real cuDNN (CPU tier: needs libcuda.so.1, no GPU)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from versioned import skip_unless_cudnn, skip_unless_heuristics_run_here

import pycudnn
from _nvbind.cuda import driver_status
from pycudnn import raw
from pycudnn.backend import (
    BackendDescriptor,
    attribute_name,
    attribute_type,
    descriptor_type,
)

pytestmark = pytest.mark.usefixtures("libcuda")


def _tensor(
    uid: int = 1, dims=(1, 32, 16, 16), strides=(8192, 1, 512, 32), dtype="HALF", **extra: object
) -> BackendDescriptor:
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_UNIQUE_ID", uid)
    t.set("TENSOR_DIMENSIONS", list(dims))
    t.set("TENSOR_STRIDES", list(strides))
    t.set("TENSOR_BYTE_ALIGNMENT", 16)
    t.set("TENSOR_DATA_TYPE", dtype)
    for key, value in extra.items():
        t.set(key, value)
    t.finalize()
    return t


# -- names ---------------------------------------------------------------------------------------


def test_names_are_normalised_in_every_spelling() -> None:
    expected = raw.cudnnBackendAttributeName_t.TENSOR_DIMENSIONS
    for spelling in (
        "TENSOR_DIMENSIONS",
        "CUDNN_ATTR_TENSOR_DIMENSIONS",
        "tensor_dimensions",
        int(raw.CUDNN_ATTR_TENSOR_DIMENSIONS),
        expected,
    ):
        assert attribute_name(spelling) is expected
    d = raw.cudnnBackendDescriptorType_t.TENSOR_DESCRIPTOR
    for spelling in ("TENSOR", "tensor_descriptor", "CUDNN_BACKEND_TENSOR_DESCRIPTOR", int(d), d):
        assert descriptor_type(spelling) is d
    assert attribute_type("CUDNN_TYPE_INT64") is raw.cudnnBackendAttributeType_t.INT64


@pytest.mark.parametrize("bad", ["NOT_AN_ATTRIBUTE", 123456])
def test_unknown_attribute_is_a_value_error(bad: object) -> None:
    with pytest.raises(ValueError, match="attribute"):
        attribute_name(bad)


@pytest.mark.parametrize("bad", [None, 2.5, True, b"TENSOR"])
def test_attribute_of_wrong_type_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        attribute_name(bad)


def test_unknown_descriptor_type() -> None:
    with pytest.raises(ValueError, match="unknown backend descriptor type 'NOPE'"):
        BackendDescriptor("NOPE")
    with pytest.raises(ValueError):
        BackendDescriptor(99999)
    with pytest.raises(TypeError):
        BackendDescriptor(1.5)


# -- set / get round trips -----------------------------------------------------------------------


def test_tensor_round_trip_returns_python_values() -> None:
    t = _tensor(7, TENSOR_IS_VIRTUAL=False)
    assert t.is_finalized
    assert t.get("TENSOR_DIMENSIONS") == [1, 32, 16, 16]
    assert t.get("TENSOR_STRIDES") == [8192, 1, 512, 32]
    uid = t.get("TENSOR_UNIQUE_ID")
    assert uid == 7 and isinstance(uid, int)  # documented as one element: a scalar
    dt = t.get("TENSOR_DATA_TYPE")
    assert dt is raw.cudnnDataType_t.HALF
    assert t.get("TENSOR_IS_VIRTUAL") is False
    assert t.element_count("TENSOR_DIMENSIONS") == 4


def test_boolean_is_one_byte_true_reads_back_true() -> None:
    t = _tensor(3, TENSOR_IS_VIRTUAL=True)
    assert t.get("TENSOR_IS_VIRTUAL") is True


def test_enum_values_accept_members_ints_and_names() -> None:
    for value in (
        raw.cudnnDataType_t.FLOAT,
        int(raw.CUDNN_DATA_FLOAT),
        "FLOAT",
        "CUDNN_DATA_FLOAT",
    ):
        t = _tensor(dtype=value)
        assert t.get("TENSOR_DATA_TYPE") is raw.cudnnDataType_t.FLOAT


def test_numpy_integers_and_arrays_are_accepted() -> None:
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_DIMENSIONS", np.array([2, 3, 4], dtype=np.int64))
    t.set("TENSOR_STRIDES", (np.int32(12), np.int32(4), np.int32(1)))
    t.set("TENSOR_UNIQUE_ID", np.int64(5))
    t.set("TENSOR_BYTE_ALIGNMENT", 16)
    t.set("TENSOR_DATA_TYPE", "FLOAT")
    t.finalize()
    assert t.get("TENSOR_DIMENSIONS") == [2, 3, 4]


# -- typing errors before C ------------------------------------------------------------------------


def test_wrong_value_names_attribute_and_type() -> None:
    t = BackendDescriptor("TENSOR")
    with pytest.raises(TypeError) as info:
        t.set("TENSOR_DIMENSIONS", "abc")
    assert str(info.value) == (
        "CUDNN_ATTR_TENSOR_DIMENSIONS takes CUDNN_TYPE_INT64 values (a sequence of ints), got 'abc'"
    )


@pytest.mark.parametrize(
    ("attr", "value", "fragment"),
    [
        ("TENSOR_DIMENSIONS", [1, 2.5, 3], "CUDNN_TYPE_INT64"),
        ("TENSOR_DIMENSIONS", [1, True, 3], "CUDNN_TYPE_INT64"),
        ("TENSOR_UNIQUE_ID", None, "CUDNN_TYPE_INT64"),
        ("TENSOR_DATA_TYPE", "NOT_A_TYPE", "cudnnDataType_t"),
        ("TENSOR_DATA_TYPE", 9999, "cudnnDataType_t"),
        ("TENSOR_DATA_TYPE", raw.cudnnPointwiseMode_t.ADD, "cudnnDataType_t"),
        ("TENSOR_IS_VIRTUAL", 1, "CUDNN_TYPE_BOOLEAN"),
        ("TENSOR_IS_VIRTUAL", "yes", "CUDNN_TYPE_BOOLEAN"),
    ],
)
def test_wrong_python_values_are_type_errors(attr: str, value: object, fragment: str) -> None:
    t = BackendDescriptor("TENSOR")
    with pytest.raises(TypeError, match=fragment) as info:
        t.set(attr, value)
    assert f"CUDNN_ATTR_{attr}" in str(info.value)


def test_undocumented_type_requires_attr_type() -> None:
    t = BackendDescriptor("TENSOR")
    with pytest.raises(TypeError, match="attr_type="):
        t.set("TENSOR_IS_BY_VALUE", True)
    t.set("TENSOR_IS_BY_VALUE", True, attr_type="BOOLEAN")  # explicit: accepted


def test_fraction_values() -> None:
    r = BackendDescriptor("RESAMPLE")
    with pytest.raises(TypeError, match="CUDNN_TYPE_FRACTION"):
        r.set("RESAMPLE_PRE_PADDINGS", [1.5, 2.5], attr_type="FRACTION")
    from fractions import Fraction

    r.set("RESAMPLE_PRE_PADDINGS", [Fraction(1, 2), (3, 4)], attr_type="FRACTION")


def test_descriptor_values_must_be_finalized_descriptors() -> None:
    op = BackendDescriptor("OPERATION_POINTWISE")
    unfinished = BackendDescriptor("TENSOR")
    with pytest.raises(ValueError, match="not finalized"):
        op.set("OPERATION_POINTWISE_XDESC", unfinished, attr_type="BACKEND_DESCRIPTOR")
    with pytest.raises(TypeError, match="BackendDescriptor"):
        op.set("OPERATION_POINTWISE_XDESC", 12345, attr_type="BACKEND_DESCRIPTOR")


def test_attribute_of_another_descriptor_is_refused_in_python() -> None:
    op = BackendDescriptor("OPERATION_POINTWISE")
    with pytest.raises(ValueError, match="attribute of CUDNN_BACKEND_TENSOR_DESCRIPTOR"):
        op.set("TENSOR_DIMENSIONS", [1, 2, 3])


def test_set_after_finalize_is_refused_before_c() -> None:
    t = _tensor()
    with pytest.raises(ValueError, match="finalized") as info:
        t.set("TENSOR_UNIQUE_ID", 9)
    assert not isinstance(info.value, pycudnn.CudnnError)
    assert t.get("TENSOR_UNIQUE_ID") == 1


def test_get_before_finalize_is_refused_before_c() -> None:
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_DIMENSIONS", [1, 2, 3])
    with pytest.raises(ValueError, match="not finalized") as info:
        t.get("TENSOR_DIMENSIONS")
    assert not isinstance(info.value, pycudnn.CudnnError)


def test_finalize_failure_carries_cudnns_reason() -> None:
    t = BackendDescriptor("TENSOR")
    with pytest.raises(pycudnn.CudnnBadParamError) as info:
        t.finalize()
    err = info.value
    assert err.status == 2000 and err.function == "cudnnBackendFinalize"
    assert "CUDNN_BACKEND_TENSOR_DESCRIPTOR" in err.message
    assert not t.is_finalized


def test_alignment_not_multiple_of_element_size_is_refused_by_cudnn() -> None:
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_UNIQUE_ID", 1)
    t.set("TENSOR_DIMENSIONS", [1, 2, 3])
    t.set("TENSOR_STRIDES", [6, 3, 1])
    t.set("TENSOR_DATA_TYPE", "FLOAT")
    t.set("TENSOR_BYTE_ALIGNMENT", 2)
    with pytest.raises(pycudnn.CudnnBadParamError):
        t.finalize()


def test_incomplete_deviceprop_json_is_refused_naming_the_key() -> None:
    skip_unless_cudnn((9, 8), "CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR")
    # Only the mechanism is tested here: an incomplete JSON must be refused, with the key named.
    d = BackendDescriptor("DEVICEPROP")
    d.set("DEVICEPROP_JSON_REPRESENTATION", '{"deviceName": "incomplete"}', attr_type="CHAR")
    # cuDNN names the missing key from 9.13 on; 9.12 says only "ptrDesc->finalize()" (measured).
    key = "maxGridSize" if pycudnn.version_tuple() >= (9, 13) else "DEVICEPROP_DESCRIPTOR"
    with pytest.raises(pycudnn.CudnnBadParamError, match=key):
        d.finalize()


def test_deviceprop_from_device_id_needs_a_gpu() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a GPU")
    skip_unless_cudnn((9, 8), "CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR")
    d = BackendDescriptor("DEVICEPROP")
    d.set("DEVICEPROP_DEVICE_ID", 0, attr_type="INT32")
    with pytest.raises(pycudnn.CudnnNotInitializedError):
        d.finalize()


# -- ownership ----------------------------------------------------------------------------------


def test_closed_descriptor_refuses_everything() -> None:
    t = _tensor()
    t.close()
    t.close()  # idempotent
    assert t.closed
    for call in (
        lambda: t.get("TENSOR_DIMENSIONS"),
        lambda: t.set("TENSOR_UNIQUE_ID", 2),
        t.finalize,
        lambda: t.ptr,
    ):
        with pytest.raises(pycudnn.ClosedError):
            call()
    op = BackendDescriptor("OPERATION_POINTWISE")
    with pytest.raises(pycudnn.ClosedError):
        op.set("OPERATION_POINTWISE_XDESC", t, attr_type="BACKEND_DESCRIPTOR")


def test_with_closes() -> None:
    with BackendDescriptor("TENSOR") as t:
        assert not t.closed
    assert t.closed


def test_children_keep_the_descriptors_set_on_them_alive() -> None:
    x = _tensor(1, dims=(2, 3, 4), strides=(12, 4, 1), dtype="FLOAT")
    y = _tensor(2, dims=(2, 3, 4), strides=(12, 4, 1), dtype="FLOAT")
    pw = BackendDescriptor("POINTWISE")
    pw.set("POINTWISE_MODE", "RELU_FWD")
    pw.set("POINTWISE_MATH_PREC", "FLOAT")
    pw.finalize()
    op = BackendDescriptor("OPERATION_POINTWISE")
    op.set("OPERATION_POINTWISE_PW_DESCRIPTOR", pw, attr_type="BACKEND_DESCRIPTOR")
    op.set("OPERATION_POINTWISE_XDESC", x, attr_type="BACKEND_DESCRIPTOR")
    op.set("OPERATION_POINTWISE_YDESC", y, attr_type="BACKEND_DESCRIPTOR")
    refs = [weakref.ref(d) for d in (x, y, pw)]
    del x, y, pw
    gc.collect()
    assert all(r() is not None for r in refs), "descriptors set on op must stay alive"
    op.finalize()  # uses them: would crash if they had been destroyed
    graph = BackendDescriptor("OPERATIONGRAPH")
    graph.set("OPERATIONGRAPH_OPS", [op], attr_type="BACKEND_DESCRIPTOR")
    graph.finalize()
    del op
    gc.collect()
    assert all(r() is not None for r in refs)
    graph.close()
    del graph
    gc.collect()
    assert all(r() is None for r in refs), "once the last user is gone they are released"


def test_repr_shows_type_and_state() -> None:
    t = BackendDescriptor("TENSOR")
    assert "TENSOR_DESCRIPTOR" in repr(t) and "not finalized" in repr(t)
    t.close()
    assert "closed" in repr(t)


# -- count queries -------------------------------------------------------------------------------


def _conv_graph() -> BackendDescriptor:
    x = _tensor(1)
    w = _tensor(2, dims=(32, 32, 3, 3), strides=(288, 1, 96, 32))
    y = _tensor(3)
    conv = BackendDescriptor("CONVOLUTION")
    conv.set("CONVOLUTION_SPATIAL_DIMS", 2)
    conv.set("CONVOLUTION_COMP_TYPE", "FLOAT")
    conv.set("CONVOLUTION_CONV_MODE", "CROSS_CORRELATION")
    conv.set("CONVOLUTION_DILATIONS", [1, 1])
    conv.set("CONVOLUTION_FILTER_STRIDES", [1, 1])
    conv.set("CONVOLUTION_PRE_PADDINGS", [1, 1])
    conv.set("CONVOLUTION_POST_PADDINGS", [1, 1])
    conv.finalize()
    op = BackendDescriptor("OPERATION_CONVOLUTION_FORWARD")
    op.set("OPERATION_CONVOLUTION_FORWARD_X", x)
    op.set("OPERATION_CONVOLUTION_FORWARD_W", w)
    op.set("OPERATION_CONVOLUTION_FORWARD_Y", y)
    op.set("OPERATION_CONVOLUTION_FORWARD_CONV_DESC", conv)
    op.set("OPERATION_CONVOLUTION_FORWARD_ALPHA", 1.0, attr_type="FLOAT")
    op.set("OPERATION_CONVOLUTION_FORWARD_BETA", 0.0, attr_type="FLOAT")
    op.finalize()
    g = BackendDescriptor("OPERATIONGRAPH")
    g.set("OPERATIONGRAPH_OPS", [op])
    g.finalize()
    return g


def test_heuristic_results_count_query_then_read_uses_the_returned_count() -> None:
    skip_unless_heuristics_run_here()
    g = _conv_graph()
    assert g.get("OPERATIONGRAPH_ENGINE_GLOBAL_COUNT") > 0
    heur = BackendDescriptor("ENGINEHEUR")
    heur.set("ENGINEHEUR_OPERATION_GRAPH", g)
    heur.set("ENGINEHEUR_MODE", raw.cudnnBackendHeurMode_t(int(raw.CUDNN_HEUR_MODE_A)))
    heur.finalize()
    counted = heur.element_count("ENGINEHEUR_RESULTS")
    configs = heur.get("ENGINEHEUR_RESULTS", many=True)
    assert counted > 0
    assert len(configs) <= counted
    if not driver_status().usable:
        # Without a GPU and without DEVICEPROP, cuDNN counts configs but materializes none: the
        # read returns fewer (here: zero) than the count query promised.
        assert configs == []
    else:
        # On a GPU this FP16 NHWC 3x3 convolution has engines: the loop below must check some.
        assert configs
    for cfg in configs:
        assert cfg.descriptor_type is raw.cudnnBackendDescriptorType_t.ENGINECFG_DESCRIPTOR
        assert cfg.is_finalized


def test_descriptor_get_is_refused_when_the_kind_is_unknown() -> None:
    # cuDNN fills descriptors the caller creates without checking their kind everywhere, so a
    # descriptor-valued read is refused unless the kind is known (set here, or filled by cuDNN);
    # tests/test_graph_robustness.py has the crashes this prevents.
    skip_unless_cudnn((9, 6), "CUDNN_ATTR_OPERATIONGRAPH_IS_SAME_TOPOLOGY")
    g = _conv_graph()
    with pytest.raises(ValueError, match="kind of descriptor it holds"):
        g.get("OPERATIONGRAPH_IS_SAME_TOPOLOGY", attr_type="BACKEND_DESCRIPTOR", many=True)


@pytest.mark.parametrize(
    ("spelling", "member"),
    [
        ("INT8x32", "CUDNN_DATA_INT8x32"),
        ("int8x32", "CUDNN_DATA_INT8x32"),  # member names are mixed case in C
        ("CUDNN_DATA_INT8x32", "CUDNN_DATA_INT8x32"),
        ("DATA_HALF", "CUDNN_DATA_HALF"),
        ("a", "CUDNN_HEUR_MODE_A"),  # cudnn-frontend's spelling
        ("fallback", "CUDNN_HEUR_MODE_FALLBACK"),
        ("HEUR_MODE_B", "CUDNN_HEUR_MODE_B"),
        ("MODE_INSTANT", "CUDNN_HEUR_MODE_INSTANT"),
    ],
)
def test_enum_values_take_the_c_name_in_any_case_and_prefix(spelling: str, member: str) -> None:
    from pycudnn import _bindings
    from pycudnn._attrs import _enum_value

    expected = getattr(_bindings, member)
    assert _enum_value(type(expected), spelling) == int(expected)


def test_an_enum_word_shared_by_several_members_is_not_guessed() -> None:
    from pycudnn import _bindings
    from pycudnn._attrs import _enum_value

    # "FP8" ends FAST_FLOAT_FOR_FP8 and starts FP8_E4M3 and FP8_E5M2: no single member is meant.
    with pytest.raises(TypeError, match="not a cudnnDataType_t member"):
        _enum_value(_bindings.cudnnDataType_t, "FP8")
