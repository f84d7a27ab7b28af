"""Engines known to return wrong numbers, as data, applied whenever plans are built.

cuDNN's engine list is not a promise of right answers: on an H100, cuDNN 9.19's engine 70 returns
garbage for some NCHW 16-bit weight gradients, and NVIDIA's own frontend hands it on (where the
output is fp32 it is the only engine that finalizes). The table shipped in
``pycudnn/data/known_bad_engines.json`` lists such engines by engine id, operation kind, layout and
input data types, with the cuDNN versions it applies to, where it was seen wrong, how it was found
and what works instead. Planning (:func:`pycudnn.plan.build`, ``build_all``, ``engine_configs``,
``autotune``) drops matching engine configs and says so in the planning report; a graph left with
no engine gets an error that names the entry and its advice. ``allow_known_bad=True`` keeps them
(to check whether a newer cuDNN fixed an engine).

Users add entries in the same format from the JSON file named by ``PYCUDNN_KNOWN_BAD_ENGINES``.
An entry's ``cudnn_max`` of ``null`` means "until a version is verified fixed".
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from _nvbind.dtypes import CUDNN_DATA_TYPE_NAMES, dtype_name
from _nvbind.files import read_text
from _nvbind.suggest import did_you_mean

from ._plan_json import loads_unique_keys
from .opgraph.common import _format_of
from .opgraph.rewrites import variants

if TYPE_CHECKING:  # pragma: no cover
    from .opgraph import OperationGraph

__all__ = [
    "ENV_VAR",
    "KnownBadEngine",
    "exclusions_for",
    "load_table",
    "match",
    "table",
]

#: Environment variable naming a JSON file of extra entries (same schema as the shipped table).
ENV_VAR = "PYCUDNN_KNOWN_BAD_ENGINES"

_SCHEMA = 1
_OPERATIONS = ("conv_fprop", "conv_dgrad", "conv_wgrad", "matmul", "pointwise", "reduction")
#: The keys of the table and of an entry. Anything else is refused: a misspelt key ("layout" for
#: "layouts") would otherwise be ignored and the entry apply to every layout.
_TABLE_KEYS = ("schema", "entries")
_ENTRY_KEYS = (
    "engine_id",
    "operation",
    "layouts",
    "input_dtypes",
    "cudnn_min",
    "cudnn_max",
    "seen_wrong_in",
    "found",
    "advice",
)
#: Tables nest 3 levels (table, entries, an entry's lists); deeper is refused before Python's
#: parser hits its recursion limit (a RecursionError names neither the file nor the entry).
_MAX_DEPTH = 16
_VECTORIZED_LAYOUT = re.compile(r"NC/([1-9][0-9]*)(D?HW)\1")


def _layout_problem(name: str) -> str | None:
    """Why no operand can have the layout ``name`` (as ``Tensor.format`` spells it), or None.

    Entries match operands of rank 4 to 8 (``KnownBadEngine.applies_to``): their formats are
    orders of the logical letters (NCHW for rank 4, NCDHW for 5, ABCDEF... for 6 to 8) or a
    vectorized ``NC/xHWx`` / ``NC/xDHWx`` with x > 1."""
    m = _VECTORIZED_LAYOUT.fullmatch(name)
    if m is not None:
        return None if int(m.group(1)) > 1 else "a vector count of 1 is no vectorized layout"
    for letters in ("NCHW", "NCDHW", "ABCDEF", "ABCDEFG", "ABCDEFGH"):
        if sorted(name) == sorted(letters):
            return None
    if sorted(name) == sorted("BMN"):
        return "rank-3 layouts never match: entries match operands of rank 4 to 8"
    return (
        "a layout is the order of an operand's dims in memory, in capitals, as Tensor.format "
        "gives it: NCHW, NHWC, CHWN, NCDHW, NDHWC, NC/32HW32, ..."
    )


@functools.cache
def _dtype_names() -> tuple[str, ...]:
    """The names ``dtype_name`` gives the data types a graph's tensors can have."""
    # By name, without completing the table: that imports NumPy and ml_dtypes, which planning
    # never needs.
    return tuple(CUDNN_DATA_TYPE_NAMES.type_names())


def _refuse_unknown(keys: Any, allowed: Sequence[str], where: str) -> None:

    for key in keys:
        if key not in allowed:
            raise ValueError(
                f"{where} has the unknown key {key!r}{did_you_mean(str(key), allowed)} (known: "
                f"{', '.join(allowed)}): refused, not ignored, since an ignored key can make an "
                "entry apply more widely than it was meant to"
            )


