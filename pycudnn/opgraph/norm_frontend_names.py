"""cudnn-frontend's keyword names for the norms, so that frontend code translates line by line.

NVIDIA's frontend spells ``g.layernorm(norm_forward_phase=TRAINING, input=x, scale=s, bias=b,
epsilon=e)``; :class:`~pycudnn.opgraph.normalization.NormalizationOps` and
:class:`~pycudnn.opgraph.adanorm.AdaNormOps` take those names as keyword-only aliases of their
own (``input`` for ``x``, ``grad`` for ``dy``, ``norm_forward_phase`` for ``training``,
``in_running_mean`` / ``in_running_var`` for ``running_mean`` / ``running_var``, ``has_dbias``
for ``with_dbias``). The helpers here resolve one name against its alias; giving both is a
``TypeError`` naming both, as Python's own for a doubled argument.
"""

from __future__ import annotations

from typing import Any

from .tensors import Tensor

__all__ = ["backward_names", "check_compute", "forward_names", "forward_phase", "pick"]


def pick(
    label: str, name: str, value: Any, alias: str, alias_value: Any, *, default: Any = None
) -> Any:
    """``value``, or ``alias_value`` when the frontend's name ``alias`` was given instead.

    A ``value`` equal to its ``default`` counts as not given (a keyword's default cannot be
    told from the same value given explicitly)."""
    if alias_value is None:
        return value
    if value is not None and value is not default and value != default:
        raise TypeError(f"{label}: got both {name} and its cudnn-frontend name {alias}; give one")
    return alias_value


def check_compute(label: str, compute: Any) -> None:
    """The frontend's ``compute_data_type``: None or float32 (``"float32"``, ``"float"``, NumPy's
    float32, or any object whose name ends in ``FLOAT`` as ``cudnn.data_type.FLOAT``), the only
    compute type these norms give cuDNN's NORM operations; another is refused, not ignored."""
    if compute is None:
        return
    text = str(getattr(compute, "name", None) or getattr(compute, "__name__", None) or compute)
    if text.upper() not in ("FLOAT32", "FLOAT") and not text.upper().endswith(".FLOAT"):
        raise ValueError(
            f"{label}: compute_data_type must be float32 (the norms compute in float32, as "
            f"cudnn-frontend's default), not {compute!r}"
        )


def forward_phase(label: str, training: bool, phase: Any, *, default: bool = False) -> bool:
    """``training``, or the frontend's ``norm_forward_phase`` as a bool: the strings
    ``"training"`` / ``"inference"`` (any case) or any object whose name ends in ``TRAINING`` /
    ``INFERENCE``, as ``cudnn.norm_forward_phase.TRAINING`` (read by name, so the frontend
    need not be installed)."""
    if phase is None:
        return training
    text = str(getattr(phase, "name", None) or phase).upper()
    for suffix, value in (("TRAINING", True), ("INFERENCE", False)):
        if text.endswith(suffix):
            if training is not default:  # the default cannot be told from not given
                raise TypeError(
                    f"{label}: got both training and its cudnn-frontend name norm_forward_phase; "
                    "give one"
                )
            return value
    raise ValueError(
        f"{label}: norm_forward_phase must be 'training' or 'inference' (or cudnn-frontend's "
        f"norm_forward_phase.TRAINING / INFERENCE), not {phase!r}"
    )


def forward_names(
    label: str,
    x: Tensor | None,
    input_: Tensor | None,
    training: bool,
    phase: Any,
    *,
    default: bool = False,
    compute: Any = None,
) -> tuple[Tensor | None, bool]:
    """A norm forward's X (``x`` or ``input``) and phase (``training`` or
    ``norm_forward_phase``), its ``compute_data_type`` checked (:func:`check_compute`)."""
    check_compute(label, compute)
    # a tensor still missing is refused by the operation itself, as a TypeError naming x
    return pick(label, "x", x, "input", input_), forward_phase(
        label, training, phase, default=default
    )


def backward_names(
    label: str,
    dy: Tensor | None,
    grad: Tensor | None,
    x: Tensor | None,
    input_: Tensor | None,
    *,
    compute: Any = None,
) -> tuple[Tensor | None, Tensor | None]:
    """A norm backward's dY (``dy`` or ``grad``) and X (``x`` or ``input``), its
    ``compute_data_type`` checked (:func:`check_compute`)."""
    check_compute(label, compute)
    return pick(label, "dy", dy, "grad", grad), pick(label, "x", x, "input", input_)
