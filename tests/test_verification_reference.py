"""The NumPy references of pycudnn.verification, each against an independent computation.

Convolutions against explicit loops over every output element (tiny cases), and their gradients
against the Jacobian those loops define (built column by column from unit vectors); matmul against
``np.einsum``; pointwise forward modes against Python's ``math`` functions element by element,
backward modes against central differences of the forward; reductions against loops. The graphs
are real :class:`pycudnn.Graph` objects: the references read the graph's public description.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from pycudnn.graph import Graph
from pycudnn.verification import reference
from pycudnn.verification.reference import NoReferenceError, evaluate


def loop_conv(x: np.ndarray, w: np.ndarray, *, pre: Any, post: Any, stride: Any, dil: Any,
              groups: int = 1, flip: bool = False) -> np.ndarray:  # fmt: skip
    """Direct convolution, one output element at a time (the definition, no vectorisation)."""
    n = x.shape[0]
    k, cg = w.shape[:2]
    sp = x.ndim - 2
    filt = w.shape[2:]
    out = [
        (x.shape[2 + i] + pre[i] + post[i] - dil[i] * (filt[i] - 1) - 1) // stride[i] + 1
        for i in range(sp)
    ]
    kg = k // groups
    y = np.zeros((n, k, *out))
    for b, oc in itertools.product(range(n), range(k)):
        gi = oc // kg
        for o in itertools.product(*(range(v) for v in out)):
            acc = 0.0
            for ci in range(cg):
                for tap in itertools.product(*(range(f) for f in filt)):
                    pos = [o[i] * stride[i] - pre[i] + tap[i] * dil[i] for i in range(sp)]
                    if all(0 <= pos[i] < x.shape[2 + i] for i in range(sp)):
                        wt = (
                            tuple(f - 1 - t for f, t in zip(filt, tap, strict=True))
                            if flip
                            else tap
                        )
                        acc += x[(b, gi * cg + ci, *pos)] * w[(oc, ci, *wt)]
            y[(b, oc, *o)] = acc
    return y


CONVS = [  # x dims, w dims, pre, post, stride, dilation, groups, mode
    ((2, 3, 6, 5), (4, 3, 3, 2), (1, 0), (1, 2), (1, 1), (1, 1), 1, "cross_correlation"),
    ((1, 4, 7, 7), (4, 2, 3, 3), (1, 1), (1, 1), (2, 2), (1, 1), 2, "cross_correlation"),
    ((1, 2, 9, 8), (3, 2, 2, 3), (2, 1), (2, 1), (1, 2), (2, 2), 1, "convolution"),
    ((1, 2, 4, 5, 4), (2, 2, 2, 3, 2), (1, 0, 1), (0, 1, 1), (1, 2, 1), (1, 1, 2), 1,
     "cross_correlation"),
    ((2, 2, 9), (2, 1, 3), (2,), (0,), (2,), (2,), 2, "cross_correlation"),
]  # fmt: skip


def _attrs(pre: Any, post: Any, stride: Any, dil: Any, mode: str) -> dict[str, Any]:
    return {"pre_padding": pre, "post_padding": post, "stride": stride, "dilation": dil,
            "mode": mode}  # fmt: skip


@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"x{list(c[0])}-g{c[6]}-{c[7][:4]}")
def test_conv_fprop_matches_explicit_loops(case: Any) -> None:
    xd, wd, pre, post, stride, dil, groups, mode = case
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(xd), rng.standard_normal(wd)
    got = reference.conv_fprop(x, w, _attrs(pre, post, stride, dil, mode))
    want = loop_conv(x, w, pre=pre, post=post, stride=stride, dil=dil, groups=groups,
                     flip=mode == "convolution")  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def _jacobian(f: Any, shape: tuple[int, ...]) -> np.ndarray:
    cols = []
    for i in range(math.prod(shape)):
        e = np.zeros(math.prod(shape))
        e[i] = 1.0
        cols.append(f(e.reshape(shape)).ravel())
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"x{list(c[0])}-g{c[6]}-{c[7][:4]}")
def test_conv_gradients_are_the_transposed_jacobians_of_the_loops(case: Any) -> None:
    """dgrad = J_x^T dy and wgrad = J_w^T dy, J built column by column from unit vectors with the
    forward reference (itself checked against the loops above)."""
    xd, wd, pre, post, stride, dil, groups, mode = case
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(xd), rng.standard_normal(wd)
    kw = {"pre": pre, "post": post, "stride": stride, "dil": dil, "groups": groups,
          "flip": mode == "convolution"}  # fmt: skip
    attrs = _attrs(pre, post, stride, dil, mode)
    y = loop_conv(x, w, **kw)
    dy = rng.standard_normal(y.shape)
    jx = _jacobian(lambda e: reference.conv_fprop(e, w, attrs), xd)
    dx = reference.conv_dgrad(dy, w, xd, attrs)
    np.testing.assert_allclose(dx.ravel(), jx.T @ dy.ravel(), rtol=1e-10, atol=1e-10)
    jw = _jacobian(lambda e: reference.conv_fprop(x, e, attrs), wd)
    dw = reference.conv_wgrad(x, dy, wd, attrs)
    np.testing.assert_allclose(dw.ravel(), jw.T @ dy.ravel(), rtol=1e-10, atol=1e-10)


def test_graph_convolutions_with_alpha_beta_read_the_graph_description() -> None:
    g = Graph("c")
    x = g.tensor([1, 4, 6, 6], fmt="NHWC", dtype="float32", name="x")
    w = g.tensor([4, 2, 3, 3], fmt="NHWC", dtype="float32", name="w")
    y = g.conv_fprop(x, w, padding=1, stride=2, groups=2, alpha=0.5, beta=2.0)
    rng = np.random.default_rng(3)
    xv, wv, y0 = rng.standard_normal((1, 4, 6, 6)), rng.standard_normal((4, 2, 3, 3)), None
    y0 = rng.standard_normal(y.dims)
    got = evaluate(g, {x.uid: xv, w.uid: wv}, {y.uid: y0})[y.uid]
    want = 0.5 * loop_conv(xv, wv, pre=(1, 1), post=(1, 1), stride=(2, 2), dil=(1, 1),
                           groups=2) + 2.0 * y0  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(KeyError, match="beta"):
        evaluate(g, {x.uid: xv, w.uid: wv})


def test_matmul_with_batch_broadcast_and_a_transposed_operand_matches_einsum() -> None:
    g = Graph("mm")
    a = g.tensor([1, 5, 4], dtype="float32", name="a")
    b = g.tensor([3, 4, 6], strides=[24, 1, 4], dtype="float32", name="b")  # column-major
    c = g.matmul(a, b)
    rng = np.random.default_rng(4)
    av, bv = rng.standard_normal((1, 5, 4)), rng.standard_normal((3, 4, 6))
    got = evaluate(g, {a.uid: av, b.uid: bv})[c.uid]
    want = np.einsum("bmk,bkn->bmn", np.broadcast_to(av, (3, 5, 4)), bv)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


FORWARD = {  # mode -> (scalar definition, graph kwargs)
    "ABS": (abs, {}), "CEIL": (math.ceil, {}), "FLOOR": (math.floor, {}), "COS": (math.cos, {}),
    "SIN": (math.sin, {}), "TAN": (math.tan, {}), "EXP": (math.exp, {}), "NEG": (lambda v: -v, {}),
    "LOG": (lambda v: math.log(abs(v) + 0.5), "pos"), "SQRT": (lambda v: math.sqrt(abs(v) + 0.5), "pos"),
    "RSQRT": (lambda v: 1 / math.sqrt(abs(v) + 0.5), "pos"),
    "RECIPROCAL": (lambda v: 1 / (abs(v) + 0.5), "pos"), "ERF": (math.erf, {}),
    "IDENTITY": (lambda v: v, {}), "TANH_FWD": (math.tanh, {}), "SIGMOID_FWD": (_sigmoid, {}),
    "RELU_FWD": (lambda v: max(v, 0.0), {}),
    "GELU_FWD": (lambda v: v * 0.5 * (1 + math.erf(v / math.sqrt(2))), {}),
    "GELU_APPROX_TANH_FWD": (
        lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3))), {}),
    "ELU_FWD": (lambda v: v if v > 0 else 0.7 * (math.exp(v) - 1), {"elu_alpha": 0.7}),
    "SOFTPLUS_FWD": (lambda v: math.log1p(math.exp(2.0 * v)) / 2.0, {"softplus_beta": 2.0}),
    "SWISH_FWD": (lambda v: v * _sigmoid(1.5 * v), {"swish_beta": 1.5}),
}  # fmt: skip


def _unary_graph(mode: str, dims: Any = (2, 3, 4), **kw: Any) -> tuple[Graph, Any, Any]:
    g = Graph("pw")
    x = g.tensor(list(dims), dtype="float32", name="x")
    return g, x, g.pointwise(mode, x, **kw)


@pytest.mark.parametrize("mode", sorted(FORWARD))
def test_unary_forward_modes_match_math_element_by_element(mode: str) -> None:
    fn, kw = FORWARD[mode]
    g, x, y = _unary_graph(mode, **(kw if isinstance(kw, dict) else {}))
    v = np.random.default_rng(5).uniform(-2, 2, (2, 3, 4))
    if kw == "pos":
        v = np.abs(v) + 0.5
        fn = {"LOG": math.log, "SQRT": math.sqrt, "RSQRT": lambda t: 1 / math.sqrt(t),
              "RECIPROCAL": lambda t: 1 / t}[mode]  # fmt: skip
    got = evaluate(g, {x.uid: v})[y.uid]
    want = np.array([fn(float(t)) for t in v.ravel()]).reshape(v.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_relu_clips_and_leaky_slope() -> None:
    g, x, y = _unary_graph("RELU_FWD", (1, 1, 5), relu_lower_clip=0.0, relu_upper_clip=1.0,
                           relu_lower_clip_slope=0.1)  # fmt: skip
    v = np.array([-2.0, -0.5, 0.25, 0.9, 3.0]).reshape(1, 1, 5)
    got = evaluate(g, {x.uid: v})[y.uid].ravel()
    np.testing.assert_allclose(got, [-0.2, -0.05, 0.25, 0.9, 1.0])


def test_sigmoid_family_keeps_relative_accuracy_in_the_tails() -> None:
    """sigmoid(-40) is 4.2e-18 (an fp32 number), so log(sigmoid(-40)) is -40: a reference that
    rounds the tail to 0 gives -inf there and condemns an engine's right answer. The expected
    values: log-sigmoid as x - log1p(exp(x)) for x < 0, sigmoid' = e^-|x| / (1 + e^-|x|)^2."""
    g = Graph("logsig")
    x = g.tensor([1, 1, 4], dtype="float32", name="x")
    y = g.log(g.sigmoid(x))
    sw = g.swish(x)
    dy = g.tensor([1, 1, 4], dtype="float32", name="dy")
    ds = g.pointwise("SIGMOID_BWD", x, dy)
    v = [-80.0, -40.0, -30.0, 40.0]
    out = evaluate(g, {x.uid: np.array(v).reshape(1, 1, 4), dy.uid: np.ones((1, 1, 4))})
    want_log = [t - math.log1p(math.exp(t)) for t in v[:3]]  # sigmoid(40) is 1.0 in float64
    np.testing.assert_allclose(out[y.uid].ravel()[:3], want_log, rtol=1e-14)
    want_swish = [
        t * math.exp(t) / (1 + math.exp(t)) if t < 0 else t / (1 + math.exp(-t)) for t in v
    ]
    np.testing.assert_allclose(out[sw.uid].ravel(), want_swish, rtol=1e-14)
    want_d = [math.exp(-abs(t)) / (1 + math.exp(-abs(t))) ** 2 for t in v]
    np.testing.assert_allclose(out[ds.uid].ravel(), want_d, rtol=1e-14)


