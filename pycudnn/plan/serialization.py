"""Plans as cuDNN's execution-plan JSON: version rules and matching a plan to its graph."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from .._info import version
from ..opgraph import OperationGraph, Tensor, rewrites
from ..opgraph.attention_composite import INTERNAL_UID_BASE, composite_views
from ..opgraph.attention_lowering import in_subgraph_only
from ..opgraph.attention_ragged import offsets_only
from ..opgraph.common import _cudnn_dtype
from . import canonical
from .report import PlanVersionError

__all__ = []

#: Keys :meth:`pycudnn.plan.Plan.to_json` adds to cuDNN's JSON (left out of what cuDNN is given).
#: ``pycudnnGraphKey``: a digest of the plan's operation graph in a canonical text (every node's
#: kind, attributes and roles, every tensor), recomputed from the loaded JSON, never trusted;
#: ``pycudnnTensorNames``: the graph's tensor names by unique id; ``pycudnnPlanFormat``: this
#: layout's number; ``pycudnnDigest``: a digest of the whole JSON but itself, so that damage
#: anywhere (a flipped bit in a kernel payload) is refused instead of loaded.
#: ``pycudnnScalarValues``: the by-value scalars by unique id (a scale, an epsilon, a mask's
#: -inf), each ``[value as text, cuDNN data type name, rank]`` (``"-inf"`` is no JSON number):
#: cuDNN's JSON holds no values, and leaves out some scalars altogether (an SDPA backward's
#: mask subgraph), which a plan loaded without its graph needs; absent from older plans.
#: ``pycudnnOutputs``: the unique ids of the tensors the plan writes (cuDNN's JSON names them by
#: roles that differ from operation to operation); absent from older plans.
#: ``pycudnnSubgraphs``: a digest of the graph's SDPA score subgraphs (masks, bias) and of the
#: tensors only they read, as the graph gives them to cuDNN (:func:`subgraphs_digest`): cuDNN's
#: JSON of an SDPA backward leaves its subgraph out altogether (the mask and the bias live only in
#: the kernel's parameters, cuDNN 9.28) and lists a subgraph's tensors nowhere its graph's tensors
#: are compared, so without it a plan for a top-left causal mask loaded for a bottom-right one,
#: and a plan for a bias of one shape or dtype for another (silent wrong results, reads past the
#: bias); written for graphs with such subgraphs only.
GRAPH_KEY_FIELD = "pycudnnGraphKey"
NAMES_FIELD = "pycudnnTensorNames"
SCALARS_FIELD = "pycudnnScalarValues"
OUTPUTS_FIELD = "pycudnnOutputs"
SUBGRAPHS_FIELD = "pycudnnSubgraphs"
FORMAT_FIELD = "pycudnnPlanFormat"
DIGEST_FIELD = "pycudnnDigest"
#: 1 (no FORMAT_FIELD): the key was the graph's own key, a string nothing checked against the
#: plan's content; such plans are refused for a graph ("saved by an older version, re-plan").
PLAN_FORMAT = 2
_OUR_PREFIX = "pycudnn"

_log = logging.getLogger("pycudnn")


class Scalar(NamedTuple):
    """A by-value scalar as a plan JSON keeps it (:data:`SCALARS_FIELD`)."""

    value: float | int
    data_type: str  # cuDNN's name without CUDNN_DATA_, e.g. "FLOAT"
    rank: int


@dataclasses.dataclass(frozen=True)
class Kept:
    """What pycudnn keeps in a plan JSON of the plan's tensors, which cuDNN's JSON lacks and a
    plan loaded without its graph needs: their names, the by-value scalars, and the outputs
    (None where the file does not say: written before :data:`OUTPUTS_FIELD` was added)."""

    names: dict[int, str] = dataclasses.field(default_factory=dict)
    scalars: dict[int, Scalar] = dataclasses.field(default_factory=dict)
    outputs: frozenset[int] | None = None
    #: :data:`SUBGRAPHS_FIELD` (None: the graph has no SDPA score subgraph, or the file does not
    #: say: written before the field was added)
    subgraphs: str | None = None


@dataclasses.dataclass(frozen=True)
class _Ours:
    """What pycudnn wrote into a plan JSON: ``kind`` is "current", "older" or "foreign"."""

    kind: str
    graph_key: str | None = None
    kept: Kept = dataclasses.field(default_factory=Kept)


def add_our_fields(data: dict[str, Any], kept: Kept) -> None:
    """Add pycudnn's keys to cuDNN's JSON of a plan (see :data:`GRAPH_KEY_FIELD`)."""
    data[FORMAT_FIELD] = PLAN_FORMAT
    data[GRAPH_KEY_FIELD] = canonical.digest(data)
    data[NAMES_FIELD] = {str(uid): name for uid, name in kept.names.items()}
    data[SCALARS_FIELD] = {
        str(uid): [repr(sc.value), sc.data_type, sc.rank] for uid, sc in kept.scalars.items()
    }
    data[OUTPUTS_FIELD] = sorted(kept.outputs or ())
    if kept.subgraphs is not None:
        data[SUBGRAPHS_FIELD] = kept.subgraphs
    data[DIGEST_FIELD] = canonical.content_digest(data, DIGEST_FIELD)


def with_our_fields(
    text: str, kept: Kept, graph: OperationGraph | None, loaded_subgraphs: str | None
) -> str:
    """cuDNN's plan JSON ``text`` with pycudnn's fields (:func:`add_our_fields`); the record of
    the SDPA subgraphs cuDNN's JSON leaves out is the graph's, else the one the plan was loaded
    with (a plan loaded without its graph keeps it for its next save)."""
    data = json.loads(text)
    subgraphs = subgraphs_digest(graph) if graph is not None else loaded_subgraphs
    add_our_fields(data, dataclasses.replace(kept, subgraphs=subgraphs))
    return json.dumps(data)


def take_our_fields(data: dict[str, Any]) -> _Ours:
    """Remove pycudnn's keys from a parsed plan JSON, checking the integrity digest first.

    A JSON damaged anywhere after it was saved (a bit flip in a kernel payload, an edited node,
    a key copied from another plan) no longer matches its ``pycudnnDigest``: refused here with a
    ValueError, before cuDNN reads it. A JSON with none of the keys (written by cuDNN or
    cudnn-frontend) is "foreign"; one with the key but no format number is "older".
    """
    ours = {k: data.pop(k) for k in [k for k in data if k.startswith(_OUR_PREFIX)]}
    if not ours:
        return _Ours("foreign")
    digest = ours.pop(DIGEST_FIELD, None)
    fmt = ours.pop(FORMAT_FIELD, None)
    key = ours.pop(GRAPH_KEY_FIELD, None)
    names = ours.pop(NAMES_FIELD, None)
    scalars = ours.pop(SCALARS_FIELD, None)  # None (both): saved before the field was added
    outputs = ours.pop(OUTPUTS_FIELD, None)
    subgraphs = ours.pop(SUBGRAPHS_FIELD, None)
    if fmt is None and digest is None and names is None and not ours:
        return _Ours("older", graph_key=key if isinstance(key, str) else None)
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise ValueError(f"the plan JSON's {FORMAT_FIELD!r} must be an int, got {fmt!r}")
    if fmt != PLAN_FORMAT:
        raise PlanVersionError(
            f"the plan JSON has {FORMAT_FIELD} {fmt}, a layout this version of pycudnn does not "
            f"read (it writes {PLAN_FORMAT}); build the plan again"
        )
    if ours:
        raise ValueError(
            f"the plan JSON has keys this version of pycudnn does not know: "
            f"{', '.join(sorted(ours)[:5])}; it was edited or written by another version"
        )
    if not isinstance(digest, str):
        raise ValueError(
            f"the plan JSON's {DIGEST_FIELD!r} must be the str pycudnn wrote, got {digest!r}: "
            "the file was edited or damaged"
        )
    rest = {**data, FORMAT_FIELD: fmt, GRAPH_KEY_FIELD: key, NAMES_FIELD: names}
    for field, value in (
        (SCALARS_FIELD, scalars),
        (OUTPUTS_FIELD, outputs),
        (SUBGRAPHS_FIELD, subgraphs),
    ):
        if value is not None:
            rest[field] = value
    try:
        computed = canonical.content_digest(rest, DIGEST_FIELD)
    except RecursionError:  # JSON nested nearly as deep as the parser allows
        raise ValueError("the plan JSON is nested too deeply to be checked") from None
    if digest != computed:
        raise ValueError(
            f"the plan JSON is damaged: its content does not match its {DIGEST_FIELD} (a byte "
            "was changed, added or removed after it was saved); build the plan again"
        )
    if not isinstance(key, str):
        raise ValueError(f"the plan JSON's {GRAPH_KEY_FIELD!r} must be a str, got {key!r}")
    if subgraphs is not None and not (
        isinstance(subgraphs, str) and len(subgraphs) == 64 and subgraphs.isalnum()
    ):
        raise ValueError(
            f"the plan JSON's {SUBGRAPHS_FIELD!r} must be the digest pycudnn wrote, got "
            f"{subgraphs!r:.60}"
        )
    kept = Kept(_names(names), _scalars(scalars), _outputs(outputs), subgraphs)
    return _Ours("current", graph_key=key, kept=kept)


def _outputs(value: Any) -> frozenset[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        type(uid) is int and 0 <= uid < 2**63 for uid in value
    ):
        raise ValueError(
            f"the plan JSON's {OUTPUTS_FIELD!r} must be a list of unique ids, got {value!r:.60}"
        )
    return frozenset(value)


def _scalars(value: Any) -> dict[int, Scalar]:
    """The by-value scalars of :data:`SCALARS_FIELD` (digest-checked already, so a malformed
    one was written so: refused all the same, naming the field)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"the plan JSON's {SCALARS_FIELD!r} must be an object, got {value!r:.60}")
    out: dict[int, Scalar] = {}
    for uid, entry in value.items():
        try:
            text, type_name, rank = entry
            if not isinstance(text, str) or len(text) > 64 or not _type_name(type_name):
                raise ValueError
            if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= 8:
                raise ValueError
            number: float | int = int(text) if text.lstrip("-").isdigit() else float(text)
            out[int(uid)] = Scalar(number, type_name, rank)
        except (TypeError, ValueError):
            raise ValueError(
                f"the plan JSON's {SCALARS_FIELD} must map unique ids to [value as text, "
                f"data type, rank], got {uid!r:.40}: {entry!r:.60}"
            ) from None
    return out


