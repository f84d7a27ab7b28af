"""Checks of execution-plan and device-properties JSON that cuDNN crashes on instead of rejecting."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ._dims import INT64_MAX, vectorized_dim_rule, vectorized_extent

__all__ = [
    "check_json_attribute",
    "check_plan_json",
    "loads_unique_keys",
    "parse_json_for_cudnn",
]

# cudaDeviceProp::name is char[256]; cuDNN copies the JSON's device name into such a buffer
# unchecked. (pycudnn.deviceprops applies the same limit to the files it writes and reads.)
_MAX_NAME_BYTES = 255

# Node keys whose string value is an enumerator (or a mode word) as cuDNN writes it; every other
# string in a node, at any depth, is a tensor reference. The rule goes by key, never by the value:
# a reference spelled like an enumerator ("CUDNN_...") reaches cuDNN's std::stoll, whose exception
# aborts the process (cuDNN 9.28, every newer kind: SDPA, RoPE, norms, genstats, BN finalize, ...).
_ENUM_KEYS = frozenset(
    {
        "operation", "mode", "mathPrec", "compType", "nanOpt", "paddingMode", "fmode",
        "pointwiseMode", "finalizeMode", "reorderType", "dataType", "distribution",
        "reductionOperator", "normMode", "phase", "reshapeMode", "diagonalBandMaskMode",
        # keys of enumerators in cuDNN 9.28's plan serializer (the strings of libcudnn_graph)
        "reductionOp", "reduceOp", "comparisonMode", "comparison_mode", "reshape_mode",
        "paddingDataType", "computeType", "prec",
    }
)  # fmt: skip
#: Enumerator keys whose value is a bare word rather than a C enumerator name.
_WORD_KEYS = frozenset({"finalizeMode"})
#: How deep operation graphs nest (an SDPA node's mask subgraph is one level).
_MAX_SUBGRAPH_DEPTH = 4
#: How deep a node's value nests (cuDNN writes at most a list of [numerator, denominator] pairs).
_MAX_VALUE_DEPTH = 4


def _nesting(value: Any) -> int:
    """How many lists and objects deep ``value`` goes (iteratively: a value nested thousands
    deep must not exhaust Python's stack while it is being refused)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d + 1)
            if deepest > _MAX_VALUE_DEPTH:
                return deepest
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


#: Attributes whose CHAR value cuDNN parses as JSON.
_JSON_ATTRIBUTES = frozenset(
    (
        "DEVICEPROP_JSON_REPRESENTATION",
        "EXECUTION_PLAN_JSON_REPRESENTATION",
        "KERNEL_CACHE_JSON_REPRESENTATION",
    )
)


def loads_unique_keys(text: str, repeated: Callable[[str, list[str]], str]) -> Any:
    """``json.loads`` that refuses an object with a repeated key (Python would keep the last copy
    silently): ``ValueError(repeated(key, keys before it))``."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                raise ValueError(repeated(key, list(obj)))
            obj[key] = value
        return obj

    return json.loads(text, object_pairs_hook=unique)


def parse_json_for_cudnn(text: Any, what: str) -> Any:
    """Parse JSON text that is headed for cuDNN, refusing what cuDNN would read differently.

    The checks in this module are only as good as the agreement between Python's parse and
    cuDNN's. They disagree on: a repeated key (Python keeps the last copy, cuDNN reads the first,
    so a checked last copy can hide a crashing first one); a NUL character (cuDNN reads the text
    as a C string and stops there, so it reads a prefix Python never checked); and text Python
    cannot parse at all (nothing was checked). All three are refused here with a ValueError naming
    ``what``, so that the data checked is the data cuDNN reads.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{what} is not UTF-8 text: {exc}") from None
    if not isinstance(text, str):
        raise TypeError(f"{what} must be JSON text (str or bytes), not {type(text).__name__}")
    nul = text.find("\0")
    if nul >= 0:
        raise ValueError(
            f"{what} contains a NUL character at offset {nul}: cuDNN reads it as a C string and "
            "would stop there, reading other JSON than the text given"
        )

    def repeated(key: str, keys: list[str]) -> str:
        others = ", ".join(repr(k) for k in keys[:6])
        return (
            f"{what} has the key {key!r} twice in one object (the object with keys "
            f"{others}{', ...' if len(keys) > 6 else ''}): cuDNN reads the first copy and "
            "Python the last, so it cannot be checked before cuDNN reads it"
        )

    try:
        return loads_unique_keys(text, repeated)
    except RecursionError:
        raise ValueError(
            f"{what} is nested too deeply to be checked (Python's JSON parser gives up at about "
            "1000 levels; cuDNN's JSON never nests more than a few)"
        ) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} does not parse as JSON: {exc}") from None
    except ValueError as exc:
        if str(exc).startswith(what):
            raise  # a repeated key, named above
        # an integer past Python's digit limit (4300), which JSONDecodeError does not cover
        raise ValueError(f"{what} does not parse as JSON: {exc}") from None


