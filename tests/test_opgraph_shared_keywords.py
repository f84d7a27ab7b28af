"""Operation families that share a keyword list declare it once: the backward convolutions take
conv_fprop's keywords (typed by ConvolutionKeywords) with conv_fprop's defaults."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from versioned import skip_unless_cudnn_has

from pycudnn import Graph, _bindings
from pycudnn.graph import GraphError, Tensor
from pycudnn.opgraph.convolution import (
    ConvolutionKeywords,
    ConvolutionOps,
    DgradKeywords,
    WgradKeywords,
)
from pycudnn.opgraph.lowering_extra import EXTRA_KINDS
from pycudnn.opgraph.normalization import NormBackwardKeywords, NormBackwardNames, NormKeywords
from pycudnn.opgraph.resample import ResampleKeywords
from pycudnn.opgraph.sequence import BandKeywords, RopeKeywords
from pycudnn.plan import Plan
from pycudnn.plan.loading import PlanLoadKeywords


def test_convolution_keywords_are_conv_fprops_own() -> None:
    params = inspect.signature(ConvolutionOps.conv_fprop).parameters.values()
    fprop = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(ConvolutionKeywords.__annotations__) == fprop
    assert set(DgradKeywords.__annotations__) - fprop == {"dx_dims"}
    assert set(WgradKeywords.__annotations__) - fprop == {"dw_dims"}


def _conv_graph() -> tuple[Graph, Tensor, Tensor, Tensor]:
    g = Graph("backward_defaults")
    x = g.tensor([2, 8, 9, 9], name="x")
    w = g.tensor([4, 8, 3, 3], name="w")
    dy = g.tensor([2, 4, 7, 7], name="dy")
    return g, x, w, dy


def test_backward_convolutions_default_as_conv_fprop() -> None:
    g, x, w, dy = _conv_graph()
    g.conv_fprop(x, w, name="f")
    g.conv_dgrad(dy, w, name="d")
    g.conv_wgrad(x, dy, name="wg")
    f, d, wg = g.operations
    # no padding, stride 1, dilation 1: a 9x9 input and a 3x3 filter give 7x7, and back
    assert d.outputs["dx"].dims == (2, 8, 9, 9)
    assert wg.outputs["dw"].dims == (4, 8, 3, 3)
    for op in (d, wg):
        assert op.attrs == f.attrs, op.name


def test_backward_convolution_keywords_reach_the_operation() -> None:
    g, _, w, _ = _conv_graph()
    dy = g.tensor([2, 4, 5, 5], name="dy2")
    dx = g.conv_dgrad(dy, w, padding=1, stride=2, alpha=0.5, name="d", out_dtype="float16")
    op = g.operations[0]
    assert dx.dims == (2, 8, 9, 9)  # (5 - 1) * 2 - 2 + 3
    assert dx.dtype == "float16"
    assert op.attrs["stride"] == (2, 2) and op.attrs["pre_padding"] == (1, 1)
    assert op.attrs["alpha"] == 0.5 and op.attrs["beta"] == 0.0


@pytest.mark.parametrize("method", ["conv_dgrad", "conv_wgrad"])
def test_a_misspelt_backward_keyword_is_a_type_error_naming_it(method: str) -> None:
    g, x, w, dy = _conv_graph()
    args = (dy, w) if method == "conv_dgrad" else (x, dy)
    with pytest.raises(TypeError, match=f"{method}.*'paddin'"):
        getattr(g, method)(*args, paddin=1)
    other = "dw_dims" if method == "conv_dgrad" else "dx_dims"
    with pytest.raises(TypeError, match=other):
        getattr(g, method)(*args, **{other: [1, 1, 1, 1]})
    assert not g.operations  # nothing was added


def test_every_derived_attribute_name_is_a_cudnn_attribute() -> None:
    # The lowering table derives most attribute names from cudnn_graph.h's spelling convention;
    # each must name an enumerator of cudnnBackendAttributeName_t (from the header).
    known = set(_bindings.cudnnBackendAttributeName_t.__members__)
    for kind, spec in EXTRA_KINDS.items():
        names = [*spec.roles.values(), *(attr for _, attr, _ in spec.values)]
        names += [spec.math] if spec.math else []
        assert not [n for n in names if n not in known], kind


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"window": [2, 0]}, r"window\[1\] is 0; it must be positive"),
        ({"window": 2, "padding": [0, -1]}, r"padding\[1\] is -1; it must be non-negative"),
        ({"window": 2, "stride": [1, 2**63]}, r"stride\[1\] is 9223372036854775808; .*int64"),
    ],
)
def test_pooling_windows_are_bounded_as_convolutions_are(
    settings: dict[str, Any], message: str
) -> None:
    g = Graph("pool_bounds")
    x = g.tensor([1, 2, 8, 8], name="x")
    with pytest.raises(GraphError, match=message):
        g.resample(x, **settings)


@pytest.mark.parametrize(
    ("primary", "peer", "typed", "own"),
    [
        ("rope", "rope_backward", RopeKeywords, set()),
        ("layernorm", "rmsnorm", NormKeywords, set()),
        (
            "layernorm_backward",
            "rmsnorm_backward",
            NormBackwardKeywords,
            {"with_dbias", "has_dbias"},
        ),
        ("layernorm_backward", "batchnorm_backward", NormBackwardNames, {"peer_stats"}),
        ("layernorm_backward", "instancenorm_backward", NormBackwardNames, set()),
        ("expand_band_matrix", "contract_band_matrix", BandKeywords, {"max_token"}),
        ("resample", "resample_backward", ResampleKeywords, {"x", "y", "index", "dx_dims"}),
    ],
)
def test_peer_keywords_are_the_primarys_own(
    primary: str, peer: str, typed: type, own: set[str]
) -> None:
    def keyword_only(name: str) -> set[str]:
        params = inspect.signature(getattr(Graph, name)).parameters.values()
        return {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}

    assert set(typed.__annotations__) <= keyword_only(primary)
    # the peer's signature spells out its own keywords and the shared ones (not **kw) ...
    assert keyword_only(peer) == own | set(typed.__annotations__)
    # ... with the primary's defaults
    primary_params = inspect.signature(getattr(Graph, primary)).parameters
    peer_params = inspect.signature(getattr(Graph, peer)).parameters
    for key in typed.__annotations__:
        assert peer_params[key].default == primary_params[key].default, key


@pytest.mark.parametrize("method", ["batchnorm_backward", "instancenorm_backward"])
def test_norm_backwards_take_the_shared_names(method: str) -> None:
    g = Graph("norm_backward_names")
    t = {n: g.tensor([2, 4, 3, 3], name=n) for n in ("dy", "x")}
    stats = [g.tensor([1, 4, 1, 1], dtype="float32", name=n) for n in ("s", "m", "iv")]
    if method == "instancenorm_backward":
        stats[1:] = [g.tensor([2, 4, 1, 1], dtype="float32", name=n) for n in ("im", "iiv")]
    dx, *_ = getattr(g, method)(
        grad=t["dy"], input=t["x"], scale=stats[0], mean=stats[1], inv_variance=stats[2],
        name="bwd", compute_data_type="float32",
    )  # fmt: skip
    (op,) = g.operations
    assert op.name == "bwd" and op.inputs["dy"] is t["dy"] and op.inputs["x"] is t["x"]
    assert dx.dims == (2, 4, 3, 3)
    with pytest.raises(TypeError, match=f"{method}.*'grd'; did you mean 'grad'"):
        getattr(g, method)(t["dy"], t["x"], *stats, grd=t["dy"])
    with pytest.raises(ValueError, match="compute_data_type must be float32"):
        getattr(g, method)(t["dy"], t["x"], *stats, compute_data_type="float16")
    assert len(g.operations) == 1


def test_load_plan_takes_plan_from_jsons_keywords() -> None:
    def keyword_only(function: Any) -> dict[str, Any]:
        params = inspect.signature(function).parameters.values()
        return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}

    shown = keyword_only(Graph.load_plan)
    assert set(shown) == set(PlanLoadKeywords.__annotations__)
    assert shown == {k: v for k, v in keyword_only(Plan.from_json).items() if k in shown}
    with pytest.raises(TypeError, match=r"load_plan.*'allow_knwon_bad'; did you mean"):
        Graph("load").load_plan("{}", allow_knwon_bad=True)  # type: ignore[call-arg]


def test_resample_backward_takes_resamples_defaults() -> None:
    g = Graph("pool_defaults")
    x = g.tensor([1, 2, 8, 8], name="x")
    pooled = g.resample(x, window=2, generate_index=True, name="pool")
    assert isinstance(pooled, tuple)
    index = pooled[1]
    dy = g.tensor([1, 2, 4, 4], name="dy")
    g.resample_backward(dy, index=index, dx_dims=[1, 2, 8, 8], window=2, name="unpool")
    fwd, bwd = g.operations
    assert bwd.attrs == fwd.attrs  # maxpool, stride = window, no padding, NaN propagated
    # as cudnn-frontend always sets it, and as PyTorch pools: a NaN in a window is not skipped
    assert fwd.attrs["nan_propagation"] == _bindings.cudnnNanPropagation_t.PROPAGATE_NAN
    with pytest.raises(TypeError, match=r"resample_backward.*'window'"):
        g.resample_backward(dy, index=index, dx_dims=[1, 2, 8, 8])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'windw'; did you mean 'window'"):
        g.resample_backward(dy, index=index, windw=2)  # type: ignore[call-arg]


def test_contract_band_matrix_takes_expands_defaults() -> None:
    skip_unless_cudnn_has("CUDNN_BACKEND_OPERATION_CONTRACT_BAND_MATRIX_DESCRIPTOR")
    g = Graph("band_defaults")
    x = g.tensor([1, 2, 8, 8], name="x")
    band = g.contract_band_matrix(x, lower_bandwidth=1, upper_bandwidth=2, name="c")
    g.expand_band_matrix(band, lower_bandwidth=1, upper_bandwidth=2, name="e")
    contract, expand = g.operations
    assert band.dims[-2] == 4  # lower + upper + 1 along the default axis -2
    assert contract.attrs["axis"] == expand.attrs["axis"]
    with pytest.raises(TypeError, match=r"contract_band_matrix.*'upper_bandwidth'"):
        g.contract_band_matrix(x, lower_bandwidth=1)  # type: ignore[call-arg]


def test_rmsnorm_takes_layernorms_defaults() -> None:
    g = Graph("norm_defaults")
    x = g.tensor([4, 16, 1], name="x")
    scale = g.tensor([1, 16, 1], name="scale")
    bias = g.tensor([1, 16, 1], name="bias")
    g.layernorm(x, scale, bias, name="ln")
    g.rmsnorm(x, scale, name="rms")
    ln, rms = g.operations
    for key in ("epsilon", "training", "compute_dtype"):
        assert ln.attrs[key] == rms.attrs[key], key
    assert rms.attrs["epsilon"] == 1e-5
    with pytest.raises(TypeError, match="'epsilonn'; did you mean 'epsilon'"):
        g.rmsnorm(x, scale, epsilonn=1e-3)  # type: ignore[call-arg]


# The pointwise shortcuts made from one table row each: the cuDNN mode each must add.
SHORTCUT_MODES = {
    "add": "ADD", "sub": "SUB", "mul": "MUL", "div": "DIV", "maximum": "MAX", "minimum": "MIN",
    "pow": "POW", "sigmoid": "SIGMOID_FWD", "tanh": "TANH_FWD", "exp": "EXP", "log": "LOG",
    "sqrt": "SQRT", "rsqrt": "RSQRT", "abs": "ABS", "neg": "NEG", "reciprocal": "RECIPROCAL",
}  # fmt: skip


@pytest.mark.parametrize(("name", "mode"), sorted(SHORTCUT_MODES.items()))
def test_table_made_shortcuts_add_their_mode(name: str, mode: str) -> None:
    g = Graph("shortcut_modes")
    a = g.tensor([1, 4, 2, 2], name="a")
    b = g.tensor([1, 4, 2, 2], name="b")
    method = getattr(g, name)
    assert method.__name__ == name and mode in method.__doc__
    y = (
        method(a, b, name="op")
        if mode in ("ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "POW")
        else (method(a, name="op"))
    )
    (op,) = g.operations
    assert op.attrs["mode"].name == mode and op.outputs and y.producer is op


@pytest.mark.parametrize("role", ["x", "scale"])
def test_a_missing_norm_tensor_is_a_type_error_naming_it(role: str) -> None:
    # It was a bare KeyError from inside the norm builder.
    g = Graph("norm_missing")
    t = {r: g.tensor([4, 16, 1], name=r) for r in ("x", "dy", "mean", "inv_variance")}
    scale = g.tensor([1, 16, 1], name="scale")
    fwd = {"x": t["x"], "scale": scale, role: None}
    with pytest.raises(TypeError, match=f"layernorm '.*': {role} must be a Tensor"):
        g.layernorm(fwd["x"], fwd["scale"], scale)
    stats = (t["mean"], t["inv_variance"])
    with pytest.raises(TypeError, match=f"layernorm_backward '.*': {role} must be a Tensor"):
        g.layernorm_backward(t["dy"], fwd["x"], fwd["scale"], *stats)
    assert not g.operations
