"""Plans as cuDNN's execution-plan JSON: version rules and matching a plan to its graph."""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import Any

from ..graph import Graph, Tensor, attention_lowering, rewrites
from ..graph.attention_composite import INTERNAL_UID_BASE, composite_views
from ..graph.attention_lowering import in_subgraph_only
from ..graph.common import _cudnn_dtype

__all__ = []

#: The top-level key :meth:`pycudnn.plan.Plan.to_json` adds to cuDNN's JSON: the key of the graph
#: the plan was built for (:meth:`pycudnn.Graph.key`), compared when the plan is loaded for a graph.
GRAPH_KEY_FIELD = "pycudnnGraphKey"

_log = logging.getLogger("pycudnn")


def _check_graph_key(written: Any, graph: Graph) -> None:
    """Refuse a plan saved for a graph whose key differs from ``graph``'s. The key covers what
    the comparison of tensors and operations below cannot read back from cuDNN's JSON (a
    convolution's padding, stride and dilation, a pointwise alpha): a plan for padding 2 has the
    same tensors as one for padding 1 and would compute other numbers."""
    if not isinstance(written, str):
        raise ValueError(f"the plan's {GRAPH_KEY_FIELD!r} must be a str, got {written!r}")
    if written != graph.key():
        raise ValueError(
            f"the plan was built for another graph: its {GRAPH_KEY_FIELD} {written[:12]}... is "
            f"not the key of graph '{graph.name}', {graph.key()[:12]}... (an operation setting such as "
            "padding, stride or a scalar differs); build the plan for this graph"
        )


def _check_json_matches_graph(data: Mapping[str, Any], graph: Graph) -> str:
    """Check that a plan JSON was built for ``graph`` (as described, or as one of its equivalent
    descriptions from :mod:`pycudnn.graph.rewrites`); returns the rewrite's note ("" for none).
    A plan saved by this library also carries its graph's key, which must be ``graph``'s."""
    graph._resolve()  # decides the dtypes and kinds of intermediates, compared below
    by_uid = {}
    for t in data.get("operationGraph", {}).get("tensors", []):
        try:
            by_uid[int(t["name"])] = t
        except (KeyError, TypeError, ValueError):
            return ""  # unknown naming: nothing to compare
    # the virtual intermediates of a composite SDPA are the lowering's, not the graph's
    by_uid = {u: t for u, t in by_uid.items() if u < INTERNAL_UID_BASE}
    composite = composite_views(graph._ops)
    tensors = [t for t in graph.tensors if not in_subgraph_only(t)]
    if len(by_uid) != len(tensors):
        raise ValueError(
            f"the plan has {len(by_uid)} tensors but the graph has {len(tensors)}: it was "
            "built for another graph"
        )
    _check_tensor_types(by_uid, tensors)
    _check_nodes(data, graph)
    mismatch = first = ""
    for variant in [None, *rewrites.variants(graph)]:
        mismatch = ""
        for t in tensors:
            j = by_uid.get(t.uid)
            if j is None:
                raise ValueError(
                    f"the plan has no tensor {t.uid} ('{t.name}'): it was built for another graph"
                )
            own = composite.get(t.uid, (t.vector_dims, t.strides))
            dims, strides = own if variant is None else variant.views[t.uid]
            jd, js = tuple(j.get("dim", ())), tuple(j.get("stride", ()))
            if jd != dims or (not t.is_virtual and js != strides):
                mismatch = (
                    f"the plan was built for another graph: tensor {t.uid} ('{t.name}') is "
                    f"{list(jd)} strides {list(js)} in the plan but {list(t.dims)} strides "
                    f"{list(t.strides)} in the graph"
                )
                break
        if not mismatch:
            return "" if variant is None else variant.note
        if variant is None:
            first = mismatch
    raise ValueError(first)


def _check_tensor_types(by_uid: Mapping[int, Any], tensors: list[Tensor]) -> None:
    """Refuse a plan whose tensors have the graph's uids but another data type, alignment, kind
    (virtual, by value) or vector count: execute checks arrays against the graph's tensors, so a
    plan for float32 data would be handed float16 arrays (out-of-bounds reads and writes)."""
    for t in tensors:
        j = by_uid.get(t.uid)
        if j is None:
            raise ValueError(
                f"the plan has no tensor {t.uid} ('{t.name}'): it was built for another graph"
            )
        assert t.dtype is not None  # resolved by the graph before its tensors are compared
        expected = {
            "dataType": "CUDNN_DATA_" + _cudnn_dtype(t.dtype, t.name).name,
            "ptrAlignment": t.alignment,
            "isVirtual": bool(t.is_virtual),
            "isByValue": bool(t.by_value),
            "vectCount": t.vector_count if t.is_vectorized else 1,
        }
        for key, want in expected.items():
            # A key cuDNN did not write is not compared (it writes all of them, cuDNN 9.28).
            if key in j and j[key] != want:
                raise ValueError(
                    f"the plan was built for another graph: tensor {t.uid} ('{t.name}') has "
                    f"{key} {j[key]!r} in the plan but {want!r} in the graph"
                )


def _node_uids(node: Mapping[str, Any]) -> set[int]:
    """The tensor unique ids a plan-JSON node names (as decimal strings, alone or in lists)."""
    uids = set()
    for key, value in node.items():
        for v in value if isinstance(value, list) else [value]:
            if key != "operation" and isinstance(v, str) and not v.startswith("CUDNN_"):
                try:
                    uids.add(int(v))
                except ValueError:
                    continue
    return uids


def _check_nodes(data: Mapping[str, Any], graph: Graph) -> None:
    """Refuse a plan whose operations are not the graph's: same tensors, other operations (a
    pointwise ADD plan for a MUL graph computes wrong numbers without any error).

    Each graph operation is lowered to one cuDNN operation naming its tensors, so each must
    match a node of the plan naming the same tensors, and every enumerated attribute the
    operation sets (a pointwise or convolution mode, ...) must appear in that node as cuDNN spells
    it. Operations lowered to several cuDNN operations (attention, normalization) are matched by
    their tensors only, through the tensor checks.
    """
    nodes = data.get("operationGraph", {}).get("nodes", [])
    ops = graph._ops
    if any(op.kind in attention_lowering.KINDS for op in ops):
        return
    if len(nodes) != len(ops):
        raise ValueError(
            f"the plan has {len(nodes)} operation(s) but the graph has {len(ops)}: it was built "
            "for another graph"
        )
    unmatched = [(dict(n), _node_uids(n)) for n in nodes if isinstance(n, Mapping)]
    for op in ops:
        uids = {t.uid for t in (*op.inputs.values(), *op.outputs.values())}
        # Enumerators are written with their C prefix, which the Python member name lacks
        # (cudnnPointwiseMode_t.ADD is "CUDNN_POINTWISE_ADD"): compared by the name's end.
        enums = ["_" + v.name for v in op.attrs.values() if isinstance(v, enum.Enum) and v.name]
        found = None
        for i, (node, node_uids) in enumerate(unmatched):
            strings = [v for v in node.values() if isinstance(v, str) and v.startswith("CUDNN_")]
            if node_uids == uids and all(any(v.endswith(e) for v in strings) for e in enums):
                found = i
                break
        if found is None:
            raise ValueError(
                f"the plan was built for another graph: it has no operation like {op.kind} "
                f"'{op.name}' ({' '.join(e[1:] for e in enums) or 'on'} tensors {sorted(uids)})"
            )
        del unmatched[found]


def _version() -> int:
    from .._info import version

    return version()


def _version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
