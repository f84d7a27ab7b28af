"""Execution plans: a finalized ``EXECUTION_PLAN`` and how to run it, save it and load it."""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from _nvbind.arrays import describe_array
from _nvbind.cuda import stream_handle
from _nvbind.files import write_text
from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords
from _nvbind.lazy_numpy import np
from _nvbind.memory import workspace as pooled_workspace
from _nvbind.resource import ClosedError

from .. import verification
from .._lib import LIB, check
from ..backend import BackendDescriptor
from ..deviceprops import DeviceProperties
from ..errors import CudnnError
from ..handle import Handle, get_handle
from ..opgraph import OperationGraph, Tensor
from .autotune_results import AutotuneResults
from .cuda_graph import CudaGraphCalls, CudaGraphKeywords
from .heuristics import EngineConfig
from .loading import load_plan_descriptor, read_plan_text
from .plan_text import describe_plan, plan_repr
from .report import PlanningReport
from .serialization import Kept, with_our_fields
from .slots import (
    _slots_from_graph,
    _slots_from_json,
    arrays_device,
    check_given,
    checked_scalar,
    kept_of,
    restore_defaults,
    scalar_setter,
)
from .targets import check_runs_on
from .variant_pack import VariantPackCache, wrong_device

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

    from ..verification.result import VerifyResult

__all__ = ["Plan"]

_log = logging.getLogger("pycudnn")

_get_ident = threading.get_ident
_ENGINE_FIELDS: dict[str, Any] = dict(
    engine_id=None, knobs={}, numerical_notes=(), behavior_notes=()
)


