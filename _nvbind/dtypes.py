"""Element types: NumPy and ml_dtypes on one side, cuDNN's and CUDA's enumerators on the other.

Names, not numbers, are kept here: each package turns them into values through its own generated
enums (``cudnnDataType_t[name]`` / ``cudaDataType_t``-style ``cutensorDataType_t[name]``), so the
numbers always come from the headers.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from .lazy import cached_attribute
from .lazy_numpy import np, numpy_loaded
from .suggest import did_you_mean

__all__ = [
    "CUDA_DATA_TYPE_NAMES",
    "CUDNN_DATA_TYPE_NAMES",
    "DataType",
    "NumpyDtype",
    "as_data_type",
    "as_numpy_dtype",
    "data_type_of",
    "dtype_name",
]


@functools.cache
def _ml() -> Any:
    """ml_dtypes (bf16 and the fp8/fp4 types), imported on first need: a few milliseconds that a
    process working in NumPy's own types never pays. None when it is not installed."""
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is a base dependency
        return None
    return ml_dtypes


def _ml_dtype(name: str) -> np.dtype | None:
    t = getattr(_ml(), name, None)
    return np.dtype(t) if t is not None else None


class DataType:
    """An element type known by name, kind and size, without NumPy: what a graph keeps for its
    tensors and settings, so that describing and planning a graph imports neither NumPy nor
    ml_dtypes. :attr:`numpy` is the ``numpy.dtype`` (imported on first access), which the public
    properties (``Tensor.dtype``) return.

    ``name``, ``kind`` and ``itemsize`` are NumPy's for that dtype. Equal to a DataType of the
    same name, and to whatever ``numpy.dtype()`` takes that makes the same dtype (NumPy and
    ml_dtypes types, dtypes, names); ``numpy.dtype(t)`` and NumPy's array constructors take it
    (through its ``dtype`` attribute).
    """

    __slots__ = ("_numpy", "_table", "itemsize", "kind", "name")

    def __init__(self, name: str, kind: str, itemsize: int, numpy: np.dtype | None = None) -> None:
        self.name = name
        self.kind = kind
        self.itemsize = itemsize
        self._numpy = numpy
        # One instance per type of the tables (made without a dtype); others wrap a dtype.
        self._table = numpy is None

    @property
    def numpy(self) -> np.dtype:
        """The ``numpy.dtype`` (NumPy, and ml_dtypes for its types, imported on first access)."""
        if self._numpy is None:
            dt = _ml_dtype(self.name) if self.name in _ML_NAMES else None
            self._numpy = dt if dt is not None else np.dtype(self.name)
        return self._numpy

    # NumPy converts an object with a ``dtype`` attribute to that dtype (np.dtype(t), np.zeros).
    dtype = numpy

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DataType):
            if self._table and other._table:
                return self is other
            return bool(self.numpy == other.numpy)
        if isinstance(other, str) and other in _KNOWN:
            return self._table and _KNOWN[other] is self
        if other is None or (not isinstance(other, str) and not numpy_loaded()):
            return False  # np.dtype(None) is float64; a NumPy value cannot exist without NumPy
        try:
            return bool(self.numpy == np.dtype(other))  # type: ignore[call-overload]
        except TypeError:
            return False

    def __hash__(self) -> int:
        # The name's hash, not NumPy's (which would import it): a DataType and the equal
        # numpy.dtype are not interchangeable as keys of one dict or set.
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"dtype({self.name!r})"


