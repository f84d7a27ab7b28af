"""The raw layer refuses an element count larger than the ctypes array passed with it.

Legacy cuDNN getters such as ``cudnnGetTensorNdDescriptor(d, 8, ..., (c_int * 1)(), ...)`` write
``nbDimsRequested`` elements whatever the array holds, and setters read ``nbDims`` elements: with a
1-element array the 7 ints after it were overwritten (a crash after 20,000 calls in the audit's
repro). The (count, array) pairs come from the headers (``ARRAY_COUNTS``, written by
``scripts/generate_bindings.py``); the tables below list every function they cover so that a change
is reviewed. Calls that reach C run in a child process, each array the first field of a structure
whose other fields are a guard: a write past the array changes the guard instead of crashing.
"""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest
from children import run_python

import pycudnn._bindings as cudnn_bindings
import pycutensor._bindings as cutensor_bindings
from _nvbind.rawlayer import array_count_check, storage_bytes
from pycudnn import _rawchecks

# --------------------------------------------------------------------------------------------------
# What the rule covers
# --------------------------------------------------------------------------------------------------

# function -> (array parameter, count parameters multiplied, offset added), read from the headers'
# prototypes and @param text (cuDNN 9.28, cuTENSOR 2.8), not from the generator.
CUDNN_COVERED = {
    "cudnnGetLastErrorString": (("message", ("max_size",), 0),),
    "cudnnSetTensorNdDescriptor": (("dimA", ("nbDims",), 0), ("strideA", ("nbDims",), 0)),
    "cudnnSetTensorNdDescriptorEx": (("dimA", ("nbDims",), 0),),
    "cudnnGetTensorNdDescriptor": (
        ("dimA", ("nbDimsRequested",), 0),
        ("strideA", ("nbDimsRequested",), 0),
    ),
    "cudnnSetTensorTransformDescriptor": (
        ("padBeforeA", ("nbDims",), 0),
        ("padAfterA", ("nbDims",), 0),
        ("foldA", ("nbDims",), -2),  # spatial dimensions only (observed: see the child test)
    ),
    "cudnnGetTensorTransformDescriptor": (
        ("padBeforeA", ("nbDimsRequested",), 0),
        ("padAfterA", ("nbDimsRequested",), 0),
        ("foldA", ("nbDimsRequested",), -2),
    ),
    "cudnnSetFilterNdDescriptor": (("filterDimA", ("nbDims",), 0),),
    "cudnnGetFilterNdDescriptor": (("filterDimA", ("nbDimsRequested",), 0),),
    "cudnnSetPoolingNdDescriptor": (
        ("windowDimA", ("nbDims",), 0),
        ("paddingA", ("nbDims",), 0),
        ("strideA", ("nbDims",), 0),
    ),
    "cudnnGetPoolingNdDescriptor": (
        ("windowDimA", ("nbDimsRequested",), 0),
        ("paddingA", ("nbDimsRequested",), 0),
        ("strideA", ("nbDimsRequested",), 0),
    ),
    "cudnnGetPoolingNdForwardOutputDim": (("outputTensorDimA", ("nbDims",), 0),),
    "cudnnSetSpatialTransformerNdDescriptor": (("dimA", ("nbDims",), 0),),
    "cudnnSetRNNDataDescriptor": (("seqLengthArray", ("batchSize",), 0),),
    "cudnnGetRNNDataDescriptor": (("seqLengthArray", ("arrayLengthRequested",), 0),),
    "cudnnSetSeqDataDescriptor": (
        ("dimA", ("nbDims",), 0),
        ("axes", ("nbDims",), 0),
        ("seqLengthArray", ("seqLengthArraySize",), 0),
    ),
    "cudnnGetSeqDataDescriptor": (
        ("dimA", ("nbDimsRequested",), 0),
        ("axes", ("nbDimsRequested",), 0),
        ("seqLengthArray", ("seqLengthSizeRequested",), 0),
    ),
    "cudnnSetConvolutionNdDescriptor": (
        ("padA", ("arrayLength",), 0),
        ("filterStrideA", ("arrayLength",), 0),
        ("dilationA", ("arrayLength",), 0),
    ),
    "cudnnGetConvolutionNdDescriptor": (
        ("padA", ("arrayLengthRequested",), 0),
        ("strideA", ("arrayLengthRequested",), 0),
        ("dilationA", ("arrayLengthRequested",), 0),
    ),
    "cudnnGetConvolutionNdForwardOutputDim": (("tensorOuputDimA", ("nbDims",), 0),),
    **{
        f"cudnn{verb}Convolution{kind}Algorithm{suffix}": (
            ("perfResults", ("requestedAlgoCount",), 0),
        )
        for kind in ("Forward", "BackwardData", "BackwardFilter")
        for verb, suffix in (("Get", "_v7"), ("Find", ""), ("Find", "Ex"))
    },
}

