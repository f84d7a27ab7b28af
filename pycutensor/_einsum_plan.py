"""The decomposition of an einsum into steps cuTENSOR can run: a pure function of the subscripts,
the operands' shapes and dtypes, and ``optimize``.

:func:`plan_einsum` turns an expression into an :class:`EinsumPlan`: a list of tensors (the
operands, views of them, intermediates and the output) and of the steps that produce them:

* :class:`Diagonal`: a label repeated within one operand (``ii``) becomes one dimension whose
  stride is the sum of the repeated ones: a strided view, no copy and no kernel;
* :class:`Cast`: an operand whose dtype is narrower than the result's (NumPy's
  :func:`numpy.result_type`, or ``dtype=``) is converted by a cuTENSOR permutation into an
  intermediate, and so is the result when ``out`` has a wider dtype;
* :class:`Reduce`: one tensor, summed over the labels its target lacks and permuted into the
  target's order (cuTENSOR's reduction, or a permutation when nothing is summed);
* :class:`Contract`: two tensors, summed over the labels the target lacks (cuTENSOR's contraction).

Operands are combined pairwise along a contraction path: ``optimize=False`` left to right,
``True``/``"greedy"``/``"optimal"`` (or ``(strategy, memory_limit)``) NumPy's
:func:`numpy.einsum_path`, any other string opt_einsum's strategy of that name (when installed),
or an explicit path as ``numpy.einsum_path`` (``["einsum_path", (0, 1), ...]``) or opt_einsum
(``[(0, 1), ...]``) return it. The plan needs no GPU: the tests run the same steps with NumPy
kernels and compare with :func:`numpy.einsum` on the whole expression.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._einsum_parse import EinsumSpec, parse_einsum

__all__ = [
    "Cast",
    "Contract",
    "Diagonal",
    "EinsumPlan",
    "PlanTensor",
    "Reduce",
    "diagonal_strides",
    "plan_einsum",
    "result_dtype",
]

#: The data types cuTENSOR computes einsum in (its contraction and reduction tables).
SUPPORTED_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
#: Exact widenings a cuTENSOR permutation performs (its type table), one hop each.
_WIDEN = {"float16": "float32", "float32": "float64", "complex64": "complex128"}


@dataclass(frozen=True)
class PlanTensor:
    """A tensor of a plan. ``role``: ``"operand"`` (the user's array), ``"view"`` (a diagonal of
    an operand: its memory, other strides), ``"intermediate"`` (packed, in a workspace) or
    ``"output"``. ``base``: for views, the operand whose memory they address."""

    labels: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    role: str
    base: int | None = None


@dataclass(frozen=True)
class Diagonal:
    """``target`` is the diagonal view of ``source``: target axis k walks the source axes
    ``axes[k]`` together (:func:`diagonal_strides`)."""

    source: int
    target: int
    axes: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Cast:
    """``target`` = ``source`` converted to ``target``'s dtype, in ``target``'s label order (a
    cuTENSOR permutation)."""

    source: int
    target: int


@dataclass(frozen=True)
class Reduce:
    """``target`` = ``source`` summed over the labels ``target`` lacks, in ``target``'s order."""

    source: int
    target: int


@dataclass(frozen=True)
class Contract:
    """``target`` = ``left`` times ``right``, summed over the labels ``target`` lacks."""

    left: int
    right: int
    target: int


Step = Diagonal | Cast | Reduce | Contract


@dataclass(frozen=True)
class EinsumPlan:
    """What :func:`pycutensor.einsum` runs, in order; the output is the last tensor. ``dtype``:
    the dtype computed in (the output's may be wider: ``out_dtype``)."""

    spec: EinsumSpec
    dtype: np.dtype
    tensors: tuple[PlanTensor, ...]
    steps: tuple[Step, ...]
    path: tuple[tuple[int, ...], ...]

    @property
    def output(self) -> int:
        return len(self.tensors) - 1


