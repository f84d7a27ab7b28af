"""Random numbers (``OPERATION_RNG`` with an ``RNG`` descriptor: dropout masks and noise) and
signalling between graphs (``OPERATION_SIGNAL``)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from _nvbind.dtypes import as_numpy_dtype

from .common import GraphError, _cudnn_dtype, _enum_member
from .core import GraphCore
from .kinds import _int_arg, _need_dtype, _start, require_kind
from .tensors import Tensor

__all__ = ["RngOps"]


class RngOps(GraphCore):
    """``rng`` and ``signal``."""

    def rng(
        self,
        dims: Sequence[int],
        *,
        seed: Tensor | int,
        offset: Tensor | None = None,
        distribution: Any = "bernoulli",
        probability: float | None = None,
        minimum: float = 0.0,
        maximum: float = 1.0,
        mean: float = 0.0,
        std: float = 1.0,
        strides: Sequence[int] | None = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """A tensor of random numbers (``OPERATION_RNG``), e.g. a dropout mask (float32 unless
        ``out_dtype`` or the dtype of ``out`` says otherwise).

        ``distribution``: ``bernoulli`` (``probability`` of a 1, required), ``uniform``
        (``minimum``, ``maximum``) or ``normal`` (``mean``, ``std``). ``seed``: an int fixed in the
        graph, or an all-1 int64 tensor given at execute; ``offset``: an all-1 int64 tensor
        (Philox offset), so that successive runs draw new numbers without rebuilding.
        """
        from .. import _bindings

        kind = "rng"
        op_name, label = _start(self, kind, name, "OPERATION_RNG")
        od = self._check_dims(dims, f"{label}: dims")
        st = self._check_strides(od, strides, None, f"{label}: strides")
        dist = _enum_member(
            _bindings.cudnnRngDistribution_t,
            distribution,
            "CUDNN_RNG_DISTRIBUTION_",
            "distribution",
        )
        attrs: dict[str, Any] = {"compute_dtype": self._compute_dtype, "distribution": dist}
        if dist.name == "BERNOULLI":
            if probability is None:
                raise GraphError(f"{label}: the bernoulli distribution needs probability=")
            p = self._real(probability, f"{label}: probability")
            if not 0.0 <= p <= 1.0:
                raise GraphError(f"{label}: probability {p} is not in [0, 1]")
            attrs["probability"] = p
        elif dist.name == "UNIFORM":
            lo, hi = (
                self._real(minimum, f"{label}: minimum"),
                self._real(maximum, f"{label}: maximum"),
            )
            if not lo < hi:
                raise GraphError(f"{label}: minimum {lo} must be below maximum {hi}")
            attrs["minimum"], attrs["maximum"] = lo, hi
        else:
            s = self._real(std, f"{label}: std")
            if s < 0:
                raise GraphError(f"{label}: std {s} is negative")
            attrs["mean"], attrs["std"] = self._real(mean, f"{label}: mean"), s
        ins: dict[str, Tensor] = {}
        for role, t in (("seed", seed), ("offset", offset)):
            if isinstance(t, Tensor):
                ins[role] = self._own(t, label, role)
                if any(d != 1 for d in ins[role].dims):
                    raise GraphError(f"{label}: {role} ('{t.name}') must have all dims 1")
                _need_dtype(ins[role], "i", label, role, "seeds and offsets are int64")
            elif role == "seed":
                if isinstance(t, bool) or not isinstance(t, numbers.Integral):
                    raise TypeError(f"{label}: seed must be an int or a Tensor, not {t!r}")
                attrs["seed_value"] = int(t)
            elif t is not None:
                raise TypeError(f"{label}: offset must be a Tensor, not {t!r}")
        require_kind("OPERATION_RNG", label)
        if out is not None:
            y = self._output(
                label, op_name, "y", od, out, out=out, out_dtype=out_dtype, inputs=ins.values()
            )
        else:
            # no input to take a layout from: the output is laid out by `strides`
            dt = as_numpy_dtype(out_dtype or "float32", name=f"{label}: out_dtype")
            _cudnn_dtype(dt, f"{label}: out_dtype")
            y = self._new_tensor((None, f"{op_name}.y"), od, st, dt, virtual=None)
        self._add_op(kind, op_name, ins, {"y": y}, attrs)
        return y

    def signal(
        self,
        x: Tensor,
        flag: Tensor,
        *,
        mode: Any = "set",
        value: int,
        name: str | None = None,
        out: Tensor | None = None,
    ) -> Tensor:
        """Pass ``x`` through while setting (``mode="set"``) or waiting for (``"wait"``) the
        int64 ``flag`` to equal ``value`` (``OPERATION_SIGNAL``): ordering between graphs
        that share memory. Returns ``y`` (``x`` passed through)."""
        from .. import _bindings

        kind = "signal"
        op_name, label = _start(self, kind, name, "OPERATION_SIGNAL")
        x, f = self._own(x, label, "X"), self._own(flag, label, "FLAG")
        smode = _enum_member(_bindings.cudnnSignalMode_t, mode, "CUDNN_SIGNAL_", "signal mode")
        if any(d != 1 for d in f.dims):
            raise GraphError(f"{label}: FLAG ('{f.name}') must have all dims 1")
        _need_dtype(f, "i", label, "FLAG", "the flag is an int64")
        v = _int_arg(value, f"{label}: value")
        require_kind("OPERATION_SIGNAL", label)
        attrs = {"compute_dtype": self._compute_dtype, "mode": smode, "value": v}
        ins, y = {"x": x, "flag": f}, ("y", x.dims, x)
        return self._produce(
            kind, op_name, label, ins, y, attrs=attrs, out=out, out_dtype=x.element_type
        )
