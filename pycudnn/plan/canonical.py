"""What a plan computes, in one vocabulary for the graph and for cuDNN's plan JSON.

A plan JSON names its operations and their attributes in cuDNN's serialization vocabulary
(``"pad"``, ``"mathPrec"``, ``"Q"``, ``"bnScale"``, ...); a :class:`~pycudnn.Graph` is lowered to
backend descriptors whose attributes are ``CUDNN_ATTR_*`` names (``CONVOLUTION_PRE_PADDINGS``,
``CONVOLUTION_COMP_TYPE``, ``OPERATION_SDPA_FWD_QDESC``, ...). Both are brought here to one
canonical form: per operation, its descriptor type and a map from a normalized attribute name
(the attribute's name within its descriptor, lower case, without ``_``, a ``DESC`` suffix or a
plural ``s``) to a canonical value (a tensor reference as ``("T", uid)``, an enumerator as its
int, a number, a fraction, a list, or a nested operation graph). Sub-descriptors (a convolution's
settings, a pointwise mode) are flattened into their operation.

The graph's side is recorded while the graph is lowered (every ``cudnnBackendSetAttribute`` the
lowering makes, with its encoded values), so it is exactly what cuDNN is given. The plan's side
is read from the loaded JSON. :func:`compare` matches every operation of the graph with one node
of the plan, role by role and attribute by attribute, for every operation kind; :func:`digest`
hashes the canonical form of a plan's operation graph (the ``pycudnnGraphKey`` a plan carries).
"""

from __future__ import annotations

import ctypes
import enum
import functools
import hashlib
import json
import math
import sys
from collections.abc import Mapping
from typing import Any

from .. import _bindings
from .._attrnames import _documented_type, attribute_type
from .._attrs import _encode, is_fraction
from .._plan_json import _ENUM_KEYS
from ..backend import BackendDescriptor, attribute_name
from ..opgraph.lowering import build_descriptors

__all__: list[str] = []

#: cuDNN's JSON keys whose normalized name is not the attribute's (first the JSON key, then the
#: normalized attribute names it stands for, tried in order; a key such as "compType" whose
#: normalized name is the attribute's needs none). Measured on cuDNN 9.28's plans.
_ALIASES: dict[str, tuple[str, ...]] = {
    "mode": ("mode", "convmode", "statsmode"),  # statsmode: a BN finalize's phase
    "mathPrec": ("mathprec", "comptype"),
    "pad": ("prepadding", "postpadding"),  # symmetric padding: both, each compared
    "pad_lower": ("prepadding",),  # asymmetric padding (pre != post)
    "pad_upper": ("postpadding",),
    "prePad": ("prepadding",),
    "postPad": ("postpadding",),
    "alpha": ("alpha", "elualpha"),  # a pointwise node's alpha is ELU's
    "beta": ("beta", "swishbeta", "softplusbeta"),  # and its beta swish's or softplus's
    "stride": ("stride", "filterstride"),
    "nbSpatialDims": ("spatialdim",),
    "fmode": ("phase",),
    "pointwiseMode": ("mode",),
    "nanOpt": ("nanpropagation",),
    "dODesc": ("do", "dod"),
    "dGammaDesc": ("dbnscale",),
    "dBetaDesc": ("dbnbias",),
    "accumCntValTensor": ("accumcount",),
    "epsilonValTensor": ("epsilon",),
    "expAverageFactorValTensor": ("expaveratefactor", "expaveragefactor"),
    "reductionOp": ("operator",),
}

#: JSON keys that differ from their attribute's name by a prefix only: the JSON key's prefix,
#: the attribute's in its place, then the keys. RELU_UPPER_CLIP is "upperClip", a matmul's
#: ADESC "matA", GEMM_M_OVERRIDE_DESC (padded attention's composite graph, cuDNN 9.19-9.28)
#: "mOverride", INPUT_RUNNING_MEAN_DESC "InRunningMean".
_PREFIX_RENAMES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "relu", ("upperClip", "lowerClip", "lowerClipSlope")),
    ("mat", "", ("matA", "matB", "matC")),
    ("", "gemm", ("mOverride", "nOverride", "kOverride")),
    ("In", "input", ("InRunningMean", "InRunningVar")),
    ("Out", "output", ("OutRunningMean", "OutRunningVar")),
)
_ALIASES.update(
    (key, (ours + key.removeprefix(theirs).lower(),))
    for theirs, ours, keys in _PREFIX_RENAMES
    for key in keys
)

