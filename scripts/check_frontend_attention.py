#!/usr/bin/env python3
"""cudnn-frontend's SDPA test space, planned by pycudnn and (optionally) by the frontend itself.

The parameter space of NVIDIA cudnn-frontend's ``test/python/test_mhas.py`` (``test_sdpa`` and
``test_sdpa_backward``), one parametrize axis at a time on b=2, h=6, s=256, d=128, bf16, written
with the frontend's keyword names and planned deviceless for the committed H100 properties::

    python scripts/check_frontend_attention.py                       # pycudnn only
    python scripts/check_frontend_attention.py --frontend-python PY  # and the frontend, in PY

The frontend side runs in a child process of the given Python (an environment with
``nvidia-cudnn-frontend`` installed; it never shares a process with pycudnn, so each loads its
own cuDNN). Each line: the case, pycudnn's result (engine and lowering, or the refusal with what
works), the frontend's. Exit status 1 when a case pycudnn should plan does not.
``tests/test_attention_frontend_space.py`` runs the pycudnn side as tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEVICEPROPS = ROOT / "tests" / "data" / "deviceprops" / "h100-sxm-80gb.json"

B, H, S, D = 2, 6, 256, 128


@dataclasses.dataclass(frozen=True)
class Case:
    """One point of test_mhas.py's space: the base case with one axis changed."""

    name: str
    backward: bool = False
    dtype: str = "bfloat16"
    layout: str = "bshd_bshd_bshd"  # or "bs3hd", "sbh3d" (one packed QKV buffer)
    h_k: int = H
    d_v: int = D
    s_q: int = S
    bias: bool = False
    alibi: bool = False
    padding: bool = False
    left_bound: int | None = None
    right_bound: int | None = None
    alignment: str = "top_left"
    dropout: bool = False
    infer: bool = False
    ragged: bool = False
    paged: bool = False
    sink: bool = False  # sink_token (and dSink_token in the backward)
    block_mask: bool = False
    dropout_mask: bool = False  # dropout=(mask, scale)
    score_stats: bool = False  # score_max and score_sum_exp outputs
    stats_log2: bool = False  # stats_use_log2
    fp8: str = ""  # sdpa_fp8 with Q, K, V (and O) of this type
    #: "plan", or "refused" (cuDNN has no engine, or pycudnn no such feature: says what works)
    expect: str = "plan"
    #: the oldest cuDNN (major, minor) the case is built for (older ones refuse it by version)
    since: tuple[int, int] = (9, 0)


FORWARD = [
    Case("base"),
    Case("inference", infer=True),
    Case("float16", dtype="float16"),
    Case("bs3hd", layout="bs3hd"),
    Case("sbh3d", layout="sbh3d"),
    Case("group_query", h_k=2),
    Case("multi_query", h_k=1),
    Case("d_qk!=d_v", d_v=64),
    Case("bias", bias=True),
    Case("alibi", alibi=True, right_bound=0),
    Case("padding", padding=True),
    Case("causal", right_bound=0),
    Case("causal_bottom_right", right_bound=0, alignment="bottom_right"),
    Case("sliding_window", left_bound=64, right_bound=0),
    Case("left_bound", left_bound=64),
    Case("right_bound", right_bound=64),
    Case("dropout", dropout=True),  # training: stats and the RNG dump, as the frontend test
    Case("ragged", padding=True, ragged=True),
    Case("paged", padding=True, paged=True),
    Case("decode", s_q=1, infer=True),
    Case("decode_paged", s_q=1, infer=True, padding=True, paged=True),
    Case("sink", sink=True, since=(9, 13)),
    Case("sink_causal", sink=True, right_bound=0, since=(9, 13)),
    Case("sink_inference", sink=True, infer=True, since=(9, 13)),
    Case("dropout_mask", dropout_mask=True),
    # score_max/score_sum_exp: the unified SDPA's softmax sub-operation from 9.21, else the
    # composite graph's reductions (planned on 9.10, 9.12, 9.19 and 9.28)
    Case("score_max_sum_exp", score_stats=True, since=(9, 10)),
    Case("score_max_sum_exp_causal", score_stats=True, right_bound=0, since=(9, 10)),
    Case("stats_log2", stats_log2=True, since=(9, 27)),
    # SDPA_FWD_BLOCK_MASK_DESC finalizes, but no Hopper engine takes it (cuDNN 9.28)
    Case("block_mask", block_mask=True, infer=True, expect="refused", since=(9, 14)),
    Case("fp8_e4m3", fp8="float8_e4m3fn", since=(9, 25)),
    Case("fp8_e5m2", fp8="float8_e5m2", since=(9, 25)),
    Case("fp8_causal", fp8="float8_e4m3fn", right_bound=0, since=(9, 25)),
    Case("fp8_inference", fp8="float8_e4m3fn", infer=True, since=(9, 25)),
]

