"""Pointwise (elementwise) operations: every cuDNN pointwise mode, with broadcasting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from _nvbind.dtypes import as_data_type, dtype_name
from _nvbind.keywords import show_keywords

from .common import (
    GraphError,
    PointwiseMode,
    _broadcast,
    _dims_text,
    _enum_member,
    check_scalar_value,
)
from .core import GraphCore
from .tensors import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+

__all__ = [
    "POINTWISE_ARITY",
    "BinaryKeywords",
    "PointwiseOps",
    "UnaryKeywords",
    "pointwise_arity",
    "pointwise_mode",
]


class UnaryKeywords(TypedDict, total=False):
    """The keywords of :meth:`PointwiseOps.pointwise` that a one-input shortcut (``relu``,
    ``exp``, ...) passes on: its fixed keyword list, for ``**kw: Unpack[UnaryKeywords]``."""

    compute_dtype: Any
    alpha1: float
    name: str | None
    out: Tensor | None
    out_dtype: Any


class BinaryKeywords(UnaryKeywords, total=False):
    """:class:`UnaryKeywords` and ``alpha2``, for the two-input shortcuts (``add``, ``mul``, ...)."""

    alpha2: float


# --------------------------------------------------------------------------------------------------
# Pointwise modes: arity from the enumerator names
# --------------------------------------------------------------------------------------------------

# Binary arithmetic and logic; comparisons (CMP_*) are binary too. Activation backward modes
# (*_BWD) take the forward input and the incoming gradient; BINARY_SELECT takes three tensors.
_BINARY = frozenset(
    {
        "ADD",
        "ADD_SQUARE",
        "DIV",
        "MAX",
        "MIN",
        "MOD",
        "MUL",
        "POW",
        "SUB",
        "ATAN2",
        "FLOOR_MOD",
        "LOGICAL_AND",
        "LOGICAL_OR",
    }
)


#: The pointwise attributes not range-checked as floats (see PointwiseOps.pointwise).
_UNCHECKED = frozenset({"mode", "compute_dtype", "relu_lower_clip", "relu_upper_clip"})


def pointwise_arity(mode: Any) -> int:
    """Number of input tensors of a pointwise mode: 1, 2 (binary, comparisons, ``*_BWD``) or 3."""
    name = pointwise_mode(mode).name
    if name == "BINARY_SELECT":
        return 3
    if name.endswith("_BWD") or name.startswith("CMP_") or name in _BINARY:
        return 2
    return 1


def pointwise_mode(mode: Any) -> Any:
    """A ``cudnnPointwiseMode_t`` from a member, int or name (``"relu_fwd"``, ``"CMP_GT"``)."""
    return _enum_member(PointwiseMode, mode, "CUDNN_POINTWISE_", "pointwise mode")


POINTWISE_ARITY: dict[str, int] = {m.name: pointwise_arity(m) for m in PointwiseMode}


class _Unary(Protocol):
    """A one-input shortcut, as its callers see it (bound to a graph)."""

    def __call__(self, x: Tensor, **kw: Unpack[UnaryKeywords]) -> Tensor: ...


class _Binary(Protocol):
    """A two-input shortcut, as its callers see it (bound to a graph)."""

    def __call__(self, a: Tensor, b: Tensor, **kw: Unpack[BinaryKeywords]) -> Tensor: ...


def _doc(mode: str, what: str, tail: str) -> str:
    # "exp(x) (CUDNN_POINTWISE_EXP); keywords as for pointwise", unless a tail says more.
    return f"{what} (``CUDNN_POINTWISE_{mode}``); {tail or 'keywords as for :meth:`pointwise`'}."


def _binary(mode: str, what: str, tail: str = "") -> _Binary:
    """The two-input shortcut method for pointwise ``mode`` (its docstring from ``what``)."""

    def shortcut(self: PointwiseOps, a: Tensor, b: Tensor, **kw: Unpack[BinaryKeywords]) -> Tensor:
        return self.pointwise(mode, a, b, **kw)

    shortcut.__doc__ = _doc(mode, what, tail)
    return cast("_Binary", shortcut)


def _unary(mode: str, what: str) -> _Unary:
    """The one-input shortcut method for pointwise ``mode`` (its docstring from ``what``)."""

    def shortcut(self: PointwiseOps, x: Tensor, **kw: Unpack[UnaryKeywords]) -> Tensor:
        return self.pointwise(mode, x, **kw)

    shortcut.__doc__ = _doc(mode, what, "")
    return cast("_Unary", shortcut)


class PointwiseOps(GraphCore):
    """Pointwise (elementwise) operations: every cuDNN pointwise mode, with broadcasting."""

    def pointwise(
        self,
        mode: Any,
        x: Tensor,
        b: Tensor | None = None,
        t: Tensor | None = None,
        *,
        compute_dtype: Any = None,
        alpha1: float = 1.0,
        alpha2: float = 1.0,
        relu_lower_clip: float | None = None,
        relu_upper_clip: float | None = None,
        relu_lower_clip_slope: float | None = None,
        elu_alpha: float | None = None,
        softplus_beta: float | None = None,
        swish_beta: float | None = None,
        axis: int | None = None,
        name: str | None = None,
        out: Tensor | None = None,
        out_dtype: Any = None,
    ) -> Tensor:
        """Any ``cudnnPointwiseMode_t`` (``OPERATION_POINTWISE``).

        Unary modes take ``x``; binary modes (arithmetic, ``cmp_*``, ``logical_and/or``) take
        ``x`` and ``b`` with size-1 dims broadcasting; activation-backward modes (``*_bwd``)
        take the forward input ``x`` and the gradient ``b`` (= dY) and return dX;
        ``binary_select`` takes ``x``, ``b`` and the mask ``t`` (``t ? x : b``, no broadcasting).
        """
        pmode = pointwise_mode(mode)
        kind = "pointwise"
        op_name = self._op_name(pmode.name.lower(), name)
        label = f"{pmode.name.lower()} '{op_name}'"
        self._check_mutable()
        arity = pointwise_arity(pmode)
        backward = pmode.name.endswith("_BWD")
        given = [v for v in (x, b, t) if v is not None]
        if len(given) != arity or (arity >= 2 and b is None) or (arity == 3 and t is None):
            roles = {1: "x", 2: "x and dy" if backward else "x and b", 3: "x, b and the mask t"}
            raise GraphError(
                f"{label}: {pmode.name.lower()} takes {arity} input tensor(s) ({roles[arity]}), "
                f"got {len(given)}"
            )
        x = self._own(x, label, "X")
        roles_in = {"x": x}
        if b is not None:
            roles_in["dy" if backward else "b"] = self._own(b, label, "DY" if backward else "B")
        if t is not None:
            roles_in["t"] = self._own(t, label, "T")
        tensors = list(roles_in.items())
        dims = x.dims
        like = x
        for role, other in tensors[1:]:
            if arity == 3:
                if other.dims != x.dims:
                    raise GraphError(
                        f"{label}: {role.upper()} ('{other.name}') is {_dims_text(other.dims)} but X "
                        f"('{x.name}') is {_dims_text(x.dims)}; binary_select does not broadcast"
                    )
                continue
            bd = _broadcast(dims, other.dims)
            if bd is None:
                raise GraphError(
                    f"{label}: {role.upper()} ('{other.name}') dims {_dims_text(other.dims)} do not "
                    f"broadcast with X ('{x.name}') dims {_dims_text(x.dims)} (same rank; each "
                    "pair equal or one of them 1)"
                )
            if bd == other.dims and bd != dims and not other.by_value:
                like = other
            dims = bd
        attrs: dict[str, Any] = {
            "mode": pmode,
            "compute_dtype": self._compute(compute_dtype, label),
        }
        if alpha1 != 1.0:
            attrs["alpha1"] = self._real(alpha1, f"{label}: alpha1")
        if alpha2 != 1.0:
            if arity != 2 or backward:
                raise GraphError(f"{label}: alpha2 applies to binary modes only")
            attrs["alpha2"] = self._real(alpha2, f"{label}: alpha2")
        for key, value in (
            ("relu_lower_clip", relu_lower_clip),
            ("relu_upper_clip", relu_upper_clip),
            ("relu_lower_clip_slope", relu_lower_clip_slope),
            ("elu_alpha", elu_alpha),
            ("softplus_beta", softplus_beta),
            ("swish_beta", swish_beta),
        ):
            if value is not None:
                attrs[key] = self._real(value, f"{label}: {key}")
        if dtype_name(attrs["compute_dtype"]) != "float64":
            # cuDNN gets the scales and parameters as floats then: 1e39 would be inf and 1e-50
            # zero. A clip past float range saturates to the same clip of float data: it passes.
            for key in [k for k in attrs if k not in _UNCHECKED]:
                check_scalar_value(attrs[key], as_data_type("float32"), f"{label}: {key}")
        if axis is not None:
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise TypeError(f"{label}: axis must be an int, not {axis!r}")
            if not 0 <= axis < len(dims):
                raise GraphError(f"{label}: axis {axis} is out of range for rank {len(dims)}")
            attrs["axis"] = axis
        role_out = "dx" if backward else "y"
        y = (role_out, dims, like)
        return self._produce(
            kind, op_name, label, roles_in, y, attrs=attrs, out=out, out_dtype=out_dtype
        )

    # Convenience spellings of common pointwise modes. Those that take only pointwise's keywords
    # are one table row each (made by _binary and _unary); those with their own follow.
    add = _binary("ADD", "``a + b``", "with ``alpha1``/``alpha2``: ``alpha1*a + alpha2*b``")
    sub = _binary("SUB", "``a - b``")
    mul = _binary("MUL", "``a * b``")
    div = _binary("DIV", "``a / b``")
    maximum = _binary("MAX", "Elementwise maximum")
    minimum = _binary("MIN", "Elementwise minimum")
    pow = _binary("POW", "``a ** b``")
    sigmoid = _unary("SIGMOID_FWD", "Logistic sigmoid")
    tanh = _unary("TANH_FWD", "Hyperbolic tangent")
    exp = _unary("EXP", "``exp(x)``")
    log = _unary("LOG", "Natural logarithm")
    sqrt = _unary("SQRT", "Square root")
    rsqrt = _unary("RSQRT", "``1 / sqrt(x)``")
    abs = _unary("ABS", "Absolute value")
    neg = _unary("NEG", "``-x``")
    reciprocal = _unary("RECIPROCAL", "``1 / x``")

    def bias(self, x: Tensor, bias: Tensor, **kw: Unpack[BinaryKeywords]) -> Tensor:
        """``x + bias`` with broadcasting (bias ``[1, C, 1, 1]`` for NCHW-logical tensors)."""
        return self.pointwise("ADD", x, bias, **kw)

    def scale(self, x: Tensor, scale: Tensor, **kw: Unpack[BinaryKeywords]) -> Tensor:
        """``x * scale`` with broadcasting (a per-channel tensor or a by-value scalar)."""
        return self.pointwise("MUL", x, scale, **kw)

    def relu(
        self,
        x: Tensor,
        *,
        lower_clip: float | None = None,
        upper_clip: float | None = None,
        negative_slope: float | None = None,
        **kw: Unpack[UnaryKeywords],
    ) -> Tensor:
        """ReLU (``RELU_FWD``), optionally clipped or leaky (``negative_slope``)."""
        return self.pointwise(
            "RELU_FWD",
            x,
            relu_lower_clip=lower_clip,
            relu_upper_clip=upper_clip,
            relu_lower_clip_slope=negative_slope,
            **kw,
        )

    def gelu(self, x: Tensor, *, approximate: str = "none", **kw: Unpack[UnaryKeywords]) -> Tensor:
        """GELU (``GELU_FWD``), or its tanh approximation with ``approximate="tanh"``."""
        if approximate not in ("none", "tanh"):
            raise GraphError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
        mode = "GELU_APPROX_TANH_FWD" if approximate == "tanh" else "GELU_FWD"
        return self.pointwise(mode, x, **kw)

    def swish(self, x: Tensor, *, beta: float | None = None, **kw: Unpack[UnaryKeywords]) -> Tensor:
        """``x * sigmoid(beta * x)`` (``CUDNN_POINTWISE_SWISH_FWD``, ``beta``: ``SWISH_BETA``)."""
        return self.pointwise("SWISH_FWD", x, swish_beta=beta, **kw)

    def elu(self, x: Tensor, *, alpha: float | None = None, **kw: Unpack[UnaryKeywords]) -> Tensor:
        """ELU with ``alpha`` (``CUDNN_POINTWISE_ELU_FWD``, ``ELU_ALPHA``)."""
        return self.pointwise("ELU_FWD", x, elu_alpha=alpha, **kw)

    def softplus(
        self, x: Tensor, *, beta: float | None = None, **kw: Unpack[UnaryKeywords]
    ) -> Tensor:
        """``log(1 + exp(beta * x)) / beta`` (``CUDNN_POINTWISE_SOFTPLUS_FWD``, ``SOFTPLUS_BETA``)."""
        return self.pointwise("SOFTPLUS_FWD", x, softplus_beta=beta, **kw)

    def identity(self, x: Tensor, **kw: Unpack[UnaryKeywords]) -> Tensor:
        """A copy, converting the data type when ``out_dtype`` differs (``IDENTITY``)."""
        return self.pointwise("IDENTITY", x, **kw)

    def binary_select(
        self, mask: Tensor, a: Tensor, b: Tensor, **kw: Unpack[UnaryKeywords]
    ) -> Tensor:
        """``mask ? a : b`` elementwise (``BINARY_SELECT``; all three with the same dims)."""
        return self.pointwise("BINARY_SELECT", a, b, mask, **kw)


# The shortcuts made by _binary and _unary take the names they are given in the class body, and
# show `self` bare as methods do (its annotation is for the type checker inside the factory).
for _name, _member in vars(PointwiseOps).items():
    if getattr(_member, "__qualname__", "").startswith(("_binary.", "_unary.")):
        _member.__name__, _member.__qualname__ = _name, f"PointwiseOps.{_name}"
        del _member.__annotations__["self"]
show_keywords(vars(PointwiseOps), PointwiseOps.pointwise, UnaryKeywords, BinaryKeywords)
