"""What the verification modules share and that imports nothing of them (:func:`is_float` is
the runtime's, for both packages)."""

from __future__ import annotations

from _nvbind.comparison import is_float

__all__ = ["NoReferenceError", "is_float"]


class NoReferenceError(NotImplementedError):
    """The graph has an operation (or setting) that has no NumPy reference here."""
