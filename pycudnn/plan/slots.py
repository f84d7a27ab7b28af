"""The tensors of a plan in variant-pack order, from its graph or its JSON."""

from __future__ import annotations

import dataclasses
import functools
import logging
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from _nvbind.arrays import as_array_view
from _nvbind.cuda import current_device_id
from _nvbind.dtypes import CUDNN_DATA_TYPE_NAMES, DataType, as_data_type
from _nvbind.lazy_numpy import np

from ..opgraph import OperationGraph, Tensor
from ..opgraph.common import check_scalar_value
from ..opgraph.tensors import vector_array
from .serialization import Kept, Scalar

__all__: list[str] = []

# Roles an operation writes (the graph's outputs among the tensors a plan JSON lists).
_OUTPUT_ROLE_KEYS = ("Y", "DX", "DW", "C", "dX", "dW", "matC")

_log = logging.getLogger("pycudnn")


# --------------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------------


@functools.cache
def _dtype_by_cudnn_name() -> dict[str, np.dtype]:
    """cuDNN data type name (JSON spelling without CUDNN_DATA_) -> NumPy dtype. Built on first use:
    the whole table includes the ml_dtypes types, which only a plan loaded without its graph needs."""
    return {name: dt for dt, name in CUDNN_DATA_TYPE_NAMES.items()}


@dataclasses.dataclass
class _Slot:
    """One non-virtual tensor of a plan, in variant-pack order."""

    uid: int
    name: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    # a graph's DataType (NumPy compares and converts it: planning imports no NumPy), or the
    # numpy.dtype a plan's JSON names
    dtype: DataType | np.dtype | None
    alignment: int
    by_value: bool
    is_output: bool
    tensor: Tensor | None
    #: A by-value scalar's value where no graph tensor holds it (a plan loaded without its graph).
    value: float | int | None = None
    #: The uid of the output this input's memory may lie in (a concatenation's in-place input).
    in_place_of: int | None = None

    @property
    def scalar(self) -> Any:
        """The host buffer of a by-value tensor (:func:`scalar_buffer`), made on first use: a
        NumPy array, which planning does not import. Threads racing here get one buffer: the
        first ``setdefault`` wins, and the variant packs and the setters all point at it."""
        buf = self.__dict__.get("_scalar")
        if buf is None:
            buf = self.__dict__.setdefault("_scalar", scalar_buffer(self))
        return buf


def scalar_buffer(slot: _Slot) -> Any:
    """The host buffer of a by-value tensor, which the variant packs point at: its default
    (:func:`default_value`), else zero until one is given (execute refuses to run on that)."""
    dt = slot.dtype if slot.dtype is not None else np.dtype(np.float32)
    buf = np.zeros(1, dtype=dt)
    value = default_value(slot)
    if value is not None:
        buf[0] = value
    return buf


def default_value(slot: _Slot) -> Any:
    """The value a by-value tensor has when a call does not give one: ``set_scalar``'s, else the
    graph's (or the plan JSON's); None when there is none."""
    if slot.value is not None:
        return slot.value
    return slot.tensor.value if slot.tensor is not None else None


def checked_scalar(value: Any, dtype: Any, name: str) -> Any:
    """``value`` for the by-value tensor ``name`` of ``dtype``, checked as a graph's scalars are
    (:func:`~pycudnn.opgraph.common.check_scalar_value`): refused where NumPy would convert it
    silently (a str, a finite float past the type's range, a fraction for an integer type)."""
    return check_scalar_value(value, as_data_type(dtype), f"tensor '{name}'")


def kept_of(slots: Sequence[_Slot]) -> Kept:
    """What a plan's JSON keeps of its tensors (:class:`~pycudnn.plan.serialization.Kept`)."""
    return Kept(
        {s.uid: s.name for s in slots},
        {s.uid: k for s in slots if (k := kept_scalar(s))},
        frozenset(s.uid for s in slots if s.is_output),
    )


def kept_scalar(slot: _Slot) -> Scalar | None:
    """What a plan's JSON keeps of a by-value tensor (:data:`serialization.SCALARS_FIELD`): its
    value (:func:`scalar_value`), cuDNN data type and rank; None for another tensor, or a
    scalar without a value (given at each execute)."""
    value = scalar_value(slot)
    dtype = slot.tensor.element_type if slot.tensor is not None else slot.dtype
    if value is None or dtype is None:
        return None
    return Scalar(value, CUDNN_DATA_TYPE_NAMES[dtype], len(slot.dims))