def _type_name(value: Any) -> bool:
    """Whether ``value`` is spelled as a cuDNN data type name ("FLOAT", "INT32"); which names
    exist is checked where the type is looked up (a plan loaded without its graph), so that
    reading a plan file imports no NumPy."""
    return isinstance(value, str) and len(value) <= 32 and value.isidentifier() and value.isupper()


def _names(value: Any) -> dict[int, str]:
    if not isinstance(value, dict):
        raise ValueError(f"the plan JSON's {NAMES_FIELD!r} must be an object, got {value!r:.60}")
    out: dict[int, str] = {}
    for uid, name in value.items():
        if not isinstance(name, str) or not name or len(name) > 1024:
            raise ValueError(
                f"the plan JSON's {NAMES_FIELD}[{uid!r}] must be a non-empty str of at most 1024 "
                f"characters, got {name!r:.60}"
            )
        try:
            out[int(uid)] = name
        except ValueError:
            raise ValueError(
                f"the plan JSON's {NAMES_FIELD} must be keyed by unique ids, got {uid!r:.40}"
            ) from None
    if len(set(out.values())) != len(out):
        raise ValueError(f"the plan JSON's {NAMES_FIELD} names two tensors alike")
    return out


def check_computes(data: Mapping[str, Any], ours: _Ours, graph: OperationGraph) -> None:
    """Refuse a plan JSON unless it computes ``graph``: the key recomputed from the loaded
    operation graph must be the one saved, and every graph operation must match one node of the
    plan role by role and attribute by attribute (:mod:`.canonical`), for every operation kind."""
    head = f"the plan does not compute graph '{graph.name}' (it was built for another graph)"
    if ours.kind == "foreign":
        raise ValueError(
            f"{head} as far as can be checked: it carries no {GRAPH_KEY_FIELD} (it was not saved "
            "by pycudnn, or the key was removed); build the plan for this graph"
        )
    if ours.kind == "older":
        raise PlanVersionError(
            "the plan was saved by an older version of pycudnn (its graph key was not a digest "
            "of what it computes); re-plan: build it again for this graph (a plan cache "
            "rebuilds it)"
        )
    try:
        digest = canonical.digest(data)
    except RecursionError:
        raise ValueError("the plan JSON is nested too deeply to be checked") from None
    if ours.graph_key != digest:
        raise ValueError(
            f"{head}: its {GRAPH_KEY_FIELD} is not the digest of its own operation graph (the "
            "key was copied from another plan, or the operations were edited)"
        )
    why = canonical.compare(data, graph)
    if why:
        raise ValueError(f"{head}: {why}; build the plan for this graph")
    # What cuDNN's JSON leaves out (an SDPA backward's mask and bias) is compared through the
    # digest pycudnn kept of it (SUBGRAPHS_FIELD): the JSON above could not tell.
    want, kept = subgraphs_digest(graph), ours.kept.subgraphs
    if want != kept:
        if kept is None:
            raise PlanVersionError(
                f"the plan was saved without pycudnn's record of the SDPA score subgraph (mask, "
                f"bias) of graph '{graph.name}', which cuDNN's JSON leaves out, so it cannot be "
                "checked; re-plan: build it again for this graph (a plan cache rebuilds it)"
            )
        raise ValueError(
            f"{head}: its SDPA score subgraph (the mask or bias, or a tensor only they read) "
            "is not the graph's; build the plan for this graph"
        )


