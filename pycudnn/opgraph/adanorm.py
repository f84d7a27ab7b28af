"""Adaptive layer norm (AdaLN, as in diffusion transformers: a scale and bias per sample):
``OPERATION_NORM_FORWARD`` / ``_BACKWARD`` in mode ``ADA_LAYER_NORM`` (cuDNN 9.7+).

The other norm modes of those descriptors belong to :mod:`.normalization`; this module builds only
the adaptive mode, as cudnn-frontend's ``adalayernorm`` / ``adalayernorm_backward`` do.
"""

from __future__ import annotations

from typing import Any

from .. import _attention_rules as rules
from .common import GraphError, _dims_text
from .core import GraphCore
from .kinds import _need_dims, _need_dtype, _scalar_or_tensor, _start, require_kind
from .norm_frontend_names import backward_names, forward_names, pick
from .tensors import Tensor

__all__ = ["AdaNormOps"]

_ADA_SINCE = (9, 7, 0)  # CUDNN_ADA_LAYER_NORM


def _stats_dims(x: Tensor, scale: Tensor) -> tuple[int, ...]:
    # cudnn-frontend: statistics are taken over the dims where the scale varies
    return tuple(
        d if i == 0 or s == 1 else 1
        for i, (d, s) in enumerate(zip(x.dims, scale.dims, strict=True))
    )


def _check_scale(x: Tensor, t: Tensor, label: str, role: str) -> None:
    if t.ndim != x.ndim or any(s not in (1, d) for s, d in zip(t.dims, x.dims, strict=True)):
        raise GraphError(
            f"{label}: {role} ('{t.name}') is {_dims_text(t.dims)}; each dim must be X's "
            f"({_dims_text(x.dims)}) or 1"
        )
    if t.dims[0] not in (1, x.dims[0]) or all(s == 1 for s in t.dims[1:]):
        raise GraphError(
            f"{label}: {role} ('{t.name}') {_dims_text(t.dims)} normalizes nothing: some dim "
            "after the batch must match X's"
        )


