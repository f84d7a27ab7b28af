"""Spot checks of the generated bindings against facts from NVIDIA's headers.

The expected values below are read from the cuDNN 9.27/9.28 and cuTENSOR 2.8 headers (status
table, struct layouts, data-type constants, compute descriptor symbols), not from the generator,
so a generator bug that produces a self-consistent but wrong module still fails here. No library
is loaded and no GPU is needed.
"""

from __future__ import annotations

import ctypes
from enum import IntEnum

import pytest

import pycudnn._bindings as cudnn
import pycutensor._bindings as cutensor

LP64 = ctypes.sizeof(ctypes.c_void_p) == 8 and ctypes.sizeof(ctypes.c_long) == 8

# --------------------------------------------------------------------------------------------------
# cuDNN
# --------------------------------------------------------------------------------------------------

# cudnnStatus_t: value -> name without CUDNN_STATUS_, as cudnn_graph.h declares them.
CUDNN_STATUS = {
    0: "SUCCESS",
    1001: "NOT_INITIALIZED",
    1002: "SUBLIBRARY_VERSION_MISMATCH",
    1003: "SERIALIZATION_VERSION_MISMATCH",
    1004: "DEPRECATED",
    1005: "LICENSE_ERROR",
    1006: "RUNTIME_IN_PROGRESS",
    1007: "RUNTIME_FP_OVERFLOW",
    1008: "SUBLIBRARY_LOADING_FAILED",
    2000: "BAD_PARAM",
    2001: "INVALID_VALUE",
    2002: "BAD_PARAM_NULL_POINTER",
    2010: "BAD_PARAM_ATTRIBUTE_TYPE",
    2012: "BAD_PARAM_DESCRIPTOR_TYPE",
    3000: "NOT_SUPPORTED",
    3007: "NOT_SUPPORTED_ARCH_MISMATCH",
    3008: "NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
    3014: "NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE",
    4000: "INTERNAL_ERROR",
    4001: "INTERNAL_ERROR_COMPILATION_FAILED",
    4003: "INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
    4006: "INTERNAL_ERROR_TEXTURE_CREATION_FAILED",
    5000: "EXECUTION_FAILED",
    5004: "EXECUTION_FAILED_CURAND",
}
# Deprecated aliases and the codes they stand for.
CUDNN_STATUS_ALIASES = {
    "ALLOC_FAILED": 4003,
    "ARCH_MISMATCH": 3007,
    "MAPPING_ERROR": 4006,
    "RUNTIME_PREREQUISITE_MISSING": 3008,
    "VERSION_MISMATCH": 1002,
}


def test_header_version_is_consistent() -> None:
    major, minor, patch = cudnn.HEADER_VERSION
    assert major == 9
    assert cudnn.HEADER_VERSION_INT == major * 10000 + minor * 100 + patch == cudnn.CUDNN_VERSION
    assert (cudnn.CUDNN_MAJOR, cudnn.CUDNN_MINOR, cudnn.CUDNN_PATCHLEVEL) == cudnn.HEADER_VERSION


