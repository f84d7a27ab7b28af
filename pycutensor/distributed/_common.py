"""Helpers shared by the cuTENSORMp, cuTENSORMg and block-sparse wrappers."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from _nvbind.cuda import gpu_available

from .. import _bindings as cb
from ..checks import coerce_scalar
from ..tables import KINDS, check_types, compute_type_name, expected_scalar_type
from ..tensor import dtype_of_data_type

__all__ = [
    "DeviceRequiredError",
    "c_array",
    "checked_contraction",
    "contraction_modes",
    "copy_modes",
    "int64s",
    "int_tuple",
    "modes_of",
    "require_gpu",
    "workspace_preference_value",
]


class DeviceRequiredError(RuntimeError):
    """The call needs a CUDA GPU (and, for cuTENSORMp, NCCL), and this machine has none.

    Raised before any library call, with the driver's reason; everything that only needs the host
    (distributions, cost models, argument checks) works without one.
    """


def require_gpu(what: str) -> None:
    """Raise :class:`DeviceRequiredError` naming ``what`` unless a CUDA device is usable."""

    ok, reason = gpu_available()
    if not ok:
        # The wording every "needs a GPU" refusal of the project shares (the array constructors',
        # planning's), so that scripts and the documentation's checks tell it from a failure.
        raise DeviceRequiredError(f"{what} needs a CUDA GPU, but none is usable: {reason}")


def c_array(ctype: Any, values: Sequence[int] | None) -> Any:
    """A ctypes array of ``values``, or None (C's NULL) for None."""
    if values is None:
        return None
    return (ctype * len(values))(*values)


def modes_of(modes: Sequence[Any] | str, ndim: int, name: str) -> tuple[int, ...]:
    """Mode labels as C ints: a string of letters (``"mk"``) or a sequence of ints or one-char
    strings; one per mode, each distinct (cuTENSOR's rule for an operand)."""
    labels = list(modes)
    if len(labels) != ndim:
        raise ValueError(f"{name} has {len(labels)} modes but the tensor has {ndim}")
    out = []
    for label in labels:
        if isinstance(label, str) and len(label) == 1:
            out.append(ord(label))
        elif isinstance(label, (int, np.integer)) and not isinstance(label, bool):
            if not -(2**31) <= int(label) < 2**31:
                # cuTENSORMp/Mg take int32 modes: a label past that would wrap onto another
                raise ValueError(f"{name}: mode {label} does not fit the int32 cuTENSOR takes")
            out.append(int(label))
        else:
            raise TypeError(f"{name}: a mode is an int or a one-character string, not {label!r}")
    if len(set(out)) != len(out):
        raise ValueError(
            f"{name} repeats a mode ({list(modes)}); each mode appears once per tensor"
        )
    return tuple(out)


def scalar_array(value: Any, dtype: np.dtype, name: str) -> np.ndarray:
    """``value`` (alpha, beta) as the one-element host array an execute hands cuTENSOR, of the
    plan's scalar type: checked as the single-GPU operations check it (a number; complex only
    for complex data), where NumPy would drop an imaginary part or parse a string silently."""
    return np.array(coerce_scalar(value, np.dtype(dtype), name), dtype=dtype)


def int_tuple(
    values: Sequence[int], name: str, *, minimum: int, maximum: int = 2**63 - 1
) -> tuple[int, ...]:
    """``values`` as a tuple of ints from ``minimum`` to ``maximum`` (default: what C's int64_t
    holds); errors name ``name[i]`` and the rule."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of ints, not {type(values).__name__}")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}[{i}] must be an int, not {type(v).__name__}")
        if int(v) < minimum:
            raise ValueError(f"{name}[{i}] must be >= {minimum}, got {int(v)}")
        if int(v) > maximum:
            raise ValueError(f"{name}[{i}] must be <= {maximum}, got {int(v)}")
        out.append(int(v))
    return tuple(out)


def int64s(values: Sequence[int]) -> ctypes.Array[ctypes.c_int64]:
    return (ctypes.c_int64 * len(values))(*values)


def _label(mode: int) -> str:
    return repr(chr(mode)) if 32 < mode < 127 else str(mode)


def contraction_modes(
    operands: Sequence[tuple[Sequence[int], Sequence[Any] | str, str]],
) -> tuple[tuple[int, ...], ...]:
    """The modes of A, B and C of ``C = A B`` as C ints, from (extents, modes, argument name) of
    each, checked as cuTENSOR's contractions require: one mode per dimension, distinct within an
    operand, one extent per mode across the operands, every mode of C in A or B."""
    out = [modes_of(m, len(ext), name) for ext, m, name in operands]
    extent: dict[int, tuple[int, str]] = {}
    for (ext, _, name), modes in zip(operands, out, strict=True):
        for mode, e in zip(modes, ext, strict=True):
            first = extent.setdefault(mode, (int(e), name))
            if first[0] != e:
                raise ValueError(
                    f"mode {_label(mode)} has extent {first[0]} in {first[1]} but {e} in {name}"
                )
    *inputs, output = out
    for mode in output:
        if not any(mode in m for m in inputs):
            raise ValueError(f"output mode {_label(mode)} appears in no input")
    return tuple(out)


def checked_contraction(  # noqa: PLR0917 - (tensor, modes) pairs in the order of C and einsum
    a: Any, modes_a: Any, b: Any, modes_b: Any, c: Any, modes_c: Any, compute_type: Any
) -> tuple[tuple[tuple[int, ...], ...], str, np.dtype]:
    """The modes of ``C = A B`` (:func:`contraction_modes`), the compute type cuTENSOR's
    contraction table allows for the tensors' data types (``compute_type`` None: the table's
    first), and the scalar dtype that goes with them. ``a``, ``b``, ``c`` have ``extents`` and
    ``data_type`` (cuTENSORMp and cuTENSORMg tensors)."""
    modes = contraction_modes(
        [(a.extents, modes_a, "modes_a"), (b.extents, modes_b, "modes_b"),
         (c.extents, modes_c, "modes_c")]
    )  # fmt: skip
    compute = check_types(
        KINDS["contraction"], (a.data_type, b.data_type, c.data_type),
        compute_type_name(compute_type),
    )  # fmt: skip
    return modes, compute, dtype_of_data_type(expected_scalar_type(c.data_type, compute))


def copy_modes(
    dst: Any, src: Any, modes_dst: Any, modes_src: Any
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The modes of ``dst`` and ``src`` of a copy or redistribution as C ints (default: by
    position), checked: the same modes on both sides, each with one extent."""
    md = modes_of(modes_dst if modes_dst is not None else range(dst.ndim), dst.ndim, "modes_dst")
    ms = modes_of(modes_src if modes_src is not None else range(src.ndim), src.ndim, "modes_src")
    if sorted(md) != sorted(ms):
        raise ValueError(f"modes_dst {list(md)} and modes_src {list(ms)} name other modes")
    for mode, e in zip(md, dst.extents, strict=True):
        if src.extents[ms.index(mode)] != e:
            raise ValueError(
                f"mode {mode!r} has extent {e} in dst, {src.extents[ms.index(mode)]} in src"
            )
    return md, ms


def workspace_preference_value(workspace_preference: str) -> int:
    """``cutensorWorksizePreference_t`` for ``"min"``, ``"default"`` or ``"max"``."""
    try:
        return int(cb.cutensorWorksizePreference_t[workspace_preference.upper()])
    except KeyError:
        raise ValueError(
            f"workspace_preference must be 'min', 'default' or 'max', not {workspace_preference!r}"
        ) from None