class AdaNormOps(GraphCore):
    """``adalayernorm`` and ``adalayernorm_backward``."""

    def adalayernorm(
        self,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        bias: Tensor | None = None,
        *,
        epsilon: Any = 1e-5,
        training: bool = True,
        name: str | None = None,
        out: Tensor | None = None,
        input: Tensor | None = None,
        norm_forward_phase: Any = None,
    ) -> Tensor | tuple[Tensor, Tensor, Tensor]:
        """Adaptive layer norm of ``x`` (``[B, S, D]`` or more dims): normalized over the dims
        where ``scale`` varies, then ``* scale + bias`` with a scale and bias per sample
        (``[B, 1, D]``) (``OPERATION_NORM_FORWARD``, mode ``ADA_LAYER_NORM``, cuDNN 9.7+).

        ``epsilon`` is a number or an all-1 tensor. Returns ``y``, or with ``training=True``
        ``(y, mean, inv_variance)`` (float32, X's dims with 1 where normalized) for the backward.
        ``input`` and ``norm_forward_phase``: cudnn-frontend's names for ``x`` and ``training``
        (:mod:`~pycudnn.opgraph.norm_frontend_names`).
        """
        x, training = forward_names(
            "adalayernorm", x, input, training, norm_forward_phase, default=True
        )
        from .. import _bindings

        kind = "adalayernorm"
        op_name, label = _start(self, kind, name, "OPERATION_NORM_FORWARD")
        x, sc, b = (self._own(t, label, r) for t, r in ((x, "X"), (scale, "SCALE"), (bias, "BIAS")))
        _need_dtype(x, "f", label, "X", "normalization takes floating-point input")
        _check_scale(x, sc, label, "SCALE")
        _need_dims(b, sc.dims, label, "BIAS")
        if not isinstance(training, bool):
            raise TypeError(f"{label}: training must be a bool, not {training!r}")
        require_kind("OPERATION_NORM_FORWARD", f"{label}: mode ADA_LAYER_NORM", since=_ADA_SINCE)
        require_kind("OPERATION_NORM_FORWARD", label)
        if not isinstance(epsilon, Tensor):
            try:  # NaN, infinite and non-positive epsilons give NaN outputs without an error
                rules.check_norm_scalar("adalayer", "epsilon", epsilon)
            except rules.RuleError as exc:
                raise GraphError(f"{label}: {exc}") from None
        eps = _scalar_or_tensor(
            self, epsilon, label=label, role="epsilon", rank=x.ndim, dtype="float32",
            name=f"{op_name}.epsilon",
        )  # fmt: skip
        ins = {"x": x, "scale": sc, "bias": b, "epsilon": eps}
        y = self._output(
            label, op_name, "y", x.dims, x, out=out, out_dtype=None, inputs=ins.values()
        )
        outs = {"y": y}
        if training:
            sd = _stats_dims(x, sc)
            for role in ("mean", "inv_variance"):
                outs[role] = self._output(
                    label, op_name, role, sd, x, out=None, out_dtype="float32"
                )
        phase = _bindings.cudnnBackendNormFwdPhase_t
        attrs = {
            "compute_dtype": self._compute_dtype,
            "mode": _bindings.cudnnBackendNormMode_t.ADA_LAYER_NORM,
            "phase": phase.TRAINING if training else phase.INFERENCE,
        }
        self._add_op(kind, op_name, ins, outs, attrs)
        return (y, outs["mean"], outs["inv_variance"]) if training else y

    def adalayernorm_backward(
        self,
        dy: Tensor | None = None,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        mean: Tensor | None = None,
        inv_variance: Tensor | None = None,
        *,
        dbias: bool = True,
        name: str | None = None,
        out: Tensor | None = None,
        grad: Tensor | None = None,
        input: Tensor | None = None,
        has_dbias: bool | None = None,
    ) -> tuple[Tensor, Tensor] | tuple[Tensor, Tensor, Tensor]:
        """The gradients of :meth:`adalayernorm` (``OPERATION_NORM_BACKWARD``, mode
        ``ADA_LAYER_NORM``, cuDNN 9.7+) from the forward's ``mean`` and ``inv_variance``.

        Returns ``(dx, dscale, dbias)``, or ``(dx, dscale)`` with ``dbias=False``. ``grad``,
        ``input`` and ``has_dbias``: cudnn-frontend's names for ``dy``, ``x`` and ``dbias``.
        """
        dy, x = backward_names("adalayernorm_backward", dy, grad, x, input)
        dbias = pick("adalayernorm_backward", "dbias", dbias, "has_dbias", has_dbias, default=True)
        from .. import _bindings

        kind = "adalayernorm_backward"
        op_name, label = _start(self, kind, name, "OPERATION_NORM_BACKWARD")
        dy, x, sc = (self._own(t, label, r) for t, r in ((dy, "DY"), (x, "X"), (scale, "SCALE")))
        _need_dims(dy, x.dims, label, "DY")
        _check_scale(x, sc, label, "SCALE")
        sd = _stats_dims(x, sc)
        ins = {"dy": dy, "x": x, "scale": sc}
        for role, t in (("mean", mean), ("inv_variance", inv_variance)):
            ins[role] = self._own(t, label, role)
            _need_dims(ins[role], sd, label, role)
        if not isinstance(dbias, bool):
            raise TypeError(f"{label}: dbias must be a bool, not {dbias!r}")
        require_kind("OPERATION_NORM_BACKWARD", f"{label}: mode ADA_LAYER_NORM", since=_ADA_SINCE)
        require_kind("OPERATION_NORM_BACKWARD", label)
        dx = self._output(
            label, op_name, "dx", x.dims, x, out=out, out_dtype=None, inputs=ins.values()
        )
        outs = {"dx": dx}
        roles = ("dscale", "dbias") if dbias else ("dscale",)
        for role in roles:
            # the gradients of the scale and bias have the scale's type
            outs[role] = self._output(
                label, op_name, role, sc.dims, sc, out=None, out_dtype=sc.dtype
            )
        attrs = {
            "compute_dtype": self._compute_dtype,
            "mode": _bindings.cudnnBackendNormMode_t.ADA_LAYER_NORM,
        }
        self._add_op(kind, op_name, ins, outs, attrs)
        return tuple(outs.values())  # type: ignore[return-value]
