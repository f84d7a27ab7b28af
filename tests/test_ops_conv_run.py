"""The one algorithm-choice, workspace and run path of the three legacy convolution directions
(``pycudnn.ops._conv_run``), driven through the forward, as ``test_ops_backward.py`` drives the
gradients: the calls that take the handle are recorded, with cuDNN's answers simulated, and read
back by the binding's argument names. CPU tier: no kernel is launched."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from standins import fake_device_array as fake
from test_ops_backward import Recorder

import pycudnn
from pycudnn import _bindings as _b
from pycudnn import layout, ops
from pycudnn.ops import _common, _conv_run, convolution_backward
from pycudnn.tensor import ConvolutionDescriptor, TensorCoreWarning
from pycudnn.tensor import _common as tensor_common

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FORWARD = [
    "cudnnGetConvolutionForwardAlgorithmMaxCount",
    "cudnnGetConvolutionForwardAlgorithm_v7",
    "cudnnGetConvolutionForwardWorkspaceSize",
    "cudnnConvolutionForward",
]


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    r = Recorder()
    for module in (_common, _conv_run, convolution_backward):
        monkeypatch.setattr(module, "_call", r)
    monkeypatch.setattr(_conv_run, "_algo_cache", {})
    monkeypatch.setattr(tensor_common, "_warned", set())
    return r


def test_forward_heuristic_then_cached_choice(recorder: Recorder) -> None:
    x, w, y = fake((2, 8, 9, 9)), fake((4, 8, 3, 3)), fake((2, 4, 7, 7))
    ops.convolution_forward(x, w, y=y, alpha=2.0, beta=0.5, handle=recorder.handle)
    assert recorder.names() == FORWARD
    heuristic = recorder.last("cudnnGetConvolutionForwardAlgorithm_v7")
    assert heuristic["requestedAlgoCount"] == 2  # what the simulated MaxCount answered
    a = recorder.last("cudnnConvolutionForward")
    assert (a["x"], a["w"], a["y"], a["algo"]) == (x.ptr, w.ptr, y.ptr, Recorder.USABLE_ALGO)
    assert (float(a["alpha"]._obj.value), float(a["beta"]._obj.value)) == (2.0, 0.5)
    recorder.calls.clear()
    ops.convolution_forward(x, w, y=y, handle=recorder.handle)  # same shapes: no query
    assert recorder.names() == FORWARD[2:]


def test_forward_find_times_the_output_itself_when_beta_is_zero(recorder: Recorder) -> None:
    x, w, y = fake((2, 8, 9, 9)), fake((4, 8, 3, 3)), fake((2, 4, 7, 7))
    ops.convolution_forward(x, w, y=y, algo="find", handle=recorder.handle)
    f = recorder.last("cudnnFindConvolutionForwardAlgorithmEx")
    assert (f["x"], f["w"], f["y"], f["requestedAlgoCount"]) == (x.ptr, w.ptr, y.ptr, 2)
    assert recorder.last("cudnnConvolutionForward")["algo"] == Recorder.USABLE_ALGO


def test_forward_named_algorithms_skip_the_queries(recorder: Recorder) -> None:
    x, w, y = fake((2, 8, 9, 9)), fake((4, 8, 3, 3)), fake((2, 4, 7, 7))
    ops.convolution_forward(x, w, y=y, algo="Winograd", handle=recorder.handle)
    assert recorder.names() == FORWARD[2:]
    algo = recorder.last("cudnnConvolutionForward")["algo"]
    assert algo == int(_b.CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD)
    with pytest.raises(ValueError, match=r"algo='fastest' is not one of .*'heuristic', 'find'"):
        ops.convolution_forward(x, w, y=y, algo="fastest", handle=recorder.handle)


X, W, Y = (1, 4, 5, 5), (4, 4, 3, 3), (1, 4, 3, 3)
DIRECTIONS = {
    "forward": lambda h: ops.convolution_forward(fake(X), fake(W), y=fake(Y), handle=h),
    "backward data": lambda h: ops.convolution_backward_data(
        fake(W), fake(Y), dx=fake(X), handle=h
    ),
    "backward filter": lambda h: ops.convolution_backward_filter(
        fake(X), fake(Y), dw=fake(W), handle=h
    ),
}


@pytest.mark.parametrize(("what", "run"), DIRECTIONS.items(), ids=list(DIRECTIONS))
def test_no_usable_algorithm_names_the_direction(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, what: str, run: Any
) -> None:
    def none_usable(name: str, a: dict[str, object]) -> None:
        if name.endswith("MaxCount"):
            a["count"]._obj.value = 1  # type: ignore[attr-defined]
        elif "Algorithm" in name:
            perf = a["perfResults"]
            perf[0].algo, perf[0].status = 0, int(_b.CUDNN_STATUS_NOT_SUPPORTED)  # type: ignore[index]
            a["returnedAlgoCount"]._obj.value = 1  # type: ignore[attr-defined]

    monkeypatch.setattr(recorder, "_answer", none_usable)
    with pytest.raises(pycudnn.CudnnError, match=f"none of the 1 {what} convolution algorithms"):
        run(recorder.handle)


def test_forward_tensor_core_warning_names_the_caller(recorder: Recorder) -> None:
    x, w = fake((2, 6, 5, 5), np.float16), fake((4, 6, 3, 3), np.float16)
    conv = ConvolutionDescriptor((0, 0), math_type="tensor_op")
    with pytest.warns(TensorCoreWarning, match="NHWC") as record:
        ops.convolution_forward(
            x, w, conv, y=fake((2, 4, 3, 3), np.float16), handle=recorder.handle
        )
    tensor_core = [r for r in record if issubclass(r.category, TensorCoreWarning)]
    # One warning, from the shared run, naming this file (the output-dims check does not warn).
    assert [r.filename for r in tensor_core] == [__file__]
    x8, w8 = fake((8, 8, 5, 5), np.float16, "NHWC"), fake((8, 8, 3, 3), np.float16, "NHWC")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TensorCoreWarning)
        ops.convolution_forward(
            x8, w8, conv, y=fake((8, 8, 3, 3), np.float16, "NHWC"), handle=recorder.handle
        )


def test_forward_find_with_beta_times_on_scratch_even_with_a_negative_extent_1_stride(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An exporter may give an extent-1 dim any stride (-1 included); y is valid, and the scratch
    # copy FindEx times into must take the strides y's descriptor has, not refuse y's.
    made: list[tuple[int, ...]] = []

    class _Scratch:
        @staticmethod
        def empty(shape: Any, dtype: Any, *, device: Any, stream: Any, strides: Any) -> Any:
            made.append(tuple(strides))
            return fake(tuple(shape), dtype, strides=strides)

    monkeypatch.setattr(_conv_run, "DeviceArray", _Scratch)
    x, w = fake((1, 8, 9, 9)), fake((4, 8, 3, 3))
    y = fake((1, 4, 7, 7), strides=(-1, 49, 7, 1))
    ops.convolution_forward(x, w, y=y, beta=0.5, algo="find", handle=recorder.handle)
    assert made == [(1, 49, 7, 1)]
    f = recorder.last("cudnnFindConvolutionForwardAlgorithmEx")
    assert f["y"] != y.ptr  # timed on the scratch copy: y's values survive for beta
    assert recorder.last("cudnnConvolutionForward")["y"] == y.ptr


def test_allocated_outputs_follow_a_channels_last_input_with_one_channel(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NHWC with C = 1 gives C the stride of W (1): the tie must not put C outside W, or the
    # output comes out N, H, K, W, neither NHWC nor NCHW.
    class _Alloc:
        @staticmethod
        def empty(shape: Any, dtype: Any, *, device: Any, stream: Any, strides: Any) -> Any:
            return fake(tuple(shape), dtype, strides=strides)

    monkeypatch.setattr(_common, "DeviceArray", _Alloc)
    x, w = fake((2, 1, 8, 8), fmt="NHWC"), fake((4, 1, 3, 3), fmt="NHWC")
    y = ops.convolution_forward(x, w, handle=recorder.handle)
    assert y.strides == layout.packed_strides((2, 4, 6, 6), "NHWC")
    y_desc = recorder.last("cudnnConvolutionForward")["yDesc"]
    assert y_desc.strides == y.strides
    # The data gradient of a one-channel channels-last dy is channels-last too.
    dy = fake((2, 1, 6, 6), fmt="NHWC")
    dx = ops.convolution_backward_data(fake((1, 4, 3, 3), fmt="NHWC"), dy, x_shape=(2, 4, 8, 8),
                                       handle=recorder.handle)  # fmt: skip
    assert dx.strides == layout.packed_strides((2, 4, 8, 8), "NHWC")
    # NCHW with C = 1 gives C the stride of N: it stays NCHW.
    y = ops.convolution_forward(fake((2, 1, 8, 8)), fake((4, 1, 3, 3)), handle=recorder.handle)
    assert y.strides == layout.packed_strides((2, 4, 6, 6), "NCHW")
