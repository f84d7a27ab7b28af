"""The Python-side rules of the SDPA and NORM operations (no cuDNN involved)."""

from __future__ import annotations

from typing import Any

import pytest

from _nvbind.ffi import UnsupportedByLibraryError
from _nvbind.strides import packed_strides_like
from pycudnn._attention_rules import (
    VERSIONS,
    RuleError,
    TensorSpec,
    attention_layout,
    check_norm_backward,
    check_norm_forward,
    check_sdpa,
    check_sdpa_backward,
    norm_shapes,
    require_version,
    sdpa_features,
    version_text,
)
from pycudnn.opgraph import attention_args as kw
from pycudnn.opgraph.common import GraphError


def bshd(name: str, dims: tuple[int, int, int, int], dtype: str = "float16") -> TensorSpec:
    b, h, s, d = dims
    # A [b, s, h, d] row-major buffer seen as [b, h, s, d].
    return TensorSpec(name, (b, h, s, d), (s * h * d, d, h * d, 1), dtype)


def bhsd(name: str, dims: tuple[int, int, int, int], dtype: str = "float16") -> TensorSpec:
    b, h, s, d = dims
    return TensorSpec(name, (b, h, s, d), (h * s * d, s * d, d, 1), dtype)


def roles(
    q: TensorSpec, k: TensorSpec, v: TensorSpec, **optional: TensorSpec
) -> dict[str, TensorSpec]:
    """The tensors of an SDPA by role, as the graph hands them to the rules."""
    return {"q": q, "k": k, "v": v, **optional}


def packed(name: str, dims: tuple[int, ...], dtype: str) -> TensorSpec:
    strides: list[int] = []
    step = 1
    for d in reversed(dims):
        strides.insert(0, step)
        step *= d
    return TensorSpec(name, dims, tuple(strides), dtype)


# -- layouts -----------------------------------------------------------------------------------


def test_layouts_are_recognised_from_strides() -> None:
    assert attention_layout(bshd("q", (2, 8, 128, 64))) == "bshd"
    assert attention_layout(bhsd("q", (2, 8, 128, 64))) == "bhsd"
    # A batch stride larger than packed (a slice of a bigger buffer) is still bshd.
    t = TensorSpec("q", (2, 8, 128, 64), (3 * 128 * 8 * 64, 64, 8 * 64, 1), "float16")
    assert attention_layout(t) == "bshd"


def test_transposed_head_dim_is_refused() -> None:
    t = TensorSpec("q", (2, 8, 128, 64), (8 * 128 * 64, 128 * 64, 1, 128), "float16")
    with pytest.raises(RuleError, match=r"q: strides .* the head dim must be contiguous"):
        attention_layout(t)


def test_packed_qkv_layouts_are_strided_views() -> None:
    b, h, s, d = 2, 8, 128, 64
    # bs3hd: one [b, s, 3, h, d] buffer; sbh3d: one [s, b, h, 3, d] buffer
    bs3hd = TensorSpec("q", (b, h, s, d), (s * 3 * h * d, d, 3 * h * d, 1), "float16")
    sbh3d = TensorSpec("q", (b, h, s, d), (h * 3 * d, 3 * d, b * h * 3 * d, 1), "float16")
    assert attention_layout(bs3hd) == "bshd"
    assert attention_layout(sbh3d) == "sbhd"
    overlapping = TensorSpec("q", (b, h, s, d), (s * h * d, d, d, 1), "float16")
    with pytest.raises(RuleError, match=r"overlap: dim h .* inside the 8192 elements of sd"):
        attention_layout(overlapping)


def test_packed_strides_follow_the_input_order() -> None:
    # Q is bshd: the output [b, h, s, d_v] with d_v = 32 is bshd too.
    assert packed_strides_like((2, 8, 16, 32), (16 * 8 * 64, 64, 8 * 64, 1)) == (
        16 * 8 * 32,
        32,
        8 * 32,
        1,
    )
    assert packed_strides_like((2, 3, 4), (12, 4, 1)) == (12, 4, 1)


# -- SDPA forward ------------------------------------------------------------------------------


def test_sdpa_shapes_for_grouped_query_attention() -> None:
    q = bshd("q", (2, 8, 127, 64))
    k = bshd("k", (2, 2, 129, 64))
    v = bshd("v", (2, 2, 129, 64))
    shapes = check_sdpa(roles(q, k, v), return_stats=True)
    assert shapes.o_dims == (2, 8, 127, 64)
    assert shapes.o_strides == q.strides
    assert shapes.stats_dims == (2, 8, 127, 1)
    assert shapes.stats_strides == (8 * 127, 127, 1, 1)
    assert shapes.scores_dims == (2, 8, 127, 129)


