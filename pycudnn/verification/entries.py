"""Known-bad table entries from failed verifications.

A plan that verification finds wrong becomes an entry in the format of
``pycudnn/data/known_bad_engines.json`` (see :mod:`pycudnn.known_bad`): the engine, the operation
kind, the layouts and data types of its operands, the cuDNN version it was seen wrong in (as the
first version the entry applies to, until one is verified fixed), the device, and the errors.
:func:`write_entries` adds them to a table file that ``PYCUDNN_KNOWN_BAD_ENGINES`` can name, so
that the next planning run leaves the engine out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _nvbind.dtypes import dtype_name
from _nvbind.files import check_write_target, read_text, write_text

from .. import known_bad

if TYPE_CHECKING:  # pragma: no cover
    from ..opgraph import OperationGraph
    from .result import VerifyResult

__all__ = ["entry_for", "write_entries"]

# The operation an engine is blamed for: the graph's main operation (a convolution or matmul
# when there is one; pointwise ops fuse around it).
_MAIN_KINDS = ("conv_fprop", "conv_dgrad", "conv_wgrad", "matmul", "reduction", "pointwise")


def _version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"


def entry_for(
    result: VerifyResult,
    graph: OperationGraph,
    *,
    cudnn_version: int,
    device: str = "",
    date: str = "",
) -> dict[str, Any]:
    """A known-bad entry (a JSON-ready dict) for the engine of a failed ``result`` on ``graph``."""
    if result.passed or result.engine_id is None:
        raise ValueError("only a failed verification of a known engine makes a known-bad entry")
    ops = graph.operations
    main = next((op for kind in _MAIN_KINDS for op in ops if op.kind == kind), None)
    if main is None:
        raise ValueError(f"graph '{graph.name}' has no operation to blame")
    operands = [t for t in main.inputs.values() if not t.by_value]
    layouts = sorted({t.format for t in operands if t.ndim >= 4})
    dtypes = sorted({dtype_name(t.dtype) for t in operands if t.dtype is not None})
    version = _version_text(cudnn_version)
    worst = (
        "non-finite values"
        if any(o.nonfinite for o in result.outputs)
        else f"relative error {result.max_rel_error:.3g} (tolerance {result.tolerance:.3g})"
    )
    shapes = ", ".join(f"{t.name}{list(t.dims)}" for t in operands)
    found = (
        f"{date + ': ' if date else ''}verification against {result.reference} (seed "
        f"{result.seed}): {main.kind} {shapes} gave {worst}"
    )
    return {
        "engine_id": int(result.engine_id),
        "operation": main.kind,
        "layouts": layouts,
        "input_dtypes": dtypes,
        "cudnn_min": version,
        "cudnn_max": None,
        "seen_wrong_in": [f"{version}" + (f" on {device}" if device else "")],
        "found": found,
        "advice": "",
    }


def _same_scope(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ("engine_id", "operation", "layouts", "input_dtypes", "cudnn_min")
    return all(a.get(k) == b.get(k) for k in keys)


def write_entries(path: str | os.PathLike[str], entries: Iterable[Mapping[str, Any]]) -> int:
    """Add ``entries`` to the known-bad table at ``path`` (created if missing); entries already
    there for the same engine, operation, layouts, data types and version are not repeated.
    Returns how many were added. The file is checked with :func:`pycudnn.known_bad.load_table`
    before and after, so that a table planning cannot read is never written."""

    p = Path(path)
    check_write_target(p, what="known-bad engine table")  # a FIFO would block the read below
    if p.exists():
        known_bad.load_table(p)  # refuse to extend a file that does not parse as a table
        data = json.loads(read_text(p, what="known-bad engine table"))
    else:
        data = {"schema": 1, "entries": []}
    added = 0
    for e in entries:
        if not any(_same_scope(e, old) for old in data["entries"]):
            data["entries"].append(dict(e))
            added += 1
    text = json.dumps(data, indent=2) + "\n"
    known_bad.load_table(text=text)
    write_text(p, text, what="known-bad engine table")  # atomic: a reader never sees a part
    return added