class NumpyDtype:
    """An attribute read as the ``numpy.dtype`` of the :class:`DataType` (or None) the instance
    keeps under the same name with an underscore, and set as any dtype :func:`as_data_type`
    takes: public API in NumPy's types, inner code in DataTypes that import no NumPy."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._private = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._private = "_" + name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        dt: DataType | None = getattr(obj, self._private)
        return None if dt is None else dt.numpy

    def __set__(self, obj: object, value: Any) -> None:
        setattr(obj, self._private, None if value is None else as_data_type(value))


# One row a type: NumPy's name, kind and size, its ``cudnnDataType_t`` member name (``CUDNN_DATA_``
# stripped) and its ``cudaDataType_t`` name as cuTENSOR spells it (``CUTENSOR_`` stripped); None
# where the library has no such type. tests/test_first_plan_imports.py checks the kinds and sizes
# against NumPy's and ml_dtypes'.
_NUMPY_TYPES: list[tuple[str, str, int, str | None, str | None]] = [
    ("float32", "f", 4, "FLOAT", "R_32F"),
    ("float64", "f", 8, "DOUBLE", "R_64F"),
    ("float16", "f", 2, "HALF", "R_16F"),
    ("int8", "i", 1, "INT8", "R_8I"),
    ("int32", "i", 4, "INT32", "R_32I"),
    ("uint8", "u", 1, "UINT8", "R_8U"),
    ("int64", "i", 8, "INT64", "R_64I"),
    ("bool", "b", 1, "BOOLEAN", None),
    ("uint32", "u", 4, "UINT32", "R_32U"),
    ("complex64", "c", 8, "COMPLEX_FP32", "C_32F"),
    ("complex128", "c", 16, "COMPLEX_FP64", "C_64F"),
    ("int16", "i", 2, None, "R_16I"),
    ("uint16", "u", 2, None, "R_16U"),
    ("uint64", "u", 8, None, "R_64U"),
]
_ML_TYPES: list[tuple[str, str, int, str | None, str | None]] = [
    ("bfloat16", "V", 2, "BFLOAT16", "R_16BF"),
    ("float8_e4m3fn", "V", 1, "FP8_E4M3", None),
    ("float8_e5m2", "f", 1, "FP8_E5M2", None),
    ("float8_e8m0fnu", "V", 1, "FP8_E8M0", None),
    ("float4_e2m1fn", "V", 1, "FP4_E2M1", None),
    ("int4", "V", 1, "INT4", "R_4I"),
    ("uint4", "V", 1, "UINT4", "R_4U"),
    ("complex32", "W", 4, None, "C_16F"),
    ("bcomplex32", "W", 4, None, "C_16BF"),
]

#: name -> DataType, for every type of the tables.
_KNOWN: dict[str, DataType] = {
    row[0]: DataType(row[0], row[1], row[2]) for row in (*_NUMPY_TYPES, *_ML_TYPES)
}
_ML_NAMES = frozenset(row[0] for row in _ML_TYPES)


def _known(dtype: Any) -> DataType | None:
    """The DataType of the tables for a DataType or a ``numpy.dtype`` (None if none)."""
    if isinstance(dtype, DataType):
        if dtype._table:
            return dtype
        dtype = dtype.numpy  # one that wraps a dtype: the byte order counts too (below)
    known = _KNOWN.get(str(dtype.name)) if isinstance(dtype, np.dtype) else None
    # A name is not enough: '>f4' is named float32 too, and is no type of the tables.
    return known if known is not None and known.numpy == dtype else None


class _DtypeTable(Mapping[Any, str]):  # keys: numpy.dtype (or DataType)
    """dtype -> name; answers a :class:`DataType` or a ``numpy.dtype`` without importing NumPy
    or ml_dtypes (a ``numpy.dtype`` exists only once NumPy is imported, an ml_dtypes one once
    ml_dtypes is). Iterating, or the length, imports them: its keys are ``numpy.dtype``."""

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        self._names = dict(rows)

    @cached_attribute
    def _all(self) -> dict[np.dtype, str]:
        out = {}
        for spec, name in self._names.items():
            if spec not in _ML_NAMES or _ml() is not None:
                out[_KNOWN[spec].numpy] = name
        return out

    def __getitem__(self, dtype: np.dtype | DataType) -> str:
        known = _known(dtype) if isinstance(dtype, DataType) or numpy_loaded() else None
        if known is None or known.name not in self._names:
            raise KeyError(dtype)
        return self._names[known.name]

    def __contains__(self, dtype: object) -> bool:
        try:
            self[dtype]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[np.dtype]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def type_names(self) -> list[str]:
        """The NumPy names of the types it has, without importing NumPy or ml_dtypes."""
        return list(self._names)


def _column(i: int) -> list[tuple[str, str]]:
    return [
        (row[0], name) for row in (*_NUMPY_TYPES, *_ML_TYPES) if isinstance(name := row[i], str)
    ]


#: NumPy dtype (or :class:`DataType`) -> ``cudnnDataType_t`` member name (prefix ``CUDNN_DATA_``
#: stripped).
CUDNN_DATA_TYPE_NAMES: _DtypeTable = _DtypeTable(_column(3))

#: NumPy dtype (or :class:`DataType`) -> ``cudaDataType_t`` name as cuTENSOR spells it
#: (``CUTENSOR_`` stripped).
CUDA_DATA_TYPE_NAMES: _DtypeTable = _DtypeTable(_column(4))

# NumPy's own names, offered (with the aliases) when a dtype name is misspelt.
_NUMPY_NAMES = (
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
)  # fmt: skip

# Spellings people use for types NumPy itself does not name (the value is NumPy's name).
_ALIASES: dict[str, str] = {
    "half": "float16",
    "fp16": "float16",
    "float": "float32",
    "fp32": "float32",
    "double": "float64",
    "fp64": "float64",
}

# ... and for the ml_dtypes types (the value is the ml_dtypes name), resolved when first used.
_ML_ALIASES: dict[str, str] = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn",
    "float8_e4m3": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e8m0fnu": "float8_e8m0fnu",
    "float4_e2m1fn": "float4_e2m1fn",
    "int4": "int4",
    "uint4": "uint4",
    "complex32": "complex32",
}


# cuDNN's vectorised types of the NCHW_VECT_C layouts (NC/4HW4, NC/32HW32), keyed by (element type,
# vector count), and the dtype strings that name them. The legacy descriptors set these types; the
# graph API sets the element type with TENSOR_VECTOR_COUNT instead.
VECTOR_TYPES: dict[tuple[str, int], str] = {
    ("int8", 4): "INT8x4",
    ("uint8", 4): "UINT8x4",
    ("int8", 32): "INT8x32",
}
VECTOR_DTYPE_STRINGS: dict[str, tuple[str, int]] = {
    "int8x4": ("int8", 4),
    "uint8x4": ("uint8", 4),
    "int8x32": ("int8", 32),
}


def _named(text: str) -> DataType | None:
    """The type of the tables a string names without NumPy's help: an alias (any case), or one
    of NumPy's own names (as NumPy spells it); None for anything else."""
    key = text.lower()
    spec = _ALIASES.get(key) or _ML_ALIASES.get(key)
    if spec is None:
        # the ml_dtypes types by their own names only through the aliases (as NumPy would)
        return None if text in _ML_NAMES else _KNOWN.get(text)
    return _KNOWN.get(spec)