#: Values cuDNN writes for attributes the library leaves at cuDNN's default: compared against
#: the plan's value when the graph did not set the attribute (a RoPE scale or a pointwise alpha
#: edited in a plan JSON must not load as the default).
_DEFAULTS: dict[str, Any] = {
    "alpha": 1.0,
    "alpha1": 1.0,
    "alpha2": 1.0,
    "beta": 0.0,
    "outputscale": 1.0,
    "reluupperclip": sys.float_info.max,
    "relulowerclip": 0.0,
    "relulowerclipslope": 0.0,
    "isdeterministic": False,
}
#: The defaults that differ by operation: a pointwise node's beta is swish's or softplus's (1.0).
_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {"OPERATION_POINTWISE": {"beta": 1.0}}
#: JSON keys that stand for several attributes at once, each compared: cuDNN writes equal pre-
#: and post-padding as one "pad".
_ALL_OF = frozenset(("pad",))

#: Node keys that hold an enumerator (or a mode word) rather than a tensor reference.
ENUM_KEYS = _ENUM_KEYS


def _norm(name: str) -> str:
    # a trailing S that names the SDPA's scores (FP8 SCALE_SDESC, JSON "scaleS") is no plural:
    # dropped, it would make scale S the attention scale
    scores = name.endswith("_SDESC") or (len(name) > 1 and name[-1] == "S" and name[-2].islower())
    n = name.replace("_", "").lower()
    if n.endswith("desc") and len(n) > 4:
        n = n[:-4]
    if n.endswith("s") and len(n) > 1 and not scores:
        n = n[:-1]
    return n


def _json_names(key: str) -> tuple[str, ...]:
    names = [_norm(a) for a in _ALIASES.get(key, ())]
    n = _norm(key)
    names.append(n)
    if n.startswith("bn") and len(n) > 2:  # bnScale, BNmeanDesc: the BN_ prefix cuDNN drops
        names.append(n[2:])
    return tuple(dict.fromkeys(names))


_PREFIXES: dict[int, str] = {}


def _prefix(desc_type: int) -> str:
    """The ``CUDNN_ATTR_`` name prefix every attribute of a descriptor type shares (from the
    attributes the header documents for it; two or more are needed to tell a prefix)."""
    found = _PREFIXES.get(desc_type)
    if found is None:
        names = [
            spec.name.removeprefix("CUDNN_ATTR_").split("_")
            for spec in _bindings.ATTRIBUTES.values()
            if spec.descriptor_type is not None and int(spec.descriptor_type) == desc_type
        ]
        common: list[str] = []
        for parts in zip(*names, strict=False):
            if len(set(parts)) != 1:
                break
            common.append(parts[0])
        found = _PREFIXES[desc_type] = "_".join(common) + "_" if len(names) > 1 and common else ""
    return found


def _local(attr_name: str, desc_type: int, type_name: str) -> str:
    # Attributes newer than the header's documentation have no owner there: their names start
    # with the descriptor type's own name (OPERATION_ROPE_FWD_XDESC), as all the others do.
    for prefix in (_prefix(desc_type), _short_type(type_name) + "_"):
        if prefix and attr_name.startswith(prefix):
            return _norm(attr_name[len(prefix) :])
    return _norm(attr_name)


def _short_type(type_name: str) -> str:
    return type_name.removeprefix("CUDNN_BACKEND_").removesuffix("_DESCRIPTOR")


# -- the graph's side -------------------------------------------------------------------------


