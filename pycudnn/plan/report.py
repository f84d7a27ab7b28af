"""What planning reports: the planning report, and the errors when no plan can be had."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Generic, TypeVar

from .. import known_bad, log
from ..errors import CudnnNotSupportedError
from ..opgraph import OperationGraph

#: The engine configs a heuristics result holds (:class:`pycudnn.plan.EngineConfig`, from the
#: heuristics module, which imports this one: a type parameter, not an import).
ConfigT = TypeVar("ConfigT")

__all__ = [
    "GraphNotSupportedError",
    "HeuristicsResult",
    "NoTargetError",
    "PlanVersionError",
    "PlanningReport",
]

_log = logging.getLogger("pycudnn")


# --------------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------------


class GraphNotSupportedError(CudnnNotSupportedError):
    """No engine could execute the graph: which heuristic modes were tried, what each returned,
    which configs were filtered out or failed to finalize, and what cuDNN logged."""

    def __init__(
        self, status: int, function: str = "", message: str = "", report: Any = None
    ) -> None:
        super().__init__(status, function, message)
        self.report = report

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status, self.function, self.message))


class NoTargetError(GraphNotSupportedError):
    """Plans were asked for with no target: no usable GPU and no ``device_properties=``.

    Raised before any cuDNN call: without a target cuDNN's heuristics return no engine config
    (9.9 and newer count them and return none; older versions would read uninitialized device
    properties), so "no engine supports the graph" would name the wrong cause. A
    :class:`GraphNotSupportedError` (status 3000) for callers that catch that; its text is the
    cause alone, without a C function or status, since no C function failed."""

    def _text(self) -> str:
        return self.message


class PlanVersionError(ValueError):
    """A serialized plan was written by another cuDNN version (plans load only in the exact one)."""


def _check_graph(graph: Any) -> None:
    # The planning functions are public; anything but a Graph would fail deep inside with an
    # AttributeError instead of saying what is wrong.
    if not isinstance(graph, OperationGraph):
        raise TypeError(f"graph must be a pycudnn.Graph, not {type(graph).__name__}")


@dataclasses.dataclass
class HeuristicsResult(Generic[ConfigT]):
    """What one heuristic mode gave: the count query, the configs returned, and cuDNN's log."""

    mode: str
    count: int
    configs: list[ConfigT]
    error: str = ""
    log: list[str] = dataclasses.field(default_factory=list)
    #: Why the mode returned no config when pycudnn knows the cause (no target to plan for), else "".
    note: str = ""

    @property
    def returned(self) -> int:
        """How many configs the mode returned (``ENGINEHEUR_RESULTS``)."""
        return len(self.configs)

    def describe(self) -> str:
        """The mode and what it gave: counted and returned configs, or its error."""
        if self.error:
            return f"{self.mode}: failed ({self.error})"
        text = f"{self.mode}: {self.count} counted, {self.returned} returned"
        return f"{text} ({self.note})" if self.note else text


@dataclasses.dataclass
class PlanningReport:
    """Everything that happened while looking for a plan (kept on GraphNotSupportedError)."""

    heuristics: list[HeuristicsResult[Any]] = dataclasses.field(default_factory=list)
    filtered: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    log: list[str] = dataclasses.field(default_factory=list)
    device: str = ""
    #: Known-bad table entries that removed an engine config (see :mod:`pycudnn.known_bad`).
    known_bad: list[known_bad.KnownBadEngine] = dataclasses.field(default_factory=list)
    #: Equivalent descriptions tried because the graph as described had no engine, and how each
    #: went (see :mod:`pycudnn.opgraph.rewrites`).
    rewrites: list[str] = dataclasses.field(default_factory=list)
    #: What would work instead, when nothing did.
    advice: list[str] = dataclasses.field(default_factory=list)
    #: Verdicts of ``verify=True`` (:class:`pycudnn.verification.VerifyResult`), in the order run.
    verification: list[Any] = dataclasses.field(default_factory=list)
    #: The finalizes that failed, to be made again with cuDNN's log read if planning fails.
    _unexplained: list[Any] = dataclasses.field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def describe(self) -> str:
        """Every heuristic mode tried, what was filtered out and why, and cuDNN's own explanation."""
        lines = ["heuristics tried: " + "; ".join(h.describe() for h in self.heuristics)]
        if self.filtered:
            lines.append(_first_six(f"filtered out: {len(self.filtered)} config(s)", self.filtered))
        if self.failed:
            lines.append(
                _first_six(f"plans that failed to finalize: {len(self.failed)}", self.failed)
            )
        for entry in dict.fromkeys(self.known_bad):
            lines.append("excluded as known to give wrong results: " + entry.describe())
        for line in self.rewrites:
            lines.append("rewrite: " + line)
        for result in self.verification:
            if not result.passed:
                lines.append("verification: " + result.describe().replace("\n", ";"))
        said = _distinct(self.log)
        if said:
            lines.append("cuDNN said: " + " | ".join(said[-8:]))
        if self.device:
            lines.append(self.device)
        for line in self.advice:
            lines.append("what would work: " + line)
        return "\n".join(lines)


def _first_six(head: str, entries: list[tuple[str, str]]) -> str:
    """``head (config: why; ...)`` for the first six ``entries``, `` ...`` when there are more:
    a line of :meth:`PlanningReport.describe` that stays readable for a conv's ~40 configs."""
    shown = "; ".join(f"{c}: {why}" for c, why in entries[:6])
    return f"{head} ({shown}{' ...' if len(entries) > 6 else ''})"


def _distinct(log: list[str]) -> list[str]:
    """``log`` with each explanation once: cuDNN repeats some lines (its "configuration is set to
    AUTO ... FULL" notice comes with each finalize on some versions, and under more than one
    status), and a line already said is kept where it was first said."""
    seen: set[str] = set()
    out = []
    for line in log:
        # "Warning: CUDNN_STATUS_X; Reason: text": the same text under another status is the same.
        key = line.split("Reason:", 1)[1].strip() if "Reason:" in line else line.strip()
        if key not in seen:
            seen.add(key)
            out.append(line)
    return out


def _capture() -> Any:

    # WARNING too: cuDNN explains empty heuristic results ("No viable engine configs ...") there.
    return log.capture(logging.WARNING)
