"""The base every legacy descriptor builds on (``pycudnn.tensor._common.LegacyDescriptor``): one
create/set/destroy sequence, the read-back properties, the names and reprs. CPU tier: cuDNN builds
and reads back legacy descriptors without a GPU."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pycudnn.tensor import (
    ActivationDescriptor,
    ConvolutionDescriptor,
    FilterDescriptor,
    OpTensorDescriptor,
    PoolingDescriptor,
    ReduceTensorDescriptor,
    TensorDescriptor,
)
from pycudnn.tensor import _common as tensor_common

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# (class, a factory, the repr of what it makes, written out here from the arguments)
CASES: list[tuple[type, Callable[[], Any], str]] = [
    (
        TensorDescriptor,
        lambda: TensorDescriptor((2, 3, 4, 5), fmt="NHWC"),
        "<pycudnn.TensorDescriptor dims=(2, 3, 4, 5) strides=(60, 1, 15, 3) dtype=float32 fmt=NHWC>",
    ),
    (
        FilterDescriptor,
        lambda: FilterDescriptor((8, 4, 3, 3), np.float16, "NHWC"),
        "<pycudnn.FilterDescriptor dims=(8, 4, 3, 3) dtype=float16 fmt=NHWC>",
    ),
    (
        ConvolutionDescriptor,
        lambda: ConvolutionDescriptor((1, 1), (2, 2), math_type="fma", groups=2),
        "<pycudnn.ConvolutionDescriptor pads=(1, 1) strides=(2, 2) dilations=(1, 1) "
        "mode=cross_correlation compute=float32 math=fma groups=2>",
    ),
    (
        PoolingDescriptor,
        lambda: PoolingDescriptor("avg_exclude_padding", (3, 3), (1, 1)),
        "<pycudnn.PoolingDescriptor avg_exclude_padding window=(3, 3) pads=(1, 1) strides=(3, 3)>",
    ),
    (
        ActivationDescriptor,
        lambda: ActivationDescriptor("elu", 0.5),
        "<pycudnn.ActivationDescriptor elu coef=0.5>",
    ),
    (
        OpTensorDescriptor,
        lambda: OpTensorDescriptor("max", np.float64),
        "<pycudnn.OpTensorDescriptor max>",
    ),
    (
        ReduceTensorDescriptor,
        lambda: ReduceTensorDescriptor("amax", indices=True),
        "<pycudnn.ReduceTensorDescriptor amax indices=True>",
    ),
]
IDS = [c[0].__name__ for c in CASES]


@pytest.mark.parametrize(("cls", "make", "text"), CASES, ids=IDS)
def test_repr_open_and_closed(cls: type, make: Callable[[], Any], text: str) -> None:
    with make() as desc:
        assert repr(desc) == text
    assert repr(desc) == f"<pycudnn.{cls.__name__} closed>"


@pytest.mark.parametrize(("cls", "make", "text"), CASES, ids=IDS)
def test_closed_message_names_the_kind(cls: type, make: Callable[[], Any], text: str) -> None:
    desc = make()
    desc.close()
    words = {
        "TensorDescriptor": "tensor",
        "FilterDescriptor": "filter",
        "ConvolutionDescriptor": "convolution",
        "PoolingDescriptor": "pooling",
        "ActivationDescriptor": "activation",
        "OpTensorDescriptor": "op-tensor",
        "ReduceTensorDescriptor": "reduce-tensor",
    }
    with pytest.raises(
        ValueError, match=f"^this cuDNN {words[cls.__name__]} descriptor is closed$"
    ):
        desc.key()


def test_read_back_properties_ask_cudnn_and_keep_their_docs() -> None:
    conv = ConvolutionDescriptor(
        (1, 2), (3, 1), (1, 2), mode="convolution", compute_type=np.float64
    )
    assert (conv.pads, conv.strides, conv.dilations) == ((1, 2), (3, 1), (1, 2))
    assert (conv.mode, conv.compute_type) == ("convolution", np.dtype(np.float64))
    assert isinstance(ConvolutionDescriptor.__dict__["pads"], property)
    assert "cudnnGetConvolutionNdDescriptor" in (inspect.getdoc(ConvolutionDescriptor.pads) or "")
    pool = PoolingDescriptor("max", (2, 3), (1, 0), (1, 2))
    assert (pool.window, pool.pads, pool.strides) == ((2, 3), (1, 0), (1, 2))
    red = ReduceTensorDescriptor("norm2", np.float64)
    assert (red.op, red.compute_type, red.indices) == ("norm2", np.dtype(np.float64), False)
    op = OpTensorDescriptor("sqrt")
    assert (op.op, op.compute_type, op.is_unary) == ("sqrt", np.dtype(np.float32), True)
    t = TensorDescriptor((1, 8, 2, 2), dtype="int8x4")
    assert t.array_shape == (1, 2, 2, 2, 4) and t.array_strides == (32, 16, 8, 4, 1)
    assert t.dims == (1, 8, 2, 2) and str(t.cudnn_data_type.name) == "INT8x4"


def test_math_type_names_come_from_the_header_in_its_order() -> None:
    with pytest.raises(
        ValueError,
        match=r"math_type='turbo' is not one of 'default', 'tensor_op', "
        r"'tensor_op_allow_conversion', 'fma'$",
    ):
        ConvolutionDescriptor((0, 0), math_type="turbo")


def test_a_failed_set_call_destroys_what_was_created(monkeypatch: pytest.MonkeyPatch) -> None:
    destroyed: list[tuple[str, int]] = []
    real_call, real_destroy = tensor_common.call, tensor_common._destroy

    def failing_call(name: str, *args: Any) -> None:
        if name == "cudnnSetConvolutionGroupCount":  # the last of three set calls
            raise RuntimeError("set failed")
        real_call(name, *args)

    def recording_destroy(function: str, ptr: int) -> None:
        destroyed.append((function, ptr))
        real_destroy(function, ptr)

    monkeypatch.setattr(tensor_common, "call", failing_call)
    monkeypatch.setattr(tensor_common, "_destroy", recording_destroy)
    with pytest.raises(RuntimeError, match="set failed"):
        ConvolutionDescriptor((1, 1))
    assert [f for f, _ in destroyed] == ["cudnnDestroyConvolutionDescriptor"]
    assert destroyed[0][1] != 0
