"""The public :class:`Graph`: an operation graph with the planning entry points.

The description is :class:`pycudnn.opgraph.OperationGraph`; planning (:mod:`pycudnn.plan`) takes
one and never imports this module. Layers, lowest first: ``opgraph`` describes, ``plan`` plans
and executes a described graph, this class joins the two for the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords

from .. import plan
from ..opgraph.operation_graph import OperationGraph
from ..plan import Plan, build, build_all, engine_configs, run_heuristics
from ..plan.loading import PlanLoadKeywords

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

    from ..plan.autotuning import autotune as _autotune

__all__ = ["Graph"]


class _OnFirstUse:
    """A :mod:`pycudnn.plan` function whose module is imported on first use (autotuning pulls
    timing and verification code that building a plan never needs), as a method of the class it
    is set on: the first look-up imports it and puts the function itself on the class."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner = owner

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        function = getattr(plan, self.name)  # pycudnn.plan imports the module (PEP 562)
        setattr(self.owner, self.name, function)  # later look-ups find the function itself
        return function if obj is None else function.__get__(obj, owner)


class Graph(OperationGraph):
    """A cuDNN operation graph under construction, then finalized (``CUDNN_BACKEND_OPERATIONGRAPH``),
    and planned: :meth:`build`, :meth:`autotune` and the rest call :mod:`pycudnn.plan`.

    ``compute_dtype`` is the default math precision of operations; ``intermediate_dtype`` the type
    of virtual tensors; ``io_dtype`` (optional) the type of graph outputs whose type is not given.

    The planning methods are the :mod:`pycudnn.plan` functions themselves, the graph their first
    argument (``graph.build(...)`` is ``pycudnn.plan.build(graph, ...)``): one keyword list, one
    docstring, and a :class:`~pycudnn.plan.PlanOptions` or mapping taken as ``options=``.
    """

    # -- planning (pycudnn.plan) -----------------------------------------------------------------
    heuristics = run_heuristics
    engine_configs = engine_configs
    build = build
    build_all = build_all
    if TYPE_CHECKING:
        autotune = _autotune
    else:
        autotune = _OnFirstUse("autotune")

    def load_plan(self, source: Any, **kw: Unpack[PlanLoadKeywords]) -> Plan:
        """A plan for this graph from its JSON (text or path; ``cudnnBackendFinalize`` of an
        ``EXECUTION_PLAN`` with ``CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION``): see
        :meth:`pycudnn.plan.Plan.from_json`, whose keywords (``device_properties``, ``device``,
        ``allow_known_bad``) and defaults it takes (``PlanVersionError`` for another cuDNN's
        plan; a known-bad engine's plan refused unless ``allow_known_bad``)."""
        return Plan.load(source, graph=self, **take_keywords("load_plan", kw, _LOAD_KEYWORDS))


# load_plan takes Plan.from_json's keywords (help() shows them as from_json declares them)
_LOAD_KEYWORDS = keyword_defaults(Plan.from_json, PlanLoadKeywords.__annotations__)
show_keywords(vars(Graph), Plan.from_json, PlanLoadKeywords)