BACKWARD = {"RELU_BWD": "RELU_FWD", "TANH_BWD": "TANH_FWD", "SIGMOID_BWD": "SIGMOID_FWD",
            "ELU_BWD": "ELU_FWD", "GELU_BWD": "GELU_FWD", "SOFTPLUS_BWD": "SOFTPLUS_FWD",
            "SWISH_BWD": "SWISH_FWD", "GELU_APPROX_TANH_BWD": "GELU_APPROX_TANH_FWD"}  # fmt: skip


@pytest.mark.parametrize("mode", sorted(BACKWARD))
def test_backward_modes_are_dy_times_the_derivative_of_the_forward(mode: str) -> None:
    kw = FORWARD[BACKWARD[mode]][1]
    kw = kw if isinstance(kw, dict) else {}
    gf, xf, yf = _unary_graph(BACKWARD[mode], **kw)
    g = Graph("bwd")
    x = g.tensor([2, 3, 4], dtype="float32", name="x")
    dy = g.tensor([2, 3, 4], dtype="float32", name="dy")
    dx = g.pointwise(mode, x, dy, **kw)
    rng = np.random.default_rng(6)
    v = rng.uniform(-2, 2, (2, 3, 4))
    v[np.abs(v) < 0.05] = 0.3  # central differences are wrong across ReLU's kink
    dyv = rng.standard_normal((2, 3, 4))
    h = 1e-6
    fd = (evaluate(gf, {xf.uid: v + h})[yf.uid] - evaluate(gf, {xf.uid: v - h})[yf.uid]) / (2 * h)
    got = evaluate(g, {x.uid: v, dy.uid: dyv})[dx.uid]
    np.testing.assert_allclose(got, dyv * fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    ("mode", "fn"),
    [("ADD", lambda a, b: a + b), ("SUB", lambda a, b: a - b), ("MUL", lambda a, b: a * b),
     ("DIV", lambda a, b: a / b), ("MAX", max), ("MIN", min), ("POW", lambda a, b: a**b),
     ("ADD_SQUARE", lambda a, b: a + b * b), ("ATAN2", math.atan2), ("MOD", math.fmod),
     ("FLOOR_MOD", lambda a, b: a - b * math.floor(a / b)), ("CMP_GT", lambda a, b: float(a > b)),
     ("CMP_LE", lambda a, b: float(a <= b)), ("LOGICAL_AND", lambda a, b: float(bool(a) and bool(b)))],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_binary_modes_with_broadcast_match_python(mode: str, fn: Any) -> None:
    g = Graph("bin")
    x = g.tensor([2, 3, 4], dtype="float32", name="x")
    b = g.tensor([1, 3, 1], dtype="float32", name="b")
    y = g.pointwise(mode, x, b)
    rng = np.random.default_rng(7)
    xv, bv = rng.uniform(0.5, 2, (2, 3, 4)), rng.uniform(0.5, 2, (1, 3, 1))
    if mode == "LOGICAL_AND":
        xv, bv = np.round(xv) - 1, np.round(bv) - 1  # zeros and ones
    got = evaluate(g, {x.uid: xv, b.uid: bv})[y.uid]
    bb = np.broadcast_to(bv, xv.shape)
    want = np.array([fn(float(p), float(q)) for p, q in zip(xv.ravel(), bb.ravel(), strict=True)])
    np.testing.assert_allclose(got.ravel(), want, rtol=1e-12)


def test_add_with_alphas_select_and_gen_index() -> None:
    g = Graph("misc")
    a = g.tensor([1, 2, 3], dtype="float32", name="a")
    b = g.tensor([1, 2, 3], dtype="float32", name="b")
    m = g.tensor([1, 2, 3], dtype="bool", name="m")
    s = g.add(a, b, alpha1=2.0, alpha2=-3.0)
    sel = g.binary_select(m, a, b)
    idx = g.pointwise("GEN_INDEX", a, axis=2, out_dtype="int32")
    av, bv = np.arange(6.0).reshape(1, 2, 3), np.full((1, 2, 3), 10.0)
    mv = np.array([[[True, False, True], [False, False, True]]])
    out = evaluate(g, {a.uid: av, b.uid: bv, m.uid: mv})
    np.testing.assert_array_equal(out[s.uid], 2 * av - 30)
    np.testing.assert_array_equal(out[sel.uid], [[[0, 10, 2], [10, 10, 5]]])
    np.testing.assert_array_equal(out[idx.uid], [[[0, 1, 2], [0, 1, 2]]])


def test_scaled_modes_without_an_established_meaning_have_no_reference() -> None:
    g = Graph("scaled")
    a = g.tensor([1, 2, 3], dtype="float32", name="a")
    b = g.tensor([1, 2, 3], dtype="float32", name="b")
    g.mul(a, b, alpha1=2.0)
    with pytest.raises(NoReferenceError, match="alpha1/alpha2 on mul"):
        evaluate(g, {a.uid: np.ones((1, 2, 3)), b.uid: np.ones((1, 2, 3))})


@pytest.mark.parametrize("op", ["add", "mul", "min", "max", "amax", "avg", "norm1", "norm2",
                                "mul_no_zeros"])  # fmt: skip
def test_reductions_match_loops(op: str) -> None:
    g = Graph("red")
    x = g.tensor([3, 4, 5], dtype="float32", name="x")
    y = g.reduction(x, op=op, axes=[0, 2])
    v = np.random.default_rng(8).uniform(-2, 2, (3, 4, 5))
    v[0, 1, 2] = 0.0
    got = evaluate(g, {x.uid: v})[y.uid]
    assert got.shape == (1, 4, 1)
    fns = {"add": sum, "mul": math.prod, "min": min, "max": max,
           "amax": lambda s: max(abs(t) for t in s), "avg": lambda s: sum(s) / len(s),
           "norm1": lambda s: sum(abs(t) for t in s),
           "norm2": lambda s: math.sqrt(sum(t * t for t in s)),
           "mul_no_zeros": lambda s: math.prod(t for t in s if t != 0)}  # fmt: skip
    for j in range(4):
        items = [float(v[i, j, k]) for i in range(3) for k in range(5)]
        assert got[0, j, 0] == pytest.approx(fns[op](items), rel=1e-12)


def test_a_fused_conv_bias_relu_is_the_composition() -> None:
    g = Graph("cbr")
    x = g.tensor([1, 3, 5, 5], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([4, 3, 3, 3], fmt="NHWC", dtype="float16", name="w")
    b = g.tensor([1, 4, 1, 1], fmt="NHWC", dtype="float16", name="b")
    y = g.relu(g.add(g.conv_fprop(x, w, padding=1), b))
    rng = np.random.default_rng(9)
    xv, wv, bv = rng.standard_normal((1, 3, 5, 5)), rng.standard_normal((4, 3, 3, 3)), \
        rng.standard_normal((1, 4, 1, 1))  # fmt: skip
    out = evaluate(g, {x.uid: xv, w.uid: wv, b.uid: bv})
    conv = loop_conv(xv, wv, pre=(1, 1), post=(1, 1), stride=(1, 1), dil=(1, 1))
    np.testing.assert_allclose(out[y.uid], np.maximum(conv + bv, 0), rtol=1e-12, atol=1e-12)
    assert len(out) == 3  # the virtual intermediates are evaluated too


def test_reduction_length_and_cost_follow_the_operations() -> None:
    g = Graph("k")
    x = g.tensor([2, 8, 9, 9], dtype="float16", name="x")
    dy = g.tensor([2, 16, 5, 5], dtype="float16", name="dy")
    g.conv_wgrad(x, dy, padding=1, stride=2, dw_dims=[16, 8, 3, 3])
    (op,) = g.operations
    assert reference.reduction_length(op) == 2 * 5 * 5  # N * output pixels per dW element
    assert reference.reference_cost(g) == 16 * 8 * 3 * 3 * 50


def _batch_graphs() -> dict[str, Graph]:
    g1 = Graph("cbr")
    x = g1.tensor([3, 4, 6, 6], fmt="NHWC", dtype="float32", name="x")
    w = g1.tensor([3, 4, 3, 3], fmt="NHWC", dtype="float32", name="w")  # K == N: not a batch dim
    b = g1.tensor([1, 3, 1, 1], fmt="NHWC", dtype="float32", name="b")
    g1.relu(g1.add(g1.conv_fprop(x, w, padding=1), b))
    g2 = Graph("dgrad")
    dy = g2.tensor([2, 4, 5, 5], dtype="float32", name="dy")
    w2 = g2.tensor([4, 3, 3, 3], dtype="float32", name="w")
    g2.conv_dgrad(dy, w2, padding=1, stride=2, dx_dims=[2, 3, 9, 9])
    g3 = Graph("mm")
    a = g3.tensor([1, 5, 4], dtype="float32", name="a")
    bb = g3.tensor([3, 4, 6], dtype="float32", name="b")
    g3.matmul(a, bb)
    return {"cbr": g1, "dgrad": g2, "mm": g3}


@pytest.mark.parametrize("name", ["cbr", "dgrad", "mm"])
def test_batch_element_0_of_a_separable_graph_is_its_own_reference(name: str) -> None:
    from pycudnn.verification.inputs import make_inputs
    from pycudnn.verification.slicing import batch_slice, slice_arrays

    g = _batch_graphs()[name]
    g.signature()
    dims = batch_slice(g)
    assert dims is not None
    assert all(d[0] == 1 for d in dims.values())
    assert not any(t.name in ("w", "a") and t.uid in dims for t in g.tensors)
    ins = make_inputs(g)
    full = evaluate(g, ins)
    part = evaluate(g, slice_arrays(ins, dims), dims=dims)
    for uid, v in part.items():
        np.testing.assert_allclose(v, full[uid][:1] if uid in dims else full[uid], rtol=1e-12)
    # the first and last elements, as verification compares them
    dims2 = batch_slice(g, 2)
    assert dims2 is not None and all(d[0] == 2 for d in dims2.values())
    last = g.outputs[0].dims[0] - 1
    two = evaluate(g, slice_arrays(ins, dims2, (0, last)), dims=dims2)
    for uid, v in two.items():
        np.testing.assert_allclose(v, full[uid][[0, last]] if uid in dims2 else full[uid],
                                   rtol=1e-12)  # fmt: skip


def test_graphs_that_sum_over_the_batch_are_not_sliced() -> None:
    from pycudnn.verification.slicing import batch_slice

    g = Graph("wgrad")
    x = g.tensor([2, 3, 5, 5], dtype="float32", name="x")
    dy = g.tensor([2, 4, 5, 5], dtype="float32", name="dy")
    g.conv_wgrad(x, dy, padding=1)
    r = Graph("red")
    rx = r.tensor([4, 3, 5], dtype="float32", name="x")
    r.reduction(rx, axes=[0])
    one = Graph("one")
    ox = one.tensor([1, 3, 5], dtype="float32", name="x")
    one.relu(ox)
    index = Graph("index along the batch")  # element n's output is n: not element 0's
    ix = index.tensor([4, 3, 5], dtype="float32", name="x")
    index.add(ix, index.pointwise("GEN_INDEX", ix, axis=0, out_dtype="float32"))
    for graph in (g, r, one, index):
        graph.signature()
        assert batch_slice(graph) is None, graph.name


def _norm_graphs() -> dict[str, Graph]:
    bn = Graph("batchnorm")
    x = bn.tensor([4, 3, 5, 5], dtype="float32", name="x")
    bn.batchnorm(x, bn.tensor([1, 3, 1, 1], name="scale"), bn.tensor([1, 3, 1, 1], name="bias"))
    lb = Graph("layernorm_backward")
    lx = lb.tensor([4, 6, 1], dtype="float32", name="x")
    dy = lb.tensor([4, 6, 1], dtype="float32", name="dy")
    stats = [lb.tensor([4, 1, 1], name=n) for n in ("mean", "inv_variance")]
    lb.layernorm_backward(dy, lx, lb.tensor([1, 6, 1], name="scale"), *stats)
    ln = Graph("layernorm")
    nx = ln.tensor([4, 6, 1], dtype="float32", name="x")
    ln.layernorm(nx, ln.tensor([1, 6, 1], name="scale"), ln.tensor([1, 6, 1], name="bias"),
                 training=True)  # fmt: skip
    return {"batchnorm": bn, "layernorm_backward": lb, "layernorm": ln}


@pytest.mark.parametrize("name", ["batchnorm", "layernorm_backward", "layernorm"])
def test_norms_are_sliced_only_where_each_batch_element_is_its_own(name: str) -> None:
    """A training batch norm's statistics and a norm backward's dscale and dbias combine every
    batch element: batch element 0 alone is no reference for them. A layer norm's are per
    element (and its sliced reference is the full one's first element)."""
    from pycudnn.verification.inputs import make_inputs
    from pycudnn.verification.slicing import batch_slice, slice_arrays

    g = _norm_graphs()[name]
    g.signature()
    dims = batch_slice(g)
    if name != "layernorm":
        assert dims is None
        return
    assert dims is not None
    ins = make_inputs(g)
    full = evaluate(g, ins)
    part = evaluate(g, slice_arrays(ins, dims), dims=dims)
    for t in g.outputs:
        np.testing.assert_allclose(part[t.uid], full[t.uid][:1], rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "bfloat16", "float16"])
def test_inputs_are_generated_for_every_floating_point_type(dtype: str) -> None:
    """Each input is a strided view of one buffer, in its own type: float8_e5m2 included (its
    array-interface type string is one NumPy cannot read back)."""
    from pycudnn.verification.inputs import make_inputs, strided_array

    g = Graph("fp")
    x = g.tensor([2, 3, 4], dtype=dtype, name="x")
    arr = strided_array((2, 3), (1, 2), x.dtype)  # column-major
    arr[...] = np.arange(6.0).reshape(2, 3)
    assert arr.dtype.name == dtype and arr.strides == (arr.itemsize, 2 * arr.itemsize)
    np.testing.assert_array_equal(arr.astype(np.float64), np.arange(6.0).reshape(2, 3))
    y = g.relu(x)
    y.set_output(dtype="float32")
    g.signature()
    ins = make_inputs(g, seed=1)
    assert ins[x.uid].dtype.name == dtype and np.abs(ins[x.uid].astype(np.float64)).max() > 0


def test_evaluate_takes_each_input_in_its_own_shape_never_broadcast() -> None:
    """A [3] for a [1, 2, 3] tensor, or a [1, 1, 4] for a [1, 4, 1] one, would broadcast to a reference of
    other data: refused, naming the input; one value for a one-element tensor is taken."""
    g = Graph("shapes")
    x = g.tensor([1, 2, 3], dtype="float32", name="x")
    b = g.tensor([1, 4, 1], dtype="float32", name="b")
    s = g.tensor([1, 1, 1], dtype="float32", name="s")
    y = g.mul(x, s)
    y.set_output(True, dtype="float32")
    z = g.add(b, b)
    z.set_output(True, dtype="float32")
    good = {x.uid: np.ones((1, 2, 3)), b.uid: np.arange(4.0).reshape(1, 4, 1), s.uid: 2.0}
    out = evaluate(g, good)
    np.testing.assert_array_equal(out[y.uid], np.full((1, 2, 3), 2.0))
    np.testing.assert_array_equal(out[z.uid], 2 * np.arange(4.0).reshape(1, 4, 1))
    for uid, bad, name in [
        (x.uid, np.ones(3), "x"),
        (b.uid, np.arange(4.0).reshape(1, 1, 4), "b"),
        (x.uid, 1.0, "x"),
    ]:
        with pytest.raises(ValueError, match=rf"input '{name}' .*evaluate does not broadcast"):
            evaluate(g, {**good, uid: bad})
    # initial= (the prior contents of a beta output) is held to its tensor's shape too
    g = Graph("initial")
    x = g.tensor([1, 2, 3, 3], dtype="float32", name="x")
    w = g.tensor([2, 2, 1, 1], dtype="float32", name="w")
    y = g.conv_fprop(x, w, beta=1.0, name="conv")
    ins = {x.uid: np.zeros((1, 2, 3, 3)), w.uid: np.zeros((2, 2, 1, 1))}
    prior = np.arange(18.0).reshape(1, 2, 3, 3)
    np.testing.assert_array_equal(evaluate(g, ins, {y.uid: prior})[y.uid], prior)
    with pytest.raises(
        ValueError, match=r"initial 'conv.y': values of shape \[3\] .*evaluate does not broadcast"
    ):
        evaluate(g, ins, {y.uid: np.arange(3.0)})
