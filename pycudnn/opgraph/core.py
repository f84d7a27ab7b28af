"""The graph itself: its tensors, the plumbing every operation family uses, resolution of
virtual tensors and dtypes, its key, and its backend descriptors per planning target.

The operation families (:mod:`.convolution`, :mod:`.matmul`, :mod:`.pointwise`,
:mod:`.reduction`) add their methods to this core; :class:`pycudnn.Graph` combines them.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from _nvbind.dtypes import VECTOR_TYPES, DataType, NumpyDtype, as_data_type, dtype_name
from _nvbind.forksafe import fork_safe_lock
from _nvbind.lazy_numpy import numpy_types
from _nvbind.resource import ClosedError

from .. import layout
from .common import (
    _CONV_OPS,
    GraphError,
    _check_extent,
    _cudnn_dtype,
    _dims_text,
    _format_of,
    check_scalar_value,
    finite_real,
)
from .resolution import check_layout_unchanged, decide, layout_of, resolve, written_as
from .tensor_request import check_alignment, check_dims, check_strides, vector_request
from .tensors import Operation, Tensor, _attr_text, vector_array, vector_dims

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["GraphCore"]

# Operations that take vectorized (NC/xHWx) tensors. Only the forward convolution is known to have
# engines for them (cuDNN 9.28 plans an INT8x32 conv_fprop for an H100); the others are refused
# before cuDNN sees such a graph.
_VECTORIZED_OPS = frozenset({"conv_fprop"})


class GraphCore:
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
        self._compute_dtype = self._dtype_arg(compute_dtype, "compute_dtype")
        self._intermediate_dtype = self._dtype_arg(intermediate_dtype, "intermediate_dtype")
        self._io_dtype = None if io_dtype is None else self._dtype_arg(io_dtype, "io_dtype")
        self._tensors: list[Tensor] = []
        self._names: dict[str, Tensor] = {}
        self._ops: list[Operation] = []
        self._op_names: set[str] = set()
        self._counters: dict[str, int] = {}
        self._next_uid = 1
        self._resolved = False
        self._signature: str | None = None
        # Backend descriptors, one set per planning target (see finalize) and per description
        # variant (see pycudnn.opgraph.rewrites): {(id(handle) or None, variant): descriptor set}.
        self._descriptor_sets: dict[tuple[int | None, str], dict[str, Any]] = {}
        self._descriptor_lock = fork_safe_lock(self, "_descriptor_lock")
        self._closed = False

    @staticmethod
    def _dtype_arg(dtype: Any, what: str) -> DataType:
        dt = as_data_type(dtype, name=what)
        _cudnn_dtype(dt, what)
        return dt

    # The graph's defaults as numpy.dtype; the graph itself reads the DataTypes (no NumPy).
    compute_dtype = NumpyDtype("The accumulator type of operations given no ``compute_dtype``.")
    intermediate_dtype = NumpyDtype("The type of virtual tensors given no dtype.")
    io_dtype = NumpyDtype("The type of outputs given no dtype (None: their inputs').")

    # -- state -------------------------------------------------------------------------------
    @property
    def tensors(self) -> list[Tensor]:
        """Every tensor of the graph, in the order they were made (a copy)."""
        return list(self._tensors)

    @property
    def operations(self) -> list[Operation]:
        """Every operation of the graph, in the order they were added (a copy)."""
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

    @property
    def closed(self) -> bool:
        """True after :meth:`close`: the graph refuses further use."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(
                f"graph '{self.name}' is closed: it cannot be changed, finalized or planned again "
                "(plans built from it keep working); build a new Graph"
            )

    def _check_mutable(self) -> None:
        self._check_open()
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
            return item._belongs_to(self)
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
        names: tuple[str | None, str],
        dims: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: DataType | np.dtype | None,
        **kw: Any,
    ) -> Tensor:
        """A tensor named ``names[0]``, or when that is None a free name made from ``names[1]``."""
        name = self._unique_name(*names)
        if kw.get("value") is not None:  # a by-value scalar's: checked for the type it has
            check_scalar_value(kw["value"], dtype, f"tensor '{name}'")
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

        Vectorized layouts: ``fmt="NC/32HW32"`` or ``"NC/4HW4"`` (``NC/xDHWx`` for 5-D) with
        ``dtype="int8"`` (uint8 also for ``NC/4HW4``), or the dtype strings ``"int8x32"``,
        ``"int8x4"``, ``"uint8x4"``, which imply the format. ``dims`` stay logical
        (``[N, C, H, W]``, C a multiple of x); cuDNN gets ``TENSOR_VECTOR_COUNT`` x and
        ``TENSOR_VECTORIZED_DIMENSION`` 1 with C counted in vectors, and the tensor's ``strides``
        count whole vectors. Its data is the packed ``[N, C/x, H, W, x]`` array of the element type
        (:attr:`Tensor.array_shape`, what :func:`pycudnn.layout.to_format` lays out), and that is
        the array ``plan.execute`` takes for it. Only ``conv_fprop`` takes such tensors.
        """
        self._check_mutable()
        label = f"tensor '{name}'" if name else "tensor"
        dims_t = self._check_dims(dims, label)
        dtype, fmt, vector = self._vector_request(dims_t, dtype, fmt, strides, label)
        dt = as_data_type(dtype, name=f"dtype of {label}")
        _cudnn_dtype(dt, label)
        if vector > 1:
            if (dtype_name(dt), vector) not in VECTOR_TYPES:
                raise GraphError(
                    f"{label}: {dtype_name(dt)} in NC/{vector}HW{vector}: cuDNN vectorizes int8 "
                    "by 4 or 32 and uint8 by 4 only (the INT8x4, INT8x32 and UINT8x4 layouts)"
                )
            if virtual or by_value is not False:
                raise GraphError(f"{label}: a vectorized tensor cannot be virtual or by value")
            # Row-major over [N, C/x, H, W]: the packed NC/xHWx layout, in whole vectors.
            strides_t = layout.packed_strides(
                vector_dims(dims_t, vector), "ABCDEFGH"[: len(dims_t)]
            )
        else:
            strides_t = self._check_strides(dims_t, strides, fmt, label)
        _check_extent(*vector_array(vector_dims(dims_t, vector), strides_t, vector), dt, label)
        if not isinstance(virtual, bool):
            raise TypeError(f"{label}: virtual must be a bool, not {virtual!r}")
        check_alignment(alignment, dt, label)
        is_scalar, value = False, None
        if by_value is True:
            is_scalar = True
        elif by_value is not False:
            if not isinstance(by_value, (numbers.Number, *numpy_types("generic"))):
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
            (name, f"t{self._next_uid}"),
            dims_t,
            strides_t,
            dt,
            virtual=virtual,
            by_value=is_scalar,
            value=value,
            alignment=alignment,
            vector_count=vector,
        )

    def scalar(
        self, value: Any = None, *, dtype: Any = "float32", rank: int = 4, name: str | None = None
    ) -> Tensor:
        """A by-value host scalar (dims ``[1] * rank``); ``value`` None means given at execute."""
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise TypeError(f"rank must be an int, not {rank!r}")
        if value is not None:  # set apart: tensor()'s by_value reads a bool as its own flag
            check_scalar_value(value, as_data_type(dtype), f"scalar {name or ''}".rstrip())
        t = self.tensor([1] * rank, dtype=dtype, name=name, by_value=True)
        t.value = value
        return t

    _vector_request = staticmethod(vector_request)
    _check_dims = staticmethod(check_dims)
    _check_strides = staticmethod(check_strides)

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
        if not t._belongs_to(self):
            raise GraphError(
                f"{op_label}: {role} ('{t.name}') belongs to {t._owner}, not '{self.name}'"
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
        vectorized: bool = False,
    ) -> Tensor:
        if out is not None:
            if not isinstance(out, Tensor) or not out._belongs_to(self):
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
            want = like.vector_count if vectorized else 1
            if out.vector_count != want:
                raise GraphError(
                    f"{op_label}: {role.upper()} ('{out.name}') is {out.format} but the operation "
                    f"writes {like.format if want > 1 else 'a plain (not vectorized) layout'}: "
                    "the output of a vectorized operation is vectorized alike"
                )
            if out_dtype is not None:
                written_as(out, as_data_type(out_dtype, name=f"{op_label}: out_dtype"), op_label)
            if not out.is_virtual:
                out._is_output = True
            return out
        vector = like.vector_count if vectorized else 1
        if out is None and vector > 1:
            # The output of a vectorized operation is vectorized alike (packed, whole vectors).
            strides = layout.packed_strides(vector_dims(dims, vector), "ABCDEFGH"[: len(dims)])
        if strides is None:
            strides = tuple(layout.packed_strides(dims, _format_of(like.dims, like.strides)))
        dt = None
        if out_dtype is not None:
            dt = as_data_type(out_dtype, name=f"{op_label}: out_dtype")
            _cudnn_dtype(dt, f"{op_label}: out_dtype")
        default = f"{op_name}.{role}"
        return self._new_tensor(
            (None, default), dims, strides, dt, virtual=None, vector_count=vector
        )

    def _add_op(
        self,
        kind: str,
        name: str,
        inputs: dict[str, Tensor],
        outputs: dict[str, Tensor],
        attrs: dict[str, Any],
    ) -> Operation:
        if kind not in _VECTORIZED_OPS:
            for role, t in (*inputs.items(), *outputs.items()):
                if t.is_vectorized:
                    raise GraphError(
                        f"{kind} '{name}': {role} ('{t.name}') is {t.format}; vectorized tensors "
                        f"are taken by {', '.join(sorted(_VECTORIZED_OPS))} only"
                    )
        op = Operation(kind, name, inputs, outputs, attrs)
        for t in inputs.values():
            t.consumers.append(op)
        for t in outputs.values():
            t.producer = op
        self._ops.append(op)
        self._op_names.add(name)
        return op

    def _produce(
        self,
        kind: str,
        op_name: str,
        label: str,
        inputs: dict[str, Tensor],
        output: tuple[str, tuple[int, ...], Tensor],
        *,
        attrs: dict[str, Any],
        out: Tensor | None,
        out_dtype: Any,
        strides: tuple[int, ...] | None = None,
    ) -> Tensor:
        """Declare the one output of an operation, ``(role, dims, like)`` as :meth:`_output`
        takes them, and record the operation reading ``inputs``; returns the output."""
        ins = inputs.values()
        y = self._output(
            label, op_name, *output, out=out, out_dtype=out_dtype, strides=strides, inputs=ins
        )
        self._add_op(kind, op_name, inputs, {output[0]: y}, attrs)
        return y

    @contextmanager
    def _all_or_nothing(self) -> Iterator[None]:
        """Undo what an operation method added to the graph when it raises.

        An operation names and creates its output tensors before its last check; without this, a
        call that failed (a misspelt ``compute_dtype``, say) would leave an output no operation
        writes, and the graph could no longer be built. Nested calls (a composite operation made
        of others) each restore their own starting point.
        """
        tensors, ops, op_names, counters, next_uid = (
            len(self._tensors), len(self._ops), set(self._op_names), dict(self._counters),
            self._next_uid,
        )  # fmt: skip
        # What an operation may change on the tensors it was given: who reads them, who writes
        # them (``out=``), their dtype and whether they are virtual or a graph output.
        states = [(t, len(t.consumers), t.producer, t._dtype, t._virtual, t._is_output)
                  for t in self._tensors]  # fmt: skip
        try:
            yield
        except BaseException:
            for t in self._tensors[tensors:]:
                del self._names[t.name]
            del self._tensors[tensors:]
            del self._ops[ops:]
            self._op_names, self._counters, self._next_uid = op_names, counters, next_uid
            for t, n_consumers, producer, dt, virtual, is_output in states:
                del t.consumers[n_consumers:]
                t.producer, t._dtype, t._virtual, t._is_output = producer, dt, virtual, is_output
            raise

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

    def _compute(self, compute_dtype: Any, op_label: str) -> DataType:
        if compute_dtype is None:
            return self._compute_dtype
        dt = as_data_type(compute_dtype, name=f"{op_label}: compute_dtype")
        _cudnn_dtype(dt, f"{op_label}: compute_dtype")
        return dt

    _real = staticmethod(finite_real)  # the operation families' number settings

    # -- resolution, key, description -----------------------------------------------------------
    def _decide(self, t: Tensor) -> tuple[bool, DataType]:
        """Whether an operation output is virtual, and its dtype, as the graph stands now."""
        return decide(t, self._intermediate_dtype, self._io_dtype)

    def _resolve(self) -> None:
        """Decide virtual flags and dtypes of op outputs; freeze the graph."""
        if self._resolved:
            return
        resolve(self.name, self._tensors, self._ops, self._intermediate_dtype, self._io_dtype)
        self._resolved = True
        # What the key holds of the tensors that a caller can still reassign, as the graph froze:
        # descriptors are built from here on (finalize, heuristics) before any key is taken, so
        # the key is checked against this, not against the tensors when it is first taken.
        self._layout = layout_of(self._tensors)

    def signature(self) -> dict[str, Any]:
        """Everything that changes a plan, as plain data (finalizes the graph's structure)."""
        self._resolve()
        tensors = [
            {
                **({"vector_count": t.vector_count} if t.is_vectorized else {}),
                "uid": t.uid,
                "dims": list(t.dims),
                "strides": list(t.strides),
                "dtype": dtype_name(t._dtype) if t._dtype is not None else None,
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
        """A hash of :meth:`signature` (part of every plan-cache key); ``ClosedError`` once closed."""
        self._check_open()
        self._resolve()
        # A tensor reassigned since the graph froze (after a finalize() or heuristics() that built
        # descriptors of it as it was) is refused: a key of the new values would file the plan of
        # those descriptors under the key of graphs that describe the new values.
        check_layout_unchanged(self.name, self._tensors, self._layout)
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

    def __copy__(self) -> Any:
        # A shallow copy would share the tensor list, names and operations with the original but
        # count unique ids apart: tensors added to one would collide with the other's (cuDNN then
        # refuses the graph with an opaque BAD_PARAM). deepcopy and pickle fail on the descriptors.
        raise TypeError(
            "a Graph cannot be copied: a copy would share its tensors and operations but not its "
            "unique-id counter; build a second Graph instead"
        )

    def __repr__(self) -> str:
        if self._closed:
            state = "closed"
        else:
            state = "finalized" if self.is_finalized else "frozen" if self._resolved else "building"
        return (
            f"<pycudnn.Graph '{self.name}' {len(self._ops)} ops, {len(self._tensors)} tensors, "
            f"{state}>"
        )

    def close(self) -> None:
        """Release the graph's backend descriptors (``cudnnBackendDestroyDescriptor``, every
        target's) and refuse further use: changing, finalizing, planning or keying a closed graph
        raises :class:`~pycudnn.ClosedError`. Idempotent.

        Plans, engine configs and heuristics already built from it keep working: each holds the
        descriptors it points at, which are destroyed only when the last of them is gone (cuDNN
        objects that point at them must not outlive them). Reading the graph (its tensors,
        :meth:`describe`) still works.
        """
        with self._descriptor_lock:
            self._closed = True
            self._descriptor_sets = {}

    def __enter__(self) -> GraphCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
