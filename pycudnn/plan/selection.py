"""Choosing the engine yourself: a plan for a given engine and knob choices (cudnn-frontend's
``create_execution_plan(engine_id, knobs)``), bypassing the heuristics."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from _nvbind.suggest import did_you_mean

from .. import _bindings, known_bad
from ..backend import BackendDescriptor
from ..errors import CudnnError
from .building import _finalize_plan
from .heuristics import EngineConfig, KnobInfo, _knob_infos
from .report import _check_graph
from .serialization import _version
from .targets import _target

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

    from ..deviceprops import DeviceProperties
    from ..opgraph import OperationGraph
    from .execution import Plan

__all__ = ["build_engine", "engine_config"]


def _knob_type(name: Any) -> Any:
    kt = _bindings.cudnnBackendKnobType_t
    if isinstance(name, kt):
        return name
    if isinstance(name, str):
        key = name.strip().upper().removeprefix("CUDNN_KNOB_TYPE_")
        if key in kt.__members__:
            return kt[key]
        names = [m for m in kt.__members__ if m != "COUNTS"]
        raise ValueError(
            f"unknown knob {name!r}; knob names are cudnnBackendKnobType_t names"
            + did_you_mean(key, names)
        )
    raise TypeError(f"a knob is named by a str or a cudnnBackendKnobType_t, not {name!r}")


def _check_knobs(choices: list[tuple[Any, int]], infos: list[KnobInfo], label: str) -> None:
    """Refuse knobs the engine lacks and values outside the range it reports (``KNOB_INFO``), before
    cuDNN, which answers either with a bare NOT_SUPPORTED when finalizing the ENGINECFG. The
    headers (``cudnn_graph.h``, 9.28) define no special value for a knob, so none is let through
    (cuDNN 9.28 accepts -1 for TILE_SIZE, whose range is 0..23, and says nothing of its meaning).
    A value in range may still be refused by cuDNN for the graph (measured: TILE_SIZE 23 on engine
    22 of a convolution)."""
    by_name = {k.name: k for k in infos}
    for ktype, value in choices:
        name = ktype.name
        info = by_name.get(name)
        if info is None:
            have = ", ".join(by_name) or "none"
            raise ValueError(
                f"{label} has no knob {name!r} (its knobs, ENGINE_KNOB_INFO: {have})"
                + did_you_mean(name, by_name)
            )
        if not info.minimum <= value <= info.maximum:
            raise ValueError(
                f"knob {name!r} of {label}: {value} is outside its range {info.minimum}.."
                f"{info.maximum} (KNOB_INFO_MINIMUM_VALUE..KNOB_INFO_MAXIMUM_VALUE)"
            )
        if info.stride > 1 and (value - info.minimum) % info.stride:
            raise ValueError(
                f"knob {name!r} of {label}: {value} is not {info.minimum} plus a multiple of its "
                f"stride {info.stride} (KNOB_INFO_STRIDE)"
            )


def engine_config(
    graph: OperationGraph,
    engine_id: int,
    knobs: Mapping[Any, int] | None = None,
    *,
    device_properties: DeviceProperties | None = None,
    device: Any = None,
    allow_known_bad: bool = False,
) -> EngineConfig:
    """The engine config for engine ``engine_id`` of ``graph`` with ``knobs`` (``{knob name:
    value}``; unset knobs keep the engine's defaults): ``ENGINE`` (``ENGINE_GLOBAL_INDEX``),
    ``KNOB_CHOICE`` descriptors and ``ENGINECFG``, finalized by cuDNN. A knob the engine does
    not have (``ENGINE_KNOB_INFO``) or a value outside its ``[minimum, maximum]`` (or off its
    stride) is refused with ``ValueError`` before the knob descriptors are made; cuDNN refuses an
    engine the graph does not have, and may refuse a value in range for this graph. An engine in the known-bad table
    (:mod:`pycudnn.known_bad`) for this graph and cuDNN version is refused unless
    ``allow_known_bad=True``: choosing it by hand does not make its results right."""
    _check_graph(graph)
    if isinstance(engine_id, bool) or not isinstance(engine_id, numbers.Integral) or engine_id < 0:
        raise TypeError(f"engine_id must be a non-negative int, not {engine_id!r}")
    choices = []
    for name, value in (knobs or {}).items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"knob {name!r}: the value must be an int, not {value!r}")
        choices.append((_knob_type(name), int(value)))
    if not isinstance(allow_known_bad, bool):
        raise TypeError(f"allow_known_bad must be a bool, not {allow_known_bad!r}")
    if not allow_known_bad:
        entry = known_bad.match(known_bad.exclusions_for(graph, _version()), int(engine_id))
        if entry is not None:
            raise ValueError(
                f"engine {engine_id} of graph '{graph.name}' is known to give wrong results: "
                f"{entry.describe()} (allow_known_bad=True builds it anyway)"
            )
    target = _target(device_properties, device)
    op_graph = graph._descriptors_for(target.handle)["graph"]
    count = int(op_graph.get("OPERATIONGRAPH_ENGINE_GLOBAL_COUNT"))
    if engine_id >= count:
        raise ValueError(
            f"engine_id {engine_id}: graph '{graph.name}' has engines 0..{count - 1} "
            "(OPERATIONGRAPH_ENGINE_GLOBAL_COUNT)"
        )
    made: list[BackendDescriptor] = []
    try:
        engine = BackendDescriptor("ENGINE")
        made.append(engine)
        engine.set("ENGINE_OPERATION_GRAPH", op_graph)
        engine.set("ENGINE_GLOBAL_INDEX", int(engine_id), attr_type="INT64")
        if target.props is not None:
            engine.set("ENGINE_DEVICEPROP", target.props.descriptor)
            engine.keep_alive(target.props)
        engine.finalize()
        if choices:
            _check_knobs(
                choices, _knob_infos(engine), f"engine {engine_id} of graph '{graph.name}'"
            )
        knob_descs = []
        for ktype, value in choices:
            kc = BackendDescriptor("KNOB_CHOICE")
            made.append(kc)
            kc.set("KNOB_CHOICE_KNOB_TYPE", ktype, attr_type="KNOB_TYPE")
            kc.set("KNOB_CHOICE_KNOB_VALUE", value, attr_type="INT64")
            kc.finalize()
            knob_descs.append(kc)
        cfg = BackendDescriptor("ENGINECFG")
        made.append(cfg)
        cfg.set("ENGINECFG_ENGINE", engine)
        if knob_descs:
            cfg.set("ENGINECFG_KNOB_CHOICES", knob_descs, attr_type="BACKEND_DESCRIPTOR")
        cfg.finalize()
        return EngineConfig(cfg, mode="chosen")._read()  # errors named by the handler below
    except CudnnError as exc:
        for d in reversed(made):
            d.close()
        raise type(exc)(
            exc.status, exc.function, f"engine {engine_id} of graph '{graph.name}': {exc.message}"
        ) from None
    except BaseException:
        for d in reversed(made):
            d.close()
        raise


class _EngineChoice(TypedDict, total=False):
    """The keywords of :func:`engine_config` that :func:`build_engine` passes on (its signature
    shows them with their defaults)."""

    device_properties: DeviceProperties | None
    device: Any
    allow_known_bad: bool


def build_engine(
    graph: OperationGraph,
    engine_id: int,
    knobs: Mapping[Any, int] | None = None,
    **choice: Unpack[_EngineChoice],
) -> Plan:
    """An execution plan for engine ``engine_id`` with ``knobs`` (see :func:`engine_config`,
    known-bad engines included), bypassing the heuristics; cuDNN's refusal is raised as its
    :class:`~pycudnn.CudnnError`."""

    cfg = engine_config(graph, engine_id, knobs, **choice)
    target = _target(choice.get("device_properties"), choice.get("device"))
    plan = _finalize_plan(cfg, target, graph)
    plan.source = "chosen"
    return plan


# engine_config's keywords, spelled out for help() and inspect.signature (one list, two functions)
build_engine.__signature__ = inspect.signature(engine_config).replace(  # type: ignore[attr-defined]
    return_annotation="Plan"
)
