"""Graphs of every operation kind a Graph method builds, each one cuDNN plans for the committed
H100 properties (cuDNN 9.28, without a GPU): the catalogue of the plan round-trip tests and of the
plan-JSON fuzz targets. Kinds cuDNN has no engine for alone (tests/test_operations_kinds.py
records them) appear in the fusions its engines run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import test_operations_kinds as kinds

from pycudnn.graph import Graph


def _nhwc(g: Graph, dims: list[int], name: str, dtype: str = "float16") -> Any:
    return g.tensor(dims, fmt="NHWC", dtype=dtype, name=name)


def conv_fprop(g: Graph) -> None:
    x, w = _nhwc(g, [1, 32, 16, 16], "x"), _nhwc(g, [32, 32, 3, 3], "w")
    g.conv_fprop(x, w, padding=2, dilation=2, name="conv")


def conv_strided(g: Graph) -> None:
    x, w = _nhwc(g, [2, 32, 16, 16], "x"), _nhwc(g, [64, 32, 3, 3], "w")
    g.conv_fprop(x, w, padding=1, stride=2, name="conv")


def conv_dgrad(g: Graph) -> None:
    dy, w = _nhwc(g, [2, 64, 16, 16], "dy"), _nhwc(g, [64, 32, 3, 3], "w")
    g.conv_dgrad(dy, w, padding=1, dx_dims=[2, 32, 16, 16])


def conv_wgrad(g: Graph) -> None:
    x, dy = _nhwc(g, [2, 32, 16, 16], "x"), _nhwc(g, [2, 64, 16, 16], "dy")
    g.conv_wgrad(x, dy, padding=1, dw_dims=[64, 32, 3, 3])


def conv_bias_relu(g: Graph) -> None:
    x, w = _nhwc(g, [1, 32, 16, 16], "x"), _nhwc(g, [32, 32, 3, 3], "w")
    b = _nhwc(g, [1, 32, 1, 1], "b")
    g.relu(g.add(g.conv_fprop(x, w, padding=1), b), name="act")


def matmul(g: Graph) -> None:
    g.matmul(
        g.tensor([1, 64, 32], dtype="float16", name="a"),
        g.tensor([1, 32, 48], dtype="float16", name="b"),
    )


def matmul_bias_gelu(g: Graph) -> None:
    a = g.tensor([4, 64, 32], dtype="float16", name="a")
    b = g.tensor([4, 32, 48], dtype="float16", name="b")
    bias = g.tensor([4, 1, 48], dtype="float16", name="bias")
    g.gelu(g.add(g.matmul(a, b), bias))


def sdpa(g: Graph) -> None:
    q, k, v = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkv")
    g.sdpa(q, k, v, causal=True, return_stats=True)


def sdpa_window(g: Graph) -> None:
    q, k, v = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkv")
    g.sdpa(q, k, v, causal=True, sliding_window=32, scale=0.25)


def sdpa_backward(g: Graph) -> None:
    q, k, v, o, do = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkvoO")
    g.sdpa_backward(q, k, v, o, do, stats=g.tensor([2, 4, 128, 1], name="stats"), causal=True)


def _rows(g: Graph, bias: bool = True) -> tuple[Any, ...]:
    x = g.tensor([256, 1024, 1], dtype="bfloat16", name="x")
    scale = g.tensor([1, 1024, 1], name="scale")
    return (x, scale, g.tensor([1, 1024, 1], name="bias") if bias else None)


def layernorm(g: Graph) -> None:
    g.layernorm(*_rows(g), epsilon=1e-5, training=True)


def layernorm_inference(g: Graph) -> None:
    g.layernorm(*_rows(g), epsilon=1e-3, training=False)


def rmsnorm(g: Graph) -> None:
    g.rmsnorm(*_rows(g, bias=False), epsilon=1e-5, training=True)


def _nchw_params(g: Graph, names: tuple[str, ...], c: int = 64) -> list[Any]:
    return [g.tensor([1, c, 1, 1], name=n) for n in names]


def batchnorm(g: Graph) -> None:
    x = _nhwc(g, [8, 64, 16, 16], "x")
    scale, bias, rm, rv = _nchw_params(g, ("scale", "bias", "running_mean", "running_var"))
    g.batchnorm(x, scale, bias, running_mean=rm, running_var=rv, momentum=0.1)


def batchnorm_inference(g: Graph) -> None:
    g.batchnorm_inference(_nhwc(g, [8, 64, 16, 16], "x"), *_nchw_params(g, ("s", "b", "m", "v")))


def instancenorm(g: Graph) -> None:
    g.instancenorm(_nhwc(g, [8, 64, 16, 16], "x"), *_nchw_params(g, ("s", "b")), training=True)


def _norm_backward(g: Graph, mode: str) -> None:
    if mode in ("layer", "rms"):
        dims, param, stats, fmt = [256, 1024, 1], [1, 1024, 1], [256, 1, 1], None
    else:
        dims, param, fmt = [8, 64, 16, 16], [1, 64, 1, 1], "NHWC"
        stats = [8 if mode == "instance" else 1, 64, 1, 1]
    x = g.tensor(dims, fmt=fmt, dtype="float16", name="x")
    dy = g.tensor(dims, fmt=fmt, dtype="float16", name="dy")
    scale, inv_var = g.tensor(param, name="scale"), g.tensor(stats, name="inv_variance")
    if mode == "rms":
        g.rmsnorm_backward(dy, x, scale, inv_var)
    else:
        getattr(g, f"{mode}norm_backward")(dy, x, scale, g.tensor(stats, name="mean"), inv_var)


def layernorm_backward(g: Graph) -> None:
    _norm_backward(g, "layer")


def rmsnorm_backward(g: Graph) -> None:
    _norm_backward(g, "rms")


def batchnorm_backward(g: Graph) -> None:
    _norm_backward(g, "batch")


def instancenorm_backward(g: Graph) -> None:
    _norm_backward(g, "instance")


def rope_scaled_sdpa(g: Graph) -> None:
    q, k, v = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkv")
    freqs = g.tensor([128, 1, 1, 64], name="freqs")
    q_rot, k_rot = g.rope(q, freqs, output_scale=0.5), g.rope(k, freqs, output_scale=0.5)
    q_rot.set_output(True)
    k_rot.set_output(True)
    g.sdpa(q_rot, k_rot, v)


def reduction(g: Graph) -> None:
    g.reduction(_nhwc(g, [4, 32, 16, 16], "x", "float32"), out_dims=[1, 32, 1, 1])


def reduction_rewritten(g: Graph) -> None:
    # planned as an equivalent channels-last description (pycudnn.opgraph.rewrites)
    g.reduction(g.tensor([8, 64, 32], dtype="float32", name="x"), out_dims=[1, 1, 32])


def avgpool_exclude(g: Graph) -> None:
    x = _nhwc(g, [2, 16, 32, 32], "x")
    g.resample(x, mode="avgpool_exclude_padding", window=[3, 3], stride=[2, 2], padding=1)


#: name -> builder: every kind above, and the planned cases of tests/test_operations_kinds.py.
CATALOGUE: dict[str, Callable[[Graph], None]] = {
    f.__name__: f
    for f in (
        conv_fprop, conv_strided, conv_dgrad, conv_wgrad, conv_bias_relu, matmul,
        matmul_bias_gelu, sdpa, sdpa_window, sdpa_backward, layernorm, layernorm_inference,
        rmsnorm, batchnorm, batchnorm_inference, instancenorm, layernorm_backward,
        rmsnorm_backward, batchnorm_backward, instancenorm_backward, rope_scaled_sdpa,
        avgpool_exclude, reduction, reduction_rewritten,
    )
}  # fmt: skip
CATALOGUE.update({b.__name__: b for b, _, outcome in kinds.CASES if outcome == kinds.PLAN})


def resealed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with pycudnn's two digests recomputed, as a deliberate editor would: what the
    loader checks behind the integrity digest must hold on its own."""
    from pycudnn.plan import canonical

    data["pycudnnGraphKey"] = canonical.digest(data)
    data["pycudnnDigest"] = canonical.content_digest(data, "pycudnnDigest")
    return data