def test_sdpa_multi_query_and_bhsd() -> None:
    q = bhsd("q", (1, 16, 64, 128), "bfloat16")
    kv = bhsd("k", (1, 1, 64, 128), "bfloat16")
    assert check_sdpa(roles(q, kv, kv._replace(name="v"))).o_strides == q.strides


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"q": bshd("q", (2, 8, 16, 64), "float32")}, r"q 'q': SDPA takes float16 or bfloat16"),
        ({"k": bshd("k", (2, 8, 16, 64), "bfloat16")}, r"share one dtype"),
        ({"k": bshd("k", (2, 3, 16, 64)), "v": bshd("v", (2, 3, 16, 64))}, r"multiple of k/v's 3"),
        ({"v": bshd("v", (2, 4, 16, 64))}, r"same number of heads, got 8 and 4"),
        ({"k": bshd("k", (3, 8, 16, 64)), "v": bshd("v", (3, 8, 16, 64))}, r"batch dim"),
        ({"v": bshd("v", (2, 8, 17, 64))}, r"sequence length, got 16 and 17"),
        ({"k": bshd("k", (2, 8, 16, 32))}, r"share the head dim, got 64 and 32"),
        (
            {"q": bshd("q", (2, 8, 16, 60)), "k": bshd("k", (2, 8, 16, 60))},
            r"multiples of 8 and at most 256",
        ),
        ({"q": TensorSpec("q", (2, 16, 64), (1024, 64, 1), "float16")}, r"rank 4"),
        ({"q": bshd("q", (0, 8, 16, 64))}, r"dims must be positive"),
    ],
)
def test_sdpa_refusals_name_the_argument(change: dict[str, TensorSpec], pattern: str) -> None:
    args = {
        "q": bshd("q", (2, 8, 16, 64)),
        "k": bshd("k", (2, 8, 16, 64)),
        "v": bshd("v", (2, 8, 16, 64)),
    }
    args.update(change)
    with pytest.raises(RuleError, match=pattern):
        check_sdpa(roles(args["q"], args["k"], args["v"]))


def _qkv() -> tuple[TensorSpec, TensorSpec, TensorSpec]:
    return bshd("q", (2, 4, 16, 64)), bshd("k", (2, 4, 24, 64)), bshd("v", (2, 4, 24, 64))


def test_sdpa_bias_must_broadcast_to_the_scores() -> None:
    q, k, v = _qkv()
    ok = packed("bias", (1, 4, 16, 24), "float16")
    assert check_sdpa(roles(q, k, v, bias=ok)).scores_dims == (2, 4, 16, 24)
    with pytest.raises(RuleError, match=r"bias 'bias': dims \[1, 3, 16, 24\] must broadcast"):
        check_sdpa(roles(q, k, v, bias=packed("bias", (1, 3, 16, 24), "float16")))
    with pytest.raises(RuleError, match=r"last two dims must be \[s_q, s_kv\]"):
        check_sdpa(roles(q, k, v, bias=packed("bias", (1, 4, 1, 24), "float16")))


def test_sdpa_sequence_lengths() -> None:
    q, k, v = _qkv()
    sl = packed("seq_len", (2, 1, 1, 1), "int32")
    check_sdpa(roles(q, k, v, seq_len_q=sl, seq_len_kv=sl))
    with pytest.raises(RuleError, match="come together"):
        check_sdpa(roles(q, k, v, seq_len_q=sl))
    with pytest.raises(RuleError, match=r"seq_len_kv 's': sequence lengths are int32, not int64"):
        check_sdpa(roles(q, k, v, seq_len_q=sl, seq_len_kv=packed("s", (2, 1, 1, 1), "int64")))
    with pytest.raises(RuleError, match=r"\[batch, 1, 1, 1\] = \[2, 1, 1, 1\], got \[1, 1, 1, 1\]"):
        check_sdpa(roles(q, k, v, seq_len_q=packed("s", (1, 1, 1, 1), "int32"), seq_len_kv=sl))


def test_sdpa_dropout_needs_seed_and_offset() -> None:
    q, k, v = _qkv()
    rng = packed("seed", (1, 1, 1, 1), "int64")
    check_sdpa(roles(q, k, v, seed=rng, offset=rng._replace(name="offset")), dropout=0.1)
    with pytest.raises(RuleError, match="dropout needs a seed"):
        check_sdpa(roles(q, k, v), dropout=0.1)
    with pytest.raises(RuleError, match=r"dropout must be in \[0, 1\), got 1.0"):
        check_sdpa(roles(q, k, v, seed=rng, offset=rng), dropout=1.0)
    with pytest.raises(RuleError, match="seed and offset are dropout's"):
        check_sdpa(roles(q, k, v, seed=rng, offset=rng))
    with pytest.raises(RuleError, match=r"offset 'o': the dropout offset is one int64"):
        check_sdpa(roles(q, k, v, seed=rng, offset=packed("o", (1, 1, 1, 1), "int32")), dropout=0.1)


