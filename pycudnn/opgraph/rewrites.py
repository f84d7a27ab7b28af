"""Equivalent descriptions of a graph that cuDNN has engines for, and advice when there is none.

cuDNN's engines accept fewer layouts than the operations allow. Two cases matter in practice
(measured on an H100 with cuDNN 9.19, and reproduced by deviceless planning with 9.27 and 9.28):

- **Pointwise-only graphs on channels-first (NCHW-packed) tensors** have no engine: the
  runtime-fusion engines refuse them with ``NOT_SUPPORTED_LAYOUT``, same shape or broadcast. But an
  elementwise operation does not care how the axes are named: the same memory described as a
  rank-3, row-major ``[outer, middle, inner]`` view (axes permuted into memory order, then adjacent
  axes merged) is planned by engine 1, ``[N, C, H*W] + [1, C, 1]`` included.
- **Matmul takes rank-3 operands only** (``[B, M, K] x [B, K, N]``): rank-4 operands are refused
  ("matmul tensor B invalid dimensions"). Batch dimensions that collapse into one stride (packed
  ``[3, 2, M, K]`` is ``[6, M, K]``) are folded; a broadcast across two batch dimensions
  (``[3, 1, ...] x [1, 2, ...]``) cannot be one stride, and :func:`advice` says so.

- **Reductions** have one engine (engine 1, measured deviceless for an H100 on cuDNN 9.19 and
  9.28, identical): a packed channels-last input (``fmt='NHWC'``/``'NDHWC'``) reduced to
  ``[1, C, 1, 1]`` or to all ones, with a float32 output (16-bit inputs plan with
  ``out_dtype='float32'``), for ``add``, ``min``, ``max`` and ``amax``. Any packed input whose kept
  axes are its innermost ones in memory is that case in disguise: ``[B, M, N] -> [1, 1, N]``, or NCHW
  ``-> [1, 1, 1, W]``, is the rank-4 channels-last ``[B*M, N, 1, 1] -> [1, N, 1, 1]`` (planned by
  engine 1), and a reduction to all ones is ``[total, 1, 1, 1]``. NCHW reduced to ``[1, C, 1, 1]``
  keeps a middle axis and has no such description: :func:`advice` says what plans instead.

A rewrite changes only the dims and strides cuDNN is shown (``views``: uid -> (dims, strides));
unique ids and data pointers stay, so a plan for the rewritten description executes with the
graph's own arrays. Planning tries the graph as described first and a rewrite only when that has
no engine, and the planning report says which description was planned.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from _nvbind.dtypes import dtype_name

from .common import _dims_text

if TYPE_CHECKING:  # pragma: no cover
    from .core import GraphCore as Graph
    from .tensors import Tensor

__all__ = ["Variant", "advice", "variants"]

View = tuple[tuple[int, ...], tuple[int, ...]]


@dataclasses.dataclass(frozen=True)
class Variant:
    """An equivalent description of a graph's tensors: ``views`` maps uid -> (dims, strides)."""

    name: str
    views: dict[int, View]
    note: str

    def describe(self) -> str:
        return self.note