CUTENSOR_COVERED = {
    "cutensorCreateTensorDescriptor": (
        ("extent", ("numModes",), 0),
        ("stride", ("numModes",), 0),
    ),
    **{
        name: (("buf", ("sizeInBytes",), 0),)
        for name in (
            "cutensorOperationDescriptorSetAttribute",
            "cutensorOperationDescriptorGetAttribute",
            "cutensorPlanPreferenceSetAttribute",
            "cutensorPlanPreferenceGetAttribute",
            "cutensorPlanGetAttribute",
        )
    },
    "cutensorCreateBlockSparseTensorDescriptor": (
        ("numSectionsPerMode", ("numModes",), 0),
        ("nonZeroCoordinates", ("numModes", "numNonZeroBlocks"), 0),
        ("stride", ("numModes", "numNonZeroBlocks"), 0),
    ),
}

# Host arrays left to the caller, as in C: their length is not an argument of the call.
NOT_COVERED = {
    # length from the attention descriptor / the qDesc sequence data (and device arrays)
    "cudnnMultiHeadAttnForward": "loWinIdx",
    "cudnnMultiHeadAttnBackwardData": "loWinIdx",
    # one label list per batch entry of probsDesc
    "cudnnCTCLoss": "hostLabels",
    "cudnnGetCTCLossWorkspaceSize": "labels",
    # mode arrays: as many as the tensor descriptor has modes
    "cutensorCreateContraction": "modeA",
    "cutensorCreateElementwiseBinary": "modeA",
    "cutensorCreateReduction": "modeA",
    "cutensorCreatePermutation": "modeA",
}


def test_cudnn_functions_covered() -> None:
    assert dict(cudnn_bindings.ARRAY_COUNTS) == CUDNN_COVERED


def test_cutensor_functions_covered() -> None:
    assert dict(cutensor_bindings.ARRAY_COUNTS) == CUTENSOR_COVERED
    # extent holds sum(numSectionsPerMode) elements, an expression the rule does not read
    pairs = cutensor_bindings.ARRAY_COUNTS["cutensorCreateBlockSparseTensorDescriptor"]
    assert "extent" not in {array for array, _, _ in pairs}


@pytest.mark.parametrize("function", sorted(NOT_COVERED))
def test_arrays_sized_by_a_descriptor_are_not_covered(function: str) -> None:
    bindings = cutensor_bindings if function.startswith("cutensor") else cudnn_bindings
    assert NOT_COVERED[function] in bindings.FUNCTIONS[function].argnames
    assert function not in bindings.ARRAY_COUNTS


def test_covered_parameters_are_pointers_and_integers() -> None:
    for bindings in (cudnn_bindings, cutensor_bindings):
        for function, pairs in bindings.ARRAY_COUNTS.items():
            spec = bindings.FUNCTIONS[function]
            for array, factors, _ in pairs:
                argtype = spec.argtypes[spec.argnames.index(array)]
                assert argtype in (ctypes.c_void_p, ctypes.c_char_p) or issubclass(
                    argtype, ctypes._Pointer
                ), (function, array)
                for factor in factors:
                    assert issubclass(
                        spec.argtypes[spec.argnames.index(factor)], ctypes._SimpleCData
                    )


def test_functions_without_rules_get_no_per_call_check() -> None:
    """make_checked asks precheck once per function; None means nothing runs per call."""
    assert _rawchecks.precheck(cudnn_bindings.FUNCTIONS["cudnnBackendExecute"]) is None
    assert _rawchecks.precheck(cudnn_bindings.FUNCTIONS["cudnnSetTensorNdDescriptor"]) is not None
    from pycutensor import _lib

    assert _lib.precheck(cutensor_bindings.FUNCTIONS["cutensorContract"]) is None
    assert _lib.precheck(cutensor_bindings.FUNCTIONS["cutensorCreateTensorDescriptor"]) is not None


# --------------------------------------------------------------------------------------------------
# What can be sized
# --------------------------------------------------------------------------------------------------