BACKWARD = [
    Case("base", backward=True),
    Case("float16", backward=True, dtype="float16"),
    Case("bs3hd", backward=True, layout="bs3hd"),
    Case("sbh3d", backward=True, layout="sbh3d"),
    Case("group_query", backward=True, h_k=2),
    Case("multi_query", backward=True, h_k=1),
    Case("bias_dbias", backward=True, bias=True),
    Case("alibi", backward=True, alibi=True, right_bound=0),
    Case("padding", backward=True, padding=True),
    Case("causal", backward=True, right_bound=0),
    Case("causal_bottom_right", backward=True, right_bound=0, alignment="bottom_right"),
    Case("left_bound", backward=True, left_bound=64),
    Case("right_bound", backward=True, right_bound=64),
    Case("dropout", backward=True, dropout=True),
    # the backward's mask-and-scale form: (mask, scale, scale_inv)
    Case("dropout_mask", backward=True, dropout_mask=True),
    Case("ragged", backward=True, padding=True, ragged=True),
    Case("sink_dsink", backward=True, sink=True, since=(9, 13)),
    # sdpa_fp8_backward: the frontend's composite graph (cuDNN's unified backward has no FP8)
    Case("fp8_e4m3", backward=True, fp8="float8_e4m3fn", since=(9, 1)),
    Case("fp8_e5m2", backward=True, fp8="float8_e5m2", since=(9, 1)),
    Case("fp8_causal", backward=True, fp8="float8_e4m3fn", right_bound=0, since=(9, 1)),
    Case("fp8_padding", backward=True, fp8="float8_e4m3fn", padding=True, since=(9, 1)),
    Case("fp8_group_query", backward=True, fp8="float8_e4m3fn", h_k=2, since=(9, 1)),
    Case("fp8_dropout", backward=True, fp8="float8_e4m3fn", dropout=True, since=(9, 1)),
]

CASES = FORWARD + BACKWARD


def expected(case: Case, loaded: tuple[int, ...]) -> str:
    """What pycudnn must do with ``case`` on the loaded cuDNN: refuse it (by version) before
    ``case.since``, else ``case.expect``."""
    return "refused" if tuple(loaded[:2]) < case.since else case.expect


def case_id(case: Case) -> str:
    return ("bwd:" if case.backward else "fwd:") + case.name


#: The block size of the paged K/V caches (test_mhas.py draws it; one value here).
BLOCK = 64
#: sdpa_fp8's six float32 factors, in the frontend's positional order.
FP8_FACTORS = ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")
#: sdpa_fp8_backward's twelve float32 factors, in the frontend's positional order.
FP8_BWD_FACTORS = (
    *("descale_q", "descale_k", "descale_v", "descale_o", "descale_dO", "descale_s"),
    *("descale_dP", "scale_s", "scale_dQ", "scale_dK", "scale_dV", "scale_dP"),
)


