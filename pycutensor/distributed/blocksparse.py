"""Block-sparse tensors and contractions (cuTENSOR's ``cutensorCreateBlockSparseTensorDescriptor``
and ``cutensorCreateBlockSparseContraction``, in ``libcutensor`` since 2.3).

A :class:`BlockStructure` is the host-side description: each mode cut into sections (every block
in a section has that section's extent), and the list of non-zero blocks by section coordinates,
in the order their data pointers are passed. It checks what ``cutensor.h`` requires (at most 32
modes, coordinates inside the sections, the stride compatibility rule) and converts to and from
dense NumPy arrays, with no GPU. A :class:`BlockSparseTensor` adds the descriptor and one device
array per non-zero block (column-major unless strides are given); a
:class:`BlockSparseContractionPlan` contracts three of them, computing only the non-zero blocks of
``C`` (no fill-in). cuTENSOR needs a GPU for its handle, so descriptors and plans raise
:class:`DeviceRequiredError` without one, after the host checks.
"""

from __future__ import annotations

import bisect
import ctypes
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from _nvbind.arrays import array_view
from _nvbind.cuda import stream_handle
from _nvbind.device_array import DeviceArray
from _nvbind.memory import workspace
from _nvbind.resource import CResource
from _nvbind.strides import overlapping

from .. import _bindings as cb
from .. import raw
from ..handle import get_handle
from ..preference import default_preference
from ..tables import compute_type_name
from ..tensor import data_type_name, data_type_value, dtype_of_data_type
from ._common import (
    c_array,
    contraction_modes,
    int64s,
    int_tuple,
    require_gpu,
    scalar_array,
    workspace_preference_value,
)

__all__ = ["BlockSparseContractionPlan", "BlockSparseTensor", "BlockStructure"]

MAX_MODES = 32  # "Currently, a maximum of 32 modes is supported."
# "the only supported types are CUDA_C_64F, CUDA_C_32F, CUDA_R_64F, and CUDA_R_32F", each with the
# compute descriptor of its precision and scalars of its own type.
SUPPORTED = {"R_32F": "32F", "R_64F": "64F", "C_32F": "32F", "C_64F": "64F"}


def _seq(value: Any, name: str) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence, not {type(value).__name__}")
    return value


