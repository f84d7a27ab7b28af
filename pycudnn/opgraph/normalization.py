"""Layer, RMS, batch and instance normalisation (``OPERATION_NORM_FORWARD`` / ``_BACKWARD``).

>>> g = pycudnn.Graph("ln")
>>> x = g.tensor([tokens, hidden, 1], dtype="bfloat16", name="x")
>>> scale = g.tensor([1, hidden, 1], name="scale")
>>> bias = g.tensor([1, hidden, 1], name="bias")
>>> y, mean, inv_var, *_ = g.layernorm(x, scale, bias, epsilon=1e-5, training=True)

Shapes follow cuDNN's NORM operations (:func:`pycudnn._attention_rules.norm_shapes`): layer and
RMS norms normalise over every dim but the first (give ``[rows, features, 1]`` for a 2-D input),
batch norm per channel (dim 1), instance norm per sample and channel. Scale and bias have dims
``[1, ...]``; the saved statistics (mean, inverse variance) are float32 graph tensors, outputs
of a training forward and inputs of the backward. Epsilon and the running-average factor are
by-value scalars of the graph.

Batch norm in inference phase has no engine in cuDNN 9.28 for the H100 (no heuristics mode
returns one), so :meth:`NormalizationOps.batchnorm_inference` builds the same arithmetic from
pointwise operations, which cuDNN fuses into one kernel. The NORM engines take no fused pointwise
neighbours (cuDNN 9.28, H100: ``hasProloguePwNodes() || hasEpiloguePwNodes()``): a graph with one
is refused by :meth:`Graph.build` with :class:`~pycudnn.plan.GraphNotSupportedError`; put the
pointwise operation in a graph of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from _nvbind.keywords import keyword_defaults, show_keywords, take_keywords
from _nvbind.strides import packed_strides_like

from .. import _attention_rules as rules
from .attention import spec
from .common import GraphError
from .norm_frontend_names import backward_names, forward_names, pick
from .norm_peer import peer_stats_inputs
from .norm_types import (
    NormBackwardKeywords,
    NormBackwardNames,
    NormGradients,
    NormKeywords,
    NormOutputs,
    backward_keywords,
)
from .pointwise import PointwiseOps
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = [
    "NormBackwardKeywords",
    "NormBackwardNames",
    "NormKeywords",
    "NormOutputs",
    "NormalizationOps",
]


def _norm_axes(stats_dims: tuple[int, ...], x_dims: tuple[int, ...]) -> tuple[int, ...]:
    """The axes a norm reduces over: where the statistics are 1 and X is not."""
    return tuple(i for i, (s, x) in enumerate(zip(stats_dims, x_dims, strict=True)) if s == 1 != x)


class NormalizationOps(PointwiseOps):
    """``layernorm``, ``rmsnorm``, ``batchnorm``, ``batchnorm_inference``, ``instancenorm`` and
    their backward operations."""

    def _check(self, label: str, fn: Any, *args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except rules.RuleError as exc:
            raise GraphError(f"{label}: {exc}") from None

    def _own_given(
        self, label: str, tensors: dict[str, Any], optional: tuple[str, ...]
    ) -> dict[str, Tensor]:
        """The tensors by role, each checked to be of this graph (``TypeError`` naming a required
        one that is None), leaving out the ``optional`` ones not given."""
        given = {r: t for r, t in tensors.items() if t is not None or r not in optional}
        return {r: self._own(t, label, r) for r, t in given.items()}

    def _scalar_spec(self, value: Any, label: str, what: str) -> Any:
        """An epsilon or momentum for the rules: the number, or the spec of a tensor."""
        if isinstance(value, Tensor):
            t = self._own(value, label, what)
            if not t.by_value:
                # cuDNN refuses it at finalize ("!epsilonPort.tensor.getIsByValue()", 9.28)
                raise GraphError(
                    f"{label}: {what} tensor '{t.name}' must be a by-value scalar "
                    f"(Graph.scalar(...)); set its value per execution with plan.set_scalar"
                )
            return spec(t)
        return value

    def _norm_scalar(self, value: Any, x: Tensor, name: str) -> Tensor:
        """An epsilon or momentum tensor: the caller's (set per execution), or a by-value scalar
        of the graph holding the number."""
        if isinstance(value, Tensor):
            return value
        return self.scalar(float(value), dtype="float32", rank=x.ndim, name=name)

    def _gamma_plus_one(self, scale: Tensor, op_name: str) -> Tensor:
        """``scale + 1``: a zero-centred gamma (the stored scale is gamma - 1), as a pointwise
        ADD in front of the norm, as NVIDIA's frontend sample does (cuDNN 9.7 and newer)."""
        one = self.scalar(1.0, dtype="float32", rank=scale.ndim, name=f"{op_name}.one")
        gamma = self.add(scale, one, name=self._op_name(f"{op_name}.gamma", None))
        gamma.set_dtype("float32")
        return gamma

    def _norm_forward(
        self,
        mode: str,
        x: Tensor | None,
        scale: Tensor | None,
        bias: Tensor | None,
        *,
        epsilon: float | Tensor,
        training: bool,
        running_mean: Tensor | None = None,
        running_var: Tensor | None = None,
        momentum: float | Tensor | None = None,
        zero_centered_gamma: bool = False,
        peer_stats: list[Tensor] | None = None,
        name: str | None,
    ) -> NormOutputs:
        op_name, label = self._begin_op(f"{mode}norm", name)
        if not isinstance(training, bool):
            raise TypeError(f"{label}: training must be a bool, not {training!r}")
        if not isinstance(zero_centered_gamma, bool):
            raise TypeError(
                f"{label}: zero_centered_gamma must be a bool, not {zero_centered_gamma!r}"
            )
        running = {"running_mean": running_mean, "running_var": running_var}
        tensors = {"x": x, "scale": scale, "bias": bias, **running}
        owned = self._own_given(label, tensors, ("bias", *running))
        sp = {r: spec(t) for r, t in owned.items()}
        shapes = self._check(
            label,
            rules.check_norm_forward,
            mode,
            sp["x"],
            sp["scale"],
            sp.get("bias"),
            epsilon=self._scalar_spec(epsilon, label, "epsilon"),
            running_mean=sp.get("running_mean"),
            running_var=sp.get("running_var"),
            momentum=self._scalar_spec(momentum, label, "momentum"),
        )
        x_t = owned["x"]
        if running_mean is not None and not training:
            raise GraphError(f"{label}: running statistics are updated in training only")
        inputs = dict(owned)
        inputs.update(peer_stats_inputs(label, peer_stats, x_t, self._own, backward=False))
        inputs["epsilon"] = self._norm_scalar(epsilon, x_t, f"{op_name}.epsilon")
        if momentum is not None:
            inputs["momentum"] = self._norm_scalar(momentum, x_t, f"{op_name}.momentum")
        if zero_centered_gamma:
            if any(d != 1 for d in shapes.stats_dims[1:]):
                # cuDNN 9.28 then deduces the rows from dim 0 alone and refuses the statistics
                # at finalize (CUDNN_STATUS_BAD_PARAM, "unexpected tensor size ... rows")
                raise GraphError(
                    f"{label}: zero_centered_gamma needs the norm over every dim but the first "
                    f"(cuDNN has no plan for it over the trailing dims of x "
                    f"{list(x_t.dims)}); fold x to [rows, features, 1] with scale [1, features, 1]"
                )
            inputs["scale"] = self._gamma_plus_one(owned["scale"], op_name)
        stats_strides = packed_strides_like(shapes.stats_dims, x_t.strides)

        def stat(role: str) -> Tensor:
            return self._output(
                label,
                op_name,
                role,
                shapes.stats_dims,
                x_t,
                out=None,
                out_dtype="float32",
                strides=stats_strides,
            )

        dt = x_t.element_type  # y has x's type and layout
        y = self._output(
            label, op_name, "y", x_t.dims, x_t, out=None, out_dtype=dt, strides=x_t.strides
        )
        outputs = {"y": y}
        if training:
            if mode != "rms":
                outputs["mean"] = stat("mean")
            outputs["inv_variance"] = stat("inv_variance")
        if running_mean is not None:
            outputs["next_running_mean"] = stat("next_running_mean")
            outputs["next_running_var"] = stat("next_running_var")
        attrs = {
            "compute_dtype": self._compute("float32", label),
            "mode": mode,
            "training": training,
            # None when given per execution (a tensor): the value is the tensor's
            "epsilon": None if isinstance(epsilon, Tensor) else float(epsilon),
            "norm_axes": _norm_axes(shapes.stats_dims, x_t.dims),
        }
        if zero_centered_gamma:
            attrs["zero_centered_gamma"] = True
        if momentum is not None:
            attrs["momentum"] = None if isinstance(momentum, Tensor) else float(momentum)
        self._add_op("norm_forward", op_name, inputs, outputs, attrs)
        return NormOutputs(
            y,
            outputs.get("mean"),
            outputs.get("inv_variance"),
            outputs.get("next_running_mean"),
            outputs.get("next_running_var"),
        )

    def layernorm(
        self,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        bias: Tensor | None = None,
        *,
        epsilon: float | Tensor = 1e-5,
        training: bool = False,
        zero_centered_gamma: bool = False,
        name: str | None = None,
        input: Tensor | None = None,
        norm_forward_phase: Any = None,
        compute_data_type: Any = None,
    ) -> NormOutputs:
        """Layer norm (``NORM_FORWARD``, ``LAYER_NORM``) over the dims where ``scale`` varies, as
        NVIDIA's frontend: ``x [B, S, E]`` with scale and bias ``[1, 1, E]`` normalises each
        token (stats ``[B, S, 1]``); scale ``[1, *x[1:]]`` normalises every dim but the first.

        ``training=True`` also returns the float32 mean and inverse standard deviation that
        :meth:`layernorm_backward` takes. ``epsilon``: a finite positive number, or a float32
        tensor of ones dims set per execution (a by-value :meth:`scalar` changed with
        ``plan.set_scalar``, as the frontend's pass-by-value epsilon). ``zero_centered_gamma``:
        the scale is stored as ``gamma - 1`` (cuDNN 9.7 and newer).

        cudnn-frontend's names work too (:mod:`~pycudnn.opgraph.norm_frontend_names`), as
        keywords: ``input`` for ``x``, ``norm_forward_phase`` (``"training"``, ``"inference"``
        or the frontend's enum) for ``training``.
        """
        x, training = forward_names(
            "layernorm", x, input, training, norm_forward_phase, compute=compute_data_type
        )
        kw: dict[str, Any] = {"epsilon": epsilon, "training": training, "name": name}
        return self._norm_forward(
            "layer", x, scale, bias, zero_centered_gamma=zero_centered_gamma, **kw
        )

    def rmsnorm(
        self,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        bias: Tensor | None = None,
        **kw: Unpack[NormKeywords],
    ) -> NormOutputs:
        """RMS norm (``NORM_FORWARD``, ``RMS_NORM``; no mean) over the dims where ``scale``
        varies; the keywords (``epsilon``, ``zero_centered_gamma``, ...) and their defaults as
        for :meth:`layernorm`."""
        k = take_keywords("rmsnorm", kw, _LAYER)
        phase, compute = k.pop("norm_forward_phase"), k.pop("compute_data_type")
        x, k["training"] = forward_names(
            "rmsnorm", x, k.pop("input"), k["training"], phase, compute=compute
        )
        return self._norm_forward("rms", x, scale, bias, **k)

    def instancenorm(
        self,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        bias: Tensor | None = None,
        *,
        epsilon: float = 1e-5,
        training: bool = False,
        name: str | None = None,
        input: Tensor | None = None,
        norm_forward_phase: Any = None,
        compute_data_type: Any = None,
    ) -> NormOutputs:
        """Instance norm of ``[N, C, ...]`` per sample and channel (``INSTANCE_NORM``);
        ``input`` and ``norm_forward_phase`` as for :meth:`layernorm`."""
        x, training = forward_names(
            "instancenorm", x, input, training, norm_forward_phase, compute=compute_data_type
        )
        return self._norm_forward(
            "instance", x, scale, bias, epsilon=epsilon, training=training, name=name
        )

    def batchnorm(
        self,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        bias: Tensor | None = None,
        *,
        epsilon: float | Tensor = 1e-5,
        running_mean: Tensor | None = None,
        running_var: Tensor | None = None,
        momentum: float | Tensor | None = None,
        peer_stats: list[Tensor] | None = None,
        name: str | None = None,
        input: Tensor | None = None,
        in_running_mean: Tensor | None = None,
        in_running_var: Tensor | None = None,
        compute_data_type: Any = None,
    ) -> NormOutputs:
        """Training batch norm of ``[N, C, ...]`` per channel (``BATCH_NORM``, training phase).

        Returns y, the batch's mean and inverse standard deviation ``[1, C, 1, ...]``, and with
        ``running_mean``/``running_var`` and ``momentum`` (``EXP_AVG_FACTOR``) the updated running
        statistics (``(1 - momentum) * running + momentum * batch``, as PyTorch's). ``epsilon``
        and ``momentum`` may be float32 tensors of ones dims, set per execution.

        ``peer_stats``: for a batch norm over the GPUs of a node, the communication buffers
        through which they exchange their partial statistics (``NORM_FWD_PEER_STAT_DESCS``), one
        per GPU, each float32 ``[2, 4 * C, 1, ...]`` packed, as cudnn-frontend's
        (:mod:`pycudnn.opgraph.norm_peer`).

        cudnn-frontend's names as keywords: ``input`` for ``x``, ``in_running_mean`` and
        ``in_running_var`` for ``running_mean`` and ``running_var``.
        """
        x, _ = forward_names(
            "batchnorm", x, input, True, None, default=True, compute=compute_data_type
        )
        running_mean = pick(
            "batchnorm", "running_mean", running_mean, "in_running_mean", in_running_mean
        )
        running_var = pick(
            "batchnorm", "running_var", running_var, "in_running_var", in_running_var
        )
        if running_mean is not None and momentum is None:
            momentum = 0.1
        kw: dict[str, Any] = {"running_mean": running_mean, "running_var": running_var}
        kw.update(epsilon=epsilon, training=True, momentum=momentum, name=name)
        kw["peer_stats"] = peer_stats
        return self._norm_forward("batch", x, scale, bias, **kw)

    def batchnorm_inference(
        self,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        bias: Tensor | None = None,
        mean: Tensor | None = None,
        inv_variance: Tensor | None = None,
        *,
        implementation: str = "pointwise",
        name: str | None = None,
        input: Tensor | None = None,
        compute_data_type: Any = None,
    ) -> Tensor:
        """``(x - mean) * inv_variance * scale + bias`` per channel.

        ``implementation="pointwise"`` (default) builds it from SUB, MUL, MUL, ADD, which fuse
        into one kernel: cuDNN 9.28's inference-phase ``BATCH_NORM`` has no engine on the H100
        for any heuristics mode alone. ``"norm"`` is that ``NORM_FORWARD`` operation in inference
        phase, as cudnn-frontend's ``batchnorm_inference``: it plans fused in front of
        ``relu_bwd`` and :meth:`batchnorm_backward` (the frontend's BN-inference, dReLU, dBN
        pattern: engine 0 on the H100), where the pointwise form has none; alone it has no
        engine. ``inv_variance`` is ``1 / sqrt(running_var + epsilon)``. ``input``:
        cudnn-frontend's name for ``x`` (its positional order is input, mean, inv_variance,
        scale, bias: give them as keywords).
        """
        x, _ = forward_names(
            "batchnorm_inference", x, input, False, None, compute=compute_data_type
        )
        if implementation not in ("pointwise", "norm"):
            raise GraphError(
                f"batchnorm_inference: implementation must be 'pointwise' or 'norm', not "
                f"{implementation!r}"
            )
        label = f"batchnorm_inference '{name or 'batchnorm_inference'}'"
        self._check_mutable()
        tensors = {"x": x, "scale": scale, "bias": bias, "mean": mean, "inv_variance": inv_variance}
        inputs = self._own_given(label, tensors, ())  # each a tensor of this graph, in turn
        x, scale, bias, mean, inv_variance = inputs.values()
        shapes = self._check(
            label, rules.check_norm_forward, "batch", spec(x), spec(scale), spec(bias), epsilon=1.0
        )
        for role, t in (("mean", mean), ("inv_variance", inv_variance)):
            if t.dims != shapes.stats_dims:
                raise GraphError(
                    f"{label}: {role} '{t.name}' must have dims {list(shapes.stats_dims)}, got "
                    f"{list(t.dims)}"
                )
        if implementation == "norm":
            op_name, label = self._begin_op("batchnorm_inference", name)
            y = self._output(
                label, op_name, "y", x.dims, x, out=None, out_dtype=x.dtype, strides=x.strides
            )
            attrs = {
                "compute_dtype": self._compute("float32", label),
                "mode": "batch",
                "training": False,
                "norm_axes": _norm_axes(shapes.stats_dims, x.dims),
            }
            self._add_op("norm_forward", op_name, inputs, {"y": y}, attrs)
            return y
        prefix = name or "bn_inference"
        centred = self.sub(x, mean, name=self._op_name(f"{prefix}.sub", None))
        normed = self.mul(centred, inv_variance, name=self._op_name(f"{prefix}.mul_inv_var", None))
        scaled = self.mul(normed, scale, name=self._op_name(f"{prefix}.mul_scale", None))
        y = self.add(scaled, bias, name=self._op_name(f"{prefix}.add_bias", None))
        y.set_output(dtype=x.dtype)
        return y

    def _norm_backward(  # noqa: PLR0917 - private, shared by the norm backward methods
        self,
        mode: str,
        dy: Tensor | None,
        x: Tensor | None,
        scale: Tensor | None,
        mean: Tensor | None,
        inv_variance: Tensor | None,
        *,
        with_dbias: bool = True,
        epsilon: float | Tensor | None = None,
        name: str | None,
        zero_centered_gamma: bool = False,
        peer_stats: list[Tensor] | None = None,
    ) -> NormGradients:
        op_name, label = self._begin_op(f"{mode}norm_backward", name)
        tensors = {"x": x, "dy": dy, "scale": scale, "mean": mean, "inv_variance": inv_variance}
        owned = self._own_given(label, tensors, ("mean",))
        sp = {r: spec(t) for r, t in owned.items()}
        kw = {"scale": sp["scale"], "mean": sp.get("mean"), "inv_variance": sp["inv_variance"]}
        shapes = self._check(label, rules.check_norm_backward, mode, sp["dy"], sp["x"], **kw)
        x_t = owned["x"]
        inputs = dict(owned)
        inputs.update(peer_stats_inputs(label, peer_stats, x_t, self._own, backward=True))
        if epsilon is not None:
            self._check(
                label,
                rules.check_norm_scalar,
                mode,
                "epsilon",
                self._scalar_spec(epsilon, label, "epsilon"),
            )
            inputs["epsilon"] = self._norm_scalar(epsilon, x_t, f"{op_name}.epsilon")
        if not isinstance(zero_centered_gamma, bool):
            raise TypeError(
                f"{label}: zero_centered_gamma must be a bool, not {zero_centered_gamma!r}"
            )
        if zero_centered_gamma:
            inputs["scale"] = self._gamma_plus_one(owned["scale"], op_name)
        s_t, dt = owned["scale"], x_t.element_type  # dx has x's type and layout
        dx = self._output(
            label, op_name, "dx", x_t.dims, x_t, out=None, out_dtype=dt, strides=x_t.strides
        )
        outputs = {"dx": dx}
        for role in ("dscale", "dbias") if with_dbias else ("dscale",):
            outputs[role] = self._output(
                label,
                op_name,
                role,
                shapes.param_dims,
                s_t,
                out=None,
                out_dtype=s_t.element_type,
                strides=s_t.strides,
            )
        attrs: dict[str, Any] = {
            "compute_dtype": self._compute("float32", label),
            "mode": mode,
            "norm_axes": _norm_axes(shapes.stats_dims, x_t.dims),
        }
        if zero_centered_gamma:
            attrs["zero_centered_gamma"] = True
        self._add_op("norm_backward", op_name, inputs, outputs, attrs)
        return NormGradients(dx, outputs["dscale"], outputs.get("dbias"))

    def layernorm_backward(
        self,
        dy: Tensor | None = None,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        mean: Tensor | None = None,
        inv_variance: Tensor | None = None,
        *,
        epsilon: float | Tensor | None = None,
        zero_centered_gamma: bool = False,
        name: str | None = None,
        grad: Tensor | None = None,
        input: Tensor | None = None,
        compute_data_type: Any = None,
    ) -> NormGradients:
        """``(dx, dscale, dbias)`` of :meth:`layernorm` from its saved statistics (``NORM_BACKWARD``);
        ``zero_centered_gamma`` as given to the forward; ``grad`` and ``input``: cudnn-frontend's
        names for ``dy`` and ``x``."""
        dy, x = backward_names("layernorm_backward", dy, grad, x, input, compute=compute_data_type)
        stats, zero = (mean, inv_variance), zero_centered_gamma
        return self._norm_backward(
            "layer", dy, x, scale, *stats, epsilon=epsilon, name=name, zero_centered_gamma=zero
        )

    def rmsnorm_backward(
        self,
        dy: Tensor | None = None,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        inv_variance: Tensor | None = None,
        *,
        with_dbias: bool = False,
        has_dbias: bool | None = None,
        **kw: Unpack[NormBackwardKeywords],
    ) -> NormGradients:
        """``(dx, dscale, dbias or None)`` of :meth:`rmsnorm` (``NORM_BACKWARD``, ``RMS_NORM``);
        ``zero_centered_gamma`` and ``name`` and their defaults as for
        :meth:`layernorm_backward`, ``grad`` and ``input`` too; ``has_dbias``: cudnn-frontend's
        name for ``with_dbias``."""
        k = take_keywords("rmsnorm_backward", kw, _LAYER_BACKWARD)
        grad, compute = k.pop("grad"), k.pop("compute_data_type")
        dy, x = backward_names("rmsnorm_backward", dy, grad, x, k.pop("input"), compute=compute)
        with_dbias = pick(
            "rmsnorm_backward", "with_dbias", with_dbias, "has_dbias", has_dbias, default=False
        )
        stats = (None, inv_variance)  # RMS norm saves no mean
        return self._norm_backward("rms", dy, x, scale, *stats, with_dbias=with_dbias, **k)

    def batchnorm_backward(
        self,
        dy: Tensor | None = None,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        mean: Tensor | None = None,
        inv_variance: Tensor | None = None,
        *,
        peer_stats: list[Tensor] | None = None,
        **kw: Unpack[NormBackwardNames],
    ) -> NormGradients:
        """``(dx, dscale, dbias)`` of :meth:`batchnorm` from the batch statistics it saved;
        ``peer_stats`` (``NORM_BWD_PEER_STAT_DESCS``) as for :meth:`batchnorm`, 2 or more;
        ``name``, ``grad``, ``input`` and ``compute_data_type`` as for
        :meth:`layernorm_backward`."""
        dy, x, name = backward_keywords("batchnorm_backward", dy, x, kw, _BACKWARD_NAMES)
        stats = (mean, inv_variance)
        return self._norm_backward("batch", dy, x, scale, *stats, name=name, peer_stats=peer_stats)

    def instancenorm_backward(
        self,
        dy: Tensor | None = None,
        x: Tensor | None = None,
        scale: Tensor | None = None,
        mean: Tensor | None = None,
        inv_variance: Tensor | None = None,
        **kw: Unpack[NormBackwardNames],
    ) -> NormGradients:
        """``(dx, dscale, dbias)`` of :meth:`instancenorm` from its saved statistics; ``name``,
        ``grad``, ``input`` and ``compute_data_type`` as for :meth:`layernorm_backward`."""
        dy, x, name = backward_keywords("instancenorm_backward", dy, x, kw, _BACKWARD_NAMES)
        return self._norm_backward("instance", dy, x, scale, mean, inv_variance, name=name)


# layernorm spells out the keywords (and defaults) that rmsnorm takes as NormKeywords, and
# layernorm_backward those that rmsnorm_backward takes as NormBackwardKeywords (and the other
# norm backwards as NormBackwardNames).
_LAYER = keyword_defaults(NormalizationOps.layernorm)
_LAYER_BACKWARD = keyword_defaults(
    NormalizationOps.layernorm_backward, NormBackwardKeywords.__annotations__
)
_BACKWARD_NAMES = keyword_defaults(
    NormalizationOps.layernorm_backward, NormBackwardNames.__annotations__
)
show_keywords(vars(NormalizationOps), NormalizationOps.layernorm, NormKeywords)
show_keywords(
    vars(NormalizationOps),
    NormalizationOps.layernorm_backward,
    NormBackwardKeywords,
    NormBackwardNames,
)