def _version_number(text: Any, where: str, *, upper: bool = False) -> int:
    """``"9.19.0"`` as 91900. Parts left out are the lowest version they cover, or with ``upper``
    (a ``cudnn_max``, inclusive) the highest: ``"9.19"`` is 9.19.0 as a minimum, 9.19.99 as a
    maximum. Minor and patch run to 99 (cuDNN's numbering; 9.27.100 would read as 9.28.0)."""
    if not isinstance(text, str):
        raise ValueError(f"{where} must be a version string like '9.19.0', got {text!r}")
    parts = text.split(".")
    if (
        not 1 <= len(parts) <= 3
        or not all(p.isascii() and p.isdigit() and len(p) <= 3 for p in parts)
        or any(int(p) > 99 for p in parts[1:])
    ):
        raise ValueError(
            f"{where} must be a version string like '9.19.0' (minor and patch 0 to 99), got "
            f"{text!r}"
        )
    fill = 99 if upper else 0
    major, minor, patch = ([int(p) for p in parts] + [fill, fill])[:3]
    return major * 10000 + minor * 100 + patch


def _version_text(v: int) -> str:
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"


@dataclasses.dataclass(frozen=True)
class KnownBadEngine:
    """One entry of the known-bad table."""

    engine_id: int
    operation: str
    layouts: tuple[str, ...]  # layout letters of an operand, e.g. "NCHW" (empty: any)
    input_dtypes: tuple[str, ...]  # dtype names of an operand, e.g. "float16" (empty: any)
    cudnn_min: int  # applied from this cuDNN version (10000*major + 100*minor + patch) ...
    cudnn_max: int | None  # ... to this one inclusive (None: until verified fixed)
    seen_wrong_in: tuple[str, ...]
    found: str
    advice: str
    source: str  # the file the entry came from

    @classmethod
    def from_json(cls, data: Any, source: str, index: int) -> KnownBadEngine:
        """An entry from its JSON object (``source`` and ``index`` name it in errors);
        ``ValueError`` naming the field when a field is missing or wrong."""
        where = f"{source}: entries[{index}]"
        if not isinstance(data, Mapping):
            raise ValueError(f"{where} must be an object, got {type(data).__name__}")
        _refuse_unknown(data, _ENTRY_KEYS, where)
        eid = data.get("engine_id")
        if isinstance(eid, bool) or not isinstance(eid, int) or not 0 <= eid < 2**63:
            raise ValueError(
                f"{where}.engine_id must be an int from 0 to 2**63-1 (an int64_t), got {eid!r}"
            )
        op = data.get("operation")
        if op not in _OPERATIONS:
            raise ValueError(
                f"{where}.operation must be one of {', '.join(_OPERATIONS)}; got {op!r}"
            )

        def strings(key: str) -> tuple[str, ...]:
            v = data.get(key, [])
            if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
                raise ValueError(f"{where}.{key} must be a list of strings, got {v!r}")
            return tuple(v)

        def text(key: str) -> str:
            v = data.get(key, "")
            if not isinstance(v, str):
                raise ValueError(f"{where}.{key} must be a string, got {type(v).__name__} {v!r}")
            return v

        layouts = strings("layouts")
        for i, name in enumerate(layouts):
            problem = _layout_problem(name)
            if problem is not None:
                raise ValueError(f"{where}.layouts[{i}] {name!r} is no operand's layout: {problem}")
        dtypes = strings("input_dtypes")
        for i, name in enumerate(dtypes):
            if name not in _dtype_names():
                raise ValueError(
                    f"{where}.input_dtypes[{i}] {name!r} is no tensor's data type"
                    f"{did_you_mean(name, _dtype_names())} (names as NumPy and ml_dtypes give "
                    f"them: {', '.join(_dtype_names())})"
                )
        cmin = _version_number(data.get("cudnn_min", "9.0.0"), f"{where}.cudnn_min")
        cmax = data.get("cudnn_max")
        cmax = None if cmax is None else _version_number(cmax, f"{where}.cudnn_max", upper=True)
        if cmax is not None and cmax < cmin:
            raise ValueError(
                f"{where}: cudnn_max {_version_text(cmax)} is below cudnn_min "
                f"{_version_text(cmin)}, so the entry would apply to no version"
            )
        return cls(
            engine_id=eid,
            operation=op,
            layouts=layouts,
            input_dtypes=dtypes,
            cudnn_min=cmin,
            cudnn_max=cmax,
            seen_wrong_in=strings("seen_wrong_in"),
            found=text("found"),
            advice=text("advice"),
            source=source,
        )

    def applies_to_version(self, version: int) -> bool:
        """Whether the entry covers cuDNN ``version`` (as ``cudnnGetVersion`` reports it)."""
        return self.cudnn_min <= version and (self.cudnn_max is None or version <= self.cudnn_max)

    def applies_to(self, graph: OperationGraph) -> bool:
        """Does ``graph`` have an operation of this kind with an operand in one of the layouts
        and one of the data types of this entry? The layouts are matched as the graph is
        described and as each equivalent description planning may show cuDNN instead
        (:func:`pycudnn.opgraph.rewrites.variants`: a rank-3 reduction planned as a channels-last
        rank-4 one runs the engine on that layout)."""

        ops = [op for op in graph._ops if op.kind == self.operation]
        if not ops:
            return False
        if self._applies_to(ops, {}):
            return True
        if not self.layouts:
            return False
        return any(self._applies_to(ops, v.views) for v in variants(graph))

    def _applies_to(self, ops: list[Any], views: Mapping[int, Any]) -> bool:
        """:meth:`applies_to` for operations ``ops`` with tensors shown as ``views`` (uid ->
        (dims, strides); the others as described)."""

        for op in ops:
            operands = [t for t in op.inputs.values() if not t.by_value]
            layout_ok = not self.layouts or any(
                _layout_of(t, views) in self.layouts for t in operands
            )
            dtype_ok = not self.input_dtypes or any(
                t.element_type is not None and dtype_name(t.element_type) in self.input_dtypes
                for t in operands
            )
            if layout_ok and dtype_ok:
                return True
        return False

    def describe(self) -> str:
        """One readable line: engine, scope, cuDNN versions and why it is excluded."""
        scope = ", ".join(
            p
            for p in (
                self.operation,
                "/".join(self.layouts),
                "/".join(self.input_dtypes),
            )
            if p
        )
        upto = "until verified fixed" if self.cudnn_max is None else _version_text(self.cudnn_max)
        seen = "; ".join(self.seen_wrong_in) or "no version recorded"
        text = (
            f"engine {self.engine_id} for {scope} (seen wrong in cuDNN {seen}; excluded from "
            f"{_version_text(self.cudnn_min)} {upto}; table: {self.source})"
        )
        return text + (f"; instead: {self.advice}" if self.advice else "")