def scalar_value(slot: _Slot) -> float | int | None:
    """A by-value tensor's default (:func:`default_value`) as a Python number (None when it has
    none): what a call that does not give it runs with, and what a saved plan keeps. A value
    given to one execute is that call's only."""
    if not slot.by_value:
        return None
    value = default_value(slot)
    if value is None:
        return None
    # bool, int and NumPy's integers are Integral; the rest are written as floats
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def scalar_setter(slot: _Slot) -> Callable[..., int]:
    """The execute path's reader of a by-value tensor: puts the value given (None: its default)
    in the slot's buffer, marking it for :func:`restore_defaults`, and returns the buffer's
    address, which the variant pack holds."""
    buf = slot.scalar
    address = int(buf.ctypes.data)
    name, dtype, state = slot.name, buf.dtype, slot.__dict__

    def set_value(value: Any, stream_ptr: int = -1) -> int:
        if value is None:
            value = default_value(slot)
            if value is None:
                raise KeyError(f"by-value scalar '{name}' has no value: pass a number")
        buf[0] = checked_scalar(value, dtype, name)
        state["_given"] = True  # a call's own value: the next call that leaves it out resets it
        return address

    return set_value


def restore_defaults(slots: Sequence[_Slot]) -> None:
    """Put the default in the buffer of each by-value slot a call leaves out where an earlier
    call gave it a value (a value given to execute is that call's only: the docstring's promise)
    or the default is another object than the one last written. The graph's value is read when
    the buffer is made, and a tensor's ``value`` reassigned after that (then rebuilt: the plan
    cache hands back the same plan) ran with the old one, silently, while ``to_json`` saved the
    new one and verification compared with it."""
    for slot in slots:
        state, value = slot.__dict__, slot.value  # default_value(slot), inline: every call
        if value is None and slot.tensor is not None:
            value = slot.tensor.value
        if state.get("_given") or value is not state.get("_default"):
            if value is None:
                raise KeyError(f"by-value scalar '{slot.name}' has no value: pass a number")
            buf = slot.scalar
            buf[0] = checked_scalar(value, buf.dtype, slot.name)
            state["_given"], state["_default"] = False, value


def check_given(slots: Sequence[_Slot], order: tuple[int, ...]) -> None:
    """Refuse the tensors of an execute call (``order``: the slot of each, in the caller's order)
    that name a slot twice, leave out an array, or leave out a by-value scalar with no value
    (executing would read a zero the caller never chose)."""
    if len(set(order)) != len(order):
        dup = next(i for i in order if order.count(i) > 1)
        raise KeyError(f"tensor '{slots[dup].name}' is given twice")
    missing = [s.name for i, s in enumerate(slots) if i not in order and not s.by_value]
    if missing:
        raise KeyError("arrays are missing for tensor(s): " + ", ".join(missing))
    unset = [
        s.name
        for i, s in enumerate(slots)
        if i not in order and s.by_value and scalar_value(s) is None
    ]
    if unset:
        raise KeyError(
            "by-value scalar(s) without a value: "
            + ", ".join(unset)
            + " (the graph gave none, and a plan loaded without its graph from a file saved "
            "before pycudnn kept scalar values has none); pass each to execute() or set_scalar()"
        )


def arrays_device(slots: Iterable[_Slot], values: Iterable[Any]) -> int:
    """The device of the first array (by-value scalars left out) of ``values``, given for
    ``slots``: the device a plan executes on when no handle says; the current device when every
    tensor is a scalar. An array in host memory is refused."""
    for slot, v in zip(slots, values, strict=True):
        if slot.by_value:
            continue
        view = as_array_view(v, name=f"tensor '{slot.name}'")
        if view.device_id < 0:
            raise ValueError(
                f"tensor '{slot.name}': the array is in host memory; cuDNN executes on device "
                "arrays (CuPy, PyTorch, JAX, pycudnn.DeviceArray, ...)"
            )
        return view.device_id
    return current_device_id()


def _slots_from_graph(graph: OperationGraph) -> list[_Slot]:
    graph._resolve()
    into = _in_place_inputs(graph)
    # The arrays are described as the caller holds them: a vectorized tensor is its packed
    # [N, C/x, H, W, x] array of elements (Tensor.array_shape), not cuDNN's vector-counted view.
    return [
        _Slot(
            t.uid,
            t.name,
            t.array_shape,
            t.array_strides,
            t.element_type,
            t.alignment,
            t.by_value,
            t.is_output,
            t,
            in_place_of=into.get(t.uid),
        )
        for t in graph.tensors
        if not t.is_virtual
    ]