def _is_uid_text(value: Any) -> bool:
    if not isinstance(value, str) or not value.isascii():
        return False
    digits = value[1:] if value.startswith("-") else value
    return digits.isdigit() and -(2**63) <= int(value) < 2**63


def check_plan_json(data: Mapping[str, Any]) -> None:
    """Refuse plan JSON that cuDNN crashes on instead of rejecting (observed with cuDNN 9.28).

    cuDNN parses tensor names and the tensor references of nodes with ``std::stoll`` and lets its
    exception escape (the process aborts), walks ``tensors``/``nodes`` without checking they are
    arrays (segfault), divides by tensor dims that are 0 or not integers (SIGFPE), and copies
    ``GPUProfile.deviceName`` into a 256-byte buffer unchecked (heap corruption). Everything else
    malformed it reports as an error, which is raised as a CudnnError.
    """

    def bad(where: str, rule: str, got: Any) -> ValueError:
        text = repr(got)
        text = text if len(text) <= 60 else text[:57] + "..."
        return ValueError(f"not a valid cuDNN execution-plan JSON: {where} {rule}, got {text}")

    profile = data.get("GPUProfile")
    if isinstance(profile, dict):
        _check_device_name(
            profile.get("deviceName"),
            "not a valid cuDNN execution-plan JSON: GPUProfile.deviceName",
        )
    # Missing members are reported by cuDNN itself; present ones of the wrong type are not.
    og = data.get("operationGraph", {})
    if not isinstance(og, dict):
        raise bad("'operationGraph'", "must be an object", og)
    _check_graph_level(og, "operationGraph", set(), bad, 0)
    _check_spatial_arrays(data)