@functools.cache
def recording_descriptor() -> Any:
    """A :class:`~pycudnn.backend.BackendDescriptor` that records every attribute set on it
    (``cudnnBackendSetAttribute``), encoded as cuDNN receives it: enumerators as ints, FRACTIONs
    as fractions, descriptors as the objects. :func:`pycudnn.opgraph.lowering.build_descriptors`
    makes the graph's descriptors with it (``factory=``) when a plan is compared with a graph."""

    class RecordingDescriptor(BackendDescriptor):
        def __init__(self, kind: Any) -> None:
            super().__init__(kind)
            self.recorded: dict[str, list[Any]] = {}

        def set(self, attr: Any, value: Any, *, attr_type: Any = None) -> None:
            super().set(attr, value, attr_type=attr_type)
            name = attribute_name(attr)
            if self._set_kinds.get(int(name)) is not None:  # descriptors: kept as the objects
                self.recorded[name.name] = list(
                    value if isinstance(value, (list, tuple)) else [value]
                )
                return
            t = _documented_type(name) if attr_type is None else int(attribute_type(attr_type))
            arr, count, _ = _encode(name, int(t), value, BackendDescriptor)  # type: ignore[arg-type]
            self.recorded[name.name] = [_ctype_value(arr[i]) for i in range(count)]

    return RecordingDescriptor


def _ctype_value(v: Any) -> Any:
    # FRACTION elements are structs (cudnnFraction_t); every other element is a plain number.
    if isinstance(v, ctypes.Structure) and hasattr(v, "numerator"):
        from fractions import Fraction

        return Fraction(int(v.numerator), int(v.denominator) or 1)
    return v


def graph_form(graph: Any) -> list[dict[str, Any]]:
    """The canonical form of ``graph``'s operations as lowered for cuDNN (the descriptors are
    made, recorded and destroyed here: no planning)."""

    made = build_descriptors(graph, factory=recording_descriptor())
    try:
        return [_desc_form(d) for d in made["ops"]]
    finally:
        for d in made["all"]:
            d.close()


def _desc_form(d: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    _flatten(d, attrs)
    form = {"type": _short_type(d.type_name), "attrs": attrs}
    commuted = _commuted(d, attrs)
    if commuted is not None:
        form["commuted"] = commuted
    return form


#: Pointwise modes whose two operands commute: cuDNN writes such a node with X the tensor of the
#: output's dims when the graph's X is broadcast (ADD, MUL, MAX, MIN, CMP_EQ, CMP_NEQ measured
#: on 9.28; SUB, DIV, POW, CMP_GT and the other ordered modes are written as given).
_COMMUTATIVE = frozenset(
    int(getattr(_bindings, "CUDNN_POINTWISE_" + m))
    for m in ("ADD", "MUL", "MAX", "MIN", "CMP_EQ", "CMP_NEQ", "LOGICAL_AND", "LOGICAL_OR")
)


def _commuted(d: Any, attrs: dict[str, Any]) -> dict[str, Any] | None:
    """The attributes of a commutative pointwise operation with its operands (and their alphas)
    swapped, as cuDNN writes it when X is broadcast (its dims are not Y's); else None."""
    if _short_type(d.type_name) != "OPERATION_POINTWISE" or attrs.get("mode") not in _COMMUTATIVE:
        return None
    x, b, y = (d.recorded.get(f"OPERATION_POINTWISE_{r}DESC") for r in ("X", "B", "Y"))
    if not (x and b and y) or x[0].recorded.get("TENSOR_DIMENSIONS") == y[0].recorded.get(
        "TENSOR_DIMENSIONS"
    ):
        return None
    out = {k: v for k, v in attrs.items() if k not in ("alpha1", "alpha2")}
    out["x"], out["b"] = attrs["b"], attrs["x"]
    for mine, theirs in (("alpha1", "alpha2"), ("alpha2", "alpha1")):
        if theirs in attrs:
            out[mine] = attrs[theirs]
    return out


def _flatten(d: Any, attrs: dict[str, Any]) -> None:
    dtype = int(d.descriptor_type)
    for name, values in d.recorded.items():
        local = _local(name, dtype, d.type_name)
        if values and all(hasattr(v, "recorded") for v in values):
            kinds = {_short_type(v.type_name) for v in values}
            if kinds == {"TENSOR"}:
                refs = [("T", int(v.recorded["TENSOR_UNIQUE_ID"][0])) for v in values]
                attrs[local] = refs[0] if len(refs) == 1 else refs
            elif kinds == {"OPERATIONGRAPH"}:
                attrs[local] = [_desc_form(op) for op in values[0].recorded["OPERATIONGRAPH_OPS"]]
            elif name == "OPERATIONGRAPH_OPS":
                attrs[local] = [_desc_form(op) for op in values]
            else:
                for sub in values:  # settings descriptors: flattened into the operation
                    _flatten(sub, attrs)
            continue
        vals = [v.value if isinstance(v, enum.Enum) else v for v in values]
        attrs[local] = vals[0] if len(vals) == 1 else vals


# -- the plan's side --------------------------------------------------------------------------


def _json_value(key: str, value: Any) -> Any:
    if isinstance(value, str):
        if key in ENUM_KEYS or value.startswith("CUDNN_"):
            member = getattr(_bindings, value, None)
            return int(member) if isinstance(member, int) else value
        try:
            return ("T", int(value))
        except ValueError:
            return value
    if isinstance(value, list):
        if value and all(
            isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v) and v[1] != 0
            for v in value
        ):  # FRACTION values: [numerator, denominator] pairs
            from fractions import Fraction

            return [Fraction(v[0], v[1]) for v in value]
        vals = [_json_value(key, v) for v in value]
        return vals[0] if len(vals) == 1 and key not in _LIST_KEYS else vals
    if isinstance(value, dict) and isinstance(value.get("nodes"), list):
        return [_node_form(n) for n in value["nodes"] if isinstance(n, Mapping)]
    return value


