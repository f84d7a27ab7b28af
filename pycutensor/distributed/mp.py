"""Distributed tensors and plans over cuTENSORMp (``cutensorMp.h``): one process per GPU, NCCL.

Every rank runs the same program: it creates an :class:`MpHandle` on its communicator, describes
each tensor once (:class:`DistributedTensor`: global extents, the process grid per mode, block
sizes) and holds only its local shard, whose extents, strides and storage size are asked of
cuTENSORMp (``cutensorMpTensorDescriptorGetAttribute``). Plans (:class:`ContractionPlan`,
:class:`RedistributionPlan`, :class:`UnfoldPlan`, :class:`FoldPlan`) are created collectively,
size their device and host workspace from cuTENSORMp's answer, and execute with the tensors'
local shards. :func:`einsum` is the short form of a contraction, :func:`gather` and :func:`scatter`
move a whole tensor to or from one rank (a redistribution to or from a one-rank layout), for tests
and small data.

Without a GPU every constructor raises :class:`DeviceRequiredError` before any library call;
argument checks (extents, grids, modes, dtypes) run first and work anywhere.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from _nvbind.arrays import array_view
from _nvbind.cuda import get_device, stream_handle
from _nvbind.device_array import DeviceArray
from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords
from _nvbind.resource import CResource

from .. import _bindings_mp as mpb
from .. import raw_mp
from ..tables import unary_operator
from ._common import c_array, checked_contraction, copy_modes, int64s, scalar_array
from .layout import Distribution
from .mp_tensor import DistributedTensor, MpHandle

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = [
    "ContractionPlan",
    "DistributedTensor",
    "FoldPlan",
    "MpContractionKeywords",
    "MpEinsumKeywords",
    "MpHandle",
    "MpPlanPreference",
    "MpScalarKeywords",
    "RedistributionPlan",
    "UnfoldPlan",
    "einsum",
    "gather",
    "scatter",
]


class MpPlanPreference(CResource):
    """``cutensorMpPlanPreference_t`` (``cutensorMpCreatePlanPreference``): the algorithm and the
    most device and host workspace (bytes) a plan may ask for."""

    _kind = "cuTENSORMp plan preference"

    def __init__(
        self,
        handle: MpHandle,
        *,
        algo: int = 0,
        workspace_device: int = 2**62,
        workspace_host: int = 2**62,
    ) -> None:
        for name, value in (("workspace_device", workspace_device),
                            ("workspace_host", workspace_host)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
                raise ValueError(f"{name} must be a byte count from 0 to 2**64 - 1, got {value!r}")
        self.algo = mpb.cutensorMpAlgo_t(algo)
        pref = mpb.cutensorMpPlanPreference_t()
        raw_mp.cutensorMpCreatePlanPreference(
            handle, ctypes.byref(pref), int(self.algo), workspace_device, workspace_host
        )
        super().__init__(
            int(pref.value or 0), raw_mp.cutensorMpDestroyPlanPreference, parents=(handle,)
        )


class _Plan(CResource):
    """An operation descriptor and its plan (``cutensorMpCreatePlan``, collective), with the
    workspace cuTENSORMp asks for (``CUTENSORMP_PLAN_REQUIRED_WORKSPACE_DEVICE``/``_HOST``)."""

    _kind = "cuTENSORMp plan"

    def _plan(self, handle: MpHandle, op: ctypes.c_void_p, tensors: tuple[Any, ...],
              preference: MpPlanPreference | None) -> None:  # fmt: skip
        self.handle = handle
        self._tensors = tensors
        try:
            plan = mpb.cutensorMpPlan_t()
            raw_mp.cutensorMpCreatePlan(handle, ctypes.byref(plan), op, preference)
        finally:
            raw_mp.cutensorMpDestroyOperationDescriptor(op)  # the plan keeps what it needs
        super().__init__(
            int(plan.value or 0), raw_mp.cutensorMpDestroyPlan, parents=(handle, *tensors)
        )
        attr = mpb.cutensorMpPlanAttribute_t
        self.workspace_device = self._attribute(attr.DEVICE)
        self.workspace_host = self._attribute(attr.HOST)
        self._host = ctypes.create_string_buffer(max(self.workspace_host, 1))
        self._device: Any = None

    def _attribute(self, attr: int) -> int:
        value = ctypes.c_uint64()
        raw_mp.cutensorMpPlanGetAttribute(
            self.handle, self, attr, ctypes.byref(value), ctypes.sizeof(value)
        )
        return int(value.value)

    def _workspaces(self) -> tuple[int, ctypes.Array[ctypes.c_char]]:
        if self.workspace_device and self._device is None:
            # One per plan: cuTENSORMp may register it with NCCL (ClearOperationCache's note).
            self._device = DeviceArray.empty(
                self.workspace_device, np.uint8, device=self.handle.device_id
            )
        ptr = 0
        if self._device is not None:
            ptr = array_view(self._device, "workspace").ptr
        return ptr, self._host

    def set_stream(self, stream: Any) -> None:
        """``cutensorMpSetStream``: run later executions of this plan on ``stream``."""
        raw_mp.cutensorMpSetStream(self.handle, self, stream_handle(stream))


class MpContractionKeywords(TypedDict, total=False):
    """The keywords of :class:`ContractionPlan` that :func:`einsum` takes too, with the same
    defaults (None)."""

    compute_type: Any
    """cuTENSOR's compute type (``"32F"``, ``"tf32"``, a floating dtype, ...); None: the first
    row of cuTENSOR's table for the data types."""
    preference: MpPlanPreference | None
    """An :class:`MpPlanPreference` (algorithm, workspace limits); None: cuTENSORMp's default."""


