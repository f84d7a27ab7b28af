"""What the verification modules share and that imports nothing of them (:func:`is_float` is
the runtime's, for both packages)."""

from __future__ import annotations

from _nvbind.comparison import is_float

__all__ = ["NoReferenceError", "is_float"]


class NoReferenceError(NotImplementedError):
    """The graph has an operation (or setting) that has no NumPy reference here."""


class MissingValuesError(NoReferenceError, KeyError):
    """The reference lacks values it needs (an input's, or an output's initial contents for a
    beta): no reference for this run. A ``KeyError`` too, as it was before it had a class."""

    def __str__(self) -> str:  # KeyError's own str() quotes the message
        return str(self.args[0]) if self.args else ""
