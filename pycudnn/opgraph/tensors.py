"""The tensors and operations of a graph (``CUDNN_BACKEND_TENSOR_DESCRIPTOR`` once finalized)."""

from __future__ import annotations

import dataclasses
import enum
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from _nvbind.dtypes import DataType, as_data_type, dtype_name
from _nvbind.lazy_numpy import numpy_types

from .common import GraphError, _cudnn_dtype, _dims_text, _format_of

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Operation", "Tensor"]


class Graph(Protocol):
    """What a tensor asks of the graph that owns it (:class:`~pycudnn.opgraph.core.GraphCore`);
    named here so that this module, below the graph, never imports it."""

    name: str

    def _check_mutable(self) -> None: ...

    def _decide(self, t: Tensor) -> tuple[bool, DataType]: ...


# --------------------------------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------------------------------


#: The operations that take ragged (THD) tensors.
RAGGED_KINDS = ("sdpa", "sdpa_backward")


class Tensor:
    """A tensor of a :class:`Graph` (``CUDNN_BACKEND_TENSOR_DESCRIPTOR`` once finalized).

    Created by :meth:`Graph.tensor` or as the output of an operation. Use it as the key of the
    arrays passed to ``plan.execute``. ``dtype`` and ``virtual`` of operation outputs are decided
    when the graph is finalized unless given.
    """

    __slots__ = (
        "_dtype",
        "_graph",
        "_is_output",
        "_virtual",
        "alignment",
        "by_value",
        "consumers",
        "dims",
        "name",
        "producer",
        "ragged_offset",
        "strides",
        "uid",
        "value",
        "vector_count",
    )

    def __init__(
        self,
        graph: Graph,
        uid: int,
        name: str,
        *,
        dims: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: Any,
        virtual: bool | None = False,
        by_value: bool = False,
        value: Any = None,
        alignment: int = 16,
        vector_count: int = 1,
    ) -> None:
        self._graph = weakref.ref(graph)
        self.uid = uid
        self.name = name
        self.dims = dims
        self.strides = strides
        # A DataType, not a numpy.dtype: describing and planning a graph never imports NumPy.
        self._dtype = None if dtype is None else as_data_type(dtype)
        self._virtual = virtual
        self._is_output: bool | None = None
        self.by_value = by_value
        self.value = value
        self.alignment = alignment
        # > 1: an NC/xHWx tensor, its C dim (TENSOR_VECTORIZED_DIMENSION 1) split into vectors of
        # this many elements (TENSOR_VECTOR_COUNT); ``strides`` then count whole vectors.
        self.vector_count = vector_count
        self.producer: Operation | None = None
        self.consumers: list[Operation] = []
        #: int32/int64 ``[b + 1, 1, 1, 1]`` start of each batch entry (TENSOR_RAGGED_OFFSET_DESC)
        self.ragged_offset: Tensor | None = None

    @property
    def graph(self) -> Graph:
        """The graph this tensor belongs to.

        Held weakly: a graph (and the cuDNN descriptors it owns) is freed as soon as the last
        reference to it is dropped, not when the collector finds the cycle graph -> tensor ->
        graph. A tensor kept after its graph is gone refuses to be used."""
        graph = self._graph()
        if graph is None:
            raise GraphError(
                f"tensor '{self.name}' belongs to {self._owner}: keep the Graph while using it"
            )
        return graph

    def _belongs_to(self, graph: object) -> bool:
        """Whether this tensor is one of ``graph``'s (False once its own graph is gone)."""
        return self._graph() is graph

    @property
    def _owner(self) -> str:
        """Which graph this tensor belongs to, in words (for messages)."""
        graph = self._graph()
        return "a graph that no longer exists" if graph is None else f"graph '{graph.name}'"

    # -- resolved properties --------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Dims, in logical order (an alias of ``dims``)."""
        return self.dims

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.dims)

    @property
    def dtype(self) -> np.dtype | None:
        """The element type (None for an op output whose type is decided at finalize; ``describe()``
        shows what finalizing the graph now would choose)."""
        return None if self._dtype is None else self._dtype.numpy

    @property
    def element_type(self) -> DataType | None:
        """:attr:`dtype` as a :class:`~_nvbind.dtypes.DataType` (name, kind, item size), which
        the graph's own code reads: NumPy is imported only when a caller asks for :attr:`dtype`."""
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
        """The memory format its strides describe (``"NHWC"``, ``"BMN"``, ``"NC/32HW32"``, ...)."""
        if self.is_vectorized:
            x = self.vector_count
            return f"NC/{x}HW{x}" if self.ndim == 4 else f"NC/{x}DHW{x}"
        return _format_of(self.dims, self.strides)

    @property
    def is_vectorized(self) -> bool:
        """True for an ``NC/xHWx`` tensor (``TENSOR_VECTOR_COUNT`` > 1)."""
        return self.vector_count > 1

    @property
    def vectorized_dim(self) -> int | None:
        """``TENSOR_VECTORIZED_DIMENSION``: 1 (C) for a vectorized tensor, else None."""
        return VECTORIZED_DIM if self.is_vectorized else None

    @property
    def vector_dims(self) -> tuple[int, ...]:
        """The dims cuDNN is given (``TENSOR_DIMENSIONS``): ``dims`` with C counted in vectors."""
        return vector_dims(self.dims, self.vector_count)

    @property
    def array_shape(self) -> tuple[int, ...]:
        """Shape of the array that holds the tensor: ``dims``, or ``[N, C/x, H, W, x]``."""
        return vector_array(self.vector_dims, self.strides, self.vector_count)[0]

    @property
    def array_strides(self) -> tuple[int, ...]:
        """Element strides of the array that holds the tensor (see :attr:`array_shape`)."""
        return vector_array(self.vector_dims, self.strides, self.vector_count)[1]

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

    def set_ragged_offset(self, offset: Tensor) -> Tensor:
        """Make this a ragged (THD) tensor, as cudnn-frontend's ``set_ragged_offset``: batch entry
        ``i`` starts ``offset[i]`` elements into the memory (``TENSOR_RAGGED_OFFSET_DESC``), so that
        sequences of different lengths lie back to back without padding. ``offset`` is a graph
        tensor of integers, read by the attention operation that reads or writes this tensor
        (which checks its dims)."""
        self.graph._check_mutable()
        if offset is self.ragged_offset:
            return self  # set again (frontend code sets O's after the operation made it)
        if not isinstance(offset, Tensor) or not offset._belongs_to(self.graph):
            raise TypeError(
                f"tensor '{self.name}': the ragged offset must be a Tensor of this graph"
            )
        if offset.producer is not None or offset._dtype is None or offset._dtype.kind != "i":
            raise GraphError(
                f"tensor '{self.name}': ragged offset '{offset.name}' must be a graph input of "
                "int32 or int64 element offsets"
            )
        if offset.dims != (self.dims[0] + 1, 1, 1, 1):
            raise GraphError(
                f"tensor '{self.name}': ragged offset '{offset.name}' must have dims [b + 1, 1, "
                f"1, 1] = {_dims_text((self.dims[0] + 1, 1, 1, 1))} (where each of the b batch "
                f"entries starts, and the end), got {_dims_text(offset.dims)}"
            )
        if offset is self or offset.ragged_offset is not None or self.ragged_offset is not None:
            raise GraphError(f"tensor '{self.name}': a tensor takes one ragged offset, of its own")
        ops = [op for op in (self.producer, *self.consumers) if op is not None]
        for op in ops:
            if op.kind not in RAGGED_KINDS:
                raise GraphError(
                    f"tensor '{self.name}': {op.label} takes no ragged (THD) tensors; only "
                    f"{' and '.join(RAGGED_KINDS)} do"
                )
            _same_offset_type(op, offset, self.name)
        self.ragged_offset = offset
        # the operations that already read or write this tensor read its offsets too
        for op in ops:
            op.attach_ragged_offset(self, offset)
        return self

    def set_dtype(self, dtype: Any) -> Tensor:
        """Choose the element type of an op output (default: see the module docstring)."""
        self.graph._check_mutable()
        if self.producer is None and self.consumers:  # a graph input its readers checked
            raise GraphError(
                f"tensor '{self.name}' is an input of {self.consumers[0].label}, which checked "
                "its type: give the type to Graph.tensor, before the operations read it"
            )
        dt = as_data_type(dtype, name=f"dtype of tensor '{self.name}'")
        _cudnn_dtype(dt, f"tensor '{self.name}'")
        self._dtype = dt
        return self

    def describe(self) -> str:
        """One readable line: name, dims, strides, dtype and flags (virtual, output, by value)."""
        virtual, dt = self._virtual, self._dtype
        undecided = self.producer is not None and (virtual is None or dt is None)
        graph = self._graph()
        if undecided and graph is not None:
            # Show what building the graph now would choose, marked as not yet fixed.
            virtual, dt = graph._decide(self)
        flags = []
        if virtual:
            flags.append("virtual")
        if self.by_value:
            flags.append(f"by value={self.value!r}" if self.value is not None else "by value")
        if self.producer is not None and self.is_output:
            flags.append("output")
        if self.ragged_offset is not None:
            flags.append(f"ragged by '{self.ragged_offset.name}'")
        extra = ", ".join(flags)
        if undecided:
            extra = f"{extra}; decided at build" if extra else "decided at build"
        extra = f" ({extra})" if extra else ""
        dt_text = dtype_name(dt) if dt is not None else "auto"
        return f"'{self.name}' #{self.uid} {_dims_text(self.dims)} {dt_text} {self.format}{extra}"

    def __repr__(self) -> str:
        return f"<pycudnn.graph.Tensor {self.describe()}>"

    def _refuse_copy(self, *_: Any) -> Any:
        # A copy would have the original's unique id but its own readers and writer: the graph
        # would hold two tensors with one id (cuDNN refuses that graph with an opaque BAD_PARAM).
        raise TypeError(
            f"tensor '{self.name}' belongs to {self._owner} and cannot be copied or pickled; "
            "use it as it is, or create another with Graph.tensor / tensor_like"
        )

    __copy__ = __deepcopy__ = __reduce_ex__ = _refuse_copy