def test_sdpa_sliding_window_and_flags() -> None:
    # the scale and the masks are checked once, where Graph.sdpa translates its keywords
    def masks(**given: Any) -> kw.Masks:
        flags = dict.fromkeys(("causal", "use_causal_mask", "use_causal_mask_bottom_right"), False)
        bounds = ("sliding_window", "sliding_window_length")
        bounds += ("diagonal_band_left_bound", "diagonal_band_right_bound")
        return kw.Masks(
            "sdpa", **{**flags, **dict.fromkeys(bounds), "diagonal_alignment": "top_left", **given}
        )

    assert (masks(causal=True, sliding_window=4).left, masks(sliding_window=4).right) == (4, 0)
    with pytest.raises(GraphError, match=r"sliding_window must be in 1..2147483647 .*, got 0"):
        masks(sliding_window=0)
    with pytest.raises(GraphError, match="sliding_window must be in"):
        masks(sliding_window=2**31)
    with pytest.raises(GraphError, match="scale must be a finite number or a tensor, not nan"):
        kw.scale_arg("sdpa", float("nan"), None)
    # an int past a double's range: refused by name (it raised OverflowError from math.isfinite)
    with pytest.raises(GraphError, match="scale must be a finite number or a tensor, not 1000"):
        kw.scale_arg("sdpa", 10**400, None)
    big = kw.scale_arg("sdpa", None, 2**70)
    assert type(big) is float and big == 2.0**70  # the float cuDNN is given, not the int
    with pytest.raises(GraphError, match="sliding_window must be an int"):
        masks(sliding_window=True)
    with pytest.raises(GraphError, match="causal must be a bool"):
        masks(causal=1)


# -- SDPA backward -----------------------------------------------------------------------------


def test_sdpa_backward_checks_o_do_and_stats() -> None:
    q, k, v = _qkv()
    o = bshd("o", (2, 4, 16, 64))
    stats = packed("stats", (2, 4, 16, 1), "float32")
    assert (
        check_sdpa_backward(roles(q, k, v, o=o, do=o._replace(name="do"), stats=stats)).o_dims
        == o.dims
    )
    with pytest.raises(RuleError, match=r"do 'do': dims \[2, 4, 15, 64\] must be"):
        check_sdpa_backward(roles(q, k, v, o=o, do=bshd("do", (2, 4, 15, 64)), stats=stats))
    with pytest.raises(RuleError, match=r"o 'o': dtype bfloat16 must be q's float16"):
        check_sdpa_backward(
            roles(q, k, v, o=bshd("o", (2, 4, 16, 64), "bfloat16"), do=o, stats=stats)
        )
    with pytest.raises(RuleError, match=r"stats 'st'.*return_stats=True"):
        check_sdpa_backward(roles(q, k, v, o=o, do=o, stats=packed("st", (2, 4, 16, 1), "float16")))


# -- versions ----------------------------------------------------------------------------------


def test_features_and_versions() -> None:
    assert sdpa_features(
        backward=False, padding=False, causal=False, sliding_window=None, bias=False, dropout=0.0
    ) == ["sdpa"]
    feats = sdpa_features(
        backward=True, padding=True, causal=True, sliding_window=None, bias=False, dropout=0.1
    )
    assert feats == [
        "sdpa_backward",
        "sdpa padding (seq_len_q/seq_len_kv)",
        "sdpa_backward score modifiers (causal, sliding_window, bias)",
        "sdpa_backward dropout",
    ]
    assert all(f in VERSIONS for f in feats)
    assert version_text(92100) == "9.21.0"
    assert version_text(91301) == "9.13.1"


def test_require_version_names_operation_needed_and_loaded() -> None:
    require_version("sdpa 'attn'", "sdpa", 92800)
    with pytest.raises(
        UnsupportedByLibraryError,
        match=r"sdpa 'attn': sdpa score modifiers .* needs cuDNN 9.21.0 or newer; the loaded "
        r"cuDNN is 9.19.0",
    ):
        require_version("sdpa 'attn'", "sdpa score modifiers (causal, sliding_window, bias)", 91900)


# -- normalisation -----------------------------------------------------------------------------


