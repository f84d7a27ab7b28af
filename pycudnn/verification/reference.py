"""NumPy references for cuDNN graphs, computed in float64 from the graph's public description.

:func:`evaluate` walks a :class:`~pycudnn.Graph`'s operations in order (a graph adds an operation
only after its inputs exist, so the list is topological) and computes every operation output from
the operation's ``kind``, its input and output tensors by role and its ``attrs`` (stride, padding,
dilation, groups, mode, alpha/beta, pointwise mode and parameters, reduction operator). Nothing of
cuDNN is involved, so the result is independent of the engine under test.

Covered: convolution forward, backward data and backward filter (1 to 3 spatial dims, grouped,
dilated, strided, asymmetric padding, cross-correlation or convolution mode, ``alpha``/``beta``),
matmul with batch broadcasting, every pointwise mode in :data:`POINTWISE_MODES`, every reduction
operator, and any fusion of them. What has no reference raises :class:`NoReferenceError` naming
the operation and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .common import MissingValuesError, NoReferenceError
from .reference_attention import norm_backward, norm_forward, sdpa_backward, sdpa_forward

if TYPE_CHECKING:  # pragma: no cover
    from ..opgraph import Operation, OperationGraph

__all__ = [
    "NoReferenceError",
    "POINTWISE_MODES",
    "TRANSCENDENTAL_MODES",
    "conv_dgrad",
    "conv_fprop",
    "conv_wgrad",
    "evaluate",
    "reduction_length",
    "reference_cost",
]


# -- convolutions -------------------------------------------------------------------------------


def _conv_geometry(attrs: Mapping[str, Any], spatial: int) -> tuple[tuple[int, ...], ...]:
    pre = tuple(attrs.get("pre_padding", (0,) * spatial))
    post = tuple(attrs.get("post_padding", pre))
    stride = tuple(attrs.get("stride", (1,) * spatial))
    dil = tuple(attrs.get("dilation", (1,) * spatial))
    return pre, post, stride, dil


def _tap_slices(
    tap: tuple[int, ...], out: tuple[int, ...], stride: tuple[int, ...], dil: tuple[int, ...]
) -> tuple[slice, ...]:
    # Input positions read by filter tap `tap` for every output position: t*d + o*s, o < out.
    return tuple(
        slice(t * d, t * d + (o - 1) * s + 1, s)
        for t, o, s, d in zip(tap, out, stride, dil, strict=True)
    )


_ALL = slice(None)


def _at(*index: Any) -> tuple[Any, ...]:
    # An index tuple (spelled as a call: a starred subscript is Python 3.11 syntax).
    return index


def _flip(w: np.ndarray) -> np.ndarray:
    return np.flip(w, axis=tuple(range(2, w.ndim)))


def conv_fprop(x: np.ndarray, w: np.ndarray, attrs: Mapping[str, Any]) -> np.ndarray:
    """``conv(x, w)``: x ``[N, C, *S]``, w ``[K, C/groups, *F]`` -> ``[N, K, *O]`` (float64)."""
    spatial = x.ndim - 2
    pre, post, stride, dil = _conv_geometry(attrs, spatial)
    if attrs.get("mode", "cross_correlation") == "convolution":
        w = _flip(w)
    n, c = x.shape[:2]
    k, cg = w.shape[:2]
    g = c // cg
    kg = k // g
    filt = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0), *zip(pre, post, strict=True)])
    out = tuple(
        (xp.shape[2 + i] - dil[i] * (filt[i] - 1) - 1) // stride[i] + 1 for i in range(spatial)
    )
    y = np.zeros((n, g, kg, math.prod(out)))
    xg = xp.reshape(n, g, cg, *xp.shape[2:])
    wg = w.reshape(g, kg, cg, *filt)
    for tap in np.ndindex(*filt):
        sl = _tap_slices(tap, out, stride, dil)
        for gi in range(g):
            patch = xg[_at(_ALL, gi, _ALL, *sl)].reshape(n, cg, -1)
            y[:, gi] += np.matmul(wg[_at(gi, _ALL, _ALL, *tap)], patch)
    return y.reshape(n, k, *out)


def conv_dgrad(
    dy: np.ndarray, w: np.ndarray, dx_shape: tuple[int, ...], attrs: Mapping[str, Any]
) -> np.ndarray:
    """The gradient of :func:`conv_fprop` with respect to x, of shape ``dx_shape``."""
    spatial = dy.ndim - 2
    pre, post, stride, dil = _conv_geometry(attrs, spatial)
    if attrs.get("mode", "cross_correlation") == "convolution":
        w = _flip(w)
    n, k = dy.shape[:2]
    cg = w.shape[1]
    c = dx_shape[1]
    g = c // cg
    kg = k // g
    filt = w.shape[2:]
    out = dy.shape[2:]
    padded = tuple(s + a + b for s, a, b in zip(dx_shape[2:], pre, post, strict=True))
    dxp = np.zeros((n, g, cg, *padded))
    dyg = dy.reshape(n, g, kg, -1)
    wg = w.reshape(g, kg, cg, *filt)
    for tap in np.ndindex(*filt):
        sl = _tap_slices(tap, out, stride, dil)
        for gi in range(g):
            contrib = np.matmul(wg[_at(gi, _ALL, _ALL, *tap)].T, dyg[:, gi])
            dxp[_at(_ALL, gi, _ALL, *sl)] += contrib.reshape(n, cg, *out)
    crop = tuple(slice(a, a + s) for a, s in zip(pre, dx_shape[2:], strict=True))
    dx: np.ndarray = dxp.reshape(n, c, *padded)[_at(_ALL, _ALL, *crop)]
    return dx


def conv_wgrad(
    x: np.ndarray, dy: np.ndarray, dw_shape: tuple[int, ...], attrs: Mapping[str, Any]
) -> np.ndarray:
    """The gradient of :func:`conv_fprop` with respect to w, of shape ``dw_shape``."""
    spatial = x.ndim - 2
    pre, post, stride, dil = _conv_geometry(attrs, spatial)
    n, c = x.shape[:2]
    k, cg = dw_shape[:2]
    g = c // cg
    kg = k // g
    filt = dw_shape[2:]
    out = dy.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0), *zip(pre, post, strict=True)])
    xg = xp.reshape(n, g, cg, *xp.shape[2:])
    dyg = dy.reshape(n, g, kg, -1)
    dw = np.zeros((g, kg, cg, *filt))
    for tap in np.ndindex(*filt):
        sl = _tap_slices(tap, out, stride, dil)
        for gi in range(g):
            patch = xg[_at(_ALL, gi, _ALL, *sl)].reshape(n, cg, -1)
            dw[_at(gi, _ALL, _ALL, *tap)] = np.tensordot(dyg[:, gi], patch, axes=([0, 2], [0, 2]))
    dw = dw.reshape(dw_shape)
    if attrs.get("mode", "cross_correlation") == "convolution":
        dw = _flip(dw)  # the forward used the flipped filter
    return dw


# -- pointwise ----------------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # 1/(1+exp(-x)) to full relative accuracy in both tails, without overflow warnings (exp of
    # -|x| only). 0.5*(1+tanh(x/2)) cancelled for x < 0: 2e-9 relative error at -20, exactly 0
    # below about -37, where fp32 holds sigmoid(-40) = 4.2e-18 and log-sigmoid is -40, not -inf.
    e = np.exp(-np.abs(x))
    out: np.ndarray = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    return out


_TANH_C = math.sqrt(2.0 / math.pi)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(_TANH_C * (x + 0.044715 * x**3)))


def _relu(x: np.ndarray, a: Mapping[str, Any]) -> np.ndarray:
    # cuDNN's RELU_FWD: clamp to [lower_clip, upper_clip]; below lower_clip, slope
    # lower_clip_slope (0: clamp; a negative slope with lower_clip 0 is a leaky ReLU).
    lo = a.get("relu_lower_clip", 0.0)
    hi = a.get("relu_upper_clip", math.inf)
    slope = a.get("relu_lower_clip_slope", 0.0)
    out: np.ndarray = np.where(x < lo, lo + slope * (x - lo), np.minimum(x, hi))
    return out


def _relu_bwd(x: np.ndarray, dy: np.ndarray, a: Mapping[str, Any]) -> np.ndarray:
    lo = a.get("relu_lower_clip", 0.0)
    hi = a.get("relu_upper_clip", math.inf)
    slope = a.get("relu_lower_clip_slope", 0.0)
    return dy * np.where(x > lo, np.where(x < hi, 1.0, 0.0), slope)


def _softplus(x: np.ndarray, beta: float) -> np.ndarray:
    return np.logaddexp(0.0, beta * x) / beta


def _swish_bwd(x: np.ndarray, dy: np.ndarray, beta: float) -> np.ndarray:
    s = _sigmoid(beta * x)
    # 1 - s as sigmoid(-beta*x): the subtraction cancels to 0 for large beta*x
    out: np.ndarray = dy * (s + beta * x * s * _sigmoid(-beta * x))
    return out


def _gelu_bwd(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    out: np.ndarray = dy * (cdf + x * pdf)
    return out


def _gelu_tanh_bwd(x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    u = _TANH_C * (x + 0.044715 * x**3)
    t = np.tanh(u)
    du = _TANH_C * (1.0 + 3 * 0.044715 * x * x)
    out: np.ndarray = dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)
    return out


def _elu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


_Unary = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]
_Binary = Callable[[np.ndarray, np.ndarray, Mapping[str, Any]], np.ndarray]

_UNARY: dict[str, _Unary] = {
    "ABS": lambda x, a: np.abs(x),
    "CEIL": lambda x, a: np.ceil(x),
    "COS": lambda x, a: np.cos(x),
    "EXP": lambda x, a: np.exp(x),
    "FLOOR": lambda x, a: np.floor(x),
    "LOG": lambda x, a: np.log(x),
    "NEG": lambda x, a: -x,
    "RSQRT": lambda x, a: 1.0 / np.sqrt(x),
    "SIN": lambda x, a: np.sin(x),
    "SQRT": lambda x, a: np.sqrt(x),
    "TAN": lambda x, a: np.tan(x),
    "ERF": lambda x, a: _erf(x),
    "IDENTITY": lambda x, a: x,
    "RECIPROCAL": lambda x, a: 1.0 / x,
    "RELU_FWD": _relu,
    "TANH_FWD": lambda x, a: np.tanh(x),
    "SIGMOID_FWD": lambda x, a: _sigmoid(x),
    "ELU_FWD": lambda x, a: _elu(x, a.get("elu_alpha", 1.0)),
    "GELU_FWD": lambda x, a: _gelu(x),
    "SOFTPLUS_FWD": lambda x, a: _softplus(x, a.get("softplus_beta", 1.0)),
    "SWISH_FWD": lambda x, a: x * _sigmoid(a.get("swish_beta", 1.0) * x),
    "GELU_APPROX_TANH_FWD": lambda x, a: _gelu_tanh(x),
    "LOGICAL_NOT": lambda x, a: (x == 0).astype(np.float64),
}

_BINARY: dict[str, _Binary] = {
    "ADD": lambda x, b, a: x + b,
    "ADD_SQUARE": lambda x, b, a: x + b * b,
    "DIV": lambda x, b, a: x / b,
    "MAX": lambda x, b, a: np.maximum(x, b),
    "MIN": lambda x, b, a: np.minimum(x, b),
    "MOD": lambda x, b, a: np.fmod(x, b),
    "MUL": lambda x, b, a: x * b,
    "POW": lambda x, b, a: np.power(x, b),
    "SUB": lambda x, b, a: x - b,
    "ATAN2": lambda x, b, a: np.arctan2(x, b),
    "FLOOR_MOD": lambda x, b, a: np.mod(x, b),
    "CMP_EQ": lambda x, b, a: (x == b).astype(np.float64),
    "CMP_NEQ": lambda x, b, a: (x != b).astype(np.float64),
    "CMP_GT": lambda x, b, a: (x > b).astype(np.float64),
    "CMP_GE": lambda x, b, a: (x >= b).astype(np.float64),
    "CMP_LT": lambda x, b, a: (x < b).astype(np.float64),
    "CMP_LE": lambda x, b, a: (x <= b).astype(np.float64),
    "LOGICAL_AND": lambda x, b, a: ((x != 0) & (b != 0)).astype(np.float64),
    "LOGICAL_OR": lambda x, b, a: ((x != 0) | (b != 0)).astype(np.float64),
    # Activation backward modes: x is the forward input, b the incoming gradient dY.
    "RELU_BWD": _relu_bwd,
    "TANH_BWD": lambda x, dy, a: dy * (1.0 - np.tanh(x) ** 2),
    # sigmoid' = sigmoid(x) * sigmoid(-x); 1 - sigmoid(x) would cancel to 0 for large x
    "SIGMOID_BWD": lambda x, dy, a: dy * _sigmoid(x) * _sigmoid(-x),
    "ELU_BWD": lambda x, dy, a: (
        dy * np.where(x > 0, 1.0, a.get("elu_alpha", 1.0) * np.exp(np.minimum(x, 0.0)))
    ),
    "GELU_BWD": lambda x, dy, a: _gelu_bwd(x, dy),
    "SOFTPLUS_BWD": lambda x, dy, a: dy * _sigmoid(a.get("softplus_beta", 1.0) * x),
    "SWISH_BWD": lambda x, dy, a: _swish_bwd(x, dy, a.get("swish_beta", 1.0)),
    "GELU_APPROX_TANH_BWD": lambda x, dy, a: _gelu_tanh_bwd(x, dy),
}

#: Pointwise modes with a NumPy reference (``GEN_INDEX`` and ``BINARY_SELECT`` included).
POINTWISE_MODES: frozenset[str] = frozenset({*_UNARY, *_BINARY, "GEN_INDEX", "BINARY_SELECT"})

#: Modes that GPUs compute with approximate math functions (``tanh.approx``, ``__expf``, ...):
#: their tolerance has a term for it (see :mod:`pycudnn.verification.tolerance`).
TRANSCENDENTAL_MODES: frozenset[str] = frozenset(
    {
        "COS", "EXP", "LOG", "RSQRT", "SIN", "SQRT", "TAN", "ERF", "RECIPROCAL", "DIV", "POW",
        "ATAN2", "TANH_FWD", "SIGMOID_FWD", "ELU_FWD", "GELU_FWD", "SOFTPLUS_FWD", "SWISH_FWD",
        "GELU_APPROX_TANH_FWD", "TANH_BWD", "SIGMOID_BWD", "ELU_BWD", "GELU_BWD", "SOFTPLUS_BWD",
        "SWISH_BWD", "GELU_APPROX_TANH_BWD",
    }
)  # fmt: skip

# alpha1/alpha2 are documented by the graph only for ADD (alpha1*a + alpha2*b); for other modes
# where they apply is not established, and a guessed reference would be a silent wrong answer.
_SCALED_MODES = frozenset({"ADD"})


def _pointwise(op: Operation, vals: dict[str, np.ndarray], out_shape: tuple[int, ...]) -> Any:
    a = op.attrs
    mode = a["mode"].name
    if mode not in POINTWISE_MODES:
        raise NoReferenceError(f"{op.label}: no NumPy reference for pointwise mode {mode}")
    if ("alpha1" in a or "alpha2" in a) and mode not in _SCALED_MODES:
        raise NoReferenceError(
            f"{op.label}: alpha1/alpha2 on {mode.lower()} have no established meaning to check "
            "against"
        )
    if mode == "GEN_INDEX":
        axis = int(a.get("axis", 0))
        shape = [1] * len(out_shape)
        shape[axis] = out_shape[axis]
        idx = np.arange(out_shape[axis], dtype=np.float64).reshape(shape)
        return np.broadcast_to(idx, out_shape).copy()
    x = vals["x"]
    if mode == "BINARY_SELECT":
        return np.where(vals["t"] != 0, x, vals["b"])
    if mode in _UNARY:
        return _UNARY[mode](x, a)
    other = vals["dy"] if "dy" in vals else vals["b"]
    if mode == "ADD":
        return a.get("alpha1", 1.0) * x + a.get("alpha2", 1.0) * other
    return _BINARY[mode](x, other, a)


# -- reductions ---------------------------------------------------------------------------------


# cuDNN's reduction operators over the given axes, kept as size-1 dims (the output's dims).
_REDUCERS: dict[str, Callable[[np.ndarray, tuple[int, ...]], np.ndarray]] = {
    "ADD": lambda x, axes: np.sum(x, axis=axes, keepdims=True),
    "MUL": lambda x, axes: np.prod(x, axis=axes, keepdims=True),
    "MIN": lambda x, axes: np.min(x, axis=axes, keepdims=True),
    "MAX": lambda x, axes: np.max(x, axis=axes, keepdims=True),
    "AMAX": lambda x, axes: np.max(np.abs(x), axis=axes, keepdims=True),
    "AVG": lambda x, axes: np.mean(x, axis=axes, keepdims=True),
    "NORM1": lambda x, axes: np.sum(np.abs(x), axis=axes, keepdims=True),
    "NORM2": lambda x, axes: np.sqrt(np.sum(x * x, axis=axes, keepdims=True)),
    "MUL_NO_ZEROS": lambda x, axes: np.prod(np.where(x == 0, 1.0, x), axis=axes, keepdims=True),
}


def _reduce(x: np.ndarray, out_shape: tuple[int, ...], op_name: str) -> np.ndarray:
    axes = tuple(i for i, (d, o) in enumerate(zip(x.shape, out_shape, strict=True)) if o != d)
    reducer = _REDUCERS.get(op_name)
    if reducer is None:
        raise NoReferenceError(f"no NumPy reference for reduction operator {op_name}")
    return reducer(x, axes)


# -- the graph ----------------------------------------------------------------------------------


# Operations with several outputs: kind -> function(op, input values by role) -> outputs by role.
_MULTI_OUTPUT: dict[str, Callable[..., dict[str, np.ndarray]]] = {
    "sdpa": sdpa_forward,
    "sdpa_backward": sdpa_backward,
    "norm_forward": norm_forward,
    "norm_backward": norm_backward,
}


def reduction_length(op: Operation) -> int:
    """How many products or terms each output element of ``op`` sums (1 for elementwise ops and
    for reductions that pick an element: MIN, MAX, AMAX)."""
    ins, outs, a = op.inputs, op.outputs, op.attrs
    if op.kind == "conv_fprop":
        w = ins["w"].dims
        return w[1] * math.prod(w[2:])
    if op.kind == "conv_dgrad":
        w = ins["w"].dims
        g = outs["dx"].dims[1] // w[1]
        # Each dx element gathers K/groups channels times the taps that reach it.
        per_tap = math.prod(w[2:]) / max(1, math.prod(a["stride"]))
        reads: float = w[0] // g * per_tap
        return max(1, math.ceil(reads))
    if op.kind == "conv_wgrad":
        dy = ins["dy"].dims
        return dy[0] * math.prod(dy[2:])
    if op.kind == "matmul":
        return ins["a"].dims[-1]
    if op.kind == "reduction":
        if a["op"].name in ("MIN", "MAX", "AMAX"):
            return 1
        x, y = ins["x"].dims, outs["y"].dims
        return math.prod(d for d, o in zip(x, y, strict=True) if o != d) or 1
    if op.kind == "sdpa":  # Q @ K^T sums head_dim products, P @ V sums s_kv of them
        # s_kv from the scores: a paged K is a container of blocks, its dims[2] the block size
        return ins["q"].dims[3] + int(a["scores_dims"][3])
    if op.kind == "sdpa_backward":  # dQ sums over s_kv, dK and dV over s_q (and grouped heads)
        q, k = ins["q"].dims, ins["k"].dims
        return q[3] + k[2] + q[2] * (q[1] // k[1])
    if op.kind in ("norm_forward", "norm_backward"):  # sums over the normalised elements
        x = ins["x"].dims
        groups = {"layer": x[0], "rms": x[0], "batch": x[1], "instance": x[0] * x[1]}
        return max(1, math.prod(x) // groups[op.attrs["mode"]])
    return 1


def reference_cost(graph: OperationGraph) -> int:
    """Multiply-adds (or elements, for elementwise ops) the NumPy reference spends: what decides
    whether a graph is small enough for a host reference."""
    total = 0
    for op in graph.operations:
        out = next(iter(op.outputs.values()))
        total += math.prod(out.dims) * reduction_length(op)
    return total


def _as_float(value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind == "c":
        raise NoReferenceError("complex tensors have no reference here")
    return arr.astype(np.float64)


def _given(value: Any, dims: tuple[int, ...], what: str) -> np.ndarray:
    """A caller's values for a tensor of ``dims``, as float64: exactly that shape (one value for
    a one-element tensor in any shape). NumPy's broadcasting would take a ``[3]`` for ``[2, 3]``
    or a transposed ``[1, n]`` for ``[n, 1]`` and compute a reference for other data."""
    arr = _as_float(value)
    if tuple(arr.shape) == tuple(dims):
        return arr
    if arr.size == 1 and math.prod(dims) == 1:
        return arr.reshape(dims)
    raise ValueError(
        f"{what}: values of shape {list(arr.shape)} for dims {list(dims)}; give the tensor's "
        "own shape (evaluate does not broadcast what it is given)"
    )


def evaluate(
    graph: OperationGraph,
    inputs: Mapping[int, Any],
    initial: Mapping[int, Any] | None = None,
    *,
    dims: Mapping[int, tuple[int, ...]] | None = None,
) -> dict[int, np.ndarray]:
    """Every operation output of ``graph`` (virtual ones too), in float64, by tensor uid.

    ``inputs`` maps the uid of each graph input to its values (any array-like of the tensor's
    dims, in logical dims order, never broadcast: a ``ValueError`` names a wrong shape; one value
    for a one-element tensor; by-value scalars may be left out when the graph holds their
    value). ``initial`` maps the uid of an output whose operation has ``beta != 0`` to its
    contents before the operation (``y = alpha*op(...) + beta*y``), in that output's dims. ``dims`` overrides the dims of some tensors (uid -> dims):
    how a slice of a graph is evaluated (see :mod:`.slicing`).
    """
    shape = {t.uid: t.dims for t in graph.tensors}
    shape.update(dims or {})
    values: dict[int, np.ndarray] = {}
    for t in graph.inputs:
        if t.uid in inputs:
            values[t.uid] = _given(inputs[t.uid], shape[t.uid], f"input '{t.name}' (uid {t.uid})")
        elif t.by_value and t.value is not None:
            values[t.uid] = np.full(shape[t.uid], float(t.value))
        else:
            raise MissingValuesError(f"no values for input tensor '{t.name}' (uid {t.uid})")
    initial = initial or {}
    for op in graph.operations:
        vals = {role: values[t.uid] for role, t in op.inputs.items()}
        if op.kind in _MULTI_OUTPUT:
            for role, arr in _MULTI_OUTPUT[op.kind](op, vals).items():
                t = op.outputs[role]
                values[t.uid] = np.asarray(np.broadcast_to(arr, shape[t.uid]), dtype=np.float64)
            continue
        out_t = next(iter(op.outputs.values()))
        out_dims = shape[out_t.uid]
        a = op.attrs
        if op.kind == "conv_fprop":
            result = conv_fprop(vals["x"], vals["w"], a)
        elif op.kind == "conv_dgrad":
            result = conv_dgrad(vals["dy"], vals["w"], out_dims, a)
        elif op.kind == "conv_wgrad":
            result = conv_wgrad(vals["x"], vals["dy"], out_dims, a)
        elif op.kind == "matmul":
            result = np.matmul(vals["a"], vals["b"])
        elif op.kind == "pointwise":
            result = np.broadcast_to(_pointwise(op, vals, out_dims), out_dims)
        elif op.kind == "reduction":
            result = _reduce(vals["x"], out_dims, a["op"].name)
        else:
            raise NoReferenceError(f"{op.label}: no NumPy reference for {op.kind!r} operations")
        if op.kind.startswith("conv_"):
            result = a.get("alpha", 1.0) * result
            if a.get("beta", 0.0):
                if out_t.uid not in initial:
                    raise MissingValuesError(
                        f"{op.label} has beta={a['beta']}: give the initial contents of "
                        f"'{out_t.name}' in initial="
                    )
                prior = _given(initial[out_t.uid], out_dims, f"initial '{out_t.name}'")
                result = result + a["beta"] * prior
        if tuple(result.shape) != tuple(out_dims):
            raise AssertionError(  # pragma: no cover - a bug in this module
                f"{op.label}: reference shape {result.shape} != {out_dims}"
            )
        values[out_t.uid] = np.asarray(result, dtype=np.float64)
    return {t.uid: values[t.uid] for t in graph.tensors if t.producer is not None}
