"""Numbers checked, not trusted: verify cuDNN execution plans against an independent reference.

cuDNN's engine list is not a promise of right answers (cuDNN 9.19's engine 70 returns garbage for
some NCHW 16-bit weight gradients on an H100). This package executes a plan on seeded inputs and
compares its outputs with a reference computed without cuDNN:

- :mod:`.reference`: NumPy (float64) evaluation of a :class:`~pycudnn.Graph` from its public
  description (convolutions, matmul, pointwise modes, reductions and their fusions);
- :mod:`.inputs`: seeded inputs, scaled per data type and reduction length, laid out with the
  tensors' strides;
- :mod:`.tolerance`: the tolerance rules (data types, TF32 on tensor cores, reduction length);
- :mod:`.result`: :class:`VerifyResult` and the comparison;
- :mod:`.run`: :func:`verify_plan` (``Plan.verify()``), which needs a GPU;
- :mod:`.entries`: known-bad table entries from failed verifications;
- :mod:`.suite` and :mod:`.cli`: ``python -m pycudnn verify``.

See ``docs/verification.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from _nvbind.lazy import lazy_module_attributes

# The references are NumPy code for every operation: imported on the first verification (PEP 562),
# so that a process that only builds or loads plans never imports them.
_LAZY: dict[str, str] = {
    "entry_for": ".entries",
    "write_entries": ".entries",
    "make_inputs": ".inputs",
    "strided_array": ".inputs",
    "NoReferenceError": ".reference",
    "evaluate": ".reference",
    "reference_cost": ".reference",
    "OutputCheck": ".result",
    "VerifyResult": ".result",
    "compare": ".result",
    "DEFAULT_MAX_REFERENCE_COST": ".run",
    "verify_plan": ".run",
    "verify_plans": ".run",
    "Tolerance": ".tolerance",
    "tolerance_for": ".tolerance",
    "unit_roundoff": ".tolerance",
}
_SUBMODULES = {"entries", "inputs", "reference", "reference_attention", "result", "run",
               "slicing", "suite", "cli", "tolerance", "common"}  # fmt: skip

__all__ = [
    "DEFAULT_MAX_REFERENCE_COST",
    "NoReferenceError",
    "OutputCheck",
    "Tolerance",
    "VerifyResult",
    "compare",
    "entry_for",
    "evaluate",
    "make_inputs",
    "reference_cost",
    "strided_array",
    "tolerance_for",
    "unit_roundoff",
    "verify_plan",
    "verify_plans",
    "write_entries",
]


__getattr__, __dir__ = lazy_module_attributes(__name__, globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover
    from .entries import entry_for, write_entries
    from .inputs import make_inputs, strided_array
    from .reference import NoReferenceError, evaluate, reference_cost
    from .result import OutputCheck, VerifyResult, compare
    from .run import DEFAULT_MAX_REFERENCE_COST, verify_plan, verify_plans
    from .tolerance import Tolerance, tolerance_for, unit_roundoff
