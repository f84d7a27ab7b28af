"""Status codes map to their classes and names (CPU tier)."""

from __future__ import annotations

import pickle

import pytest

import pycudnn
import pycutensor
from pycudnn import _bindings as cb
from pycudnn.errors import error_class_for_status, status_name
from pycutensor import _bindings as tb

CATEGORY_CLASSES = {
    1000: pycudnn.CudnnNotInitializedError,
    2000: pycudnn.CudnnBadParamError,
    3000: pycudnn.CudnnNotSupportedError,
    4000: pycudnn.CudnnInternalError,
    5000: pycudnn.CudnnExecutionFailedError,
}


def _cudnn_error_string(status: int) -> str:
    from pycudnn._lib import LIB

    return LIB.function("cudnnGetErrorString")(status).decode()


@pytest.mark.parametrize("status", sorted({int(m) for m in cb.cudnnStatus_t if m != 0}))
def test_every_cudnn_status_maps_to_its_category_class_and_name(status: int) -> None:
    cls = error_class_for_status(status)
    # Category rule from cudnn_graph.h: CUDNN_STATUS_CATEGORY(c) = c / 1000 * 1000.
    assert cls is CATEGORY_CLASSES[status // 1000 * 1000]
    # The library's own name for the code (cudnnGetErrorString) is the one we report, for the
    # codes the loaded cuDNN knows (a version-matrix entry may load one older than the headers).
    if cb.ENUMERATOR_SINCE.get(status_name(status), (0,)) <= pycudnn.version_tuple():
        assert status_name(status) == _cudnn_error_string(status)
    err = cls(status, "cudnnSomething", "why")
    assert err.status == status and err.function == "cudnnSomething" and err.message == "why"
    assert err.status_name in str(err) and "why" in str(err)
    assert isinstance(err, pycudnn.CudnnError)


def test_bad_param_is_a_value_error_and_others_are_not() -> None:
    assert issubclass(pycudnn.CudnnBadParamError, ValueError)
    assert not issubclass(pycudnn.CudnnNotSupportedError, ValueError)


def test_unknown_future_codes_map_by_category() -> None:
    assert error_class_for_status(2999) is pycudnn.CudnnBadParamError
    assert error_class_for_status(3999) is pycudnn.CudnnNotSupportedError
    assert status_name(2999) == _cudnn_error_string(2999) == "CUDNN_UNKNOWN_STATUS"
    assert error_class_for_status(9999) is pycudnn.CudnnError


def test_errors_pickle() -> None:
    err = pycudnn.CudnnBadParamError(2002, "cudnnBackendFinalize", "NULL descriptor")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is pycudnn.CudnnBadParamError
    assert (back.status, back.function, back.message) == (
        2002,
        "cudnnBackendFinalize",
        "NULL descriptor",
    )
    terr = pycutensor.CutensorInvalidValueError(7, "cutensorCreatePlan", "bad")
    back2 = pickle.loads(pickle.dumps(terr))
    assert type(back2) is pycutensor.CutensorInvalidValueError and back2.message == "bad"


def _cutensor_error_string(status: int) -> str:
    from pycutensor._lib import LIB

    return LIB.function("cutensorGetErrorString")(status).decode()


@pytest.mark.parametrize("status", sorted({int(m) for m in tb.cutensorStatus_t if m != 0}))
def test_every_cutensor_status_has_the_library_name(status: int) -> None:
    from pycutensor.errors import error_class_for_status as cls_for
    from pycutensor.errors import status_name as t_name

    assert t_name(status) == _cutensor_error_string(status)
    err = cls_for(status)(status, "cutensorX")
    assert isinstance(err, pycutensor.CutensorError)


def test_cutensor_specific_classes() -> None:
    from pycutensor.errors import error_class_for_status as cls_for

    assert cls_for(int(tb.cutensorStatus_t.INVALID_VALUE)) is pycutensor.CutensorInvalidValueError
    assert issubclass(pycutensor.CutensorInvalidValueError, ValueError)
    assert cls_for(int(tb.cutensorStatus_t.NOT_SUPPORTED)) is pycutensor.CutensorNotSupportedError
    assert cls_for(int(tb.cutensorStatus_t.ARCH_MISMATCH)) is pycutensor.CutensorArchMismatchError
    assert (
        cls_for(int(tb.cutensorStatus_t.INSUFFICIENT_WORKSPACE))
        is pycutensor.CutensorInsufficientWorkspaceError
    )


def test_library_not_found_is_an_import_error() -> None:
    assert issubclass(pycudnn.LibraryNotFoundError, ImportError)
    assert pycudnn.LibraryNotFoundError is pycutensor.LibraryNotFoundError