class MpScalarKeywords(TypedDict, total=False):
    """The scalars of :meth:`ContractionPlan.execute` that :func:`einsum` takes too, as
    keywords, with the same defaults (1.0 and 0.0)."""

    alpha: Any
    """The factor of the product of A and B."""
    beta: Any
    """The factor of the output's previous values."""


class MpEinsumKeywords(MpScalarKeywords, MpContractionKeywords, total=False):
    """:func:`einsum`'s keywords after ``out``: :class:`MpScalarKeywords`, then
    :class:`MpContractionKeywords`."""


def _same_handle(handle: MpHandle, tensors: Sequence[DistributedTensor]) -> None:
    for t in tensors:
        if not isinstance(t, DistributedTensor):
            raise TypeError(f"expected DistributedTensor operands, got {type(t).__name__}")
        if t.handle is not handle:
            raise ValueError("every tensor of a plan must come from the plan's handle")


class ContractionPlan(_Plan):
    """``D = alpha op_a(A) op_b(B) + beta op_c(C)`` over distributed tensors
    (``cutensorMpCreateContraction``); ``d`` must be ``c`` (the header: "currently must be
    identical to descC"). Modes are strings of letters or sequences of ints. ``compute_type`` and
    ``preference``: :class:`MpContractionKeywords`."""

    def __init__(  # noqa: PLR0917 - (tensor, modes) pairs in the order of C and einsum
        self,
        a: DistributedTensor,
        modes_a: Sequence[Any] | str,
        b: DistributedTensor,
        modes_b: Sequence[Any] | str,
        c: DistributedTensor,
        modes_c: Sequence[Any] | str,
        *,
        compute_type: Any = None,
        op_a: Any = "identity",
        op_b: Any = "identity",
        op_c: Any = "identity",
        preference: MpPlanPreference | None = None,
    ) -> None:
        handle = a.handle
        _same_handle(handle, (a, b, c))
        (ma, mb, mc), compute, self.scalar_dtype = checked_contraction(
            a, modes_a, b, modes_b, c, modes_c, compute_type
        )
        from ..raw import compute_descriptor

        op = mpb.cutensorMpOperationDescriptor_t()
        i32 = ctypes.c_int32
        raw_mp.cutensorMpCreateContraction(
            handle, ctypes.byref(op),
            a, c_array(i32, ma), unary_operator(op_a, "op_a"),
            b, c_array(i32, mb), unary_operator(op_b, "op_b"),
            c, c_array(i32, mc), unary_operator(op_c, "op_c"),
            c, c_array(i32, mc), compute_descriptor(compute),
        )  # fmt: skip
        self.compute_type = compute
        self._plan(handle, op, (a, b, c), preference)
        self.a, self.b, self.c = a, b, c

    def execute(self, alpha: Any = 1.0, beta: Any = 0.0) -> None:
        """``cutensorMpContract`` on the tensors' local shards (collective; asynchronous on the
        plan's stream). ``c`` is overwritten with the result."""
        ws, host = self._workspaces()
        al = scalar_array(alpha, self.scalar_dtype, "alpha")
        be = scalar_array(beta, self.scalar_dtype, "beta")
        raw_mp.cutensorMpContract(
            self.handle, self, al.ctypes.data, self.a.data_ptr or None,
            self.b.data_ptr or None, be.ctypes.data, self.c.data_ptr or None,
            self.c.data_ptr or None, ws or None, host,
        )  # fmt: skip


