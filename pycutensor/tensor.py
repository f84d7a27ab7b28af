"""Tensor descriptors: the extents, strides, element type and alignment of one operand.

A cuTENSOR tensor descriptor (``cutensorCreateTensorDescriptor``) lists, for each mode, its extent
(> 0) and its stride (> 0, in elements), the data type and the alignment in bytes of the base
pointers it will be used with. Modes themselves are not part of the descriptor: operations pair each
descriptor with a list of mode labels.

Rules that cuTENSOR states and this module enforces before any C call:

* **Strides default to the generalized column-major layout** (the cuTENSOR user guide): for
  extents ``(4, 8, 12)`` the strides are ``(1, 4, 32)``. Arrays bring their real strides instead, so
  C-ordered NumPy, CuPy and PyTorch arrays are described as they are.
* **No zero extents and no zero or negative strides.** A broadcast (stride 0) is expressed by
  omitting the mode from the tensor; :mod:`pycutensor.operations` does that where the result is the
  same, and refuses otherwise.
* **Alignment** is the largest power of two (at most 256) dividing the base pointer; a descriptor
  built for an alignment must not be used with a less aligned pointer.
* **Data types** are the cuTENSOR ones: real and complex 16F, 16BF, 32F and 64F, and the integers
  8I, 8U, 32I and 32U (``ml_dtypes`` provides bfloat16, complex32 and bcomplex32).

Mode labels are any hashable values (``"m"``, ``0``, ``("site", 3)``); a :class:`ModeMap` gives
them ``int32_t`` ids, consistently within one operation. Everything here except
:class:`TensorDescriptor` itself works without a GPU.
"""

from __future__ import annotations

import ctypes
import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import numpy as np

from _nvbind.arrays import ArrayView, alignment_of, as_array_view
from _nvbind.dtypes import CUDA_DATA_TYPE_NAMES, as_numpy_dtype
from _nvbind.resource import CResource

from .handle import Handle, get_handle

__all__ = [
    "MAX_ALIGNMENT",
    "MAX_MODES",
    "TENSOR_DATA_TYPES",
    "ModeMap",
    "TensorDescriptor",
    "TensorSpec",
    "check_alignment",
    "check_extents",
    "check_modes",
    "check_strides",
    "column_major_strides",
    "data_type_name",
    "data_type_value",
    "dtype_of_data_type",
]

#: The largest rank accepted (the cuTENSOR wheel documents "up to 64-dimensional" tensors).
MAX_MODES = 64
#: ``cudaMalloc``'s alignment, the largest alignment requirement worth declaring.
MAX_ALIGNMENT = 256
# Extents and strides travel as int64_t; ctypes wraps larger Python ints silently (2**64 + 5
# would reach cuTENSOR as 5), so they are refused here instead.
_INT64_MAX = 2**63 - 1

_TENSOR_TYPE_NAMES = (
    "R_16F", "R_16BF", "R_32F", "R_64F",
    "C_16F", "C_16BF", "C_32F", "C_64F",
    "R_8I", "R_8U", "R_32I", "R_32U",
)  # fmt: skip

#: NumPy/ml_dtypes dtype -> cuTENSOR data type name, for the types cuTENSOR tensors can hold.
TENSOR_DATA_TYPES: dict[np.dtype, str] = {
    dt: name for dt, name in CUDA_DATA_TYPE_NAMES.items() if name in _TENSOR_TYPE_NAMES
}
_DTYPE_BY_NAME: dict[str, np.dtype] = {name: dt for dt, name in TENSOR_DATA_TYPES.items()}


def data_type_name(dtype: Any, *, name: str = "dtype") -> str:
    """The cuTENSOR data type name (``"R_32F"``) of a NumPy/ml_dtypes dtype or a type string."""
    if isinstance(dtype, str) and dtype.upper() in _DTYPE_BY_NAME:
        return dtype.upper()
    dt = as_numpy_dtype(dtype, name=name)
    found = TENSOR_DATA_TYPES.get(dt)
    if found is None:
        supported = ", ".join(f"{d!s} ({n})" for d, n in TENSOR_DATA_TYPES.items())
        raise TypeError(f"{name}={dt} is not a cuTENSOR data type; supported: {supported}")
    return found


def data_type_value(type_name: str) -> int:
    """The ``cudaDataType_t`` value of a cuTENSOR data type name (from the generated header enum)."""
    from . import _bindings

    return int(_bindings.cutensorDataType_t[type_name])


def dtype_of_data_type(data_type: str | int) -> np.dtype:
    """The NumPy dtype for a cuTENSOR data type given by name or ``cudaDataType_t`` value."""
    if not isinstance(data_type, str):
        from . import _bindings

        data_type = _bindings.cutensorDataType_t(int(data_type)).name
    try:
        return _DTYPE_BY_NAME[data_type]
    except KeyError:
        raise TypeError(
            f"cuTENSOR data type {data_type} has no NumPy/ml_dtypes counterpart here"
        ) from None


