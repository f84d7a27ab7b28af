"""A process that only describes a graph and plans it imports neither NumPy nor ml_dtypes (most
of a new process's Python time before its first plan) nor the reports' argparse and package
metadata, nor ``fractions`` (only FRACTION values need it); the graph keeps its element types as
``DataType`` and the public properties still give ``numpy.dtype``."""

from __future__ import annotations

import json
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from children import run_python
from conftest import H100_PROPS_FILE

import pycudnn
from _nvbind.dtypes import (
    CUDA_DATA_TYPE_NAMES,
    CUDNN_DATA_TYPE_NAMES,
    DataType,
    as_data_type,
    as_numpy_dtype,
    data_type_of,
    dtype_name,
)
from _nvbind.lazy_numpy import numpy_types
from pycudnn.graph import GraphError

# Describe conv + bias + ReLU (fp16, NHWC, as the planning benchmark's first graph), a bf16
# matmul and a product with a by-value scalar, build a deviceless plan of each for the committed H100 properties, and print which of
# NumPy and ml_dtypes are imported; then, with argv[1] == "touch", what Tensor.dtype gives.
_CHILD = f"""
import json, sys
import pycudnn

props = pycudnn.DeviceProperties.load({str(H100_PROPS_FILE)!r})
g = pycudnn.Graph("conv", io_dtype="float16")
x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
b = g.tensor([1, 64, 1, 1], fmt="NHWC", dtype="half", name="b")
y = g.relu(g.add(g.conv_fprop(x, w, padding=1), b))
y.set_output(True)
conv = g.build(device_properties=props, cache=False)
m = pycudnn.Graph("matmul", compute_dtype="float32")
a = m.tensor([1, 64, 32], dtype="bf16", name="a")
c = m.matmul(a, m.tensor([1, 32, 48], dtype="bfloat16", name="b"))
c.set_output(True)
matmul = m.build(device_properties=props, cache=False)
s = pycudnn.Graph("scaled", io_dtype="float16")
z = s.mul(s.tensor([1, 8, 4, 4], fmt="NHWC", dtype="float16", name="z"), s.scalar(2.5, name="k"))
z.set_output(True)
scaled = s.build(device_properties=props, cache=False)  # a by-value scalar: a host buffer
out = {{"engines": [conv.engine_id, matmul.engine_id, scaled.engine_id], "described": g.describe().count("float16"),
        "imported": [n for n in ("numpy", "ml_dtypes") if n in sys.modules],
       "cli": [n for n in ("argparse", "importlib.metadata") if n in sys.modules],
       "fractions": [n for n in ("fractions", "decimal") if n in sys.modules]}}
if sys.argv[1:] == ["touch"]:
    import numpy as np
    out["dtypes"] = [repr(t.dtype) for t in (x, y, a)]
    out["numpy_dtypes"] = [isinstance(t.dtype, np.dtype) for t in (x, y, a)]
    out["equal"] = [x.dtype == np.float16, y.dtype == np.dtype("float16"), a.dtype == "bfloat16"]
    out["graph"] = [repr(g.compute_dtype), repr(g.io_dtype), repr(m.io_dtype)]
    (k,) = [slot for slot in scaled._slots if slot.by_value]
    before = k.scalar.tolist()
    scaled.set_scalar("k", 4.0)
    out["scalar"] = [before, k.scalar.tolist(), str(k.scalar.dtype), k.scalar is k.scalar]
print(json.dumps(out))
"""


def _child(*args: str) -> dict[str, Any]:
    out = run_python(_CHILD, *args)
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.usefixtures("h100_props")  # skips where deviceless plans cannot be built
def test_describing_and_planning_imports_no_numpy() -> None:
    result = _child()
    assert result["imported"] == []
    assert result["cli"] == []  # the reports' and CLIs' modules are not planning's either
    assert result["fractions"] == []  # imported for FRACTION values (pooling, resampling) only
    assert all(isinstance(e, int) for e in result["engines"])
    assert result["described"] == 4  # x, w, b and the output (the virtuals are float32)


@pytest.mark.usefixtures("h100_props")
def test_tensor_dtype_is_a_numpy_dtype_once_asked() -> None:
    result = _child("touch")
    assert result["imported"] == []  # before the dtypes were read
    assert result["dtypes"] == ["dtype('float16')", "dtype('float16')", "dtype(bfloat16)"]
    assert result["numpy_dtypes"] == [True, True, True]
    assert result["equal"] == [True, True, True]
    assert result["graph"] == ["dtype('float32')", "dtype('float16')", "None"]
    # the scalar's buffer, made on first use, holds the graph's value, then the one set
    assert result["scalar"] == [[2.5], [4.0], "float32", True]


def test_data_types_are_numpys_kinds_and_sizes() -> None:
    """Each type of the tables, named without NumPy, has NumPy's (or ml_dtypes') name, kind and
    size, and converts to that dtype."""
    expected = {
        **{n: np.dtype(n) for n in ("float32", "float16", "int8", "uint32", "bool", "complex128")},
        **{n: np.dtype(getattr(ml_dtypes, n)) for n in ("bfloat16", "float8_e5m2", "int4")},
    }
    for name, dt in expected.items():
        t = as_data_type(name)
        assert (t.name, t.kind, t.itemsize) == (dt.name, dt.kind, dt.itemsize), name
        assert t.numpy == dt and np.dtype(t) == dt and np.zeros(1, dtype=t).dtype == dt
    for table in (CUDNN_DATA_TYPE_NAMES, CUDA_DATA_TYPE_NAMES):  # every row has a name in one
        for dt in table:  # every key, NumPy's and ml_dtypes'
            t = data_type_of(dt)
            assert (t.name, t.kind, t.itemsize) == (dt.name, dt.kind, dt.itemsize)


