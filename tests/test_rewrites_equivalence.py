"""Property tests: every description :mod:`pycudnn.opgraph.rewrites` gives is the graph itself.

A plan for a rewritten description executes with the graph's own arrays, so a view that is not
exactly equivalent makes the GPU compute a wrong result without a word. These tests prove the
equivalence on the CPU, for many seeded random graphs of each rule (rank-3 elementwise views,
batch-folded matmuls, channels-last reductions): every tensor gets one flat NumPy buffer; the graph
is computed with NumPy once through the graph's own (dims, strides) and once through the variant's
views of the SAME buffers (elementwise with NumPy broadcasting, ``np.matmul``, the reduction over
the axes the output has as 1), and

- each view addresses exactly the elements its tensor does (the same set of offsets, never one
  outside the tensor's own span),
- every intermediate has the dims its view says (broadcasts broadcast the same way),
- the output buffers, padding included, are identical element for element, and no input buffer
  is written.

Layouts: packed NCHW/NHWC-like orders, random axis orders (per tensor too), padded strides,
overlapping input strides, matrices row- or column-major with a batch dim between them; broadcast
operands ([1, C, 1, 1], [N, 1, H, W], all ones, by-value scalars), broadcast intermediates, broadcast
batch dims, a matmul's prologue and epilogue, graphs whose operations have different extents. Values are small integers in float64, so every result is
exact and a difference is a wrong element, not rounding. The rules' refusals (no variant where no
equivalent description exists) are checked by an exhaustive oracle for reductions and by cases for
the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pycudnn.graph import Graph
from pycudnn.opgraph import rewrites
from pycudnn.opgraph.common import GraphError

CASES = 800  # per rule: about a second each

# -- memory --------------------------------------------------------------------------------------


def offsets(dims: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """The element offset of every logical index of a (dims, strides) description."""
    off = np.zeros(dims, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * len(dims)
        shape[axis] = d
        off = off + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return off


def strided(buf: np.ndarray, dims: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """``buf`` seen as (dims, strides); refused where it would reach outside ``buf``
    (as_strided itself checks nothing)."""
    off = offsets(dims, strides)
    assert off.min() >= 0 and off.max() < buf.size, f"{dims} {strides} leaves its buffer"
    return np.lib.stride_tricks.as_strided(buf, dims, [s * buf.itemsize for s in strides])


def layout(
    rng: np.random.Generator, dims: list[int], order: list[int], *, pad: bool = False
) -> tuple[int, ...]:
    """Strides with the axes in ``order`` (outermost first), packed or with random gaps."""
    strides = [0] * len(dims)
    acc = 1
    for a in reversed(order):
        strides[a] = acc
        acc = acc * dims[a] + (int(rng.integers(1, 3)) if pad and rng.random() < 0.5 else 0)
    return tuple(strides)


def overlapping(rng: np.random.Generator, dims: list[int]) -> tuple[int, ...]:
    """Positive strides that may alias elements (an input may be such a view)."""
    return tuple(int(rng.integers(1, 4)) for _ in dims)


def any_order(rng: np.random.Generator, rank: int) -> list[int]:
    kind = rng.integers(3)
    if kind == 0:
        return list(range(rank))  # NCHW-like (row-major)
    if kind == 1:
        return [0, *range(2, rank), 1]  # NHWC-like
    return [int(a) for a in rng.permutation(rank)]


# -- computing a graph through a description -------------------------------------------------------

View = tuple[tuple[int, ...], tuple[int, ...]]

_POINTWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "ADD": np.add,
    "SUB": np.subtract,
    "MUL": np.multiply,
    "MAX": np.maximum,
    "MIN": np.minimum,
}
_REDUCE: dict[str, Callable[..., np.ndarray]] = {
    "ADD": np.sum,
    "MUL": np.prod,
    "MIN": np.min,
    "MAX": np.max,
    "AMAX": lambda x, axis, keepdims: np.max(np.abs(x), axis=axis, keepdims=keepdims),
}


def compute(g: Graph, view: Callable[[Any], View], bufs: dict[int, np.ndarray]) -> None:
    """Run ``g``'s operations with NumPy, every tensor seen through ``view`` (writes ``bufs``)."""
    values: dict[int, np.ndarray] = {}

    def read(t: Any) -> np.ndarray:
        if t.uid in values:
            return values[t.uid]
        if t.by_value:
            return np.full(view(t)[0], float(t.value))
        return strided(bufs[t.uid], *view(t))

    for op in g._ops:
        ins = {role: read(t) for role, t in op.inputs.items()}
        (out,) = op.outputs.values()
        if op.kind == "pointwise":
            res = _POINTWISE[op.attrs["mode"].name](ins["x"], ins["b"])
        elif op.kind == "matmul":
            res = np.matmul(ins["a"], ins["b"])
        else:
            xd, yd = view(op.inputs["x"])[0], view(out)[0]
            axes = tuple(i for i, (a, b) in enumerate(zip(xd, yd, strict=True)) if a != b)
            res = _REDUCE[op.attrs["op"].name](ins["x"], axis=axes, keepdims=True)
        assert res.shape == view(out)[0], f"{op.name} gives {res.shape}, its view {view(out)[0]}"
        if out.is_virtual:
            values[out.uid] = res
        else:
            strided(bufs[out.uid], *view(out))[...] = res


