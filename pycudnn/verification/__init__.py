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

from _nvbind.lazy import lazy_exports as _lazy_exports

# The references are NumPy code for every operation: imported on the first verification (PEP 562),
# so that a process that only builds or loads plans never imports them.
_LAZY = {
    ".entries": "entry_for write_entries",
    ".inputs": "make_inputs strided_array",
    ".reference": "NoReferenceError evaluate reference_cost",
    ".result": "OutputCheck VerifyResult compare",
    ".run": "DEFAULT_MAX_REFERENCE_COST verify_plan verify_plans",
    ".tolerance": "Tolerance tolerance_for unit_roundoff",
}
_SUBMODULES = {"entries", "inputs", "reference", "reference_attention", "result", "run",
               "slicing", "suite", "cli", "tolerance", "common"}  # fmt: skip


__all__, __getattr__, __dir__ = _lazy_exports(__name__, globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # pragma: no cover - the re-exports type checkers read ("X as X")
    from .entries import entry_for as entry_for
    from .entries import write_entries as write_entries
    from .inputs import make_inputs as make_inputs
    from .inputs import strided_array as strided_array
    from .reference import NoReferenceError as NoReferenceError
    from .reference import evaluate as evaluate
    from .reference import reference_cost as reference_cost
    from .result import OutputCheck as OutputCheck
    from .result import VerifyResult as VerifyResult
    from .result import compare as compare
    from .run import DEFAULT_MAX_REFERENCE_COST as DEFAULT_MAX_REFERENCE_COST
    from .run import verify_plan as verify_plan
    from .run import verify_plans as verify_plans
    from .tolerance import Tolerance as Tolerance
    from .tolerance import tolerance_for as tolerance_for
    from .tolerance import unit_roundoff as unit_roundoff
