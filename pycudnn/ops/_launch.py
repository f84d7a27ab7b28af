"""The keywords every legacy operation ends with (``alpha``, ``beta``, ``handle``, ``stream``):
documented and given their defaults once, here, and spelled out in each operation's signature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict, TypeVar

from _nvbind.keywords import keyword_defaults, show_keywords

from ..handle import Handle

__all__ = ["LAUNCH", "LaunchKeywords", "launch_defaults", "launch_keywords", "shows"]


class LaunchKeywords(TypedDict, total=False):
    """The keywords the legacy operations end with (``**kw: Unpack[LaunchKeywords]``, spelled
    out in each one's signature with the defaults of :func:`launch_defaults`):

    - ``alpha``, ``beta`` (1.0, 0.0): cuDNN's blending rule, ``out = alpha * op(...) + beta *
      out``; ``beta`` must be 0 when the output is not given (it is allocated here).
    - ``handle`` (None): the :class:`~pycudnn.Handle` to run on; None: the calling thread's
      handle for the operands' device (:func:`pycudnn.get_handle`).
    - ``stream`` (None): the stream to run on; None: the stream set on the handle. A stream given
      here stays set on the handle.

    :func:`~pycudnn.ops.add_tensor` (``beta`` 1.0: it adds) and :func:`~pycudnn.ops.op_tensor`
    (``alpha1``, ``alpha2``) spell out their own scalars; ``handle`` and ``stream`` there are
    these.
    """

    alpha: float
    beta: float
    handle: Handle | None
    stream: Any


def launch_defaults(
    *, alpha: float = 1.0, beta: float = 0.0, handle: Handle | None = None, stream: Any = None
) -> None:
    """The one declaration of :class:`LaunchKeywords`' defaults: the primary that
    :func:`_nvbind.keywords.show_keywords` reads for each operation's signature."""


# Every LaunchKeywords key with its default, for take_keywords.
LAUNCH = keyword_defaults(launch_defaults)

_F = TypeVar("_F", bound=Callable[..., Any])


def shows(primary: Callable[..., Any], typed: type) -> Callable[[_F], _F]:
    """A decorator: the function, which takes ``**kw: Unpack[typed]``, with ``typed``'s keywords
    spelled out in its signature as ``primary`` declares them (:func:`show_keywords`)."""

    def spell(function: _F) -> _F:
        show_keywords({function.__name__: function}, primary, typed)
        return function

    return spell


# For an operation that ends with the launch keywords.
launch_keywords = shows(launch_defaults, LaunchKeywords)
