"""What BackendDescriptor.set/get keep per attribute spelling never lets a value or a symbol past
a check it would fail without it (CPU tier: needs libcuda.so.1, no GPU).

Every case here first uses a spelling successfully, so that what is kept for it exists, then uses
it again in the way that must be refused.
"""

from __future__ import annotations

import pytest
from versioned import skip_unless_cudnn_has

from _nvbind.ffi import UnsupportedByLibraryError
from pycudnn import _bindings as cb
from pycudnn._lib import LIB
from pycudnn.backend import BackendDescriptor
from pycudnn.handle import Handle

pytestmark = pytest.mark.usefixtures("libcuda")


@pytest.fixture
def cudnn_at(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Declare the loaded cuDNN older (never newer) than it is: the real library is untouched,
    so an exception proves the call never reached C."""

    def declare(version: tuple[int, int, int]) -> None:
        monkeypatch.setattr(LIB, "_version", min(version, LIB.version))

    return declare


def _before(c_name: str) -> tuple[int, int, int]:
    since = cb.ENUMERATOR_SINCE[c_name]
    return (since[0], since[1] - 1, 0)


def _tensor(**values: object) -> BackendDescriptor:
    t = BackendDescriptor("TENSOR")
    t.set("TENSOR_UNIQUE_ID", 1, attr_type="INT64")
    t.set("TENSOR_DATA_TYPE", "HALF", attr_type="DATA_TYPE")
    t.set("TENSOR_BYTE_ALIGNMENT", 16, attr_type="INT64")
    t.set("TENSOR_DIMENSIONS", [1, 32, 16, 16], attr_type="INT64")
    t.set("TENSOR_STRIDES", (8192, 1, 512, 32), attr_type="INT64")
    for key, value in values.items():
        t.set(key, value)
    return t


def test_values_set_the_usual_way_read_back_the_same() -> None:
    with _tensor(TENSOR_IS_VIRTUAL=True) as t:
        t.finalize()
        assert t.get("TENSOR_DIMENSIONS") == [1, 32, 16, 16]
        assert t.get("TENSOR_STRIDES") == [8192, 1, 512, 32]
        assert t.get("TENSOR_DATA_TYPE") == cb.cudnnDataType_t.HALF
        assert t.get("TENSOR_IS_VIRTUAL") is True
        assert t.get("TENSOR_UNIQUE_ID") == 1


@pytest.mark.parametrize(
    ("attr", "value", "error", "match"),
    [
        ("TENSOR_DIMENSIONS", [1, 0, 16, 16], ValueError, "at least 1"),
        ("TENSOR_STRIDES", [8192, -1, 512, 32], ValueError, "at least 0"),
        ("TENSOR_DIMENSIONS", [1, 2**63, 16, 16], ValueError, "out of range"),
        ("TENSOR_DIMENSIONS", [1, True, 16, 16], TypeError, "CUDNN_TYPE_INT64"),
        ("TENSOR_UNIQUE_ID", 1.0, TypeError, "CUDNN_TYPE_INT64"),
        ("TENSOR_DATA_TYPE", "NOT_A_TYPE", TypeError, "not a cudnnDataType_t member"),
        ("TENSOR_DATA_TYPE", cb.cudnnPointwiseMode_t.ADD, TypeError, "not a cudnnDataType_t"),
        ("TENSOR_IS_VIRTUAL", 1, TypeError, "CUDNN_TYPE_BOOLEAN"),
    ],
)
def test_a_kept_spelling_still_refuses_a_bad_value(
    attr: str, value: object, error: type[Exception], match: str
) -> None:
    with _tensor() as t:
        t.set("TENSOR_IS_VIRTUAL", False, attr_type="BOOLEAN")  # every spelling below is kept
        with pytest.raises(error, match=match):
            t.set(attr, value, attr_type=None if attr != "TENSOR_IS_VIRTUAL" else "BOOLEAN")


def test_an_axis_out_of_range_is_refused_after_a_valid_one() -> None:
    with BackendDescriptor("OPERATION_CONCAT") as d:
        d.set("OPERATION_CONCAT_AXIS", 1)
        with pytest.raises(ValueError, match="dimension index"):
            d.set("OPERATION_CONCAT_AXIS", 2**31)


def test_true_is_not_taken_for_the_attribute_numbered_1() -> None:
    with BackendDescriptor("POINTWISE") as d:
        d.set(1, "FLOAT")  # CUDNN_ATTR_POINTWISE_MATH_PREC is 1
        with pytest.raises(TypeError, match="attribute must be"):
            d.set(True, "FLOAT")


def test_a_kept_attribute_is_refused_once_the_library_is_declared_older(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    skip_unless_cudnn_has("CUDNN_ATTR_TENSOR_RAGGED_OFFSET_MULTIPLIER")
    with _tensor() as t:
        t.set("TENSOR_RAGGED_OFFSET_MULTIPLIER", 1)  # kept for this spelling and kind
    cudnn_at(_before("CUDNN_ATTR_TENSOR_RAGGED_OFFSET_MULTIPLIER"))
    refused = pytest.raises(UnsupportedByLibraryError, match="TENSOR_RAGGED_OFFSET_MULTIPLIER")
    with _tensor() as t, refused:
        t.set("TENSOR_RAGGED_OFFSET_MULTIPLIER", 1)


def test_a_kept_enum_value_is_refused_once_the_library_is_declared_older(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    skip_unless_cudnn_has("CUDNN_POINTWISE_FLOOR_MOD")
    with BackendDescriptor("POINTWISE") as d:
        d.set("POINTWISE_MODE", "FLOOR_MOD")
        d.set("POINTWISE_MODE", cb.cudnnPointwiseMode_t.FLOOR_MOD)
    cudnn_at(_before("CUDNN_POINTWISE_FLOOR_MOD"))
    with BackendDescriptor("POINTWISE") as d:
        for value in ("FLOOR_MOD", cb.cudnnPointwiseMode_t.FLOOR_MOD):
            with pytest.raises(UnsupportedByLibraryError, match="CUDNN_POINTWISE_FLOOR_MOD"):
                d.set("POINTWISE_MODE", value)


def test_a_kept_descriptor_type_is_refused_once_the_library_is_declared_older(cudnn_at) -> None:  # type: ignore[no-untyped-def]
    skip_unless_cudnn_has("CUDNN_BACKEND_OPERATION_ROPE_FWD_DESCRIPTOR")
    BackendDescriptor("OPERATION_ROPE_FWD").close()
    cudnn_at(_before("CUDNN_BACKEND_OPERATION_ROPE_FWD_DESCRIPTOR"))
    with pytest.raises(UnsupportedByLibraryError, match="OPERATION_ROPE_FWD_DESCRIPTOR"):
        BackendDescriptor("OPERATION_ROPE_FWD")


def test_descriptor_values_are_still_checked_after_a_valid_one() -> None:
    with _tensor() as x, _tensor() as y, _tensor() as unfinalized:
        x.finalize()
        y.finalize()
        with BackendDescriptor("POINTWISE") as pw:
            pw.set("POINTWISE_MODE", "RELU_FWD")
            pw.set("POINTWISE_MATH_PREC", "FLOAT")
            pw.finalize()
            with BackendDescriptor("OPERATION_POINTWISE") as op:
                desc = "BACKEND_DESCRIPTOR"  # the header documents no type for these
                op.set("OPERATION_POINTWISE_XDESC", x, attr_type=desc)
                op.set("OPERATION_POINTWISE_YDESC", [y], attr_type=desc)
                with pytest.raises(ValueError, match="not finalized"):
                    op.set("OPERATION_POINTWISE_XDESC", unfinalized, attr_type=desc)
                with pytest.raises(TypeError, match="takes CUDNN_BACKEND_TENSOR_DESCRIPTOR"):
                    op.set("OPERATION_POINTWISE_YDESC", pw, attr_type=desc)
                y.close()
                with pytest.raises(ValueError, match="closed"):
                    op.set("OPERATION_POINTWISE_YDESC", y, attr_type=desc)


def test_an_attribute_of_another_descriptor_is_refused_after_its_own_use() -> None:
    with _tensor():
        pass  # TENSOR_DIMENSIONS kept for TENSOR descriptors
    refused = pytest.raises(ValueError, match="is an attribute of CUDNN_BACKEND_TENSOR_DESCRIPTOR")
    with BackendDescriptor("POINTWISE") as d, refused:
        d.set("TENSOR_DIMENSIONS", [1, 2, 3, 4])


def _closed_handle() -> Handle:
    # No GPU here to create a real handle: a Handle object in the state close() leaves it in.
    h = Handle.__new__(Handle)
    h._ptr = None
    return h


@pytest.mark.parametrize("how", ["keep_alive", "parents"])
def test_a_closed_handle_kept_by_a_descriptor_still_stops_its_finalize(how: str) -> None:
    h = _closed_handle()
    if how == "parents":
        d = BackendDescriptor("ENGINECFG", parents=(h,))
    else:
        d = BackendDescriptor("ENGINECFG")
        d.keep_alive(h)
    with d, pytest.raises(ValueError, match=r"a pycudnn\.Handle set on it has been closed"):
        d.finalize()