def _column_major(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in shape:
        strides.append(step)
        step *= n
    return tuple(strides)


@dataclass(frozen=True)
class BlockStructure:
    """Sections per mode and the non-zero blocks of a block-sparse tensor.

    ``sections[m]``: the extents of mode ``m``'s sections. ``blocks``: the section coordinate of
    each non-zero block, in the order of its data. ``strides``: None (each block contiguous,
    column-major) or one stride tuple per block, in elements.
    """

    sections: tuple[tuple[int, ...], ...]
    blocks: tuple[tuple[int, ...], ...]
    strides: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        sections = tuple(
            int_tuple(s, f"sections[{m}]", minimum=1)
            for m, s in enumerate(_seq(self.sections, "sections"))
        )
        if not 0 < len(sections) <= MAX_MODES:
            raise ValueError(f"sections must describe 1 to {MAX_MODES} modes, got {len(sections)}")
        for m, s in enumerate(sections):
            if not s:
                raise ValueError(f"sections[{m}] must list one or more section extents")
        blocks = tuple(
            int_tuple(b, f"blocks[{i}]", minimum=0)
            for i, b in enumerate(_seq(self.blocks, "blocks"))
        )
        if not blocks:
            raise ValueError("blocks must list at least one non-zero block")
        for i, b in enumerate(blocks):
            if len(b) != len(sections):
                raise ValueError(f"blocks[{i}] has {len(b)} coordinates for {len(sections)} modes")
            for m, c in enumerate(b):
                if not 0 <= c < len(sections[m]):
                    raise ValueError(
                        f"blocks[{i}][{m}] = {c} is outside mode {m}'s {len(sections[m])} sections"
                    )
        if len(set(blocks)) != len(blocks):
            dup = next(b for b in blocks if blocks.count(b) > 1)
            raise ValueError(f"blocks lists block {dup} twice; each non-zero block is listed once")
        strides = None
        if self.strides is not None:
            strides = tuple(
                int_tuple(st, f"strides[{i}]", minimum=1)
                for i, st in enumerate(_seq(self.strides, "strides"))
            )
            if len(strides) != len(blocks) or any(len(s) != len(sections) for s in strides):
                raise ValueError("strides must give one stride per mode for each block")
            # cutensor.h: the permutation that sorts the first block's strides must sort every
            # other block's strides too.
            order = sorted(range(len(sections)), key=lambda m: strides[0][m])
            for i, s in enumerate(strides):
                permuted = [s[m] for m in order]
                if permuted != sorted(permuted):
                    raise ValueError(
                        f"strides[{i}] = {list(s)} is not ordered like strides[0] = "
                        f"{list(strides[0])} (cuTENSOR's stride compatibility rule)"
                    )
        object.__setattr__(self, "sections", sections)
        object.__setattr__(self, "blocks", blocks)
        object.__setattr__(self, "strides", strides)

    @property
    def ndim(self) -> int:
        return len(self.sections)

    @property
    def extents(self) -> tuple[int, ...]:
        """The dense tensor's extents: the sum of each mode's sections."""
        return tuple(sum(s) for s in self.sections)

    def block_shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.sections[m][c] for m, c in enumerate(self.blocks[i]))

    def block_strides(self, i: int) -> tuple[int, ...]:
        return self.strides[i] if self.strides is not None else _column_major(self.block_shape(i))

    def block_slices(self, i: int) -> tuple[slice, ...]:
        """Where block ``i`` sits in the dense tensor."""
        out = []
        for m, c in enumerate(self.blocks[i]):
            start = sum(self.sections[m][:c])
            out.append(slice(start, start + self.sections[m][c]))
        return tuple(out)

    def nonzero_fraction(self) -> float:
        stored = sum(math.prod(self.block_shape(i)) for i in range(len(self.blocks)))
        return stored / math.prod(self.extents)

    def split(self, dense: np.ndarray) -> list[np.ndarray]:
        """The non-zero blocks of a dense array, each Fortran-ordered (cuTENSOR's default)."""
        if tuple(dense.shape) != self.extents:
            raise ValueError(f"dense has shape {tuple(dense.shape)}, the structure {self.extents}")
        return [np.asfortranarray(dense[self.block_slices(i)]) for i in range(len(self.blocks))]

    def assemble(self, blocks: Sequence[np.ndarray], dtype: Any = None) -> np.ndarray:
        """The dense array of ``blocks`` (zeros outside the non-zero blocks)."""
        if len(blocks) != len(self.blocks):
            raise ValueError(f"got {len(blocks)} blocks for a structure of {len(self.blocks)}")
        out = np.zeros(self.extents, dtype=dtype or np.result_type(*blocks))
        for i, b in enumerate(blocks):
            if tuple(b.shape) != self.block_shape(i):
                raise ValueError(f"block {i} has shape {b.shape}, not {self.block_shape(i)}")
            out[self.block_slices(i)] = b
        return out


def _handle(device: Any) -> Any:

    return get_handle(device)