class Plan:
    """A finalized execution plan (``CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR``) and how to run it.

    Built by :meth:`Graph.build` / :func:`build`, :func:`autotune`, or loaded with
    :meth:`from_json` / :meth:`load`. ``engine_id``, ``knobs``, ``numerical_notes``,
    ``behavior_notes`` describe the engine (read from its config when first asked for, not by the
    build: about 30 library calls through ``__getattr__``); ``workspace_size`` is
    ``EXECUTION_PLAN_WORKSPACE_SIZE``. ``close()`` releases the plan and its variant packs.

    A plan owns its variant-pack cache (:class:`~pycudnn.plan.variant_pack.VariantPackCache`:
    the arrays checked and the packs built once per set of pointers) and its CUDA-graph calls
    (:class:`~pycudnn.plan.cuda_graph.CudaGraphCalls`).
    """

    engine_id: int | None
    knobs: dict[str, int]
    numerical_notes: tuple[str, ...]
    behavior_notes: tuple[str, ...]

    def __getattr__(self, name: str) -> Any:
        if name not in _ENGINE_FIELDS:
            raise AttributeError(f"'Plan' object has no attribute '{name}'")
        config = self.__dict__.get("config")
        value = getattr(config, name) if config is not None else _ENGINE_FIELDS[name]
        self.__dict__[name] = value = dict(value) if name == "knobs" else value  # the plan's own
        return value

    def __init__(
        self,
        descriptor: BackendDescriptor,
        *,
        graph: OperationGraph | None,
        config: EngineConfig | None = None,
        device_properties: DeviceProperties | None = None,
        device_id: int | None = None,
        json_data: Mapping[str, Any] | None = None,
        source: str = "heuristics",
        kept: Kept | None = None,
    ) -> None:
        self._desc = descriptor
        self._ptr = descriptor._as_parameter_  # a c_void_p, for the execute call
        self.graph = graph
        self.config = config
        self.device_properties = device_properties
        self.source = source
        self.autotune_results: AutotuneResults | None = None
        #: The :class:`PlanningReport` of the build that made this plan (None when loaded).
        self.report: PlanningReport | None = None
        #: The equivalent description cuDNN planned instead of the graph's own ("" if none).
        self.rewrite = ""
        #: The last :meth:`verify` verdict (a :class:`pycudnn.verification.VerifyResult`), if any.
        self.verification: Any = None
        self.workspace_size = int(descriptor.get("EXECUTION_PLAN_WORKSPACE_SIZE"))
        if config is None and json_data is not None:
            # A deserialized plan: its engine config reads back like a heuristic one, which gives
            # the same knobs and notes as the plan had when it was built.
            try:
                read = EngineConfig(
                    descriptor.get("EXECUTION_PLAN_ENGINE_CONFIG"), mode=source
                )._read()  # read here, where an unreadable one falls back to the JSON
            except (CudnnError, ValueError, TypeError) as exc:
                _log.debug("engine config of a deserialized plan unreadable: %s", exc)
            else:
                self.__dict__.update({n: getattr(read, n) for n in _ENGINE_FIELDS})
                self.knobs = dict(read.knobs)  # the plan's own
        if config is None and "knobs" not in self.__dict__:  # no notes: () from __getattr__
            engine = (json_data or {}).get("engine", {})
            self.engine_id = int(engine["engineId"]) if "engineId" in engine else None
            self.knobs = {
                str(k).removeprefix("CUDNN_KNOB_TYPE_"): int(v)
                for k, v in dict(engine.get("knobChoices", {})).items()
            }
        if graph is not None:
            slots = _slots_from_graph(graph)
        elif json_data is not None:
            slots = _slots_from_json(json_data, kept or Kept())
        else:
            raise ValueError("a Plan needs its graph or its JSON to know its tensors")
        self._slots = slots  # (a by-value tensor's host buffer is made on first use)
        self._subgraphs = kept.subgraphs if kept is not None else None  # see to_json
        self.uids: tuple[int, ...] = tuple(s.uid for s in slots)
        self._slot_by_key: dict[Any, int] = {}
        for i, s in enumerate(slots):
            self._slot_by_key[s.uid] = i
            self._slot_by_key[s.name] = i
            if s.tensor is not None:
                self._slot_by_key[s.tensor] = i
        self._uid_array = (ctypes.c_int64 * len(slots))(*self.uids)
        self._device_id = device_id
        # hot-path state: the binding of the last call's keys, (keys, slot order, readers, the
        # by-value slots the keys leave out), replaced whole so that a call reads one binding
        self._bound: tuple[Any, ...] = (None, (), (), ())
        self._scalar_slots = tuple(s for s in slots if s.by_value)
        self._packs = VariantPackCache(slots, self.uids, self.workspace_size)
        self._graphs = CudaGraphCalls(self._ptr, self.config)
        self._handles: dict[int, Any] = {}
        self._exec = LIB.function("cudnnBackendExecute")
        self._closed = False
        self._owns_descriptor = True
        self._thread = _get_ident()  # the plan cache hands other threads a view of their own

    # -- scalars -----------------------------------------------------------------------------
    def set_scalar(self, tensor: Any, value: Any) -> None:
        """Set the default of a by-value scalar tensor: the value every following execution
        that does not give one runs with. A saved plan keeps it for a load without the graph;
        loaded for a graph, a plan runs with the graph's values."""
        slot = self._slots[self._slot_index(tensor)]
        if not slot.by_value:
            raise ValueError(f"tensor '{slot.name}' is not a by-value scalar")
        slot.value = slot.scalar[0] = checked_scalar(value, slot.scalar.dtype, slot.name)
        slot.__dict__["_given"] = False  # the new default, not one call's value

    # -- properties --------------------------------------------------------------------------
    @property
    def descriptor(self) -> BackendDescriptor:
        """The finalized ``CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR``."""
        return self._desc

    @property
    def closed(self) -> bool:
        """True once :meth:`close` released the plan (or its descriptor was destroyed)."""
        return self._closed or self._desc.closed

    is_closed = closed

    @property
    def device_id(self) -> int | None:
        """The GPU the plan executes on (set by the first execution), or None."""
        return self._device_id

    @property
    def variant_pack_builds(self) -> int:
        """How many variant packs (``CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR``) this plan built:
        one per set of arrays first seen, none for a set seen before."""
        return self._packs.builds

    def tensor_names(self) -> list[str]:
        """Names of the tensors ``execute`` takes, in variant-pack order."""
        return [s.name for s in self._slots]

    def describe(self) -> str:
        """One readable line: engine, knobs, notes, workspace, graph and rewrite."""
        return describe_plan(self)

    def __repr__(self) -> str:
        return plan_repr(self)

    def close(self) -> None:
        """Release the variant packs and the execution plan. Idempotent.

        A plan held by a :class:`PlanCache` (``build()``'s default) keeps its execution plan for
        the cache: this closes this object only, and the next ``build()`` of the graph is still a
        hit. ``cache=False`` plans, or :meth:`PlanCache.clear`, release it."""
        if self._closed:
            return
        self._closed = True
        self._packs.close()
        if self._owns_descriptor:
            self._desc.close()

    def _for_graph(self, graph: OperationGraph) -> Plan:
        """This plan for another graph object with the same structure (a plan-cache hit): shares
        the execution plan, maps the other graph's tensors. Closing the original closes both."""
        view = Plan(
            self._desc,
            graph=graph,
            config=self.config,
            device_properties=self.device_properties,
            device_id=self._device_id,
            source=self.source,
        )
        view._owns_descriptor = False
        # What planning learned holds for every graph of this structure (rewrite, report, verdict).
        for name in ("autotune_results", "report", "rewrite", "verification"):
            setattr(view, name, getattr(self, name))
        for name in _ENGINE_FIELDS.keys() & self.__dict__.keys():  # read or loaded; the rest: lazy
            value = self.__dict__[name]
            setattr(view, name, dict(value) if name == "knobs" else value)
        return view

    def __reduce_ex__(self, protocol: Any) -> Any:
        # A copy would share the execution plan and the variant packs with the original while
        # tracking their state apart: after one is closed the other would execute destroyed
        # descriptors. Serialize with to_json() instead.
        raise TypeError(
            "a Plan owns cuDNN objects and cannot be copied or pickled; use to_json()/from_json()"
        )

    def __enter__(self) -> Plan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def verify(
        self,
        *,
        seed: int = 0,
        max_reference_cost: int | None = None,
        reference_plan: Plan | None = None,
        reference_values: Mapping[int, np.ndarray] | None = None,
    ) -> VerifyResult:
        """Execute the plan (``cudnnBackendExecute``) on seeded inputs and compare every output
        with a reference computed without cuDNN (NumPy; see
        :func:`pycudnn.verification.verify_plan` for the keywords; ``max_reference_cost=None``
        is its default). Returns a :class:`~pycudnn.verification.VerifyResult` (also kept as
        ``verification``). Needs the GPU the plan is for."""
        # pycudnn.verification loads its modules on first use (the NumPy references, which
        # planning never needs).
        result = verification.verify_plan(
            self,
            seed=seed,
            max_reference_cost=(
                verification.DEFAULT_MAX_REFERENCE_COST
                if max_reference_cost is None
                else max_reference_cost
            ),
            reference_plan=reference_plan,
            reference_values=reference_values,
        )
        self.verification = result
        return result

    # -- serialization -----------------------------------------------------------------------
    def to_json(self) -> str:
        """cuDNN's JSON of the plan (``EXECUTION_PLAN_JSON_REPRESENTATION``: engine, knobs, device
        profile and, for runtime-compiled engines, the kernels) with pycudnn's keys, which cuDNN
        is not given: a digest of the graph the plan computes, the tensors' names, the by-value
        scalars' values and a digest of the whole JSON (:mod:`pycudnn.plan.serialization` names
        them). :meth:`from_json` checks both digests, and with a graph compares every operation."""
        self._check_open()
        text = str(self._desc.get("EXECUTION_PLAN_JSON_REPRESENTATION", attr_type="CHAR"))
        return with_our_fields(text, kept_of(self._slots), self.graph, self._subgraphs)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path``, atomically (a temporary file renamed over it); a
        FIFO, device or directory at ``path`` is refused with an ``OSError``."""

        write_text(path, self.to_json(), what="plan file")

    @classmethod
    def from_json(
        cls,
        source: str | bytes | Mapping[str, Any],
        *,
        graph: OperationGraph | None = None,
        device_properties: DeviceProperties | None = None,
        device: Any = None,
        allow_known_bad: bool = False,
    ) -> Plan:
        """Deserialize a plan: set the JSON on an EXECUTION_PLAN, with DEVICEPROP, then finalize.

        ``device_properties`` describe the GPU the plan will run on; without them the current GPU
        is queried (there must be one: cuDNN crashes finalizing a deserialized plan with neither).
        A plan written by another cuDNN version raises :class:`PlanVersionError` before cuDNN
        sees it. With ``graph``, the plan's tensors are checked against the graph's, execute
        accepts the graph's tensors as keys (without, unique ids: ``plan.uids``), and a plan of
        an engine the known-bad table names for the graph is refused unless ``allow_known_bad``.
        """
        loaded = load_plan_descriptor(source, graph=graph, device_properties=device_properties,
                                      device=device, allow_known_bad=allow_known_bad)  # fmt: skip
        try:
            plan = cls(
                loaded.desc,
                graph=graph,
                device_properties=loaded.props,
                device_id=loaded.ordinal,
                json_data=loaded.data,
                source="json",
                kept=loaded.kept,
            )
            plan.rewrite = loaded.rewrite
            return plan
        except BaseException:
            loaded.desc.close()
            raise

    @classmethod
    def load(
        cls,
        source: str | os.PathLike[str],
        *,
        graph: OperationGraph | None = None,
        device_properties: DeviceProperties | None = None,
        device: Any = None,
        allow_known_bad: bool = False,
    ) -> Plan:
        """:meth:`from_json` from a file path (or a JSON text), with its keywords."""
        text = source if isinstance(source, str) and source.lstrip().startswith("{") else None
        return cls.from_json(text or read_plan_text(source), graph=graph,
                             device_properties=device_properties, device=device,
                             allow_known_bad=allow_known_bad)  # fmt: skip

    # -- execution ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError("this execution plan is closed")

    def _slot_index(self, key: Any) -> int:
        ok = isinstance(key, (int, str, Tensor)) and not isinstance(key, bool)  # True: not uid 1
        idx = self._slot_by_key.get(key) if ok else None
        if idx is None:
            if isinstance(key, Tensor):
                if self.graph is not None and not key._belongs_to(self.graph):
                    raise KeyError(
                        f"tensor '{key.name}' belongs to {key._owner}, not to this plan's graph "
                        f"'{self.graph.name}'"
                    )
                raise KeyError(
                    f"tensor '{key.name}' is virtual (an intermediate): it has no memory to pass"
                )
            raise KeyError(
                f"{key!r} is not a tensor of this plan; expected one of: "
                + ", ".join(s.name for s in self._slots)
            )
        return idx

    def _bind(self, keys: tuple[Any, ...], values: Iterable[Any]) -> tuple[Any, ...]:
        """Map the caller's keys (in their order) to slots, check nothing is missing, and pick a
        pointer reader per position for the array types given."""
        order = tuple(self._slot_index(k) for k in keys)
        check_given(self._slots, order)
        getters = tuple(
            scalar_setter(self._slots[i])
            if self._slots[i].by_value
            # what a variant pack depends on, read per call (see describe_array)
            else functools.partial(describe_array, f"tensor '{self._slots[i].name}'")
            for i in order
        )
        left_out = tuple(s for i, s in enumerate(self._slots) if s.by_value and i not in order)
        self._bound = bound = (keys, order, getters, left_out)
        return bound

    def _bound_values(self, tensors: Mapping[Any, Any]) -> Any:
        """The arrays of ``tensors``, its keys bound to slots (:meth:`_bind`) when they are not
        those of the last call: the first step of the execute and CUDA-graph paths."""
        try:
            values = tensors.values()
        except AttributeError:  # free on the hot path, unlike an isinstance(Mapping) check
            raise TypeError(
                "tensors must be a mapping of graph tensors (or names, or unique ids) to arrays, "
                f"not {type(tensors).__name__}"
            ) from None
        keys, bound = tuple(tensors), self._bound
        if keys != bound[0]:  # tuple comparison checks identity first: cheap when unchanged
            bound = self._bind(keys, values)
        return values, bound

    def _new_pack(self, key: Any, handle: Any) -> Any:
        """Check the arrays of ``key`` and build their variant pack; the first one fixes the
        plan's device, which must be the GPU the plan was made for."""
        check_runs_on(self.device_properties, handle.device_id)
        entry = self._packs.build(key, handle.device_id)
        if self._device_id is None:
            self._device_id = handle.device_id
        return entry

    def _thread_handle(self, values: Iterable[Any], order: tuple[int, ...]) -> Any:
        if self._device_id is None:
            self._device_id = arrays_device([self._slots[i] for i in order], values)
        h = get_handle(self._device_id)
        self._handles[_get_ident()] = h
        return h

    def execute(
        self,
        tensors: Mapping[Any, Any],
        *,
        workspace: Any = None,
        stream: Any = None,
        handle: Any = None,
    ) -> None:
        """Run the plan (``cudnnBackendExecute``) on ``stream`` (None: the default stream).

        ``tensors`` maps each non-virtual tensor (the :class:`~pycudnn.graph.Tensor`, its name or
        its unique id) to a device array exposing ``__cuda_array_interface__`` or DLPack. By-value
        scalars may be given as numbers, for this call only (else the plan's default is used: the
        graph's value, or :meth:`set_scalar`'s). ``workspace``: None (a cached per-thread
        workspace from the device's memory pool; refused with
        :class:`~pycudnn.errors.GraphCaptureError` while ``stream`` is being captured into a CUDA
        graph), or a buffer/array of at least ``workspace_size`` bytes. ``handle``: None (this
        thread's handle for the arrays' device) or a :class:`~pycudnn.Handle` on that device.

        The first time a set of data pointers is seen, the arrays are checked against the graph
        (device, dtype, dims, strides, alignment; an output may not meet another array or the
        workspace) and a variant pack is built; the same arrays then reuse it, no descriptor work.
        """
        if self._closed or self._desc._ptr is None:  # the descriptor may be shared (cache views)
            raise ClosedError("this execution plan is closed")
        values, (_, order, getters, left_out) = self._bound_values(tensors)
        if left_out:
            restore_defaults(left_out)
        sptr = 0 if stream is None else stream_handle(stream)
        # Every call reads each array's full description (pointer, shape, strides, dtype, device,
        # read-only), not only its pointer: a new array at a pooled address with another layout
        # is a new key and is checked again. Reading it through array_view also orders the
        # producer's stream before ours whenever the two differ (DLPack / CAI v3).
        sigs = tuple([g(v, sptr) for g, v in zip(getters, values, strict=True)])
        packs = self._packs
        if workspace is not None:
            ws = packs.user_workspace(workspace, sptr)
        if handle is None:
            handle = self._handles.get(_get_ident())
            if handle is None or handle._ptr is None:  # none yet, or closed since (a with-block)
                handle = self._thread_handle(values, order)
        elif not isinstance(handle, Handle):
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        # Set only on change (comparing here first saves a call), as read once above: a stream
        # asked again may answer another handle than the one the arrays were ordered on.
        if sptr != handle._stream_ptr:
            handle._use_stream(stream, sptr)
        if workspace is None:
            size = packs.size
            ws = pooled_workspace(size, device=handle.device, stream=sptr) if size else 0
        last = packs.last
        if last[0] == sigs and last[1] == ws and last[2] is order:
            entry = last[3]
        else:
            key = (order, sigs, ws)
            entry = packs.entries.get(key)
            if entry is None:
                entry = self._new_pack(key, handle)
            else:
                packs.touch(key)
            packs.last = (sigs, ws, order, entry)
        self._launch(handle, entry)

    def _launch(self, handle: Any, entry: Any) -> None:
        """``cudnnBackendExecute`` of the pack ``entry`` on ``handle``: ends both execute paths."""
        if entry[1] != handle.device_id:
            wrong_device(handle, entry[1])
        previous = handle.activate()  # cuDNN launches in the current context (several GPUs)
        status = self._exec(handle._as_parameter_, self._ptr, entry[0])
        if previous is not None:
            handle.restore(previous)
        if status:
            check(status, "cudnnBackendExecute")

    def execute_raw(
        self,
        pointers: Sequence[int | None],
        workspace: int = 0,
        *,
        handle: Any = None,
        stream: Any = None,
    ) -> None:
        """Run the plan with raw device pointers in :attr:`uids` order (no array validation).

        ``pointers`` are device pointers (ints) in :attr:`uids` order; by-value scalars take None
        and use the plan's own host buffer (set with :meth:`set_scalar`): a raw host pointer is
        not accepted, since cuDNN reads it on the host and a wrong one crashes the process.
        ``workspace`` is a device pointer to at least :attr:`workspace_size` bytes. The variant
        pack is cached per pointer set; the pointers are checked (count, ints) only when a new set
        is seen.
        """
        if self._closed or self._desc._ptr is None:
            raise ClosedError("this execution plan is closed")
        restore_defaults(self._scalar_slots)  # raw calls run with the plan's own values
        packs = self._packs
        key = (tuple(pointers), workspace)
        entry = packs.entries.get(key)
        ptrs: list[Any] = []
        if entry is None:
            # Checked before a handle is needed: mistakes read the same with or without a GPU.
            ptrs = packs.raw_pointers(key[0], workspace)
        if handle is None:
            handle = self._handles.get(_get_ident())
            if handle is None or handle._ptr is None:  # none yet, or closed since (a with-block)
                handle = self._handles[_get_ident()] = get_handle(self._device_id)
        elif not isinstance(handle, Handle):
            # anything else would reach cudnnBackendExecute as a garbage cudnnHandle_t
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        if stream is not None:
            handle.use_stream(stream)
        if entry is None:
            check_runs_on(self.device_properties, handle.device_id)
            entry = packs.store(key, ptrs, workspace, handle.device_id)
        self._launch(handle, entry)

    # -- CUDA graphs (cuDNN 9.5+) ------------------------------------------------------------
    def populate_cuda_graph(
        self,
        tensors: Mapping[Any, Any],
        cuda_graph: Any,
        *,
        workspace: Any = None,
        handle: Any = None,
    ) -> None:
        """Add this plan's work on ``tensors`` to the empty CUDA graph ``cuda_graph``
        (``cudnnBackendPopulateCudaGraph``, cuDNN 9.5+).

        ``tensors`` as for :meth:`execute`. The graph keeps the data pointers: the arrays (and the
        ``workspace``, required when :attr:`workspace_size` is not 0, since a per-call workspace
        would be gone when the graph is launched) must outlive every launch.
        """
        self._cuda_graph_call(
            "cudnnBackendPopulateCudaGraph", tensors, cuda_graph, workspace, handle
        )

    def update_cuda_graph(
        self, tensors: Mapping[Any, Any], cuda_graph: Any, **kw: Unpack[CudaGraphKeywords]
    ) -> None:
        """Point a CUDA graph that :meth:`populate_cuda_graph` built for this plan at new arrays
        (``cudnnBackendUpdateCudaGraph``, cuDNN 9.5+): no capture, no new nodes."""
        k = take_keywords("update_cuda_graph", kw, _CUDA_GRAPH_KEYWORDS)
        self._cuda_graph_call(
            "cudnnBackendUpdateCudaGraph", tensors, cuda_graph, k["workspace"], k["handle"]
        )

    def _cuda_graph_call(
        self,
        function: str,
        tensors: Mapping[Any, Any],
        cuda_graph: Any,
        workspace: Any,
        handle: Any,
    ) -> None:
        if self._closed or self._desc._ptr is None:
            raise ClosedError("this execution plan is closed")
        fn, graph_ptr = self._graphs.prepare(function, cuda_graph)
        values, (_, order, getters, left_out) = self._bound_values(tensors)
        restore_defaults(left_out)
        ptrs = tuple([g(v) for g, v in zip(getters, values, strict=True)])
        ws = self._packs.graph_workspace(workspace)
        if handle is None:
            handle = self._handles.get(_get_ident())
            if handle is None or handle._ptr is None:  # none yet, or closed since
                handle = self._thread_handle(values, order)
        elif not isinstance(handle, Handle):
            raise TypeError(f"handle must be a pycudnn.Handle, not {type(handle).__name__}")
        key = (order, ptrs, ws)
        entry = self._packs.entries.get(key) or self._new_pack(key, handle)
        self._graphs.call(fn, function, handle, entry, graph_ptr)


# update_cuda_graph takes populate_cuda_graph's keywords (help() shows them as populate declares)
show_keywords(vars(Plan), Plan.populate_cuda_graph, CudaGraphKeywords)
_CUDA_GRAPH_KEYWORDS = keyword_defaults(Plan.populate_cuda_graph)
