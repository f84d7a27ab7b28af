"""Robustness: adversarial input never crashes, never reaches C, and nothing leaks (CPU tier).

The rules checked here are the project's: bad input gets a Python exception (TypeError or
ValueError) that names the argument, before any C function is called; a closed object raises
ClosedError, never reaches C; every C object is destroyed exactly once, whether by ``close()``,
``with`` or the garbage collector. Whether C was reached is read from cuDNN's own API log (its INFO
entries name every function called), not from the code under test. Loops that could crash the
interpreter if a check were missing run in a child process, whose exit status tells a crash
(killed by a signal) from a failure.

Each regression test names the bug it pins down.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import inspect
import logging
import math
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from standins import stand_in_handle

import pycudnn
import pycutensor
from _nvbind import dlpack as dl
from _nvbind.arrays import ArrayView, as_array_view
from _nvbind.resource import ClosedError, CResource
from pycudnn import layout, log, raw
from pycudnn.handle import Handle
from pycudnn.tensor import (
    ActivationDescriptor,
    ConvolutionDescriptor,
    FilterDescriptor,
    OpTensorDescriptor,
    PoolingDescriptor,
    ReduceTensorDescriptor,
    TensorDescriptor,
    check_operand,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::pycudnn.tensor.TensorCoreWarning"),
]

ROOT = Path(__file__).resolve().parent.parent
INT_MAX = 2**31 - 1  # the legacy API's C int
FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# The junk every argument gets: wrong types, NumPy scalars, bools, floats (NaN, inf, -0.0), None,
# strings, nested lists, values beyond int32 and int64.
JUNK: list[Any] = [
    None,
    True,
    np.bool_(False),
    1.0,
    -0.0,
    float("nan"),
    float("inf"),
    np.float32(2.0),
    "3",
    "",
    b"4",
    [[2, 3, 4]],
    {"a": 1},
    {2, 3, 4},
    object(),
    1 + 2j,
]


# -- helpers ------------------------------------------------------------------------------------


@contextlib.contextmanager
def cudnn_calls(*, collect_first: bool = False) -> Iterator[list[str]]:
    """The names of the cuDNN functions called on this thread inside the block, from cuDNN's log.

    The collector is paused, so that garbage cycles left by earlier tests are not destroyed inside
    the block and counted. A block that calls gc.collect() itself asks for ``collect_first``.
    """
    names: list[str] = []
    if collect_first:
        gc.collect()
    gc.disable()
    try:
        with log.capture(logging.DEBUG) as records:
            yield names
    finally:
        gc.enable()
    for r in records:
        marker = "function "
        start = r.message.find(marker)
        if start >= 0:
            names.append(r.message[start + len(marker) :].split("(", 1)[0])


def refused_before_c(
    make: Callable[[], Any],
    error: type[BaseException] | tuple[type[BaseException], ...],
    *words: str,
) -> str:
    """Assert ``make()`` raises ``error`` with every one of ``words`` in its message (``"a|b"``: one
    of them), having called no cuDNN function. Returns the message."""
    with cudnn_calls() as called, pytest.raises(error) as info:
        make()
    assert called == [], f"cuDNN was called before the refusal: {called}"
    text = str(info.value)
    for w in words:
        assert any(alt in text for alt in w.split("|")), f"{w!r} not in {text!r}"
    return text


def run_child(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter from the repository root; fail if a signal killed it."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode >= 0, (
        f"the child was killed by signal {-proc.returncode} (a crash)\n{proc.stdout[-3000:]}\n"
        f"{proc.stderr[-3000:]}"
    )
    return proc


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def packed(dims: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for n in reversed(dims):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def span(dims: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Elements a strided tensor reaches, from the seed's definition (1 + sum((n - 1) * |s|))."""
    return 1 + sum((n - 1) * abs(s) for n, s in zip(dims, strides, strict=True))


def host_buffer(nbytes: int) -> tuple[Any, np.ndarray]:
    """A cuda.core Buffer over host bytes: DeviceArray bookkeeping only, no device involved."""
    from cuda.core import Buffer

    backing = np.zeros(max(nbytes, 1), np.uint8)
    return Buffer.from_handle(backing.ctypes.data, nbytes, owner=backing), backing


