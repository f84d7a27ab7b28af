"""What the norms of :mod:`.normalization` take and return: their shared keyword lists, each
declared once as a TypedDict (``**kw: Unpack[...]``, :mod:`_nvbind.keywords`), and their results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from _nvbind.keywords import take_keywords

from .norm_frontend_names import backward_names
from .tensors import Tensor

__all__ = [
    "NormBackwardKeywords",
    "NormBackwardNames",
    "NormGradients",
    "NormKeywords",
    "NormOutputs",
    "backward_keywords",
]


class NormKeywords(TypedDict, total=False):
    """The keywords of :meth:`NormalizationOps.layernorm` that ``rmsnorm`` takes too, with the
    same defaults: its fixed keyword list, for ``**kw: Unpack[NormKeywords]``."""

    epsilon: float | Tensor
    training: bool
    zero_centered_gamma: bool
    name: str | None
    input: Tensor | None
    norm_forward_phase: Any
    compute_data_type: Any


class NormBackwardNames(TypedDict, total=False):
    """The keywords every norm backward takes, as :meth:`NormalizationOps.layernorm_backward`
    declares them (``batchnorm_backward`` and ``instancenorm_backward`` take
    ``**kw: Unpack[NormBackwardNames]``): the operation's name and cudnn-frontend's names."""

    name: str | None
    grad: Tensor | None
    input: Tensor | None
    compute_data_type: Any


class NormBackwardKeywords(NormBackwardNames, total=False):
    """The keywords of :meth:`NormalizationOps.layernorm_backward` that ``rmsnorm_backward``
    takes too, with the same defaults: its fixed keyword list, for
    ``**kw: Unpack[NormBackwardKeywords]``."""

    zero_centered_gamma: bool


class NormOutputs(NamedTuple):
    """What a normalisation forward returns; fields that do not apply are None. RMS norm keeps
    the ``mean`` place (None): ``y, _, inv_var, *_ = g.rmsnorm(...)`` where cudnn-frontend's
    returns ``[Y, inv_var]``; read ``out.inv_variance`` to translate either way."""

    y: Tensor
    mean: Tensor | None
    inv_variance: Tensor | None
    running_mean: Tensor | None = None  # batch norm with running statistics: the updated ones
    running_var: Tensor | None = None


class NormGradients(NamedTuple):
    """What a normalisation backward returns."""

    dx: Tensor
    dscale: Tensor
    dbias: Tensor | None


def backward_keywords(
    function: str,
    dy: Tensor | None,
    x: Tensor | None,
    kw: Mapping[str, Any],
    defaults: Mapping[str, Any],
) -> tuple[Tensor | None, Tensor | None, str | None]:
    """``dy``, ``x`` (or cudnn-frontend's ``grad``, ``input``) and the name of a norm backward
    that takes :class:`NormBackwardNames` (``kw``, completed with their ``defaults``)."""
    k = take_keywords(function, kw, defaults)
    compute = k["compute_data_type"]
    dy, x = backward_names(function, dy, k["grad"], x, k["input"], compute=compute)
    return dy, x, k["name"]