def _row_major(dims: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def _mergeable(tensors: Sequence[Tensor], shape: Sequence[int], outer: int, inner: int) -> bool:
    """Can axes ``outer`` and ``inner`` (adjacent in memory order) become one axis for every
    tensor? Each tensor must either broadcast over both, or span both with
    ``stride[outer] == stride[inner] * extent[inner]`` (virtual tensors have no memory: only their
    broadcast pattern counts)."""
    for t in tensors:
        b_outer = t.dims[outer] == 1 and shape[outer] != 1
        b_inner = t.dims[inner] == 1 and shape[inner] != 1
        if b_outer != b_inner:
            return False
        if not (b_outer or t.is_virtual) and t.strides[outer] != t.strides[inner] * shape[inner]:
            return False
    return True


def _fold(
    tensors: Sequence[Tensor], groups: list[list[int]], shape: Sequence[int]
) -> dict[int, View]:
    """Views of ``tensors`` with each group of axes (outer to inner) merged into one axis."""
    views: dict[int, View] = {}
    for t in tensors:
        dims = tuple(
            1 if all(t.dims[a] == 1 for a in g) else math.prod(shape[a] for a in g) for g in groups
        )
        packed = _row_major(dims)
        strides = tuple(
            packed[k] if (t.is_virtual or dims[k] == 1) else t.strides[g[-1]]
            for k, g in enumerate(groups)
        )
        views[t.uid] = (dims, strides)
    return views


def _groups(
    tensors: Sequence[Tensor], shape: Sequence[int], axes: Sequence[int]
) -> list[list[int]]:
    groups: list[list[int]] = []
    for a in axes:
        if groups and _mergeable(tensors, shape, groups[-1][-1], a):
            groups[-1].append(a)
        else:
            groups.append([a])
    return groups


def _pad_to_rank3(views: dict[int, View]) -> dict[int, View]:
    out = {}
    for uid, (dims, strides) in views.items():
        extra = 3 - len(dims)
        if extra < 0:
            raise AssertionError("a folded view has more than 3 dims")
        top = (dims[0] * strides[0]) if dims else 1
        out[uid] = ((1,) * extra + dims, (top,) * extra + strides)
    return out


def _pointwise_variant(graph: Graph) -> Variant | None:
    tensors = list(graph._tensors)
    rank = tensors[0].ndim
    if any(t.ndim != rank for t in tensors):
        return None
    shape = tuple(max(t.dims[i] for t in tensors) for i in range(rank))
    if any(d not in (1, n) for t in tensors for d, n in zip(t.dims, shape, strict=True)):
        # Operations of other extents (joined through a broadcast input, or apart): no one
        # shape to fold, and folding to the largest describes a smaller tensor as a larger one
        # (reads and writes past its memory).
        return None
    ref = next((t for t in tensors if not t.is_virtual and t.dims == shape), None)
    if ref is None:
        return None
    # Memory order of the reference tensor, outermost first; size-1 axes carry nothing.
    axes = sorted((i for i in range(rank) if shape[i] != 1), key=lambda i: (-ref.strides[i], i))
    groups = _groups(tensors, shape, axes)
    if len(groups) > 3 or not groups:
        return None
    views = _pad_to_rank3(_fold(tensors, groups, shape))
    if all(views[t.uid] == (t.dims, t.strides) for t in tensors):
        return None
    ref_dims = views[ref.uid][0]
    return Variant(
        "rank3",
        views,
        f"elementwise graph described as a rank-3 row-major view {_dims_text(ref_dims)} "
        f"of its {_dims_text(shape)} tensors (same memory, axes merged in memory order)",
    )


def _matmul_variant(graph: Graph) -> Variant | None:
    tensors = list(graph._tensors)
    rank = tensors[0].ndim
    if rank <= 3 or any(t.ndim != rank for t in tensors):
        return None
    shape = tuple(max(t.dims[i] for t in tensors) for i in range(rank))
    if any(t.dims[a] not in (1, shape[a]) for t in tensors for a in range(rank - 2)):
        # Products of other batch extents (two matmuls sharing a broadcast operand): folding to
        # the largest describes a smaller batch as a larger one (past the tensor's memory).
        return None
    batch = [a for a in range(rank - 2) if shape[a] != 1]
    groups = _groups(tensors, shape, batch) if batch else []
    if len(groups) > 1:
        return None
    groups = (groups or [[0]]) + [[rank - 2], [rank - 1]]
    # Matrix axes keep their own extents (M, K, N differ between operands).
    views: dict[int, View] = {}
    for t in tensors:
        b = 1 if all(t.dims[a] == 1 for a in groups[0]) else math.prod(shape[a] for a in groups[0])
        dims = (b, t.dims[-2], t.dims[-1])
        packed = _row_major(dims)
        bstride = packed[0] if (t.is_virtual or b == 1) else t.strides[groups[0][-1]]
        strides = (
            bstride,
            packed[1] if t.is_virtual else t.strides[-2],
            packed[2] if t.is_virtual else t.strides[-1],
        )
        views[t.uid] = (dims, strides)
    return Variant(
        "batch-folded",
        views,
        f"matmul batch dims {_dims_text(shape[:-2])} folded into one (cuDNN's matmul takes "
        "rank-3 operands)",
    )


_REDUCTION_OPS = frozenset({"ADD", "MIN", "MAX", "AMAX"})  # engine 1 plans these (9.19, 9.28)


def _packed_order(t: Tensor) -> list[int] | None:
    """``t``'s axes (size 1 left out) outermost first, when its memory is packed; else None."""
    axes = sorted((i for i in range(t.ndim) if t.dims[i] != 1), key=lambda i: (-t.strides[i], i))
    expected = 1
    for a in reversed(axes):
        if t.strides[a] != expected:
            return None
        expected *= t.dims[a]
    return axes


def _reduction_variant(graph: Graph) -> Variant | None:
    """A lone reduction whose kept axes are the input's innermost (packed) ones, described as
    the rank-4 channels-last reduction engine 1 plans: ``[outer, inner, 1, 1] -> [1, inner, 1, 1]``
    (``[outer, 1, 1, 1] -> [1, 1, 1, 1]`` when everything is reduced)."""
    if len(graph._ops) != 1:
        return None
    op = graph._ops[0]
    x, y = op.inputs["x"], op.outputs["y"]
    if x.is_virtual or y.is_virtual:
        return None
    x_order, y_order = _packed_order(x), _packed_order(y)
    if x_order is None or y_order is None:
        return None
    kept = [a for a in x_order if y.dims[a] != 1]
    # The kept axes must be x's innermost ones, in the same memory order in y.
    if x_order[len(x_order) - len(kept) :] != kept or y_order != kept:
        return None
    inner = math.prod(x.dims[a] for a in kept)
    outer = math.prod(x.dims) // inner
    views: dict[int, View]
    if kept:
        views = {
            x.uid: ((outer, inner, 1, 1), (inner, 1, inner, inner)),
            y.uid: ((1, inner, 1, 1), (inner, 1, inner, inner)),
        }
    else:
        views = {x.uid: ((outer, 1, 1, 1), (1, 1, 1, 1)), y.uid: ((1, 1, 1, 1), (1, 1, 1, 1))}
    if all(views[t.uid] == (t.dims, t.strides) for t in (x, y)):
        return None
    return Variant(
        "reduction-nhwc",
        views,
        f"reduction {_dims_text(x.dims)} -> {_dims_text(y.dims)} described as the channels-last "
        f"{_dims_text(views[x.uid][0])} -> {_dims_text(views[y.uid][0])} (same memory: the kept "
        "axes are the innermost)",
    )


def variants(graph: Graph) -> list[Variant]:
    """Equivalent descriptions to try when the graph as described has no engine (maybe none)."""
    kinds = {op.kind for op in graph._ops}
    found: Variant | None = None
    if any("axis" in op.attrs for op in graph._ops):
        # an axis names a dim of the graph as described (GEN_INDEX counts along it): a view
        # that merges or moves dims would count along another
        return []
    if kinds == {"pointwise"}:
        found = _pointwise_variant(graph)
    elif "matmul" in kinds and kinds <= {"matmul", "pointwise"}:
        found = _matmul_variant(graph)
    elif kinds == {"reduction"}:
        found = _reduction_variant(graph)
    return [found] if found is not None else []


def _channels_first(t: Tensor) -> bool:
    # Channel axis (1) not the innermost of the spatial/channel axes: NCHW-like.
    if t.ndim < 4 or t.dims[1] == 1 or t.is_virtual:
        return False
    return any(t.strides[1] > t.strides[a] for a in range(2, t.ndim) if t.dims[a] != 1)


def advice(graph: Graph) -> list[str]:
    """What would work instead, for a graph that has no engine (from what has been measured)."""
    kinds = {op.kind for op in graph._ops}
    tensors = [t for t in graph._tensors if not t.is_virtual]
    out: list[str] = []
    if kinds == {"pointwise"} and any(_channels_first(t) for t in tensors):
        out.append(
            "cuDNN's fusion engines take elementwise graphs on channels-last tensors "
            "(fmt='NHWC'/'NDHWC') or on views that merge into rank-3 row-major ones; for NCHW "
            "broadcasts that do not merge, the legacy API (pycudnn.ops.op_tensor, add_tensor) "
            "takes NCHW"
        )
    if "matmul" in kinds and any(t.ndim > 3 for t in tensors):
        out.append(
            "cuDNN's matmul takes rank-3 operands [B, M, K] x [B, K, N]: batch dims are folded "
            "into one when every operand's batch dims merge into a single stride; a broadcast "
            "across two batch dims (e.g. [3, 1, M, K] x [1, 2, K, N]) cannot be, so loop over one "
            "of them or make the operand dense"
        )
    scaled = [
        op.name
        for op in graph._ops
        if op.kind == "pointwise" and {"alpha1", "alpha2"} & set(op.attrs)
    ]
    if scaled:
        out.append(
            f"cuDNN's fusion engines take pointwise alpha1/alpha2 of 1 only (measured on 9.19 and "
            f"9.28: `pointwise_op->getAlpha1() != 1.0`); for {', '.join(map(repr, scaled))}, "
            "multiply the input by a by-value scalar instead (g.mul(x, g.tensor([1, 1, 1], "
            "by_value=2.0))), which plans"
        )
    out.extend(_reduction_advice(graph))
    conv_first = any(
        op.kind in ("conv_fprop", "conv_dgrad", "conv_wgrad")
        and any(_channels_first(t) for t in (*op.inputs.values(), *op.outputs.values()))
        for op in graph._ops
    )
    if conv_first and len(graph._ops) > 1:
        out.append(
            "on Hopper, cuDNN 9.19 had no engine for NCHW convolutions fused with ReLU (they ran "
            "with a bias, or alone); describe the tensors channels-last (fmt='NHWC')"
        )
    return out


def _reduction_advice(graph: Graph) -> list[str]:
    """What plans for a reduction (measured deviceless for an H100, cuDNN 9.19 and 9.28: engine 1
    only, and only in the form the module docstring gives)."""
    out: list[str] = []
    # Only a lone reduction: none fused after a matmul or a convolution planned in the forms tried.
    if len(graph._ops) == 1 and graph._ops[0].kind == "reduction":
        op = graph._ops[0]
        x, y = op.inputs["x"], op.outputs["y"]
        wrong: list[str] = []
        kept = [a for a in range(x.ndim) if y.dims[a] != 1 and x.dims[a] != 1]
        channels_last = _packed_order(x) is not None and x.ndim >= 4 and not _channels_first(x)
        layout_ok = (channels_last and kept in ([], [1])) or _reduction_variant(graph) is not None
        if not layout_ok:
            wrong.append(
                "a packed channels-last input (fmt='NHWC'/'NDHWC') reduced to [1, C, 1, 1] or to "
                "all ones (or any packed input whose kept axes are its innermost in memory, which "
                "planning describes that way itself)"
            )
        ydt = y.element_type if y.element_type is not None else x.element_type
        if ydt is not None and ydt != "float32":
            wrong.append(f"out_dtype='float32' (the output is {dtype_name(ydt)})")
        name = getattr(op.attrs.get("op"), "name", str(op.attrs.get("op")))
        if name not in _REDUCTION_OPS:
            wrong.append(f"op add, min, max or amax (not {name.lower()})")
        if wrong:
            out.append(
                f"cuDNN's one reduction engine (engine 1; measured for an H100 with 9.19 and 9.28) "
                f"plans {op.name!r} given " + "; and ".join(wrong) + ". Otherwise "
                "pycudnn.ops.reduce_tensor (the legacy API) reduces any axes of NCHW tensors"
            )
    return out