class _Guarded(ctypes.Structure):
    _fields_ = (("array", ctypes.c_int * 1), ("guard", ctypes.c_int * 7))


def test_storage_bytes_of_ctypes_objects() -> None:
    a = (ctypes.c_int * 8)()
    assert storage_bytes(a) == 32
    assert storage_bytes(ctypes.byref(a)) == 32
    assert storage_bytes(ctypes.byref(a, 8)) == 24  # the offset counts
    assert storage_bytes(ctypes.pointer(a)) == 32
    assert storage_bytes(ctypes.cast(a, ctypes.POINTER(ctypes.c_int))) == 32
    assert storage_bytes(ctypes.c_int()) == 4
    # a field ends where the field does: what follows belongs to the other fields
    g = _Guarded()
    assert storage_bytes(g.array) == storage_bytes(ctypes.byref(g.array)) == 4
    assert storage_bytes(g) == 32
    # an element of an array reaches the end of the array, as C indexes on from it
    structs = (_Guarded * 3)()
    assert storage_bytes(structs[1]) == storage_bytes(ctypes.pointer(structs[1])) == 64
    x = np.zeros(8, np.int32)
    assert storage_bytes(x.ctypes.data_as(ctypes.POINTER(ctypes.c_int))) == 32
    assert storage_bytes(x[2:].ctypes.data_as(ctypes.POINTER(ctypes.c_int))) == 24


@pytest.mark.parametrize(
    "value",
    [None, 0, 140000000, ctypes.c_void_p(12345), ctypes.POINTER(ctypes.c_int)(), b"abc"],
    ids=["None", "zero", "int", "c_void_p", "NULL pointer", "bytes"],
)
def test_storage_bytes_unknown(value: object) -> None:
    assert storage_bytes(value) is None


def _bound(bindings: object, function: str) -> object:
    spec = bindings.FUNCTIONS[function]  # type: ignore[attr-defined]
    check = array_count_check(spec, bindings.ARRAY_COUNTS[function], "cuDNN")  # type: ignore[attr-defined]
    assert check is not None
    return check


def test_refusal_names_function_argument_and_both_numbers() -> None:
    check = _bound(cudnn_bindings, "cudnnGetTensorNdDescriptor")
    small, full = (ctypes.c_int * 1)(), (ctypes.c_int * 8)()
    with pytest.raises(ValueError) as info:
        check((None, 8, None, None, small, full))  # type: ignore[operator]
    assert str(info.value).startswith(
        "cudnnGetTensorNdDescriptor: argument 5 (dimA) holds 1 c_int element(s) but "
        "nbDimsRequested = 8; cuDNN would read or write past its end"
    )
    with pytest.raises(ValueError, match=r"argument 6 \(strideA\) holds 1 .* = 8"):
        check((None, 8, None, None, full, small))  # type: ignore[operator]


@pytest.mark.parametrize("count", [8, np.int64(8), ctypes.c_int(8)], ids=["int", "numpy", "c_int"])
def test_count_in_any_form_ctypes_accepts(count: object) -> None:
    check = _bound(cudnn_bindings, "cudnnSetTensorNdDescriptor")
    with pytest.raises(ValueError, match="nbDims = 8"):
        check((None, 0, count, (ctypes.c_int * 4)(), (ctypes.c_int * 8)()))  # type: ignore[operator]


def test_arrays_that_fit_or_cannot_be_sized_pass() -> None:
    check = _bound(cudnn_bindings, "cudnnSetTensorNdDescriptor")
    full = (ctypes.c_int * 8)()
    check((None, 0, 8, full, ctypes.byref(full)))  # type: ignore[operator]
    check((None, 0, 4, (ctypes.c_int * 4)(), full))  # type: ignore[operator]
    check((None, 0, 8, None, full))  # type: ignore[operator]  # NULL: cuDNN reports it
    check((None, 0, -1, (ctypes.c_int * 1)(), full))  # type: ignore[operator]  # cuDNN's BAD_PARAM
    check((None, 0, 8, ctypes.cast(full, ctypes.POINTER(ctypes.c_int)), full))  # type: ignore[operator]


