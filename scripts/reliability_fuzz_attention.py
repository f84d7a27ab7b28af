"""Fuzz targets for attention and normalisation (registered by ``reliability_fuzz.py``).

``attention``: SDPA forward and backward with cudnn-frontend's keyword names, mostly well-formed
(any implementation, masks, alignment, dropout, ALiBi, padding, layouts), sometimes junk; a third
of them planned deviceless. ``norms``: layer, RMS and batch norms with numbers, by-value tensors
and junk for epsilon and momentum (NaN, infinities, negatives), trailing-dim scales and
zero-centred gamma. ``serving``: paged K/V caches and ragged (THD) tensors, well-formed or
not. Every input must build, or be refused with a Python exception (``GraphError``
and friends); a crash, a hang or another exception type is a finding.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any


def _helpers() -> tuple[Any, Any, Any]:
    # imported here: reliability_fuzz imports this module while it is still loading
    from reliability_fuzz import junk, pick, small

    return junk, pick, small


def attention(rng: random.Random, ctx: Any) -> None:
    import pycudnn

    _, pick, small = _helpers()
    g = pycudnn.Graph("attention")
    b, h, s, d = small(rng), rng.choice([1, 2, 4, 6, 8]), rng.choice([1, 16, 64, 96]), 64
    h_k = rng.choice([h, 1, max(1, h // 2)])
    dt = pick(rng, ["bfloat16", "float16", "float32"], 0.95)

    def t(name: str, heads: int, rows: int = s) -> Any:
        if rng.random() < 0.3:  # bhsd, or one packed [b, s, 3, h, d] buffer
            strides = rng.choice([
                [heads * rows * d, rows * d, d, 1], [rows * 3 * heads * d, d, 3 * heads * d, 1]
            ])  # fmt: skip
        else:
            strides = [rows * heads * d, d, heads * d, 1]
        return g.tensor([b, heads, rows, d], strides, dtype=dt, name=name)

    q, k, v = t("q", h), t("k", h_k), t("v", h_k)
    opts: dict[str, Any] = {
        "implementation": pick(rng, ["auto", "composite", "unified"], 0.97),
        "attn_scale": pick(rng, [None, 0.125, 1.0, 0.125, math.nan], 0.97),
        "use_causal_mask": pick(rng, [False, True], 0.97),
        "diagonal_alignment": pick(rng, ["top_left", "bottom_right"], 0.97),
        "diagonal_band_left_bound": pick(rng, [None, None, 1, 16, 16, 0], 0.97),
        "diagonal_band_right_bound": pick(rng, [None, None, None, 8, -1], 0.97),
        "use_alibi_mask": pick(rng, [False, False, True], 0.97),
    }
    if rng.random() < 0.3:
        opts["seq_len_q"] = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_q")
        opts["seq_len_kv"] = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_kv")
        opts["use_padding_mask"] = pick(rng, [True], 0.97)
    if rng.random() < 0.3:
        seed = g.tensor([1, 1, 1, 1], dtype="int64", name="seed")
        offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
        opts["dropout"] = (pick(rng, [0.1, 0.5, 0.1, 1.0], 0.97), seed, offset)
    if rng.random() < 0.2:
        opts["bias"] = g.tensor([1, h, s, s], dtype=dt, name="bias")
    if rng.random() < 0.5:
        g.sdpa(q, k, v, generate_stats=pick(rng, [True, False], 0.95), **opts)
    else:
        o, do = t("o", h), t("do", h)
        stats = g.tensor([b, h, s, 1], dtype="float32", name="stats")
        if "bias" in opts and rng.random() < 0.5:
            opts["dBias"] = g.tensor([1, h, s, s], dtype=dt, name="dbias")
        g.sdpa_backward(q=q, k=k, v=v, o=o, dO=do, stats=stats, **opts)
    if rng.random() < 0.3:
        g.build(device_properties=ctx.props, cache=False).close()
    g.close()


def norms(rng: random.Random, ctx: Any) -> None:
    import pycudnn

    _, pick, small = _helpers()
    g = pycudnn.Graph("norms")
    bad = [math.nan, math.inf, -math.inf, 0.0, -1e-5, 2.0]

    def scalar(good: list[Any]) -> Any:
        r = rng.random()
        if r < 0.2:
            return g.scalar(rng.choice(good), dtype="float32", rank=3, name=f"s{rng.random()}")
        return pick(rng, good + bad if r < 0.5 else good, 0.9)

    mode = rng.choice(["layer", "rms", "batch"])
    if mode == "batch":
        c = rng.choice([4, 16])
        x = g.tensor([small(rng), c, 4, 4], dtype="float16", name="x")
        p = [1, c, 1, 1]
        params = [g.tensor(p, dtype="float32", name=n) for n in ("s", "b", "rm", "rv")]
        g.batchnorm(
            x,
            params[0],
            params[1],
            epsilon=scalar([1e-5]),
            running_mean=params[2],
            running_var=params[3],
            momentum=scalar([0.1, 0.0, 1.0]),
        )
    else:
        e = rng.choice([64, 256])
        x = g.tensor([small(rng), rng.choice([1, 8]), e], dtype="bfloat16", name="x")
        dims = pick(rng, [[1, 1, e], [1, x.dims[1], e], [1, 1, 7]], 0.95)
        scale = g.tensor(dims, dtype="float32", name="scale")
        bias = g.tensor(dims, dtype="float32", name="bias") if mode == "layer" else None
        method = g.layernorm if mode == "layer" else g.rmsnorm
        method(
            x,
            scale,
            bias,
            epsilon=scalar([1e-5, 1e-3]),
            training=pick(rng, [True, False], 0.95),
            zero_centered_gamma=pick(rng, [False, True], 0.95),
        )
    if rng.random() < 0.3:
        g.build(device_properties=ctx.props, cache=False).close()
    g.close()


def serving(rng: random.Random, ctx: Any) -> None:
    """Paged K/V caches and ragged (THD) tensors: containers, page tables, offsets and totals,
    mostly well-formed, sometimes of the wrong dims, type, batch or size."""
    import pycudnn

    _, pick, small = _helpers()

    def mostly(good: Any, *bad: Any) -> Any:  # the good value 9 times in 10
        return good if rng.random() < 0.9 else pick(rng, list(bad), 0.97)

    g = pycudnn.Graph("serving")
    b, h, d = small(rng) or 1, rng.choice([1, 2, 8]), 64
    s_q, s_kv, block = rng.choice([1, 1, 16, 64]), rng.choice([1, 50, 128]), rng.choice([1, 16, 64])
    pages = -(-s_kv // block)
    dt = pick(rng, ["bfloat16", "float16"], 0.97)

    def thd(name: str, rows: int) -> Any:
        return g.tensor([b, h, rows, d], [rows * h * d, d, h * d, 1], dtype=dt, name=name)

    paged = rng.random() < 0.5
    sides = rng.choice([("k",), ("v",), ("k", "v"), ("k", "v")]) if paged else ()
    blocks = max(1, mostly(b * pages + rng.choice([0, 3]), 0, 1))
    q = thd("q", s_q)
    k, v = (
        g.tensor([blocks, h, block, d], dtype=dt, name=f"{side}_cache")
        if side in sides
        else thd(side, s_kv)
        for side in ("k", "v")
    )
    opts: dict[str, Any] = {"implementation": pick(rng, ["auto", "composite", "unified"], 0.97)}
    if rng.random() < 0.95:
        opts["seq_len_q"] = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_q")
        opts["seq_len_kv"] = g.tensor([b, 1, 1, 1], dtype="int32", name="seq_len_kv")
    if paged:  # containers [num_blocks, h, block, d] for K and/or V, with their page tables
        for side in sides:
            t_dims = mostly([b, 1, pages, 1], [b + 1, 1, pages, 1], [b, pages, 1, 1])
            t_type = mostly("int32", "int64", "float32")
            opts[f"paged_attention_{side}_table"] = g.tensor(t_dims, dtype=t_type, name=side + "t")
        opts["paged_attention_max_seq_len_kv"] = mostly(
            rng.choice([s_kv, None]), 0, pages * block + 1, True
        )
    else:  # ragged: offsets on some of Q, K, V
        o_type = mostly(rng.choice(["int32", "int64"]), "float32", "int8")
        off = g.tensor(mostly([b + 1, 1, 1, 1], [b, 1, 1, 1]), dtype=o_type, name="off")
        for t in (q, k, v):
            if rng.random() < 0.7:
                t.set_ragged_offset(off)
        opts["max_total_seq_len_q"] = mostly(rng.choice([None, b * s_q]), 0, s_q - 1, 1.5)
    o, _ = g.sdpa(q, k, v, **opts)
    if rng.random() < 0.5 and q.ragged_offset is not None:
        o.set_ragged_offset(q.ragged_offset)
    if rng.random() < 0.3:
        g.build(device_properties=ctx.props, cache=False).close()
    g.close()


TARGETS: dict[str, Callable[[random.Random, Any], None]] = {
    "attention": attention,
    "norms": norms,
    "serving": serving,
}
#: Planning an SDPA graph costs 0.3 to 1 s on a CPU (cuDNN compiles its kernels): fewer inputs.
WEIGHTS: dict[str, float] = {"attention": 0.5, "norms": 1, "serving": 0.5}