#: Keys whose value is a list even with one element (per spatial dim, per dim).
_LIST_KEYS = frozenset(
    {"pad", "prePad", "postPad", "stride", "strides", "dilation", "windowDim", "startIndices",
     "limitIndices"}
)  # fmt: skip


def _node_form(node: Mapping[str, Any]) -> dict[str, Any]:
    op = node.get("operation")
    kind = _short_type(op) if isinstance(op, str) else repr(op)
    # a sub-operation held by the node (an SDPA's softmax with a sink) is flattened into it, as
    # the graph's side flattens the descriptors an operation holds
    keys = {k: v for k, v in node.items() if k != "operation" and not _sub_operation(v)}
    for v in node.values():
        if _sub_operation(v):
            keys.update({k: x for k, x in v.items() if k != "operation"})
    return {"type": kind, "json": {k: _json_value(k, v) for k, v in keys.items()}, "raw": node}


def _sub_operation(value: Any) -> bool:
    return isinstance(value, Mapping) and "operation" in value and "nodes" not in value


def _shown(value: Any, raw: Any = None, want: Any = None) -> str:
    """A value for a message: a tensor as ``tensor <uid>``; an enumerator by its C name."""
    if isinstance(value, tuple):
        return f"tensor {value[1]}"
    if isinstance(raw, str) and raw.startswith("CUDNN_") and isinstance(want, int):
        parts = raw.split("_")
        for n in range(len(parts) - 1, 1, -1):
            prefix = "_".join(parts[:n]) + "_"
            names = [
                k for k in dir(_bindings)
                if k.startswith(prefix) and getattr(_bindings, k) == want
                and isinstance(getattr(_bindings, k), int)
            ]  # fmt: skip
            if names:
                return min(names, key=len)
    if want is not None:
        return repr(want)
    return repr(value if raw is None else raw)


# -- comparing --------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and not isinstance(b, list) and len(a) == 1:
        a = a[0]
    if isinstance(b, list) and not isinstance(a, list) and len(b) == 1:
        b = b[0]
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b) and type(a) is type(b)
    if isinstance(a, int) and isinstance(b, int):
        # Integers (uids, extents, counts, enumerators) are exact: float32's tolerance below
        # took a subgraph's output uid 2**40 + 2 for 2**40 + 1, another tensor of its mask.
        return a == b
    if (isinstance(a, (int, float)) or is_fraction(a)) and (
        isinstance(b, (int, float)) or is_fraction(b)
    ):
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        # scalars cuDNN keeps as float32 come back with float32's precision
        return fa == fb or math.isclose(fa, fb, rel_tol=2e-7, abs_tol=1e-30)
    return bool(a == b)