# -- extents, strides, alignment -----------------------------------------------------------------
def _as_int(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an int, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None


def _as_int_tuple(values: Any, name: str) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of ints, not {type(values).__name__}")
    return tuple(_as_int(v, f"{name}[{i}]") for i, v in enumerate(values))


def check_extents(extents: Any, name: str = "extents") -> tuple[int, ...]:
    """Validate extents: a sequence of at most :data:`MAX_MODES` ints, each > 0."""
    ext = _as_int_tuple(extents, name)
    if len(ext) > MAX_MODES:
        raise ValueError(f"{name} has {len(ext)} modes; cuTENSOR tensors have at most {MAX_MODES}")
    for i, n in enumerate(ext):
        if n <= 0:
            raise ValueError(
                f"{name}[{i}] is {n}: cuTENSOR requires every extent to be larger than zero "
                "(empty tensors cannot be described)"
            )
        if n > _INT64_MAX:
            raise ValueError(
                f"{name}[{i}] is {n}: cuTENSOR extents are int64_t (at most 2**63 - 1)"
            )
    return ext


def column_major_strides(extents: Sequence[int]) -> tuple[int, ...]:
    """cuTENSOR's default layout: ``stride[0] = 1``, ``stride[i] = stride[i-1] * extent[i-1]``."""
    out, acc = [], 1
    for n in extents:
        out.append(acc)
        acc *= int(n)
    return tuple(out)


def check_strides(strides: Any, extents: Sequence[int], name: str = "strides") -> tuple[int, ...]:
    """Validate strides (in elements) against ``extents``: same length, each > 0."""
    st = _as_int_tuple(strides, name)
    if len(st) != len(extents):
        raise ValueError(f"{name} has {len(st)} entries but there are {len(extents)} extents")
    for i, s in enumerate(st):
        if s == 0:
            raise ValueError(
                f"{name}[{i}] is 0: cuTENSOR requires strides larger than zero; a broadcast "
                "(stride 0) is expressed by omitting the mode from the tensor, which "
                "pycutensor.operations and pycutensor.einsum do for arrays"
            )
        if s < 0:
            raise ValueError(f"{name}[{i}] is {s}: cuTENSOR does not support negative strides")
        if s > _INT64_MAX:
            raise ValueError(
                f"{name}[{i}] is {s}: cuTENSOR strides are int64_t (at most 2**63 - 1)"
            )
    return st


def check_alignment(alignment: Any, name: str = "alignment") -> int:
    """Validate an alignment requirement: a power of two from 1 to :data:`MAX_ALIGNMENT` bytes."""
    a = _as_int(alignment, name)
    if a <= 0 or a & (a - 1) or a > MAX_ALIGNMENT:
        raise ValueError(f"{name} must be a power of two from 1 to {MAX_ALIGNMENT} bytes, got {a}")
    return a


@dataclass(frozen=True)
class TensorSpec:
    """What a tensor descriptor says, validated in Python: extents, strides, dtype, alignment.

    Build one with :meth:`create` (validates and fills the column-major default strides) or
    :meth:`from_view` (an array's real layout).
    """

    extents: tuple[int, ...]
    strides: tuple[int, ...]  # in elements, always explicit
    dtype: np.dtype
    alignment: int

    def __post_init__(self) -> None:
        # A spec is valid by construction, however it was made: TensorDescriptor.from_spec passes
        # it straight to C, so a spec built directly (TensorSpec((2**64,), ...)) must not get there
        # unchecked. Planning-time cost only; executes never build specs.
        ext = check_extents(self.extents)
        st = check_strides(self.strides, ext)
        dt = _DTYPE_BY_NAME[data_type_name(self.dtype)]
        span = (sum((n - 1) * s for n, s in zip(ext, st, strict=True)) + 1) * dt.itemsize
        if span > _INT64_MAX:
            raise ValueError(
                f"a tensor with extents {ext} and strides {st} spans {span} bytes, more than "
                "cuTENSOR's int64_t offsets can address"
            )
        object.__setattr__(self, "extents", ext)
        object.__setattr__(self, "strides", st)
        object.__setattr__(self, "dtype", dt)
        object.__setattr__(self, "alignment", check_alignment(self.alignment))

    @classmethod
    def create(
        cls,
        extents: Sequence[int],
        strides: Sequence[int] | None = None,
        dtype: Any = np.float32,
        alignment: int = MAX_ALIGNMENT,
    ) -> TensorSpec:
        """A checked spec: extents, strides (None: packed, first mode fastest), dtype and
        alignment; ``ValueError`` naming the argument otherwise."""
        ext = check_extents(extents)
        st = column_major_strides(ext) if strides is None else check_strides(strides, ext)
        type_name = data_type_name(dtype)
        dt = _DTYPE_BY_NAME[type_name]
        return cls(ext, st, dt, check_alignment(alignment))

    @classmethod
    def from_view(cls, view: ArrayView, *, name: str = "array") -> TensorSpec:
        """The layout of an array as it is: its shape, its strides, its pointer's alignment."""
        check_extents(view.shape, f"{name}.shape")
        check_strides(view.strides, view.shape, f"{name}.strides")
        type_name = data_type_name(view.dtype, name=f"{name}.dtype")
        check_pointer(view.ptr, view.dtype.itemsize, name)
        return cls(
            tuple(view.shape),
            tuple(view.strides),
            _DTYPE_BY_NAME[type_name],
            alignment_of(view.ptr, MAX_ALIGNMENT),
        )

    @property
    def ndim(self) -> int:
        """Number of modes."""
        return len(self.extents)

    @property
    def data_type(self) -> str:
        """The cuTENSOR data type name, e.g. ``"R_32F"``."""
        return TENSOR_DATA_TYPES[self.dtype]

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return int(self.dtype.itemsize)

    def span_bytes(self) -> int:
        """Bytes from the first to one past the last addressed element."""
        return (
            sum((n - 1) * s for n, s in zip(self.extents, self.strides, strict=False)) + 1
        ) * self.itemsize

    def with_alignment(self, alignment: int) -> TensorSpec:
        """The same spec with another alignment (checked: a power of two up to MAX_ALIGNMENT bytes)."""
        return TensorSpec(self.extents, self.strides, self.dtype, check_alignment(alignment))


def check_pointer(ptr: int, itemsize: int, name: str) -> None:
    """Refuse NULL pointers and pointers that are not aligned to the element size."""
    if not ptr:
        raise ValueError(f"{name} has a NULL data pointer")
    if not 0 < ptr < 2**64:  # ctypes would wrap it into some other address
        raise ValueError(f"{name}'s data pointer {ptr} is not a 64-bit address")
    if ptr % itemsize:
        raise ValueError(
            f"{name}'s data pointer 0x{ptr:x} is not aligned to its {itemsize}-byte elements"
        )


# -- modes ---------------------------------------------------------------------------------------
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_AUTO_BASE = 1 << 20  # ids given to labels that are neither one character nor an int


class ModeMap:
    """Gives hashable mode labels ``int32_t`` ids, the same id for the same label.

    One-character strings get their code point (cuTENSOR's samples write modes as chars, and its
    logs then stay readable); ints in the int32 range keep their value; other labels get fresh
    ids. Two different labels never share an id. Labels compare as Python compares dict keys, as
    everywhere else in pycutensor: ``1``, ``1.0``, ``np.int64(1)`` and ``True`` are one label,
    ``"1"`` is another.
    """

    def __init__(self, labels: Iterable[Hashable] = ()) -> None:
        self._ids: dict[Hashable, int] = {}
        self._labels: dict[int, Hashable] = {}
        self._next = _AUTO_BASE
        for label in labels:
            self[label]

    def __getitem__(self, label: Hashable) -> int:
        found = self._ids.get(label)
        if found is not None:
            return found
        wanted: int | None = None
        if isinstance(label, str) and len(label) == 1:
            wanted = ord(label)
        elif isinstance(label, (int, np.integer)) and not isinstance(label, (bool, np.bool_)):
            value = int(label)
            if _INT32_MIN <= value <= _INT32_MAX:
                wanted = value
        if wanted is None or wanted in self._labels:
            while self._next in self._labels:
                self._next += 1
            wanted = self._next
        self._ids[label] = wanted
        self._labels[wanted] = label
        return wanted

    def ids(self, labels: Iterable[Hashable]) -> tuple[int, ...]:
        """The mode ids of ``labels`` (the int32 modes cuTENSOR takes)."""
        return tuple(self[label] for label in labels)

    def label(self, mode_id: int) -> Hashable:
        """The label of mode id ``mode_id``."""
        return self._labels[mode_id]

    def __contains__(self, label: object) -> bool:
        return isinstance(label, Hashable) and label in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def items(self) -> list[tuple[Hashable, int]]:
        """``(label, mode id)`` pairs in the order the labels were first seen."""
        return [(self._labels[i], i) for i in self._ids.values()]

    def __repr__(self) -> str:
        return f"ModeMap({dict(self.items())!r})"


def check_modes(modes: Any, ndim: int, name: str = "modes") -> tuple[Hashable, ...]:
    """Validate the mode labels of one tensor: one per dimension, hashable, all distinct.

    A string is read as one label per character (``"mhkn"``). Labels compare as dict keys do
    (``1``, ``1.0`` and ``True`` are one label), which is how every check and the
    :class:`ModeMap` see them.
    """
    if isinstance(modes, str):
        labels: tuple[Any, ...] = tuple(modes)
    elif isinstance(modes, Iterable) and not isinstance(modes, (bytes, Mapping, AbstractSet)):
        # sets are refused: their order is arbitrary, and labels pair with dimensions by position
        labels = tuple(modes)
    else:
        raise TypeError(
            f"{name} must be a string or a sequence of mode labels, not {type(modes).__name__}"
        )
    if len(labels) != ndim:
        raise ValueError(f"{name} has {len(labels)} labels but the tensor has {ndim} dimensions")
    seen: set[Hashable] = set()
    for label in labels:
        if not isinstance(label, Hashable):
            raise TypeError(f"{name}: mode label {label!r} is not hashable")
        try:
            duplicate = label in seen
        except TypeError:  # isinstance(Hashable) passes for e.g. a tuple holding a list
            raise TypeError(f"{name}: mode label {label!r} is not hashable") from None
        if duplicate:
            raise ValueError(
                f"{name}: mode {label!r} appears twice; cuTENSOR requires each mode at most once "
                "per tensor (traces and diagonals are not supported)"
            )
        seen.add(label)
    return labels


# -- the C object ---------------------------------------------------------------------------------
def _destroy_descriptor(ptr: int) -> None:
    from ._lib import LIB

    LIB.function("cutensorDestroyTensorDescriptor")(ptr)


class TensorDescriptor(CResource):
    """A ``cutensorTensorDescriptor_t`` (``cutensorCreateTensorDescriptor``).

    ``strides=None`` means cuTENSOR's packed generalized column-major layout; the strides are then
    computed here and passed explicitly, so :attr:`strides` always tells the layout. ``alignment``
    is the byte alignment every base pointer used with this descriptor will have (256 for memory
    straight from ``cudaMalloc`` or a pool).
    """

    _kind = "cuTENSOR tensor descriptor"

    def __init__(
        self,
        handle: Any,
        extents: Sequence[int],
        strides: Sequence[int] | None = None,
        dtype: Any = np.float32,
        alignment: int = MAX_ALIGNMENT,
    ) -> None:
        spec = TensorSpec.create(extents, strides, dtype, alignment)
        self._init(handle, spec)

    @classmethod
    def from_spec(cls, handle: Any, spec: TensorSpec) -> TensorDescriptor:
        """A descriptor for ``spec`` on ``handle`` (``cutensorCreateTensorDescriptor``)."""
        self = cls.__new__(cls)
        self._init(handle, spec)
        return self

    @classmethod
    def from_array(cls, handle: Any, array: Any) -> TensorDescriptor:
        """A descriptor of ``array`` as it lies in memory (its shape, strides and alignment)."""
        return cls.from_spec(handle, TensorSpec.from_view(as_array_view(array, name="array")))

    def _init(self, handle: Any, spec: TensorSpec) -> None:
        from ._lib import LIB, check, clear_last_error

        if handle is None:
            handle = get_handle()
        elif not isinstance(handle, Handle):
            raise TypeError(
                f"handle must be a pycutensor.Handle or None, not {type(handle).__name__}"
            )
        handle._check_open()
        n = spec.ndim
        extents = (ctypes.c_int64 * n)(*spec.extents)
        strides = (ctypes.c_int64 * n)(*spec.strides)
        out = ctypes.c_void_p()
        clear_last_error()
        check(
            LIB.function("cutensorCreateTensorDescriptor")(
                handle, ctypes.byref(out), n, extents, strides,
                data_type_value(spec.data_type), spec.alignment,
            ),
            "cutensorCreateTensorDescriptor",
        )  # fmt: skip
        super().__init__(int(out.value or 0), _destroy_descriptor, parents=(handle,))
        self.spec = spec
        self.handle = handle

    @property
    def extents(self) -> tuple[int, ...]:
        """Extents of each mode."""
        return self.spec.extents

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides of each mode, in elements."""
        return self.spec.strides

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements."""
        return self.spec.dtype

    @property
    def data_type(self) -> str:
        """cuTENSOR's data type name, e.g. "R_32F"."""
        return self.spec.data_type

    @property
    def alignment(self) -> int:
        """The alignment requirement in bytes given to cuTENSOR."""
        return self.spec.alignment

    @property
    def ndim(self) -> int:
        """Number of modes."""
        return self.spec.ndim

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"0x{self.ptr:x}"
        spec = getattr(self, "spec", None)
        if spec is None:
            return f"<pycutensor.TensorDescriptor {state}>"
        return (
            f"<pycutensor.TensorDescriptor {state} extents={spec.extents} strides={spec.strides} "
            f"{spec.data_type} alignment={spec.alignment}>"
        )