def assert_equivalent(g: Graph, variant: rewrites.Variant, rng: np.random.Generator) -> None:
    tensors = list(g._tensors)
    assert set(variant.views) == {t.uid for t in tensors}
    stored = [t for t in tensors if not t.is_virtual and not t.by_value]
    for t in stored:
        # the same elements, none outside the tensor's own memory
        dims, strides = variant.views[t.uid]
        assert len(dims) == len(strides)
        assert min(strides) > 0
        own = np.unique(offsets(t.dims, t.strides))
        seen = np.unique(offsets(dims, strides))
        assert np.array_equal(own, seen), f"{t.name}: {t.dims} {t.strides} -> {dims} {strides}"
    bufs = {}
    for t in stored:
        size = int(offsets(t.dims, t.strides).max()) + 1
        if t.is_output:
            bufs[t.uid] = -0.5 - np.arange(size, dtype=np.float64)  # padding stays visible
        else:
            bufs[t.uid] = rng.integers(-9, 10, size).astype(np.float64)
    want = {u: b.copy() for u, b in bufs.items()}
    got = {u: b.copy() for u, b in bufs.items()}
    compute(g, lambda t: (t.dims, t.strides), want)
    compute(g, lambda t: variant.views[t.uid], got)
    for t in stored:
        np.testing.assert_array_equal(got[t.uid], want[t.uid], err_msg=t.name)
        if not t.is_output:
            np.testing.assert_array_equal(got[t.uid], bufs[t.uid], err_msg=t.name)


def the_variant(g: Graph) -> rewrites.Variant | None:
    g._resolve()  # decides which intermediates are virtual, as planning does first
    found = rewrites.variants(g)
    assert len(found) <= 1
    return found[0] if found else None


# -- elementwise graphs: the rank-3 row-major view -----------------------------------------------


def pointwise_graph(rng: np.random.Generator) -> Graph:
    rank = int(rng.integers(3, 6))
    shape = [int(rng.choice([1, 2, 3, 4])) for _ in range(rank)]
    order = any_order(rng, rank)
    g = Graph("pw")

    def operand(name: str, dims: list[int], *, out: bool = False) -> Any:
        own = order if rng.random() < 0.75 else [int(a) for a in rng.permutation(rank)]
        if not out and rng.random() < 0.1:
            strides = overlapping(rng, dims)
        else:
            strides = layout(rng, dims, own, pad=rng.random() < 0.3)
        return g.tensor(dims, strides, name=name)

    def pattern() -> list[int]:
        kind = rng.integers(4)
        if kind == 0:  # [1, C, 1, 1]
            return [d if i == 1 else 1 for i, d in enumerate(shape)]
        if kind == 1:  # [N, 1, H, W]
            return [1 if i == 1 else d for i, d in enumerate(shape)]
        if kind == 2:
            return [1] * rank
        return [d if rng.random() < 0.5 else 1 for d in shape]

    modes = list(_POINTWISE)
    n = int(rng.integers(2, 5))
    if rng.random() < 0.3:  # a broadcast intermediate: [1, C, 1, 1] * [1, C, 1, 1] first
        p = pattern()
        y = g.pointwise(str(rng.choice(modes)), operand("p0", p), operand("p1", p))
    else:
        y = operand("x0", shape)
    for i in range(1, n):
        if rng.random() < 0.1:  # a by-value scalar
            other = g.scalar(float(rng.integers(-3, 4)), rank=rank, name=f"x{i}")
        else:
            other = operand(f"x{i}", shape if rng.random() < 0.3 else pattern())
        first, second = (y, other) if rng.random() < 0.5 else (other, y)
        last = i == n - 1
        out = None
        if last and rng.random() < 0.5:
            dims = [max(a, b) for a, b in zip(first.dims, second.dims, strict=True)]
            out = operand("y", dims, out=True)
        y = g.pointwise(str(rng.choice(modes)), first, second, out=out)
        if not last and rng.random() < 0.3:
            y.set_output(True)
    if rng.random() < 0.15:
        # a second operation of other extents, joined through a broadcast input: the graph's
        # largest extents are not every tensor's
        k = int(rng.integers(rank))
        shared = g.tensor([1 if i == k else d for i, d in enumerate(shape)], name="shared")
        dims = list(shape)
        dims[k] = shape[k] + int(rng.integers(1, 3))
        g.add(shared, operand("z", dims)).set_output(True)
        g.add(shared, operand("z2", shape)).set_output(True)
    return g