class RedistributionPlan(_Plan):
    """Move a tensor from ``src``'s layout to ``dst``'s (``cutensorMpCreateRedistribution``):
    same logical tensor, matched by mode labels."""

    def __init__(
        self,
        dst: DistributedTensor,
        src: DistributedTensor,
        *,
        modes_dst: Sequence[Any] | str | None = None,
        modes_src: Sequence[Any] | str | None = None,
        preference: MpPlanPreference | None = None,
    ) -> None:
        handle = src.handle
        _same_handle(handle, (dst, src))
        md, ms = copy_modes(dst, src, modes_dst, modes_src)
        if dst.data_type != src.data_type:
            raise TypeError(f"dst is {dst.data_type} but src is {src.data_type}")
        op = mpb.cutensorMpOperationDescriptor_t()
        raw_mp.cutensorMpCreateRedistribution(
            handle, ctypes.byref(op), dst, c_array(ctypes.c_int32, md),
            src, c_array(ctypes.c_int32, ms),
        )  # fmt: skip
        self._plan(handle, op, (dst, src), preference)
        self.dst, self.src = dst, src

    def execute(self) -> None:
        """``cutensorMpRedistribute`` (collective; asynchronous on the plan's stream)."""
        ws, host = self._workspaces()
        raw_mp.cutensorMpRedistribute(
            self.handle, self, self.dst.data_ptr or None, self.src.data_ptr or None,
            ws or None, host,
        )  # fmt: skip


def _groups(groups: Sequence[Sequence[int]], ndim: int, what: str) -> tuple[Any, Any]:
    """(groupModeIndices, groupSize) of two groups of positional modes of the ``ndim``-mode side."""
    if len(groups) != 2:
        raise ValueError(
            f"{what}: cuTENSORMp supports exactly 2 groups (a matrix), got {len(groups)}"
        )
    flat = [int(i) for g in groups for i in g]
    if sorted(flat) != list(range(ndim)):
        raise ValueError(
            f"{what}: the groups must list each of the {ndim} modes 0..{ndim - 1} once, got {flat}"
        )
    return c_array(ctypes.c_int32, flat), int64s([len(g) for g in groups])


def check_folding(
    tensor: Distribution, tensor_type: str, matrix: Distribution, matrix_type: str,
    groups: Sequence[Sequence[int]], *, what: str,
) -> tuple[Any, Any]:  # fmt: skip
    """The header's rules of an unfolding or folding (a tensor and a distributed matrix, the
    tensor's modes in two ``groups``), checked on the host; returns (groupModeIndices,
    groupSize) for C."""
    indices, sizes = _groups(groups, tensor.ndim, what)
    if matrix.ndim != 2:
        raise ValueError(f"{what}: the matrix must have 2 modes, has {matrix.ndim}")
    want = tuple(math.prod(tensor.extents[i] for i in g) for g in groups)
    if matrix.extents != want:
        raise ValueError(
            f"{what}: the grouped extents are {want} but the matrix has {matrix.extents}"
        )
    if tensor_type != matrix_type:
        raise TypeError(f"{what}: the tensor is {tensor_type} but the matrix {matrix_type}")
    if tensor_type in ("R_16F", "R_16BF"):
        raise TypeError(f"{what}: cuTENSORMp does not fold or unfold FP16 and BF16")
    tile = 32 if tensor_type == "R_32F" else 16
    # 0 (contiguous slices) is left to cuTENSORMp: the header states the rule for block sizes.
    blocks = matrix.block_sizes or (0, 0)
    if any(b % tile for b in blocks):
        raise ValueError(
            f"{what}: each matrix block size must be a multiple of {tile} for "
            f"{tensor_type} (the header's tile granularity), got {list(blocks)}"
        )
    return indices, sizes