def diagonal_strides(strides: Sequence[int], axes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The strides of a diagonal view: each new axis steps along all of its source axes at once."""
    return tuple(sum(int(strides[a]) for a in group) for group in axes)


def result_dtype(dtypes: Sequence[Any], dtype: Any = None) -> np.dtype:
    """The dtype einsum computes in: NumPy's result type of the operands
    (:func:`numpy.result_type`), or ``dtype`` when given (each operand must cast to it safely, as
    NumPy's ``casting="safe"`` requires). Refused with a ``TypeError`` when cuTENSOR cannot
    compute in it (integers, bool, float128, ...)."""
    if not dtypes:
        raise ValueError("einsum needs at least one operand")
    result: np.dtype
    if dtype is not None:
        try:
            forced = np.dtype(dtype)
        except TypeError as e:
            raise TypeError(f"dtype={dtype!r} is not a dtype: {e}") from None
        for i, d in enumerate(dtypes):
            if not np.can_cast(d, forced, "safe"):
                raise TypeError(
                    f"operand {i} is {np.dtype(d).name}, which cannot be cast to "
                    f"dtype={forced.name} safely (NumPy's casting='safe')"
                )
        result, why = forced, "the dtype asked for"
    else:
        try:
            result = np.result_type(*dtypes)
        except TypeError as e:
            raise TypeError(f"einsum operands have no common dtype: {e}") from None
        why = "NumPy's result type"
    if result.name not in SUPPORTED_DTYPES:
        names = ", ".join(sorted({np.dtype(d).name for d in dtypes}))
        raise TypeError(
            f"einsum of {names} computes in {result.name} ({why}), not a cuTENSOR data type "
            f"einsum can compute in ({', '.join(SUPPORTED_DTYPES)}); cast the operands first"
        )
    return result


def _casts(dtype: np.dtype, target: np.dtype, what: str) -> list[np.dtype]:
    """The chain of exact widenings from ``dtype`` to ``target`` (each a permutation)."""
    chain: list[np.dtype] = []
    name = dtype.name
    while name != target.name:
        nxt = _WIDEN.get(name)
        if nxt is None:
            raise TypeError(
                f"{what} is {dtype.name} and must become {target.name}: cuTENSOR converts only "
                "float16 -> float32 -> float64 and complex64 -> complex128 (its permutation "
                f"table); cast {what} to {target.name} first"
            )
        name = nxt
        chain.append(np.dtype(name))
    return chain


def _out_casts(dtype: np.dtype, out_dtype: Any) -> list[np.dtype]:
    """The widenings from the computed result into ``out``'s dtype (NumPy's casting='safe')."""
    if out_dtype is None or np.dtype(out_dtype) == dtype:
        return []
    out = np.dtype(out_dtype)
    if not np.can_cast(dtype, out, "safe"):
        raise TypeError(
            f"out has dtype {out.name}, the result has {dtype.name}, which cannot be cast to "
            f"{out.name} safely (NumPy's casting='safe')"
        )
    return _casts(dtype, out, "the result")


# -- contraction paths --------------------------------------------------------------------------
def _left_to_right(n: int) -> list[tuple[int, ...]]:
    # the running result is appended last: "the first remaining with the last" walks left to right
    path: list[tuple[int, ...]] = [(0, 1)]
    return path + [(0, m - 1) for m in range(n - 1, 1, -1)]


def _check_path(path: Any, n: int) -> list[tuple[int, ...]]:
    if isinstance(path, (str, bytes)) or not isinstance(path, Sequence):
        raise TypeError(f"optimize must be a bool, a strategy name or a path, not {path!r}")
    steps = list(path)
    if steps and steps[0] == "einsum_path":  # numpy.einsum_path's first element
        steps = steps[1:]
    out: list[tuple[int, ...]] = []
    remaining = n
    for step in steps:
        if isinstance(step, (str, bytes)) or not isinstance(step, Sequence) or not step:
            raise ValueError(f"optimize path step {step!r} must be a non-empty tuple of indices")
        for i in step:
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
                raise ValueError(f"optimize path step {step!r} must hold ints")
            if not 0 <= i < remaining:
                raise ValueError(
                    f"optimize path step {tuple(step)} refers to tensor {i}, but {remaining} "
                    "remain at that point"
                )
        if len(set(step)) != len(step):
            raise ValueError(f"optimize path step {tuple(step)} names a tensor twice")
        out.append(tuple(int(i) for i in step))
        remaining -= len(step) - 1
    if remaining != 1:
        raise ValueError(
            f"optimize path {out} leaves {remaining} tensors; a path must combine all {n} into one"
        )
    return out


def _find_path(
    inputs: Sequence[tuple[str, ...]],
    shapes: Sequence[tuple[int, ...]],
    output: tuple[str, ...],
    optimize: Any,
) -> list[tuple[int, ...]]:
    n = len(inputs)
    if optimize is False or optimize is None:
        return _left_to_right(n) if n > 1 else []
    if not (optimize is True or isinstance(optimize, str) or _is_strategy_tuple(optimize)):
        return _check_path(optimize, n)
    if n <= 2:
        return _left_to_right(n) if n > 1 else []
    labels = sorted({x for t in (*inputs, output) for x in t})
    if len(labels) > len(string.ascii_letters):  # more labels than one-letter names: no path search
        return _left_to_right(n)
    symbol = dict(zip(labels, string.ascii_letters, strict=False))
    expr = ",".join("".join(symbol[x] for x in t) for t in inputs)
    expr += "->" + "".join(symbol[x] for x in output)
    strategy = "greedy" if optimize is True else optimize
    name = strategy[0] if isinstance(strategy, tuple) else strategy
    if name in ("greedy", "optimal"):
        # shapes only: broadcast views of one scalar, so no memory is touched
        arrays = [np.broadcast_to(np.zeros((), np.float64), s) for s in shapes]
        path = np.einsum_path(expr, *arrays, optimize=strategy)[0]
    else:
        try:
            import opt_einsum
        except ImportError:
            raise ValueError(
                f"optimize={optimize!r} is not a NumPy strategy (False, True, 'greedy', "
                "'optimal') and opt_einsum, which has more, is not installed"
            ) from None
        try:
            path, _ = opt_einsum.contract_path(expr, *shapes, shapes=True, optimize=strategy)
        except KeyError:
            raise ValueError(f"optimize={optimize!r} is not an opt_einsum strategy") from None
    return _check_path(path, n)


def _is_strategy_tuple(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)


# -- the plan ------------------------------------------------------------------------------------
def plan_einsum(
    subscripts: str,
    shapes: Sequence[Sequence[int]],
    dtypes: Sequence[Any],
    optimize: Any = "greedy",
    *,
    dtype: Any = None,
    out_dtype: Any = None,
) -> EinsumPlan:
    """Decompose an einsum into :class:`Diagonal`, :class:`Cast`, :class:`Reduce` and
    :class:`Contract` steps (see the module docstring). ``dtype``: compute in this dtype instead
    of NumPy's result type; ``out_dtype``: the dtype of ``out``, into which the result is cast
    (safely, as NumPy does). Raises ``ValueError``/``TypeError`` for what NumPy refuses and for
    dtypes cuTENSOR cannot compute or convert; needs no GPU."""
    if len(dtypes) != len(shapes):
        raise ValueError(f"{len(shapes)} shapes but {len(dtypes)} dtypes")
    spec = parse_einsum(subscripts, *shapes)
    dtype = result_dtype(dtypes, dtype)
    out_chain = _out_casts(dtype, out_dtype)
    tensors: list[PlanTensor] = [
        PlanTensor(labels, shape, np.dtype(dt), "operand")
        for labels, shape, dt in zip(spec.inputs, spec.shapes, dtypes, strict=True)
    ]
    steps: list[Step] = []

    def new(t: PlanTensor) -> int:
        tensors.append(t)
        return len(tensors) - 1

    current: list[int] = []
    for i, t in enumerate(list(tensors)):
        index = i
        if len(set(t.labels)) != len(t.labels):
            labels = tuple(dict.fromkeys(t.labels))
            axes = tuple(tuple(a for a, x in enumerate(t.labels) if x == label) for label in labels)
            shape = tuple(t.shape[group[0]] for group in axes)
            index = new(PlanTensor(labels, shape, t.dtype, "view", base=i))
            steps.append(Diagonal(i, index, axes))
        for step_dtype in _casts(t.dtype, dtype, f"operand {i}"):
            src = index
            index = new(PlanTensor(tensors[src].labels, tensors[src].shape, step_dtype,
                                   "intermediate"))  # fmt: skip
            steps.append(Cast(src, index))
        current.append(index)
    path = _find_path(
        [tensors[k].labels for k in current], [tensors[k].shape for k in current], spec.output,
        optimize,
    )  # fmt: skip
    pending = list(current)
    for step in path:
        chosen = [pending[i] for i in step]
        pending = [k for i, k in enumerate(pending) if i not in step]
        needed = set(spec.output).union(*(tensors[k].labels for k in pending))
        acc = chosen[0]
        if len(chosen) == 1:
            acc = _combine(tensors, steps, new, [acc], needed=needed, dtype=dtype)
        for j in range(1, len(chosen)):  # a step of three or more: pairwise, left to right
            later = needed.union(*(tensors[k].labels for k in chosen[j + 1 :]))
            acc = _combine(tensors, steps, new, [acc, chosen[j]], needed=later, dtype=dtype)
        pending.append(acc)
    (last,) = pending
    out = PlanTensor(spec.output, spec.output_shape, dtype, "output")
    if out_chain:
        # The result in its own dtype with the output's labels (summed if need be), then widened
        # into out; the last widening also puts the labels in the output's order.
        last = _combine(tensors, steps, new, [last], needed=set(spec.output), dtype=dtype)
        for k, hop in enumerate(out_chain):
            prev = tensors[last]
            if k == len(out_chain) - 1:
                target = new(PlanTensor(spec.output, spec.output_shape, hop, "output"))
            else:
                target = new(PlanTensor(prev.labels, prev.shape, hop, "intermediate"))
            steps.append(Cast(last, target))
            last = target
        return EinsumPlan(spec, dtype, tuple(tensors), tuple(steps), tuple(path))
    produced = steps[-1] if steps else None
    if (
        isinstance(produced, (Reduce, Contract))
        and produced.target == last
        and last == len(tensors) - 1
        and set(tensors[last].labels) == set(spec.output)
    ):
        # the last step writes the output directly, in the output's order
        tensors[last] = out
    else:
        target = new(out)
        steps.append(Reduce(last, target))
    return EinsumPlan(spec, dtype, tuple(tensors), tuple(steps), tuple(path))


def _combine(
    tensors: list[PlanTensor],
    steps: list[Step],
    new: Any,
    sources: list[int],
    *,
    needed: set[str],
    dtype: np.dtype,
) -> int:
    """One Reduce (one source) or Contract (two) into an intermediate keeping ``needed`` labels."""
    labels: list[str] = []
    extent: dict[str, int] = {}
    for k in sources:
        for label, n in zip(tensors[k].labels, tensors[k].shape, strict=True):
            seen = extent.get(label)
            if seen is None or seen == 1:  # size-1 broadcasting, as the parser checked it
                extent[label] = n
            if label in needed and label not in labels:
                labels.append(label)
    if len(sources) == 1 and tuple(labels) == tensors[sources[0]].labels:
        return sources[0]  # nothing to sum: no step
    shape = tuple(extent[x] for x in labels)
    target = new(PlanTensor(tuple(labels), shape, dtype, "intermediate"))
    if len(sources) == 1:
        steps.append(Reduce(sources[0], target))
    else:
        steps.append(Contract(sources[0], sources[1], target))
    return int(target)