def test_rank3_views_of_elementwise_graphs_compute_the_same() -> None:
    rng = np.random.default_rng(20240611)
    applied = 0
    for _ in range(CASES):
        g = pointwise_graph(rng)
        variant = the_variant(g)
        if variant is not None:
            assert all(len(d) == 3 for d, _ in variant.views.values())
            assert_equivalent(g, variant, rng)
            applied += 1
    assert applied >= CASES // 3, applied  # the rule was exercised, not only refused


def test_elementwise_operations_of_other_extents_are_not_folded_to_the_largest() -> None:
    """``a`` is [2, 3, 5, 6] and ``c`` [4, 3, 5, 6], both added to ``x`` [1, 3, 5, 6]: the view
    of the graph's largest extents described ``a`` (180 elements) as [1, 4, 90] (360)."""
    g = Graph("pw")
    x = g.tensor([1, 3, 5, 6], name="x")
    g.add(x, g.tensor([2, 3, 5, 6], name="a")).set_output(True)
    g.add(x, g.tensor([4, 3, 5, 6], name="c")).set_output(True)
    assert the_variant(g) is None


@pytest.mark.parametrize(
    ("dims", "strides", "b_dims"),
    [
        # NHWC with a [1, C, H, 1] operand: N, H, W, C alternate broadcast and not (4 groups)
        ([2, 3, 4, 5], (60, 1, 15, 3), [1, 3, 4, 1]),
        # NCHW with [N, 1, H, 1]: N | C | H | W
        ([2, 3, 4, 5], (60, 20, 5, 1), [2, 1, 4, 1]),
        # padded between every axis: nothing merges
        ([2, 3, 4, 5], (200, 50, 10, 1), [2, 3, 4, 5]),
    ],
)
def test_elementwise_graphs_without_a_rank3_view_get_none(
    dims: list[int], strides: tuple[int, ...], b_dims: list[int]
) -> None:
    g = Graph("pw")
    g.add(g.tensor(dims, strides, name="a"), g.tensor(b_dims, name="b")).set_output(True)
    assert the_variant(g) is None


def test_negative_and_zero_strides_never_reach_a_rule() -> None:
    g = Graph("pw")
    for strides in ([-20, 5, 1], [0, 5, 1]):
        with pytest.raises(GraphError, match="strides"):
            g.tensor([2, 4, 5], strides)


# -- matmul: batch dims folded into one ----------------------------------------------------------