class _FoldingPlan(_Plan):
    """What unfolding and folding share: the checks, the plan, and the collective execute."""

    _what: str  # "unfold" or "fold": which side is the tensor, and the messages' word

    def __init__(self, dst: DistributedTensor, src: DistributedTensor,
                 groups: Sequence[Sequence[int]], *,
                 preference: MpPlanPreference | None = None) -> None:  # fmt: skip
        _same_handle(src.handle, (dst, src))
        tensor, matrix = (src, dst) if self._what == "unfold" else (dst, src)
        indices, sizes = check_folding(tensor.distribution, tensor.data_type, matrix.distribution,
                                       matrix.data_type, groups, what=self._what)  # fmt: skip
        op = mpb.cutensorMpOperationDescriptor_t()
        self._describe(op, dst, src, indices, sizes)
        self._plan(src.handle, op, (dst, src), preference)
        self.dst, self.src = dst, src

    def _describe(self, op: Any, dst: DistributedTensor, src: DistributedTensor,
                  indices: Any, sizes: Any) -> None:  # fmt: skip
        raise NotImplementedError

    def _run(self, function: Callable[..., Any]) -> None:
        ws, host = self._workspaces()
        function(self.handle, self, self.src.data_ptr or None, self.dst.data_ptr or None,
                 ws or None, host)  # fmt: skip


class UnfoldPlan(_FoldingPlan):
    """Tensor to matrix (``cutensorMpCreateUnfolding``): ``groups`` are two lists of ``src``'s
    positional modes whose extents multiply into the rows and columns of ``dst``."""

    _what = "unfold"

    def _describe(self, op: Any, dst: DistributedTensor, src: DistributedTensor,
                  indices: Any, sizes: Any) -> None:  # fmt: skip
        raw_mp.cutensorMpCreateUnfolding(src.handle, ctypes.byref(op), src, 2, indices, sizes, dst)

    def execute(self) -> None:
        """``cutensorMpUnfold`` (collective)."""
        self._run(raw_mp.cutensorMpUnfold)


class FoldPlan(_FoldingPlan):
    """Matrix to tensor (``cutensorMpCreateFolding``): ``groups`` are two lists of ``dst``'s
    positional modes forming the rows and columns of ``src``."""

    _what = "fold"

    def _describe(self, op: Any, dst: DistributedTensor, src: DistributedTensor,
                  indices: Any, sizes: Any) -> None:  # fmt: skip
        raw_mp.cutensorMpCreateFolding(src.handle, ctypes.byref(op), src, dst, 2, indices, sizes)

    def execute(self) -> None:
        """``cutensorMpFold`` (collective)."""
        self._run(raw_mp.cutensorMpFold)


def parse_subscripts(subscripts: str) -> tuple[str, str, str]:
    """``"ik,kj->ij"`` -> ("ik", "kj", "ij"): two operands, an explicit output, letters only."""
    if not isinstance(subscripts, str) or "->" not in subscripts:
        raise ValueError(f"subscripts must be explicit ('ab,bc->ac'), got {subscripts!r}")
    inputs, out = subscripts.replace(" ", "").split("->")
    parts = inputs.split(",")
    if len(parts) != 2:
        raise ValueError(f"a distributed contraction takes two operands, got {len(parts)}")
    for p in (*parts, out):
        if not p.isalpha() or len(set(p)) != len(p):
            raise ValueError(
                f"{p!r} in {subscripts!r}: each operand is distinct letters (no '...', no "
                "repeated label)"
            )
    return parts[0], parts[1], out


def einsum(
    subscripts: str,
    a: DistributedTensor,
    b: DistributedTensor,
    *,
    out: DistributedTensor,
    **kw: Unpack[MpEinsumKeywords],
) -> ContractionPlan:
    """``out = alpha einsum(subscripts, a, b) + beta out`` over distributed tensors; returns the
    plan (reuse it with :meth:`ContractionPlan.execute` for the same tensors). ``alpha`` and
    ``beta``: :class:`MpScalarKeywords`, passed on to :meth:`ContractionPlan.execute`;
    ``compute_type`` and ``preference``: :class:`MpContractionKeywords`, passed on to
    :class:`ContractionPlan`."""
    keywords = take_keywords("einsum", kw, _EINSUM)  # as Python would: before anything
    alpha, beta = keywords.pop("alpha"), keywords.pop("beta")
    ma, mb, mc = parse_subscripts(subscripts)
    plan = ContractionPlan(a, ma, b, mb, out, mc, **keywords)
    plan.execute(alpha, beta)
    return plan