def qkv_strides(case: Case) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Dims and element strides of Q, K, V (and O, dO) as test_mhas.py lays them out; a paged
    K/V is its container ``[num_blocks, h_k, block_size, d]`` (packed)."""
    s_kv = S
    if case.layout == "bs3hd":  # one [b, s, 3, h, d] buffer
        st = (S * 3 * H * D, D, 3 * H * D, 1)
        return {r: ((B, H, S, D), st) for r in ("q", "k", "v")}
    if case.layout == "sbh3d":  # one [s, b, h, 3, d] buffer
        st = (H * 3 * D, 3 * D, B * H * 3 * D, 1)
        return {r: ((B, H, S, D), st) for r in ("q", "k", "v")}

    def bshd(h: int, s: int, d: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (B, h, s, d), (s * h * d, d, h * d, 1)

    out = {
        "q": bshd(H, case.s_q, D),
        "k": bshd(case.h_k, s_kv, D),
        "v": bshd(case.h_k, s_kv, case.d_v),
        "o": bshd(H, case.s_q, case.d_v),
    }
    if case.paged:
        blocks = B * -(-s_kv // BLOCK)
        for role, d in (("k", D), ("v", case.d_v)):
            dims = (blocks, case.h_k, BLOCK, d)
            out[role] = dims, (case.h_k * BLOCK * d, BLOCK * d, d, 1)
    return out


# -- pycudnn -------------------------------------------------------------------------------------


def pycudnn_graph(case: Case) -> Any:
    """The case as a pycudnn graph, written with cudnn-frontend's keyword names."""
    from pycudnn.graph import Graph

    g = Graph(case_id(case).replace(":", "_"))
    shapes = qkv_strides(case)

    def tensor(role: str, shape: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> Any:
        dims, strides = shape or shapes[role]
        return g.tensor(list(dims), list(strides), dtype=case.fp8 or case.dtype, name=role)

    q, k, v = tensor("q"), tensor("k"), tensor("v")
    s_q, s_kv = q.dims[2], S
    if case.fp8 and case.backward:  # sdpa_fp8_backward: twelve float32 factors
        o, do = (tensor(r, shapes.get("o", shapes["q"])) for r in ("o", "do"))
        stats = g.tensor([B, H, s_q, 1], dtype="float32", name="stats")
        factors = [g.tensor([1, 1, 1, 1], dtype="float32", name=n) for n in FP8_BWD_FACTORS]
        g.sdpa_fp8_backward(
            q, k, v, o, do, stats, *factors, name="sdpa_backward", **_fp8_backward_options(case, g)
        )
        return g
    if case.fp8:  # the frontend's sdpa_fp8: six float32 factors, its own mask names
        factors = [g.tensor([1, 1, 1, 1], dtype="float32", name=n) for n in FP8_FACTORS]
        g.sdpa_fp8(
            q, k, v, *factors, name="sdpa", attn_scale=0.125, generate_stats=not case.infer,
            left_bound=case.left_bound, right_bound=case.right_bound,
        )  # fmt: skip
        return g
    opts: dict[str, Any] = {
        "attn_scale": 0.125,
        "use_alibi_mask": case.alibi,
        "use_padding_mask": case.padding,
        "diagonal_band_left_bound": case.left_bound,
        "diagonal_band_right_bound": case.right_bound,
        "diagonal_alignment": case.alignment,
    }
    if case.bias:
        opts["bias"] = g.tensor([1, H, s_q, s_kv], dtype=case.dtype, name="bias")
    if case.padding:
        opts["seq_len_q"] = g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_q")
        opts["seq_len_kv"] = g.tensor([B, 1, 1, 1], dtype="int32", name="seq_len_kv")
    if case.dropout:
        seed = g.tensor([1, 1, 1, 1], dtype="int64", name="seed")
        offset = g.tensor([1, 1, 1, 1], dtype="int64", name="offset")
        opts["dropout"] = (0.1, seed, offset)
    if case.dropout_mask:
        mask = g.tensor([B, H, s_q, s_kv], dtype=case.dtype, name="dropout_mask")
        scales = ("dropout_scale", "dropout_scale_inv") if case.backward else ("dropout_scale",)
        opts["dropout"] = (mask, *(g.tensor([1, 1, 1, 1], dtype="float32", name=n) for n in scales))
    if case.sink:
        opts["sink_token"] = g.tensor([1, H, 1, 1], dtype="float32", name="sink")
        if case.backward:
            opts["dSink_token"] = g.tensor([1, H, 1, 1], dtype="float32", name="dsink")
    if case.block_mask:
        tiles = [B, H, -(-s_q // 128), -(-s_kv // 128)]
        opts["block_mask"] = g.tensor(tiles, dtype="int8", name="block_mask")
    if case.score_stats:
        for key in ("score_max", "score_sum_exp"):
            opts[key] = g.tensor([B, H, s_q, 1], dtype="float32", name=key)
    if case.stats_log2:
        opts["stats_use_log2"] = True
    ragged: dict[str, Any] = {}
    if case.ragged:  # THD: Q, O (dO) from one offset tensor, K and V from another
        opts["max_total_seq_len_q"] = B * s_q
        opts["max_total_seq_len_kv"] = B * s_kv
        offsets = [g.tensor([B + 1, 1, 1, 1], dtype="int32", name=f"ragged_{n}") for n in "qk"]
        ragged = dict(zip(("q", "kv"), offsets, strict=True))
        for t, side in ((q, "q"), (k, "kv"), (v, "kv")):
            t.set_ragged_offset(ragged[side])
    if not case.backward:
        if case.dropout:
            opts["rng_dump"] = g.tensor([B, H, s_q, s_kv], dtype="float32", name="rng_dump")
        if case.paged:
            pages = [B, 1, -(-s_kv // BLOCK), 1]
            opts.update(
                paged_attention_k_table=g.tensor(pages, dtype="int32", name="k_table"),
                paged_attention_v_table=g.tensor(pages, dtype="int32", name="v_table"),
                paged_attention_max_seq_len_kv=s_kv,
            )
        o, _ = g.sdpa(q, k, v, name="sdpa", generate_stats=not case.infer, **opts)
        if case.ragged:
            o.set_ragged_offset(ragged["q"])
        return g
    o = tensor("o", shapes.get("o", shapes["q"]))
    do = tensor("do", shapes.get("o", shapes["q"]))
    stats = g.tensor([B, H, s_q, 1], dtype="float32", name="stats")
    if case.bias:
        opts["dBias"] = g.tensor([1, H, s_q, s_kv], dtype=case.dtype, name="dbias")
    if case.ragged:
        o.set_ragged_offset(ragged["q"])
        do.set_ragged_offset(ragged["q"])
    grads = g.sdpa_backward(q=q, k=k, v=v, o=o, dO=do, stats=stats, name="sdpa_backward", **opts)
    if case.ragged:
        for t, side in zip(grads, ("q", "kv", "kv"), strict=True):
            t.set_ragged_offset(ragged[side])
    return g


def _fp8_backward_options(case: Case, g: Any, int32: Any = "int32", int64: Any = "int64") -> Any:
    """sdpa_fp8_backward's keywords for the case (pycudnn's graph or the frontend's: the same
    names; the tensors made by ``g.tensor`` with the given index types)."""

    def scalar(name: str, dims: list[int], dtype: Any) -> Any:
        if isinstance(dtype, str):
            return g.tensor(dims, dtype=dtype, name=name)
        return g.tensor(name=name, dim=dims, stride=[1] * len(dims), data_type=dtype)

    opts: dict[str, Any] = {"attn_scale": 0.125, "right_bound": case.right_bound}
    opts["use_causal_mask"] = False
    if case.padding:
        opts["use_padding_mask"] = True
        opts["seq_len_q"] = scalar("seq_len_q", [B, 1, 1, 1], int32)
        opts["seq_len_kv"] = scalar("seq_len_kv", [B, 1, 1, 1], int32)
    if case.dropout:
        seed, offset = (scalar(n, [1, 1, 1, 1], int64) for n in ("seed", "offset"))
        opts["dropout"] = (0.1, seed, offset)
    return opts


def pycudnn_result(case: Case, props: Any) -> dict[str, Any]:
    """``{"status": "plan", "engine", "lowering"}`` or ``{"status": "refused", "error"}``."""
    from pycudnn.errors import CudnnError, UnsupportedByLibraryError
    from pycudnn.graph import GraphError

    try:
        g = pycudnn_graph(case)
        op = next(o for o in g.operations if o.kind.startswith("sdpa"))
        plan = g.build(device_properties=props, cache=False)
    except (GraphError, CudnnError, UnsupportedByLibraryError) as exc:
        return {"status": "refused", "error": f"{type(exc).__name__}: {exc}"}
    return {"status": "plan", "engine": plan.engine_id, "lowering": op.attrs["lowering"]}


# -- cudnn-frontend (run in the child process) -----------------------------------------------


def frontend_result(case: Case, props_json: str) -> dict[str, Any]:  # pragma: no cover - child
    import cudnn  # type: ignore[import-not-found,unused-ignore]

    dt = {
        "bfloat16": cudnn.data_type.BFLOAT16,
        "float16": cudnn.data_type.HALF,
        "float8_e4m3fn": cudnn.data_type.FP8_E4M3,
        "float8_e5m2": cudnn.data_type.FP8_E5M2,
    }[case.fp8 or case.dtype]
    g = cudnn.pygraph(
        io_data_type=dt,
        intermediate_data_type=cudnn.data_type.FLOAT,
        compute_data_type=cudnn.data_type.FLOAT,
        device_property=cudnn.create_device_properties(props_json),
        sm_version=90,
    )
    shapes = qkv_strides(case)

    def tensor(role: str, dtype: Any = dt, shape: Any = None) -> Any:
        dims, strides = shape or shapes[role]
        return g.tensor(name=role, dim=list(dims), stride=list(strides), data_type=dtype)

    def packed(role: str, dims: list[int], dtype: Any) -> Any:
        strides: list[int] = []
        step = 1
        for n in reversed(dims):
            strides.insert(0, step)
            step *= n
        return g.tensor(name=role, dim=dims, stride=strides, data_type=dtype)

    q, k, v = tensor("q"), tensor("k"), tensor("v")
    s_q, s_kv = shapes["q"][0][2], S
    align = {
        "top_left": cudnn.diagonal_alignment.TOP_LEFT,
        "bottom_right": cudnn.diagonal_alignment.BOTTOM_RIGHT,
    }[case.alignment]
    opts: dict[str, Any] = {
        "attn_scale": 0.125,
        "use_alibi_mask": case.alibi,
        "use_padding_mask": case.padding,
        "diagonal_band_left_bound": case.left_bound,
        "diagonal_band_right_bound": case.right_bound,
        "diagonal_alignment": align,
    }
    if case.bias:
        opts["bias"] = packed("bias", [1, H, s_q, s_kv], dt)
    if case.padding:
        opts["seq_len_q"] = packed("seq_len_q", [B, 1, 1, 1], cudnn.data_type.INT32)
        opts["seq_len_kv"] = packed("seq_len_kv", [B, 1, 1, 1], cudnn.data_type.INT32)
    if case.dropout:
        seed = packed("seed", [1, 1, 1, 1], cudnn.data_type.INT64)
        offset = packed("offset", [1, 1, 1, 1], cudnn.data_type.INT64)
        opts["dropout"] = (0.1, seed, offset)
    f32 = cudnn.data_type.FLOAT
    if case.dropout_mask:
        mask = packed("dropout_mask", [B, H, s_q, s_kv], dt)
        scales = ("dropout_scale", "dropout_scale_inv") if case.backward else ("dropout_scale",)
        opts["dropout"] = (mask, *(packed(n, [1, 1, 1, 1], f32) for n in scales))
    if case.sink:
        opts["sink_token"] = packed("sink", [1, H, 1, 1], f32)
        if case.backward:
            opts["dSink_token"] = packed("dsink", [1, H, 1, 1], f32)
    if case.block_mask:
        tiles = [B, H, -(-s_q // 128), -(-s_kv // 128)]
        opts["block_mask"] = packed("block_mask", tiles, cudnn.data_type.INT8)
    if case.score_stats:  # outputs the graph writes, given as tensors (as rng_dump)
        for key in ("score_max", "score_sum_exp"):
            opts[key] = packed(key, [B, H, s_q, 1], f32)
    if case.stats_log2:
        opts["stats_use_log2"] = True
    try:
        if case.fp8 and case.backward:
            io = [tensor(r, shape=shapes.get("o", shapes["q"])) for r in ("o", "do")]
            stats = packed("stats", [B, H, s_q, 1], f32)
            factors = [packed(n, [1, 1, 1, 1], f32) for n in FP8_BWD_FACTORS]
            index = (cudnn.data_type.INT32, cudnn.data_type.INT64)
            outs = g.sdpa_fp8_backward(
                q, k, v, *io, stats, *factors, name="sdpa_backward",
                **_fp8_backward_options(case, g, *index),
            )  # fmt: skip
            for i, t in enumerate(outs):
                t.set_output(True).set_data_type(dt if i < 3 else f32)
            g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
            return _frontend_plan(g)
        if case.fp8:
            factors = [packed(n, [1, 1, 1, 1], f32) for n in FP8_FACTORS]
            outs = g.sdpa_fp8(
                q, k, v, *factors, name="sdpa", attn_scale=0.125, generate_stats=not case.infer,
                left_bound=case.left_bound, right_bound=case.right_bound, diagonal_alignment=align,
            )  # fmt: skip
            outs[0].set_output(True).set_data_type(dt)
            for t in outs[1:]:
                if t is not None:
                    t.set_output(True).set_data_type(f32)
            g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
            return _frontend_plan(g)
        ragged: dict[str, Any] = {}
        if case.ragged:
            opts["max_total_seq_len_q"] = B * s_q
            opts["max_total_seq_len_kv"] = B * s_kv
            for side in ("q", "kv"):
                ragged[side] = packed(f"ragged_{side}", [B + 1, 1, 1, 1], cudnn.data_type.INT32)
            for t, side in ((q, "q"), (k, "kv"), (v, "kv")):
                t.set_ragged_offset(ragged[side])
        if case.paged:
            pages = [B, 1, -(-s_kv // BLOCK), 1]
            opts["paged_attention_k_table"] = packed("k_table", pages, cudnn.data_type.INT32)
            opts["paged_attention_v_table"] = packed("v_table", pages, cudnn.data_type.INT32)
            opts["paged_attention_max_seq_len_kv"] = s_kv
        if not case.backward:
            if case.dropout:
                opts["rng_dump"] = packed("rng_dump", [B, H, s_q, s_kv], cudnn.data_type.FLOAT)
            o, stats = g.sdpa(name="sdpa", q=q, k=k, v=v, generate_stats=not case.infer, **opts)
            o.set_output(True)
            if case.ragged:
                o.set_ragged_offset(ragged["q"])
            if stats is not None:
                stats.set_output(True).set_data_type(cudnn.data_type.FLOAT)
        else:
            o = tensor("o", shape=shapes.get("o", shapes["q"]))
            do = tensor("do", shape=shapes.get("o", shapes["q"]))
            stats = packed("stats", [B, H, s_q, 1], cudnn.data_type.FLOAT)
            if case.bias:
                opts["dBias"] = packed("dbias", [1, H, s_q, s_kv], dt)
            if case.ragged:
                o.set_ragged_offset(ragged["q"])
                do.set_ragged_offset(ragged["q"])
            grads = g.sdpa_backward(
                name="sdpa_backward", q=q, k=k, v=v, o=o, dO=do, stats=stats, **opts
            )
            for t, side in zip(grads, ("q", "kv", "kv"), strict=True):
                t.set_output(True)
                if case.ragged:
                    t.set_ragged_offset(ragged[side])
        g.build([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    except Exception as exc:
        return {"status": "refused", "error": f"{type(exc).__name__}: {exc}"[:300]}
    return _frontend_plan(g)


def _frontend_plan(g: Any) -> dict[str, Any]:  # pragma: no cover - child
    # the plan name is "eng<id>_k<knob>=<value>...": the engine id the heuristics chose first
    name = str(g.get_plan_name_at_index(0))
    engine: Any = name.split("_")[0].removeprefix("eng")
    return {"status": "plan", "engine": int(engine) if engine.isdigit() else name}


def _child() -> int:  # pragma: no cover - runs in the frontend's Python
    props_json = DEVICEPROPS.read_text()
    for case in CASES:
        print(json.dumps({"case": case_id(case), **frontend_result(case, props_json)}), flush=True)
    return 0


def _frontend_results(python: str) -> dict[str, dict[str, Any]]:
    proc = subprocess.run(
        [python, str(Path(__file__).resolve()), "--child"],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            out[row.pop("case")] = row
    if proc.returncode and not out:
        print(f"frontend child failed ({proc.returncode}): {proc.stderr[-2000:]}", file=sys.stderr)
    return out


def _text(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if result["status"] == "plan":
        lowering = f" ({result['lowering']})" if "lowering" in result else ""
        return f"plan engine {result['engine']}{lowering}"
    return f"{result['status']}: {result.get('error', '')[:160]}"


def frontend_arguments(doc: str, argv: list[str] | None) -> argparse.Namespace:
    """``--frontend-python`` and the hidden ``--child`` of the frontend comparison scripts."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--frontend-python", help="a Python with nvidia-cudnn-frontend installed")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = frontend_arguments(__doc__, argv)
    if args.child:
        return _child()
    import pycudnn

    props = pycudnn.DeviceProperties.from_json(json.loads(DEVICEPROPS.read_text()))
    frontend = _frontend_results(args.frontend_python) if args.frontend_python else {}
    print(
        f"cuDNN {'.'.join(map(str, pycudnn.version_tuple()))}, H100 properties, b={B} h={H} s={S} d={D}"
    )
    wrong = 0
    for case in CASES:
        ours = pycudnn_result(case, props)
        wrong += ours["status"] != expected(case, pycudnn.version_tuple())
        theirs = frontend.get(case_id(case)) if args.frontend_python else None
        print(f"{case_id(case):26} pycudnn: {_text(ours)}")
        if args.frontend_python:
            print(f"{'':26} frontend: {_text(theirs)}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