def _check_graph_level(
    og: Mapping[str, Any], where: str, outer: set[int], bad: Any, depth: int
) -> None:
    """Check one operation graph (the plan's, or a node's subgraph): its tensors' names, dims and
    strides, and every tensor reference of every node of every kind against the tensors it can
    name (its own and those of the graphs it is nested in)."""
    for key in ("tensors", "nodes"):
        if not isinstance(og.get(key, []), list):
            raise bad(f"{where}.{key}", "must be an array", og.get(key))
    uids = set(outer)
    for i, t in enumerate(og.get("tensors", [])):
        at = f"{where}.tensors[{i}]"
        if not isinstance(t, dict):
            raise bad(at, "must be an object", t)
        if not _is_uid_text(t.get("name")):
            raise bad(f"{at}.name", "must be a unique id written as a decimal int64", t.get("name"))
        # A unique id listed twice, in this graph or in one it is nested in: the loader compares
        # one copy with the graph and cuDNN may use the other, so a copy of other strides or
        # data type loaded unnoticed. (cuDNN's own subgraphs list only their own tensors.)
        if int(t["name"]) in uids:
            raise bad(f"{at}.name", "must not name a tensor listed before it", t["name"])
        uids.add(int(t["name"]))
        for key, low in (("dim", 1), ("stride", -(2**63))):
            values = t.get(key)
            if values is None:
                continue
            if not isinstance(values, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) and low <= v < 2**63 for v in values
            ):
                rule = "must be an array of positive int64s" if low == 1 else "must be int64s"
                raise bad(f"{at}.{key}", rule, values)
        count, vdim, dims = t.get("vectCount"), t.get("vectDim"), t.get("dim")
        if type(vdim) is not int or not isinstance(dims, list):
            continue
        vdim_rule = vectorized_dim_rule(vdim, len(dims))
        if vdim_rule is not None:
            raise bad(f"{at}.vectDim", vdim_rule, vdim)
        if type(count) is int:
            # cuDNN multiplies these unchecked and divides by the product (see vectorized_extent)
            extent = vectorized_extent(dims, count, vdim)
            if extent > INT64_MAX:
                raise bad(
                    f"{at}.vectCount",
                    f"times dim[{vdim}] must be at most {INT64_MAX} (cuDNN divides by the "
                    "product, and one that wraps to 0 crashes the process)",
                    extent,
                )
    for i, node in enumerate(og.get("nodes", [])):
        at = f"{where}.nodes[{i}]"
        if not isinstance(node, dict):
            raise bad(at, "must be an object", node)
        kind = node.get("operation")
        if not isinstance(kind, str) or not kind.startswith("CUDNN_BACKEND_OPERATION_"):
            raise bad(f"{at}.operation", "must name a CUDNN_BACKEND_OPERATION_* kind", kind)
        short = kind.removeprefix("CUDNN_BACKEND_").removesuffix("_DESCRIPTOR")
        for key, value in node.items():
            if key == "operation":
                continue
            role = f"{at}.{key}"
            if isinstance(value, dict) and ("nodes" in value or "tensors" in value):
                if depth >= _MAX_SUBGRAPH_DEPTH:
                    raise bad(
                        role, f"nests operation graphs more than {_MAX_SUBGRAPH_DEPTH} deep", "..."
                    )
                _check_graph_level(value, f"{at}.{key}", uids, bad, depth + 1)
            elif isinstance(value, dict) and "operation" in value:
                # a sub-operation the node holds (an SDPA's softmax with a sink, cuDNN 9.21):
                # its references name the tensors of this graph
                inner = {k: v for k, v in value.items() if k != "operation"}
                _check_references(inner, role, short, uids, bad)
            elif _nesting(value) > _MAX_VALUE_DEPTH:
                raise bad(role, f"must not nest more than {_MAX_VALUE_DEPTH} levels", "...")
            elif key in _ENUM_KEYS:
                if not isinstance(value, str) or not (
                    key in _WORD_KEYS or value.startswith("CUDNN_")
                ):
                    raise bad(role, "must be an enumerator name (CUDNN_...)", value)
            else:
                _check_references(value, role, short, uids, bad)