class HostExporter:
    """Exports a NumPy array through this project's DLPack exporter, for NumPy to consume."""

    def __init__(self, a: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self.a, self.device = a, device

    def __dlpack__(self, **kw: Any) -> Any:
        a = self.a
        return dl.export_dlpack(
            a.ctypes.data,
            a.shape,
            tuple(s // a.itemsize for s in a.strides),
            a.dtype,
            self.device,
            owner=a,
            readonly=not a.flags.writeable,
            versioned=kw.get("max_version") is not None,
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


# -- TensorDescriptor: adversarial dims and strides ---------------------------------------------


@pytest.mark.parametrize("junk", JUNK, ids=repr)
def test_tensor_dims_junk_is_refused_before_c(junk: Any) -> None:
    refused_before_c(lambda: TensorDescriptor(junk), (TypeError, ValueError), "dims")
    refused_before_c(lambda: TensorDescriptor((2, junk, 4)), TypeError, "dims[1]")
    refused_before_c(lambda: TensorDescriptor((2, 3, 4), (12, junk, 1)), TypeError, "strides[1]")


@pytest.mark.parametrize(
    ("dims", "strides", "words"),
    [
        ((2, 3, 2**31), None, ("dims[2]", "2147483647")),
        ((2, 3, 2**63), None, ("dims[2]",)),
        ((2, 3, -4), None, ("dims[2]", "positive")),
        ((2, 0, 4), None, ("dims[1]", "positive")),
        ((2, 3, 4), (2**31, 4, 1), ("strides[0]", "2147483647")),
        ((2, 3, 4), (12, 4, 2**64 + 1), ("strides[2]",)),  # would be 1 after truncation
        ((2, 3, 1), (12, 4, -(2**31) - 1), ("strides[2]", "-2147483648")),  # C int's floor
        ((2, 3, 4), (12, 0, 1), ("strides[1]", "zero")),
        ((2, 3, 4), (12, 4), ("strides", "3")),
        ((2, 3, 4, 5, 6, 7, 8, 9, 10), None, ("3 to 8",)),
        ((2, 3), None, ("3 to 8",)),
        (np.zeros((2, 2), np.int64), None, ("one-dimensional",)),
        (np.array(3), None, ("one-dimensional",)),
    ],
)
def test_tensor_out_of_range_values_are_refused_in_python(
    dims: Any, strides: Any, words: tuple[str, ...]
) -> None:
    # In particular nothing beyond int32 reaches cudnnSetTensorNdDescriptor, which takes C ints
    # and would silently see a truncated value.
    refused_before_c(lambda: TensorDescriptor(dims, strides), ValueError, *words)


def test_regression_tensor_spanning_2_31_elements_is_refused_with_a_reason() -> None:
    # Bug: cuDNN 9.28 refuses a legacy tensor that spans 2**31 elements or more with
    # CUDNN_STATUS_NOT_SUPPORTED and an empty error text (the reason only reaches its log), so
    # users got a bare "CUDNN_STATUS_NOT_SUPPORTED (3000)". Every dim and stride here fits int32.
    for dims, strides in (
        ((2, 2**30, 1, 1), None),  # 2**31 elements
        ((3, 1, 1, 1), (2**30 + 1, 1, 1, 1)),  # 3 elements spread over 2**31 + 3
    ):
        refused_before_c(
            functools.partial(TensorDescriptor, dims, strides), ValueError, "2**31 - 1", "span"
        )
    refused_before_c(
        lambda: TensorDescriptor((2, 2**30, 1, 1), fmt="NHWC"), ValueError, "2**31 - 1"
    )
    refused_before_c(  # NC/32HW32 counts whole vectors: 2 * 2**15 * 2**15 = 2**31 of them
        lambda: TensorDescriptor((2, 32 * 2**15, 2**15, 1), dtype="int8x32"), ValueError, "vectors"
    )
    # The largest span cuDNN takes still works.
    d = TensorDescriptor((1, 1, INT_MAX, 1))
    assert d.dims == (1, 1, INT_MAX, 1)
    assert TensorDescriptor((1, 32 * 2**15, 2**15, 1), dtype="int8x32").dims[1] == 32 * 2**15


EXTENTS = st.one_of(st.integers(1, 6), st.integers(2**31 - 2, 2**31 + 1), st.integers(1, 2**33))
STRIDES = st.one_of(st.integers(0, 64), st.integers(2**31 - 2, 2**31 + 1), st.integers(0, 2**33))


def _dims_and_strides(n: int, small: bool) -> st.SearchStrategy[tuple[list[int], list[int]]]:
    # Half the cases small (mostly accepted: the round trip is tested), half anywhere (mostly
    # refused, at the int32 boundaries among others).
    extents = st.integers(1, 6) if small else EXTENTS
    strides = st.integers(0, 64) if small else STRIDES
    return st.tuples(
        st.lists(extents, min_size=n, max_size=n), st.lists(strides, min_size=n, max_size=n)
    )


@FUZZ
@given(st.tuples(st.integers(3, 8), st.booleans()).flatmap(lambda a: _dims_and_strides(*a)))
def test_tensor_values_round_trip_exactly_or_are_refused_before_c(
    case: tuple[list[int], list[int]],
) -> None:
    dims, strides = tuple(case[0]), tuple(case[1])
    # The rules, written here from the headers and cuDNN's documented behaviour: C ints; zero
    # strides only on extent-1 dims; at most 2**31 - 1 elements spanned.
    fits = all(v <= INT_MAX for v in dims + strides)
    zero_ok = all(s > 0 or n == 1 for n, s in zip(dims, strides, strict=True))
    accepted = fits and zero_ok and span(dims, strides) <= INT_MAX
    if not accepted:
        refused_before_c(lambda: TensorDescriptor(dims, strides), ValueError)
        return
    with TensorDescriptor(dims, strides) as d:
        # What cuDNN holds is exactly what was asked: nothing truncated on the way.
        assert d.dims == dims
        assert d.strides == strides


@pytest.mark.parametrize(
    "kind", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
)
def test_numpy_integer_types_are_ints(kind: type) -> None:
    dims = tuple(kind(n) for n in (2, 3, 4))
    strides = tuple(kind(n) for n in (12, 4, 1))
    with TensorDescriptor(dims, strides) as d:
        assert d.dims == (2, 3, 4) and d.strides == (12, 4, 1)
        assert all(type(v) is int for v in d.dims)
    as_array: Any = np.array([2, 3, 4], dtype=kind)
    with TensorDescriptor(as_array) as d:
        assert d.dims == (2, 3, 4)
    with FilterDescriptor(tuple(kind(n) for n in (4, 3, 3, 3))) as f:
        assert f.dims == (4, 3, 3, 3)


@pytest.mark.parametrize(
    "dtype",
    [None, "", "nope", 5, object, np.int64, np.bool_, np.complex64, "f4,f4", [("a", "f4")], "S0"],
    ids=repr,
)
def test_tensor_dtype_junk_is_refused_before_c(dtype: Any) -> None:
    refused_before_c(lambda: TensorDescriptor((2, 3, 4), dtype=dtype), TypeError, "dtype")


@pytest.mark.parametrize(
    ("fmt", "error"),
    [
        (5, TypeError),
        (b"NCHW", TypeError),
        ("", ValueError),
        ("NCHWX", ValueError),
        ("NCCW", ValueError),
        ("NC/0HW0", ValueError),
        ("NC/4HW8", ValueError),
        ("NC/" + "9" * 30 + "HW" + "9" * 30, TypeError),  # float32 has no vectorised type
        ("ABC", ValueError),  # a 3-letter format for 4 dims
    ],
)
def test_tensor_fmt_junk_is_refused_before_c(fmt: Any, error: type) -> None:
    refused_before_c(lambda: TensorDescriptor((1, 4, 2, 2), fmt=fmt), error, "fmt|format")


def test_regression_output_flag_must_be_a_bool() -> None:
    # Bug: output="no" was read as True (any truthy value), and output=None as False.
    flags: tuple[Any, ...] = ("no", "yes", None, 1, [True])
    for junk in flags:
        refused_before_c(
            functools.partial(TensorDescriptor, (2, 3, 4), output=junk), TypeError, "output"
        )
    numpy_true: Any = np.bool_(True)
    with TensorDescriptor((2, 3, 4), output=numpy_true) as d:
        assert not d.is_overlapping


# -- the other descriptors ----------------------------------------------------------------------


@pytest.mark.parametrize("junk", JUNK, ids=repr)
def test_filter_junk_is_refused_before_c(junk: Any) -> None:
    refused_before_c(lambda: FilterDescriptor(junk), (TypeError, ValueError), "dims")
    refused_before_c(lambda: FilterDescriptor((4, junk, 3, 3)), TypeError, "dims[1]")
    if not isinstance(junk, str) and junk is not None:  # fmt=None is the default (NCHW)
        refused_before_c(lambda: FilterDescriptor((4, 3, 3, 3), fmt=junk), TypeError, "fmt")


def test_regression_filter_beyond_2_63_bytes_is_refused() -> None:
    # Bug: cuDNN accepts dims whose product overflows size_t; cudnnGetFilterSizeInBytes then
    # wrapped around (a filter of 2**64 bytes reported 0 bytes).
    refused_before_c(lambda: FilterDescriptor((2**16,) * 4), ValueError, "bytes")
    with FilterDescriptor((2**15,) * 4) as f:  # 2**62 bytes: reported exactly
        assert f.size_in_bytes == 2**60 * 4


@pytest.mark.parametrize(
    ("kwargs", "error", "word"),
    [
        ({"pads": (-1, 0)}, ValueError, "pads[0]"),
        ({"pads": (2**31, 0)}, ValueError, "pads[0]"),
        ({"pads": (0.0, 0)}, TypeError, "pads[0]"),
        ({"pads": ()}, ValueError, "pads"),
        ({"pads": (0,) * 7}, ValueError, "pads"),
        ({"pads": "00"}, TypeError, "pads"),
        ({"pads": (0, 0), "strides": (0, 1)}, ValueError, "strides[0]"),
        ({"pads": (0, 0), "strides": (1,)}, ValueError, "strides"),
        ({"pads": (0, 0), "dilations": (1, -0)}, ValueError, "dilations[1]"),
        ({"pads": (0, 0), "dilations": (1, float("nan"))}, TypeError, "dilations[1]"),
        ({"pads": (0, 0), "groups": 0}, ValueError, "groups"),
        ({"pads": (0, 0), "groups": True}, TypeError, "groups"),
        ({"pads": (0, 0), "groups": 2**31}, ValueError, "groups"),
        ({"pads": (0, 0), "mode": "conv"}, ValueError, "mode"),
        ({"pads": (0, 0), "mode": None}, ValueError, "mode"),
        ({"pads": (0, 0), "math_type": 99}, ValueError, "math_type"),
        ({"pads": (0, 0), "compute_type": np.int8}, TypeError, "compute_type"),
        ({"pads": (0, 0), "compute_type": None}, TypeError, "compute_type"),
    ],
)
def test_convolution_junk_is_refused_before_c(kwargs: dict, error: type, word: str) -> None:
    refused_before_c(lambda: ConvolutionDescriptor(**kwargs), error, word)


def test_regression_padded_extent_beyond_int32_is_refused() -> None:
    # Bug: cuDNN computes extent + 2 * pad in a C int; past 2**31 - 1 it overflowed and
    # cudnnGetConvolutionNdForwardOutputDim / cudnnGetPoolingNdForwardOutputDim returned a bare
    # CUDNN_STATUS_BAD_PARAM with no text.
    x = TensorDescriptor((1, 1, 2**30 - 2, 1))
    w = FilterDescriptor((1, 1, 1, 1))
    conv = ConvolutionDescriptor((2**29 + 1, 0))
    refused_before_c(lambda: conv.output_dims(x, w), ValueError, "spatial dim 0", "2147483648")
    pool = PoolingDescriptor("max", (2**29 + 2, 1), (2**29 + 1, 0), (1, 1))
    refused_before_c(lambda: pool.output_dims(x), ValueError, "2147483648")
    # One less fits, and the output follows the documented formula 1 + (x + 2p - w) // s.
    assert ConvolutionDescriptor((2**29, 0)).output_dims(x, w) == (1, 1, 2**30 - 2 + 2**30, 1)
    pool_ok = PoolingDescriptor("max", (2**29 + 1, 1), (2**29, 0), (1, 1))
    assert pool_ok.output_dims(x) == (1, 1, 1 + (2**30 - 2 + 2**30 - (2**29 + 1)), 1)


def test_output_dims_argument_types() -> None:
    conv = ConvolutionDescriptor((0, 0))
    pool = PoolingDescriptor()
    x, w = TensorDescriptor((1, 3, 8, 8)), FilterDescriptor((4, 3, 3, 3))
    pairs: tuple[tuple[Any, Any], ...] = (
        (None, w),
        (x, None),
        (w, x),
        (x, x),
        ("x", "w"),
        (np.zeros(4), w),
    )
    for a, b in pairs:
        refused_before_c(functools.partial(conv.output_dims, a, b), TypeError, "desc")
    junk: tuple[Any, ...] = (None, w, "x", (1, 3, 8, 8))
    for a in junk:
        refused_before_c(functools.partial(pool.output_dims, a), TypeError, "x_desc")
    refused_before_c(lambda: conv.tensor_core_issues(x, None), TypeError, "w_desc")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error", "word"),
    [
        ({"mode": "maximum"}, ValueError, "mode"),
        ({"mode": 1.0}, ValueError, "mode"),
        ({"window": (0, 2)}, ValueError, "window[0]"),
        ({"window": (2**31, 2)}, ValueError, "window[0]"),
        ({"window": (2, float("nan"))}, TypeError, "window[1]"),
        ({"window": ()}, ValueError, "window"),
        ({"window": (2, 2), "pads": (2, 0)}, ValueError, "pads[0]"),
        ({"window": (2, 2), "pads": (-1, 0)}, ValueError, "pads[0]"),
        ({"window": (2, 2), "strides": (0, 1)}, ValueError, "strides[0]"),
        ({"window": (2, 2), "strides": (1, 1, 1)}, ValueError, "strides"),
        ({"nan_propagation": "yes"}, TypeError, "nan_propagation"),
        ({"nan_propagation": None}, TypeError, "nan_propagation"),
    ],
)
def test_pooling_junk_is_refused_before_c(kwargs: dict, error: type, word: str) -> None:
    refused_before_c(lambda: PoolingDescriptor(**kwargs), error, word)


@pytest.mark.parametrize(
    ("kwargs", "error", "word"),
    [
        ({"mode": "relu6"}, ValueError, "mode"),
        ({"coef": float("nan")}, ValueError, "coef"),
        ({"coef": float("-inf")}, ValueError, "coef"),
        ({"coef": np.float64("nan")}, ValueError, "coef"),
        ({"coef": "1"}, TypeError, "coef"),
        ({"mode": "clipped_relu"}, ValueError, "coef"),  # no ceiling: no default either
        ({"coef": True}, TypeError, "coef"),
        ({"coef": 1 + 0j}, TypeError, "coef"),
        ({"mode": "clipped_relu", "coef": -0.0}, ValueError, "coef"),
        ({"mode": "clipped_relu", "coef": 0}, ValueError, "coef"),
        ({"mode": "swish", "swish_beta": float("inf")}, ValueError, "swish_beta"),
        ({"nan_propagation": 1}, TypeError, "nan_propagation"),
    ],
)
def test_activation_junk_is_refused_before_c(kwargs: dict, error: type, word: str) -> None:
    refused_before_c(lambda: ActivationDescriptor(**kwargs), error, word)


def test_regression_huge_int_coefficient_names_the_argument() -> None:
    # Bug: an int beyond the double range raised a bare OverflowError ("int too large to convert
    # to float") that named no argument.
    refused_before_c(lambda: ActivationDescriptor("elu", 10**400), ValueError, "coef", "finite")
    refused_before_c(
        lambda: ActivationDescriptor("swish", swish_beta=-(10**400)), ValueError, "swish_beta"
    )
    with ActivationDescriptor("elu", -0.0) as a:  # negative zero is an ordinary finite value
        assert a.coef == 0.0


@pytest.mark.parametrize("cls", [OpTensorDescriptor, ReduceTensorDescriptor])
def test_op_and_reduce_junk_is_refused_before_c(cls: type) -> None:
    for op in ("plus", None, 1.5, ["add"]):
        refused_before_c(functools.partial(cls, op), ValueError, "op")
    for ct in (np.int8, np.float16, "int32", None, "junk"):
        refused_before_c(functools.partial(cls, "add", ct), TypeError, "compute_type")
    for nan in ("no", None, 0):
        refused_before_c(functools.partial(cls, "max", nan_propagation=nan), TypeError, "nan")


def test_reduce_indices_rules() -> None:
    wrong: tuple[Any, ...] = ("yes", 1, None)
    for junk in wrong:
        refused_before_c(
            functools.partial(ReduceTensorDescriptor, "max", indices=junk), TypeError, "indices"
        )
    refused_before_c(lambda: ReduceTensorDescriptor("add", indices=True), ValueError, "indices")


# -- closed objects ------------------------------------------------------------------------------

DESCRIPTORS: list[tuple[type[CResource], Callable[[], Any], str]] = [
    (TensorDescriptor, lambda: TensorDescriptor((2, 3, 4)), "TensorDescriptor"),
    (FilterDescriptor, lambda: FilterDescriptor((4, 3, 3, 3)), "FilterDescriptor"),
    (ConvolutionDescriptor, lambda: ConvolutionDescriptor((1, 1)), "ConvolutionDescriptor"),
    (PoolingDescriptor, lambda: PoolingDescriptor(), "PoolingDescriptor"),
    (ActivationDescriptor, lambda: ActivationDescriptor(), "ActivationDescriptor"),
    (OpTensorDescriptor, lambda: OpTensorDescriptor(), "OpTensorDescriptor"),
    (ReduceTensorDescriptor, lambda: ReduceTensorDescriptor(), "ReduceTensorDescriptor"),
]
# The C function that destroys each (cudnn_ops.h / cudnn_cnn.h).
DESTROY = {
    TensorDescriptor: "cudnnDestroyTensorDescriptor",
    FilterDescriptor: "cudnnDestroyFilterDescriptor",
    ConvolutionDescriptor: "cudnnDestroyConvolutionDescriptor",
    PoolingDescriptor: "cudnnDestroyPoolingDescriptor",
    ActivationDescriptor: "cudnnDestroyActivationDescriptor",
    OpTensorDescriptor: "cudnnDestroyOpTensorDescriptor",
    ReduceTensorDescriptor: "cudnnDestroyReduceTensorDescriptor",
}
ALWAYS_AVAILABLE = {"close", "closed", "is_closed"}


def _read_attribute(obj: Any, *, name: str) -> Any:
    return getattr(obj, name)


def _call_method(obj: Any, *, name: str, args: list[Any]) -> Any:
    return getattr(obj, name)(*args)


def _public_uses(cls: type) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    """Every public property and method of ``cls``, as a call on an instance."""
    x, w = TensorDescriptor((1, 3, 8, 8)), FilterDescriptor((4, 3, 3, 3))
    for name, attr in inspect.getmembers(cls):
        if name.startswith("_") or name in ALWAYS_AVAILABLE:
            continue
        if isinstance(attr, property):
            yield name, functools.partial(_read_attribute, name=name)
        elif callable(attr):
            params = [
                p
                for p in list(inspect.signature(attr).parameters.values())[1:]
                if p.default is inspect.Parameter.empty
                and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            ]
            sample = {"x_desc": x, "w_desc": w}
            yield (
                name,
                functools.partial(_call_method, name=name, args=[sample[p.name] for p in params]),
            )


@pytest.mark.parametrize(("cls", "make", "name"), DESCRIPTORS, ids=[d[2] for d in DESCRIPTORS])
def test_every_use_of_a_closed_descriptor_raises_closed_error_before_c(
    cls: type, make: Callable[[], Any], name: str
) -> None:
    obj = make()
    uses = list(_public_uses(cls))
    assert len(uses) >= 2
    for _, use in uses:
        use(obj)  # all work while open
    obj.close()
    obj.close()  # twice is fine
    assert obj.closed and obj.is_closed
    for attr, use in uses:
        with cudnn_calls() as called, pytest.raises(ClosedError, match="closed"):
            use(obj)
        assert called == [], f"{name}.{attr} reached {called} after close"
    assert "closed" in repr(obj)
    with pytest.raises(ClosedError):
        obj.__enter__()
    with pytest.raises(ClosedError):
        _ = obj.ptr
    # The raw layer refuses it too, naming the parameter, before C.
    with cudnn_calls() as called, pytest.raises(ClosedError, match="closed"):
        getattr(raw, DESTROY[cls])(obj)
    assert called == []


def test_closed_descriptors_as_arguments_never_reach_c() -> None:
    x, w = TensorDescriptor((1, 3, 8, 8)), FilterDescriptor((4, 3, 3, 3))
    conv, pool = ConvolutionDescriptor((1, 1)), PoolingDescriptor()
    view = ArrayView(0x1000, (1, 3, 8, 8), packed((1, 3, 8, 8)), np.dtype("f4"), 0, False, None)
    x_open, w_open = TensorDescriptor((1, 3, 8, 8)), FilterDescriptor((4, 3, 3, 3))
    x.close()
    w.close()
    for use in (
        lambda: conv.output_dims(x, w_open),
        lambda: conv.output_dims(x_open, w),
        lambda: pool.output_dims(x),
        lambda: check_operand(view, x, "x", device_id=0, stream_ptr=None),
        lambda: check_operand(view, w, "x", device_id=0, stream_ptr=None),
        lambda: raw.cudnnGetTensorSizeInBytes(x, ctypes.byref(ctypes.c_size_t())),
    ):
        with cudnn_calls() as called, pytest.raises(ClosedError):
            use()
        assert called == []


@pytest.mark.parametrize(("cls", "make", "name"), DESCRIPTORS, ids=[d[2] for d in DESCRIPTORS])
def test_with_close_and_garbage_collection_destroy_exactly_once(
    cls: type, make: Callable[[], Any], name: str
) -> None:
    destroy = DESTROY[cls]
    with cudnn_calls() as called:
        with make() as a:  # `with` closes
            assert not a.closed
        assert a.closed
        b = make()
        b.close()
        b.close()
        with pytest.raises(ClosedError), b:  # a closed object cannot be entered
            pass
    assert called.count(destroy) == 2
    # Garbage collection: plain references, then a reference cycle.
    with cudnn_calls(collect_first=True) as called:
        c = make()
        fin = c._finalizer  # the finalizer refers to c weakly: holding it keeps c collectable
        assert fin.alive
        del c
        gc.collect()
        assert not fin.alive
        d = make()
        d.self_ref = d  # a cycle: only the collector can free it
        d_fin = d._finalizer
        del d
        gc.collect()
        assert not d_fin.alive
    assert called.count(destroy) == 2
    assert called.count(destroy.replace("Destroy", "Create")) == 2


def test_children_keep_their_parents_alive() -> None:
    # A CResource child holds its parent: the parent is destroyed after the child, never before,
    # even when the user drops the parent first.
    parent = FilterDescriptor((4, 3, 3, 3))
    out = ctypes.c_void_p()
    raw.cudnnCreateTensorDescriptor(ctypes.byref(out))
    child = CResource(out.value or 0, raw.cudnnDestroyTensorDescriptor, parents=(parent,))
    parent_fin = parent._finalizer
    assert parent_fin is not None
    with cudnn_calls(collect_first=True) as called:
        del parent
        gc.collect()
        assert parent_fin.alive
        child.close()
        gc.collect()
    assert called == ["cudnnDestroyTensorDescriptor", "cudnnDestroyFilterDescriptor"]
    assert not parent_fin.alive


def _fake_closed_handle() -> Handle:
    """A Handle object that never held a real cudnnHandle_t (cudnnCreate needs a GPU), closed."""
    h = stand_in_handle()
    h.close()
    return h


def test_regression_closed_handle_stream_raises_closed_error() -> None:
    # Bug: Handle.stream on a closed handle raised ctypes.ArgumentError (not a ValueError), and
    # use_stream() with the stream already set returned as if the handle were open.
    h = _fake_closed_handle()
    with pytest.raises(ClosedError):
        _ = h.stream
    with pytest.raises(ClosedError):
        h.stream = 0
    with pytest.raises(ClosedError):
        h.use_stream(None)
    with pytest.raises(ClosedError):
        _ = h.stream_ptr
    with pytest.raises(ClosedError):
        h.make_current()
    assert "closed" in repr(h)


def test_regression_stream_handles_beyond_64_bits_are_refused() -> None:
    # Bug: stream_handle() passed on any int from __cuda_stream__ or .cuda_stream, and plain ints
    # above 2**64 - 1; ctypes then masked 2**64 to 0, the legacy default stream, silently.
    from _nvbind.cuda import stream_handle

    class Protocol:
        def __init__(self, value: Any) -> None:
            self.value = value

        def __cuda_stream__(self) -> Any:
            return self.value

    class Torchish:
        def __init__(self, value: Any) -> None:
            self.cuda_stream = value

    for junk in (2**64, -1, Protocol((0, 2**64)), Protocol((0, -3)), Torchish(2**64)):
        with pytest.raises(ValueError, match="2\\*\\*64"):
            stream_handle(junk)
    wrong: tuple[Any, ...] = (True, 1.0, "1", Protocol(5), Protocol((0, "x")), Protocol(None))
    for junk in (*wrong, Torchish(True)):
        with pytest.raises(TypeError):
            stream_handle(junk)
    assert stream_handle(Protocol((0, 2**64 - 1))) == 2**64 - 1
    assert stream_handle(Torchish(7)) == 7 and stream_handle(None) == 0


def test_regression_resources_refuse_pointers_that_are_not_addresses() -> None:
    # Bug: CResource took any int; one beyond 64 bits (Handle.from_handle(2**64 + 0x1000), say)
    # reached C masked to another address.
    for pointer in (2**64, 2**64 + 0x1000, -8):
        with pytest.raises(ValueError, match="not an address"):
            CResource(pointer, None, owned=False)
    with pytest.raises(ValueError, match="NULL"):
        CResource(0, None)


# -- leaks ---------------------------------------------------------------------------------------


def test_ten_thousand_descriptors_leak_neither_memory_nor_c_objects() -> None:
    # What RSS shows is Python-side retention (10k descriptors kept alive cost about 7 MiB here);
    # cuDNN's descriptors themselves are too small for it (10k leaked ones: about 0.3 MiB), so C
    # leaks are counted exactly by the next test, from cuDNN's log, and here by the finalizer
    # registry (one entry per live C object).
    makers = [make for _, make, _ in DESCRIPTORS]
    for make in makers * 100:  # warm up cuDNN's and Python's caches
        make().close()
    gc.collect()
    finalizers = len(weakref.finalize._registry)  # type: ignore[attr-defined]
    before = rss_bytes()
    for i in range(10_000):
        obj = makers[i % len(makers)]()
        if i % 3:
            obj.close()
        else:
            del obj  # left to the finalizer
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 4 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 10k descriptors"
    assert len(weakref.finalize._registry) == finalizers  # type: ignore[attr-defined]


def test_each_descriptor_is_destroyed_exactly_once_by_cudnns_own_count() -> None:
    n = 300
    with cudnn_calls(collect_first=True) as called:
        for _, make, _ in DESCRIPTORS:
            for i in range(n):
                obj = make()
                if i % 2:
                    obj.close()
                    obj.close()
                del obj
        gc.collect()
    for cls, destroy in DESTROY.items():
        assert called.count(destroy) == n, cls
        assert called.count(destroy.replace("Destroy", "Create")) == n, cls


# -- check_operand and as_array_view ------------------------------------------------------------


def view(**kw: Any) -> ArrayView:
    shape = kw.pop("shape", (2, 3, 4, 5))
    fields = {
        "ptr": 0x10000,
        "shape": shape,
        "strides": packed(shape),
        "dtype": np.dtype("f4"),
        "device_id": 0,
        "readonly": False,
        "owner": None,
    }
    fields.update(kw)
    return ArrayView(**fields)


@pytest.mark.parametrize("junk", [*JUNK, [1, 2, 3], np.float32(3), 5], ids=repr)
def test_check_operand_junk_is_refused_naming_the_argument(junk: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        check_operand(junk, None, "my_input", device_id=0, stream_ptr=None)
    assert "my_input" in str(info.value)


def test_check_operand_extreme_views() -> None:
    def check(v: ArrayView, desc: Any = None, **kw: Any) -> ArrayView:
        return check_operand(v, desc, "x", device_id=0, stream_ptr=None, **kw)

    for v, word in (
        (view(ptr=0x10001), "aligned"),
        (view(ptr=0), "NULL"),
        (view(strides=(-60, 20, 5, 1)), "negative"),
        (view(device_id=-1), "host"),
        (view(device_id=3), "device 3"),
    ):
        with pytest.raises(ValueError, match=word):
            check(v)
    # An extent-1 dim's stride addresses nothing: any value (negative, huge) is accepted.
    assert check(view(shape=(2, 1, 4, 5), strides=(20, -(2**62), 5, 1))).shape == (2, 1, 4, 5)
    # Output overlap: a zero stride on a real extent, and a huge stride (exact, no int64 overflow).
    with pytest.raises(ValueError, match="overlaps"):
        check(view(strides=(60, 0, 5, 1)), output=True)
    check(view(strides=(2**62, 2**40, 5, 1)), output=True)
    with pytest.raises(ValueError, match="read-only"):
        check(view(readonly=True), output=True)
    for desc in ("desc", 3, ArrayView):
        with pytest.raises(TypeError, match="desc"):
            check(view(), desc)
    # Regression: an element type of no size made the alignment check divide by zero.
    with pytest.raises(TypeError, match="no size"):
        check(view(dtype=np.dtype("V0")))


def test_regression_malformed_array_interfaces_are_refused_naming_the_argument() -> None:
    # Bug: __array_interface__ dicts from any object were trusted: a negative extent or pointer,
    # strides of the wrong length or a non-int pointer produced an ArrayView (a negative pointer
    # becomes 0xfff...fc in C), and missing keys raised bare KeyError / unpacking errors.
    class Host:
        def __init__(self, iface: Any) -> None:
            self.__array_interface__ = iface

    good = {"shape": (2, 3), "typestr": "<f4", "data": (0x1000, False), "version": 3}
    for change, error in (
        ({"shape": (-2, 3)}, ValueError),
        ({"shape": (2.5, 3)}, TypeError),
        ({"shape": "23"}, TypeError),
        ({"shape": (True, 3)}, TypeError),
        ({"data": (-4, False)}, ValueError),
        ({"data": (2**64, False)}, ValueError),
        ({"data": ("4096", False)}, ValueError),
        ({"data": None}, TypeError),
        ({"data": (0x1000,)}, TypeError),
        ({"strides": (12,)}, ValueError),
        ({"strides": (12.0, 4.0)}, TypeError),
        ({"strides": (12, 3)}, ValueError),
        ({"typestr": "zz"}, TypeError),
        ({"typestr": 5}, TypeError),
        ({"typestr": "S0"}, TypeError),
    ):
        with pytest.raises(error, match="my_input"):
            as_array_view(Host({**good, **change}), name="my_input")
    for iface in (5, None, {"shape": (2,)}, {"typestr": "<f4", "data": (0, False)}):
        with pytest.raises(TypeError, match="my_input"):
            as_array_view(Host(iface), name="my_input")
    v = as_array_view(Host({**good, "strides": (-12, 4)}))
    assert v.strides == (-3, 1) and v.ptr == 0x1000


def test_regression_array_view_duck_must_return_an_array_view() -> None:
    # Bug: any object with an _array_view() method was trusted; its result went straight on to C.
    class Duck:
        def _array_view(self) -> Any:
            return (0x1000, (2, 3), (3, 1))

    with pytest.raises(TypeError, match="my_input"):
        as_array_view(Duck(), name="my_input")
    with pytest.raises(TypeError, match="my_input"):
        check_operand(Duck(), None, "my_input", device_id=0, stream_ptr=None)

    class NotCallable:
        _array_view = 5

    with pytest.raises(TypeError):
        as_array_view(NotCallable())


NUMPY_DTYPES = st.sampled_from(
    [np.float32, np.float64, np.float16, np.int8, np.uint16, np.int64, np.bool_, np.complex64]
)


@FUZZ
@given(
    hnp.arrays(NUMPY_DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)),
    st.data(),
)
def test_as_array_view_of_any_numpy_array_matches_numpy(a: np.ndarray, data: st.DataObject) -> None:
    # Random slicing (negative and zero-extent steps included) and transposition.
    index = tuple(
        slice(None, None, data.draw(st.sampled_from([1, 2, -1, -2]), label="step")) for _ in a.shape
    )
    b = a[index] if a.ndim else a  # a[()] of a 0-d array is a NumPy scalar, not an array
    if b.ndim > 1 and data.draw(st.booleans(), label="transpose"):
        b = b.T
    if data.draw(st.booleans(), label="readonly"):
        b.flags.writeable = False
    v = as_array_view(b)
    assert v.ptr == b.ctypes.data
    assert v.shape == b.shape and v.dtype == b.dtype and v.device_id == -1
    assert v.readonly == (not b.flags.writeable)
    for n, got, want in zip(b.shape, v.strides, b.strides, strict=True):
        if n > 1 and b.size:  # strides of extent-1 dims, or of empty arrays, address nothing
            assert got * b.itemsize == want
    with pytest.raises(ValueError, match="host"):
        check_operand(b, None, "b", device_id=0, stream_ptr=None)


# -- DeviceArray ---------------------------------------------------------------------------------


@pytest.mark.parametrize("junk", JUNK, ids=repr)
def test_device_array_constructor_junk(junk: Any) -> None:
    buf, _ = host_buffer(256)
    with pytest.raises((TypeError, ValueError)):
        pycudnn.DeviceArray(buf, junk, np.float32)
    with pytest.raises((TypeError, ValueError)):
        pycudnn.DeviceArray(buf, (4, junk), np.float32)
    with pytest.raises((TypeError, ValueError)):
        pycudnn.DeviceArray(buf, (4, 4), np.float32, strides=(4, junk))
    with pytest.raises((TypeError, ValueError)):
        pycudnn.DeviceArray(buf, (4, 4), np.float32, offset=junk)
    with pytest.raises(TypeError):
        pycudnn.DeviceArray(junk, (4,), np.float32)
    if junk is not None and not isinstance(junk, (float, np.floating, bool, np.bool_)):
        with pytest.raises(TypeError):
            pycudnn.DeviceArray(buf, (4,), junk)


def test_regression_device_array_extents_must_fit_int64() -> None:
    # Bug: with a zero stride an extent of 2**64 + 5 fits any buffer; DLPack's int64 shape field
    # then received it masked to 5 (ctypes truncates silently), misdescribing the array.
    buf, _ = host_buffer(64)
    with pytest.raises(ValueError, match="int64"):
        pycudnn.DeviceArray(buf, (2**64 + 5,), np.float32, strides=(0,))
    with pytest.raises(ValueError, match="int64"):
        pycudnn.DeviceArray(buf, (1,), np.float32, strides=(2**63,))
    with pytest.raises(BufferError, match="int64"):
        dl.export_dlpack(0x1000, (2**64 + 5,), (0,), np.dtype("f4"), (1, 0), owner=None)
    with pytest.raises(BufferError, match="int64"):
        dl.export_dlpack(0x1000, (2,), (-(2**63) - 1,), np.dtype("f4"), (1, 0), owner=None)
    big = pycudnn.DeviceArray(buf, (2**63 - 1,), np.float32, strides=(0,))
    assert big.shape == (2**63 - 1,)


def test_regression_empty_refuses_impossible_sizes_before_touching_a_device() -> None:
    # Bug: a shape of 2**80 bytes went on to the allocator (or, without a GPU, to the "needs a
    # CUDA GPU" error), instead of being refused as impossible.
    for shape in ((2**40, 2**40), (2**62, 2)):
        with pytest.raises(ValueError, match="more memory"):
            pycudnn.DeviceArray.empty(shape, np.float32)
        with pytest.raises(ValueError, match="more memory"):
            pycudnn.DeviceArray.zeros(shape, np.float64)


@FUZZ
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
    data=st.data(),
    offset=st.integers(0, 80),
)
def test_device_array_never_describes_memory_outside_its_buffer(
    shape: list[int], data: st.DataObject, offset: int
) -> None:
    nbytes = 96
    buf, _ = host_buffer(nbytes)
    strides = data.draw(st.lists(st.integers(-8, 8), min_size=len(shape), max_size=len(shape)))
    try:
        a = pycudnn.DeviceArray(buf, tuple(shape), np.float32, tuple(strides), offset=offset)
    except ValueError:
        return
    if math.prod(shape) == 0:
        return
    # Every element's byte range, enumerated: inside [buffer, buffer + nbytes).
    base = int(buf.handle)
    for index in np.ndindex(*shape):
        addr = a.ptr + 4 * sum(i * s for i, s in zip(index, strides, strict=True))
        assert base <= addr and addr + 4 <= base + nbytes


def test_closed_device_array() -> None:
    buf, _ = host_buffer(64)
    a = pycudnn.DeviceArray.__new__(pycudnn.DeviceArray)._init(
        buf, int(buf.handle), (4, 4), (4, 1), np.dtype("f4"), 0
    )
    a.close()
    a.close()
    for use in (
        lambda: a.ptr,
        lambda: a.buffer,
        lambda: a.__cuda_array_interface__,
        lambda: a.__dlpack__(),
        lambda: a.__dlpack_device__(),
        lambda: a.to_numpy(),
        lambda: a.copy_from_numpy(np.zeros((4, 4), np.float32)),
        lambda: a.__enter__(),
        lambda: as_array_view(a),
        lambda: check_operand(a, None, "a", device_id=0, stream_ptr=None),
    ):
        with pytest.raises(ClosedError):
            use()
    assert "closed" in repr(a)


def test_device_array_dlpack_request_junk() -> None:
    buf, _ = host_buffer(64)
    a = pycudnn.DeviceArray.__new__(pycudnn.DeviceArray)._init(
        buf, int(buf.handle), (4, 4), (4, 1), np.dtype("f4"), 0
    )
    before = len(dl._exports)
    for kwargs in (
        {"stream": 0},
        {"stream": True},
        {"stream": "1"},
        {"stream": 1.0},
        {"copy": True},
        {"dl_device": (1, 0)},
        {"dl_device": (2, 1)},
    ):
        with pytest.raises(BufferError):
            a.__dlpack__(**kwargs)
    assert len(dl._exports) == before  # nothing half-exported
    for versioned in (None, (1, 0), (0, 8)):
        capsule = a.__dlpack__(stream=-1, max_version=versioned)
        del capsule
    gc.collect()
    assert len(dl._exports) == before


@pytest.mark.parametrize("stream", [-2, -(2**63), 2**64, 2**70])
@pytest.mark.parametrize("allocated_on_a_stream", [False, True])
def test_device_array_dlpack_stream_that_is_no_handle_is_refused(
    stream: int, allocated_on_a_stream: bool
) -> None:
    # -1 is the only negative value DLPack gives a meaning to, and a handle is below 2**64: others
    # were ignored for an array with no allocation stream, and reached cuda.core's Stream.from_handle
    # (an OverflowError naming no argument) for one with.
    class Allocation:
        handle = 0x1234

    buf, _ = host_buffer(64)
    a = pycudnn.DeviceArray.__new__(pycudnn.DeviceArray)._init(
        buf,
        int(buf.handle),
        (4, 4),
        (4, 1),
        np.dtype("f4"),
        0,
        stream=Allocation() if allocated_on_a_stream else None,
    )
    before = len(dl._exports)
    with pytest.raises(BufferError, match=r"stream must be None, -1 or a CUDA stream handle"):
        a.__dlpack__(stream=stream, max_version=(1, 1))
    assert len(dl._exports) == before


@FUZZ
@given(
    hnp.arrays(NUMPY_DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)),
    st.sampled_from([1, -1, 2]),
)
def test_numpy_consumes_any_export_and_releases_it(a: np.ndarray, step: int) -> None:
    b = a if a.ndim == 0 else a[(slice(None, None, step),) * a.ndim] if step > 0 else a.T
    before = len(dl._exports)
    c = np.from_dlpack(HostExporter(b))
    np.testing.assert_array_equal(c, b)
    assert c.shape == b.shape and c.dtype == b.dtype
    del c  # NumPy calls the deleter as the array goes
    assert len(dl._exports) == before


