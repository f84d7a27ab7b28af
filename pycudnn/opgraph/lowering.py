"""Lowering a :class:`~pycudnn.Graph` to cuDNN's backend descriptors.

One function, :func:`build_descriptors`, turns the graph's tensors and operations into finalized
``CUDNN_BACKEND_TENSOR_DESCRIPTOR``, operation-config (CONVOLUTION, MATMUL, POINTWISE, REDUCTION),
``OPERATION_*`` and ``OPERATIONGRAPH`` descriptors. The graph owns the result, one set per planning
target (see :meth:`pycudnn.Graph.finalize`): a set bound to a GPU's handle, or an unbound one for
deviceless planning.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from _nvbind.dtypes import DataType, dtype_name
from _nvbind.shutdown import library_call

from .._descriptor_memory import DescriptorBatch
from ..backend import BackendDescriptor
from ..errors import CudnnError
from .attention_composite import composite_views
from .attention_lowering import KINDS as ATTENTION_KINDS
from .attention_lowering import build_operation as build_attention_operation
from .attention_lowering import build_operations as build_attention_operations
from .common import GraphError, _cudnn_dtype
from .lowering_extra import EXTRA_KINDS, build_extra_op
from .tensor_lowering import Views, lower_tensors, renamed

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .core import GraphCore as Graph
    from .tensors import Operation

__all__ = ["build_descriptors"]

#: The whole lowering is one library call for exit and fork (see _nvbind.shutdown): its ~10 to
#: ~200 C calls then pay only for nesting, not each for the exit guard.
_LOWERING_CALL = library_call("cudnnBackendSetAttribute (lowering a graph to descriptors)")


def _scalar_type(compute: DataType | np.dtype) -> str:
    # Scaling factors and activation parameters are FLOAT, or DOUBLE for double-precision math.
    return "DOUBLE" if dtype_name(compute) == "float64" else "FLOAT"


def build_descriptors(
    graph: Graph,
    *,
    handle: Any = None,
    views: Views | None = None,
    factory: Any = None,
) -> dict[str, Any]:
    """Create and finalize the TENSOR, op-config, OPERATION_* and OPERATIONGRAPH descriptors.

    ``handle`` (a :class:`pycudnn.Handle`) is set as ``OPERATIONGRAPH_HANDLE``: cuDNN plans a graph
    for the device of that handle. Without one (deviceless planning, where the target is described
    by DEVICEPROP on the heuristics and the plan), cuDNN plans for a device whose properties are all
    zero unless DEVICEPROP is given later: engine configs then read ``"smVersion":0`` and fail at
    execute with ``NOT_SUPPORTED_ARCH_MISMATCH`` (measured on an H100, cuDNN 9.19).

    ``views`` maps tensor uids to the (dims, strides) cuDNN is shown instead of the graph's own (an
    equivalent description cuDNN has engines for, from :mod:`pycudnn.opgraph.rewrites`); the data pointers
    and unique ids stay the same, so the variant pack does not change.

    ``factory`` makes the descriptors instead of ``BackendDescriptor`` (the plan loader records
    the attributes set, to compare a plan JSON with what this graph gives cuDNN).
    """

    made: list[BackendDescriptor] = []
    # A composite SDPA shows cuDNN K (and V) transposed, as NVIDIA's frontend does.
    views = {**composite_views(graph._ops), **(views or {})}
    # The descriptors live and die together (each points at the ones made before it): one owner
    # destroys them all, instead of a finalizer each.
    batch = DescriptorBatch([]) if factory is None else None

    def new(kind: str) -> BackendDescriptor:
        d = BackendDescriptor._in_batch(kind, batch) if batch is not None else factory(kind)
        made.append(d)
        return d

    def finalize(desc: BackendDescriptor, what: str | Callable[[], str]) -> None:
        # ``what`` names the descriptor in cuDNN's error: text, or a function that makes it (a
        # graph's tensors are named only if one fails)
        try:
            desc.finalize()
        except CudnnError as exc:
            raise renamed(exc, what() if callable(what) else what) from None

    try:
        lower = functools.partial(
            _lower, graph, handle, views, new=new, finalize=finalize, made=made, batch=batch
        )
        lowered: dict[str, Any] = _LOWERING_CALL.run(lower)
        return lowered
    except BaseException:
        for d in reversed(made):
            d.close()
        if batch is not None:
            batch.destroy_now()
        raise


def _lower(
    graph: Graph,
    handle: Any,
    views: Views,
    *,
    new: Any,
    finalize: Any,
    made: list[BackendDescriptor],
    batch: DescriptorBatch | None,
) -> dict[str, Any]:
    """The body of :func:`build_descriptors` (which closes ``made`` if it raises)."""
    tensors = lower_tensors(graph._tensors, views, new, finalize, batch=batch, made=made)
    ops: list[BackendDescriptor] = []
    for op in graph._ops:
        several = build_attention_operations(op, tensors, new, finalize)
        if several is not None:
            ops.extend(several)
        else:
            ops.append(_build_op(op, tensors, new, finalize))

    g = new("OPERATIONGRAPH")
    g.set("OPERATIONGRAPH_OPS", ops, attr_type="BACKEND_DESCRIPTOR")
    if handle is not None:
        g.set("OPERATIONGRAPH_HANDLE", handle, attr_type="HANDLE")
        g.keep_alive(handle)  # cuDNN keeps the pointer: the handle must outlive the graph
    finalize(g, f"graph '{graph.name}'")
    return {"graph": g, "tensors": tensors, "ops": ops, "all": made[::-1], "handle": handle}


_CONV_KINDS = {
    "conv_fprop": (
        "OPERATION_CONVOLUTION_FORWARD",
        "OPERATION_CONVOLUTION_FORWARD_",
        {"x": "X", "w": "W", "y": "Y"},
    ),
    "conv_dgrad": (
        "OPERATION_CONVOLUTION_BACKWARD_DATA",
        "OPERATION_CONVOLUTION_BWD_DATA_",
        {"dy": "DY", "w": "W", "dx": "DX"},
    ),
    "conv_wgrad": (
        "OPERATION_CONVOLUTION_BACKWARD_FILTER",
        "OPERATION_CONVOLUTION_BWD_FILTER_",
        {"x": "X", "dy": "DY", "dw": "DW"},
    ),
}

_PW_PARAMS = {
    "relu_lower_clip": "POINTWISE_RELU_LOWER_CLIP",
    "relu_upper_clip": "POINTWISE_RELU_UPPER_CLIP",
    "relu_lower_clip_slope": "POINTWISE_RELU_LOWER_CLIP_SLOPE",
    "elu_alpha": "POINTWISE_ELU_ALPHA",
    "softplus_beta": "POINTWISE_SOFTPLUS_BETA",
    "swish_beta": "POINTWISE_SWISH_BETA",
}


def _build_op(op: Operation, tensors: dict[int, Any], new: Any, finalize: Any) -> Any:
    a = op.attrs
    compute = _cudnn_dtype(a["compute_dtype"], op.label)
    scalar = _scalar_type(a["compute_dtype"])
    if op.kind in _CONV_KINDS:
        op_type, prefix, roles = _CONV_KINDS[op.kind]
        conv = new("CONVOLUTION")
        conv.set("CONVOLUTION_COMP_TYPE", compute, attr_type="DATA_TYPE")
        conv.set(
            "CONVOLUTION_CONV_MODE",
            "CROSS_CORRELATION" if a["mode"] == "cross_correlation" else "CONVOLUTION",
            attr_type="CONVOLUTION_MODE",
        )
        conv.set("CONVOLUTION_SPATIAL_DIMS", len(a["stride"]), attr_type="INT64")
        conv.set("CONVOLUTION_DILATIONS", a["dilation"], attr_type="INT64")
        conv.set("CONVOLUTION_FILTER_STRIDES", a["stride"], attr_type="INT64")
        conv.set("CONVOLUTION_PRE_PADDINGS", a["pre_padding"], attr_type="INT64")
        conv.set("CONVOLUTION_POST_PADDINGS", a["post_padding"], attr_type="INT64")
        finalize(conv, f"{op.label} (convolution settings)")
        d = new(op_type)
        for role, attr in roles.items():
            t = op.inputs.get(role) or op.outputs[role]
            d.set(prefix + attr, tensors[t.uid], attr_type="BACKEND_DESCRIPTOR")
        d.set(prefix + "CONV_DESC", conv, attr_type="BACKEND_DESCRIPTOR")
        d.set(prefix + "ALPHA", a["alpha"], attr_type=scalar)
        d.set(prefix + "BETA", a["beta"], attr_type=scalar)
    elif op.kind in ATTENTION_KINDS:
        d = build_attention_operation(op, tensors, new, finalize)
    elif op.kind == "matmul":
        mm = new("MATMUL")
        mm.set("MATMUL_COMP_TYPE", compute, attr_type="DATA_TYPE")
        finalize(mm, f"{op.label} (matmul settings)")
        d = new("OPERATION_MATMUL")
        d.set("OPERATION_MATMUL_ADESC", tensors[op.inputs["a"].uid], attr_type="BACKEND_DESCRIPTOR")
        d.set("OPERATION_MATMUL_BDESC", tensors[op.inputs["b"].uid], attr_type="BACKEND_DESCRIPTOR")
        d.set(
            "OPERATION_MATMUL_CDESC", tensors[op.outputs["c"].uid], attr_type="BACKEND_DESCRIPTOR"
        )
        d.set("OPERATION_MATMUL_DESC", mm, attr_type="BACKEND_DESCRIPTOR")
    elif op.kind == "pointwise":
        pw = new("POINTWISE")
        pw.set("POINTWISE_MODE", a["mode"], attr_type="POINTWISE_MODE")
        pw.set("POINTWISE_MATH_PREC", compute, attr_type="DATA_TYPE")
        for key, attr in _PW_PARAMS.items():
            if key in a:
                pw.set(attr, a[key], attr_type=scalar)
        if "axis" in a:
            pw.set("POINTWISE_AXIS", a["axis"], attr_type="INT64")
        finalize(pw, f"{op.label} (pointwise settings)")
        d = new("OPERATION_POINTWISE")
        d.set("OPERATION_POINTWISE_PW_DESCRIPTOR", pw, attr_type="BACKEND_DESCRIPTOR")
        slots = {
            "x": "XDESC",
            "b": "BDESC",
            "t": "TDESC",
            "dy": "DYDESC",
            "y": "YDESC",
            "dx": "DXDESC",
        }
        for role, t in (*op.inputs.items(), *op.outputs.items()):
            d.set(
                "OPERATION_POINTWISE_" + slots[role], tensors[t.uid], attr_type="BACKEND_DESCRIPTOR"
            )
        if "alpha1" in a:
            d.set("OPERATION_POINTWISE_ALPHA1", a["alpha1"], attr_type=scalar)
        if "alpha2" in a:
            d.set("OPERATION_POINTWISE_ALPHA2", a["alpha2"], attr_type=scalar)
    elif op.kind == "reduction":
        red = new("REDUCTION")
        red.set("REDUCTION_OPERATOR", a["op"], attr_type="REDUCTION_OPERATOR_TYPE")
        red.set("REDUCTION_COMP_TYPE", compute, attr_type="DATA_TYPE")
        if "deterministic" in a:
            red.set("REDUCTION_IS_DETERMINISTIC", a["deterministic"], attr_type="BOOLEAN")
        finalize(red, f"{op.label} (reduction settings: operator {a['op'].name.lower()})")
        d = new("OPERATION_REDUCTION")
        d.set(
            "OPERATION_REDUCTION_XDESC", tensors[op.inputs["x"].uid], attr_type="BACKEND_DESCRIPTOR"
        )
        d.set(
            "OPERATION_REDUCTION_YDESC",
            tensors[op.outputs["y"].uid],
            attr_type="BACKEND_DESCRIPTOR",
        )
        d.set("OPERATION_REDUCTION_DESC", red, attr_type="BACKEND_DESCRIPTOR")
    elif op.kind in EXTRA_KINDS:  # the newer kinds, table-driven (see .lowering_extra)
        d = build_extra_op(op, tensors, new, finalize, compute)
    else:  # pragma: no cover - every kind the Graph creates is handled above
        raise GraphError(f"{op.label}: unknown operation kind {op.kind!r}")
    finalize(d, op.label)
    return d
