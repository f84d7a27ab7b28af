"""Plans as cuDNN's execution-plan JSON: version rules and matching a plan to its graph."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..graph import Graph, rewrites
from ..graph.attention_lowering import in_subgraph_only

__all__ = []

_log = logging.getLogger("pycudnn")


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
            dims, strides = (t.vector_dims, t.strides) if variant is None else variant.views[t.uid]
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