class BlockSparseTensor(CResource):
    """``cutensorBlockSparseTensorDescriptor_t`` and one device array per non-zero block.

    ``blocks``: device arrays in the structure's order (each of its block's shape and dtype), or
    None to allocate them (column-major, uninitialised). :meth:`from_numpy` copies a dense array's
    non-zero blocks.
    """

    _kind = "block-sparse tensor descriptor"

    def __init__(
        self,
        structure: BlockStructure,
        dtype: Any = np.float32,
        *,
        blocks: Sequence[Any] | None = None,
        device: Any = None,
    ) -> None:
        if not isinstance(structure, BlockStructure):
            raise TypeError(f"structure must be a BlockStructure, not {type(structure).__name__}")
        self.data_type = data_type_name(dtype)
        if self.data_type not in SUPPORTED:
            raise TypeError(
                f"block-sparse tensors support {', '.join(SUPPORTED)} (cutensor.h), not "
                f"{self.data_type}"
            )
        self.dtype = dtype_of_data_type(self.data_type)
        self.structure = structure
        require_gpu("a block-sparse tensor descriptor (cutensorCreate)")
        self.handle = _handle(device)
        n = len(structure.blocks)
        s = structure
        desc = cb.cutensorBlockSparseTensorDescriptor_t()
        raw.cutensorCreateBlockSparseTensorDescriptor(
            self.handle, ctypes.byref(desc), s.ndim, n,
            c_array(ctypes.c_uint32, [len(x) for x in s.sections]),
            int64s([e for x in s.sections for e in x]),
            c_array(ctypes.c_int32, [c for b in s.blocks for c in b]),
            None if s.strides is None else int64s([v for st in s.strides for v in st]),
            data_type_value(self.data_type),
        )  # fmt: skip
        super().__init__(
            int(desc.value or 0), raw.cutensorDestroyBlockSparseTensorDescriptor,
            parents=(self.handle,),
        )  # fmt: skip
        self.blocks = self._blocks(blocks)

    def _blocks(self, blocks: Sequence[Any] | None) -> list[Any]:

        s = self.structure
        if blocks is None:
            return [
                DeviceArray.empty(
                    s.block_shape(i),
                    self.dtype,
                    device=self.handle.device_id,
                    strides=s.block_strides(i),
                )
                for i in range(len(s.blocks))
            ]
        if len(blocks) != len(s.blocks):
            raise ValueError(f"got {len(blocks)} block arrays for {len(s.blocks)} non-zero blocks")
        for i, b in enumerate(blocks):
            v = array_view(b, f"blocks[{i}]")
            if not v.is_device:
                raise ValueError(f"blocks[{i}] must be device memory")
            if v.shape != s.block_shape(i) or v.strides != s.block_strides(i):
                raise ValueError(
                    f"blocks[{i}] has shape {v.shape} and strides {v.strides}; the structure "
                    f"says {s.block_shape(i)} with strides {s.block_strides(i)}"
                )
            if v.dtype != self.dtype:
                raise TypeError(f"blocks[{i}] has dtype {v.dtype}, the tensor {self.dtype}")
        return list(blocks)

    @classmethod
    def from_numpy(
        cls, dense: np.ndarray, structure: BlockStructure, *, device: Any = None
    ) -> BlockSparseTensor:
        """The non-zero blocks of ``dense`` copied to the GPU (values elsewhere are dropped)."""
        out = cls(structure, dense.dtype, device=device)
        for arr, host in zip(out.blocks, structure.split(dense), strict=True):
            arr.copy_from_numpy(host)
        return out

    def to_numpy(self) -> np.ndarray:
        """The dense tensor (zeros outside the non-zero blocks)."""
        return self.structure.assemble([b.to_numpy() for b in self.blocks], self.dtype)

    def pointers(self) -> ctypes.Array[ctypes.c_void_p]:

        ptrs = [array_view(b, "block").ptr for b in self.blocks]
        return (ctypes.c_void_p * len(ptrs))(*ptrs)