VECTORIZED_DIM = 1  # NC/xHWx vectorizes C, the second logical dim


def _same_offset_type(op: Operation, offset: Tensor, name: str) -> None:
    """One integer type for the ragged offsets of an operation: cuDNN 9.28 has no SDPA engine for
    int32 and int64 offsets together (measured, H100)."""
    for role, t in op.inputs.items():
        if role.startswith("ragged_offset_") and t.element_type != offset.element_type:
            raise GraphError(
                f"tensor '{name}': ragged offset '{offset.name}' is {offset.element_type} but "
                f"{op.label} reads {t.element_type} offsets ('{t.name}'); give all the "
                "offsets of one operation one type (cuDNN has no engine for a mix)"
            )


def vector_dims(dims: tuple[int, ...], count: int) -> tuple[int, ...]:
    """``dims`` with the vectorized dim (C) counted in vectors of ``count`` elements."""
    if count <= 1:
        return dims
    v = VECTORIZED_DIM
    return (*dims[:v], dims[v] // count, *dims[v + 1 :])


def vector_array(
    dims: tuple[int, ...], strides: tuple[int, ...], count: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The array that holds a tensor cuDNN describes by ``dims`` and ``strides`` in whole vectors
    of ``count`` elements: one more, innermost, dim of ``count`` contiguous elements (a vector's
    elements are adjacent in memory), and element strides. ``count`` 1 returns the input."""
    if count <= 1:
        return dims, strides
    return (*dims, count), (*(s * count for s in strides), 1)


# --------------------------------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------------------------------


# eq=False: operations are told apart by identity (a graph may hold two alike).
@dataclasses.dataclass(eq=False, repr=False, slots=True)
class Operation:
    """One node: its kind, name, input and output tensors by role, and its settings."""

    kind: str
    name: str
    inputs: dict[str, Tensor]
    outputs: dict[str, Tensor]
    attrs: dict[str, Any]

    def attach_ragged_offset(self, t: Tensor, offset: Tensor) -> None:
        """Record ``offset`` (the ragged offset of ``t``, one of this operation's tensors) as an
        input ``ragged_offset_<role>``, so that the plan's variant pack carries it."""
        for role in [r for r, x in (*self.inputs.items(), *self.outputs.items()) if x is t]:
            self.inputs["ragged_offset_" + role] = offset
        offset.consumers.append(self)

    @property
    def label(self) -> str:
        """How messages name the operation: ``conv_fprop 'conv1'``, ``relu_fwd 'act'``."""
        mode = self.attrs.get("mode") if self.kind == "pointwise" else None
        kind = mode.name.lower() if isinstance(mode, enum.Enum) else self.kind
        return f"{kind} '{self.name}'"

    def describe(self) -> str:
        """One readable line: label, inputs, outputs and settings."""
        ins = ", ".join(f"{r}='{t.name}'" for r, t in self.inputs.items())
        outs = ", ".join(f"{r}='{t.name}'" for r, t in self.outputs.items())
        settings = ", ".join(f"{k}={_attr_text(v)}" for k, v in self.attrs.items())
        return f"{self.label}: {ins} -> {outs}" + (f" [{settings}]" if settings else "")

    def __repr__(self) -> str:
        return f"<pycudnn.graph.Operation {self.describe()}>"


def _attr_text(v: Any) -> str:
    if isinstance(v, enum.Enum):
        return v.name.lower()
    if isinstance(v, DataType):
        return v.name
    if isinstance(v, numpy_types("dtype")):
        return dtype_name(v)
    if isinstance(v, tuple):
        return _dims_text(v)
    return repr(v)