def _layout_of(t: Any, views: Mapping[int, Any]) -> str | None:
    """The layout of operand ``t`` as cuDNN is shown it (its view in ``views``, else as
    described); None below rank 4, where no entry's layout applies."""
    if t.uid not in views or t.is_vectorized:
        return t.format if t.ndim >= 4 else None
    dims, strides = views[t.uid]
    if len(dims) < 4:
        return None
    return _format_of(tuple(dims), tuple(strides))


def load_table(
    path: str | os.PathLike[str] | None = None, *, text: str | None = None
) -> list[KnownBadEngine]:
    """Parse a known-bad table (the file at ``path``, or ``text``); ``ValueError`` names the
    problem."""
    source = "<text>" if path is None else os.fspath(path)
    if text is None:
        if path is None:
            raise TypeError("load_table needs a path or text")

        try:
            # Never blocks (a FIFO), never reads without end (/dev/zero): see _nvbind.files.
            text = read_text(path, what="known-bad engine table")
        except OSError as exc:
            raise ValueError(f"cannot read the known-bad engine table {source!r}: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"cannot read the known-bad engine table {source!r}: not UTF-8 text ({exc})"
            ) from None
    data = _parse(text, source)
    schema = data.get("schema") if isinstance(data, Mapping) else None
    if isinstance(schema, bool) or not isinstance(schema, int) or schema != _SCHEMA:
        raise ValueError(f'{source}: expected an object with "schema": {_SCHEMA} (an int)')
    _refuse_unknown(data, _TABLE_KEYS, f"{source}: the table")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise ValueError(f'{source}: "entries" must be a list')
    out = [KnownBadEngine.from_json(e, source, i) for i, e in enumerate(entries)]
    seen: dict[tuple[Any, ...], int] = {}
    for i, e in enumerate(out):
        scope = (e.engine_id, e.operation, e.layouts, e.input_dtypes, e.cudnn_min, e.cudnn_max)
        if scope in seen:
            raise ValueError(
                f"{source}: entries[{i}] repeats entries[{seen[scope]}] (same engine, operation, "
                "layouts, data types and versions); merge them into one"
            )
        seen[scope] = i
    return out


