"""Plans as cuDNN's execution-plan JSON: version rules and matching a plan to its graph."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..graph import Graph, rewrites
from ..graph.attention_lowering import in_subgraph_only

__all__ = []

_log = logging.getLogger("pycudnn")

#: Node attributes that hold one entry per spatial dim (convolution and resample nodes).
_SPATIAL_KEYS = frozenset(
    ("pad", "prePaddings", "postPaddings", "stride", "strides", "dilation", "windowDims")
)
#: Tensor roles whose rank gives a convolution's spatial rank (the input, or its gradient).
_RANK_ROLES = ("X", "DX", "W", "DW", "Y", "DY")


def _check_spatial_arrays(data: Mapping[str, Any]) -> None:
    """Refuse a plan whose per-spatial-dim arrays do not have one entry per spatial dim.

    cuDNN checks most lengths, but a convolution whose ``stride``, ``pad`` or ``dilation`` has 8 or
    9 entries crashes it while deserializing (segfault, cuDNN 9.27 and 9.28; other lengths are
    refused). The spatial rank follows from the node's tensors: rank minus 2 (N and C).
    """
    og = data.get("operationGraph")
    if not isinstance(og, Mapping):
        return  # malformed containers are check_plan_json's to refuse
    ranks: dict[str, int] = {}
    for t in og.get("tensors", ()) if isinstance(og.get("tensors"), list) else ():
        if isinstance(t, Mapping) and isinstance(t.get("dim"), list):
            ranks[str(t.get("name"))] = len(t["dim"])
    nodes = og.get("nodes")
    for i, node in enumerate(nodes if isinstance(nodes, list) else ()):
        if not isinstance(node, Mapping):
            continue
        keys = [k for k in node if k in _SPATIAL_KEYS]
        if not keys:
            continue
        where = f"not a valid cuDNN execution-plan JSON: operationGraph.nodes[{i}]"
        rank = next((ranks[str(node[r])] for r in _RANK_ROLES if str(node.get(r)) in ranks), None)
        if rank is None or not 3 <= rank <= 8:
            raise ValueError(
                f"{where} has {', '.join(keys)} but names no tensor of rank 3 to 8 to check them "
                "against"
            )
        for key in keys:
            value = node[key]
            if not isinstance(value, list) or len(value) != rank - 2:
                got = f"{len(value)} entries" if isinstance(value, list) else repr(value)[:40]
                raise ValueError(
                    f"{where}.{key} must be a list of {rank - 2} entries (one per spatial dim of "
                    f"its rank-{rank} tensors), got {got}"
                )


def _check_json_matches_graph(data: Mapping[str, Any], graph: Graph) -> str:
    """Check that a plan JSON was built for ``graph`` (as described, or as one of its equivalent
    descriptions from :mod:`pycudnn.graph.rewrites`); returns the rewrite's note ("" for none)."""
    by_uid = {}
    for t in data.get("operationGraph", {}).get("tensors", []):
        try:
            by_uid[int(t["name"])] = t
        except (KeyError, TypeError, ValueError):
            return ""  # unknown naming: nothing to compare
    tensors = [t for t in graph.tensors if not in_subgraph_only(t)]
    if len(by_uid) != len(tensors):
        raise ValueError(
            f"the plan has {len(by_uid)} tensors but the graph has {len(tensors)}: it was "
            "built for another graph"
        )
    mismatch = first = ""
    for variant in [None, *rewrites.variants(graph)]:
        mismatch = ""
        for t in tensors:
            j = by_uid.get(t.uid)
            if j is None:
                raise ValueError(
                    f"the plan has no tensor {t.uid} ('{t.name}'): it was built for another graph"
                )
            dims, strides = (t.dims, t.strides) if variant is None else variant.views[t.uid]
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


def _version() -> int:
    from .._info import version

    return version()


def _version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
