"""What the verification modules share and that imports nothing of them."""

from __future__ import annotations

__all__ = ["NoReferenceError"]


class NoReferenceError(NotImplementedError):
    """The graph has an operation (or setting) that has no NumPy reference here."""