def test_status_enum_names_values_and_aliases() -> None:
    status = cudnn.cudnnStatus_t
    assert len(status.__members__) == 54  # enumerators, aliases included
    assert len(status) == 49  # distinct values
    for value, name in CUDNN_STATUS.items():
        assert status(value).name == name
        assert getattr(cudnn, f"CUDNN_STATUS_{name}") == value
    for alias, value in CUDNN_STATUS_ALIASES.items():
        member = status.__members__[alias]
        assert member == value
        assert member.name != alias  # the canonical (non-deprecated) name wins
        assert f"CUDNN_STATUS_{alias}" in cudnn.DEPRECATED_ENUMERATORS
    # Every code sits in one of the documented categories (code // 1000 * 1000).
    assert {s // 1000 * 1000 for s in status} == {0, 1000, 2000, 3000, 4000, 5000}


def test_enumerator_since_tags() -> None:
    since = cudnn.ENUMERATOR_SINCE
    assert since["CUDNN_STATUS_SUCCESS"] == (9, 0, 0)
    assert since["CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"] == (9, 2, 0)
    assert since["CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH"] == (9, 5, 0)
    assert since["CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE"] == (9, 6, 0)
    assert since["CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE"] == (9, 18, 0)
    assert not cudnn.UNSTABLE_ENUMERATORS & set(since)


def test_enum_member_names_and_module_constants() -> None:
    assert cudnn.cudnnDataType_t.FLOAT == cudnn.CUDNN_DATA_FLOAT == 0
    assert cudnn.cudnnBackendAttributeName_t.TENSOR_DIMENSIONS == cudnn.CUDNN_ATTR_TENSOR_DIMENSIONS
    assert cudnn.cudnnBackendDescriptorType_t.TENSOR_DESCRIPTOR == 17
    assert cudnn.cudnnBackendDescriptorType_t.POINTWISE_DESCRIPTOR == 0
    assert cudnn.CUDNN_ATTR_CONVOLUTION_CONV_MODE == 101
    assert cudnn.cudnnBackendAttributeType_t.NAN_PROPOGATION == 10  # sic, as in the header
    assert cudnn.cudnnSeverity_t.INFO == 3
    assert cudnn.cudnnBackendOperationGraphMode_t.AUTO == -1


def test_macros() -> None:
    assert cudnn.CUDNN_DIM_MAX == 8
    assert (cudnn.CUDNN_SEV_ERROR_EN, cudnn.CUDNN_SEV_WARNING_EN, cudnn.CUDNN_SEV_INFO_EN) == (
        2,
        4,
        8,
    )


@pytest.mark.skipif(not LP64, reason="struct sizes are recorded for 64-bit Linux (LP64)")
def test_struct_layouts_match_the_c_compiler() -> None:
    assert ctypes.sizeof(cudnn.cudnnDebug_t) == 120
    assert ctypes.sizeof(cudnn.cudnnFraction_t) == 16
    for name, size in cudnn.C_STRUCT_SIZES.items():
        assert ctypes.sizeof(getattr(cudnn, name)) == size, name
    fields = [f[0] for f in cudnn.cudnnDebug_t._fields_]
    assert fields[:3] == ["cudnn_version", "cudnnStatus", "time_sec"]
    assert fields[-1] == "reserved"


def test_callback_message_is_a_raw_pointer() -> None:
    # msg holds NUL-separated lines ending in a double NUL; c_char_p would keep only the first.
    callback = cudnn.cudnnCallback_t
    assert callback._restype_ is None
    assert callback._argtypes_[0] is ctypes.c_int
    assert callback._argtypes_[-1] is ctypes.c_void_p


def test_opaque_handles_are_void_pointers() -> None:
    for name in ("cudnnHandle_t", "cudnnBackendDescriptor_t", "cudaStream_t", "cudaGraph_t"):
        assert getattr(cudnn, name) is ctypes.c_void_p


def test_function_prototypes() -> None:
    functions = cudnn.FUNCTIONS
    assert len(functions) >= 235
    size_t_returning = {"cudnnGetVersion", "cudnnGetCudartVersion", "cudnnGetMaxDeviceVersion"}
    for name, spec in functions.items():
        assert spec.name == name
        assert len(spec.argtypes) == len(spec.argnames)
        if name in size_t_returning:
            assert spec.restype is ctypes.c_size_t
        elif name == "cudnnGetErrorString":
            assert spec.restype is ctypes.c_char_p
        elif name == "cudnnGetLastErrorString":
            assert spec.restype is None
        else:
            assert spec.restype is ctypes.c_int
            assert spec.returns_status, name
    set_attribute = functions["cudnnBackendSetAttribute"]
    assert set_attribute.argtypes == (
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int64,
        ctypes.c_void_p,
    )
    assert set_attribute.header == "cudnn_graph.h"
    assert set_attribute.since == (9, 0, 0)
    assert functions["cudnnGetErrorString"].argtypes == (ctypes.c_int,)
    # Function pointers are passed as c_void_p so that None (NULL) unregisters a callback;
    # cudnnCallback_t instances are accepted there too.
    assert functions["cudnnSetCallback"].argtypes[-1] is ctypes.c_void_p
    assert functions["cudnnGetCallback"].argtypes[-1] == ctypes.POINTER(cudnn.cudnnCallback_t)


def test_function_deprecation_comes_from_the_attribute() -> None:
    functions = cudnn.FUNCTIONS
    assert functions["cudnnBackendInitialize"].deprecated
    assert functions["cudnnQueryRuntimeError"].deprecated
    assert functions["cudnnConvolutionForward"].deprecated
    assert not functions["cudnnBackendExecute"].deprecated
    assert not functions["cudnnSetTensorNdDescriptor"].deprecated
    graph = [s for s in functions.values() if s.header == "cudnn_graph.h"]
    assert len(graph) == 24
    assert {s.name for s in graph if s.deprecated} == {
        "cudnnBackendInitialize",
        "cudnnQueryRuntimeError",
    }
    assert sum(s.deprecated for s in functions.values()) == 135


def test_attribute_table() -> None:
    attributes = cudnn.ATTRIBUTES
    names = cudnn.cudnnBackendAttributeName_t
    assert set(attributes) == {int(m) for m in names}
    dims = attributes[cudnn.CUDNN_ATTR_TENSOR_DIMENSIONS]
    assert dims.name == "CUDNN_ATTR_TENSOR_DIMENSIONS"
    assert dims.attr_type == cudnn.CUDNN_TYPE_INT64
    assert dims.descriptor_type == cudnn.CUDNN_BACKEND_TENSOR_DESCRIPTOR
    assert dims.access == "required"
    assert dims.count is None  # "at most CUDNN_MAX_DIMS elements"
    uid = attributes[cudnn.CUDNN_ATTR_TENSOR_UNIQUE_ID]
    assert (uid.attr_type, uid.count) == (cudnn.CUDNN_TYPE_INT64, 1)
    virtual = attributes[cudnn.CUDNN_ATTR_TENSOR_IS_VIRTUAL]
    assert virtual.attr_type == cudnn.CUDNN_TYPE_BOOLEAN
    # The docs call it CUDNN_ATTR_CONVOLUTION_MODE; the enumerator is ..._CONV_MODE.
    mode = attributes[cudnn.CUDNN_ATTR_CONVOLUTION_CONV_MODE]
    assert mode.attr_type == cudnn.CUDNN_TYPE_CONVOLUTION_MODE
    assert mode.descriptor_type == cudnn.CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
    # Documented as ..._EXP_AVERAGE_FACTOR_DESC; the enumerator is misspelled "AVERATE".
    factor = attributes[cudnn.CUDNN_ATTR_OPERATION_BN_FINALIZE_EXP_AVERATE_FACTOR_DESC]
    assert factor.attr_type == cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR
    heuristics = attributes[cudnn.CUDNN_ATTR_ENGINEHEUR_RESULTS]
    assert heuristics.access == "read-only"
    handle = attributes[cudnn.CUDNN_ATTR_OPERATIONGRAPH_HANDLE]
    assert handle.deprecated
    for spec in attributes.values():
        assert spec.attr_type is None or spec.attr_type in cudnn.ATTRIBUTE_TYPE_CTYPES
        assert spec.access in ("required", "optional", "read-only", "")
    typed = sum(spec.attr_type is not None for spec in attributes.values())
    assert typed >= 250


def test_attribute_type_ctypes() -> None:
    table = cudnn.ATTRIBUTE_TYPE_CTYPES
    assert set(table) == {int(m) for m in cudnn.cudnnBackendAttributeType_t}
    assert table[cudnn.CUDNN_TYPE_HANDLE] is ctypes.c_void_p
    assert table[cudnn.CUDNN_TYPE_VOID_PTR] is ctypes.c_void_p
    assert table[cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR] is ctypes.c_void_p
    assert table[cudnn.CUDNN_TYPE_DATA_TYPE] is ctypes.c_int
    assert table[cudnn.CUDNN_TYPE_REDUCTION_OPERATOR_TYPE] is ctypes.c_int
    assert table[cudnn.CUDNN_TYPE_BOOLEAN] is ctypes.c_bool
    assert table[cudnn.CUDNN_TYPE_INT64] is ctypes.c_int64
    assert table[cudnn.CUDNN_TYPE_INT32] is ctypes.c_int32
    assert table[cudnn.CUDNN_TYPE_FLOAT] is ctypes.c_float
    assert table[cudnn.CUDNN_TYPE_DOUBLE] is ctypes.c_double
    assert table[cudnn.CUDNN_TYPE_CHAR] is ctypes.c_char
    assert table[cudnn.CUDNN_TYPE_FRACTION] is cudnn.cudnnFraction_t


# --------------------------------------------------------------------------------------------------
# cuTENSOR
# --------------------------------------------------------------------------------------------------

# CUTENSOR_R_*/C_* constants of cutensor/types.h (values of CUDA's cudaDataType_t).
CUTENSOR_DATA_TYPES = {
    "R_32F": 0,
    "R_64F": 1,
    "R_16F": 2,
    "R_8I": 3,
    "C_32F": 4,
    "C_64F": 5,
    "C_16F": 6,
    "C_8I": 7,
    "R_8U": 8,
    "C_8U": 9,
    "R_32I": 10,
    "C_32I": 11,
    "R_32U": 12,
    "C_32U": 13,
    "R_16BF": 14,
    "C_16BF": 15,
    "R_4I": 16,
    "C_4I": 17,
    "R_4U": 18,
    "C_4U": 19,
    "R_16I": 20,
    "C_16I": 21,
    "R_16U": 22,
    "C_16U": 23,
    "R_64I": 24,
    "C_64I": 25,
    "R_64U": 26,
    "C_64U": 27,
}


def test_cutensor_version() -> None:
    major, minor, patch = cutensor.HEADER_VERSION
    assert major == 2
    assert major * 10000 + minor * 100 + patch == cutensor.HEADER_VERSION_INT
    assert cutensor.CUTENSOR_VERSION == cutensor.HEADER_VERSION_INT


def test_cutensor_data_types() -> None:
    assert cutensor.CUTENSOR_R_16BF == 14
    assert issubclass(cutensor.cutensorDataType_t, IntEnum)
    assert {m.name: int(m) for m in cutensor.cutensorDataType_t} == CUTENSOR_DATA_TYPES
    for name, value in CUTENSOR_DATA_TYPES.items():
        assert getattr(cutensor, f"CUTENSOR_{name}") == value


def test_cutensor_enums() -> None:
    assert cutensor.cutensorStatus_t.NOT_SUPPORTED == cutensor.CUTENSOR_STATUS_NOT_SUPPORTED == 15
    assert cutensor.cutensorStatus_t.INSUFFICIENT_WORKSPACE == 19
    assert cutensor.cutensorOperator_t.IDENTITY == 1
    assert cutensor.cutensorOperator_t.ADD == 3
    assert cutensor.cutensorAlgo_t.DEFAULT == -1
    assert cutensor.cutensorAlgo_t.DEFAULT_PATIENT == -6
    assert cutensor.cutensorWorksizePreference_t.DEFAULT == 2
    assert cutensor.cutensorJitMode_t.DEFAULT == 1
    assert cutensor.cutensorCacheMode_t.PEDANTIC == 1
    assert cutensor.cutensorAutotuneMode_t.INCREMENTAL == 1
    assert cutensor.cutensorPlanPreferenceAttribute_t.GPU_ARCH == 6
    assert cutensor.cutensorOperationDescriptorAttribute_t.SCALAR_TYPE == 1
    assert cutensor.CUTENSOR_PLAN_REQUIRED_WORKSPACE == 0


def test_cutensor_compute_descriptor_symbols() -> None:
    suffixes = ("16F", "16BF", "TF32", "3XTF32", "32F", "64F", "9X16BF", "8XINT8", "4X16F")
    expected = tuple(f"CUTENSOR_COMPUTE_DESC_{s}" for s in suffixes)
    assert expected == cutensor.COMPUTE_DESCRIPTOR_SYMBOLS


def test_cutensor_functions() -> None:
    functions = cutensor.FUNCTIONS
    assert len(functions) == 45
    assert not [n for n in functions if n.startswith(("cutensorMg", "cutensorMp"))]
    for name, spec in functions.items():
        assert spec.name == name
        # The headers carry no @since tags; the generator dates functions by the library's ELF
        # symbol versions (cuTENSOR 2 functions kept from 1.x count as 2.0.0).
        assert spec.since is not None and (2, 0, 0) <= spec.since <= cutensor.HEADER_VERSION
        assert spec.header == "cutensor.h"
        if name in ("cutensorGetVersion", "cutensorGetCudartVersion"):
            assert spec.restype is ctypes.c_size_t
        elif name == "cutensorGetErrorString":
            assert spec.restype is ctypes.c_char_p
        else:
            assert spec.restype is ctypes.c_int
            assert spec.returns_status, name
    assert functions["cutensorLoggerSetFile"].argtypes == (ctypes.c_void_p,)  # FILE *
    assert functions["cutensorLoggerForceDisable"].argtypes == ()
    assert functions["cutensorCreate"].argtypes == (ctypes.POINTER(ctypes.c_void_p),)


def test_cutensor_handles_and_logger_callback() -> None:
    for name in ("cutensorHandle_t", "cutensorPlan_t", "cutensorComputeDescriptor_t"):
        assert getattr(cutensor, name) is ctypes.c_void_p
    callback = cutensor.cutensorLoggerCallback_t
    assert callback._restype_ is None
    assert callback._argtypes_ == (ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p)
    assert cutensor.FUNCTIONS["cutensorLoggerSetCallback"].argtypes == (ctypes.c_void_p,)
