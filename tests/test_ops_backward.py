"""The legacy backward operations up to the cuDNN call (CPU tier: no kernel is launched).

Every check these functions make runs in Python before cuDNN sees the arrays, so it is tested
here without a GPU: the arrays are DeviceArrays around made-up device addresses (nothing reads
their memory), the handle is a stand-in that never reaches C, and the calls that need a GPU (the
ones taking the handle) are recorded instead of made. cuDNN itself builds every descriptor. The
recorded calls are read back by the argument names of the binding (``pycudnn._bindings``, from the
cuDNN 9 headers), so each test checks that every array, descriptor and scalar lands in the
parameter the header gives it. The numbers are checked against NumPy in
``test_ops_backward_gpu.py``.
"""

from __future__ import annotations

import ctypes
import warnings
from typing import Any

import numpy as np
import pytest
from standins import BASE, stand_in_handle
from standins import fake_device_array as fake

import pycudnn
from _nvbind.arrays import ArrayView
from _nvbind.cuda import driver_status
from pycudnn import _bindings as _b
from pycudnn import ops
from pycudnn.ops import _common, _conv_run, activation, convolution_backward, pooling
from pycudnn.tensor import (
    ConvolutionDescriptor,
    FilterDescriptor,
    TensorCoreWarning,
    TensorDescriptor,
)
from pycudnn.tensor import _common as tensor_common

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class _Device:
    def set_current(self) -> None:  # the stand-in handle's device: nothing to make current
        pass


class Recorder:
    """The stand-in handle and the GPU calls made on it, with cuDNN's answers simulated."""

    # What the simulated algorithm queries return: an unusable first candidate, then this one.
    USABLE_ALGO = 1

    def __init__(self) -> None:
        self.handle = stand_in_handle(_Device())
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, *args: Any) -> None:
        if not args or args[0] is not self.handle:
            tensor_common.call(name, *args)  # descriptor work: cuDNN does it without a GPU
            return
        spec = _b.FUNCTIONS[name]
        assert len(args) == len(spec.argtypes), f"{name}: {len(args)} arguments"
        for argtype, arg in zip(spec.argtypes[1:], args[1:], strict=True):
            argtype.from_param(arg)  # what ctypes would pass; raises for a wrong kind
        named = dict(zip(spec.argnames, args, strict=True))
        self.calls.append((name, named))
        self._answer(name, named)

    def _answer(self, name: str, a: dict[str, Any]) -> None:
        if name.endswith("MaxCount"):
            a["count"]._obj.value = 2
        elif "Algorithm" in name:  # the _v7 heuristics and FindEx
            perf = a["perfResults"]
            perf[0].algo, perf[0].status = 0, int(_b.CUDNN_STATUS_NOT_SUPPORTED)
            perf[1].algo, perf[1].status, perf[1].memory = self.USABLE_ALGO, 0, 0
            a["returnedAlgoCount"]._obj.value = 2
        elif name.endswith("WorkspaceSize"):
            a["sizeInBytes"]._obj.value = 0  # no workspace: none is allocated without a GPU

    def names(self) -> list[str]:
        return [n for n, _ in self.calls]

    def last(self, name: str) -> dict[str, Any]:
        return [a for n, a in self.calls if n == name][-1]


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    r = Recorder()
    for module in (_common, _conv_run, activation, convolution_backward, pooling):
        monkeypatch.setattr(module, "_call", r)
    # Algorithm choices are cached per device and descriptors; start each test without them.
    monkeypatch.setattr(_conv_run, "_algo_cache", {})
    monkeypatch.setattr(tensor_common, "_warned", set())
    return r


def value(byref_scalar: Any) -> float:
    return float(byref_scalar._obj.value)


# -- refusals that need no handle at all --------------------------------------------------------

# Host memory and non-arrays: test_ops_gpu.py's CPU tier runs these calls with the forward ones.
HOST = np.zeros((2, 3, 4, 4), np.float32)


