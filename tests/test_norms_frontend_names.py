"""The norms under cudnn-frontend's keyword names (``input``, ``grad``, ``norm_forward_phase``,
``in_running_mean``/``in_running_var``, ``has_dbias``), on CPU: a frontend line, translated word
for word, builds the same graph as the native call (same graph key) and plans the same engine
deviceless for the committed H100 properties; giving a name and its alias is a TypeError naming
both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from versioned import skip_unless_cudnn

import pycudnn
from pycudnn.graph import Graph, Tensor

N, C, H, W = 8, 32, 16, 16
ROWS, FEATURES = 32, 64


@pytest.fixture
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


class TrainingPhase:
    """Stands in for ``cudnn.norm_forward_phase.TRAINING``: read by its name only."""

    name = "TRAINING"


class Float:
    """Stands in for ``cudnn.data_type.FLOAT``."""

    name = "FLOAT"


class Tensors(dict[str, Tensor]):
    """The case's tensors, each made on first use (a graph refuses a tensor no operation uses)."""

    def __init__(self, g: Graph, specs: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self.g, self.specs = g, specs

    def __missing__(self, role: str) -> Tensor:
        self[role] = self.g.tensor(name=role, **self.specs[role])
        return self[role]


def rows(g: Graph) -> Tensors:
    """Layer / RMS norm tensors, ``[rows, features, 1]`` as cuDNN's NORM takes them."""
    data = {"dims": [ROWS, FEATURES, 1], "dtype": "float16"}
    param = {"dims": [1, FEATURES, 1]}
    stats = {"dims": [ROWS, 1, 1]}
    return Tensors(g, {"x": data, "dy": data, "s": param, "b": param, "m": stats, "iv": stats})


def tokens(g: Graph) -> Tensors:
    """Adaptive layer norm tensors: ``x [B, S, E]`` with a scale and bias per sample."""
    data = {"dims": [N, ROWS, FEATURES], "dtype": "float32"}
    per_sample = {"dims": [N, 1, FEATURES], "dtype": "float32"}
    stats = {"dims": [N, ROWS, 1], "dtype": "float32"}
    specs = {"x": data, "dy": data, "s": per_sample, "b": per_sample, "m": stats, "iv": stats}
    return Tensors(g, specs)


def channels(g: Graph) -> Tensors:
    """Batch / instance norm tensors, NHWC-strided ``[N, C, H, W]``."""
    data = {"dims": [N, C, H, W], "strides": [C * H * W, 1, C * W, C]}
    param = {"dims": [1, C, 1, 1]}
    per_sample = {"dims": [N, C, 1, 1]}  # instance norm's statistics
    specs = {"x": data, "dy": data, **dict.fromkeys(("s", "b", "rm", "rv", "m", "iv"), param)}
    return Tensors(g, specs | {"im": per_sample, "iiv": per_sample})


Build = Callable[[Graph, dict[str, Tensor]], Any]

# (tensor maker, native call, the frontend's line translated keyword for keyword)
CASES: dict[str, tuple[Callable[[Graph], Tensors], Build, Build]] = {
    "layernorm": (
        rows,
        lambda g, t: g.layernorm(t["x"], t["s"], t["b"], epsilon=1e-5, training=True),
        lambda g, t: g.layernorm(
            norm_forward_phase="training",
            input=t["x"],
            scale=t["s"],
            bias=t["b"],
            epsilon=1e-5,
            compute_data_type=Float(),
        ),
    ),
    "layernorm_enum": (
        rows,
        lambda g, t: g.layernorm(t["x"], t["s"], t["b"], training=True),
        lambda g, t: g.layernorm(
            norm_forward_phase=TrainingPhase(), input=t["x"], scale=t["s"], bias=t["b"]
        ),
    ),
    "rmsnorm": (
        rows,
        lambda g, t: g.rmsnorm(t["x"], t["s"], epsilon=1e-5, training=True),
        lambda g, t: g.rmsnorm(
            norm_forward_phase="TRAINING", input=t["x"], scale=t["s"], bias=None, epsilon=1e-5
        ),
    ),
    "instancenorm": (
        channels,
        lambda g, t: g.instancenorm(t["x"], t["s"], t["b"], epsilon=1e-5, training=True),
        lambda g, t: g.instancenorm(
            norm_forward_phase="training", input=t["x"], scale=t["s"], bias=t["b"], epsilon=1e-5
        ),
    ),
    "batchnorm": (
        channels,
        lambda g, t: g.batchnorm(
            t["x"], t["s"], t["b"], running_mean=t["rm"], running_var=t["rv"], momentum=0.1
        ),
        lambda g, t: g.batchnorm(
            input=t["x"],
            scale=t["s"],
            bias=t["b"],
            in_running_mean=t["rm"],
            in_running_var=t["rv"],
            epsilon=1e-5,
            momentum=0.1,
        ),
    ),
    "batchnorm_inference": (
        channels,
        lambda g, t: g.batchnorm_inference(t["x"], t["s"], t["b"], t["m"], t["iv"]),
        lambda g, t: g.batchnorm_inference(
            input=t["x"], mean=t["m"], inv_variance=t["iv"], scale=t["s"], bias=t["b"]
        ),
    ),
    "layernorm_backward": (
        rows,
        lambda g, t: g.layernorm_backward(t["dy"], t["x"], t["s"], t["m"], t["iv"]),
        lambda g, t: g.layernorm_backward(
            grad=t["dy"], input=t["x"], scale=t["s"], mean=t["m"], inv_variance=t["iv"]
        ),
    ),
    "rmsnorm_backward": (
        rows,
        lambda g, t: g.rmsnorm_backward(t["dy"], t["x"], t["s"], t["iv"], with_dbias=True),
        lambda g, t: g.rmsnorm_backward(
            grad=t["dy"],
            input=t["x"],
            scale=t["s"],
            inv_variance=t["iv"],
            has_dbias=True,
            compute_data_type="float32",
        ),
    ),
    "batchnorm_backward": (
        channels,
        lambda g, t: g.batchnorm_backward(t["dy"], t["x"], t["s"], t["m"], t["iv"]),
        lambda g, t: g.batchnorm_backward(
            grad=t["dy"], input=t["x"], scale=t["s"], mean=t["m"], inv_variance=t["iv"]
        ),
    ),
    "instancenorm_backward": (
        channels,
        lambda g, t: g.instancenorm_backward(t["dy"], t["x"], t["s"], t["im"], t["iiv"]),
        lambda g, t: g.instancenorm_backward(
            grad=t["dy"], input=t["x"], scale=t["s"], mean=t["im"], inv_variance=t["iiv"]
        ),
    ),
    "adalayernorm": (
        tokens,
        lambda g, t: g.adalayernorm(t["x"], t["s"], t["b"], epsilon=1e-5),
        lambda g, t: g.adalayernorm(
            norm_forward_phase=TrainingPhase(), input=t["x"], scale=t["s"], bias=t["b"]
        ),
    ),
    "adalayernorm_backward": (
        tokens,
        lambda g, t: g.adalayernorm_backward(t["dy"], t["x"], t["s"], t["m"], t["iv"], dbias=False),
        lambda g, t: g.adalayernorm_backward(
            grad=t["dy"],
            input=t["x"],
            scale=t["s"],
            mean=t["m"],
            inv_variance=t["iv"],
            has_dbias=False,
        ),
    ),
}


def build(case: str, which: int) -> tuple[Graph, Any]:
    make, *calls = CASES[case]
    native = calls[0]
    scratch = make(Graph(case))
    native(scratch.g, scratch)
    g = Graph(case)  # the same name: the graph key covers it
    t = make(g)
    for role in scratch:  # made in the native call's order: the uids, so the key, follow it
        t.setdefault(role, t[role])
    return g, calls[which](g, t)


@pytest.mark.parametrize("case", sorted(CASES))
def test_frontend_line_builds_the_native_graph(case: str) -> None:
    if case.startswith("ada"):
        skip_unless_cudnn((9, 7), "adaptive layer norm (ADA_LAYER_NORM)")
    native, out = build(case, 0)
    frontend, fe_out = build(case, 1)
    assert len(frontend.operations) == len(native.operations) >= 1
    assert frontend.key() == native.key()
    # the results unpack alike (the same fields given, the same ones None)
    if isinstance(out, tuple):
        assert [o is None for o in fe_out] == [o is None for o in out]


PLANNED = ["layernorm", "rmsnorm", "batchnorm", "layernorm_backward", "rmsnorm_backward"]


@pytest.mark.parametrize("case", PLANNED)
def test_frontend_line_plans_the_native_engine(case: str, props: pycudnn.DeviceProperties) -> None:
    plans = [build(case, i)[0].build(device_properties=props, cache=False) for i in (0, 1)]
    assert plans[1].engine_id == plans[0].engine_id


def test_phase_inference_is_training_false() -> None:
    g = Graph("ln_inference")
    t = rows(g)
    out = g.layernorm(norm_forward_phase="inference", input=t["x"], scale=t["s"], bias=t["b"])
    assert out.mean is None and out.inv_variance is None
    assert g.operations[-1].attrs["training"] is False


def test_rmsnorm_keeps_the_mean_place_where_the_frontend_has_none() -> None:
    # cudnn-frontend: Y, inv_var = g.rmsnorm(...); here the mean's place stays (None), as
    # documented in NormOutputs: translate by name (out.inv_variance) or skip the None
    g = Graph("rms_unpack")
    t = rows(g)
    y, mean, inv_var, *rest = g.rmsnorm(norm_forward_phase="training", input=t["x"], scale=t["s"])
    assert mean is None and rest == [None, None]
    assert inv_var is not None and inv_var.dims == (ROWS, 1, 1) and y.dims == t["x"].dims


BOTH: list[tuple[str, str, Callable[[Graph, dict[str, Tensor]], Any]]] = [
    ("x", "input", lambda g, t: g.layernorm(t["x"], t["s"], t["b"], input=t["x"])),
    (
        "training",
        "norm_forward_phase",
        lambda g, t: g.layernorm(
            t["x"], t["s"], t["b"], training=True, norm_forward_phase="training"
        ),
    ),
    ("x", "input", lambda g, t: g.rmsnorm(t["x"], t["s"], input=t["x"])),
    (
        "dy",
        "grad",
        lambda g, t: g.layernorm_backward(t["dy"], t["x"], t["s"], t["m"], t["iv"], grad=t["dy"]),
    ),
    (
        "dbias",
        "has_dbias",
        lambda g, t: g.adalayernorm_backward(
            t["dy"], t["x"], t["s"], t["m"], t["iv"], dbias=False, has_dbias=True
        ),
    ),
    (
        "with_dbias",
        "has_dbias",
        lambda g, t: g.rmsnorm_backward(
            t["dy"], t["x"], t["s"], t["iv"], with_dbias=True, has_dbias=True
        ),
    ),
]


@pytest.mark.parametrize(("name", "alias", "call"), BOTH, ids=[f"{n}-{a}" for n, a, _ in BOTH])
def test_a_name_and_its_alias_together_is_a_type_error_naming_both(
    name: str, alias: str, call: Callable[[Graph, dict[str, Tensor]], Any]
) -> None:
    g = Graph("both")
    t = rows(g)
    with pytest.raises(TypeError, match=rf"both {name} and its cudnn-frontend name {alias}"):
        call(g, t)
    assert not g.operations


def test_batchnorm_running_stats_and_their_aliases_together_is_a_type_error() -> None:
    g = Graph("bn_both")
    t = channels(g)
    with pytest.raises(TypeError, match=r"both running_mean and .* in_running_mean"):
        g.batchnorm(
            t["x"],
            t["s"],
            t["b"],
            running_mean=t["rm"],
            running_var=t["rv"],
            in_running_mean=t["rm"],
        )
    assert not g.operations


def test_an_unknown_phase_is_refused_naming_the_choices() -> None:
    g = Graph("bad_phase")
    t = rows(g)
    with pytest.raises(ValueError, match="norm_forward_phase must be 'training' or 'inference'"):
        g.layernorm(norm_forward_phase="train", input=t["x"], scale=t["s"], bias=t["b"])
    assert not g.operations


def test_a_missing_input_is_a_type_error_naming_x() -> None:
    g = Graph("no_input")
    t = rows(g)
    with pytest.raises(TypeError, match="x must be a Tensor"):
        g.layernorm(norm_forward_phase="training", scale=t["s"], bias=t["b"])


@pytest.mark.parametrize("compute", ["float16", "bfloat16", "HALF"])
def test_a_compute_type_other_than_float32_is_refused(compute: str) -> None:
    # the norms give cuDNN float32: another compute_data_type would be silently ignored
    g = Graph("bad_compute")
    t = rows(g)
    with pytest.raises(ValueError, match="compute_data_type must be float32"):
        g.rmsnorm(input=t["x"], scale=t["s"], compute_data_type=compute)
    with pytest.raises(ValueError, match="compute_data_type must be float32"):
        g.layernorm_backward(t["dy"], t["x"], t["s"], t["m"], t["iv"], compute_data_type=compute)
    assert not g.operations
