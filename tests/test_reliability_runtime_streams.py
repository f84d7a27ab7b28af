"""Hostile streams: every way of naming a stream is refused with a TypeError or ValueError that names
the rule, never truncated (``1.9`` read as stream 1), parsed (``"12"`` as stream 12) or masked.

Streams reach the library as ``None``, raw handle ints, objects with ``__cuda_stream__()`` (the
protocol of cuda.core, CuPy, numba, RMM), PyTorch streams (``.cuda_stream``) and the ``stream``
key of a CUDA array interface; the first four are normalised by one helper (``stream_handle``)
that pycudnn and pycutensor share, the last by the array reader.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hostile_arrays import CudaInterface, good_interface

import pycutensor
from _nvbind.arrays import as_array_view
from _nvbind.cuda import stream_handle
from pycudnn import DeviceArray


class Protocol:
    """A stream speaking ``__cuda_stream__`` with whatever ``value`` is (or raising it)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __cuda_stream__(self) -> Any:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


class Attribute:
    """``__cuda_stream__`` as a plain attribute, not the protocol's method."""

    __cuda_stream__ = (0, 5)


class Torchish:
    def __init__(self, value: Any) -> None:
        self.cuda_stream = value


HOSTILE: list[tuple[Any, type[Exception], str]] = [
    (1.9, TypeError, "stream must be None"),
    (float("nan"), TypeError, "stream must be None"),
    (True, TypeError, "not a bool"),
    (np.bool_(True), TypeError, "not a bool"),
    ("12", TypeError, "stream must be None"),
    (b"12", TypeError, "stream must be None"),
    (-1, ValueError, "2\\*\\*64"),
    (2**64, ValueError, "2\\*\\*64"),
    (Protocol((0, 1.9)), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol((0, True)), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol((0, "12")), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol((0, b"12")), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol((0.0, 5)), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol((0,)), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol((0, 5, 6)), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol([0, 5]), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol(5), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol(None), TypeError, "must return \\(version, handle\\) ints"),
    (Protocol((1, 5)), ValueError, "protocol version 1; this library knows version 0"),
    (Protocol((-1, 5)), ValueError, "protocol version -1"),
    (Protocol((0, -3)), ValueError, "2\\*\\*64"),
    (Protocol((0, 2**64)), ValueError, "2\\*\\*64"),
    (Protocol(RuntimeError("closed")), ValueError, "__cuda_stream__\\(\\) failed: RuntimeError"),
    (Attribute(), TypeError, "must be a method"),
    (Torchish(1.5), TypeError, "cuda_stream must be a handle int"),
    (Torchish(True), TypeError, "cuda_stream must be a handle int"),
    (Torchish("7"), TypeError, "cuda_stream must be a handle int"),
    (Torchish(2**64), ValueError, "2\\*\\*64"),
]
IDS = [f"{type(s).__name__}-{i}" for i, (s, _, _) in enumerate(HOSTILE)]


@pytest.mark.parametrize(("stream", "error", "rule"), HOSTILE, ids=IDS)
def test_stream_handle_refuses_with_the_rule(stream: Any, error: type, rule: str) -> None:
    with pytest.raises(error, match=rule):
        stream_handle(stream)


def test_well_formed_streams_are_read_exactly() -> None:
    assert stream_handle(None) == 0
    assert stream_handle(np.uint64(2**64 - 1)) == 2**64 - 1
    assert stream_handle(Protocol((0, 2**64 - 1))) == 2**64 - 1
    assert stream_handle(Protocol((np.int64(0), np.int64(7)))) == 7
    assert stream_handle(Torchish(9)) == 9


@pytest.mark.parametrize(("stream", "error", "rule"), HOSTILE, ids=IDS)
def test_entry_points_taking_a_stream_refuse_it_before_any_device_use(
    stream: Any, error: type, rule: str
) -> None:
    a = CudaInterface(good_interface())  # well formed: only the stream is wrong
    with pytest.raises(error, match=rule):
        DeviceArray.from_array(a, stream=stream)
    with pytest.raises(error, match=rule):
        pycutensor.einsum("ij->ji", a, stream=stream)


@pytest.mark.parametrize(
    ("value", "error", "rule"),
    [
        (0, ValueError, "0 is forbidden"),
        (1.0, TypeError, "stream must be None or an int"),
        (False, TypeError, "stream must be None or an int"),
        ("2", TypeError, "stream must be None or an int"),
        (-2, ValueError, "not 1, 2 or a stream address"),
        (2**64, ValueError, "not 1, 2 or a stream address"),
    ],
)
def test_the_stream_of_a_cuda_array_interface_is_checked(
    value: Any, error: type, rule: str
) -> None:
    with pytest.raises(error, match=f"^x: .*{rule}"):
        as_array_view(CudaInterface(good_interface(stream=value)), name="x", stream_ptr=0)


class LyingInt(int):
    """An int whose ``int()`` (its ``__int__``) says something other than its value."""

    def __int__(self) -> int:
        return -1


def test_the_handle_checked_is_the_handle_returned() -> None:
    # The range was checked on the value and int() returned: an int subclass's __int__ gave -1,
    # past the check, as the stream cuDNN and cuTENSOR were handed.
    for stream in (LyingInt(5), Protocol((0, LyingInt(5))), Protocol((LyingInt(0), 5))):
        got = stream_handle(stream)
        assert got == 5 and type(got) is int