def test_options_are_refused_before_the_arrays_are_read() -> None:
    with pytest.raises(ValueError, match=r"algo='fastest'.*'algo_0'"):
        ops.convolution_backward_data(HOST, HOST, x_shape=HOST.shape, algo="fastest")
    with pytest.raises(ValueError, match="algo=99"):
        ops.convolution_backward_filter(HOST, HOST, w_shape=(1, 3, 1, 1), algo=99)
    with pytest.raises(ValueError, match="'implicit_gemm'"):  # a forward algorithm
        ops.convolution_backward_filter(HOST, HOST, w_shape=(1, 3, 1, 1), algo="implicit_gemm")
    with pytest.raises(ValueError, match="mode"):
        ops.activation_backward(HOST, HOST, HOST, "gelu")
    with pytest.raises(ValueError, match="algorithm"):
        ops.softmax_backward(HOST, HOST, algorithm="fastest")
    with pytest.raises(ValueError, match="smaller than window"):
        ops.pooling_backward(HOST, HOST, HOST, window=(2, 2), pads=(2, 2))


def test_without_a_gpu_device_arrays_reach_cudnns_not_initialized_error() -> None:
    if driver_status().usable:
        pytest.skip("this machine has a usable GPU")
    v = ArrayView(0x10000, (2, 3, 4, 4), (48, 16, 4, 1), np.dtype(np.float32), 0, False, None)
    with pytest.raises(pycudnn.CudnnNotInitializedError, match="cudaGetDeviceCount"):
        ops.activation_backward(v, v, v)


# -- the harness against the forward convolution, which ran right on an H100 --------------------


def test_the_recorder_sees_the_gpu_verified_forward_call_as_the_header_names_it(
    rec: Recorder,
) -> None:
    x, w, y = fake((2, 8, 9, 9)), fake((4, 8, 3, 3)), fake((2, 4, 9, 9))
    ops.convolution_forward(x, w, ConvolutionDescriptor((1, 1)), y=y, handle=rec.handle)
    a = rec.last("cudnnConvolutionForward")
    assert (a["x"], a["w"], a["y"]) == (x.ptr, w.ptr, y.ptr)
    assert a["algo"] == Recorder.USABLE_ALGO


# -- convolution_backward_data ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_backward_data_routes_each_argument(rec: Recorder, fmt: str, dtype: Any) -> None:
    w, dy = fake((4, 6, 3, 3), dtype, fmt), fake((2, 4, 4, 5), dtype, fmt)
    dx = fake((2, 6, 8, 10), dtype, fmt)
    conv = ConvolutionDescriptor((1, 1), (2, 2))
    out = ops.convolution_backward_data(w, dy, conv, dx=dx, alpha=2.0, beta=0.5, handle=rec.handle)
    assert out is dx
    assert rec.names() == [
        "cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
        "cudnnGetConvolutionBackwardDataAlgorithm_v7",
        "cudnnGetConvolutionBackwardDataWorkspaceSize",
        "cudnnConvolutionBackwardData",
    ]
    a = rec.last("cudnnConvolutionBackwardData")
    assert (a["w"], a["dy"], a["dx"]) == (w.ptr, dy.ptr, dx.ptr)
    assert isinstance(a["wDesc"], FilterDescriptor) and a["wDesc"].dims == w.shape
    assert isinstance(a["dyDesc"], TensorDescriptor) and a["dyDesc"].dims == dy.shape
    assert a["dyDesc"].strides == dy.strides and a["dxDesc"].strides == dx.strides
    assert a["convDesc"] is conv and a["algo"] == Recorder.USABLE_ALGO
    assert (value(a["alpha"]), value(a["beta"])) == (2.0, 0.5)
    # cuDNN's scaling parameters are double for double data, float otherwise.
    assert isinstance(a["alpha"]._obj, ctypes.c_double if dtype == np.float64 else ctypes.c_float)
    assert (a["workSpace"], a["workSpaceSizeInBytes"]) == (None, 0)
    ws = rec.last("cudnnGetConvolutionBackwardDataWorkspaceSize")
    assert ws["algo"] == Recorder.USABLE_ALGO and ws["dxDesc"] is a["dxDesc"]


