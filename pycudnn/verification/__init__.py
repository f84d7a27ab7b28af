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

from .entries import entry_for, write_entries
from .inputs import make_inputs, strided_array
from .reference import NoReferenceError, evaluate, reference_cost
from .result import OutputCheck, VerifyResult, compare
from .run import DEFAULT_MAX_REFERENCE_COST, verify_plan, verify_plans
from .tolerance import Tolerance, tolerance_for, unit_roundoff

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