def as_data_type(dtype: Any, *, name: str = "dtype") -> DataType:
    """:func:`as_numpy_dtype`'s normalisation, to a :class:`DataType`: a name or alias of the
    tables' types, or a DataType, imports neither NumPy nor ml_dtypes; anything else goes through
    ``numpy.dtype``."""
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, str):
        known = _named(dtype)
        if known is not None:
            return known
    return data_type_of(as_numpy_dtype(dtype, name=name))


def data_type_of(dtype: np.dtype) -> DataType:
    """The :class:`DataType` of a ``numpy.dtype``: the tables' own for their types."""
    known = _known(dtype)
    return known if known is not None else DataType(dtype.name, dtype.kind, dtype.itemsize, dtype)


def as_numpy_dtype(dtype: Any, *, name: str = "dtype") -> np.dtype:
    """Normalise a dtype given as a NumPy/ml_dtypes type, a ``np.dtype``, a :class:`DataType` or
    a string."""
    if dtype is None:
        raise TypeError(f"{name} must be a data type, not None")
    if isinstance(dtype, DataType):
        return dtype.numpy
    if isinstance(dtype, str):
        key = dtype.lower()
        alias = np.dtype(_ALIASES[key]) if key in _ALIASES else None
        if alias is None and key in _ML_ALIASES:
            alias = _ml_dtype(_ML_ALIASES[key])
        if alias is not None:
            return alias
    try:
        result: np.dtype = np.dtype(dtype)
        return result
    except TypeError:
        pass
    # NumPy knows the other ml_dtypes names (float8_e4m3fnuz, ...) once ml_dtypes is imported.
    if isinstance(dtype, str) and _ml() is not None:
        try:
            return np.dtype(dtype)
        except TypeError:
            pass
    hint = (
        did_you_mean(dtype, [*_ALIASES, *_ML_ALIASES, *_NUMPY_NAMES])
        if isinstance(dtype, str)
        else ""
    )
    raise TypeError(f"{name}={dtype!r} is not a data type NumPy or ml_dtypes knows{hint}") from None


def dtype_name(dtype: np.dtype | DataType) -> str:
    """A short readable name (``float16``, ``bfloat16``, ``float8_e4m3fn``)."""
    if isinstance(dtype, DataType):
        return dtype.name
    return str(np.dtype(dtype).name)