def test_data_type_equality_follows_numpy() -> None:
    half = as_data_type("half")
    assert half is as_data_type("float16") is as_data_type(np.float16) is data_type_of(half.numpy)
    assert half == np.float16 and np.float16 == half and np.dtype("float16") == half
    assert half == "float16" and half == "f2"  # a name NumPy resolves is compared as NumPy does
    assert half not in (np.float32, "float32", "bfloat16")
    assert half != None  # noqa: E711 - numpy.dtype(None) is float64; a DataType is never None
    assert as_data_type("float64") != None  # noqa: E711
    assert as_data_type("float") == np.float32  # the alias the graph takes, not NumPy's float64
    big = as_data_type(np.dtype(">f4"))  # named float32, but no type of the tables
    assert big == np.dtype(">f4") and big != as_data_type("float32") and big.numpy.byteorder == ">"
    assert dtype_name(as_data_type("bf16")) == "bfloat16" and str(half) == "float16"
    with pytest.raises(TypeError, match=r"'floot16' is not a data type.*float16"):
        as_data_type("floot16", name="dtype")


def test_the_tables_take_data_types_and_numpy_dtypes() -> None:
    assert CUDNN_DATA_TYPE_NAMES[as_data_type("bf16")] == "BFLOAT16"
    assert CUDNN_DATA_TYPE_NAMES[np.dtype(ml_dtypes.bfloat16)] == "BFLOAT16"
    assert CUDA_DATA_TYPE_NAMES[as_numpy_dtype("half")] == "R_16F"
    assert np.dtype(">f4") not in CUDNN_DATA_TYPE_NAMES  # a name is not enough: the byte order
    assert as_data_type(np.dtype(">f4")) not in CUDNN_DATA_TYPE_NAMES  # wrapped in a DataType too
    assert as_data_type(np.dtype(">i4")) not in CUDA_DATA_TYPE_NAMES
    assert as_data_type(np.dtype("<f4")) in CUDNN_DATA_TYPE_NAMES  # this machine's own order
    assert CUDNN_DATA_TYPE_NAMES.get(as_data_type("int16")) is None  # cuDNN has no int16
    assert "float16" in CUDNN_DATA_TYPE_NAMES.type_names()
    assert len(CUDNN_DATA_TYPE_NAMES) == len(CUDNN_DATA_TYPE_NAMES.type_names())


def test_numpy_types_answers_without_importing_numpy() -> None:
    assert numpy_types("ndarray", "generic") == (np.ndarray, np.generic)  # imported here
    out = run_python(
        """
        import sys
        from _nvbind.lazy_numpy import np, numpy_types
        print(numpy_types("ndarray"), "numpy" in sys.modules)
        print(np.ndarray.__name__, "numpy" in sys.modules, numpy_types("ndarray")[0] is np.ndarray)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["()", "False", "ndarray", "True", "True"]


def test_graph_settings_and_attributes_stay_numpy_dtypes() -> None:
    g = pycudnn.Graph("settings", compute_dtype="float32", io_dtype=np.float16)
    assert isinstance(g.compute_dtype, np.dtype) and g.compute_dtype == np.float32
    assert g.io_dtype == np.dtype("float16") and g.intermediate_dtype == np.float32
    x = g.tensor([1, 8, 4, 4], fmt="NHWC", dtype=ml_dtypes.bfloat16, name="x")
    assert isinstance(x.dtype, np.dtype) and x.dtype == ml_dtypes.bfloat16
    assert isinstance(x.element_type, DataType) and x.element_type.name == "bfloat16"
    y = g.relu(x)
    assert y.dtype is None  # decided when the graph is finalized
    y.set_dtype(np.float32)
    assert y.dtype == np.float32 and y.element_type is as_data_type("float32")
    # the graph's own dims and strides take NumPy arrays and scalars as before
    t = g.tensor(np.array([1, 8, 2, 2]), strides=[np.int64(32), 4, 2, 1], name="t")  # type: ignore[arg-type]
    assert t.dims == (1, 8, 2, 2) and t.strides == (32, 4, 2, 1)
    assert "numpy" in sys.modules  # (imported by this module: nothing above needed a child)


def test_a_big_endian_graph_tensor_is_refused_as_before() -> None:
    g = pycudnn.Graph("big")
    with pytest.raises(GraphError, match="cuDNN has no data type for float32"):
        g.tensor([1, 8, 4, 4], dtype=">f4", name="x")


def test_describing_while_another_thread_imports_numpy() -> None:
    """A thread that describes graphs while another imports NumPy for the first time meets NumPy's
    module half made in sys.modules: the type checks wait for it instead of failing."""
    out = run_python(
        """
        import sys, threading, time
        import pycudnn
        from pycudnn import layout
        assert "numpy" not in sys.modules
        errors, stop = [], threading.Event()

        def describe():
            while not stop.is_set():
                try:
                    layout.packed_strides([2, 3, 4, 5], "NCHW")
                    g = pycudnn.Graph("g")
                    g.relu(g.tensor([2, 8, 4, 4], dtype="float16", name="x"))
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    return

        t = threading.Thread(target=describe)
        t.start()
        time.sleep(0.05)
        import numpy
        time.sleep(0.05)
        stop.set()
        t.join()
        print(errors)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
