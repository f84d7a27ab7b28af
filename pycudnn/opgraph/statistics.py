"""Batch-norm building blocks as cuDNN's fused conv-BN graphs use them: per-channel statistics
(``OPERATION_GEN_STATS``), their finalization into an affine transform
(``OPERATION_BN_FINALIZE_STATISTICS``) and the weight gradients of batch norm
(``OPERATION_BN_BWD_WEIGHTS``). Channels are dim 1 (N, C, ...)."""

from __future__ import annotations

import math
import numbers
from typing import Any

from _nvbind.lazy_numpy import numpy_types

from .common import GraphError, _enum_member
from .core import GraphCore
from .kinds import (
    _need_dims,
    _need_dtype,
    _per_channel,
    _scalar_or_tensor,
    _start,
    require_kind,
)
from .tensors import Tensor

__all__ = ["StatisticsOps"]


class StatisticsOps(GraphCore):
    """``genstats``, ``batchnorm_finalize`` and ``batchnorm_backward_weights``."""

    def genstats(
        self,
        x: Tensor,
        *,
        compute_dtype: Any = None,
        name: str | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Per-channel sum and sum of squares of ``x`` (``OPERATION_GEN_STATS``, mode
        ``SUM_SQSUM``): two ``[1, C, 1, ...]`` float32 outputs, as cudnn-frontend's ``genstats``."""
        from .. import _bindings

        kind = "genstats"
        op_name, label = _start(self, kind, name, "OPERATION_GEN_STATS")
        x = self._own(x, label, "X")
        _need_dtype(x, "f", label, "X", "statistics are taken of floating-point data")
        pc = _per_channel(x)
        require_kind("OPERATION_GEN_STATS", label)
        s = self._output(label, op_name, "sum", pc, x, out=None, out_dtype="float32", inputs=(x,))
        sq = self._output(
            label, op_name, "sq_sum", pc, x, out=None, out_dtype="float32", inputs=(x,)
        )
        attrs = {
            "compute_dtype": self._compute(compute_dtype, label),
            "mode": _bindings.cudnnGenStatsMode_t.GENSTATS_SUM_SQSUM,
        }
        self._add_op(kind, op_name, {"x": x}, {"sum": s, "sq_sum": sq}, attrs)
        return s, sq

    def batchnorm_finalize(
        self,
        sum: Tensor,
        sq_sum: Tensor,
        scale: Tensor,
        bias: Tensor,
        *,
        epsilon: Any,
        accum_count: Any,
        prev_running_mean: Tensor | None = None,
        prev_running_var: Tensor | None = None,
        momentum: Any = None,
        training: bool = True,
        compute_dtype: Any = None,
        name: str | None = None,
    ) -> dict[str, Tensor]:
        """Turn per-channel sums into batch-norm's affine transform
        (``OPERATION_BN_FINALIZE_STATISTICS``, cudnn-frontend's ``bn_finalize``).

        ``sum``/``sq_sum`` (from :meth:`genstats`), ``scale`` and ``bias`` are ``[1, C, 1, ...]``;
        ``epsilon`` and ``momentum`` numbers or all-1 tensors; ``accum_count`` (elements per
        channel) an int or an int64 all-1 tensor. The running statistics are updated when
        ``prev_running_mean``/``prev_running_var`` and ``momentum`` are given. Returns a dict:
        ``eq_scale``, ``eq_bias``, ``mean``, ``inv_variance``, and ``next_running_mean``/
        ``next_running_var`` when updated.
        """
        from .. import _bindings

        kind = "batchnorm_finalize"
        op_name, label = _start(self, kind, name, "OPERATION_BN_FINALIZE_STATISTICS")
        s = self._own(sum, label, "SUM")
        pc = s.dims
        if s.ndim < 3 or pc[0] != 1 or any(d != 1 for d in pc[2:]):
            raise GraphError(f"{label}: SUM ('{s.name}') must be [1, C, 1, ...], got {list(pc)}")
        ins: dict[str, Tensor] = {"sum": s}
        for role, t in (("sq_sum", sq_sum), ("scale", scale), ("bias", bias)):
            ins[role] = self._own(t, label, role.upper())
            _need_dims(ins[role], pc, label, role.upper())
        rank = len(pc)
        require_kind("OPERATION_BN_FINALIZE_STATISTICS", label)
        _check_finalize_scalars(label, epsilon=epsilon, accum_count=accum_count, momentum=momentum)
        ins["epsilon"] = _scalar_or_tensor(
            self, epsilon, label=label, role="epsilon", rank=rank, dtype="float64",
            name=f"{op_name}.epsilon",
        )  # fmt: skip
        ins["accum_count"] = _scalar_or_tensor(
            self, accum_count, label=label, role="accum_count", rank=rank, dtype="int64",
            name=f"{op_name}.accum_count",
        )  # fmt: skip
        running = (prev_running_mean, prev_running_var, momentum)
        update = all(v is not None for v in running)
        if not update and any(v is not None for v in running):
            raise GraphError(
                f"{label}: give prev_running_mean, prev_running_var and momentum together (to "
                "update the running statistics) or none of them"
            )
        if update:
            assert prev_running_mean is not None and prev_running_var is not None
            for role, t in (
                ("prev_running_mean", prev_running_mean),
                ("prev_running_var", prev_running_var),
            ):
                ins[role] = self._own(t, label, role)
                _need_dims(ins[role], pc, label, role)
            ins["momentum"] = _scalar_or_tensor(
                self, momentum, label=label, role="momentum", rank=rank, dtype="float64",
                name=f"{op_name}.momentum",
            )  # fmt: skip
        if not isinstance(training, bool):
            raise TypeError(f"{label}: training must be a bool, not {training!r}")
        outs = {}
        roles = ["eq_scale", "eq_bias", "mean", "inv_variance"]
        if update:
            roles += ["next_running_mean", "next_running_var"]
        for role in roles:
            outs[role] = self._output(
                label, op_name, role, pc, s, out=None, out_dtype="float32", inputs=ins.values()
            )
        mode = _enum_member(
            _bindings.cudnnBnFinalizeStatsMode_t,
            "training" if training else "inference",
            "CUDNN_BN_FINALIZE_STATISTICS_",
            "bn finalize mode",
        )
        attrs = {"compute_dtype": self._compute(compute_dtype, label), "mode": mode}
        self._add_op(kind, op_name, ins, outs, attrs)
        return outs

    def batchnorm_backward_weights(
        self,
        dy: Tensor,
        x: Tensor,
        mean: Tensor,
        inv_variance: Tensor,
        scale: Tensor,
        *,
        compute_dtype: Any = None,
        name: str | None = None,
    ) -> dict[str, Tensor]:
        """Batch norm's weight gradients and the equivalent affine coefficients of its data
        gradient (``OPERATION_BN_BWD_WEIGHTS``, cudnn-frontend's ``dbn_weight``).

        ``dy`` and ``x`` share dims ``[N, C, ...]``; ``mean``, ``inv_variance`` and ``scale`` are
        ``[1, C, 1, ...]``. Returns a dict of ``[1, C, 1, ...]`` float32 tensors: ``dscale``,
        ``dbias``, ``eq_dy_scale``, ``eq_x_scale`` and ``eq_bias`` (so that
        ``dx = eq_dy_scale * dy + eq_x_scale * x + eq_bias``).
        """
        kind = "batchnorm_backward_weights"
        op_name, label = _start(self, kind, name, "OPERATION_BN_BWD_WEIGHTS")
        dy, x = self._own(dy, label, "DY"), self._own(x, label, "X")
        _need_dims(x, dy.dims, label, "X")
        pc = _per_channel(x)
        ins = {"dy": dy, "x": x}
        for role, t in (("mean", mean), ("inv_variance", inv_variance), ("scale", scale)):
            ins[role] = self._own(t, label, role.upper())
            _need_dims(ins[role], pc, label, role.upper())
        require_kind("OPERATION_BN_BWD_WEIGHTS", label)
        outs = {
            role: self._output(
                label, op_name, role, pc, x, out=None, out_dtype="float32", inputs=ins.values()
            )
            for role in ("dscale", "dbias", "eq_dy_scale", "eq_x_scale", "eq_bias")
        }
        attrs = {"compute_dtype": self._compute(compute_dtype, label)}
        self._add_op(kind, op_name, ins, outs, attrs)
        return outs


def _check_finalize_scalars(label: str, *, epsilon: Any, accum_count: Any, momentum: Any) -> None:
    """The numbers of a batch-norm finalize, checked as the other norms check theirs: an epsilon
    finite and above 0, a momentum finite in [0, 1], an element count a whole number of at least 1
    (cuDNN planned a NaN epsilon or a momentum of 5, and refused a count of 1.5 only at build).
    A tensor is the caller's, set per execution."""
    for role, value in (("epsilon", epsilon), ("momentum", momentum), ("accum_count", accum_count)):
        if value is None or isinstance(value, Tensor):
            continue
        reals: tuple[type[Any], ...] = (numbers.Real, *numpy_types("generic"))
        if isinstance(value, bool) or not isinstance(value, reals):
            continue  # refused with its type by _scalar_or_tensor
        try:
            number = float(value)
        except OverflowError:
            raise GraphError(f"{label}: {role} {value!r} is beyond a float") from None
        if role == "epsilon" and not (math.isfinite(number) and number > 0):
            raise GraphError(f"{label}: epsilon must be a finite number above 0, got {value!r}")
        if role == "momentum" and not (math.isfinite(number) and 0.0 <= number <= 1.0):
            raise GraphError(f"{label}: momentum must be a finite number in [0, 1], got {value!r}")
        if role == "accum_count" and not (
            math.isfinite(number) and number >= 1 and number == int(number)
        ):
            raise GraphError(
                f"{label}: accum_count (elements per channel) must be a whole number of at least "
                f"1, got {value!r}"
            )