def test_product_and_offset_counts() -> None:
    check = _bound(cutensor_bindings, "cutensorCreateBlockSparseTensorDescriptor")
    sections, coords = (ctypes.c_uint32 * 3)(), (ctypes.c_int32 * 5)()
    args = (None, None, 3, 2, sections, None, coords, None, 0)
    with pytest.raises(
        ValueError, match=r"nonZeroCoordinates\) holds 5 .* numModes \* numNonZeroBlocks = 6"
    ):
        check(args)  # type: ignore[operator]
    check((None, None, 3, 2, sections, None, (ctypes.c_int32 * 6)(), None, 0))  # type: ignore[operator]
    fold = _bound(cudnn_bindings, "cudnnSetTensorTransformDescriptor")
    pads = (ctypes.c_int32 * 5)()
    fold((None, 5, 0, pads, pads, (ctypes.c_uint32 * 3)(), 0))  # type: ignore[operator]
    with pytest.raises(ValueError, match=r"foldA\) holds 2 c_uint element\(s\) but nbDims - 2 = 3"):
        fold((None, 5, 0, pads, pads, (ctypes.c_uint32 * 2)(), 0))  # type: ignore[operator]


def test_byte_counts() -> None:
    check = _bound(cutensor_bindings, "cutensorPlanPreferenceSetAttribute")
    with pytest.raises(
        ValueError, match=r"argument 4 \(buf\) holds 4 byte\(s\) but sizeInBytes = 8"
    ):
        check((None, None, 0, ctypes.byref(ctypes.c_int32()), 8))  # type: ignore[operator]
    check((None, None, 0, ctypes.byref(ctypes.c_int64()), 8))  # type: ignore[operator]
    check((None, None, 0, 12345, 8))  # type: ignore[operator]  # an address: the caller's word


# --------------------------------------------------------------------------------------------------
# Through the raw layer into cuDNN, in a child process
# --------------------------------------------------------------------------------------------------

