"""``pycutensor.einsum``: NumPy's einsum on device arrays, computed by cuTENSOR.

Semantics are :func:`numpy.einsum`'s: the subscripts string or the sublist form
(``einsum(a, [0, 1], b, [1, 2], [0, 2])``); implicit output (labels that appear once, in
alphabetical order, after the broadcast dimensions) or explicit ``->``; ``...`` broadcasting;
size-1 dimensions broadcast against larger ones; labels absent from the output summed; a label
repeated within one operand takes the diagonal (``ii->i``) and, when summed, the trace (``ii``);
NumPy's dtype promotion (:func:`numpy.result_type`), ``dtype=`` to compute in a wider type and
an ``out`` of the result's dtype or one it casts to safely (``casting="safe"``, NumPy's default).
The result is ``alpha * einsum(...) + beta * out`` (``beta`` needs ``out``). Unlike NumPy, the
result is always a new array (or ``out``), never a view of an operand.

How it runs (:mod:`._einsum_plan` decomposes the expression without a GPU; the CPU tests run the
same steps with NumPy kernels against ``numpy.einsum``):

* a diagonal is a strided view of the operand (the repeated dimensions walked together), no copy;
* an operand narrower than the result type is widened by a cuTENSOR permutation;
* one operand: a **permutation** (``ij->ji``, also a copy) or a **reduction** (``ij->i``, a trace);
* two operands: an **elementwise** product when nothing is summed, one operand already has the
  output's layout and ``beta`` is 0 (``ij,j->ij``); otherwise a **contraction**;
* more operands: pairwise contractions along the path ``optimize`` gives (default ``"greedy"``,
  :func:`numpy.einsum_path`'s; ``False`` is left to right, ``"optimal"`` NumPy's exhaustive
  search, any other string an opt_einsum strategy, or an explicit path as ``numpy.einsum_path``
  or opt_einsum return it), with the intermediates in one reusable workspace. The path changes
  the order of the arithmetic, not the result beyond rounding.

Data types cuTENSOR computes: float16, bfloat16, float32, float64, complex64, complex128. Refused
with ``TypeError`` before anything runs: integer and bool operands (cuTENSOR has no integer
contraction), a result type outside that list, mixed real and complex operands and bfloat16
mixed with another type (cuTENSOR's permutation cannot convert them; cast first), an ``out`` or
``dtype=`` that NumPy's ``casting="safe"`` refuses, or that only a real-to-complex conversion
would reach; ``beta`` other than 0 with an ``out`` wider than the result (``ValueError``: no
cuTENSOR operation widens while adding). A label of extent 0 that is summed raises
``ValueError`` (cuTENSOR has no empty tensors); an empty output is returned as it is.

Repeating a call is cheap: the program (descriptors, operations, plans, intermediate layout) is
cached in the handle (``handle=``, else the calling thread's own) under a key of the subscripts, shapes, strides, dtypes,
pointer alignments, ``optimize``, ``dtype``, compute type and whether ``beta`` is zero, so a
repeated call only inspects its arrays and executes. :func:`parse_einsum` does the parsing alone
and needs no GPU.

When ``out`` is not given, the result is allocated by the library of the first operand (CuPy,
PyTorch) on the device of the operands, or as a :class:`pycutensor.DeviceArray` otherwise; its
memory comes from that library's allocator, so pass ``stream`` = that library's current stream (or
``out``) when working on other streams.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from _nvbind.arrays import ArrayView, alignment_of, array_view
from _nvbind.cuda import stream_handle
from _nvbind.device_array import DeviceArray
from _nvbind.strides import overlapping as _overlapping

from ._einsum_build import (
    _Program,
    _table_allows,  # noqa: F401 - the tests check the elementwise route
    build_program,
)
from ._einsum_parse import EinsumSpec, parse_einsum, subscripts_from_sublists
from ._einsum_plan import plan_einsum, result_dtype
from .checks import check_device_view as _check_device_view
from .checks import coerce_scalar as _coerce_scalar
from .checks import span as _span
from .checks import table_scalar_dtype as _table_scalar_dtype
from .handle import check_handle_argument, handle_for
from .operations import compute_type_name
from .tensor import MAX_ALIGNMENT, data_type_name
from .tensor import check_pointer as _check_pointer

if TYPE_CHECKING:  # pragma: no cover
    from .handle import Handle

__all__ = ["EinsumSpec", "einsum", "parse_einsum"]


def _check_number(value: Any, name: str) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Number):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")


# -- output allocation ---------------------------------------------------------------------------
def _new_output(
    template: Any, shape: tuple[int, ...], dtype: np.dtype, device: int, stream: Any
) -> Any:
    module = type(template).__module__.split(".", 1)[0]
    if module == "torch":
        import torch

        # the result dtype (NumPy's promotion), which may be wider than the template's
        return torch.empty(shape, dtype=getattr(torch, dtype.name), device=template.device)
    if module == "cupy":
        import cupy

        if cupy.cuda.runtime.getDevice() == device:  # entering a Device context costs ~2 us
            return cupy.empty(shape, dtype=dtype)
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=dtype)

    return DeviceArray.empty(shape, dtype, device=device, stream=stream)


def _c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


def _optimize_key(optimize: Any) -> Any:
    if optimize is None or isinstance(optimize, (bool, str)):
        return optimize
    return repr(optimize)  # a path or (strategy, limit): its text identifies it


def einsum(
    subscripts: Any,
    *operands: Any,
    out: Any = None,
    dtype: Any = None,
    optimize: Any = "greedy",
    alpha: Any = 1.0,
    beta: Any = 0.0,
    compute_type: Any = None,
    stream: Any = None,
    handle: Handle | None = None,
) -> Any:
    """``alpha * numpy.einsum(subscripts, *operands) + beta * out``, on the GPU with cuTENSOR.

    ``subscripts``: NumPy's string, or the first operand of the sublist form
    (``einsum(a, [0, 1], b, [1, 2], [0, 2])``). ``operands``: device arrays (DLPack or
    ``__cuda_array_interface__``: CuPy, PyTorch, JAX, :class:`pycutensor.DeviceArray`) on one
    device; their dtypes promote as in NumPy (see the module docstring for the ones cuTENSOR
    cannot compute, which are refused). ``out``: a device array of the result's shape, of the
    result's dtype or one it casts to safely (it may not overlap an operand); ``beta`` other than
    0 needs it, with the result's dtype. ``dtype``: compute in this dtype (the operands must
    cast to it safely, as NumPy's ``casting="safe"``). ``optimize``: the
    contraction order for three operands or more (``"greedy"``, ``True``, ``"optimal"``,
    ``False``, an opt_einsum strategy, or an explicit path). ``compute_type``: a cuTENSOR compute
    descriptor name (``"32F"``, ``"TF32"``, ``"3XTF32"``, ``"16BF"``, ``"16F"``, ``"64F"``, ...);
    the default follows the data type (32F for 16-bit and 32-bit data, 64F for doubles).
    ``stream``: the stream to run on (None: the legacy default stream). ``handle``: the
    :class:`~pycutensor.Handle` to plan and execute with, bound to the operands' device (share one
    between threads to share its caches); None: the calling thread's own
    (:func:`~pycutensor.get_handle`). Returns ``out``, or a new array. The work is done by
    ``cutensorPermute``, ``cutensorReduce``, ``cutensorContract`` and
    ``cutensorElementwiseBinaryExecute``.
    """
    if not isinstance(subscripts, str):
        subscripts, operand_list = subscripts_from_sublists((subscripts, *operands))
        operands = tuple(operand_list)
    if not operands:
        raise ValueError("einsum needs at least one operand")
    check_handle_argument(handle)
    stream_ptr = stream_handle(stream)
    views, out_view, beta_zero, out_align, key = _inspect(
        subscripts, operands, out, stream_ptr, compute_type, beta, optimize, dtype
    )
    device = views[0].device_id
    given = handle
    program: _Program | None = None
    same = device >= 0 and (out_view is None or out_view.device_id == device)
    for v in views:
        same = same and v.device_id == device
    if same:
        handle = handle_for(given, device)
        program = handle.cached(key)
    if program is None:
        program, handle = _first_call(
            subscripts, views, out_view, compute_type, beta_zero, key, alpha, beta, optimize, dtype,
            given,
        )  # fmt: skip
        if program is None:  # an empty output: nothing to compute
            return _empty_result(operands[0], views, out, subscripts, stream, dtype)
    assert handle is not None
    fresh = out is None
    if fresh:
        out = _new_output(operands[0], program.out_shape, program.dtype, device, stream)
        out_view = array_view(out, "out", stream_ptr)
        if out_view.strides != _c_strides(out_view.shape):
            raise RuntimeError("the new output array is not C-contiguous")
    assert out_view is not None
    if fresh:
        out_align = alignment_of(out_view.ptr, MAX_ALIGNMENT)
    if out_align < program.out_alignment:
        # The program was planned for 256-byte aligned outputs; this allocation is less aligned,
        # so plan (once, cached) for an out of this alignment.
        return einsum(subscripts, *operands, out=out, dtype=dtype, optimize=optimize, alpha=alpha,
                      beta=0.0, compute_type=compute_type, stream=stream,
                      handle=given)  # fmt: skip
    if out_view.readonly:
        raise ValueError("out is read-only")
    pointers = [v.ptr for v in views]
    out_ptr = out_view.ptr
    if not fresh:  # a new output cannot overlap the operands
        lo, hi = program.out_span
        lo, hi = out_ptr + lo, out_ptr + hi
        for i, (a, b) in enumerate(program.spans):
            if pointers[i] + a < hi and lo < pointers[i] + b:
                raise ValueError(
                    f"out overlaps operand {i} in memory: cuTENSOR requires inputs not to overlap "
                    "the output"
                )
    _check_device_view(out_view, "out", handle.device_id)
    previous = handle.activate()  # intermediates and workspace live on the handle's device
    try:
        program.run(pointers, out_view.ptr, alpha, 0.0 if beta is None else beta, stream_ptr)
    finally:
        handle.restore(previous)
    return out


def _inspect(  # noqa: PLR0917 - private
    subscripts: str,
    operands: Sequence[Any],
    out: Any,
    stream_ptr: int,
    compute_type: Any,
    beta: Any,
    optimize: Any,
    dtype: Any,
) -> tuple[list[ArrayView], ArrayView | None, bool, int, tuple[Any, ...]]:
    """The per-call reading of a call: the operands' and ``out``'s views (stream-ordered, through
    :func:`array_view`), whether beta is 0, ``out``'s alignment and the program cache key."""
    names = _OPERAND_NAMES if len(operands) <= len(_OPERAND_NAMES) else None
    views = [
        array_view(x, names[i] if names is not None else f"operand {i}", stream_ptr)
        for i, x in enumerate(operands)
    ]
    out_view = None if out is None else array_view(out, "out", stream_ptr)
    if beta is not None and beta.__class__ is not float and beta.__class__ is not int:
        # before comparing it with 0: an array or another object may not compare to a bool
        _check_number(beta, "beta")
    beta_zero = beta is None or bool(beta == 0)
    if not beta_zero and out_view is None:
        raise ValueError("beta other than 0 scales out, so it needs out=")
    compute_key = (
        compute_type if compute_type is None or isinstance(compute_type, str) else str(compute_type)
    )
    out_align = 0 if out_view is None else alignment_of(out_view.ptr, MAX_ALIGNMENT)
    out_key = None if out_view is None else (out_view.shape, out_view.strides, out_view.dtype,
                                             out_align)  # fmt: skip
    key = (
        "einsum", subscripts, compute_key, beta_zero, out_key, _optimize_key(optimize),
        None if dtype is None else str(dtype),
        tuple([(v.shape, v.strides, v.dtype, alignment_of(v.ptr, MAX_ALIGNMENT)) for v in views]),
    )  # fmt: skip
    return views, out_view, beta_zero, out_align, key