def matmul_graph(rng: np.random.Generator) -> Graph:
    rank = int(rng.integers(4, 6))
    nb = rank - 2
    batch = [int(rng.choice([1, 2, 3])) for _ in range(nb)]
    m, k, n = (int(rng.integers(1, 5)) for _ in range(3))
    common = [int(a) for a in rng.permutation(nb)] if rng.random() < 0.3 else list(range(nb))
    g = Graph("mm")

    def bdims() -> list[int]:
        kind = rng.integers(3)
        if kind == 0:
            return list(batch)
        if kind == 1:
            return [1] * nb
        return [d if rng.random() < 0.5 else 1 for d in batch]

    def operand(name: str, dims: list[int], *, matrix: bool = True) -> Any:
        own = common if rng.random() < 0.8 else [int(a) for a in rng.permutation(nb)]
        inner = [rank - 2, rank - 1] if rng.random() < 0.6 else [rank - 1, rank - 2]
        order = own + inner
        if matrix and rng.random() < 0.15:  # a batch dim between the matrix dims ([M, B, K])
            order = [inner[0], *own, inner[1]]
        return g.tensor(dims, layout(rng, dims, order, pad=rng.random() < 0.3), name=name)

    a = operand("a", [*bdims(), m, k])
    if rng.random() < 0.2:  # a scaled A (virtual, row-major)
        s = operand("s", [*bdims(), 1, k])
        dims = [max(p, q) for p, q in zip(a.dims, s.dims, strict=True)]
        a = g.mul(a, s, out=g.tensor(dims, virtual=True, name="a_scaled"))
    b = operand("b", [*bdims(), k, n])
    out = None
    epilogue = rng.random() < 0.4
    if not epilogue and rng.random() < 0.5:
        dims = [max(p, q) for p, q in zip(a.dims[:-2], b.dims[:-2], strict=True)]
        out = operand("c", [*dims, m, n], matrix=False)
    c = g.matmul(a, b, out=out)
    if epilogue:
        bias = [*bdims(), m if rng.random() < 0.5 else 1, n if rng.random() < 0.5 else 1]
        g.add(c, operand("bias", bias, matrix=False))
    else:
        c.set_output(True)
    if rng.random() < 0.1:
        # a second product of other batch extents, sharing a broadcast A
        j = int(rng.integers(nb))
        a2 = g.tensor([1] * nb + [m, k], name="a2")
        dims = list(batch)
        dims[j] = batch[j] + int(rng.integers(1, 3))
        g.matmul(a2, operand("b2", [*dims, k, n])).set_output(True)
        g.matmul(a2, operand("b3", [*batch, k, n])).set_output(True)
    return g


def test_batch_folded_matmuls_compute_the_same() -> None:
    rng = np.random.default_rng(7031)
    applied = 0
    for _ in range(CASES):
        g = matmul_graph(rng)
        variant = the_variant(g)
        if variant is not None:
            assert all(len(d) == 3 for d, _ in variant.views.values())
            assert_equivalent(g, variant, rng)
            applied += 1
    assert applied >= CASES // 3, applied


def test_matmuls_of_other_batch_extents_are_not_folded_to_the_largest() -> None:
    """``b`` has batch [2, 3] and ``c`` [4, 3], both multiplied by a broadcast ``a``: the fold
    described ``b`` (6 matrices) as 12."""
    g = Graph("mm")
    a = g.tensor([1, 1, 4, 5], name="a")
    g.matmul(a, g.tensor([2, 3, 5, 6], name="b")).set_output(True)
    g.matmul(a, g.tensor([4, 3, 5, 6], name="c")).set_output(True)
    assert the_variant(g) is None


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # a broadcast across two batch dims
        (([3, 1, 4, 5], None), ([1, 2, 5, 6], None)),
        # a broadcast over one of two batch dims of the same operand
        (([3, 2, 4, 5], None), ([3, 1, 5, 6], None)),
        # batch dims transposed in memory ([2, 3] stored as [3, 2])
        (([3, 2, 4, 5], (20, 60, 5, 1)), ([3, 2, 5, 6], None)),
        # a gap between the batch dims
        (([3, 2, 4, 5], (50, 20, 5, 1)), ([3, 2, 5, 6], None)),
    ],
)
def test_batch_dims_that_are_not_one_stride_are_not_folded(a: Any, b: Any) -> None:
    g = Graph("mm")
    g.matmul(g.tensor(a[0], a[1], name="a"), g.tensor(b[0], b[1], name="b")).set_output(True)
    assert the_variant(g) is None
    assert any("rank-3 operands" in line for line in rewrites.advice(g))


# -- reductions: the channels-last [outer, inner, 1, 1] description ------------------------------