def test_norm_shapes() -> None:
    assert norm_shapes("layer", (256, 1024, 1, 1)) == ((1, 1024, 1, 1), (256, 1, 1, 1))
    assert norm_shapes("rms", (4, 64, 1024)) == ((1, 64, 1024), (4, 1, 1))
    assert norm_shapes("batch", (8, 64, 16, 16)) == ((1, 64, 1, 1), (1, 64, 1, 1))
    assert norm_shapes("instance", (8, 64, 16, 16)) == ((1, 64, 1, 1), (8, 64, 1, 1))
    with pytest.raises(RuleError, match="unknown normalisation 'group'"):
        norm_shapes("group", (8, 64, 16, 16))


def test_norm_forward_rules() -> None:
    x = packed("x", (256, 1024, 1, 1), "float16")
    scale = packed("scale", (1, 1024, 1, 1), "float32")
    check_norm_forward("layer", x, scale, scale._replace(name="bias"), epsilon=1e-5)
    check_norm_forward("rms", x, scale, None, epsilon=1e-5)
    with pytest.raises(RuleError, match="layernorm needs a bias"):
        check_norm_forward("layer", x, scale, None, epsilon=1e-5)
    with pytest.raises(RuleError, match=r"layernorm scale 's': dims must be \[1, 1024, 1, 1\]"):
        check_norm_forward("layer", x, packed("s", (1, 512, 1, 1), "float32"), scale, epsilon=1e-5)
    with pytest.raises(RuleError, match="epsilon must be a finite positive number, got 0"):
        check_norm_forward("rms", x, scale, None, epsilon=0)
    with pytest.raises(RuleError, match=r"rmsnorm x 'x': dtype int8"):
        check_norm_forward("rms", x._replace(dtype="int8"), scale, None, epsilon=1e-5)
    with pytest.raises(RuleError, match=r"rank 2 is outside 3..8 .* \[rows, features, 1\]"):
        check_norm_forward("rms", packed("x", (4, 8), "float16"), scale, None, epsilon=1e-5)


def test_batchnorm_running_statistics() -> None:
    x = packed("x", (8, 64, 16, 16), "float16")
    p = packed("p", (1, 64, 1, 1), "float32")
    check_norm_forward("batch", x, p, p, epsilon=1e-5, running_mean=p, running_var=p, momentum=0.1)
    with pytest.raises(RuleError, match="running_mean and running_var come together"):
        check_norm_forward("batch", x, p, p, epsilon=1e-5, running_mean=p, momentum=0.1)
    with pytest.raises(RuleError, match=r"momentum must be in \[0, 1\], got 2"):
        check_norm_forward(
            "batch", x, p, p, epsilon=1e-5, running_mean=p, running_var=p, momentum=2
        )
    with pytest.raises(RuleError, match="layernorm keeps no running statistics"):
        x2 = packed("x", (8, 64, 1, 1), "float16")
        s2 = packed("s", (1, 64, 1, 1), "float32")
        check_norm_forward(
            "layer", x2, s2, s2, epsilon=1e-5, running_mean=p, running_var=p, momentum=0.1
        )
    with pytest.raises(RuleError, match=r"rank 3 is outside 4..8"):
        check_norm_forward("batch", packed("x", (8, 64, 16), "float16"), p, p, epsilon=1e-5)
    with pytest.raises(RuleError, match=r"running_var 'v': statistics are float32"):
        check_norm_forward(
            "batch",
            x,
            p,
            p,
            epsilon=1e-5,
            running_mean=p,
            running_var=packed("v", (1, 64, 1, 1), "float16"),
            momentum=0.1,
        )


def test_norm_backward_rules() -> None:
    x = packed("x", (256, 1024, 1, 1), "bfloat16")
    scale = packed("scale", (1, 1024, 1, 1), "float32")
    stats = packed("stats", (256, 1, 1, 1), "float32")
    check_norm_backward("layer", x, x, scale=scale, mean=stats, inv_variance=stats)
    check_norm_backward("rms", x, x, scale=scale, mean=None, inv_variance=stats)
    with pytest.raises(RuleError, match="rmsnorm backward takes no mean"):
        check_norm_backward("rms", x, x, scale=scale, mean=stats, inv_variance=stats)
    with pytest.raises(RuleError, match="layernorm backward needs the forward's saved mean"):
        check_norm_backward("layer", x, x, scale=scale, mean=None, inv_variance=stats)
    with pytest.raises(RuleError, match=r"dy 'dy': dtype float16 must be x's bfloat16"):
        check_norm_backward(
            "layer",
            x._replace(name="dy", dtype="float16"),
            x,
            scale=scale,
            mean=stats,
            inv_variance=stats,
        )
    with pytest.raises(
        RuleError, match=r"inv_variance 'iv': statistics are float32 \[256, 1, 1, 1\]"
    ):
        check_norm_backward(
            "layer",
            x,
            x,
            scale=scale,
            mean=stats,
            inv_variance=packed("iv", (1, 1, 1, 1), "float32"),
        )