# ContractionPlan.execute declares the scalars and their defaults, ContractionPlan the contraction
# keywords and theirs; einsum takes both lists.
_EINSUM = {
    **keyword_defaults(ContractionPlan.execute, MpScalarKeywords.__annotations__),
    **keyword_defaults(ContractionPlan.__init__, MpContractionKeywords.__annotations__),
}
show_keywords(globals(), (ContractionPlan.execute, ContractionPlan.__init__), MpEinsumKeywords)


def _rooted_like(
    tensor_or_handle: Any, extents: Sequence[int], dtype: Any, root: int
) -> DistributedTensor:
    handle = tensor_or_handle if isinstance(tensor_or_handle, MpHandle) else tensor_or_handle.handle
    if not 0 <= root < handle.size:
        raise ValueError(f"root must be a rank from 0 to {handle.size - 1}, got {root}")
    return DistributedTensor(
        handle, extents, dtype, ranks_per_mode=(1,) * len(extents), nranks=1, ranks=(root,)
    )


def _synchronize(handle: MpHandle) -> None:

    get_device(handle.device_id).sync()


def gather(tensor: DistributedTensor, root: int = 0) -> np.ndarray | None:
    """The whole tensor as a NumPy array on ``root`` (None elsewhere): a redistribution to a
    layout that only ``root`` holds. Collective; for tests and small data."""
    whole = _rooted_like(tensor, tensor.extents, tensor.dtype, root)
    plan: RedistributionPlan | None = None
    try:
        plan = RedistributionPlan(whole, tensor)
        plan.execute()
        # the plan ran on the handle's stream; the copy uses another. The plan and its workspace
        # are released only once it is done with them.
        _synchronize(tensor.handle)
        return whole.local_to_numpy() if tensor.handle.rank == root else None
    finally:
        if plan is not None:
            plan.close()
        whole.close()


def _root_agrees(handle: MpHandle, root: int, ok: bool) -> bool:
    """Whether ``root`` said ``ok``, on every rank: root's verdict, one element per rank in a
    tensor only root holds, redistributed to one element on each rank (scatter's own kind of
    redistribution). Collective: a check only the root can make (its array) then fails on every
    rank, where a root that raised alone left the others waiting in the next collective."""
    p = handle.size
    flag = _rooted_like(handle, (p,), np.float32, root)
    every: DistributedTensor | None = None
    plan: RedistributionPlan | None = None
    try:
        every = DistributedTensor(handle, (p,), np.float32, ranks_per_mode=(p,))
        if handle.rank == root:
            flag.local_from_numpy(np.full(p, 1.0 if ok else 0.0, dtype=np.float32))
        plan = RedistributionPlan(every, flag)
        plan.execute()
        _synchronize(handle)  # the verdict is read, and the plan freed, once it has arrived
        return bool(np.all(every.local_to_numpy() == 1.0))
    finally:
        if plan is not None:
            plan.close()
        if every is not None:
            every.close()
        flag.close()


def scatter(array: np.ndarray | None, like: DistributedTensor, root: int = 0) -> None:
    """Fill ``like`` from ``array``, a NumPy array given on ``root`` (ignored elsewhere): a
    redistribution from a layout that only ``root`` holds. Collective. An array the root refuses
    (not convertible to ``like``'s dtype, or not of its extents) raises ``ValueError`` on every
    rank: the root says so to the others first (a one-element-per-rank redistribution)."""
    handle = like.handle
    refusal = ""
    host: np.ndarray | None = None
    if handle.rank == root:
        try:
            host = np.asarray(array, dtype=like.dtype)
        except Exception as exc:  # whatever converting raises, the other ranks must hear of it
            refusal = f"array cannot be read as {np.dtype(like.dtype).name}: {exc!r}"
        else:
            if host.shape != like.extents:
                refusal = f"array has shape {host.shape}, the tensor {like.extents}"
    if not _root_agrees(handle, root, not refusal):
        raise ValueError(
            f"scatter: {refusal}"
            if refusal
            else f"scatter: the root (rank {root}) refused its array (its error says why)"
        )
    whole = _rooted_like(like, like.extents, like.dtype, root)
    plan: RedistributionPlan | None = None
    try:
        if host is not None:
            whole.local_from_numpy(host)
        plan = RedistributionPlan(like, whole)
        plan.execute()
        _synchronize(handle)  # ``whole`` and the plan are freed below: it must be done
    finally:
        if plan is not None:
            plan.close()
        whole.close()