def _check_references(value: Any, role: str, kind: str, uids: set[int], bad: Any) -> None:
    """Every string under a reference key must be the unique id of a tensor the node can see."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not _is_uid_text(v):
                raise bad(
                    role, f"must name a tensor by its unique id (a decimal int64; a {kind} role)", v
                )
            if int(v) not in uids:
                raise bad(
                    role, f"must name a tensor listed in the plan's tensors (a {kind} role)", v
                )
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())


#: Convolution node attributes that hold one entry per spatial dim.
_SPATIAL_KEYS = frozenset(("pad", "prePaddings", "postPaddings", "stride", "dilation"))
#: Resample (pooling) node attributes that hold one entry per spatial dim.
_RESAMPLE_KEYS = frozenset(("windowDim", "prePad", "postPad", "stride"))
#: Tensor roles whose rank gives a convolution's spatial rank (the input, or its gradient).
_RANK_ROLES = ("X", "DX", "dX", "W", "DW", "dW", "Y", "DY", "dY")


def _check_spatial_arrays(data: Mapping[str, Any]) -> None:
    """Refuse a plan whose per-spatial-dim arrays do not have one entry per spatial dim.

    cuDNN checks most lengths, but a convolution whose ``stride``, ``pad`` or ``dilation`` has 8 or
    9 entries crashes it while deserializing (segfault, cuDNN 9.27 and 9.28; other lengths are
    refused). The spatial rank follows from the node's tensors: rank minus 2 (N and C). A resample
    node says its rank itself (``nbSpatialDims``). Only these two kinds have such arrays: a slice's
    ``strides`` has one entry per dim, and is cuDNN's to check.
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
        kind = str(node.get("operation", ""))
        where = f"not a valid cuDNN execution-plan JSON: operationGraph.nodes[{i}]"
        if "RESAMPLE" in kind:
            keys = [k for k in node if k in _RESAMPLE_KEYS]
            n = node.get("nbSpatialDims")
            if keys and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 6):
                raise ValueError(
                    f"{where}.nbSpatialDims must be an int from 1 to 6 for its {', '.join(keys)}, "
                    f"got {n!r:.40}"
                )
            spatial = n
        elif "CONVOLUTION" in kind:
            keys = [k for k in node if k in _SPATIAL_KEYS]
            if not keys:
                continue
            rank = next(
                (ranks[str(node[r])] for r in _RANK_ROLES if str(node.get(r)) in ranks), None
            )
            if rank is None or not 3 <= rank <= 8:
                raise ValueError(
                    f"{where} has {', '.join(keys)} but names no tensor of rank 3 to 8 to check "
                    "them against"
                )
            spatial = rank - 2
        else:
            continue
        for key in keys:
            value = node[key]
            if not isinstance(value, list) or len(value) != spatial:
                got = f"{len(value)} entries" if isinstance(value, list) else repr(value)[:40]
                raise ValueError(
                    f"{where}.{key} must be a list of {spatial} entries (one per spatial dim), "
                    f"got {got}"
                )


def utf8_length(name: str, where: str) -> int:
    """The UTF-8 length of ``name``; a ValueError naming ``where`` if it has no UTF-8 form (a lone
    surrogate such as ``"\\ud800"``, which JSON escapes can spell)."""
    try:
        return len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(
            f"{where} must be valid Unicode text, got {name[:40]!r} (a lone surrogate has no "
            "UTF-8 form)"
        ) from None


def _check_device_name(name: Any, where: str) -> None:
    if not isinstance(name, str):
        return
    size = utf8_length(name, where)
    if size > _MAX_NAME_BYTES:
        raise ValueError(
            f"{where} must be at most {_MAX_NAME_BYTES} bytes (UTF-8), got "
            f"{size}: cuDNN copies it into a 256-byte buffer unchecked"
        )


def check_json_attribute(name: Any, value: Any) -> None:
    """Refuse the JSON texts that corrupt cuDNN's memory instead of being rejected (see
    :func:`check_plan_json`).

    Text that Python cannot parse strictly (see :func:`parse_json_for_cudnn`) is refused rather
    than left to cuDNN: such text was not checked, and a NUL or a repeated key is exactly how
    crashing JSON gets past the checks. Valid JSON always parses, so nothing legitimate is lost.
    """
    if name.name not in _JSON_ATTRIBUTES:
        return
    data = parse_json_for_cudnn(value, f"the value of CUDNN_ATTR_{name.name}")
    if not isinstance(data, dict):
        return  # cuDNN refuses a JSON that is not an object with an error of its own
    if name.name == "DEVICEPROP_JSON_REPRESENTATION":
        _check_device_name(data.get("deviceName"), "device-properties key 'deviceName'")
    elif name.name == "EXECUTION_PLAN_JSON_REPRESENTATION":
        check_plan_json(data)
