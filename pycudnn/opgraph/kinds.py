"""What the operation families added for cuDNN's newer backend kinds share: the version gate
(a kind newer than the loaded cuDNN is refused before cuDNN sees it) and small operand checks."""

from __future__ import annotations

import numbers
from typing import Any

from _nvbind.dtypes import dtype_name
from _nvbind.ffi import UnsupportedByLibraryError, format_version
from _nvbind.lazy_numpy import numpy_types

from .. import _bindings
from .._lib import LIB
from .common import GraphError, _dims_text
from .tensors import Tensor

__all__ = ["kind_since", "require_kind"]


def kind_since(descriptor: str) -> tuple[int, int, int] | None:
    """The cuDNN version that introduced ``CUDNN_BACKEND_<descriptor>_DESCRIPTOR`` (from the
    headers' ``@since`` tags), e.g. ``kind_since("OPERATION_SOFTMAX") == (9, 20, 0)``."""
    return _bindings.ENUMERATOR_SINCE.get(f"CUDNN_BACKEND_{descriptor}_DESCRIPTOR")


def require_kind(
    descriptor: str,
    label: str,
    *,
    since: tuple[int, int, int] | None = None,
    loaded: tuple[int, int, int] | None = None,
) -> None:
    """Refuse an operation whose backend descriptor (or attribute, ``since``) is newer than the
    loaded cuDNN, naming the version it needs. ``loaded`` defaults to the loaded library's."""
    need = since or kind_since(descriptor)
    if need is None:
        return
    if loaded is None:
        if not LIB.lacks(need):  # every operation of a description asks: the quick test first
            return
        loaded = LIB.version
    if tuple(loaded) < tuple(need):
        raise UnsupportedByLibraryError(
            f"{label}: CUDNN_BACKEND_{descriptor}_DESCRIPTOR needs cuDNN >= "
            f"{format_version(need)}; the loaded cuDNN is {format_version(tuple(loaded))}"
        )


def _int_arg(value: Any, what: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int, not {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise GraphError(f"{what} is {v}; it must be >= {minimum}")
    return v


def _axis_arg(value: Any, ndim: int, what: str) -> int:
    a = _int_arg(value, what)
    if not -ndim <= a < ndim:
        raise GraphError(f"{what} {a} is out of range for rank {ndim}")
    return a % ndim


def _need_dtype(t: Tensor, kinds: str, label: str, role: str, rule: str) -> None:
    """Refuse an input whose dtype kind (``np.dtype.kind`` letters) is not among ``kinds``;
    ``f`` covers the ml_dtypes floats (bfloat16, fp8, fp4), whose NumPy kind is ``V``."""
    dt = t.element_type
    if dt is None:
        return
    kind = "f" if dt.kind == "V" and "float" in dtype_name(dt) else dt.kind
    if kind not in kinds:
        raise GraphError(f"{label}: {role} ('{t.name}') is {dt}; {rule}")


def _need_same_dtype(label: str, a: tuple[str, Tensor], b: tuple[str, Tensor], rule: str) -> None:
    """Refuse two inputs (role, tensor) whose dtypes, where both are known, differ; ``rule`` says
    why they must agree."""
    (ra, ta), (rb, tb) = a, b
    da, db = ta.element_type, tb.element_type
    if da is not None and db is not None and da != db:
        raise GraphError(
            f"{label}: {ra} ('{ta.name}') is {dtype_name(da)} but {rb} ('{tb.name}') is "
            f"{dtype_name(db)}; {rule}"
        )


def _need_dims(t: Tensor, dims: tuple[int, ...], label: str, role: str) -> None:
    if t.dims != dims:
        raise GraphError(
            f"{label}: {role} ('{t.name}') has dims {_dims_text(t.dims)} but must be "
            f"{_dims_text(dims)}"
        )


def _per_channel(x: Tensor) -> tuple[int, ...]:
    """Dims of a per-channel statistic of ``x``: ``[1, C, 1, ...]`` (C is dim 1)."""
    return (1, x.dims[1], *([1] * (x.ndim - 2)))


def _start(graph: Any, kind: str, name: str | None, descriptor: str) -> tuple[str, str]:
    """Name a new operation of one of the newer kinds and check the graph may still change.
    Returns ``(op_name, label)``.

    The version gate (``require_kind(descriptor, label)``) is not here: each method calls it
    after its operand checks and before it adds a tensor to the graph, so that a caller gets
    the same argument error on every cuDNN version, and a refused operation leaves the graph
    as it was."""
    del descriptor  # named at each call for the reader; gated later by the method
    op_name = graph._op_name(kind, name)
    label = f"{kind} '{op_name}'"
    graph._check_mutable()
    return op_name, label


def _scalar_or_tensor(
    graph: Any, value: Any, *, label: str, role: str, rank: int, dtype: str, name: str
) -> Tensor:
    """A by-value scalar for a number, or the caller's tensor (which must have all dims 1)."""
    if isinstance(value, Tensor):
        t: Tensor = graph._own(value, label, role)
        if any(d != 1 for d in t.dims):
            raise GraphError(
                f"{label}: {role} ('{t.name}') must have all dims 1, got {_dims_text(t.dims)}"
            )
        return t
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, *numpy_types("generic"))):
        raise TypeError(f"{label}: {role} must be a number or a Tensor, not {value!r}")
    scalar: Tensor = graph.scalar(
        value, dtype=dtype, rank=rank, name=graph._unique_name(None, name)
    )
    return scalar