def check_output_blocks(c: Sequence[Any], inputs: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Refuse output blocks that are read-only, that reach an element twice, that share memory
    with one another, or that an input block overlaps: cuTENSOR writes every element of every
    block of C, and requires its inputs not to overlap its output (a block array given twice
    would take two blocks' results)."""
    spans: list[tuple[int, int, int]] = []  # (lowest byte, one past the highest, block index)
    for i, block in enumerate(c):
        v = array_view(block, f"c.blocks[{i}]")
        if v.readonly:
            raise ValueError(f"c.blocks[{i}] is read-only, but the plan writes it")
        if overlapping(v.shape, v.strides):
            raise ValueError(
                f"c.blocks[{i}] has strides {v.strides} for shape {v.shape}, which reach some "
                "elements twice: each element of an output block needs its own address"
            )
        spans.append((*v.byte_range(), i))
    spans.sort()
    for (_, hi, i), (lo, _, j) in itertools.pairwise(spans):
        if lo < hi:
            raise ValueError(
                f"c.blocks[{i}] and c.blocks[{j}] share memory: each output block needs its own"
            )
    starts = [lo for lo, _, _ in spans]
    for name, blocks in inputs:
        for k, block in enumerate(blocks):
            v = array_view(block, f"{name}.blocks[{k}]")
            lo, hi = v.byte_range()
            # the output spans are disjoint and sorted: only the last starting below hi can meet it
            n = bisect.bisect_left(starts, hi)
            if n and spans[n - 1][1] > lo:
                raise ValueError(
                    f"{name}.blocks[{k}] overlaps c.blocks[{spans[n - 1][2]}] in memory: "
                    "cuTENSOR requires inputs not to overlap the output"
                )


def check_sections(
    tensors: Sequence[tuple[BlockStructure, tuple[int, ...]]],
) -> None:
    """cutensor.h: "For every mode, the segmentation of that mode must be identical in all tensors
    that it occurs in"."""
    seen: dict[int, tuple[int, ...]] = {}
    for structure, modes in tensors:
        for mode, sections in zip(modes, structure.sections, strict=True):
            if seen.setdefault(mode, sections) != sections:
                label = chr(mode) if 32 < mode < 127 else mode
                raise ValueError(
                    f"mode {label!r} is cut into sections {list(seen[mode])} in one tensor and "
                    f"{list(sections)} in another; a mode's sections must be identical everywhere"
                )


class BlockSparseContractionPlan(CResource):
    """``C = alpha A B + beta C`` over block-sparse tensors (``cutensorCreateBlockSparseContraction``,
    ``cutensorCreatePlan``), computing the non-zero blocks of ``C`` only; every tensor of one data
    type (``R_32F``, ``R_64F``, ``C_32F``, ``C_64F``), identity operators, D = C."""

    _kind = "block-sparse contraction plan"

    def __init__(  # noqa: PLR0917 - (tensor, modes) pairs in the order of C and einsum
        self,
        a: BlockSparseTensor,
        modes_a: Sequence[Any] | str,
        b: BlockSparseTensor,
        modes_b: Sequence[Any] | str,
        c: BlockSparseTensor,
        modes_c: Sequence[Any] | str,
        *,
        compute_type: Any = None,
        workspace_preference: str = "default",
    ) -> None:
        for name, t in (("a", a), ("b", b), ("c", c)):
            if not isinstance(t, BlockSparseTensor):
                raise TypeError(f"{name} must be a BlockSparseTensor, not {type(t).__name__}")
        ma, mb, mc = contraction_modes(
            [(a.structure.extents, modes_a, "modes_a"), (b.structure.extents, modes_b, "modes_b"),
             (c.structure.extents, modes_c, "modes_c")]
        )  # fmt: skip
        types = {a.data_type, b.data_type, c.data_type}
        if len(types) != 1:
            raise TypeError(
                "a block-sparse contraction needs one data type for A, B and C (cutensor.h), "
                f"got {a.data_type}, {b.data_type}, {c.data_type}"
            )
        compute = SUPPORTED[c.data_type]
        asked = compute_type_name(compute_type)
        if asked is not None and asked != compute:
            raise ValueError(
                f"a block-sparse contraction of {c.data_type} computes in {compute} (cutensor.h's "
                f"table), not {asked}"
            )
        check_sections([(a.structure, ma), (b.structure, mb), (c.structure, mc)])
        check_output_blocks(c.blocks, [("a", a.blocks), ("b", b.blocks)])
        ws_pref = workspace_preference_value(workspace_preference)
        self.handle = c.handle
        self.a, self.b, self.c = a, b, c
        self.scalar_dtype = c.dtype
        ident = int(cb.cutensorOperator_t.IDENTITY)
        i32 = ctypes.c_int32
        op = cb.cutensorOperationDescriptor_t()
        raw.cutensorCreateBlockSparseContraction(
            self.handle, ctypes.byref(op),
            a, c_array(i32, ma), ident, b, c_array(i32, mb), ident,
            c, c_array(i32, mc), ident, c, c_array(i32, mc),
            raw.compute_descriptor(compute),
        )  # fmt: skip
        # The handle's own default preference (cuTENSOR's defaults: algorithm DEFAULT, no JIT),
        # made once per handle: never NULL, which cuTENSOR 2.8's cutensorCreatePlan refuses.
        pref = default_preference(self.handle)
        plan = cb.cutensorPlan_t()
        try:
            estimate = ctypes.c_uint64()
            raw.cutensorEstimateWorkspaceSize(
                self.handle, op, pref, ws_pref, ctypes.byref(estimate)
            )
            raw.cutensorCreatePlan(self.handle, ctypes.byref(plan), op, pref, estimate.value)
        finally:
            raw.cutensorDestroyOperationDescriptor(op)
        super().__init__(
            int(plan.value or 0), raw.cutensorDestroyPlan, parents=(self.handle, pref, a, b, c)
        )
        required = ctypes.c_uint64()
        raw.cutensorPlanGetAttribute(
            self.handle, self, int(cb.cutensorPlanAttribute_t.PLAN_REQUIRED_WORKSPACE),
            ctypes.byref(required), ctypes.sizeof(required),
        )  # fmt: skip
        self.workspace_size = int(required.value)

    def execute(self, alpha: Any = 1.0, beta: Any = 0.0, *, stream: Any = None) -> None:
        """``cutensorBlockSparseContract`` on the tensors' block arrays (asynchronous)."""

        ws = workspace(self.workspace_size, device=self.handle.device_id, stream=stream)
        al = scalar_array(alpha, self.scalar_dtype, "alpha")
        be = scalar_array(beta, self.scalar_dtype, "beta")
        c_ptrs = self.c.pointers()
        raw.cutensorBlockSparseContract(
            self.handle, self, al.ctypes.data, self.a.pointers(), self.b.pointers(),
            be.ctypes.data, c_ptrs, c_ptrs, ws or None, self.workspace_size,
            stream_handle(stream),
        )  # fmt: skip
