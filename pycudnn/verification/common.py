"""What the verification modules share and that imports nothing of them."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["NoReferenceError", "is_float"]


def is_float(dtype: Any) -> bool:
    """A floating-point type, ml_dtypes' ones included (bfloat16's NumPy kind is "V", not "f")."""
    dt: np.dtype[Any] = np.dtype(dtype)
    return dt.kind == "f" or dt.name.startswith(("bfloat", "float"))


class NoReferenceError(NotImplementedError):
    """The graph has an operation (or setting) that has no NumPy reference here."""