def _node_differences(graph_op: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    """How a plan node differs from a graph operation ([] when it computes the same)."""
    attrs: Mapping[str, Any] = graph_op["attrs"]
    out: list[str] = []
    if node["type"] != graph_op["type"]:
        return [f"operation {node['type']} instead of {graph_op['type']}"]
    used: set[str] = set()
    defaults = {**_DEFAULTS, **_TYPE_DEFAULTS.get(graph_op["type"], {})}
    for key, value in node["json"].items():
        names = _json_names(key)
        if key in _ALL_OF:  # every one the graph has is compared: "pad" is pre and post
            present = [n for n in names if n in attrs]
            used.update(present)
            wrong = next((n for n in present if not _same(value, attrs[n])), None)
            if wrong is not None:
                raw = node["raw"].get(key)
                out.append(
                    f"attribute {key!r} is {_shown(value, raw)} in the plan but "
                    f"{_shown(attrs[wrong], raw, attrs[wrong])} in the graph ({wrong})"
                )
            continue
        local = next((n for n in names if n in attrs), None)
        if local is None:
            default = next((defaults[n] for n in names if n in defaults), None)
            if default is not None and not _same(value, default):
                out.append(
                    f"attribute {key!r} is {value!r} in the plan but the graph uses cuDNN's "
                    f"default {default!r}"
                )
            elif isinstance(value, tuple):
                out.append(
                    f"role {key!r} names tensor {value[1]}, a role the graph's operation lacks"
                )
            continue
        used.add(local)
        want = attrs[local]
        if isinstance(want, list) and want and isinstance(want[0], dict):
            if not isinstance(value, list) or len(value) != len(want):
                out.append(f"{key} (a subgraph) differs in its number of operations")
                continue
            sub = [_match(want, value)]
            out.extend(f"{key}: {s}" for s in sub if s)
            continue
        if not _same(value, want):
            raw = node["raw"].get(key)
            what = "role" if isinstance(want, tuple) or isinstance(value, tuple) else "attribute"
            out.append(
                f"{what} {key!r} is {_shown(value, raw)} in the plan but "
                f"{_shown(want, raw, want)} in the graph"
            )
    for local, want in attrs.items():
        if local not in used and isinstance(want, tuple):
            out.append(f"the graph's role {local!r} (tensor {want[1]}) is missing from the plan")
    return out


def _match(graph_ops: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> str:
    """'' when every graph operation matches one plan node and no node is left over, else a
    sentence naming the first operation that has no match and how its closest node differs."""
    if len(graph_ops) != len(nodes):
        return f"the plan has {len(nodes)} operation(s) where the graph has {len(graph_ops)}"
    left = list(range(len(nodes)))
    for i, op in enumerate(graph_ops):
        best: tuple[int, list[str]] | None = None
        # nodes of the operation's own kind first: the closest is named by its roles
        for j in sorted(left, key=lambda j: nodes[j]["type"] != op["type"]):
            diffs = _node_differences(op, nodes[j])
            commuted = {**op, "attrs": op.get("commuted")}  # as cuDNN writes it, if it swaps
            if diffs and "commuted" in op and not _node_differences(commuted, nodes[j]):
                diffs = []
            if not diffs:
                best = (j, [])
                break
            if best is None or (len(diffs) < len(best[1]) and nodes[j]["type"] == op["type"]):
                best = (j, diffs)
        assert best is not None
        if best[1]:
            return (
                f"operation {i} of the graph ({op['type']}) matches no node of the plan; the "
                f"closest, node {best[0]}: {'; '.join(best[1][:3])}"
            )
        left.remove(best[0])
    return ""


def compare(data: Mapping[str, Any], graph: Any) -> str:
    """'' when the plan JSON's operations compute ``graph``'s operations, else why not."""
    nodes = data.get("operationGraph", {}).get("nodes", [])
    plan_ops = [_node_form(n) for n in nodes if isinstance(n, Mapping)]
    return _match(graph_form(graph), plan_ops)


def digest(data: Mapping[str, Any]) -> str:
    """A SHA-256 of a plan's operation graph in a canonical text (keys sorted, no spaces): the
    tensors (dims, strides, types, kinds) and every node with every attribute and role."""
    og = data.get("operationGraph", {})
    text = json.dumps(og, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def content_digest(data: Mapping[str, Any], skip: str) -> str:
    """A SHA-256 of the whole plan JSON but the key ``skip`` (keys sorted, no spaces)."""
    rest = {k: v for k, v in data.items() if k != skip}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()