_OPERAND_NAMES = tuple(f"operand {i}" for i in range(8))


def _first_call(  # noqa: PLR0917 - private
    subscripts: str,
    views: Sequence[ArrayView],
    out_view: ArrayView | None,
    compute_type: Any,
    beta_zero: bool,
    key: Any,
    alpha: Any = 1.0,
    beta: Any = 0.0,
    optimize: Any = "greedy",
    dtype: Any = None,
    handle: Handle | None = None,
) -> tuple[_Program | None, Handle | None]:
    """Parse, validate and plan; returns None for an empty output. Everything that can be checked
    without a GPU is checked before the devices are looked at."""

    # Parsing, promotion and the decomposition into steps: pure Python, no GPU.
    plan = plan_einsum(
        subscripts, [v.shape for v in views], [v.dtype for v in views], optimize, dtype=dtype,
        out_dtype=None if out_view is None else out_view.dtype,
    )  # fmt: skip
    spec, out_dtype = plan.spec, plan.tensors[-1].dtype
    type_name = data_type_name(out_dtype, name="the result dtype")
    compute_type_name(compute_type)
    # The scalars' type follows the data (the user guide's scalar-type table: complex data take
    # complex scalars, real data real ones); refuse a complex alpha for real data before planning.
    scalar_dtype = _table_scalar_dtype(type_name)
    if scalar_dtype is not None:
        _coerce_scalar(alpha, scalar_dtype, "alpha")
        if beta is not None:
            _coerce_scalar(beta, scalar_dtype, "beta")
    out_shape = spec.output_shape
    if out_view is not None:
        if tuple(out_view.shape) != out_shape:
            raise ValueError(f"out has shape {tuple(out_view.shape)}, the result has {out_shape}")
        if out_view.readonly:  # known before planning; the execute path checks it again
            raise ValueError("out is read-only")
        if _overlapping(out_view.shape, out_view.strides):  # else named as cuTENSOR's "C"/"B"
            raise ValueError(
                f"out has overlapping strides {tuple(out_view.strides)} for shape {out_shape}: "
                "some element would be written twice (cuTENSOR's output may not overlap itself)"
            )
    if any(n == 0 for n in out_shape):
        _check_devices(views, out_view)
        return None, None
    for label in spec.contracted:
        if spec.extents[label] == 0:
            raise ValueError(
                f"label {label!r} is summed over extent 0; cuTENSOR requires extents larger than "
                "zero (the sum of nothing is 0: compute it without einsum)"
            )
    # As the operations on arrays do: an element pointer not aligned to its element size would be
    # described to cuTENSOR with an alignment below it (nothing is empty here, so none is NULL).
    for i, v in enumerate(views):
        _check_pointer(v.ptr, v.itemsize, f"operand {i}")
    if out_view is not None:
        _check_pointer(out_view.ptr, out_view.itemsize, "out")
    out_alignment = MAX_ALIGNMENT if out_view is None else alignment_of(out_view.ptr, MAX_ALIGNMENT)
    out_layout = (out_shape, _c_strides(out_shape), out_alignment) if out_view is None else (
        tuple(out_view.shape), tuple(out_view.strides), out_alignment)  # fmt: skip
    layouts = [
        (tuple(v.shape), tuple(v.strides), alignment_of(v.ptr, MAX_ALIGNMENT)) for v in views
    ]
    # Validate every step (layouts, broadcasts, type tables) without a GPU.
    build_program(None, plan, layouts, out_layout, compute_type, beta_zero)
    device = _check_devices(views, out_view)
    handle = handle_for(handle, device)
    program = build_program(handle, plan, layouts, out_layout, compute_type, beta_zero)
    program.out_shape = out_shape
    program.out_alignment = out_alignment
    program.spans = [_span(0, v.shape, v.strides, v.itemsize) for v in views]
    program.out_span = _span(0, out_layout[0], out_layout[1], out_dtype.itemsize)
    # another thread sharing the handle may have stored the same program first: use that one
    return handle.cache(key, program), handle


def _check_devices(views: Sequence[ArrayView], out_view: ArrayView | None) -> int:
    device: int | None = None
    for i, v in enumerate(views):
        _check_device_view(v, f"operand {i}", device)
        device = v.device_id
    if out_view is not None:
        _check_device_view(out_view, "out", device)
    assert device is not None
    return device


def _empty_result(  # noqa: PLR0917 - private
    template: Any, views: Sequence[ArrayView], out: Any, subscripts: str, stream: Any, dtype: Any
) -> Any:
    if out is not None:
        return out
    spec = parse_einsum(subscripts, *(v.shape for v in views))
    result = result_dtype([v.dtype for v in views], dtype)
    return _new_output(template, spec.output_shape, result, views[0].device_id, stream)