def cudnn_only(data: dict[str, Any]) -> dict[str, Any]:
    """The plan JSON as cuDNN (or cudnn-frontend) writes it: without pycudnn's keys."""
    return {k: v for k, v in data.items() if not k.startswith("pycudnn")}


def reference_keys(node: dict[str, Any]) -> list[str]:
    """The keys of a plan-JSON node that name tensors (a decimal string value)."""
    return [k for k, v in node.items() if isinstance(v, str) and v.lstrip("-").isdigit()]


def all_nodes(og: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of an operation graph, those of the subgraphs nested in its nodes included."""
    out = []
    for node in og.get("nodes", []):
        out.append(node)
        for value in node.values():
            if isinstance(value, dict) and "nodes" in value:
                out.extend(all_nodes(value))
    return out


#: Kinds cuDNN 9.19 has no engine for on the H100 (measured: heuristics return none), planned on
#: 9.28. The first version between with an engine is not measured, so the saved-plan tests of these
#: kinds run from 9.28; every other kind's run on every cuDNN that plans deviceless.
ENGINE_FROM = {
    kind: (9, 28)
    for kind in ("moe", "rope_sdpa", "rope_scaled_sdpa", "sdpa_backward_rope", "slice_matmul")
}
#: The node format of cuDNN 9.28's plan serializer, which the tests that edit a saved plan's
#: attention nodes by key assume (cuDNN 9.19 writes a padded SDPA as its composite nodes).
MAPPED_ON = (9, 28)


def _loaded() -> tuple[int, int]:
    import pycudnn

    major, minor = pycudnn.version_tuple()[:2]
    return major, minor


def planned_kinds() -> list[str]:
    """The catalogue's kinds the loaded cuDNN has an engine for (see :data:`ENGINE_FROM`)."""
    return sorted(k for k in CATALOGUE if _loaded() >= ENGINE_FROM.get(k, (9, 0)))


def require_engine(name: str) -> None:
    """Skip a saved-plan test of ``name`` on a cuDNN without an engine for it."""
    import pytest

    need = ENGINE_FROM.get(name, (9, 0))
    if _loaded() < need:
        pytest.skip(
            f"cuDNN {'.'.join(map(str, _loaded()))} has no H100 engine for {name} "
            f"(measured on 9.19; planned on {'.'.join(map(str, need))})"
        )


def require_mapped() -> None:
    """Skip a test that edits a saved attention node by key below :data:`MAPPED_ON`."""
    import pytest

    if _loaded() < MAPPED_ON:
        pytest.skip(
            f"edits attention nodes as cuDNN {'.'.join(map(str, MAPPED_ON))}'s serializer writes "
            f"them; cuDNN {'.'.join(map(str, _loaded()))} writes them otherwise"
        )
