"""Fused cuDNN graphs in a few lines: tensors, operations, and the checks that catch mistakes early.

>>> g = pycudnn.Graph("conv_bias_relu")
>>> x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
>>> w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
>>> b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="bias")
>>> y = g.relu(g.add(g.conv_fprop(x, w, padding=1), b))
>>> plan = g.build()                                  # heuristics -> execution plan
>>> plan.execute({x: x_gpu, w: w_gpu, b: b_gpu, y: y_gpu})

Dims are given in logical order (N, C, [D,] H, W for convolutions; batch..., M, N for matmul); the
layout is the strides, or a format string (``fmt="NHWC"``) that becomes strides. Operations return
their output tensor with its dims computed (convolution output formula, matmul ``[..., M, N]``,
pointwise broadcast, reduction from ``axes``). An op output that only feeds other ops and is not
marked with :meth:`Tensor.set_output` becomes a *virtual* tensor (never in memory, fp32 by default);
one that feeds nothing is a graph output, in the graph's ``io_dtype`` or else the dtype of the
inputs it was computed from.

Every mistake the graph can see is reported when the operation is added, naming the operation and
the tensor: ``conv_fprop 'conv1': X has 64 channels but W expects 32 (W dims [32, 32, 3, 3])``.
What only cuDNN can judge is reported by :meth:`Graph.finalize` (or ``build``), with cuDNN's reason
and the operation's name.

Planning, execution, autotuning and caching are in :mod:`pycudnn.plan`; :meth:`Graph.build` and
:meth:`Graph.autotune` are the entry points.

Threads: cuDNN is thread-safe as long as threads do not use one handle at the same time, and
promises nothing about sharing descriptors or plans. So build, finalize and plan a graph on one
thread (several threads may each build their own graphs at once); share a
:class:`~pycudnn.DeviceProperties` or a :class:`~pycudnn.plan.PlanCache` freely (both lock); keep
a :class:`~pycudnn.Plan` to one thread at a time (the default plan cache is per thread for that
reason). Backend descriptors and plans cannot be copied (a copy would be a second owner of the
same cuDNN object): build another one.
"""

from __future__ import annotations

import enum
import hashlib
import json
import numbers
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _bindings, layout
from ._shared.dtypes import CUDNN_DATA_TYPE_NAMES, as_numpy_dtype, dtype_name

if TYPE_CHECKING:  # pragma: no cover
    from .backend import BackendDescriptor
    from .deviceprops import DeviceProperties
    from .plan import EngineConfig, HeuristicsResult, Plan

__all__ = [
    "CURRENT_GPU",
    "MAX_RANK",
    "MIN_RANK",
    "POINTWISE_ARITY",
    "Graph",
    "GraphError",
    "Operation",
    "Tensor",
    "pointwise_arity",
    "pointwise_mode",
    "reduction_operator",
]

MIN_RANK = 3  # cuDNN's graph engines expect at least a batch dimension (BMN, NCHW, ...)
MAX_RANK = int(getattr(_bindings, "CUDNN_DIM_MAX", 8))

PointwiseMode: Any = _bindings.cudnnPointwiseMode_t
ReduceOp: Any = _bindings.cudnnReduceTensorOp_t
DataType: Any = _bindings.cudnnDataType_t


_CONV_OPS = frozenset({"conv_fprop", "conv_dgrad", "conv_wgrad"})


class _CurrentGpu:
    """The type of :data:`CURRENT_GPU`."""

    def __repr__(self) -> str:
        return "pycudnn.graph.CURRENT_GPU"


#: The default planning target of :meth:`Graph.finalize`: the calling thread's handle for the
#: current GPU when one is usable, else no handle (deviceless).
CURRENT_GPU: Any = _CurrentGpu()


def _resolve_handle(handle: Any) -> Any:
    """A :class:`pycudnn.Handle` or None for ``Graph.finalize(handle=...)``."""
    if handle is CURRENT_GPU:
        from ._shared.cuda import driver_status

        if not driver_status().usable:
            return None
        from .handle import get_handle

        return get_handle()
    if handle is not None:
        from .handle import Handle

        if not isinstance(handle, Handle):
            raise TypeError(
                f"handle must be a pycudnn.Handle, None (deviceless) or CURRENT_GPU, not "
                f"{type(handle).__name__}"
            )
        if handle.closed:
            from ._shared.resource import ClosedError

            raise ClosedError("handle: this cuDNN handle is closed")
    return handle


class GraphError(ValueError):
    """A graph was built wrongly (shapes, dtypes, ranks, layouts): raised before cuDNN is called."""


# --------------------------------------------------------------------------------------------------
# Pointwise modes: arity from the enumerator names
# --------------------------------------------------------------------------------------------------

# Binary arithmetic and logic; comparisons (CMP_*) are binary too. Activation backward modes
# (*_BWD) take the forward input and the incoming gradient; BINARY_SELECT takes three tensors.
_BINARY = frozenset(
    {
        "ADD",
        "ADD_SQUARE",
        "DIV",
        "MAX",
        "MIN",
        "MOD",
        "MUL",
        "POW",
        "SUB",
        "ATAN2",
        "FLOOR_MOD",
        "LOGICAL_AND",
        "LOGICAL_OR",
    }
)


def pointwise_arity(mode: Any) -> int:
    """Number of input tensors of a pointwise mode: 1, 2 (binary, comparisons, ``*_BWD``) or 3."""
    name = pointwise_mode(mode).name
    if name == "BINARY_SELECT":
        return 3
    if name.endswith("_BWD") or name.startswith("CMP_") or name in _BINARY:
        return 2
    return 1


def _enum_member(enum_cls: type[enum.IntEnum], value: Any, prefix: str, what: str) -> Any:
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        key = value.strip().upper()
        key = key.removeprefix(prefix)
        if key in enum_cls.__members__:
            return enum_cls[key]
        raise GraphError(
            f"unknown {what} {value!r}; choose from {', '.join(m.name.lower() for m in enum_cls)}"
        )
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        try:
            return enum_cls(int(value))
        except ValueError:
            raise GraphError(f"{int(value)} is not a {enum_cls.__name__} value") from None
    raise TypeError(f"{what} must be a name or a {enum_cls.__name__}, not {value!r}")


def pointwise_mode(mode: Any) -> Any:
    """A ``cudnnPointwiseMode_t`` from a member, int or name (``"relu_fwd"``, ``"CMP_GT"``)."""
    return _enum_member(PointwiseMode, mode, "CUDNN_POINTWISE_", "pointwise mode")


def reduction_operator(op: Any) -> Any:
    """A ``cudnnReduceTensorOp_t`` from a member, int or name (``"add"``, ``"max"``, ``"amax"``)."""
    return _enum_member(ReduceOp, op, "CUDNN_REDUCE_TENSOR_", "reduction operator")


#: Every ``cudnnPointwiseMode_t`` of the headers and its number of inputs.
POINTWISE_ARITY: dict[str, int] = {m.name: pointwise_arity(m) for m in PointwiseMode}


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


def _ints(value: Any, what: str, n: int | None = None) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) and n is not None:
            return (int(value),) * n
        raise TypeError(f"{what} must be a sequence of ints, not {value!r}")
    items = value.tolist() if isinstance(value, np.ndarray) else list(value)
    out = []
    for i, v in enumerate(items):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{what}[{i}] must be an int, not {v!r}")
        out.append(int(v))
    if n is not None and len(out) != n:
        raise GraphError(f"{what} has {len(out)} entries but {n} are needed")
    return tuple(out)


def _cudnn_dtype(dtype: np.dtype, what: str) -> Any:
    name = CUDNN_DATA_TYPE_NAMES.get(np.dtype(dtype))
    if name is None or name not in DataType.__members__:
        known = ", ".join(sorted(dtype_name(d) for d in CUDNN_DATA_TYPE_NAMES))
        raise GraphError(f"{what}: cuDNN has no data type for {dtype_name(dtype)} (known: {known})")
    return DataType[name]