def test_many_exports_leak_nothing() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = len(dl._exports)
    for i in range(3000):
        if i % 2:
            np.from_dlpack(HostExporter(a))  # consumed, then dropped
        else:
            HostExporter(a).__dlpack__(max_version=(1, 0))  # never consumed
    gc.collect()
    assert len(dl._exports) == before


def test_a_capsule_consumed_twice_is_refused_and_freed_once() -> None:
    proc = run_child(
        """
        import gc, numpy as np
        from _nvbind import dlpack as dl
        a = np.arange(6.0)
        # NumPy 2.0 asks for a legacy capsule only (2.1 and later for a versioned one first)
        new = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
        for versioned in (True, False) if new else (False, False):
            cap = dl.export_dlpack(a.ctypes.data, (6,), (1,), a.dtype, (1, 0), owner=a,
                                   versioned=versioned)
            class Same:
                def __dlpack__(self, **kw): return cap
                def __dlpack_device__(self): return (1, 0)
            b = np.from_dlpack(Same())
            try:
                np.from_dlpack(Same())
            except Exception as exc:
                print("second:", type(exc).__name__)
            assert (b == a).all()
            del b, cap
            gc.collect()
            print("exports:", len(dl._exports))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("second:") == 2
    assert proc.stdout.count("exports: 0") == 2


def test_regression_refused_capsule_is_released_and_the_cause_reported() -> None:
    # Bug: when a consumer refused a capsule (NumPy given a CUDA tensor raises "Unsupported device
    # in DLTensor" and drops it), the capsule destructor ran with that exception pending; its
    # first ctypes call re-raised it inside the destructor, which swallowed it, so the export was
    # never released (a leak of the exporting array) and the consumer's error vanished.
    proc = run_child(
        """
        import gc, numpy as np
        from _nvbind import dlpack as dl
        a = np.arange(4.0)
        class Cuda:
            def __dlpack__(self, **kw):
                return dl.export_dlpack(a.ctypes.data, (4,), (1,), a.dtype, (2, 0), owner=a,
                                        versioned=kw.get("max_version") is not None)
            def __dlpack_device__(self): return (1, 0)
        for _ in range(3):
            try:
                np.from_dlpack(Cuda())
            except Exception as exc:
                print("raised:", type(exc).__name__)
        gc.collect()
        print("exports:", len(dl._exports))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "exports: 0" in proc.stdout
    assert proc.stdout.count("raised:") == 3
    assert "Unsupported device in DLTensor" in proc.stderr  # via sys.unraisablehook


def test_regression_releasing_an_export_owned_by_a_view_of_another_does_not_deadlock() -> None:
    # Bug: _release dropped the export's owner while holding the exports lock; when the owner was
    # a consumer's view of another export, its teardown called our deleter, which waited for the
    # same (non-reentrant) lock forever.
    proc = run_child(
        """
        import gc, numpy as np
        from _nvbind import dlpack as dl
        class Host:
            def __init__(self, a): self.a = a
            def __dlpack__(self, **kw):
                a = self.a
                return dl.export_dlpack(a.ctypes.data, a.shape, (1,), a.dtype, (1, 0), owner=a,
                                        versioned=kw.get("max_version") is not None)
            def __dlpack_device__(self): return (1, 0)
        b = np.from_dlpack(Host(np.arange(4.0)))  # export 1, consumed
        cap = dl.export_dlpack(b.ctypes.data, (4,), (1,), b.dtype, (1, 0), owner=b)  # export 2
        del b
        del cap  # releases export 2 -> drops b -> NumPy calls export 1's deleter
        gc.collect()
        print("exports:", len(dl._exports))
        """,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "exports: 0" in proc.stdout


def test_exports_released_from_many_threads() -> None:
    a = np.arange(64, dtype=np.float32)
    before = len(dl._exports)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(300):
                if i % 2:
                    np.from_dlpack(HostExporter(a))
                else:
                    HostExporter(a).__dlpack__()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    gc.collect()
    assert len(dl._exports) == before


# -- layout ---------------------------------------------------------------------------------------

LAYOUT_CALLS: list[tuple[str, Callable[..., Any], int]] = [
    ("packed_strides", layout.packed_strides, 2),
    ("is_fully_packed", layout.is_fully_packed, 3),
    ("is_packed", layout.is_packed, 4),
    ("is_spatially_packed", layout.is_spatially_packed, 3),
    ("is_overlapping", layout.is_overlapping, 2),
    ("min_buffer_size", layout.min_buffer_size, 2),
    ("strides_to_format", layout.strides_to_format, 2),
    ("vectorized_dims_strides", layout.vectorized_dims_strides, 2),
    ("from_format", layout.from_format, 3),
    ("to_format", layout.to_format, 2),
    ("parse_format", layout.parse_format, 1),
    ("format_order", layout.format_order, 1),
]
ANY_VALUE = st.one_of(
    st.sampled_from(JUNK),
    st.integers(-(2**70), 2**70),
    st.text(max_size=12),
    st.sampled_from(["NCHW", "NHWC", "BMN", "NC/4HW4", "ABCDEFGH", "CH", "row_major"]),
    st.lists(st.one_of(st.integers(-3, 2**40), st.sampled_from(JUNK)), max_size=9),
)


#: The arguments that may be anything array-like (NumPy decides), or None.
LAYOUT_ANY = {("to_format", 0), ("from_format", 0)}
LAYOUT_NONE = {("is_spatially_packed", 2)}


def layout_junk(value: Any) -> bool:
    """A value no layout argument takes (dims, strides, a format or a count): None, a bool, a
    float, complex, bytes, a dict, a set, a bare object, or a sequence holding one of those."""
    if value is None or isinstance(value, (bool, np.bool_, float, np.floating, complex, bytes)):
        return True
    if isinstance(value, (dict, set)) or type(value) is object:
        return True
    return isinstance(value, list) and any(
        layout_junk(v) or isinstance(v, (str, list)) for v in value
    )


@FUZZ
@given(st.sampled_from(LAYOUT_CALLS), st.lists(ANY_VALUE, min_size=4, max_size=4))
def test_layout_functions_refuse_junk_with_type_or_value_errors(
    call: tuple[str, Callable[..., Any], int], args: list[Any]
) -> None:
    name, fn, nargs = call
    try:
        fn(*args[:nargs])
    except (TypeError, ValueError):
        return
    # it answered: then no argument was junk
    for i, value in enumerate(args[:nargs]):
        if (name, i) in LAYOUT_ANY or ((name, i) in LAYOUT_NONE and value is None):
            continue
        assert not layout_junk(value), f"{name} took {value!r} as argument {i}: {args[:nargs]!r}"


@FUZZ
@given(
    st.lists(st.integers(1, 2**40), min_size=3, max_size=8),
    st.sampled_from(["row", "col"]),
)
def test_packed_strides_of_huge_dims_are_exact(dims: list[int], order: str) -> None:
    fmt = "ABCDEFGH"[: len(dims)]
    if order == "col":
        fmt = fmt[::-1]
    strides = layout.packed_strides(dims, fmt)
    expected = packed(tuple(dims)) if order == "row" else tuple(reversed(packed(tuple(dims[::-1]))))
    assert strides == expected  # Python ints: no wrap at 2**63
    assert layout.min_buffer_size(dims, strides) == math.prod(dims)


# -- raw layer -----------------------------------------------------------------------------------


def test_regression_raw_argument_count_is_checked() -> None:
    # Bug: ctypes passes surplus arguments on to a cdecl C function without complaint.
    d = TensorDescriptor((2, 3, 4))
    size = ctypes.c_size_t()
    with cudnn_calls() as called:
        with pytest.raises(TypeError, match=r"takes 2 arguments \(tensorDesc, size\), got 3"):
            raw.cudnnGetTensorSizeInBytes(d, ctypes.byref(size), 7)
        with pytest.raises(TypeError, match="got 1"):
            raw.cudnnGetTensorSizeInBytes(d)
        with pytest.raises(TypeError, match="takes 0 arguments"):
            raw.cudnnGetVersion(None)
    assert called == []
    with pytest.raises(TypeError, match="takes 0 arguments"):
        pycutensor.raw.cutensorGetVersion(1)
    raw.cudnnGetTensorSizeInBytes(d, ctypes.byref(size))
    assert size.value == 2 * 3 * 4 * 4


def test_regression_raw_integers_beyond_their_c_type_are_refused() -> None:
    # Bug: ctypes masks Python ints to the C width: nbDims = 2**32 + 3 reached cuDNN as 3, a
    # pointer of 2**64 as NULL and -1 as 0xffff...ff.
    d = TensorDescriptor((2, 3, 4))
    dims, strides = (ctypes.c_int * 3)(5, 6, 7), (ctypes.c_int * 3)(42, 7, 1)
    with cudnn_calls() as called:
        for args, word in (
            ((d, raw.CUDNN_DATA_FLOAT, 2**32 + 3, dims, strides), "nbDims"),
            ((d, raw.CUDNN_DATA_FLOAT, -(2**31) - 1, dims, strides), "nbDims"),
            ((d, 2**32, 3, dims, strides), "dataType"),
            ((2**64, raw.CUDNN_DATA_FLOAT, 3, dims, strides), "tensorDesc"),
            ((-1, raw.CUDNN_DATA_FLOAT, 3, dims, strides), "tensorDesc"),
            ((d, raw.CUDNN_DATA_FLOAT, np.int64(2**32 + 3), dims, strides), "nbDims"),
        ):
            with pytest.raises(ValueError, match=word):
                raw.cudnnSetTensorNdDescriptor(*args)
    assert called == []
    assert d.dims == (2, 3, 4)  # untouched
    with pytest.raises(ValueError, match="does not fit"):
        pycutensor.raw.cutensorGetErrorString(2**40)
    # In range, NumPy integers and enum members are fine.
    raw.cudnnSetTensorNdDescriptor(d, raw.cudnnDataType_t.FLOAT, np.int32(3), dims, strides)
    assert d.strides == (42, 7, 1)


def test_raw_wrong_types_name_the_parameter_before_c() -> None:
    d = TensorDescriptor((2, 3, 4))
    dims = (ctypes.c_int * 3)(2, 3, 4)
    with cudnn_calls() as called:
        for args, param in (
            ((d, raw.CUDNN_DATA_FLOAT, "3", dims, dims), "nbDims"),
            ((d, raw.CUDNN_DATA_FLOAT, 3.0, dims, dims), "nbDims"),
            ((d, raw.CUDNN_DATA_FLOAT, 3, [2, 3, 4], dims), "dimA"),
            ((d, raw.CUDNN_DATA_FLOAT, 3, dims, (ctypes.c_float * 3)()), "strideA"),
            ((object(), raw.CUDNN_DATA_FLOAT, 3, dims, dims), "tensorDesc"),
            ((1.0, raw.CUDNN_DATA_FLOAT, 3, dims, dims), "tensorDesc"),
        ):
            with pytest.raises(TypeError, match=param):
                raw.cudnnSetTensorNdDescriptor(*args)
    assert called == []


def test_regression_str_bytes_and_bools_are_not_pointers() -> None:
    # Bug (a segfault): ctypes accepts a str or bytes for a void * parameter and passes the address
    # of the object's own buffer; raw.cudnnSetTensorNdDescriptor("desc", ...) made cuDNN write a
    # tensor descriptor into Python's heap, and the interpreter crashed soon after. A bool became
    # the address 0x1. In a child process, since a missing check corrupts the interpreter.
    proc = run_child(
        """
        import ctypes, gc
        from pycudnn import raw
        import pycutensor.raw
        dims = (ctypes.c_int * 4)(64, 64, 64, 64)
        refused = 0
        for junk in ("desc", b"descriptor bytes", True, False):
            for call in (
                lambda: raw.cudnnSetTensorNdDescriptor(junk, raw.CUDNN_DATA_FLOAT, 4, dims, dims),
                lambda: raw.cudnnDestroyTensorDescriptor(junk),
                lambda: pycutensor.raw.cutensorDestroy(junk),
            ):
                try:
                    call()
                except TypeError as exc:
                    assert "is a pointer" in str(exc), exc
                    refused += 1
        gc.collect()
        print("refused", refused)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused 12" in proc.stdout


def test_raw_layer_fuzz_never_reaches_c_with_closed_or_bad_arguments() -> None:
    # Every cuDNN and cuTENSOR function: a closed object for each pointer parameter, an int beyond
    # int64 for each integer one, and one argument too many. All must be refused in Python; a
    # missing check would hand C a NULL or garbage pointer, hence the child process.
    proc = run_child(
        """
        import ctypes, collections, warnings
        warnings.simplefilter("ignore")
        from pycudnn import _bindings as cb, raw as craw, tensor
        from pycutensor import _bindings as tb, raw as traw
        from _nvbind.resource import ClosedError
        closed = tensor.TensorDescriptor((2, 3, 4))
        closed.close()
        seen = collections.Counter()
        for bindings, module in ((cb, craw), (tb, traw)):
            for name, spec in sorted(bindings.FUNCTIONS.items()):
                try:
                    fn = getattr(module, name)
                    fn  # resolved lazily; calling it loads the library
                except Exception:
                    continue
                args = [closed if t is ctypes.c_void_p else None for t in spec.argtypes]
                try:
                    fn(*args, None)
                except TypeError:
                    seen["count"] += 1
                except Exception as exc:
                    seen["count:" + type(exc).__name__] += 1
                if ctypes.c_void_p in spec.argtypes:
                    try:
                        fn(*args)
                    except ClosedError:
                        seen["closed"] += 1
                    except Exception as exc:
                        seen["closed:" + type(exc).__name__ + ":" + name] += 1
                ints = [i for i, t in enumerate(spec.argtypes)
                        if getattr(t, "_type_", None) in tuple("bBhHiIlLqQ")]
                for i in ints:
                    bad = [2**70 if j == i else None for j in range(len(spec.argtypes))]
                    try:
                        fn(*bad)
                    except ValueError:
                        seen["int"] += 1
                    except Exception as exc:
                        seen["int:" + type(exc).__name__ + ":" + name] += 1
        print(dict(seen))
        """
    )
    assert proc.returncode == 0, proc.stderr
    counts = eval(proc.stdout.strip().splitlines()[-1])  # a dict printed by the child
    unexpected = {k: v for k, v in counts.items() if ":" in k}
    assert not unexpected, unexpected
    assert counts["count"] > 250 and counts["closed"] > 200 and counts["int"] > 300


# -- logging ------------------------------------------------------------------------------------


def test_regression_bad_log_levels_leave_no_state_behind() -> None:
    # Bug: capture("DEBUG") raised TypeError after counting itself and adding its sink, so the
    # callback stayed registered for good (every later cuDNN call was collected into a list
    # nobody read); enable_logging("WARNING") stored the bad level, after which is_enabled() was
    # True and every capture() on every thread raised.
    levels: tuple[Any, ...] = ("DEBUG", None, 10.0, True)
    for junk in levels:
        with pytest.raises(TypeError, match="level"), log.capture(junk):
            pass
        with pytest.raises(TypeError, match="level"):
            log.enable_logging(junk)
    assert not log.is_enabled()
    assert not log._live and not getattr(log._state, "sinks", {})
    with log.capture(logging.DEBUG) as records:
        TensorDescriptor((2, 3, 4)).close()
    assert any("cudnnDestroyTensorDescriptor" in r.message for r in records)
    assert not getattr(log._state, "sinks", [])


def test_a_refused_registration_leaves_the_logging_level_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # enable_logging stored its level before registering the callback; when cudnnSetCallback
    # failed, the level stayed: is_enabled() said True though cuDNN was given no callback.
    def refused(mask: int, callback: Any) -> None:
        raise RuntimeError("cudnnSetCallback: refused")

    assert not log.is_enabled()
    monkeypatch.setattr(log, "_set_callback", refused)
    with pytest.raises(RuntimeError, match="refused"):
        log.enable_logging(logging.INFO)
    assert not log.is_enabled()
    monkeypatch.undo()
    log.enable_logging(logging.ERROR)
    try:
        monkeypatch.setattr(log, "_set_callback", refused)
        with pytest.raises(RuntimeError, match="refused"):
            log.enable_logging(logging.DEBUG)
        assert log._registered.get("level") == logging.ERROR
    finally:
        monkeypatch.undo()
        log.disable_logging()
    assert not log.is_enabled()


# -- legacy operations: argument checks reachable without a GPU ------------------------------------


def test_operations_refuse_host_arrays_and_junk_before_needing_a_gpu() -> None:
    from pycudnn import ops

    x = np.zeros((1, 3, 4, 4), np.float32)

    class Junk:
        none: Any = None
        as_str: Any = "22"
        with_float: Any = (2, 2.0)

    junk = Junk
    for call, error, word in (
        (lambda: ops.softmax_forward(x), ValueError, "host"),
        (lambda: ops.softmax_forward(x, algorithm="slow"), ValueError, "algorithm"),
        (lambda: ops.softmax_forward(x, mode=junk.none), ValueError, "mode"),
        (lambda: ops.activation_forward(x), ValueError, "host"),
        (lambda: ops.activation_forward(x, "relu", coef=float("nan")), ValueError, "coef"),
        (lambda: ops.convolution_forward(x, x), ValueError, "host"),
        (lambda: ops.pooling_forward(x, window=junk.as_str), TypeError, "window"),
        (lambda: ops.pooling_forward(x, window=junk.with_float), TypeError, r"window\[1\]"),
        (lambda: ops.add_tensor(x, x), ValueError, "host"),
        (lambda: ops.op_tensor(x, x), ValueError, "host"),
        (lambda: ops.reduce_tensor(x), ValueError, "host"),
        (lambda: ops.transform_tensor(x, "NHWC"), ValueError, "host"),
        (lambda: ops.softmax_forward(x, handle=junk.as_str), TypeError, "handle"),
        (lambda: ops.softmax_forward(object()), TypeError, "x"),
        (lambda: ops.softmax_forward(None), TypeError, "x"),
        (lambda: ops.softmax_forward(x, handle=_fake_closed_handle()), ClosedError, "closed"),
    ):
        with pytest.raises(error, match=word):
            call()


# -- the crash fuzz ---------------------------------------------------------------------------------

CHILD_FUZZ = """
import collections, decimal, fractions, random, sys, traceback, warnings
import numpy as np
warnings.simplefilter("ignore")
import pycudnn
from pycudnn import layout, tensor
from _nvbind.arrays import ArrayView, as_array_view

rng = random.Random(SEED)
SCALARS = [None, True, False, np.bool_(True), 0, -1, 1, 2, 3, 4, 8, -0.0, 0.0, float("nan"),
    float("inf"), 1.5, 2**31 - 1, 2**31, 2**32 + 4, 2**63, 2**64, -(2**63), 10**400, np.int8(3),
    np.uint64(2**64 - 1), np.int64(-5), np.int32(2), np.float32(2.0), "3", "", "NCHW", "nhwc",
    "NC/32HW32", "relu", "max", "add", b"x", 1 + 2j, decimal.Decimal(3), fractions.Fraction(3),
    object(), np.float64, "float16", "int8x32", "bf16", np.dtype("f8"), "NC/4HW4", "fp8_e4m3"]

def scalar():
    return rng.choice(SCALARS)

def seq():
    r = rng.random()
    n = rng.choice([0, 1, 2, 3, 4, 5, 8, 9])
    if r < 0.6:
        v = [rng.choice([1, 1, 2, 3, 4, 32, 64]) for _ in range(n)]
        return rng.choice([list, tuple, np.array])(v) if v else v
    if r < 0.8:
        return [scalar() if rng.random() < 0.3 else rng.randint(-3, 70) for _ in range(n)]
    if r < 0.9:
        return [[rng.randint(1, 4) for _ in range(n)]]
    return scalar()

def arg():
    return seq() if rng.random() < 0.5 else scalar()

ALLOWED = (TypeError, ValueError, pycudnn.CudnnError)
bad = collections.Counter()
made = collections.Counter()
first = {}
tx = tensor.TensorDescriptor((2, 4, 8, 8))
tw = tensor.FilterDescriptor((4, 4, 3, 3))

def attempt(label, fn):
    try:
        obj = fn()
    except ALLOWED:
        return None
    except Exception:
        key = label + ": " + sys.exc_info()[0].__name__
        bad[key] += 1
        first.setdefault(key, traceback.format_exc()[-1200:])
        return None
    made[label] += 1
    return obj

READS = ("dims", "strides", "dtype", "size_in_bytes", "cudnn_size_in_bytes", "array_shape",
         "array_strides", "key", "pads", "dilations", "mode", "compute_type", "math_type", "groups",
         "window", "coef", "swish_beta", "op", "indices", "fmt", "is_overlapping", "nbdims")

def exercise(obj):
    if obj is None:
        return
    for name in READS:
        if hasattr(type(obj), name):
            attempt("read " + name, lambda: (lambda v: v() if callable(v) else v)(getattr(obj, name)))
    repr(obj)
    if isinstance(obj, tensor.ConvolutionDescriptor):
        attempt("conv.output_dims", lambda: obj.output_dims(tx, tw))
        attempt("conv.output_dims junk", lambda: obj.output_dims(arg(), arg()))
    if isinstance(obj, tensor.PoolingDescriptor):
        attempt("pool.output_dims", lambda: obj.output_dims(tx))
    obj.close()
    obj.close()
    for name in READS:
        if hasattr(type(obj), name):
            try:
                getattr(obj, name)
            except ValueError:  # ClosedError
                pass

pick = lambda default: rng.choice([default, scalar()])
for i in range(ITERATIONS):
    exercise(attempt("TensorDescriptor", lambda: tensor.TensorDescriptor(
        seq(), seq() if rng.random() < 0.5 else None, dtype=pick(np.float32),
        fmt=rng.choice([None, scalar()]))))
    exercise(attempt("FilterDescriptor", lambda: tensor.FilterDescriptor(
        seq(), pick(np.float32), pick("NCHW"))))
    exercise(attempt("ConvolutionDescriptor", lambda: tensor.ConvolutionDescriptor(
        seq(), rng.choice([None, seq()]), rng.choice([None, seq()]),
        mode=pick("cross_correlation"), compute_type=pick(np.float32),
        math_type=pick("default"), groups=pick(1))))
    exercise(attempt("PoolingDescriptor", lambda: tensor.PoolingDescriptor(
        pick("max"), seq(), rng.choice([None, seq()]), rng.choice([None, seq()]),
        nan_propagation=pick(False))))
    exercise(attempt("ActivationDescriptor", lambda: tensor.ActivationDescriptor(
        rng.choice(["relu", "clipped_relu", "swish", scalar()]), pick(1.0),
        swish_beta=pick(1.0), nan_propagation=pick(False))))
    exercise(attempt("OpTensorDescriptor", lambda: tensor.OpTensorDescriptor(
        pick("add"), pick(np.float32), nan_propagation=pick(False))))
    exercise(attempt("ReduceTensorDescriptor", lambda: tensor.ReduceTensorDescriptor(
        pick("max"), pick(np.float32), nan_propagation=pick(False),
        indices=rng.choice([False, True, scalar()]))))
    shape = tuple(rng.choice([0, 1, 2, 3, -1, 2**40]) for _ in range(rng.randint(0, 5)))
    view = ArrayView(rng.choice([0, 1, 16, 256, 2**64 - 16]), shape,
                     tuple(rng.choice([0, 1, -1, 3, 2**40]) for _ in shape),
                     np.dtype(rng.choice(["f4", "f2", "i1", "f8"])), rng.choice([-1, 0, 1]),
                     rng.random() < 0.5, None)
    attempt("check_operand", lambda: tensor.check_operand(
        rng.choice([view, arg(), np.zeros(3)]), rng.choice([None, tx, tw, scalar()]), "x",
        device_id=0, stream_ptr=None, output=rng.random() < 0.5, tensor_op=rng.random() < 0.5))
    attempt("as_array_view", lambda: as_array_view(arg()))

print("MADE", sum(made.values()), len(made))
print("BAD", dict(bad))
for key, text in first.items():
    print("=== " + key)
    print(text)
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_descriptors_and_operands_in_a_child_process(seed: int) -> None:
    # Random junk (and random valid values) into every descriptor, every read-back, check_operand
    # and as_array_view. Only TypeError, ValueError (ClosedError included) and CudnnError may
    # come out; anything else (KeyError, OverflowError, ZeroDivisionError, SystemError, ...) is
    # an unchecked path, and a signal is a crash.
    code = CHILD_FUZZ.replace("SEED", str(seed)).replace("ITERATIONS", "600")
    proc = run_child(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "BAD {}" in proc.stdout, proc.stdout[-5000:]
    made_line = next(line for line in proc.stdout.splitlines() if line.startswith("MADE"))
    total, kinds = map(int, made_line.split()[1:])
    assert total > 1000 and kinds >= 20  # the fuzz did build and read real descriptors


def test_importing_and_refusing_loads_no_library() -> None:
    # Argument errors need no library: refused in a fresh process, cuDNN stays unloaded.
    proc = run_child(
        """
        import numpy as np
        from pycudnn import layout
        from pycudnn._lib import LIB
        from _nvbind.arrays import as_array_view
        from _nvbind.device_array import DeviceArray
        for call in (lambda: layout.packed_strides((2, -1, 3), "ABC"),
                     lambda: as_array_view(object()),
                     lambda: DeviceArray.empty((2, 1.5))):
            try:
                call()
            except (TypeError, ValueError):
                pass
        print("loaded:", LIB.is_loaded)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "loaded: False" in proc.stdout


def test_bf16_host_arrays_are_described_not_misread() -> None:
    # ml_dtypes types appear as raw bytes ("<V2") in NumPy's array interface; the view reads the
    # dtype object, so bfloat16 is neither refused nor passed off as void.
    assert as_array_view(np.zeros(4, ml_dtypes.bfloat16), name="b").dtype == ml_dtypes.bfloat16

    class Host:  # an object that has only the array interface cannot name the type
        __array_interface__: ClassVar[dict[str, Any]] = {
            "shape": (4,),
            "typestr": "<V2",
            "data": (0x1000, False),
            "version": 3,
        }

    with pytest.raises(TypeError, match="DLPack"):
        as_array_view(Host(), name="b")


def test_regression_exporter_does_not_share_ctypes_pythonapi_prototypes() -> None:
    # Bug: the DLPack exporter set argtypes/restype on ctypes.pythonapi's shared function objects.
    # Any other code doing the same (a common idiom: PyCapsule_GetPointer with a py_object
    # argument; tests/test_device_array.py does it) changed the exporter's calls under it: the
    # release of unconsumed capsules failed silently (a leak), and the exporter's settings in turn
    # changed the other code's calls.
    proc = run_child(
        """
        import ctypes, gc, numpy as np
        api = ctypes.pythonapi
        api.PyCapsule_GetPointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
        from _nvbind import dlpack as dl
        # Importing the exporter leaves the other code's prototypes as it set them.
        print("theirs:", api.PyCapsule_GetPointer.argtypes[0] is ctypes.py_object)
        # And what the other code sets later does not reach the exporter.
        api.PyCapsule_GetPointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_IsValid.argtypes = (ctypes.py_object, ctypes.c_char_p)
        api.PyCapsule_New.restype = ctypes.c_void_p
        a = np.arange(4.0)
        for versioned in (True, False):
            cap = dl.export_dlpack(a.ctypes.data, (4,), (1,), a.dtype, (1, 0), owner=a,
                                   versioned=versioned)
            assert type(cap).__name__ == "PyCapsule", type(cap)
            del cap
        gc.collect()
        print("exports:", len(dl._exports))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "exports: 0" in proc.stdout and "theirs: True" in proc.stdout


def test_owned_c_objects_cannot_be_copied_or_pickled() -> None:
    # Regression: copy.copy(TensorDescriptor) gave a second owner of one cudnnTensorDescriptor_t;
    # closing either left the other pointing at a destroyed descriptor.
    import copy
    import pickle

    with TensorDescriptor((2, 3, 4)) as desc:
        for clone in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot be"):
                clone(desc)
        assert not desc.closed
