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
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

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


def _version_number(text: Any, where: str) -> int:
    if not isinstance(text, str):
        raise ValueError(f"{where} must be a version string like '9.19.0', got {text!r}")
    parts = text.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{where} must be a version string like '9.19.0', got {text!r}")
    major, minor, patch = ([int(p) for p in parts] + [0, 0])[:3]
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
        eid = data.get("engine_id")
        if isinstance(eid, bool) or not isinstance(eid, int) or eid < 0:
            raise ValueError(f"{where}.engine_id must be a non-negative int, got {eid!r}")
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

        cmax = data.get("cudnn_max")
        return cls(
            engine_id=eid,
            operation=op,
            layouts=strings("layouts"),
            input_dtypes=strings("input_dtypes"),
            cudnn_min=_version_number(data.get("cudnn_min", "9.0.0"), f"{where}.cudnn_min"),
            cudnn_max=None if cmax is None else _version_number(cmax, f"{where}.cudnn_max"),
            seen_wrong_in=strings("seen_wrong_in"),
            found=str(data.get("found", "")),
            advice=str(data.get("advice", "")),
            source=source,
        )

    def applies_to_version(self, version: int) -> bool:
        """Whether the entry covers cuDNN ``version`` (as ``cudnnGetVersion`` reports it)."""
        return self.cudnn_min <= version and (self.cudnn_max is None or version <= self.cudnn_max)

    def applies_to(self, graph: OperationGraph) -> bool:
        """Does ``graph`` have an operation of this kind with an operand in one of the layouts
        and one of the data types of this entry?"""
        from ._shared.dtypes import dtype_name

        for op in graph._ops:
            if op.kind != self.operation:
                continue
            operands = [t for t in op.inputs.values() if not t.by_value]
            layout_ok = not self.layouts or any(
                t.ndim >= 4 and t.format in self.layouts for t in operands
            )
            dtype_ok = not self.input_dtypes or any(
                t.dtype is not None and dtype_name(t.dtype) in self.input_dtypes for t in operands
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
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise ValueError(f"cannot read the known-bad engine table {source!r}: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: the known-bad engine table does not parse: {exc}") from None
    if not isinstance(data, Mapping) or data.get("schema") != _SCHEMA:
        raise ValueError(f'{source}: expected an object with "schema": {_SCHEMA}')
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise ValueError(f'{source}: "entries" must be a list')
    return [KnownBadEngine.from_json(e, source, i) for i, e in enumerate(entries)]


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


@functools.lru_cache(maxsize=4)
def _user(path: str) -> tuple[KnownBadEngine, ...]:
    return tuple(load_table(path))


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