def _dims_text(dims: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _broadcast(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


_INT64_MAX = 2**63 - 1


def _check_extent(
    dims: Sequence[int], strides: Sequence[int], dtype: np.dtype | None, label: str
) -> None:
    """Refuse tensors whose byte extent does not fit in int64: cuDNN takes dims and strides as
    int64 and computes byte offsets from them (values past 2**63 would wrap)."""
    itemsize = np.dtype(dtype).itemsize if dtype is not None else 1
    span = (sum((d - 1) * s for d, s in zip(dims, strides, strict=True)) + 1) * itemsize
    if span > _INT64_MAX:
        raise GraphError(
            f"{label}: dims {_dims_text(dims)} with strides {_dims_text(strides)} span {span} "
            "bytes, more than an int64 can address"
        )


def _format_of(dims: Sequence[int], strides: Sequence[int]) -> str:
    try:
        return layout.strides_to_format(dims, strides)
    except ValueError:
        return "ABCDEFGH"[: len(dims)]


# --------------------------------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------------------------------


class Tensor:
    """A tensor of a :class:`Graph` (``CUDNN_BACKEND_TENSOR_DESCRIPTOR`` once finalized).

    Created by :meth:`Graph.tensor` or as the output of an operation. Use it as the key of the
    arrays passed to ``plan.execute``. ``dtype`` and ``virtual`` of operation outputs are decided
    when the graph is finalized unless given.
    """

    __slots__ = (
        "_dtype",
        "_is_output",
        "_virtual",
        "alignment",
        "by_value",
        "consumers",
        "dims",
        "graph",
        "name",
        "producer",
        "strides",
        "uid",
        "value",
    )

    def __init__(
        self,
        graph: Graph,
        uid: int,
        name: str,
        *,
        dims: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: np.dtype | None,
        virtual: bool | None = False,
        by_value: bool = False,
        value: Any = None,
        alignment: int = 16,
    ) -> None:
        self.graph = graph
        self.uid = uid
        self.name = name
        self.dims = dims
        self.strides = strides
        self._dtype = dtype
        self._virtual = virtual
        self._is_output: bool | None = None
        self.by_value = by_value
        self.value = value
        self.alignment = alignment
        self.producer: Operation | None = None
        self.consumers: list[Operation] = []

    # -- resolved properties --------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.dims

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def dtype(self) -> np.dtype | None:
        """The element type (None for an op output whose type is decided at finalize)."""
        return self._dtype

    @property
    def is_virtual(self) -> bool | None:
        """True for intermediates that never exist in memory (None until decided)."""
        return self._virtual

    @property
    def is_output(self) -> bool:
        """True when the graph writes this tensor to memory the caller provides."""
        if self.producer is None:
            return False
        if self._is_output is not None:
            return self._is_output
        return not self.consumers

    @property
    def format(self) -> str:
        """The memory format its strides describe (``"NHWC"``, ``"BMN"``, ...)."""
        return _format_of(self.dims, self.strides)

    def set_output(self, is_output: bool = True, *, dtype: Any = None) -> Tensor:
        """Mark an op output as a graph output (kept in memory even if other ops consume it)."""
        self.graph._check_mutable()
        if self.producer is None:
            raise GraphError(f"tensor '{self.name}' is a graph input, not an operation output")
        if not isinstance(is_output, bool):
            raise TypeError(f"is_output must be a bool, not {is_output!r}")
        if is_output and self._virtual:
            raise GraphError(f"tensor '{self.name}' was declared virtual; it cannot be an output")
        self._is_output = is_output
        if dtype is not None:
            self.set_dtype(dtype)
        return self

    def set_dtype(self, dtype: Any) -> Tensor:
        """Choose the element type of an op output (default: see the module docstring)."""
        self.graph._check_mutable()
        dt = as_numpy_dtype(dtype, name=f"dtype of tensor '{self.name}'")
        _cudnn_dtype(dt, f"tensor '{self.name}'")
        self._dtype = dt
        return self

    def describe(self) -> str:
        dt = dtype_name(self._dtype) if self._dtype is not None else "auto"
        flags = []
        if self._virtual:
            flags.append("virtual")
        if self.by_value:
            flags.append(f"by value={self.value!r}" if self.value is not None else "by value")
        if self.producer is not None and self.is_output:
            flags.append("output")
        extra = f" ({', '.join(flags)})" if flags else ""
        return f"'{self.name}' #{self.uid} {_dims_text(self.dims)} {dt} {self.format}{extra}"

    def __repr__(self) -> str:
        return f"<pycudnn.graph.Tensor {self.describe()}>"


# --------------------------------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------------------------------


class Operation:
    """One node: its kind, name, input and output tensors by role, and its settings."""

    __slots__ = ("attrs", "inputs", "kind", "name", "outputs")

    def __init__(
        self,
        kind: str,
        name: str,
        inputs: dict[str, Tensor],
        outputs: dict[str, Tensor],
        attrs: dict[str, Any],
    ) -> None:
        self.kind = kind
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs

    @property
    def label(self) -> str:
        """How messages name the operation: ``conv_fprop 'conv1'``, ``relu_fwd 'act'``."""
        mode = self.attrs.get("mode") if self.kind == "pointwise" else None
        kind = mode.name.lower() if isinstance(mode, enum.Enum) else self.kind
        return f"{kind} '{self.name}'"

    def describe(self) -> str:
        ins = ", ".join(f"{r}='{t.name}'" for r, t in self.inputs.items())
        outs = ", ".join(f"{r}='{t.name}'" for r, t in self.outputs.items())
        settings = ", ".join(f"{k}={_attr_text(v)}" for k, v in self.attrs.items())
        return f"{self.label}: {ins} -> {outs}" + (f" [{settings}]" if settings else "")

    def __repr__(self) -> str:
        return f"<pycudnn.graph.Operation {self.describe()}>"


def _attr_text(v: Any) -> str:
    if isinstance(v, enum.Enum):
        return v.name.lower()
    if isinstance(v, np.dtype):
        return dtype_name(v)
    if isinstance(v, tuple):
        return _dims_text(v)
    return repr(v)


# --------------------------------------------------------------------------------------------------
# The graph
# --------------------------------------------------------------------------------------------------


class Graph:
    """A cuDNN operation graph under construction, then finalized (``CUDNN_BACKEND_OPERATIONGRAPH``).

    ``compute_dtype`` is the default math precision of operations; ``intermediate_dtype`` the type
    of virtual tensors; ``io_dtype`` (optional) the type of graph outputs whose type is not given.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        compute_dtype: Any = "float32",
        intermediate_dtype: Any = "float32",
        io_dtype: Any = None,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str, not {name!r}")
        self.name = name or "graph"
        self.compute_dtype = self._dtype_arg(compute_dtype, "compute_dtype")
        self.intermediate_dtype = self._dtype_arg(intermediate_dtype, "intermediate_dtype")
        self.io_dtype = None if io_dtype is None else self._dtype_arg(io_dtype, "io_dtype")
        self._tensors: list[Tensor] = []
        self._names: dict[str, Tensor] = {}
        self._ops: list[Operation] = []
        self._op_names: set[str] = set()
        self._counters: dict[str, int] = {}
        self._next_uid = 1
        self._resolved = False
        self._signature: str | None = None
        # Backend descriptors, one set per planning target (see finalize) and per description
        # variant (see pycudnn.rewrites): {(id(handle) or None, variant): descriptor set}.
        self._descriptor_sets: dict[tuple[int | None, str], dict[str, Any]] = {}
        self._descriptor_lock = threading.Lock()

    @staticmethod
    def _dtype_arg(dtype: Any, what: str) -> np.dtype:
        dt = as_numpy_dtype(dtype, name=what)
        _cudnn_dtype(dt, what)
        return dt

    # -- state -------------------------------------------------------------------------------
    @property
    def tensors(self) -> list[Tensor]:
        return list(self._tensors)

    @property
    def operations(self) -> list[Operation]:
        return list(self._ops)

    @property
    def inputs(self) -> list[Tensor]:
        """Tensors the caller provides (graph inputs, including by-value scalars)."""
        return [t for t in self._tensors if t.producer is None]

    @property
    def outputs(self) -> list[Tensor]:
        """Operation outputs kept in memory."""
        return [t for t in self._tensors if t.producer is not None and t.is_output]

    @property
    def is_finalized(self) -> bool:
        """True once backend descriptors were built for some target (see :meth:`finalize`)."""
        return bool(self._descriptor_sets)

    @property
    def _descriptors(self) -> dict[str, Any] | None:
        # The descriptor set most recently built (for tests and debugging).
        sets = list(self._descriptor_sets.values())
        return sets[-1] if sets else None

    def _check_mutable(self) -> None:
        if self._resolved:
            raise GraphError(
                f"graph '{self.name}' is finalized (it was built or its key was taken); create a "
                "new Graph to change it"
            )

    def __getitem__(self, name: str) -> Tensor:
        try:
            return self._names[name]
        except KeyError:
            raise KeyError(f"graph '{self.name}' has no tensor named {name!r}") from None

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Tensor):
            return item.graph is self
        return item in self._names

    # -- tensors ------------------------------------------------------------------------------
    def _unique_name(self, name: str | None, default: str) -> str:
        if name is None:
            name = default
            k = 1
            while name in self._names:
                k += 1
                name = f"{default}_{k}"
            return name
        if not isinstance(name, str) or not name:
            raise TypeError(f"a tensor name must be a non-empty str, not {name!r}")
        if name in self._names:
            raise GraphError(f"graph '{self.name}' already has a tensor named {name!r}")
        return name

    def _new_tensor(
        self,
        name: str,
        dims: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: np.dtype | None,
        **kw: Any,
    ) -> Tensor:
        t = Tensor(self, self._next_uid, name, dims=dims, strides=strides, dtype=dtype, **kw)
        self._next_uid += 1
        self._tensors.append(t)
        self._names[name] = t
        return t

    def tensor(
        self,
        dims: Sequence[int],
        strides: Sequence[int] | None = None,
        *,
        fmt: str | None = None,
        dtype: Any = "float32",
        name: str | None = None,
        virtual: bool = False,
        by_value: bool | float | int = False,
        alignment: int = 16,
    ) -> Tensor:
        """A graph tensor (an input, or an output to pass as ``out=`` to an operation).

        ``dims`` in logical order, 3 to 8 of them; ``strides`` in elements, or ``fmt`` (``"NHWC"``,
        ``"NCHW"``, ``"NDHWC"``, ``"BMN"``, ...), default row-major packed. ``by_value`` makes a
        host scalar passed by value: ``True`` (value given at execute time) or the value itself;
        its dims must all be 1. ``alignment`` is the byte alignment promised for the data pointer
        (a power of two, a multiple of the element size).
        """
        self._check_mutable()
        label = f"tensor '{name}'" if name else "tensor"
        dims_t = self._check_dims(dims, label)
        dt = as_numpy_dtype(dtype, name=f"dtype of {label}")
        _cudnn_dtype(dt, label)
        strides_t = self._check_strides(dims_t, strides, fmt, label)
        _check_extent(dims_t, strides_t, dt, label)
        if not isinstance(virtual, bool):
            raise TypeError(f"{label}: virtual must be a bool, not {virtual!r}")
        if isinstance(alignment, bool) or not isinstance(alignment, int):
            raise TypeError(f"{label}: alignment must be an int, not {alignment!r}")
        if alignment < 1 or alignment & (alignment - 1) or alignment % dt.itemsize:
            raise GraphError(
                f"{label}: alignment {alignment} must be a power of two and a multiple of the "
                f"element size ({dt.itemsize} bytes for {dtype_name(dt)})"
            )
        is_scalar, value = False, None
        if by_value is True:
            is_scalar = True
        elif by_value is not False:
            if not isinstance(by_value, (numbers.Number, np.generic)):
                raise TypeError(f"{label}: by_value must be a bool or a number, not {by_value!r}")
            is_scalar, value = True, by_value
        if is_scalar:
            if any(d != 1 for d in dims_t):
                raise GraphError(
                    f"{label}: a by-value scalar has all dims 1, got {_dims_text(dims_t)}"
                )
            if virtual:
                raise GraphError(f"{label}: a by-value scalar cannot be virtual")
        return self._new_tensor(
            self._unique_name(name, f"t{self._next_uid}"),
            dims_t,
            strides_t,
            dt,
            virtual=virtual,
            by_value=is_scalar,
            value=value,
            alignment=alignment,
        )

    def scalar(
        self, value: Any = None, *, dtype: Any = "float32", rank: int = 4, name: str | None = None
    ) -> Tensor:
        """A by-value host scalar (dims ``[1] * rank``); ``value`` None means given at execute."""
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise TypeError(f"rank must be an int, not {rank!r}")
        return self.tensor(
            [1] * rank, dtype=dtype, name=name, by_value=True if value is None else value
        )

    @staticmethod
    def _check_dims(dims: Any, label: str) -> tuple[int, ...]:
        dims_t = _ints(dims, f"{label}: dims")
        if not MIN_RANK <= len(dims_t) <= MAX_RANK:
            raise GraphError(
                f"{label}: dims {_dims_text(dims_t)} has rank {len(dims_t)}; graph tensors have "
                f"{MIN_RANK} to {MAX_RANK} dims (use leading 1s for a batch dimension)"
            )
        for i, d in enumerate(dims_t):
            if d < 1:
                raise GraphError(f"{label}: dims[{i}] is {d}; extents must be positive")
        return dims_t

    @staticmethod
    def _check_strides(
        dims: tuple[int, ...], strides: Any, fmt: Any, label: str
    ) -> tuple[int, ...]:
        if strides is not None and fmt is not None:
            raise GraphError(f"{label}: give strides or fmt, not both")
        if fmt is not None:
            try:
                return tuple(layout.packed_strides(dims, fmt))
            except (ValueError, TypeError) as exc:
                raise GraphError(f"{label}: {exc}") from None
        if strides is None:
            return tuple(layout.packed_strides(dims, "ABCDEFGH"[: len(dims)]))
        s = _ints(strides, f"{label}: strides")
        if len(s) != len(dims):
            raise GraphError(
                f"{label}: strides {_dims_text(s)} has {len(s)} entries but dims "
                f"{_dims_text(dims)} has {len(dims)}"
            )
        for i, v in enumerate(s):
            if v < 0:
                raise GraphError(
                    f"{label}: strides[{i}] is {v}; cuDNN's graph API takes no negative strides"
                )
            if v == 0:
                raise GraphError(
                    f"{label}: strides[{i}] is 0; strides must be positive (broadcast with "
                    "size-1 dims instead)"
                )
        return s

    # -- operation plumbing ---------------------------------------------------------------------
    def _op_name(self, kind: str, name: str | None) -> str:
        if name is not None:
            if not isinstance(name, str) or not name:
                raise TypeError(f"an operation name must be a non-empty str, not {name!r}")
            if name in self._op_names:
                raise GraphError(f"graph '{self.name}' already has an operation named {name!r}")
            return name
        n = self._counters.get(kind, 0)
        while f"{kind}{n}" in self._op_names:
            n += 1
        self._counters[kind] = n + 1
        return f"{kind}{n}"

    def _own(self, t: Any, op_label: str, role: str) -> Tensor:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{op_label}: {role} must be a Tensor of this graph, not {type(t).__name__}"
            )
        if t.graph is not self:
            raise GraphError(
                f"{op_label}: {role} ('{t.name}') belongs to graph '{t.graph.name}', not "
                f"'{self.name}'"
            )
        return t

    def _output(
        self,
        op_label: str,
        op_name: str,
        role: str,
        dims: tuple[int, ...],
        like: Tensor,
        *,
        out: Tensor | None,
        out_dtype: Any,
        strides: tuple[int, ...] | None = None,
        inputs: Iterable[Tensor] = (),
    ) -> Tensor:
        if out is not None:
            if not isinstance(out, Tensor) or out.graph is not self:
                raise GraphError(f"{op_label}: out must be a Tensor of this graph")
            if any(out is t for t in inputs):
                # An operation that writes its own input is a cycle; cuDNN only refuses it later,
                # with "outputGraph.buildDAG()".
                raise GraphError(
                    f"{op_label}: out ('{out.name}') is also an input of the operation; an "
                    "operation cannot write the tensor it reads"
                )
            if out.producer is not None:
                raise GraphError(
                    f"{op_label}: out ('{out.name}') is already written by {out.producer.label}"
                )
            if out.consumers:
                raise GraphError(
                    f"{op_label}: out ('{out.name}') is already read by {out.consumers[0].label}; "
                    "an output must be produced before it is consumed"
                )
            if out.by_value:
                raise GraphError(f"{op_label}: out ('{out.name}') is a by-value scalar")
            if out.dims != dims:
                raise GraphError(
                    f"{op_label}: {role.upper()} ('{out.name}') has dims {_dims_text(out.dims)} but "
                    f"the operation produces {_dims_text(dims)}"
                )
            if out_dtype is not None:
                out.set_dtype(out_dtype)
            if not out.is_virtual:
                out._is_output = True
            return out
        if strides is None:
            strides = tuple(layout.packed_strides(dims, _format_of(like.dims, like.strides)))
        dt = None
        if out_dtype is not None:
            dt = as_numpy_dtype(out_dtype, name=f"{op_label}: out_dtype")
            _cudnn_dtype(dt, f"{op_label}: out_dtype")
        return self._new_tensor(
            self._unique_name(None, f"{op_name}.{role}"), dims, strides, dt, virtual=None
        )

    def _add_op(
        self,
        kind: str,
        name: str,
        inputs: dict[str, Tensor],
        outputs: dict[str, Tensor],
        attrs: dict[str, Any],
    ) -> Operation:
        op = Operation(kind, name, inputs, outputs, attrs)
        for t in inputs.values():
            t.consumers.append(op)
        for t in outputs.values():
            t.producer = op
        self._ops.append(op)
        self._op_names.add(name)
        return op

    def _begin_op(self, kind: str, name: str | None) -> tuple[str, str]:
        """Name a new convolution or matmul operation and check it may join this graph.

        Returns ``(op_name, label)``; ``label`` prefixes every error message about the operation.
        """
        op_name = self._op_name(kind, name)
        label = f"{kind} '{op_name}'"
        self._check_mutable()
        self._check_kind_mix(kind, label)
        return op_name, label

    def _check_kind_mix(self, kind: str, label: str) -> None:
        # cuDNN (9.28) has no engine for a graph holding both a convolution and a matmul, and its
        # heuristics crash the process on some of them (side by side, or a matmul reading a
        # convolution's output) as soon as engine configs can be materialized (on a GPU, or with
        # DEVICEPROP). Refused here, before cuDNN sees such a graph.
        clash = (lambda k: k == "matmul") if kind in _CONV_OPS else (lambda k: k in _CONV_OPS)
        for op in self._ops:
            if clash(op.kind):
                raise GraphError(
                    f"{label}: graph '{self.name}' already has {op.label}; cuDNN cannot run "
                    "convolutions and matmuls in one graph (its heuristics crash on such graphs): "
                    "build one graph for each"
                )

    def _compute(self, compute_dtype: Any, op_label: str) -> np.dtype:
        if compute_dtype is None:
            return self.compute_dtype
        dt = as_numpy_dtype(compute_dtype, name=f"{op_label}: compute_dtype")
        _cudnn_dtype(dt, f"{op_label}: compute_dtype")
        return dt

    @staticmethod
    def _real(value: Any, what: str) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{what} must be a real number, not {value!r}")
        return float(value)

    # -- convolution ----------------------------------------------------------------------------
    def _conv_settings(
        self,
        label: str,
        spatial: int,
        *,
        padding: Any,
        stride: Any,
        dilation: Any,
        post_padding: Any,
        mode: str,
    ) -> dict[str, Any]:
        pre = _ints(padding, f"{label}: padding", spatial)
        post = (
            pre if post_padding is None else _ints(post_padding, f"{label}: post_padding", spatial)
        )
        strides = _ints(stride, f"{label}: stride", spatial)
        dil = _ints(dilation, f"{label}: dilation", spatial)
        for what, values, low in (
            ("padding", pre, 0),
            ("post_padding", post, 0),
            ("stride", strides, 1),
            ("dilation", dil, 1),
        ):
            for i, v in enumerate(values):
                if v < low:
                    rule = "non-negative" if low == 0 else "positive"
                    raise GraphError(f"{label}: {what}[{i}] is {v}; it must be {rule}")
                if v > _INT64_MAX:
                    raise GraphError(f"{label}: {what}[{i}] is {v}; it must fit in an int64")
        if not isinstance(mode, str) or mode.lower() not in ("cross_correlation", "convolution"):
            raise GraphError(
                f"{label}: mode must be 'cross_correlation' (the deep-learning convolution) or "
                f"'convolution' (flipped filter), not {mode!r}"
            )
        return {
            "pre_padding": pre,
            "post_padding": post,
            "stride": strides,
            "dilation": dil,
            "mode": mode.lower(),
        }

    @staticmethod
    def _conv_out(in_sp: Sequence[int], k_sp: Sequence[int], s: dict[str, Any]) -> tuple[int, ...]:
        return tuple(
            (i + a + b - d * (k - 1) - 1) // st + 1
            for i, k, a, b, st, d in zip(
                in_sp,
                k_sp,
                s["pre_padding"],
                s["post_padding"],
                s["stride"],
                s["dilation"],
                strict=True,
            )
        )

    def _check_conv_rank(self, label: str, **tensors: Tensor) -> int:
        ranks = {t.ndim for t in tensors.values()}
        first = next(iter(tensors))
        for role, t in tensors.items():
            if t.ndim != tensors[first].ndim:
                raise GraphError(
                    f"{label}: {role.upper()} ('{t.name}') has rank {t.ndim} but "
                    f"{first.upper()} ('{tensors[first].name}') has rank {tensors[first].ndim}"
                )
            if not 3 <= t.ndim <= 5:
                raise GraphError(
                    f"{label}: {role.upper()} ('{t.name}') has rank {t.ndim}; convolutions take "
                    "rank 3 to 5 tensors (N, C and 1 to 3 spatial dims)"
                )
        return ranks.pop() - 2

    def _conv_operands(
        self, label: str, a: tuple[str, Any], b: tuple[str, Any], groups: Any
    ) -> tuple[Tensor, Tensor, int, int]:
        """Check a convolution's two operands (given as ``(role, tensor)``) and its ``groups``.

        Returns the two tensors, the number of spatial dims and the group count.
        """
        (ra, ta), (rb, tb) = a, b
        ta, tb = self._own(ta, label, ra), self._own(tb, label, rb)
        spatial = self._check_conv_rank(label, **{ra.lower(): ta, rb.lower(): tb})
        self._check_conv_dtypes(label, (ra, ta), (rb, tb))
        return ta, tb, spatial, self._groups(groups, label)

    def _conv_attrs(
        self, label: str, s: dict[str, Any], compute_dtype: Any, alpha: Any, beta: Any
    ) -> dict[str, Any]:
        """The attributes every convolution records: its settings, compute type and scales."""
        return dict(
            s,
            compute_dtype=self._compute(compute_dtype, label),
            alpha=self._real(alpha, f"{label}: alpha"),
            beta=self._real(beta, f"{label}: beta"),
        )

    def _check_conv_dtypes(self, label: str, a: tuple[str, Tensor], b: tuple[str, Tensor]) -> None:
        (ra, ta), (rb, tb) = a, b
        for role, t in (a, b):
            if t.dtype is not None and t.dtype.kind == "b":
                raise GraphError(
                    f"{label}: {role} ('{t.name}') is boolean; convolutions need numbers"
                )
        if ta.dtype is not None and tb.dtype is not None and ta.dtype != tb.dtype:
            raise GraphError(
                f"{label}: {ra} ('{ta.name}') is {dtype_name(ta.dtype)} but {rb} ('{tb.name}') is "
                f"{dtype_name(tb.dtype)}; convolution operands must have the same data type"
            )

    def conv_fprop(
        self,
        x: Tensor,
        w: Tensor,
        *,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        post_padding: int | Sequence[int] | None = None,
        groups: int = 1,
        mode: str = "cross_correlation",
        compute_dtype: Any = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Convolution forward (``OPERATION_CONVOLUTION_FORWARD``): ``Y = alpha*conv(X, W) + beta*Y``.

        ``X`` is ``[N, C, spatial...]``, ``W`` is ``[K, C/groups, filter...]``, ``Y`` is
        ``[N, K, out...]`` with ``out = (in + pre + post - dilation*(filter-1) - 1) // stride + 1``.
        ``padding`` is the pre-padding (and the post-padding unless ``post_padding`` is given).
        """
        kind = "conv_fprop"
        op_name, label = self._begin_op(kind, name)
        x, w, spatial, g = self._conv_operands(label, ("X", x), ("W", w), groups)
        if x.dims[1] != w.dims[1] * g:
            expect = w.dims[1] * g
            raise GraphError(
                f"{label}: X has {x.dims[1]} channels but W expects {expect} "
                f"(W dims {_dims_text(w.dims)}" + (f", {g} groups)" if g > 1 else ")")
            )
        if w.dims[0] % g:
            raise GraphError(
                f"{label}: W has {w.dims[0]} output channels, not a multiple of groups={g}"
            )
        s = self._conv_settings(
            label,
            spatial,
            padding=padding,
            stride=stride,
            dilation=dilation,
            post_padding=post_padding,
            mode=mode,
        )
        out_sp = self._conv_out(x.dims[2:], w.dims[2:], s)
        for i, v in enumerate(out_sp):
            if v < 1:
                raise GraphError(
                    f"{label}: spatial dim {i} of the output would be {v} (X {_dims_text(x.dims)}, "
                    f"W {_dims_text(w.dims)}, padding {list(s['pre_padding'])}/"
                    f"{list(s['post_padding'])}, stride {list(s['stride'])}, dilation "
                    f"{list(s['dilation'])}): the filter does not fit"
                )
        y_dims = (x.dims[0], w.dims[0], *out_sp)
        y = self._output(
            label, op_name, "y", y_dims, x, out=out, out_dtype=out_dtype, inputs=(x, w)
        )
        attrs = self._conv_attrs(label, s, compute_dtype, alpha, beta)
        self._add_op(kind, op_name, {"x": x, "w": w}, {"y": y}, attrs)
        return y

    @staticmethod
    def _groups(groups: Any, label: str) -> int:
        if isinstance(groups, bool) or not isinstance(groups, int):
            raise TypeError(f"{label}: groups must be an int, not {groups!r}")
        if groups < 1:
            raise GraphError(f"{label}: groups is {groups}; it must be positive")
        return groups

    def conv_dgrad(
        self,
        dy: Tensor,
        w: Tensor,
        *,
        dx_dims: Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        post_padding: int | Sequence[int] | None = None,
        groups: int = 1,
        mode: str = "cross_correlation",
        compute_dtype: Any = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Convolution backward data (``OPERATION_CONVOLUTION_BACKWARD_DATA``): ``dX`` from ``dY``, ``W``.

        ``dx_dims`` defaults to the smallest input that the forward formula maps to ``dY``'s
        spatial dims; give it when ``stride > 1`` and the forward input was larger.
        """
        kind = "conv_dgrad"
        op_name, label = self._begin_op(kind, name)
        dy, w, spatial, g = self._conv_operands(label, ("DY", dy), ("W", w), groups)
        if dy.dims[1] != w.dims[0]:
            raise GraphError(
                f"{label}: DY has {dy.dims[1]} channels but W has {w.dims[0]} output channels "
                f"(W dims {_dims_text(w.dims)})"
            )
        s = self._conv_settings(
            label,
            spatial,
            padding=padding,
            stride=stride,
            dilation=dilation,
            post_padding=post_padding,
            mode=mode,
        )
        if dx_dims is None:
            sp = tuple(
                (o - 1) * st - a - b + d * (k - 1) + 1
                for o, k, a, b, st, d in zip(
                    dy.dims[2:],
                    w.dims[2:],
                    s["pre_padding"],
                    s["post_padding"],
                    s["stride"],
                    s["dilation"],
                    strict=True,
                )
            )
            dxd = (dy.dims[0], w.dims[1] * g, *sp)
            for i, v in enumerate(sp):
                if v < 1:
                    raise GraphError(f"{label}: spatial dim {i} of DX would be {v}; check padding")
        else:
            dxd = self._check_dims(dx_dims, f"{label}: dx_dims")
            if len(dxd) != dy.ndim:
                raise GraphError(f"{label}: dx_dims has rank {len(dxd)} but DY has rank {dy.ndim}")
            if dxd[0] != dy.dims[0] or dxd[1] != w.dims[1] * g:
                raise GraphError(
                    f"{label}: DX dims {_dims_text(dxd)} must be [N={dy.dims[0]}, "
                    f"C={w.dims[1] * g}, ...] for DY {_dims_text(dy.dims)} and W {_dims_text(w.dims)}"
                )
        fwd = self._conv_out(dxd[2:], w.dims[2:], s)
        if fwd != dy.dims[2:]:
            raise GraphError(
                f"{label}: a forward convolution of DX {_dims_text(dxd)} with W {_dims_text(w.dims)} "
                f"gives spatial dims {_dims_text(fwd)}, but DY has {_dims_text(dy.dims[2:])}"
            )
        dx = self._output(
            label, op_name, "dx", dxd, dy, out=out, out_dtype=out_dtype, inputs=(dy, w)
        )
        attrs = self._conv_attrs(label, s, compute_dtype, alpha, beta)
        self._add_op(kind, op_name, {"dy": dy, "w": w}, {"dx": dx}, attrs)
        return dx

    def conv_wgrad(
        self,
        x: Tensor,
        dy: Tensor,
        *,
        dw_dims: Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        post_padding: int | Sequence[int] | None = None,
        groups: int = 1,
        mode: str = "cross_correlation",
        compute_dtype: Any = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Convolution backward filter (``OPERATION_CONVOLUTION_BACKWARD_FILTER``): ``dW`` from ``X``, ``dY``.

        ``dw_dims`` (``[K, C/groups, filter...]``) defaults to the filter size that maps ``X`` onto
        ``dY`` exactly; give it when ``stride > 1``.
        """
        kind = "conv_wgrad"
        op_name, label = self._begin_op(kind, name)
        x, dy, spatial, g = self._conv_operands(label, ("X", x), ("DY", dy), groups)
        if x.dims[0] != dy.dims[0]:
            raise GraphError(f"{label}: X has batch {x.dims[0]} but DY has batch {dy.dims[0]}")
        if x.dims[1] % g:
            raise GraphError(f"{label}: X has {x.dims[1]} channels, not a multiple of groups={g}")
        s = self._conv_settings(
            label,
            spatial,
            padding=padding,
            stride=stride,
            dilation=dilation,
            post_padding=post_padding,
            mode=mode,
        )
        if dw_dims is None:
            ks = []
            for i, (xi, oi, a, b, st, d) in enumerate(
                zip(
                    x.dims[2:],
                    dy.dims[2:],
                    s["pre_padding"],
                    s["post_padding"],
                    s["stride"],
                    s["dilation"],
                    strict=True,
                )
            ):
                span = xi + a + b - 1 - (oi - 1) * st
                if span < 0 or span % d:
                    raise GraphError(
                        f"{label}: no filter size maps X {_dims_text(x.dims)} onto DY "
                        f"{_dims_text(dy.dims)} in spatial dim {i}; pass dw_dims"
                    )
                ks.append(span // d + 1)
            dwd = (dy.dims[1], x.dims[1] // g, *ks)
        else:
            dwd = self._check_dims(dw_dims, f"{label}: dw_dims")
            if len(dwd) != x.ndim:
                raise GraphError(f"{label}: dw_dims has rank {len(dwd)} but X has rank {x.ndim}")
            if dwd[0] != dy.dims[1] or dwd[1] * g != x.dims[1]:
                raise GraphError(
                    f"{label}: DW dims {_dims_text(dwd)} must be [K={dy.dims[1]}, "
                    f"C={x.dims[1] // g}, ...] for X {_dims_text(x.dims)} and DY {_dims_text(dy.dims)}"
                )
        fwd = self._conv_out(x.dims[2:], dwd[2:], s)
        if fwd != dy.dims[2:]:
            raise GraphError(
                f"{label}: a forward convolution of X {_dims_text(x.dims)} with a "
                f"{_dims_text(dwd)} filter gives spatial dims {_dims_text(fwd)}, but DY has "
                f"{_dims_text(dy.dims[2:])}"
            )
        dw = self._output(
            label, op_name, "dw", dwd, x, out=out, out_dtype=out_dtype, inputs=(x, dy)
        )
        attrs = self._conv_attrs(label, s, compute_dtype, alpha, beta)
        self._add_op(kind, op_name, {"x": x, "dy": dy}, {"dw": dw}, attrs)
        return dw

    # -- matmul -------------------------------------------------------------------------------
    def matmul(
        self,
        a: Tensor,
        b: Tensor,
        *,
        compute_dtype: Any = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Batched matrix product (``OPERATION_MATMUL``): ``[..., M, K] x [..., K, N] -> [..., M, N]``.

        Batch dims broadcast (a size-1 batch dim pairs with any size); transposes are expressed by
        strides. Tensors have rank 3 or more (a batch dimension of 1 for a single product).
        """
        kind = "matmul"
        op_name, label = self._begin_op(kind, name)
        a, b = self._own(a, label, "A"), self._own(b, label, "B")
        if a.ndim != b.ndim:
            raise GraphError(
                f"{label}: A ('{a.name}') has rank {a.ndim} but B ('{b.name}') has rank {b.ndim}; "
                "add size-1 batch dims to the smaller one"
            )
        if a.dims[-1] != b.dims[-2]:
            raise GraphError(
                f"{label}: A ('{a.name}') is {_dims_text(a.dims)} and B ('{b.name}') is "
                f"{_dims_text(b.dims)}: A's K ({a.dims[-1]}) must equal B's K ({b.dims[-2]})"
            )
        batch = _broadcast(a.dims[:-2], b.dims[:-2])
        if batch is None:
            raise GraphError(
                f"{label}: batch dims of A {_dims_text(a.dims[:-2])} and B "
                f"{_dims_text(b.dims[:-2])} do not broadcast (each pair equal, or one of them 1)"
            )
        for role, t in (("A", a), ("B", b)):
            if t.dtype is not None and t.dtype.kind == "b":
                raise GraphError(f"{label}: {role} ('{t.name}') is boolean; matmul needs numbers")
            if t.strides[-1] != 1 and t.strides[-2] != 1:
                raise GraphError(
                    f"{label}: {role} ('{t.name}') strides {_dims_text(t.strides)}: one of the two "
                    "matrix dims must have stride 1 (row- or column-major)"
                )
        c_dims = (*batch, a.dims[-2], b.dims[-1])
        row_major = tuple(layout.packed_strides(c_dims, "ABCDEFGH"[: len(c_dims)]))
        c = self._output(
            label,
            op_name,
            "c",
            c_dims,
            a,
            out=out,
            out_dtype=out_dtype,
            strides=row_major,
            inputs=(a, b),
        )
        attrs = {"compute_dtype": self._compute(compute_dtype, label)}
        self._add_op(kind, op_name, {"a": a, "b": b}, {"c": c}, attrs)
        return c

    # -- pointwise ----------------------------------------------------------------------------
    def pointwise(
        self,
        mode: Any,
        x: Tensor,
        b: Tensor | None = None,
        t: Tensor | None = None,
        *,
        compute_dtype: Any = None,
        alpha1: float = 1.0,
        alpha2: float = 1.0,
        relu_lower_clip: float | None = None,
        relu_upper_clip: float | None = None,
        relu_lower_clip_slope: float | None = None,
        elu_alpha: float | None = None,
        softplus_beta: float | None = None,
        swish_beta: float | None = None,
        axis: int | None = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Any ``cudnnPointwiseMode_t`` (``OPERATION_POINTWISE``).

        Unary modes take ``x``; binary modes (arithmetic, ``cmp_*``, ``logical_and/or``) take
        ``x`` and ``b`` with size-1 dims broadcasting; activation-backward modes (``*_bwd``)
        take the forward input ``x`` and the gradient ``b`` (= dY) and return dX;
        ``binary_select`` takes ``x``, ``b`` and the mask ``t`` (``t ? x : b``, no broadcasting).
        """
        pmode = pointwise_mode(mode)
        kind = "pointwise"
        op_name = self._op_name(pmode.name.lower(), name)
        label = f"{pmode.name.lower()} '{op_name}'"
        self._check_mutable()
        arity = pointwise_arity(pmode)
        backward = pmode.name.endswith("_BWD")
        given = [v for v in (x, b, t) if v is not None]
        if len(given) != arity or (arity >= 2 and b is None) or (arity == 3 and t is None):
            roles = {1: "x", 2: "x and dy" if backward else "x and b", 3: "x, b and the mask t"}
            raise GraphError(
                f"{label}: {pmode.name.lower()} takes {arity} input tensor(s) ({roles[arity]}), "
                f"got {len(given)}"
            )
        x = self._own(x, label, "X")
        roles_in = {"x": x}
        if b is not None:
            roles_in["dy" if backward else "b"] = self._own(b, label, "DY" if backward else "B")
        if t is not None:
            roles_in["t"] = self._own(t, label, "T")
        tensors = list(roles_in.items())
        dims = x.dims
        like = x
        for role, other in tensors[1:]:
            if arity == 3:
                if other.dims != x.dims:
                    raise GraphError(
                        f"{label}: {role.upper()} ('{other.name}') is {_dims_text(other.dims)} but X "
                        f"('{x.name}') is {_dims_text(x.dims)}; binary_select does not broadcast"
                    )
                continue
            bd = _broadcast(dims, other.dims)
            if bd is None:
                raise GraphError(
                    f"{label}: {role.upper()} ('{other.name}') dims {_dims_text(other.dims)} do not "
                    f"broadcast with X ('{x.name}') dims {_dims_text(x.dims)} (same rank; each "
                    "pair equal or one of them 1)"
                )
            if bd == other.dims and bd != dims and not other.by_value:
                like = other
            dims = bd
        attrs: dict[str, Any] = {
            "mode": pmode,
            "compute_dtype": self._compute(compute_dtype, label),
        }
        if alpha1 != 1.0:
            attrs["alpha1"] = self._real(alpha1, f"{label}: alpha1")
        if alpha2 != 1.0:
            if arity != 2 or backward:
                raise GraphError(f"{label}: alpha2 applies to binary modes only")
            attrs["alpha2"] = self._real(alpha2, f"{label}: alpha2")
        for key, value in (
            ("relu_lower_clip", relu_lower_clip),
            ("relu_upper_clip", relu_upper_clip),
            ("relu_lower_clip_slope", relu_lower_clip_slope),
            ("elu_alpha", elu_alpha),
            ("softplus_beta", softplus_beta),
            ("swish_beta", swish_beta),
        ):
            if value is not None:
                attrs[key] = self._real(value, f"{label}: {key}")
        if axis is not None:
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise TypeError(f"{label}: axis must be an int, not {axis!r}")
            if not 0 <= axis < len(dims):
                raise GraphError(f"{label}: axis {axis} is out of range for rank {len(dims)}")
            attrs["axis"] = axis
        role_out = "dx" if backward else "y"
        y = self._output(
            label,
            op_name,
            role_out,
            dims,
            like,
            out=out,
            out_dtype=out_dtype,
            inputs=roles_in.values(),
        )
        self._add_op(kind, op_name, roles_in, {role_out: y}, attrs)
        return y

    # Convenience spellings of common pointwise modes.
    def add(self, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        """``a + b`` (``CUDNN_POINTWISE_ADD``); with ``alpha1``/``alpha2``: ``alpha1*a + alpha2*b``."""
        return self.pointwise("ADD", a, b, **kw)

    def sub(self, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("SUB", a, b, **kw)

    def mul(self, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("MUL", a, b, **kw)

    def div(self, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("DIV", a, b, **kw)

    def maximum(self, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("MAX", a, b, **kw)

    def minimum(self, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("MIN", a, b, **kw)

    def pow(self, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("POW", a, b, **kw)

    def bias(self, x: Tensor, bias: Tensor, **kw: Any) -> Tensor:
        """``x + bias`` with broadcasting (bias ``[1, C, 1, 1]`` for NCHW-logical tensors)."""
        return self.pointwise("ADD", x, bias, **kw)

    def scale(self, x: Tensor, scale: Tensor, **kw: Any) -> Tensor:
        """``x * scale`` with broadcasting (a per-channel tensor or a by-value scalar)."""
        return self.pointwise("MUL", x, scale, **kw)

    def relu(
        self,
        x: Tensor,
        *,
        lower_clip: float | None = None,
        upper_clip: float | None = None,
        negative_slope: float | None = None,
        **kw: Any,
    ) -> Tensor:
        """ReLU (``RELU_FWD``), optionally clipped or leaky (``negative_slope``)."""
        return self.pointwise(
            "RELU_FWD",
            x,
            relu_lower_clip=lower_clip,
            relu_upper_clip=upper_clip,
            relu_lower_clip_slope=negative_slope,
            **kw,
        )

    def gelu(self, x: Tensor, *, approximate: str = "none", **kw: Any) -> Tensor:
        """GELU (``GELU_FWD``), or its tanh approximation with ``approximate="tanh"``."""
        if approximate not in ("none", "tanh"):
            raise GraphError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
        mode = "GELU_APPROX_TANH_FWD" if approximate == "tanh" else "GELU_FWD"
        return self.pointwise(mode, x, **kw)

    def sigmoid(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("SIGMOID_FWD", x, **kw)

    def tanh(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("TANH_FWD", x, **kw)

    def swish(self, x: Tensor, *, beta: float | None = None, **kw: Any) -> Tensor:
        return self.pointwise("SWISH_FWD", x, swish_beta=beta, **kw)

    def elu(self, x: Tensor, *, alpha: float | None = None, **kw: Any) -> Tensor:
        return self.pointwise("ELU_FWD", x, elu_alpha=alpha, **kw)

    def softplus(self, x: Tensor, *, beta: float | None = None, **kw: Any) -> Tensor:
        return self.pointwise("SOFTPLUS_FWD", x, softplus_beta=beta, **kw)

    def identity(self, x: Tensor, **kw: Any) -> Tensor:
        """A copy, converting the data type when ``out_dtype`` differs (``IDENTITY``)."""
        return self.pointwise("IDENTITY", x, **kw)

    def exp(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("EXP", x, **kw)

    def log(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("LOG", x, **kw)

    def sqrt(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("SQRT", x, **kw)

    def rsqrt(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("RSQRT", x, **kw)

    def abs(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("ABS", x, **kw)

    def neg(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("NEG", x, **kw)

    def reciprocal(self, x: Tensor, **kw: Any) -> Tensor:
        return self.pointwise("RECIPROCAL", x, **kw)

    def binary_select(self, mask: Tensor, a: Tensor, b: Tensor, **kw: Any) -> Tensor:
        """``mask ? a : b`` elementwise (``BINARY_SELECT``; all three with the same dims)."""
        return self.pointwise("BINARY_SELECT", a, b, mask, **kw)

    # -- reduction ----------------------------------------------------------------------------
    def reduction(
        self,
        x: Tensor,
        *,
        op: Any = "add",
        axes: Iterable[int] | None = None,
        out_dims: Sequence[int] | None = None,
        compute_dtype: Any = None,
        deterministic: bool | None = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Reduce ``x`` (``OPERATION_REDUCTION``) over ``axes``, or to ``out_dims`` (1 where reduced).

        ``op``: any ``cudnnReduceTensorOp_t`` name (``add``, ``mul``, ``min``, ``max``, ``amax``,
        ``avg``, ``norm1``, ``norm2``, ``mul_no_zeros``). cuDNN 9.28 finalizes ADD, MUL, MIN, MAX
        and AMAX and reports the others as not supported when the graph is finalized.
        """
        rop = reduction_operator(op)
        kind = "reduction"
        op_name = self._op_name(kind, name)
        label = f"{kind} '{op_name}'"
        self._check_mutable()
        x = self._own(x, label, "X")
        if (axes is None) == (out_dims is None):
            raise GraphError(f"{label}: give exactly one of axes= or out_dims=")
        if axes is not None:
            ax = _ints(list(axes) if not isinstance(axes, Sequence) else axes, f"{label}: axes")
            for a in ax:
                if not -x.ndim <= a < x.ndim:
                    raise GraphError(f"{label}: axis {a} is out of range for rank {x.ndim}")
            reduced = {a % x.ndim for a in ax}
            od = tuple(1 if i in reduced else d for i, d in enumerate(x.dims))
        else:
            od = self._check_dims(out_dims, f"{label}: out_dims")
            if len(od) != x.ndim:
                raise GraphError(
                    f"{label}: out_dims {_dims_text(od)} has rank {len(od)} but X has rank {x.ndim}"
                )
            for i, (o, d) in enumerate(zip(od, x.dims, strict=True)):
                if o not in (1, d):
                    raise GraphError(
                        f"{label}: out_dims[{i}] is {o}; each output dim is X's ({d}) or 1 (reduced)"
                    )
        attrs: dict[str, Any] = {"op": rop, "compute_dtype": self._compute(compute_dtype, label)}
        if deterministic is not None:
            if not isinstance(deterministic, bool):
                raise TypeError(f"{label}: deterministic must be a bool, not {deterministic!r}")
            attrs["deterministic"] = deterministic
        y = self._output(label, op_name, "y", od, x, out=out, out_dtype=out_dtype, inputs=(x,))
        self._add_op(kind, op_name, {"x": x}, {"y": y}, attrs)
        return y

    # -- resolution, key, description -----------------------------------------------------------
    def _source_dtype(self, t: Tensor, seen: set[int] | None = None) -> np.dtype | None:
        """The dtype of the first caller-provided tensor an op output is computed from."""
        seen = seen if seen is not None else set()
        if t.uid in seen:
            return None
        seen.add(t.uid)
        op = t.producer
        if op is None:
            return None if t.by_value else t.dtype
        for src in op.inputs.values():
            if src.producer is None and not src.by_value and src.dtype is not None:
                return src.dtype
        for src in op.inputs.values():
            dt = self._source_dtype(src, seen)
            if dt is not None:
                return dt
        return None

    def _resolve(self) -> None:
        """Decide virtual flags and dtypes of op outputs; freeze the graph."""
        if self._resolved:
            return
        if not self._ops:
            raise GraphError(f"graph '{self.name}' has no operations")
        decided: list[tuple[Tensor, bool, np.dtype]] = []
        for t in self._tensors:
            if t.producer is None:
                if t.is_virtual:
                    raise GraphError(
                        f"tensor '{t.name}' is virtual but no operation writes it; pass it as out= "
                        "to the operation that computes it"
                    )
                if not t.consumers:
                    raise GraphError(f"tensor '{t.name}' is not used by any operation")
                continue
            # Decided here but stored only once every check passed: a refused graph stays as
            # the caller built it, so that the mistake can be fixed (e.g. with set_output()).
            virtual = (not t.is_output) if t._virtual is None else t._virtual
            dtype = t._dtype
            if dtype is None:
                if virtual:
                    dtype = self.intermediate_dtype
                else:
                    dtype = self.io_dtype or self._source_dtype(t) or self.intermediate_dtype
            if virtual and not t.consumers:
                # cuDNN accepts such a graph and then finds no engine for it ("NOT_SUPPORTED_LAYOUT").
                raise GraphError(
                    f"{t.producer.label}: output '{t.name}' is virtual and read by no operation, "
                    "so the graph computes nothing with it; make it a graph output (set_output())"
                )
            _check_extent(t.dims, t.strides, dtype, f"{t.producer.label}: output '{t.name}'")
            if not virtual and layout.is_overlapping(t.dims, t.strides):
                raise GraphError(
                    f"{t.producer.label}: output '{t.name}' has overlapping strides "
                    f"{_dims_text(t.strides)} for dims {_dims_text(t.dims)}: outputs may not overlap"
                )
            decided.append((t, virtual, dtype))
        for t, virtual, dtype in decided:
            t._virtual, t._dtype = virtual, dtype
        self._resolved = True

    def signature(self) -> dict[str, Any]:
        """Everything that changes a plan, as plain data (finalizes the graph's structure)."""
        self._resolve()
        tensors = [
            {
                "uid": t.uid,
                "dims": list(t.dims),
                "strides": list(t.strides),
                "dtype": dtype_name(t.dtype) if t.dtype is not None else None,
                "alignment": t.alignment,
                "virtual": bool(t.is_virtual),
                "by_value": t.by_value,
            }
            for t in self._tensors
        ]
        ops = [
            {
                "kind": op.kind,
                "inputs": {r: t.uid for r, t in op.inputs.items()},
                "outputs": {r: t.uid for r, t in op.outputs.items()},
                "attrs": {k: _attr_text(v) for k, v in sorted(op.attrs.items())},
            }
            for op in self._ops
        ]
        return {"tensors": tensors, "ops": ops}

    def key(self) -> str:
        """A hash of :meth:`signature` (part of every plan-cache key)."""
        if self._signature is None:
            text = json.dumps(self.signature(), sort_keys=True, separators=(",", ":"))
            self._signature = hashlib.sha256(text.encode()).hexdigest()
        return self._signature

    def describe(self) -> str:
        """A readable account of the tensors and operations."""
        lines = [
            f"Graph '{self.name}': {len(self._ops)} operation(s), {len(self._tensors)} tensor(s)"
        ]
        lines.append("  tensors:")
        lines.extend(f"    {t.describe()}" for t in self._tensors)
        lines.append("  operations:")
        lines.extend(f"    {op.describe()}" for op in self._ops)
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "finalized" if self.is_finalized else "building"
        return (
            f"<pycudnn.Graph '{self.name}' {len(self._ops)} ops, {len(self._tensors)} tensors, "
            f"{state}>"
        )

    # -- cuDNN descriptors ----------------------------------------------------------------------
    def finalize(self, handle: Any = CURRENT_GPU) -> BackendDescriptor:
        """Build and finalize the backend descriptors for one planning target; returns the
        ``CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR``.

        A graph is planned for a target. ``handle``, a :class:`pycudnn.Handle`, binds the
        operation graph to that handle's GPU (``OPERATIONGRAPH_HANDLE``): cuDNN needs it to plan for
        a real device. ``None`` builds the unbound descriptors used for deviceless planning, where
        the target is a :class:`~pycudnn.DeviceProperties` given to the heuristics and the plan.
        The default, :data:`CURRENT_GPU`, is the calling thread's handle for the current GPU when
        one is usable, else unbound. Each target gets its own descriptor set, built once and
        kept until :meth:`close`. cuDNN's refusals are raised as its
        :class:`~pycudnn.CudnnError` subclass with the operation's name and cuDNN's reason.
        """
        return self._descriptors_for(_resolve_handle(handle))["graph"]

    def _descriptors_for(
        self,
        handle: Any,
        variant: str = "",
        views: Mapping[int, tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
    ) -> dict[str, Any]:
        """The descriptor set for (``handle`` or unbound, description ``variant``), built once.

        ``variant`` names an equivalent description of the tensors (``views``, uid -> (dims,
        strides)) that cuDNN is shown instead of the graph's own; "" is the graph as described.
        """
        from .lowering import build_descriptors  # lowering imports this module

        self._resolve()
        key = (None if handle is None else id(handle), variant)
        with self._descriptor_lock:
            found = self._descriptor_sets.get(key)
            if found is not None and not found["graph"].closed:
                return found
            # The set keeps its handle alive, so id(handle) is not reused while the key exists.
            made = build_descriptors(self, handle=handle, views=views)
            self._descriptor_sets[key] = made
            return made

    @property
    def operation_graph(self) -> BackendDescriptor:
        """The finalized ``CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR`` for the default target
        (see :meth:`finalize`; built on first use)."""
        return self.finalize()

    @property
    def engine_count(self) -> int:
        """``OPERATIONGRAPH_ENGINE_GLOBAL_COUNT``: engines cuDNN has that could match the graph."""
        return int(self.operation_graph.get("OPERATIONGRAPH_ENGINE_GLOBAL_COUNT"))

    def close(self) -> None:
        """Drop the graph's backend descriptors (every target's): they are destroyed as soon as
        no plan, engine config or heuristic built from them needs them any more (never before:
        cuDNN objects that point at them must not outlive them). The graph stays frozen;
        ``finalize`` builds new descriptors."""
        with self._descriptor_lock:
            self._descriptor_sets = {}

    # -- planning (pycudnn.plan) -----------------------------------------------------------------
    def heuristics(
        self,
        mode: Any = "a",
        *,
        device_properties: DeviceProperties | None = None,
        sm_count: int | None = None,
    ) -> HeuristicsResult:
        """Run one heuristic mode: the count cuDNN reports and the configs it returns."""
        from .plan import run_heuristics

        return run_heuristics(self, mode, device_properties=device_properties, sm_count=sm_count)

    def engine_configs(self, **options: Any) -> list[EngineConfig]:
        """Engine configurations from the heuristics, filtered (see :func:`pycudnn.plan.engine_configs`)."""
        from .plan import engine_configs

        return engine_configs(self, **options)

    def build(self, **options: Any) -> Plan:
        """Heuristics, then the first execution plan that finalizes (see :func:`pycudnn.plan.build`)."""
        from .plan import build

        return build(self, **options)

    def build_all(self, **options: Any) -> list[Plan]:
        """Every execution plan that finalizes (see :func:`pycudnn.plan.build_all`)."""
        from .plan import build_all

        return build_all(self, **options)

    def autotune(self, tensors: Mapping[Any, Any], **options: Any) -> Plan:
        """Time every candidate plan on the GPU and return the fastest (see :func:`pycudnn.plan.autotune`)."""
        from .plan import autotune

        return autotune(self, tensors, **options)

    def load_plan(self, source: Any, **options: Any) -> Plan:
        """A plan for this graph from its JSON (text or path); see :meth:`pycudnn.plan.Plan.from_json`."""
        from .plan import Plan

        return Plan.load(source, graph=self, **options)
