"""Loading a serialized execution plan: cuDNN's JSON checked (version, shape, pycudnn's digests,
the graph it claims to compute) before cuDNN sees it, then set on an ``EXECUTION_PLAN`` with the
target's ``DEVICEPROP`` and finalized (``cudnnBackendFinalize``). :meth:`Plan.from_json` and
:meth:`Plan.load` wrap the descriptor this returns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from _nvbind.files import read_text

from .. import known_bad
from .._plan_json import parse_json_for_cudnn
from ..backend import BackendDescriptor, check_plan_json
from ..deviceprops import DeviceProperties, _error_lines
from ..errors import CudnnError
from ..handle import get_handle
from ..opgraph import OperationGraph
from ..opgraph.attention_lowering import lowering_notes
from .report import PlanVersionError, _capture
from .serialization import (
    Kept,
    _check_json_matches_graph,
    _version,
    _version_text,
    check_computes,
    take_our_fields,
)
from .targets import _deserialize_props

__all__ = ["LoadedPlan", "PlanLoadKeywords", "load_plan_descriptor", "read_plan_text"]


class PlanLoadKeywords(TypedDict, total=False):
    """The keywords of :meth:`Plan.from_json <pycudnn.plan.Plan.from_json>` that
    ``Graph.load_plan`` takes too, with the same defaults: its fixed keyword list, for
    ``**kw: Unpack[PlanLoadKeywords]``."""

    device_properties: DeviceProperties | None
    device: Any
    allow_known_bad: bool


class LoadedPlan(NamedTuple):
    """A finalized ``EXECUTION_PLAN`` from JSON, with what a :class:`Plan` needs around it."""

    desc: BackendDescriptor
    data: dict[str, Any]
    props: DeviceProperties | None
    ordinal: int | None
    kept: Kept
    rewrite: str


def load_plan_descriptor(
    source: str | bytes | Mapping[str, Any],
    *,
    graph: OperationGraph | None,
    device_properties: DeviceProperties | None,
    device: Any,
    allow_known_bad: bool = False,
) -> LoadedPlan:
    """Check a serialized plan and finalize it on a new ``EXECUTION_PLAN`` descriptor (the
    caller owns it). Refusals: :class:`PlanVersionError` for another cuDNN version or schema,
    ``ValueError``/``TypeError`` for what is not a plan JSON, :class:`CudnnError` from cuDNN."""
    if isinstance(source, Mapping):
        try:
            text = json.dumps(dict(source))
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"the plan dict cannot be written as JSON: {exc}") from None
    elif isinstance(source, (str, bytes, bytearray)):
        text = source  # type: ignore[assignment]
    else:
        raise TypeError(f"from_json takes a JSON string or a dict, not {type(source).__name__}")
    # A dict is parsed back from its JSON too: json.dumps writes the keys 1 and "1" both as
    # "1", and what is checked must be what cuDNN reads.
    data = parse_json_for_cudnn(text, "the plan JSON")
    if not isinstance(data, dict) or "cudnnVersion" not in data:
        raise ValueError("this is not a cuDNN execution-plan JSON (no 'cudnnVersion' key)")
    written, loaded = data["cudnnVersion"], _version()
    if isinstance(written, bool) or not isinstance(written, int):
        raise ValueError(
            f"not a valid cuDNN execution-plan JSON: 'cudnnVersion' must be an int, got {written!r}"
        )
    if written != loaded:
        shown = _version_text(written) if isinstance(written, int) else repr(written)
        raise PlanVersionError(
            f"this plan was serialized by cuDNN {shown} (cudnnVersion {written}) but the loaded "
            f"library is cuDNN {_version_text(loaded)}: cuDNN loads plans only in the exact "
            "version that wrote them; rebuild it"
        )
    check_plan_json(data)  # before cuDNN sees it: some malformed plans crash it
    # pycudnn's keys, not cuDNN's: checked (the integrity digest) and not handed on
    ours = take_our_fields(data)
    if graph is not None:
        if not isinstance(graph, OperationGraph):
            raise TypeError(f"graph must be a pycudnn.Graph, not {type(graph).__name__}")
        # As building says it: the equivalent description planned, else the SDPA lowerings.
        rewrite = _check_json_matches_graph(data, graph) or "; ".join(
            lowering_notes(graph.operations)
        )
        check_computes(data, ours, graph)
        if not isinstance(allow_known_bad, bool):
            raise TypeError(f"allow_known_bad must be a bool, not {allow_known_bad!r}")
        if not allow_known_bad:
            _refuse_known_bad(data, graph)
    else:
        rewrite = ""
    props, ordinal = _deserialize_props(device_properties, device)
    # cuDNN is handed the JSON written from the parsed data, not the caller's text: what it
    # reads is then exactly what was checked (the parse above refuses what would differ).
    text = json.dumps(data)
    desc = BackendDescriptor("EXECUTION_PLAN")
    try:
        if props is not None:
            desc.set("EXECUTION_PLAN_DEVICEPROP", props.descriptor)
        else:  # a cuDNN older than DEVICEPROP (9.8) loads plans for a GPU's handle
            desc.set("EXECUTION_PLAN_HANDLE", get_handle(ordinal), attr_type="HANDLE")
        desc.set("EXECUTION_PLAN_JSON_REPRESENTATION", text, attr_type="CHAR")
        with _capture() as records:
            try:
                desc.finalize()
            except CudnnError as exc:
                lines = _error_lines(records)
                extra = ("; cuDNN log: " + " | ".join(lines)) if lines else ""
                if exc.status_name == "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH":
                    # cuDNN files this under "not initialized" (1003); it is a plan written
                    # in another serialization schema, the same case as another version.
                    raise PlanVersionError(
                        f"this plan's schemaVersion {data.get('schemaVersion')!r} is not one "
                        f"cuDNN {_version_text(loaded)} reads ({exc.message}{extra}); rebuild it"
                    ) from None
                raise type(exc)(
                    exc.status, exc.function, f"loading a serialized plan: {exc.message}{extra}"
                ) from None
        if props is not None:
            desc.keep_alive(props)
        return LoadedPlan(desc, data, props, ordinal, ours.kept, rewrite)
    except BaseException:
        desc.close()
        raise


def read_plan_text(source: str | os.PathLike[str]) -> str:
    """The text of a plan file: a regular file of UTF-8 text, or refused naming the path."""

    try:
        text = read_text(source, what="plan file")  # a regular file: no FIFO, no /dev/zero
    except OSError as exc:
        raise OSError(f"cannot read a plan from {os.fspath(source)!r}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"cannot read a plan from {os.fspath(source)!r}: it is not UTF-8 text ({exc}), so "
            "not a cuDNN execution-plan JSON"
        ) from None
    return text


def _refuse_known_bad(data: Mapping[str, Any], graph: OperationGraph) -> None:
    """Refuse a plan of an engine the known-bad table names for ``graph`` under the loaded
    cuDNN, as planning and ``build_engine`` do: a plan saved before the entry was added, or
    built with ``allow_known_bad=True``, would otherwise keep computing wrong results."""
    engine = data.get("engine")
    engine_id = engine.get("engineId") if isinstance(engine, Mapping) else None
    if isinstance(engine_id, bool) or not isinstance(engine_id, int):
        return  # cuDNN refuses a plan without one when it finalizes it
    entry = known_bad.match(known_bad.exclusions_for(graph, _version()), engine_id)
    if entry is not None:
        raise ValueError(
            f"the plan runs engine {engine_id}, which is known to give wrong results for graph "
            f"'{graph.name}': {entry.describe()} (allow_known_bad=True loads it anyway)"
        )
