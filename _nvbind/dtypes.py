"""Element types: NumPy and ml_dtypes on one side, cuDNN's and CUDA's enumerators on the other.

Names, not numbers, are kept here: each package turns them into values through its own generated
enums (``cudnnDataType_t[name]`` / ``cudaDataType_t``-style ``cutensorDataType_t[name]``), so the
numbers always come from the headers.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .lazy import cached_attribute
from .suggest import did_you_mean

__all__ = [
    "CUDA_DATA_TYPE_NAMES",
    "CUDNN_DATA_TYPE_NAMES",
    "as_numpy_dtype",
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


class _DtypeTable(Mapping[np.dtype, str]):
    """dtype -> name, answering NumPy's own types without importing ml_dtypes.

    An ml_dtypes dtype can only be asked about once ml_dtypes is imported, so a lookup that misses
    the NumPy part (and iterating, or the length) completes the table first.
    """

    def __init__(self, numpy_pairs: list[tuple[Any, str]], ml_pairs: list[tuple[str, str]]):
        self._numpy = {np.dtype(spec): name for spec, name in numpy_pairs}
        self._ml_pairs = ml_pairs

    @cached_attribute
    def _all(self) -> dict[np.dtype, str]:
        out = dict(self._numpy)
        for spec, name in self._ml_pairs:
            dt = _ml_dtype(spec)
            if dt is not None:
                out[dt] = name
        return out

    def __getitem__(self, dtype: np.dtype) -> str:
        try:
            return self._numpy[dtype]
        except (KeyError, TypeError):
            return self._all[dtype]

    def __iter__(self) -> Iterator[np.dtype]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)


# One row a type: the NumPy type (or the ml_dtypes name), its ``cudnnDataType_t`` member name
# (``CUDNN_DATA_`` stripped) and its ``cudaDataType_t`` name as cuTENSOR spells it (``CUTENSOR_``
# stripped); None where the library has no such type.
_NUMPY_TYPES: list[tuple[Any, str | None, str | None]] = [
    (np.float32, "FLOAT", "R_32F"),
    (np.float64, "DOUBLE", "R_64F"),
    (np.float16, "HALF", "R_16F"),
    (np.int8, "INT8", "R_8I"),
    (np.int32, "INT32", "R_32I"),
    (np.uint8, "UINT8", "R_8U"),
    (np.int64, "INT64", "R_64I"),
    (np.bool_, "BOOLEAN", None),
    (np.uint32, "UINT32", "R_32U"),
    (np.complex64, "COMPLEX_FP32", "C_32F"),
    (np.complex128, "COMPLEX_FP64", "C_64F"),
    (np.int16, None, "R_16I"),
    (np.uint16, None, "R_16U"),
    (np.uint64, None, "R_64U"),
]
_ML_TYPES: list[tuple[str, str | None, str | None]] = [
    ("bfloat16", "BFLOAT16", "R_16BF"),
    ("float8_e4m3fn", "FP8_E4M3", None),
    ("float8_e5m2", "FP8_E5M2", None),
    ("float8_e8m0fnu", "FP8_E8M0", None),
    ("float4_e2m1fn", "FP4_E2M1", None),
    ("int4", "INT4", "R_4I"),
    ("uint4", "UINT4", "R_4U"),
    ("complex32", None, "C_16F"),
    ("bcomplex32", None, "C_16BF"),
]


def _column(rows: list[tuple[Any, str | None, str | None]], i: int) -> list[tuple[Any, str]]:
    return [(row[0], name) for row in rows if (name := row[i]) is not None]


#: NumPy dtype -> ``cudnnDataType_t`` member name (prefix ``CUDNN_DATA_`` stripped).
CUDNN_DATA_TYPE_NAMES: Mapping[np.dtype, str] = _DtypeTable(
    _column(_NUMPY_TYPES, 1), _column(_ML_TYPES, 1)
)

#: NumPy dtype -> ``cudaDataType_t`` name as cuTENSOR spells it (``CUTENSOR_`` stripped).
CUDA_DATA_TYPE_NAMES: Mapping[np.dtype, str] = _DtypeTable(
    _column(_NUMPY_TYPES, 2), _column(_ML_TYPES, 2)
)

# NumPy's own names, offered (with the aliases) when a dtype name is misspelt.
_NUMPY_NAMES = (
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
)  # fmt: skip

# Spellings people use for types NumPy itself does not name.
_ALIASES: dict[str, np.dtype] = {
    "half": np.dtype(np.float16),
    "fp16": np.dtype(np.float16),
    "float": np.dtype(np.float32),
    "fp32": np.dtype(np.float32),
    "double": np.dtype(np.float64),
    "fp64": np.dtype(np.float64),
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


def as_numpy_dtype(dtype: Any, *, name: str = "dtype") -> np.dtype:
    """Normalise a dtype given as a NumPy/ml_dtypes type, a ``np.dtype`` or a string."""
    if dtype is None:
        raise TypeError(f"{name} must be a data type, not None")
    if isinstance(dtype, str):
        key = dtype.lower()
        alias = _ALIASES.get(key)
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


def dtype_name(dtype: np.dtype) -> str:
    """A short readable name (``float16``, ``bfloat16``, ``float8_e4m3fn``)."""
    return str(np.dtype(dtype).name)