def _parse(text: str, source: str) -> Any:
    """``json.loads`` refusing repeated keys (Python keeps the last silently) and nesting deeper
    than :data:`_MAX_DEPTH` (Python's parser raises RecursionError), naming the entry."""
    too_deep = _too_deep(text)
    if too_deep is not None:
        raise ValueError(f"{source}: {too_deep}")

    def repeated(key: str, _keys: list[str]) -> str:
        return f"{source}: the key {key!r} appears twice in one object (the last copy would silently win)"

    try:
        return loads_unique_keys(text, repeated)
    except ValueError as exc:  # JSONDecodeError, or an int past Python's 4300-digit limit
        raise ValueError(f"{source}: the known-bad engine table does not parse: {exc}") from None
    except RecursionError:  # not reached after _too_deep; kept so no RecursionError escapes
        raise ValueError(f"{source}: nested too deeply to parse") from None


def _too_deep(text: str) -> str | None:
    """Where ``text`` nests deeper than :data:`_MAX_DEPTH`, in words (naming the entry of the
    top-level ``entries`` list when it is inside one), or None. A scan of brackets outside
    strings: cheap for a table, and it never recurses."""
    if text.count("[") + text.count("{") <= _MAX_DEPTH:
        return None  # cannot be that deep
    depth, in_string, escaped = 0, False, False
    key, last_string, entries_depth, index = None, None, None, 0
    start = 0
    for pos, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                last_string = text[start + 1 : pos]
            continue
        if ch == '"':
            in_string, start = True, pos
        elif ch == ":" and depth == 1:
            key = last_string  # a key of the top-level object
        elif ch in "[{":
            depth += 1
            if ch == "[" and depth == 2 and key == "entries":
                entries_depth, index = depth, 0
            if depth > _MAX_DEPTH:
                where = f"entries[{index}]" if entries_depth is not None else "the table"
                return (
                    f"{where} nests more than {_MAX_DEPTH} levels deep (at offset {pos}); a "
                    "known-bad table nests 3"
                )
        elif ch in "]}":
            if depth == entries_depth:
                entries_depth = None
            depth -= 1
        elif ch == "," and entries_depth is not None and depth == entries_depth:
            index += 1
    return None


@functools.cache
def _shipped() -> tuple[KnownBadEngine, ...]:
    # Read through this module's own loader, which serves an installed directory and a zip alike
    # as importlib.resources would: importing that (with zipfile, tempfile and shutil) cost over
    # 3 ms of the first planning in every process, the read itself 0.01 ms.
    loader: Any = __spec__.loader
    path = os.path.join(os.path.dirname(__file__), "data", "known_bad_engines.json")
    text = loader.get_data(path).decode("utf-8")
    return tuple(
        dataclasses.replace(e, source="pycudnn/data/known_bad_engines.json")
        for e in load_table(text=text)
    )


def _user(path: str) -> tuple[KnownBadEngine, ...]:
    """The entries of the user's table at ``path``, read again when the file changed (an entry
    added by ``verify --write-known-bad`` applies to the next build in the same process) or the
    path names another file (a relative path after a change of directory)."""
    try:
        st = os.stat(path)
    except OSError:
        return tuple(load_table(path))  # refused with the loader's message
    return _user_table(path, (os.path.realpath(path), st.st_mtime_ns, st.st_size, st.st_ino))


@functools.lru_cache(maxsize=4)
def _user_table(path: str, version: tuple[Any, ...]) -> tuple[KnownBadEngine, ...]:
    return tuple(load_table(path))  # ``version``: which file, in which state (the cache key)


def table() -> list[KnownBadEngine]:
    """The shipped entries, then those of the file named by :data:`ENV_VAR` (if set)."""
    extra = os.environ.get(ENV_VAR, "").strip()
    return [*_shipped(), *(_user(extra) if extra else ())]


def exclusions_for(graph: OperationGraph, version: int) -> list[KnownBadEngine]:
    """The entries that apply to ``graph`` under cuDNN ``version`` (e.g. 91900)."""
    return [e for e in table() if e.applies_to_version(version) and e.applies_to(graph)]


def match(exclusions: Sequence[KnownBadEngine], engine_id: int | None) -> KnownBadEngine | None:
    """The first entry of ``exclusions`` for ``engine_id``, if any."""
    for e in exclusions:
        if e.engine_id == engine_id:
            return e
    return None