def subgraphs_digest(graph: OperationGraph) -> str | None:
    """A SHA-256 of ``graph``'s SDPA score subgraphs as lowered for cuDNN (their operations,
    modes and tensor roles: :func:`canonical.graph_form`) and of the tensors only they read
    (unique id, dims, strides, data type, alignment, kind; not a by-value scalar's value, which
    execute passes): :data:`SUBGRAPHS_FIELD`. None for a graph without such a subgraph."""
    if not any(op.kind in ("sdpa", "sdpa_backward") for op in graph._ops):
        return None  # no lowering for the rest
    graph._resolve()
    forms = [
        {k: v for k, v in form["attrs"].items() if k.startswith("subgraph")}
        for form in canonical.graph_form(graph)
        if "subgraph" in form["attrs"]
    ]
    tensors = [
        [t.uid, list(t.vector_dims), list(t.strides), str(t.element_type), t.alignment,
         bool(t.by_value), bool(t.is_virtual)]
        for t in graph.tensors
        if in_subgraph_only(t)
    ]  # fmt: skip
    if not forms and not tensors:
        return None
    text = json.dumps([forms, tensors], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _check_json_matches_graph(data: Mapping[str, Any], graph: OperationGraph) -> str:
    """Check that a plan JSON was built for ``graph`` (as described, or as one of its equivalent
    descriptions from :mod:`pycudnn.opgraph.rewrites`) as far as its tensors go; returns the
    rewrite's note ("" for none). The operations are compared by :func:`check_computes`."""
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
    tensors = [t for t in graph.tensors if not in_subgraph_only(t) and not offsets_only(t)]
    if len(by_uid) != len(tensors):
        raise ValueError(
            f"the plan has {len(by_uid)} tensors but the graph has {len(tensors)}: it was "
            "built for another graph"
        )
    _check_tensor_types(by_uid, tensors)
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
        assert t.element_type is not None  # resolved by the graph before its tensors are compared
        expected = {
            "dataType": "CUDNN_DATA_" + _cudnn_dtype(t.element_type, t.name).name,
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
        ragged = _ragged_difference(t, j.get("isRagged") or [])
        if ragged:
            raise ValueError(
                f"the plan was built for another graph: tensor {t.uid} ('{t.name}') {ragged}"
            )


def _ragged_difference(t: Tensor, got: Any) -> str:
    """How the plan's ragged offsets of ``t`` (JSON ``isRagged``: the offsets tensor) differ from
    the graph's ("" when they agree): which tensor, its type, dims and strides. A plan for other
    offsets reads the sequences at other places, or reads int64 offsets as int32."""
    off = t.ragged_offset
    first = got[0] if isinstance(got, list) and got and isinstance(got[0], Mapping) else None
    if off is None:
        return "" if first is None else "is ragged in the plan but not in the graph"
    if first is None:
        return f"is not ragged in the plan but ragged by '{off.name}' in the graph"
    assert off.element_type is not None  # resolved with the graph
    want = {
        "name": str(off.uid),
        "dataType": "CUDNN_DATA_" + _cudnn_dtype(off.element_type, off.name).name,
        "dim": list(off.dims),
        "stride": list(off.strides),
    }
    for key, value in want.items():
        if key in first and first[key] != value:
            return (
                f"has ragged offsets of {key} {first[key]!r} in the plan but {value!r} in the graph"
            )
    return ""


def _version() -> int:

    return version()


def _version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