_CHILD = r"""
import ctypes as C, json, warnings
warnings.simplefilter("ignore")
from pycudnn import raw

results = {}


def guarded(ctype=C.c_int, n=1):
    # the array is the structure's first field; a write past it lands in the guard
    class G(C.Structure):
        _fields_ = [("array", ctype * n), ("guard", ctype * 8)]

    g = G()
    C.memset(C.addressof(g) + G.guard.offset, 0x5A, G.guard.size)
    return g


def guard_intact(g):
    field = type(g).guard
    return C.string_at(C.addressof(g) + field.offset, field.size) == b"\x5a" * field.size


def run(label, call, *gs):
    try:
        call()
        outcome = "accepted"
    except Exception as e:  # a cuDNN status is a ValueError too: the type name tells them apart
        outcome = type(e).__name__ + ": " + str(e)
    results[label] = [outcome, all(map(guard_intact, gs))]


def new(kind):
    d = C.c_void_p()
    getattr(raw, f"cudnnCreate{kind}Descriptor")(C.byref(d))
    return d


ints = lambda *v: (C.c_int * len(v))(*v)
out = lambda: C.byref(C.c_int())

t8 = new("Tensor")
raw.cudnnSetTensorNdDescriptor(t8, raw.CUDNN_DATA_FLOAT, 8, ints(*[2] * 8), ints(128, 64, 32, 16, 8, 4, 2, 1))
t4 = new("Tensor")
raw.cudnnSetTensorNdDescriptor(t4, raw.CUDNN_DATA_FLOAT, 4, ints(1, 2, 8, 8), ints(128, 64, 8, 1))
g1, g2 = guarded(), guarded()
run("cudnnGetTensorNdDescriptor", lambda: raw.cudnnGetTensorNdDescriptor(t8, 8, out(), out(), g1.array, g2.array), g1, g2)
g = guarded()
run("cudnnSetTensorNdDescriptor", lambda: raw.cudnnSetTensorNdDescriptor(new("Tensor"), raw.CUDNN_DATA_FLOAT, 8, g.array, ints(128, 64, 32, 16, 8, 4, 2, 1)), g)
g = guarded()
run("cudnnSetTensorNdDescriptorEx", lambda: raw.cudnnSetTensorNdDescriptorEx(new("Tensor"), raw.CUDNN_TENSOR_NCHW, raw.CUDNN_DATA_FLOAT, 5, g.array), g)

f = new("Filter")
raw.cudnnSetFilterNdDescriptor(f, raw.CUDNN_DATA_FLOAT, raw.CUDNN_TENSOR_NCHW, 4, ints(2, 2, 3, 3))
g = guarded()
run("cudnnGetFilterNdDescriptor", lambda: raw.cudnnGetFilterNdDescriptor(f, 4, out(), out(), out(), g.array), g)
g = guarded()
run("cudnnSetFilterNdDescriptor", lambda: raw.cudnnSetFilterNdDescriptor(new("Filter"), raw.CUDNN_DATA_FLOAT, raw.CUDNN_TENSOR_NCHW, 4, g.array), g)

c = new("Convolution")
raw.cudnnSetConvolutionNdDescriptor(c, 2, ints(1, 1), ints(1, 1), ints(1, 1), raw.CUDNN_CROSS_CORRELATION, raw.CUDNN_DATA_FLOAT)
gs = [guarded() for _ in range(3)]
run("cudnnGetConvolutionNdDescriptor", lambda: raw.cudnnGetConvolutionNdDescriptor(c, 2, out(), gs[0].array, gs[1].array, gs[2].array, out(), out()), *gs)
g = guarded()
run("cudnnSetConvolutionNdDescriptor", lambda: raw.cudnnSetConvolutionNdDescriptor(new("Convolution"), 2, g.array, ints(1, 1), ints(1, 1), raw.CUDNN_CROSS_CORRELATION, raw.CUDNN_DATA_FLOAT), g)
g = guarded()
run("cudnnGetConvolutionNdForwardOutputDim", lambda: raw.cudnnGetConvolutionNdForwardOutputDim(c, t4, f, 4, g.array), g)

p = new("Pooling")
raw.cudnnSetPoolingNdDescriptor(p, raw.CUDNN_POOLING_MAX, raw.CUDNN_NOT_PROPAGATE_NAN, 2, ints(2, 2), ints(0, 0), ints(2, 2))
gs = [guarded() for _ in range(3)]
run("cudnnGetPoolingNdDescriptor", lambda: raw.cudnnGetPoolingNdDescriptor(p, 2, out(), out(), out(), gs[0].array, gs[1].array, gs[2].array), *gs)
g = guarded()
run("cudnnSetPoolingNdDescriptor", lambda: raw.cudnnSetPoolingNdDescriptor(new("Pooling"), raw.CUDNN_POOLING_MAX, raw.CUDNN_NOT_PROPAGATE_NAN, 2, ints(2, 2), g.array, ints(2, 2)), g)
g = guarded()
run("cudnnGetPoolingNdForwardOutputDim", lambda: raw.cudnnGetPoolingNdForwardOutputDim(p, t4, 4, g.array), g)

x = new("TensorTransform")
raw.cudnnSetTensorTransformDescriptor(x, 4, raw.CUDNN_TENSOR_NCHW, ints(0, 0, 1, 1), ints(0, 0, 1, 1), (C.c_uint32 * 2)(1, 1), 0)
g = guarded(C.c_uint32)
pads = lambda: (C.c_int32 * 4)()
run("cudnnGetTensorTransformDescriptor", lambda: raw.cudnnGetTensorTransformDescriptor(x, 4, out(), pads(), pads(), g.array, out()), g)
g = guarded(C.c_uint32, 2)  # nbDims - 2 = 2 fold values: enough
run("ok cudnnGetTensorTransformDescriptor foldA", lambda: raw.cudnnGetTensorTransformDescriptor(x, 4, out(), pads(), pads(), g.array, out()), g)
g = guarded(C.c_uint32)
run("cudnnSetTensorTransformDescriptor", lambda: raw.cudnnSetTensorTransformDescriptor(new("TensorTransform"), 4, raw.CUDNN_TENSOR_NCHW, pads(), pads(), g.array, 0), g)

g = guarded()
run("cudnnSetSpatialTransformerNdDescriptor", lambda: raw.cudnnSetSpatialTransformerNdDescriptor(new("SpatialTransformer"), 0, raw.CUDNN_DATA_FLOAT, 4, g.array), g)

g = guarded()
run("cudnnSetRNNDataDescriptor", lambda: raw.cudnnSetRNNDataDescriptor(new("RNNData"), raw.CUDNN_DATA_FLOAT, raw.CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, 4, 3, 8, g.array, None), g)
r = new("RNNData")
raw.cudnnSetRNNDataDescriptor(r, raw.CUDNN_DATA_FLOAT, raw.CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, 4, 3, 8, ints(4, 4, 4), None)
g = guarded()
run("cudnnGetRNNDataDescriptor", lambda: raw.cudnnGetRNNDataDescriptor(r, out(), out(), out(), out(), out(), 3, g.array, C.byref(C.c_float())), g)

dims = C.c_int * 4
sd = new("SeqData")
sdims = dims()
for axis, n in ((raw.CUDNN_SEQDATA_TIME_DIM, 4), (raw.CUDNN_SEQDATA_BATCH_DIM, 3), (raw.CUDNN_SEQDATA_BEAM_DIM, 1), (raw.CUDNN_SEQDATA_VECT_DIM, 8)):
    sdims[axis] = n
axes = dims(raw.CUDNN_SEQDATA_TIME_DIM, raw.CUDNN_SEQDATA_BATCH_DIM, raw.CUDNN_SEQDATA_BEAM_DIM, raw.CUDNN_SEQDATA_VECT_DIM)
raw.cudnnSetSeqDataDescriptor(sd, raw.CUDNN_DATA_FLOAT, 4, sdims, axes, 3, ints(4, 4, 4), None)
g = guarded()
run("cudnnSetSeqDataDescriptor", lambda: raw.cudnnSetSeqDataDescriptor(new("SeqData"), raw.CUDNN_DATA_FLOAT, 4, sdims, axes, 3, g.array, None), g)
g = guarded()
run("cudnnGetSeqDataDescriptor", lambda: raw.cudnnGetSeqDataDescriptor(sd, out(), out(), 4, dims(), dims(), C.byref(C.c_size_t()), 3, g.array, None), g)

g = guarded(C.c_char, 4)
message = (C.c_char * 4).from_address(C.addressof(g))  # g.array would be a bytes copy
run("cudnnGetLastErrorString", lambda: raw.cudnnGetLastErrorString(message, 256), g)

perf = raw.cudnnConvolutionFwdAlgoPerf_t * 1
# A handle needs a GPU; a NULL one is refused first. These calls must stop at the array check,
# before cuDNN would see this made-up handle.
NOT_NULL = C.c_void_p(0x10)
run("cudnnGetConvolutionForwardAlgorithm_v7", lambda: raw.cudnnGetConvolutionForwardAlgorithm_v7(NOT_NULL, t4, f, c, t4, 8, out(), perf()))
run("cudnnFindConvolutionBackwardDataAlgorithm", lambda: raw.cudnnFindConvolutionBackwardDataAlgorithm(NOT_NULL, f, t4, c, t4, 2, out(), (raw.cudnnConvolutionBwdDataAlgoPerf_t * 1)()))

# the arrays that fit still work, and return what was set
d8, s8 = ints(*[0] * 8), ints(*[0] * 8)
raw.cudnnGetTensorNdDescriptor(t8, 8, out(), out(), d8, s8)
results["fits"] = [list(d8), list(s8)]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def child_results() -> dict[str, list[object]]:
    proc = run_python(_CHILD)
    if "LibraryNotFoundError" in proc.stderr:
        pytest.skip("cuDNN is not installed")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_CHILD_CASES = {
    "cudnnGetTensorNdDescriptor": "argument 5 (dimA) holds 1 c_int element(s) but nbDimsRequested = 8",
    "cudnnSetTensorNdDescriptor": "argument 4 (dimA) holds 1 c_int element(s) but nbDims = 8",
    "cudnnSetTensorNdDescriptorEx": "argument 5 (dimA) holds 1 c_int element(s) but nbDims = 5",
    "cudnnGetFilterNdDescriptor": "argument 6 (filterDimA) holds 1 c_int element(s) but nbDimsRequested = 4",
    "cudnnSetFilterNdDescriptor": "argument 5 (filterDimA) holds 1 c_int element(s) but nbDims = 4",
    "cudnnGetConvolutionNdDescriptor": "argument 4 (padA) holds 1 c_int element(s) but arrayLengthRequested = 2",
    "cudnnSetConvolutionNdDescriptor": "argument 3 (padA) holds 1 c_int element(s) but arrayLength = 2",
    "cudnnGetConvolutionNdForwardOutputDim": "argument 5 (tensorOuputDimA) holds 1 c_int element(s) but nbDims = 4",
    "cudnnGetPoolingNdDescriptor": "argument 6 (windowDimA) holds 1 c_int element(s) but nbDimsRequested = 2",
    "cudnnSetPoolingNdDescriptor": "argument 6 (paddingA) holds 1 c_int element(s) but nbDims = 2",
    "cudnnGetPoolingNdForwardOutputDim": "argument 4 (outputTensorDimA) holds 1 c_int element(s) but nbDims = 4",
    "cudnnGetTensorTransformDescriptor": "argument 6 (foldA) holds 1 c_uint element(s) but nbDimsRequested - 2 = 2",
    "cudnnSetTensorTransformDescriptor": "argument 6 (foldA) holds 1 c_uint element(s) but nbDims - 2 = 2",
    "cudnnSetSpatialTransformerNdDescriptor": "argument 5 (dimA) holds 1 c_int element(s) but nbDims = 4",
    "cudnnSetRNNDataDescriptor": "argument 7 (seqLengthArray) holds 1 c_int element(s) but batchSize = 3",
    "cudnnGetRNNDataDescriptor": "argument 8 (seqLengthArray) holds 1 c_int element(s) but arrayLengthRequested = 3",
    "cudnnSetSeqDataDescriptor": "argument 7 (seqLengthArray) holds 1 c_int element(s) but seqLengthArraySize = 3",
    "cudnnGetSeqDataDescriptor": "argument 9 (seqLengthArray) holds 1 c_int element(s) but seqLengthSizeRequested = 3",
    "cudnnGetLastErrorString": "argument 1 (message) holds 4 byte(s) but max_size = 256",
    "cudnnGetConvolutionForwardAlgorithm_v7": "argument 8 (perfResults) holds 1 cudnnConvolutionFwdAlgoPerf_t element(s) but requestedAlgoCount = 8",
    "cudnnFindConvolutionBackwardDataAlgorithm": "argument 8 (perfResults) holds 1 cudnnConvolutionBwdDataAlgoPerf_t element(s) but requestedAlgoCount = 2",
}


@pytest.mark.parametrize("function", sorted(_CHILD_CASES))
def test_too_small_array_refused_before_cudnn(
    child_results: dict[str, list[object]], function: str
) -> None:
    outcome, guard_intact = child_results[function]
    assert outcome == (
        f"ValueError: {function}: {_CHILD_CASES[function]}; cuDNN would read or write past its end. "
        "Pass a larger array or a smaller count"
    )
    assert guard_intact


def test_arrays_that_fit_are_passed_on(child_results: dict[str, list[object]]) -> None:
    outcome, guard_intact = child_results["ok cudnnGetTensorTransformDescriptor foldA"]
    assert outcome == "accepted" and guard_intact
    assert child_results["fits"] == [[2] * 8, [128, 64, 32, 16, 8, 4, 2, 1]]


def test_audit_repro_refused_in_a_loop() -> None:
    """The audit's repro: 20,000 getter calls into 1-element arrays crashed the process."""
    proc = run_python(
        """
        import ctypes as C
        from pycudnn import raw
        d = C.c_void_p(); raw.cudnnCreateTensorDescriptor(C.byref(d))
        raw.cudnnSetTensorNdDescriptor(d, raw.CUDNN_DATA_FLOAT, 8, (C.c_int*8)(*[2]*8),
                                       (C.c_int*8)(128, 64, 32, 16, 8, 4, 2, 1))
        dt, nb = C.c_int(), C.c_int()
        refused = 0
        for _ in range(20000):
            try:
                raw.cudnnGetTensorNdDescriptor(d, 8, C.byref(dt), C.byref(nb), (C.c_int*1)(), (C.c_int*1)())
            except ValueError:
                refused += 1
        print(refused)
        """
    )
    if "LibraryNotFoundError" in proc.stderr:
        pytest.skip("cuDNN is not installed")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["20000"]


def test_cutensor_refuses_before_c() -> None:
    from pycudnn import LibraryNotFoundError
    from pycutensor import raw

    desc = ctypes.c_void_p()
    try:
        with pytest.raises(
            ValueError, match=r"argument 4 \(extent\) holds 2 c_long element\(s\) but numModes = 4"
        ):
            raw.cutensorCreateTensorDescriptor(
                None, ctypes.byref(desc), 4, (ctypes.c_int64 * 2)(), None, raw.CUTENSOR_R_32F, 128
            )
    except LibraryNotFoundError:
        pytest.skip("cuTENSOR is not installed")
    with pytest.raises(
        ValueError, match=r"argument 4 \(buf\) holds 4 byte\(s\) but sizeInBytes = 8"
    ):
        raw.cutensorPlanPreferenceSetAttribute(None, None, 0, ctypes.byref(ctypes.c_int32()), 8)