def _in_place_inputs(graph: OperationGraph) -> dict[int, int]:
    """Input uid -> output uid of each concatenation given ``in_place_index``: that input already
    is its slice of the output, so its memory lies in the output's by design
    (``CUDNN_ATTR_OPERATION_CONCAT_INPLACE_INDEX``)."""
    into: dict[int, int] = {}
    for op in graph.operations:
        index = op.attrs.get("in_place_index") if op.kind == "concatenate" else None
        if index is not None and f"x{index}" in op.inputs:
            into[op.inputs[f"x{index}"].uid] = op.outputs["y"].uid
    return into


def _json_in_place_inputs(nodes: Any) -> dict[int, int]:
    """:func:`_in_place_inputs` from a plan JSON's nodes (a concatenation's ``inplaceIndex``)."""
    into: dict[int, int] = {}
    for node in nodes if isinstance(nodes, list) else ():
        if not isinstance(node, Mapping) or "CONCAT" not in str(node.get("operation", "")):
            continue
        index, inputs = node.get("inplaceIndex"), node.get("inputDescs")
        if isinstance(index, int) and isinstance(inputs, list) and 0 <= index < len(inputs):
            try:
                into[int(inputs[index])] = int(node["outputDesc"])
            except (KeyError, TypeError, ValueError):
                continue  # named in a way the tensors' own reading refuses
    return into


def _json_tensors(graph: Mapping[str, Any]) -> list[Any]:
    """The tensors of a plan JSON's operation graph and of its nodes' subgraphs (an SDPA's mask
    subgraph holds by-value scalars of its own, which the variant pack must carry too)."""
    tensors = list(graph.get("tensors", []))
    for node in graph.get("nodes", []):
        if isinstance(node, Mapping) and isinstance(node.get("subgraph"), Mapping):
            tensors.extend(_json_tensors(node["subgraph"]))
    return tensors


def _slots_from_json(data: Mapping[str, Any], kept: Kept) -> list[_Slot]:
    """The tensors of a plan loaded without its graph, with what pycudnn kept of them: named as
    the graph named them (else by their unique ids), the outputs those it lists (else those in
    cuDNN's output roles), by-value scalars with their values, and the scalars cuDNN's own JSON
    leaves out (an SDPA backward's mask scalars) added."""
    names, scalars = kept.names, kept.scalars
    into = _json_in_place_inputs(data.get("operationGraph", {}).get("nodes", []))
    out = []
    produced: set[str] = set()
    for node in data.get("operationGraph", {}).get("nodes", []):
        # Output roles as cuDNN spells them in the JSON: "Y" for pointwise/conv forward, "dX"
        # and "dW" for the convolution gradients, "matC" for matmul.
        for key in _OUTPUT_ROLE_KEYS:
            if isinstance(node.get(key), str):
                produced.add(node[key])
    for t in _json_tensors(data.get("operationGraph", {})):
        if t.get("isVirtual"):
            continue
        try:
            uid = int(t["name"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                "the plan's JSON names tensors in a way this version cannot map to unique ids; "
                "load it with graph= to execute it"
            ) from None
        dt = _dtype_by_cudnn_name().get(str(t.get("dataType", "")).removeprefix("CUDNN_DATA_"))
        shape, strides = vector_array(
            tuple(t.get("dim", ())), tuple(t.get("stride", ())), int(t.get("vectCount", 1))
        )
        if t.get("isByValue") and any(n != 1 for n in shape):
            # cuDNN takes a by-value 1-D vector, read from host memory; execute passes a buffer
            # of one element (a graph's by-value tensors have all dims 1)
            raise ValueError(
                f"the plan JSON's tensor {uid} is by-value with dims {list(shape)}: a by-value "
                "tensor pycudnn can pass holds one element (all dims 1)"
            )
        out.append(
            _Slot(
                uid,
                names.get(uid, str(uid)),
                shape,
                strides,
                dt,
                int(t.get("ptrAlignment", 16)),
                bool(t.get("isByValue")),
                t["name"] in produced if kept.outputs is None else uid in kept.outputs,
                None,
                scalars[uid].value if uid in scalars and t.get("isByValue") else None,
                into.get(uid),
            )
        )
    listed = {s.uid for s in out}
    for uid, sc in scalars.items():
        if uid not in listed:
            ones = (1,) * sc.rank
            dt = _dtype_by_cudnn_name().get(sc.data_type)
            if dt is None:
                raise ValueError(
                    f"the plan JSON keeps by-value scalar {uid} as {sc.data_type!r}, which is no "
                    "cuDNN data type this version knows"
                )
            name = names.get(uid, str(uid))
            out.append(_Slot(uid, name, ones, ones, dt, 16, True, False, None, sc.value))
    out.sort(key=lambda s: s.uid)
    return out