def test_backward_data_algorithm_choices(rec: Recorder) -> None:
    w, dy, dx = fake((4, 6, 3, 3)), fake((2, 4, 6, 6)), fake((2, 6, 8, 8))

    def run(algo: Any) -> dict[str, Any]:
        rec.calls.clear()
        ops.convolution_backward_data(w, dy, dx=dx, algo=algo, handle=rec.handle)
        return rec.last("cudnnConvolutionBackwardData")

    assert run(None)["algo"] == Recorder.USABLE_ALGO
    assert "cudnnGetConvolutionBackwardDataAlgorithm_v7" in rec.names()
    assert run("heuristic")["algo"] == Recorder.USABLE_ALGO  # None is the heuristic, cached
    assert rec.names()[0] == "cudnnGetConvolutionBackwardDataWorkspaceSize"
    for name, enum in [
        ("winograd_nonfused", _b.CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED),
        ("FFT_TILING", _b.CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING),
        (int(_b.CUDNN_CONVOLUTION_BWD_DATA_ALGO_0), _b.CUDNN_CONVOLUTION_BWD_DATA_ALGO_0),
    ]:
        assert run(name)["algo"] == int(enum)
        assert not any("Algorithm" in n for n in rec.names())
    found = run("find")
    assert found["algo"] == Recorder.USABLE_ALGO
    f = rec.last("cudnnFindConvolutionBackwardDataAlgorithmEx")
    assert (f["w"], f["dy"], f["dx"]) == (w.ptr, dy.ptr, dx.ptr)  # beta = 0: dx itself is timed
    assert f["requestedAlgoCount"] == 2


def test_backward_data_needs_the_input_shape(rec: Recorder) -> None:
    w, dy = fake((4, 6, 3, 3)), fake((1, 4, 3, 3))
    conv = ConvolutionDescriptor((0, 0), (2, 2))
    with pytest.raises(TypeError, match="dx or x_shape"):
        ops.convolution_backward_data(w, dy, conv, handle=rec.handle)
    # With stride 2, a 7x7 and an 8x8 input both give dy's 3x3: either dx is accepted.
    for extent in (7, 8):
        dx = fake((1, 6, extent, extent))
        assert ops.convolution_backward_data(w, dy, conv, dx=dx, handle=rec.handle) is dx
    with pytest.raises(ValueError, match=r"dy has shape \(1, 4, 3, 3\), but the convolution of "):
        ops.convolution_backward_data(w, dy, conv, dx=fake((1, 6, 9, 9)), handle=rec.handle)
    with pytest.raises(ValueError, match=r"x_shape .* gives \(1, 4, 2, 2\)"):
        ops.convolution_backward_data(w, dy, conv, x_shape=(1, 6, 6, 6), handle=rec.handle)
    with pytest.raises(ValueError, match="x_shape is"):
        ops.convolution_backward_data(
            w, dy, conv, dx=fake((1, 6, 7, 7)), x_shape=(1, 6, 8, 8), handle=rec.handle
        )
    with pytest.raises(ValueError, match="4 dims"):
        ops.convolution_backward_data(w, dy, conv, x_shape=(6, 7, 7), handle=rec.handle)
    with pytest.raises(ValueError, match="x_shape"):
        ops.convolution_backward_data(w, dy, conv, x_shape=(1, 6, 0, 7), handle=rec.handle)
    with pytest.raises(ValueError, match="channels"):  # C of dx against w's C
        ops.convolution_backward_data(w, dy, conv, x_shape=(1, 5, 7, 7), handle=rec.handle)
    # beta blends into dx, so a dx to be allocated is refused before any memory is taken.
    with pytest.raises(ValueError, match=r"beta = 1\.0 blends into the existing dx"):
        ops.convolution_backward_data(
            w, dy, conv, x_shape=(1, 6, 7, 7), beta=1.0, handle=rec.handle
        )
    assert all(
        n == "cudnnConvolutionBackwardData" or "Algorithm" in n or "Workspace" in n
        for n in rec.names()
    )


def test_backward_data_operand_rules(rec: Recorder) -> None:
    w, dy, dx = fake((4, 6, 3, 3)), fake((1, 4, 3, 3)), fake((1, 6, 5, 5))
    with pytest.raises(TypeError, match="w has dtype float16 but dy has float32"):
        ops.convolution_backward_data(fake((4, 6, 3, 3), np.float16), dy, dx=dx, handle=rec.handle)
    with pytest.raises(TypeError, match="dx has dtype float16, expected float32"):
        ops.convolution_backward_data(w, dy, dx=fake((1, 6, 5, 5), np.float16), handle=rec.handle)
    strided = fake((4, 6, 3, 3), ptr=BASE, strides=(108, 18, 6, 2))
    with pytest.raises(ValueError, match=r"w has strides .* packed KCRS"):
        ops.convolution_backward_data(strided, dy, dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match="dx is read-only"):
        ops.convolution_backward_data(
            w, dy, dx=fake((1, 6, 5, 5), readonly=True), handle=rec.handle
        )
    with pytest.raises(TypeError, match="ConvolutionDescriptor"):
        ops.convolution_backward_data(w, dy, "conv", dx=dx, handle=rec.handle)  # type: ignore[arg-type]
    assert rec.calls == []  # nothing reached the GPU


