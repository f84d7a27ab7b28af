"""Lowering the newer backend operation kinds (softmax, statistics, shape, resample, RoPE, RNG,
block scaling, MoE, paged cache, band matrices, signal, adaptive layer norm) to their
``OPERATION_*`` descriptors.

One table row per kind: the descriptor, the attribute each tensor role goes to, the attribute
each setting goes to (with its cuDNN attribute type, given explicitly because ``cudnn_graph.h``
documents none for several of them) and the math-precision attribute. :func:`build_extra_op` is
called by :mod:`.lowering` for every kind in :data:`EXTRA_KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from .tensors import Operation

__all__ = ["EXTRA_KINDS", "build_extra_op"]


class _Ctx(NamedTuple):
    """What a kind's extra lowering step needs from :func:`build_extra_op`'s caller."""

    new: Any  # creates a descriptor owned by the graph's descriptor set
    finalize: Any  # finalizes one, naming the operation in cuDNN's errors
    compute: Any  # the operation's compute type (cudnnDataType_t)
    tensors: dict[int, Any]  # tensor uid -> its finalized TENSOR descriptor


class _Kind(NamedTuple):
    descriptor: str  # OPERATION_* (without _DESCRIPTOR)
    roles: dict[str, str]  # tensor role -> attribute (without CUDNN_ATTR_)
    values: tuple[tuple[str, str, str], ...] = ()  # (attrs key, attribute, attribute type)
    math: str | None = None  # the MATH_PREC / COMP_TYPE attribute, if the kind has one
    # sub-descriptors and descriptor lists: extra(op, the OPERATION_* descriptor, _Ctx)
    extra: Callable[..., None] | None = None


def _resample_desc(op: Operation, d: Any, ctx: _Ctx) -> None:
    a = op.attrs
    r = ctx.new("RESAMPLE")
    r.set("RESAMPLE_MODE", a["mode"], attr_type="RESAMPLE_MODE")
    r.set("RESAMPLE_COMP_TYPE", ctx.compute, attr_type="DATA_TYPE")
    r.set("RESAMPLE_NAN_PROPAGATION", a["nan_propagation"], attr_type="NAN_PROPOGATION")
    r.set("RESAMPLE_PADDING_MODE", a["padding_mode"], attr_type="PADDING_MODE")
    r.set("RESAMPLE_SPATIAL_DIMS", len(a["window"]), attr_type="INT64")
    r.set("RESAMPLE_WINDOW_DIMS", a["window"], attr_type="INT64")
    r.set("RESAMPLE_PRE_PADDINGS", a["pre_padding"], attr_type="INT64")
    r.set("RESAMPLE_POST_PADDINGS", a["post_padding"], attr_type="INT64")
    r.set("RESAMPLE_STRIDES", a["stride"], attr_type="INT64")
    ctx.finalize(r, f"{op.label} (resample settings)")
    fwd = op.kind == "resample"
    prefix = "OPERATION_RESAMPLE_FWD_" if fwd else "OPERATION_RESAMPLE_BWD_"
    d.set(prefix + "DESC", r, attr_type="BACKEND_DESCRIPTOR")
    d.set(prefix + "ALPHA", 1.0, attr_type="DOUBLE")
    d.set(prefix + "BETA", 0.0, attr_type="DOUBLE")


def _rng_desc(op: Operation, d: Any, ctx: _Ctx) -> None:
    a = op.attrs
    r = ctx.new("RNG")
    r.set("RNG_DISTRIBUTION", a["distribution"], attr_type="RNG_DISTRIBUTION")
    if a["distribution"].name == "BERNOULLI":
        r.set("RNG_BERNOULLI_DIST_PROBABILITY", a["probability"], attr_type="DOUBLE")
    elif a["distribution"].name == "UNIFORM":
        r.set("RNG_UNIFORM_DIST_MINIMUM", a["minimum"], attr_type="DOUBLE")
        r.set("RNG_UNIFORM_DIST_MAXIMUM", a["maximum"], attr_type="DOUBLE")
    else:
        r.set("RNG_NORMAL_DIST_MEAN", a["mean"], attr_type="DOUBLE")
        r.set("RNG_NORMAL_DIST_STANDARD_DEVIATION", a["std"], attr_type="DOUBLE")
    ctx.finalize(r, f"{op.label} (rng settings)")
    d.set("OPERATION_RNG_DESC", r, attr_type="BACKEND_DESCRIPTOR")


def _concat_inputs(op: Operation, d: Any, ctx: _Ctx) -> None:
    # the inputs are one attribute holding a list of descriptors, in input order
    ins = [ctx.tensors[t.uid] for r, t in op.inputs.items() if r.startswith("x")]
    d.set("OPERATION_CONCAT_INPUT_DESCS", ins, attr_type="BACKEND_DESCRIPTOR")


_BN_FIN = "OPERATION_BN_FINALIZE_"
_BN_BWD = "OPERATION_BN_BWD_WEIGHTS_"
_MOE = "OPERATION_MOE_GROUPED_MATMUL_"
_BAND = "OPERATION_DIAGONAL_BAND_MASK_"

EXTRA_KINDS: dict[str, _Kind] = {
    "softmax": _Kind(
        "OPERATION_SOFTMAX",
        {
            "x": "OPERATION_SOFTMAX_XDESC",
            "sink": "OPERATION_SOFTMAX_SINK_DESC",
            "y": "OPERATION_SOFTMAX_YDESC",
            "stats": "OPERATION_SOFTMAX_STATS_DESC",
            "max": "OPERATION_SOFTMAX_MAX_DESC",
            "sum_exp": "OPERATION_SOFTMAX_SUM_EXP_DESC",
        },
        (("stats_log2", "OPERATION_SOFTMAX_STATS_LOG2", "BOOLEAN"),),
    ),
    "genstats": _Kind(
        "OPERATION_GEN_STATS",
        {
            "x": "OPERATION_GENSTATS_XDESC",
            "sum": "OPERATION_GENSTATS_SUMDESC",
            "sq_sum": "OPERATION_GENSTATS_SQSUMDESC",
        },
        (("mode", "OPERATION_GENSTATS_MODE", "GENSTATS_MODE"),),
        "OPERATION_GENSTATS_MATH_PREC",
    ),
    "batchnorm_finalize": _Kind(
        "OPERATION_BN_FINALIZE_STATISTICS",
        {
            "sum": _BN_FIN + "Y_SUM_DESC",
            "sq_sum": _BN_FIN + "Y_SQ_SUM_DESC",
            "scale": _BN_FIN + "SCALE_DESC",
            "bias": _BN_FIN + "BIAS_DESC",
            "epsilon": _BN_FIN + "EPSILON_DESC",
            "accum_count": _BN_FIN + "ACCUM_COUNT_DESC",
            "prev_running_mean": _BN_FIN + "PREV_RUNNING_MEAN_DESC",
            "prev_running_var": _BN_FIN + "PREV_RUNNING_VAR_DESC",
            "momentum": _BN_FIN + "EXP_AVERATE_FACTOR_DESC",
            "eq_scale": _BN_FIN + "EQ_SCALE_DESC",
            "eq_bias": _BN_FIN + "EQ_BIAS_DESC",
            "mean": _BN_FIN + "SAVED_MEAN_DESC",
            "inv_variance": _BN_FIN + "SAVED_INV_STD_DESC",
            "next_running_mean": _BN_FIN + "UPDATED_RUNNING_MEAN_DESC",
            "next_running_var": _BN_FIN + "UPDATED_RUNNING_VAR_DESC",
        },
        (("mode", _BN_FIN + "STATS_MODE", "BN_FINALIZE_STATS_MODE"),),
        _BN_FIN + "MATH_PREC",
    ),
    "batchnorm_backward_weights": _Kind(
        "OPERATION_BN_BWD_WEIGHTS",
        {
            "x": _BN_BWD + "X_DESC",
            "dy": _BN_BWD + "DY_DESC",
            "mean": _BN_BWD + "MEAN_DESC",
            "inv_variance": _BN_BWD + "INVSTD_DESC",
            "scale": _BN_BWD + "BN_SCALE_DESC",
            "dscale": _BN_BWD + "DBN_SCALE_DESC",
            "dbias": _BN_BWD + "DBN_BIAS_DESC",
            "eq_dy_scale": _BN_BWD + "EQ_DY_SCALE_DESC",
            "eq_x_scale": _BN_BWD + "EQ_X_SCALE_DESC",
            "eq_bias": _BN_BWD + "EQ_BIAS",
        },
        (),
        _BN_BWD + "MATH_PREC",
    ),
    "reshape": _Kind(
        "OPERATION_RESHAPE",
        {"x": "OPERATION_RESHAPE_XDESC", "y": "OPERATION_RESHAPE_YDESC"},
        (("mode", "OPERATION_RESHAPE_MODE", "RESHAPE_MODE"),),
    ),
    "transpose": _Kind(
        "OPERATION_TRANSPOSE",
        {"x": "OPERATION_TRANSPOSE_XDESC", "y": "OPERATION_TRANSPOSE_YDESC"},
        (("permutation", "OPERATION_TRANSPOSE_PERMUTATION", "INT64"),),
    ),
    "slice": _Kind(
        "OPERATION_SLICE",
        {"x": "OPERATION_SLICE_XDESC", "y": "OPERATION_SLICE_YDESC"},
        (
            ("start", "OPERATION_SLICE_START_INDICES", "INT64"),
            ("limit", "OPERATION_SLICE_LIMIT_INDICES", "INT64"),
            ("step", "OPERATION_SLICE_STRIDES", "INT64"),
        ),
    ),
    "concatenate": _Kind(
        "OPERATION_CONCAT",
        {"y": "OPERATION_CONCAT_OUTPUT_DESC"},
        (
            ("axis", "OPERATION_CONCAT_AXIS", "INT64"),
            ("in_place_index", "OPERATION_CONCAT_INPLACE_INDEX", "INT64"),
        ),
        None,
        _concat_inputs,
    ),
    "resample": _Kind(
        "OPERATION_RESAMPLE_FWD",
        {
            "x": "OPERATION_RESAMPLE_FWD_XDESC",
            "y": "OPERATION_RESAMPLE_FWD_YDESC",
            "index": "OPERATION_RESAMPLE_FWD_IDXDESC",
        },
        (),
        None,
        _resample_desc,
    ),
    "resample_backward": _Kind(
        "OPERATION_RESAMPLE_BWD",
        {
            "dy": "OPERATION_RESAMPLE_BWD_DYDESC",
            "x": "OPERATION_RESAMPLE_BWD_XDESC",
            "y": "OPERATION_RESAMPLE_BWD_YDESC",
            "index": "OPERATION_RESAMPLE_BWD_IDXDESC",
            "dx": "OPERATION_RESAMPLE_BWD_DXDESC",
        },
        (),
        None,
        _resample_desc,
    ),
    "rope": _Kind(
        "OPERATION_ROPE_FWD",
        {
            "x": "OPERATION_ROPE_FWD_XDESC",
            "freqs": "OPERATION_ROPE_FWD_FREQSDESC",
            "y": "OPERATION_ROPE_FWD_YDESC",
        },
        (
            ("rope_dim", "OPERATION_ROPE_FWD_ROPE_DIM", "INT64"),
            ("output_scale", "OPERATION_ROPE_FWD_OUTPUT_SCALE", "FLOAT"),
        ),
    ),
    "rope_backward": _Kind(
        "OPERATION_ROPE_BWD",
        {
            "dy": "OPERATION_ROPE_BWD_DYDESC",
            "freqs": "OPERATION_ROPE_BWD_FREQSDESC",
            "dx": "OPERATION_ROPE_BWD_DXDESC",
        },
        (
            ("rope_dim", "OPERATION_ROPE_BWD_ROPE_DIM", "INT64"),
            ("output_scale", "OPERATION_ROPE_BWD_OUTPUT_SCALE", "FLOAT"),
        ),
    ),
    "rng": _Kind(
        "OPERATION_RNG",
        {
            "seed": "OPERATION_RNG_SEED",
            "offset": "OPERATION_RNG_OFFSET_DESC",
            "y": "OPERATION_RNG_YDESC",
        },
        (("seed_value", "OPERATION_RNG_SEED", "INT64"),),
        None,
        _rng_desc,
    ),
    "block_scale_quantize": _Kind(
        "OPERATION_BLOCK_SCALE_QUANTIZE",
        {
            "x": "OPERATION_BLOCK_SCALE_QUANTIZE_XDESC",
            "y": "OPERATION_BLOCK_SCALE_QUANTIZE_YDESC",
            "scale": "OPERATION_BLOCK_SCALE_QUANTIZE_SCALE_DESC",
        },
        (("block_size", "OPERATION_BLOCK_SCALE_QUANTIZE_BLOCK_SIZE", "INT32"),),
        "OPERATION_BLOCK_SCALE_QUANTIZE_MATH_PREC",
    ),
    "block_scale_dequantize": _Kind(
        "OPERATION_BLOCK_SCALE_DEQUANTIZE",
        {
            "x": "OPERATION_BLOCK_SCALE_DEQUANTIZE_XDESC",
            "scale": "OPERATION_BLOCK_SCALE_DEQUANTIZE_SCALE_DESC",
            "y": "OPERATION_BLOCK_SCALE_DEQUANTIZE_YDESC",
        },
        (
            ("block_size", "OPERATION_BLOCK_SCALE_DEQUANTIZE_BLOCK_SIZE", "INT32"),
            ("neg_scale", "OPERATION_BLOCK_SCALE_DEQUANTIZE_NEG_SCALE", "BOOLEAN"),
        ),
        "OPERATION_BLOCK_SCALE_DEQUANTIZE_MATH_PREC",
    ),
    "moe_grouped_matmul": _Kind(
        "OPERATION_MOE_GROUPED_MATMUL",
        {
            "token": _MOE + "TOKEN_DESC",
            "weight": _MOE + "WEIGHT_DESC",
            "first_token_offset": _MOE + "FIRST_TOKEN_OFFSET_DESC",
            "token_index": _MOE + "TOKEN_INDEX_DESC",
            "token_ks": _MOE + "TOKEN_KS_DESC",
            "output": _MOE + "OUTPUT_DESC",
        },
        (
            ("mode", _MOE + "MODE", "MOE_GROUPED_MATMUL_MODE"),
            ("top_k", _MOE + "TOP_K", "INT32"),
        ),
        _MOE + "MATH_PREC",
    ),
    "moe_grouped_matmul_backward": _Kind(
        "OPERATION_MOE_GROUPED_MATMUL_BWD",
        {
            "token": _MOE + "BWD_TOKEN_DESC",
            "doutput": _MOE + "BWD_DOUTPUT_DESC",
            "first_token_offset": _MOE + "BWD_FIRST_TOKEN_OFFSET_DESC",
            "dweight": _MOE + "BWD_DWEIGHT_DESC",
        },
        (),
        _MOE + "BWD_MATH_PREC",
    ),
    "paged_cache_load": _Kind(
        "OPERATION_PAGED_CACHE_LOAD",
        {
            "container": "OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC",
            "page_table": "OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC",
            "seq_len": "OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC",
            "y": "OPERATION_PAGED_CACHE_LOAD_YDESC",
        },
    ),
    "expand_band_matrix": _Kind(
        "OPERATION_EXPAND_BAND_MATRIX",
        {
            "x": "OPERATION_EXPAND_BAND_MATRIX_XDESC",
            "kv_token_offset": "OPERATION_EXPAND_BAND_MATRIX_KV_TOKEN_OFFSET_DESC",
            "speculative_mask": "OPERATION_EXPAND_BAND_MATRIX_SPECULATIVE_MASK_DESC",
            "y": "OPERATION_EXPAND_BAND_MATRIX_YDESC",
        },
        (
            ("lower", "OPERATION_EXPAND_BAND_MATRIX_LOWER_BANDWIDTH", "INT64"),
            ("upper", "OPERATION_EXPAND_BAND_MATRIX_UPPER_BANDWIDTH", "INT64"),
            ("axis", "OPERATION_EXPAND_BAND_MATRIX_AXIS", "INT64"),
            ("pad_value", "OPERATION_EXPAND_BAND_MATRIX_PAD_VALUE", "DOUBLE"),
        ),
    ),
    "contract_band_matrix": _Kind(
        "OPERATION_CONTRACT_BAND_MATRIX",
        {
            "x": "OPERATION_CONTRACT_BAND_MATRIX_XDESC",
            "y": "OPERATION_CONTRACT_BAND_MATRIX_YDESC",
        },
        (
            ("lower", "OPERATION_CONTRACT_BAND_MATRIX_LOWER_BANDWIDTH", "INT64"),
            ("upper", "OPERATION_CONTRACT_BAND_MATRIX_UPPER_BANDWIDTH", "INT64"),
            ("axis", "OPERATION_CONTRACT_BAND_MATRIX_AXIS", "INT64"),
            ("pad_value", "OPERATION_CONTRACT_BAND_MATRIX_PAD_VALUE", "DOUBLE"),
            ("max_token", "OPERATION_CONTRACT_BAND_MAX_TOKEN_VALUE", "INT64"),
        ),
    ),
    "diagonal_band_mask": _Kind(
        "OPERATION_DIAGONAL_BAND_MASK",
        {
            "x": _BAND + "XDESC",
            "seq_len_q": _BAND + "SEQ_LEN_QDESC",
            "seq_len_kv": _BAND + "SEQ_LEN_KVDESC",
            "left_bound": _BAND + "LEFT_BOUND_DESC",
            "right_bound": _BAND + "SHIFT_RIGHT_BOUND_DESC",
            "fill": _BAND + "BDESC",
            "y": _BAND + "YDESC",
        },
        (("comparison", _BAND + "COMPARISON_MODE", "POINTWISE_MODE"),),
    ),
    "adalayernorm": _Kind(
        "OPERATION_NORM_FORWARD",
        {
            "x": "OPERATION_NORM_FWD_XDESC",
            "scale": "OPERATION_NORM_FWD_SCALE_DESC",
            "bias": "OPERATION_NORM_FWD_BIAS_DESC",
            "epsilon": "OPERATION_NORM_FWD_EPSILON_DESC",
            "y": "OPERATION_NORM_FWD_YDESC",
            "mean": "OPERATION_NORM_FWD_MEAN_DESC",
            "inv_variance": "OPERATION_NORM_FWD_INV_VARIANCE_DESC",
        },
        (
            ("mode", "OPERATION_NORM_FWD_MODE", "NORM_MODE"),
            ("phase", "OPERATION_NORM_FWD_PHASE", "NORM_FWD_PHASE"),
        ),
    ),
    "adalayernorm_backward": _Kind(
        "OPERATION_NORM_BACKWARD",
        {
            "x": "OPERATION_NORM_BWD_XDESC",
            "mean": "OPERATION_NORM_BWD_MEAN_DESC",
            "inv_variance": "OPERATION_NORM_BWD_INV_VARIANCE_DESC",
            "dy": "OPERATION_NORM_BWD_DYDESC",
            "scale": "OPERATION_NORM_BWD_SCALE_DESC",
            "dx": "OPERATION_NORM_BWD_DXDESC",
            "dscale": "OPERATION_NORM_BWD_DSCALE_DESC",
            "dbias": "OPERATION_NORM_BWD_DBIAS_DESC",
        },
        (("mode", "OPERATION_NORM_BWD_MODE", "NORM_MODE"),),
    ),
    "signal": _Kind(
        "OPERATION_SIGNAL",
        {
            "x": "OPERATION_SIGNAL_XDESC",
            "flag": "OPERATION_SIGNAL_FLAGDESC",
            "y": "OPERATION_SIGNAL_YDESC",
        },
        (
            ("mode", "OPERATION_SIGNAL_MODE", "SIGNAL_MODE"),
            ("value", "OPERATION_SIGNAL_VALUE", "INT64"),
        ),
    ),
}


def build_extra_op(
    op: Operation, tensors: dict[int, Any], new: Any, finalize: Any, compute: Any
) -> Any:
    """The (unfinalized) ``OPERATION_*`` descriptor of an operation of a kind in
    :data:`EXTRA_KINDS`; sub-descriptors it needs are created with ``new`` and finalized."""
    spec = EXTRA_KINDS[op.kind]
    d = new(spec.descriptor)
    for role, t in (*op.inputs.items(), *op.outputs.items()):
        attr = spec.roles.get(role)
        if attr is not None:
            d.set(attr, tensors[t.uid], attr_type="BACKEND_DESCRIPTOR")
    for key, attr, atype in spec.values:
        if op.attrs.get(key) is not None:
            d.set(attr, op.attrs[key], attr_type=atype)
    if spec.math is not None:
        d.set(spec.math, compute, attr_type="DATA_TYPE")
    if spec.extra is not None:
        spec.extra(op, d, _Ctx(new, finalize, compute, tensors))
    return d
