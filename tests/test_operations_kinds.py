"""The newer backend operation kinds as Graph methods, against the real cuDNN (CPU tier).

Every method builds its operation graph and cuDNN finalizes it (without a GPU, ``libcuda.so.1``
only). With the committed H100 device properties, a deviceless execution plan is built where cuDNN
has an engine for the operation alone; where it has none, the refusal is asserted exactly. The
outcomes are what cuDNN 9.28 does (docs/operations.md records them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from versioned import skip_unless_cudnn

import pycudnn
from pycudnn.deviceprops import DeviceProperties
from pycudnn.graph import Graph, GraphError
from pycudnn.opgraph.kinds import kind_since, require_kind
from pycudnn.opgraph.lowering_extra import EXTRA_KINDS
from pycudnn.plan import GraphNotSupportedError

pytestmark = pytest.mark.usefixtures("libcuda")

PC = [1, 64, 1, 1]


def softmax(g: Graph) -> None:
    g.softmax(g.tensor([2, 4, 64, 64], dtype="float16", name="x"), stats=True)


def genstats(g: Graph) -> None:
    g.genstats(g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float16", name="x"))


def conv_genstats(g: Graph) -> None:
    x = g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    y = g.conv_fprop(x, w, padding=1)
    y.set_output(True, dtype="float16")
    g.genstats(y)


def bn_finalize(g: Graph) -> None:
    s, q, sc, b, rm, rv = (g.tensor(PC, name=n) for n in ("s", "q", "sc", "b", "rm", "rv"))
    g.batchnorm_finalize(
        s, q, sc, b, epsilon=1e-5, accum_count=2048, prev_running_mean=rm,
        prev_running_var=rv, momentum=0.1,
    )  # fmt: skip


def bn_backward_weights(g: Graph) -> None:
    x = g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float16", name="x")
    dy = g.tensor([8, 64, 16, 16], fmt="NHWC", dtype="float16", name="dy")
    g.batchnorm_backward_weights(dy, x, *(g.tensor(PC, name=n) for n in ("m", "iv", "sc")))


def _dgrad_drelu_dbn_weight(g: Graph, dtype: str) -> None:
    # cudnn-frontend's "Dgrad Drelu DBNweight" sample: the fusion BN_BWD_WEIGHTS is made for
    dy = g.tensor([4, 64, 16, 16], fmt="NHWC", dtype=dtype, name="dy")
    w = g.tensor([64, 32, 3, 3], fmt="NHWC", dtype=dtype, name="w")
    dg = g.conv_dgrad(dy, w, padding=1, dx_dims=[4, 32, 16, 16])
    x = g.tensor([4, 32, 16, 16], fmt="NHWC", dtype=dtype, name="x")
    m, v, s, b = (g.tensor([1, 32, 1, 1], fmt="NHWC", name=n) for n in ("m", "v", "s", "b"))
    dr = g.pointwise("relu_bwd", g.add(g.mul(g.mul(g.sub(x, m), v), s), b), dg)
    dr.set_output(True, dtype=dtype)
    g.batchnorm_backward_weights(dr, x, m, v, s)


def dgrad_drelu_dbn_weight(g: Graph) -> None:
    _dgrad_drelu_dbn_weight(g, "float16")


def dgrad_drelu_dbn_weight_bf16(g: Graph) -> None:
    _dgrad_drelu_dbn_weight(g, "bfloat16")


def reshape(g: Graph) -> None:
    g.reshape(g.tensor([2, 4, 8, 16], dtype="float16", name="x"), [2, 32, 16])


def transpose(g: Graph) -> None:
    g.transpose(g.tensor([2, 4, 8, 16], dtype="float16", name="x"), [0, 2, 1, 3])


def slice_(g: Graph) -> None:
    x = g.tensor([2, 4, 8, 16], dtype="float16", name="x")
    g.slice(x, [slice(None), slice(None), slice(0, 4), slice(None)])


def slice_matmul(g: Graph) -> None:
    # cudnn-frontend's "Slice gemm" sample: a slice feeding a matmul prologue
    a = g.tensor([11, 23, 64], dtype="float16", name="a")
    b = g.tensor([8, 64, 32], dtype="float16", name="b")
    g.relu(g.matmul(g.slice(a, [(1, 9), (3, 19), (0, 64)]), b))


def concatenate(g: Graph) -> None:
    a = g.tensor([2, 4, 8, 16], dtype="float16", name="a")
    b = g.tensor([2, 4, 8, 16], dtype="float16", name="b")
    g.concatenate([a, b], axis=1)


def maxpool(g: Graph) -> None:
    g.resample(g.tensor([2, 16, 32, 32], fmt="NHWC", dtype="float16", name="x"), window=[2, 2])


def maxpool_index(g: Graph) -> None:
    x = g.tensor([2, 16, 32, 32], fmt="NHWC", dtype="float16", name="x")
    g.resample(x, window=[2, 2], generate_index=True)


def avgpool(g: Graph) -> None:
    x = g.tensor([2, 16, 32, 32], fmt="NHWC", dtype="float16", name="x")
    g.resample(x, mode="avgpool_include_padding", window=[3, 3], stride=[2, 2], padding=1)


def maxpool_3d_nchw(g: Graph) -> None:
    g.resample(g.tensor([2, 16, 8, 32, 32], dtype="bfloat16", name="x"), window=[2, 2, 2])


def nearest(g: Graph) -> None:
    x = g.tensor([2, 16, 32, 32], fmt="NHWC", dtype="float16", name="x")
    g.resample(x, mode="nearest", window=[2, 2])


def maxpool_backward(g: Graph) -> None:
    dy = g.tensor([2, 16, 16, 16], fmt="NHWC", dtype="float16", name="dy")
    idx = g.tensor([2, 16, 16, 16], fmt="NHWC", dtype="int8", name="idx")
    g.resample_backward(dy, index=idx, dx_dims=[2, 16, 32, 32], window=[2, 2])


def rope(g: Graph) -> None:
    x = g.tensor([2, 4, 64, 64], dtype="float16", name="x")
    g.rope(x, g.tensor([64, 1, 1, 64], name="freqs"))


def rope_backward(g: Graph) -> None:
    dy = g.tensor([2, 4, 64, 64], dtype="float16", name="dy")
    g.rope_backward(dy, g.tensor([64, 1, 1, 64], name="freqs"))


def rope_sdpa(g: Graph) -> None:
    # cuDNN's RoPE page: RoPE(Q) + RoPE(K) + SDPA is the fusion its SDPA engine runs
    q, k, v = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkv")
    freqs = g.tensor([128, 1, 1, 64], name="freqs")
    q_rot, k_rot = g.rope(q, freqs), g.rope(k, freqs)
    q_rot.set_output(True)
    k_rot.set_output(True)
    g.sdpa(q_rot, k_rot, v, return_stats=True)


def sdpa_backward_rope(g: Graph) -> None:
    q, k, v, o, do = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkvoO")
    stats = g.tensor([2, 4, 128, 1], name="stats")
    freqs = g.tensor([128, 1, 1, 64], name="freqs")
    dq, dk, _ = g.sdpa_backward(q, k, v, o, do, stats=stats)
    g.rope_backward(dq, freqs)
    g.rope_backward(dk, freqs)


def rng(g: Graph) -> None:
    seed = g.tensor([1, 1, 1, 1], dtype="int64", name="seed")
    offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
    g.rng([2, 4, 64, 64], seed=seed, offset=offset, probability=0.1)


def block_scale_quantize(g: Graph) -> None:
    x = g.tensor([1, 1, 128, 256], dtype="bfloat16", name="x")
    g.block_scale_quantize(x, block_size=32, out_dtype="float8_e4m3fn")


def block_scale_dequantize(g: Graph) -> None:
    x = g.tensor([1, 128, 256], dtype="float8_e4m3fn", name="x")
    s = g.tensor([1, 128, 8], dtype="float8_e8m0fnu", name="s")
    g.block_scale_dequantize(x, s, block_size=32, out_dtype="float32")


def moe(g: Graph) -> None:
    t = g.tensor([1, 256, 128], dtype="bfloat16", name="t")
    w = g.tensor([8, 128, 64], dtype="bfloat16", name="w")
    g.moe_grouped_matmul(t, w, g.tensor([8, 1, 1], dtype="int32", name="f"))


def moe_backward(g: Graph) -> None:
    t = g.tensor([1, 256, 128], dtype="bfloat16", name="t")
    d = g.tensor([1, 256, 64], dtype="bfloat16", name="d")
    g.moe_grouped_matmul_backward(t, d, g.tensor([8, 1, 1], dtype="int32", name="f"))


def paged_cache_load(g: Graph) -> None:
    c = g.tensor([64, 4, 16, 64], dtype="float16", name="c")
    pt = g.tensor([2, 1, 8, 1], dtype="int32", name="pt")
    sl = g.tensor([2, 1, 1, 1], dtype="int32", name="sl")
    g.paged_cache_load(c, pt, sl, max_seq_len=128)


def expand_band(g: Graph) -> None:
    x = g.tensor([1, 4, 9, 64], dtype="float16", name="x")
    g.expand_band_matrix(x, lower_bandwidth=4, upper_bandwidth=4, axis=2)


def contract_band(g: Graph) -> None:
    x = g.tensor([1, 4, 64, 64], dtype="float16", name="x")
    g.contract_band_matrix(x, lower_bandwidth=4, upper_bandwidth=4, axis=2)


def band_mask(g: Graph) -> None:
    x = g.tensor([2, 4, 64, 64], name="x")
    g.diagonal_band_mask(x, left_bound=g.tensor([1, 1, 1, 1], dtype="int32", name="left"))


def signal(g: Graph) -> None:
    x = g.tensor([2, 4, 64, 64], dtype="float16", name="x")
    g.signal(x, g.tensor([1, 1, 1, 1], dtype="int64", name="flag"), value=1)


def _ada(g: Graph, *, bias: bool = True) -> tuple[Any, ...]:
    x = g.tensor([4, 128, 256], dtype="bfloat16", name="x")
    scale = g.tensor([4, 1, 256], name="scale")
    return (x, scale, g.tensor([4, 1, 256], name="bias")) if bias else (x, scale)


def adalayernorm(g: Graph) -> None:
    g.adalayernorm(*_ada(g))


def adalayernorm_inference(g: Graph) -> None:
    g.adalayernorm(*_ada(g), training=False)


def adalayernorm_backward(g: Graph) -> None:
    x, scale = _ada(g, bias=False)
    dy = g.tensor([4, 128, 256], dtype="bfloat16", name="dy")
    mean, inv_var = g.tensor([4, 128, 1], name="mean"), g.tensor([4, 128, 1], name="inv_var")
    g.adalayernorm_backward(dy, x, scale, mean, inv_var)


PLAN, NO_ENGINE = "plan", "no engine"
RECORDED = (9, 28)  # the cuDNN whose planning outcomes CASES records (docs/operations.md)
# The other versions of the matrix, measured: every outcome is 9.28's but these. On 9.19 the only
# MoE engine is Blackwell-only ("FORT_NATIVE_10X engine is only supported since Blackwell").
MEASURED = {(9, 10), (9, 12), (9, 19), RECORDED}
OTHER_OUTCOMES = {((9, 19), "moe"): NO_ENGINE}

# (builder, the OPERATION_* descriptor it lowers to, what cuDNN 9.28 does for the H100 properties)
CASES: list[tuple[Callable[[Graph], None], str, str]] = [
    (softmax, "OPERATION_SOFTMAX", NO_ENGINE),
    (genstats, "OPERATION_GEN_STATS", NO_ENGINE),
    (conv_genstats, "OPERATION_GEN_STATS", PLAN),
    (bn_finalize, "OPERATION_BN_FINALIZE_STATISTICS", PLAN),
    (bn_backward_weights, "OPERATION_BN_BWD_WEIGHTS", NO_ENGINE),
    (dgrad_drelu_dbn_weight, "OPERATION_BN_BWD_WEIGHTS", PLAN),
    (dgrad_drelu_dbn_weight_bf16, "OPERATION_BN_BWD_WEIGHTS", NO_ENGINE),
    (reshape, "OPERATION_RESHAPE", NO_ENGINE),
    (transpose, "OPERATION_TRANSPOSE", NO_ENGINE),
    (slice_, "OPERATION_SLICE", NO_ENGINE),
    (slice_matmul, "OPERATION_SLICE", PLAN),
    (concatenate, "OPERATION_CONCAT", NO_ENGINE),
    (maxpool, "OPERATION_RESAMPLE_FWD", PLAN),
    (maxpool_index, "OPERATION_RESAMPLE_FWD", PLAN),
    (avgpool, "OPERATION_RESAMPLE_FWD", PLAN),
    (maxpool_3d_nchw, "OPERATION_RESAMPLE_FWD", PLAN),
    (nearest, "OPERATION_RESAMPLE_FWD", NO_ENGINE),
    (maxpool_backward, "OPERATION_RESAMPLE_BWD", PLAN),
    (rope, "OPERATION_ROPE_FWD", NO_ENGINE),
    (rope_backward, "OPERATION_ROPE_BWD", NO_ENGINE),
    (rope_sdpa, "OPERATION_ROPE_FWD", PLAN),
    (sdpa_backward_rope, "OPERATION_ROPE_BWD", PLAN),
    (rng, "OPERATION_RNG", NO_ENGINE),
    (block_scale_quantize, "OPERATION_BLOCK_SCALE_QUANTIZE", NO_ENGINE),
    (block_scale_dequantize, "OPERATION_BLOCK_SCALE_DEQUANTIZE", NO_ENGINE),
    (moe, "OPERATION_MOE_GROUPED_MATMUL", PLAN),
    (moe_backward, "OPERATION_MOE_GROUPED_MATMUL_BWD", NO_ENGINE),
    (paged_cache_load, "OPERATION_PAGED_CACHE_LOAD", NO_ENGINE),
    (expand_band, "OPERATION_EXPAND_BAND_MATRIX", NO_ENGINE),
    (contract_band, "OPERATION_CONTRACT_BAND_MATRIX", NO_ENGINE),
    (band_mask, "OPERATION_DIAGONAL_BAND_MASK", NO_ENGINE),
    (signal, "OPERATION_SIGNAL", NO_ENGINE),
    (adalayernorm, "OPERATION_NORM_FORWARD", PLAN),
    (adalayernorm_inference, "OPERATION_NORM_FORWARD", PLAN),
    (adalayernorm_backward, "OPERATION_NORM_BACKWARD", PLAN),
]


@pytest.fixture(scope="module")
def props(deviceprops_json: dict[str, Any]) -> DeviceProperties:
    return DeviceProperties.from_json(deviceprops_json)


@pytest.mark.parametrize(
    ("build", "descriptor", "outcome"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_kind_finalizes_and_plans_as_recorded(
    build: Callable[[Graph], None], descriptor: str, outcome: str, props: DeviceProperties
) -> None:
    g = Graph(build.__name__)
    loaded = pycudnn.version_tuple()
    need = kind_since(descriptor)
    if need is not None and loaded < need:
        # an older cuDNN (the version matrix): refused before cuDNN sees it, naming the version
        # (the first gate met wins: sdpa_backward_rope meets SDPA backward's, 9.28, before RoPE's)
        with pytest.raises(pycudnn.UnsupportedByLibraryError, match="needs cuDNN ") as info:
            build(g)
        named = re.search(r"needs cuDNN (?:>= )?(\d+)\.(\d+)\.(\d+)", str(info.value))
        assert named is not None
        assert loaded < tuple(int(v) for v in named.groups())
        return
    build(g)
    g.finalize(None)  # unbound: deviceless
    assert g._descriptors is not None
    kinds = {d.type_name for d in g._descriptors["ops"]}
    assert f"CUDNN_BACKEND_{descriptor}_DESCRIPTOR" in kinds
    if loaded[:2] not in MEASURED:
        pytest.skip(f"plan outcomes are measured for cuDNN {sorted(MEASURED)}, not {loaded}")
    outcome = OTHER_OUTCOMES.get((loaded[:2], build.__name__), outcome)
    if outcome == PLAN:
        plan = g.build(device_properties=props, cache=False)
        assert plan.engine_id >= 0 and plan.workspace_size >= 0
    else:
        with pytest.raises(GraphNotSupportedError, match=f"no engine supports graph '{g.name}'"):
            g.build(device_properties=props, cache=False)


def test_every_extra_kind_has_a_case() -> None:
    lowered = {spec.descriptor for spec in EXTRA_KINDS.values()}
    assert lowered == {c[1] for c in CASES}


def test_version_gate_names_the_version() -> None:
    assert kind_since("OPERATION_SOFTMAX") == (9, 20, 0)
    assert kind_since("OPERATION_ROPE_FWD") == (9, 24, 0)
    with pytest.raises(
        pycudnn.UnsupportedByLibraryError,
        match=r"OPERATION_TRANSPOSE_DESCRIPTOR needs cuDNN >= 9\.22\.0; the loaded cuDNN is 9\.20\.0",
    ):
        require_kind("OPERATION_TRANSPOSE", "transpose 't'", loaded=(9, 20, 0))
    require_kind("OPERATION_TRANSPOSE", "transpose 't'", loaded=(9, 22, 0))  # new enough


# -- operand checks (raised before cuDNN sees the graph) ---------------------------------------


def _g() -> tuple[Graph, Any]:
    g = Graph()
    return g, g.tensor([2, 4, 8, 16], dtype="float16", name="x")


def _made(descriptor: str, make: Callable[[], Any]) -> Any:
    """``make()`` where the loaded cuDNN has ``descriptor``; else assert the version refusal
    (naming the version the kind needs) and return None."""
    need = kind_since(descriptor)
    if need is not None and pycudnn.version_tuple() < need:
        with pytest.raises(
            pycudnn.UnsupportedByLibraryError, match=f"needs cuDNN >= {need[0]}.{need[1]}"
        ):
            make()
        return None
    return make()


def test_shape_inference() -> None:
    g, x = _g()
    if (t := _made("OPERATION_TRANSPOSE", lambda: g.transpose(x, [0, 2, 1, 3]))) is not None:
        assert t.dims == (2, 8, 4, 16)
        assert t.strides == (512, 16, 128, 1)  # a view of X
    window = [slice(None), (1, 3), slice(0, 8, 3), slice(None)]
    if (y := _made("OPERATION_SLICE", lambda: g.slice(x, window))) is not None:
        assert y.dims == (2, 2, 3, 16) and y.strides == (512, 128, 48, 1)
    if (r := _made("OPERATION_RESHAPE", lambda: g.reshape(x, [8, 8, 16]))) is not None:
        assert r.dims == (8, 8, 16)
    b = g.tensor([2, 3, 8, 16], dtype="float16", name="b")
    if (c := _made("OPERATION_CONCAT", lambda: g.concatenate([x, b], axis=1))) is not None:
        assert c.dims == (2, 7, 8, 16)
    p = g.tensor([1, 3, 10, 10], name="p")
    pooled = _made(
        "OPERATION_RESAMPLE_FWD", lambda: g.resample(p, window=[3, 3], stride=[2, 2], padding=1)
    )
    if pooled is not None:
        assert pooled.dims == (1, 3, 5, 5)
    if (sq := _made("OPERATION_GEN_STATS", lambda: g.genstats(p))) is not None:
        assert sq[0].dims == sq[1].dims == (1, 3, 1, 1)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda g, x: g.reshape(x, [2, 4, 8]), "a reshape keeps the count"),
        (lambda g, x: g.transpose(x, [0, 1, 1, 3]), "exactly once"),
        (lambda g, x: g.slice(x, [slice(None)] * 3), "has rank 4"),
        (lambda g, x: g.slice(x, [slice(None), slice(None), slice(4, 2), slice(None)]), "0 <= start < stop"),
        (lambda g, x: g.slice(x, [slice(None), slice(None), slice(0, 4, 0), slice(None)]), "steps must be positive"),
        (lambda g, x: g.concatenate([x], axis=1), "at least two"),
        (lambda g, x: g.concatenate([x, g.tensor([2, 4, 9, 16], dtype="float16")], axis=1), "all dims but axis 1"),
        (lambda g, x: g.concatenate([x, g.tensor([2, 4, 8, 16])], axis=1), "share one dtype"),
        (lambda g, x: g.softmax(g.tensor([4, 8, 16], dtype="float16")), "must have rank 4"),
        (lambda g, x: g.softmax(x, stats_log2=True), "set stats=True"),
        (lambda g, x: g.resample(x, window=[2]), "2 are needed"),
        (lambda g, x: g.resample(x, window=[9, 2]), "larger than the padded input"),
        (lambda g, x: g.resample(x, mode="avgpool_include_padding", window=[2, 2], generate_index=True), "max pooling only"),
        (lambda g, x: g.resample_backward(x, window=[2, 2]), "give x= or dx_dims="),
        (lambda g, x: g.resample_backward(x, window=[2, 2], dx_dims=[2, 4, 16, 32]), "max pooling's gradient needs"),
        (lambda g, x: g.rope(x, g.tensor([1, 64, 16])), "got ranks 4 and 3"),
        (lambda g, x: g.rope(x, g.tensor([8, 1, 1, 16]), rope_dim=3), "must be even"),
        (lambda g, x: g.rope(x, g.tensor([8, 1, 1, 16], dtype="int32")), "angles"),
        (lambda g, x: g.rng([2, 4], seed=1, probability=0.5), "rank 2"),
        (lambda g, x: g.rng([2, 4, 8], seed=1), "needs probability="),
        (lambda g, x: g.rng([2, 4, 8], seed=1, probability=1.5), "not in [0, 1]"),
        (lambda g, x: g.rng([2, 4, 8], seed=1, distribution="uniform", minimum=2, maximum=1), "must be below"),
        (lambda g, x: g.block_scale_quantize(x, block_size=5, out_dtype="float8_e4m3fn"), "multiple of block_size"),
        (lambda g, x: g.block_scale_dequantize(x, g.tensor([2, 4, 8, 4]), block_size=2), "must be [2, 4, 8, 8]"),
        (lambda g, x: g.block_scale_quantize(g.tensor([2, 4, 8], dtype="int32"), block_size=2, out_dtype="int8"), "floating-point"),
        (lambda g, x: g.moe_grouped_matmul(g.tensor([1, 8, 4]), g.tensor([2, 5, 3]), g.tensor([2, 1, 1], dtype="int32")), "K differs"),
        (lambda g, x: g.moe_grouped_matmul(g.tensor([1, 8, 4]), g.tensor([2, 4, 3]), g.tensor([2, 1, 1], dtype="int32"), mode="gather"), "needs token_index="),
        (lambda g, x: g.moe_grouped_matmul(g.tensor([1, 8, 4]), g.tensor([2, 4, 3]), g.tensor([2, 1, 1])), "offsets are integers"),
        (lambda g, x: g.paged_cache_load(x, g.tensor([2, 1, 2, 1], dtype="int32"), g.tensor([2, 1, 1, 1], dtype="int32"), max_seq_len=17), "exceeds pages x block_size"),
        (lambda g, x: g.expand_band_matrix(x, lower_bandwidth=1, upper_bandwidth=1, axis=2), "the band holds"),
        (lambda g, x: g.diagonal_band_mask(x), "give left_bound="),
        (lambda g, x: g.diagonal_band_mask(x, left_bound=g.tensor([1, 1, 1, 1], dtype="int32"), right_bound=g.tensor([1, 1, 1, 1], dtype="int32")), "not both"),
        (lambda g, x: g.block_scale_quantize(g.tensor([1, 128, 256]), block_size=32, out_dtype="float8_e4m3fn"), "has rank 3"),
        (lambda g, x: g.diagonal_band_mask(x, left_bound=g.tensor([1, 1, 1, 1], dtype="int32"), comparison="add"), "cmp_* pointwise mode"),
        (lambda g, x: g.signal(x, g.tensor([1, 1, 2, 1], dtype="int64"), value=1), "all dims 1"),
        (lambda g, x: g.adalayernorm(x, g.tensor([2, 1, 1, 1]), g.tensor([2, 1, 1, 1])), "normalizes nothing"),
        (lambda g, x: g.adalayernorm(x, g.tensor([2, 1, 8, 3]), g.tensor([2, 1, 8, 3])), "each dim must be"),
        (lambda g, x: g.adalayernorm(x, g.tensor([2, 1, 1, 16]), g.tensor([1, 1, 1, 16])), "BIAS"),
        (lambda g, x: g.adalayernorm_backward(x, x, g.tensor([2, 1, 1, 16]), g.tensor([2, 4, 8, 16]), g.tensor([2, 4, 8, 1])), "must be [2, 4, 8, 1]"),
        (lambda g, x: g.batchnorm_finalize(*(g.tensor([1, 4, 1, 1]) for _ in range(4)), epsilon=1e-5, accum_count=8, momentum=0.1), "or none of them"),
        (lambda g, x: g.batchnorm_finalize(g.tensor([2, 4, 1, 1]), *(g.tensor([1, 4, 1, 1]) for _ in range(3)), epsilon=1e-5, accum_count=8), "[1, C, 1, ...]"),
        (lambda g, x: g.batchnorm_backward_weights(x, x, *(g.tensor([1, 5, 1, 1]) for _ in range(3))), "must be [1, 4, 1, 1]"),
    ],
)  # fmt: skip
def test_operand_checks(call: Callable[[Graph, Any], Any], fragment: str) -> None:
    g, x = _g()
    with pytest.raises(GraphError) as info:
        call(g, x)
    assert fragment in str(info.value)


def test_wrong_types_are_type_errors() -> None:
    g, x = _g()
    with pytest.raises(TypeError, match="seed must be an int or a Tensor"):
        g.rng([2, 4, 8], seed=1.5, probability=0.5)
    with pytest.raises(TypeError, match="must be an int"):
        g.slice(x, [slice(None), slice(None), slice(0, 2.0), slice(None)])
    with pytest.raises(TypeError, match="epsilon must be a number or a Tensor"):
        g.batchnorm_finalize(
            *(g.tensor([1, 4, 1, 1]) for _ in range(4)), epsilon="x", accum_count=8
        )
    kept = Graph("kept")
    other = kept.tensor([2, 4, 8, 16], dtype="float16")
    with pytest.raises(GraphError, match="belongs to graph 'kept'"):
        g.transpose(other, [0, 1, 2, 3])
    orphan = Graph("dropped").tensor([2, 4, 8, 16], dtype="float16")  # its graph is freed at once
    with pytest.raises(GraphError, match="belongs to a graph that no longer exists"):
        g.transpose(orphan, [0, 1, 2, 3])


def test_adalayernorm_shapes() -> None:
    skip_unless_cudnn((9, 7), "normalization mode ADA_LAYER_NORM")
    g = Graph()
    y, mean, inv_var = g.adalayernorm(*_ada(g))
    assert y.dims == (4, 128, 256) and mean.dims == inv_var.dims == (4, 128, 1)
    assert mean.dtype == np.float32
    g2 = Graph()
    adalayernorm_backward(g2)
    (op,) = g2.operations
    assert {r: t.dims for r, t in op.outputs.items()} == {
        "dx": (4, 128, 256),
        "dscale": (4, 1, 256),
        "dbias": (4, 1, 256),
    }
    assert op.outputs["dscale"].dtype == np.float32  # the scale's type, as cuDNN 9.28 plans it


def test_rng_output_dtype() -> None:
    g = Graph()
    assert g.rng([2, 4, 8], seed=1, probability=0.5).dtype == np.float32
    mask = g.tensor([2, 4, 8], dtype="float16", name="mask")
    assert g.rng([2, 4, 8], seed=2, probability=0.5, out=mask) is mask
    assert mask.dtype == np.float16  # out keeps its own dtype
    assert g.rng([2, 4, 8], seed=3, probability=0.5, out_dtype="bfloat16").dtype.name == "bfloat16"


def test_scalars_made_for_numbers_are_named_after_the_operation() -> None:
    g = Graph()
    bn_finalize(g)
    scalars = {t.name: t for t in g.inputs if t.by_value}
    assert set(scalars) == {
        "batchnorm_finalize0.epsilon",
        "batchnorm_finalize0.accum_count",
        "batchnorm_finalize0.momentum",
    }
    assert scalars["batchnorm_finalize0.accum_count"].dtype == np.int64
    assert scalars["batchnorm_finalize0.epsilon"].value == 1e-5