def test_backward_data_honours_the_math_type(rec: Recorder) -> None:
    w, dy = fake((4, 6, 3, 3), np.float16), fake((2, 4, 3, 3), np.float16)
    dx = fake((2, 6, 5, 5), np.float16)
    conv = ConvolutionDescriptor((0, 0), math_type="tensor_op")
    with pytest.warns(TensorCoreWarning, match="NHWC") as record:
        ops.convolution_backward_data(w, dy, conv, dx=dx, handle=rec.handle)
    tensor_core = [w for w in record if issubclass(w.category, TensorCoreWarning)]
    assert [w.filename for w in tensor_core] == [__file__]  # it names the caller's line
    assert rec.last("cudnnConvolutionBackwardData")["convDesc"] is conv
    # Channels-last, multiples of 8, aligned: nothing to warn about.
    w8, dy8, dx8 = (fake(s, np.float16, "NHWC") for s in ((8, 8, 3, 3), (8, 8, 3, 3), (8, 8, 5, 5)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TensorCoreWarning)
        ops.convolution_backward_data(w8, dy8, conv, dx=dx8, handle=rec.handle)


# -- convolution_backward_filter ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_backward_filter_routes_each_argument(rec: Recorder, fmt: str, dtype: Any) -> None:
    x, dy = fake((2, 6, 8, 8), dtype, fmt), fake((2, 4, 8, 8), dtype, fmt)
    dw = fake((4, 3, 3, 3), dtype, fmt)  # two groups of three channels
    conv = ConvolutionDescriptor((1, 1), groups=2, math_type="fma")
    assert ops.convolution_backward_filter(x, dy, conv, dw=dw, beta=0.25, handle=rec.handle) is dw
    assert rec.names() == [
        "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount",
        "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
        "cudnnGetConvolutionBackwardFilterWorkspaceSize",
        "cudnnConvolutionBackwardFilter",
    ]
    a = rec.last("cudnnConvolutionBackwardFilter")
    assert (a["x"], a["dy"], a["dw"]) == (x.ptr, dy.ptr, dw.ptr)
    assert a["xDesc"].dims == x.shape and a["dyDesc"].dims == dy.shape
    assert isinstance(a["dwDesc"], FilterDescriptor) and a["dwDesc"].dims == dw.shape
    assert (
        a["dwDesc"].fmt == fmt and a["dwDesc"].strides == dw.strides
    )  # KCRS or KRSC, as dw is laid out
    assert a["convDesc"] is conv and (value(a["alpha"]), value(a["beta"])) == (1.0, 0.25)
    h = rec.last("cudnnGetConvolutionBackwardFilterAlgorithm_v7")
    assert (h["srcDesc"], h["diffDesc"], h["gradDesc"]) == (a["xDesc"], a["dyDesc"], a["dwDesc"])


def test_backward_filter_shape_and_layout_rules(rec: Recorder) -> None:
    x, dy = fake((2, 6, 8, 8)), fake((2, 4, 6, 6))
    with pytest.raises(TypeError, match="dw or w_shape"):
        ops.convolution_backward_filter(x, dy, handle=rec.handle)
    with pytest.raises(ValueError, match=r"dy has shape \(2, 4, 6, 6\), but .* w_shape"):
        ops.convolution_backward_filter(x, dy, w_shape=(4, 6, 2, 2), handle=rec.handle)
    with pytest.raises(ValueError, match=r"dw has shape .* but w_shape is"):
        ops.convolution_backward_filter(
            x, dy, dw=fake((4, 6, 3, 3)), w_shape=(4, 6, 2, 2), handle=rec.handle
        )
    chw_n = fake((4, 6, 3, 3), fmt="CHWN")  # packed, but not a filter layout cuDNN has
    with pytest.raises(ValueError, match=r"dw has strides .* KCRS .* KRSC"):
        ops.convolution_backward_filter(x, dy, dw=chw_n, handle=rec.handle)
    with pytest.raises(TypeError, match="dy has dtype float16 but x has float32"):
        ops.convolution_backward_filter(
            x, fake((2, 4, 6, 6), np.float16), w_shape=(4, 6, 3, 3), handle=rec.handle
        )
    with pytest.raises(ValueError, match="beta"):
        ops.convolution_backward_filter(x, dy, w_shape=(4, 6, 3, 3), beta=2.0, handle=rec.handle)
    assert rec.calls == []


def test_backward_filter_find_and_names(rec: Recorder) -> None:
    x, dy, dw = fake((1, 8, 6, 6)), fake((1, 8, 4, 4)), fake((8, 8, 3, 3))
    ops.convolution_backward_filter(x, dy, dw=dw, algo="find", handle=rec.handle)
    f = rec.last("cudnnFindConvolutionBackwardFilterAlgorithmEx")
    assert (f["x"], f["y"], f["dw"]) == (x.ptr, dy.ptr, dw.ptr)  # the header calls dy "y"
    assert rec.last("cudnnConvolutionBackwardFilter")["algo"] == Recorder.USABLE_ALGO
    for name in ("algo_0", "algo_1", "fft", "algo_3", "winograd_nonfused", "fft_tiling"):
        ops.convolution_backward_filter(x, dy, dw=dw, algo=name, handle=rec.handle)
        want = _b.cudnnConvolutionBwdFilterAlgo_t[name.upper()]
        assert rec.last("cudnnConvolutionBackwardFilter")["algo"] == int(want)


# -- convolution_backward_bias ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_backward_bias(rec: Recorder, fmt: str) -> None:
    dy, db = fake((2, 5, 3, 4), np.float16, fmt), fake((1, 5, 1, 1), np.float16)
    assert ops.convolution_backward_bias(dy, db=db, alpha=3.0, beta=1.0, handle=rec.handle) is db
    a = rec.last("cudnnConvolutionBackwardBias")
    assert (a["dy"], a["db"]) == (dy.ptr, db.ptr)
    assert a["dyDesc"].dims == dy.shape and a["dbDesc"].dims == (1, 5, 1, 1)
    assert (value(a["alpha"]), value(a["beta"])) == (3.0, 1.0)
    with pytest.raises(ValueError, match=r"db has shape \(5,\), expected \(1, 5, 1, 1\)"):
        ops.convolution_backward_bias(dy, db=fake((5,), np.float16), handle=rec.handle)
    with pytest.raises(ValueError, match="3 to 8"):
        ops.convolution_backward_bias(fake((2, 5), np.float16), handle=rec.handle)
    with pytest.raises(ValueError, match="beta"):
        ops.convolution_backward_bias(dy, beta=0.5, handle=rec.handle)


# -- activation_backward ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_activation_backward_routes_each_argument(rec: Recorder, fmt: str) -> None:
    y, dy, x, dx = (fake((2, 3, 4, 5), np.float16, fmt) for _ in range(4))
    out = ops.activation_backward(
        y, dy, x, "clipped_relu", dx=dx, coef=2.0, alpha=0.5, handle=rec.handle
    )
    assert out is dx and rec.names() == ["cudnnActivationBackward"]
    a = rec.last("cudnnActivationBackward")
    assert (a["y"], a["dy"], a["x"], a["dx"]) == (y.ptr, dy.ptr, x.ptr, dx.ptr)
    for name in ("yDesc", "dyDesc", "xDesc", "dxDesc"):
        assert a[name].dims == y.shape and a[name].strides == y.strides
    act = a["activationDesc"]
    assert act.mode == "clipped_relu" and act.coef == 2.0
    assert (value(a["alpha"]), value(a["beta"])) == (0.5, 0.0)


def test_activation_backward_layout_rules(rec: Recorder) -> None:
    nchw = [fake((2, 3, 4, 5)) for _ in range(4)]
    y, dy, x, dx = nchw
    nhwc = fake((2, 3, 4, 5), fmt="NHWC")
    with pytest.raises(ValueError, match=r"dy has strides .* but y has .* cudnnActivationBackward"):
        ops.activation_backward(y, nhwc, x, dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match=r"dx has strides .* but x has"):
        ops.activation_backward(y, dy, x, dx=nhwc, handle=rec.handle)
    with pytest.raises(ValueError, match=r"x has shape .* but y has"):
        ops.activation_backward(y, dy, fake((2, 3, 4, 6)), dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match="dx has shape"):
        ops.activation_backward(y, dy, x, dx=fake((2, 3, 4, 6)), handle=rec.handle)
    with pytest.raises(TypeError, match="x has dtype float16 but y has float32"):
        ops.activation_backward(y, dy, fake((2, 3, 4, 5), np.float16), dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match="beta"):
        ops.activation_backward(y, dy, x, beta=1.0, handle=rec.handle)
    assert rec.calls == []
    # x and y in different layouts are fine while dy follows y and dx follows x.
    ops.activation_backward(nhwc, fake((2, 3, 4, 5), fmt="NHWC"), x, dx=dx, handle=rec.handle)
    # Extent-1 dims address nothing: their strides may differ.
    one = fake((2, 1, 4, 5))
    odd = fake((2, 1, 4, 5), ptr=BASE, strides=(20, 7, 5, 1))
    ops.activation_backward(one, odd, one, dx=fake((2, 1, 4, 5)), handle=rec.handle)


def test_activation_backward_identity_is_a_transform_of_dy(rec: Recorder) -> None:
    y, dy, x, dx = (fake((1, 2, 3, 3)) for _ in range(4))
    ops.activation_backward(y, dy, x, "identity", dx=dx, alpha=2.0, beta=0.5, handle=rec.handle)
    assert rec.names() == ["cudnnTransformTensor"]
    t = rec.last("cudnnTransformTensor")
    assert (t["x"], t["y"]) == (dy.ptr, dx.ptr)
    assert (value(t["alpha"]), value(t["beta"])) == (2.0, 0.5)
    ops.activation_backward(y, dy, x, "identity", dx=dy, alpha=2.0, beta=0.5, handle=rec.handle)
    s = rec.last("cudnnScaleTensor")  # in place: dx = (alpha + beta) * dy
    assert s["y"] == dy.ptr and value(s["alpha"]) == 2.5


# -- softmax_backward ---------------------------------------------------------------------------


@pytest.mark.parametrize(("algorithm", "mode"), [("accurate", "channel"), ("log", "instance")])
def test_softmax_backward_routes_each_argument(rec: Recorder, algorithm: str, mode: str) -> None:
    y, dy = fake((2, 7, 3, 4)), fake((2, 7, 3, 4))
    dx = fake((2, 7, 3, 4), fmt="NHWC")  # dx may have its own layout
    ops.softmax_backward(y, dy, algorithm=algorithm, mode=mode, dx=dx, handle=rec.handle)
    a = rec.last("cudnnSoftmaxBackward")
    assert a["algo"] == int(_b.cudnnSoftmaxAlgorithm_t[algorithm.upper()])
    assert a["mode"] == int(_b.cudnnSoftmaxMode_t[mode.upper()])
    assert (a["y"], a["dy"], a["dx"]) == (y.ptr, dy.ptr, dx.ptr)
    assert a["dxDesc"].strides == dx.strides
    with pytest.raises(ValueError, match=r"dy has strides .* cudnnSoftmaxBackward"):
        ops.softmax_backward(y, fake((2, 7, 3, 4), fmt="NHWC"), dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match="dy has shape"):
        ops.softmax_backward(y, fake((2, 7, 3, 5)), dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match="mode"):
        ops.softmax_backward(y, dy, mode="spatial", handle=rec.handle)


# -- pooling_backward ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
def test_pooling_backward_routes_each_argument(rec: Recorder, fmt: str) -> None:
    x, dx = fake((2, 3, 9, 8), np.float16, fmt), fake((2, 3, 9, 8), np.float16, fmt)
    y, dy = fake((2, 3, 5, 4), np.float16, fmt), fake((2, 3, 5, 4), np.float16, fmt)
    ops.pooling_backward(
        y,
        dy,
        x,
        mode="avg_exclude_padding",
        window=(3, 3),
        pads=(1, 1),
        strides=(2, 2),
        dx=dx,
        handle=rec.handle,
    )
    a = rec.last("cudnnPoolingBackward")
    assert (a["y"], a["dy"], a["x"], a["dx"]) == (y.ptr, dy.ptr, x.ptr, dx.ptr)
    assert a["xDesc"].dims == x.shape and a["yDesc"].dims == y.shape
    pool = a["poolingDesc"]
    assert (pool.mode, pool.window, pool.pads, pool.strides) == (
        "avg_exclude_padding",
        (3, 3),
        (1, 1),
        (2, 2),
    )


def test_pooling_backward_shape_and_layout_rules(rec: Recorder) -> None:
    x, dx = fake((1, 2, 8, 8)), fake((1, 2, 8, 8))
    y, dy = fake((1, 2, 4, 4)), fake((1, 2, 4, 4))
    with pytest.raises(
        ValueError, match=r"y has shape \(1, 2, 4, 4\), but pooling x .* \(1, 2, 2, 2\)"
    ):
        ops.pooling_backward(y, dy, x, window=(4, 4), dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match=r"dy has strides .* cudnnPoolingBackward"):
        ops.pooling_backward(y, fake((1, 2, 4, 4), fmt="NHWC"), x, dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match=r"dx has strides .* but x has"):
        ops.pooling_backward(y, dy, x, dx=fake((1, 2, 8, 8), fmt="NHWC"), handle=rec.handle)
    with pytest.raises(TypeError, match="dtype"):
        ops.pooling_backward(y, fake((1, 2, 4, 4), np.float16), x, dx=dx, handle=rec.handle)
    with pytest.raises(ValueError, match="2-D pooling window needs a 4-D x"):
        ops.pooling_backward(y, dy, fake((1, 2, 8, 8, 8)), dx=dx, handle=rec.handle)
    assert rec.calls == []


# -- deprecation --------------------------------------------------------------------------------


def _run_each(rec: Recorder) -> dict[str, str]:
    """Each backward function once (on the recorder); returns its name -> the C function."""
    t = fake((1, 4, 4, 4))
    ops.convolution_backward_data(fake((4, 4, 1, 1)), t, dx=fake((1, 4, 4, 4)), handle=rec.handle)
    ops.convolution_backward_filter(t, t, dw=fake((4, 4, 1, 1)), handle=rec.handle)
    ops.convolution_backward_bias(t, db=fake((1, 4, 1, 1)), handle=rec.handle)
    ops.activation_backward(t, t, t, dx=fake((1, 4, 4, 4)), handle=rec.handle)
    ops.softmax_backward(t, t, dx=fake((1, 4, 4, 4)), handle=rec.handle)
    ops.pooling_backward(
        fake((1, 4, 2, 2)), fake((1, 4, 2, 2)), t, dx=fake((1, 4, 4, 4)), handle=rec.handle
    )
    return {
        "convolution_backward_data": "cudnnConvolutionBackwardData",
        "convolution_backward_filter": "cudnnConvolutionBackwardFilter",
        "convolution_backward_bias": "cudnnConvolutionBackwardBias",
        "activation_backward": "cudnnActivationBackward",
        "softmax_backward": "cudnnSoftmaxBackward",
        "pooling_backward": "cudnnPoolingBackward",
    }


def test_one_deprecation_warning_per_function_deprecated_in_the_headers(rec: Recorder) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        functions = _run_each(rec)
        _run_each(rec)
    said = [
        str(w.message)
        for w in caught
        if issubclass(w.category, DeprecationWarning) and "pycudnn.ops." in str(w.message)
    ]
    for name, c_function in functions.items():
        warned = [m for m in said if f"pycudnn.ops.{name} ({c_function})" in m]
        # cuDNN 9 marks every one of them CUDNN_DEPRECATED except cudnnSoftmaxBackward.
        assert len(warned) == int(_b.FUNCTIONS[c_function].deprecated), name
    assert not _b.FUNCTIONS["cudnnSoftmaxBackward"].deprecated
    assert all(w.filename == __file__ for w in caught if "pycudnn.ops." in str(w.message))


# -- outputs apart from inputs, and the vectorized convolution's y (found by a review) ----------


def test_an_output_overlapping_an_input_is_refused_before_cudnn(
    rec: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cuDNN reads the inputs while it writes the output (and algo="find" times candidates
    into it first): y = x, dx = dy, or y inside x computed from overwritten values."""
    from pycudnn.ops import transform

    monkeypatch.setattr(transform, "_call", rec)  # the fixture records the other modules'

    x, w = fake((1, 8, 6, 6)), fake((8, 8, 3, 3))
    with pytest.raises(ValueError, match="y overlaps x in memory"):
        ops.convolution_forward(x, w, ConvolutionDescriptor([1, 1]), y=x, handle=rec.handle)
    dy = fake((1, 8, 6, 6))
    with pytest.raises(ValueError, match="dx overlaps dy in memory"):
        ops.convolution_backward_data(w, dy, ConvolutionDescriptor([1, 1]), dx=dy,
                                      handle=rec.handle)  # fmt: skip
    big = fake((1, 8, 8, 8))
    inside = fake((1, 8, 4, 4), ptr=big.ptr + 64)
    with pytest.raises(ValueError, match="y overlaps x"):
        ops.pooling_forward(big, y=inside, handle=rec.handle)
    with pytest.raises(ValueError, match="y overlaps x"):
        ops.softmax_forward(x, y=fake((1, 8, 6, 6), ptr=x.ptr + 32), handle=rec.handle)
    with pytest.raises(ValueError, match="y overlaps x"):
        ops.transform_tensor(x, y=fake((1, 8, 6, 6), fmt="NHWC", ptr=x.ptr), handle=rec.handle)
    # in place where cuDNN documents it: the same array, laid out alike
    assert ops.activation_forward(x, "relu", y=x, handle=rec.handle) is x
    nhwc_on_x = fake((1, 8, 6, 6), fmt="NHWC", ptr=x.ptr)
    with pytest.raises(ValueError, match=r"y overlaps x .*it may be x itself, laid out alike"):
        ops.activation_forward(x, "relu", y=nhwc_on_x, handle=rec.handle)
    assert rec.names() == ["cudnnActivationForward"]  # nothing else reached cuDNN


def test_activation_backward_identity_in_place_needs_one_layout(rec: Recorder) -> None:
    """dx on dy's memory in another layout was scaled in dx's layout: a transposed gradient."""
    y, dy = fake((1, 8, 4, 4), fmt="NHWC"), fake((1, 8, 4, 4), fmt="NHWC")
    x = fake((1, 8, 4, 4))
    with pytest.raises(ValueError, match="dx overlaps dy"):
        ops.activation_backward(y, dy, x, "identity", dx=fake((1, 8, 4, 4), ptr=dy.ptr),
                                handle=rec.handle)  # fmt: skip
    assert not rec.calls


def test_a_vectorized_convolution_takes_the_default_descriptor_and_a_packed_y(
    rec: Recorder,
) -> None:
    x = fake((1, 2, 6, 6, 4), np.int8)  # N, C/4, H, W, 4 (C = 8), packed
    w = fake((8, 2, 3, 3, 4), np.int8)
    y = fake((1, 2, 4, 4, 4), np.int8)
    ops.convolution_forward(x, w, y=y, fmt="NC/4HW4", algo="implicit_gemm", handle=rec.handle)
    assert rec.names()[-1] == "cudnnConvolutionForward"  # the default (2-D) descriptor served
    wide = fake((1, 4, 4, 4, 4), np.int8)  # every other channel block of a larger packed y
    strided = fake((1, 2, 4, 4, 4), np.int8, ptr=wide.ptr, strides=(256, 128, 16, 4, 1))
    with pytest.raises(ValueError, match=r"y has strides .* NC/4HW4 arrays are packed"):
        ops.convolution_forward(x, w, y=strided, fmt="NC/4HW4", algo="implicit_gemm",
                                handle=rec.handle)  # fmt: skip


def test_scalars_past_a_c_float_and_flags_a_warm_cache_would_coerce_are_refused(
    rec: Recorder,
) -> None:
    x = fake((1, 8, 4, 4))
    with pytest.raises(ValueError, match=r"alpha = 1e\+39 does not fit the C float"):
        ops.activation_forward(x, "relu", y=fake((1, 8, 4, 4)), alpha=1e39, handle=rec.handle)
    y = fake((1, 8, 2, 2))
    ops.pooling_forward(x, y=y, nan_propagation=True, handle=rec.handle)  # warms the cache
    # the cache key was bool(nan_propagation): "False" matched True's entry and ran with it
    with pytest.raises(TypeError, match="nan_propagation must be a bool"):
        ops.pooling_forward(x, y=y, nan_propagation="False", handle=rec.handle)  # type: ignore[arg-type]