def reduction_graph(rng: np.random.Generator) -> Graph:
    rank = int(rng.integers(3, 6))
    dims = [int(rng.choice([1, 2, 3, 4])) for _ in range(rank)]
    order = any_order(rng, rank)
    g = Graph("red")
    roll = rng.random()  # overlapping, padded or packed
    strides = overlapping(rng, dims) if roll < 0.1 else layout(rng, dims, order, pad=roll < 0.25)
    x = g.tensor(dims, strides, name="x")
    if rng.random() < 0.6:  # kept axes innermost in memory: the case the rule describes
        n_kept = int(rng.integers(rank + 1))
        kept = set(order[rank - n_kept :])
    else:
        kept = {a for a in range(rank) if rng.random() < 0.5}
    out_dims = [d if a in kept else 1 for a, d in enumerate(dims)]
    out = None
    if rng.random() < 0.5:
        y_order = order if rng.random() < 0.7 else [int(a) for a in rng.permutation(rank)]
        out = g.tensor(out_dims, layout(rng, out_dims, y_order, pad=rng.random() < 0.2), name="y")
    op = str(rng.choice(list(_REDUCE))).lower()
    g.reduction(x, op=op, out_dims=out_dims, out=out).set_output(True)
    return g


def channels_last_exists(g: Graph) -> bool:
    """Oracle, by enumeration: is ``[outer, inner, 1, 1] -> [1, inner, 1, 1]`` (row-major) the same
    reduction? That is: x's elements are offsets 0..total-1 once each, y's 0..inner-1 once each,
    and every element of x sits at (its output's offset) + inner * (something)."""
    op = g._ops[0]
    x, y = op.inputs["x"], op.outputs["y"]
    xo, yo = offsets(x.dims, x.strides), offsets(y.dims, y.strides)
    total, inner = xo.size, yo.size
    if not np.array_equal(np.sort(xo, axis=None), np.arange(total)):
        return False
    if not np.array_equal(np.sort(yo, axis=None), np.arange(inner)):
        return False
    return bool(np.all(xo % inner == np.broadcast_to(yo, xo.shape)))


def is_channels_last(g: Graph) -> bool:
    """Is the reduction described as ``[outer, inner, 1, 1] -> [1, inner, 1, 1]`` already?"""
    op = g._ops[0]
    x, y = op.inputs["x"], op.outputs["y"]
    inner, total = int(np.prod(y.dims)), int(np.prod(x.dims))
    if inner == 1:
        return (x.dims, x.strides, y.dims, y.strides) == (
            (total, 1, 1, 1),
            (1,) * 4,
            (1,) * 4,
            (1,) * 4,
        )
    s = (inner, 1, inner, inner)
    return (x.dims, x.strides, y.dims, y.strides) == (
        (total // inner, inner, 1, 1),
        s,
        (1, inner, 1, 1),
        s,
    )


def test_channels_last_reductions_compute_the_same_and_exist_exactly_when_they_can() -> None:
    rng = np.random.default_rng(4242)
    applied = refused = 0
    for _ in range(CASES):
        g = reduction_graph(rng)
        variant = the_variant(g)
        if variant is None:
            # refused only where no such description exists, or the graph is that one already
            refused += 1
            assert not channels_last_exists(g) or is_channels_last(g), g.describe()
            continue
        assert channels_last_exists(g), g.describe()
        assert all(len(d) == 4 for d, _ in variant.views.values())
        assert_equivalent(g, variant, rng)
        applied += 1
    assert applied >= CASES // 4 and refused >= CASES // 4, (applied, refused)


@pytest.mark.parametrize(
    ("strides", "out_dims", "y_strides", "described"),
    [
        ((120, 15, 5, 1), [1, 1, 1, 5], None, True),  # packed, W kept (the control)
        ((120, 15, 5, 1), [1, 8, 1, 1], None, False),  # NCHW to [1, C, 1, 1]: C is a middle axis
        ((160, 20, 5, 1), [1, 1, 3, 5], None, False),  # padded between C and H
        ((120, 15, 5, 2), [1, 1, 1, 5], None, False),  # W not stride 1
        ((10, 5, 2, 1), [1, 1, 1, 5], None, False),  # overlapping
        ((120, 15, 5, 1), [1, 1, 3, 5], (1, 1, 1, 3), False),  # y stores [W, H]
        ((120, 15, 5, 1), [1, 1, 3, 5], (1, 1, 6, 1), False),  # y padded
    ],
)
def test_reductions_without_the_description_get_none(
    strides: tuple[int, ...], out_dims: list[int], y_strides: Any, described: bool
) -> None:
    g = Graph("red")
    out = g.tensor(out_dims, y_strides, name="y") if y_strides else None
    x = g.tensor([4, 8, 3, 5], strides, name="x")
    g.reduction(x, out_dims=out_dims, out=out).set_output(True)
    assert (the_variant(g) is not None) == described == channels_last_exists(g)
