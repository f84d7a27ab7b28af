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


# Short roles get ``XDESC``; the others ``..._DESC`` (cudnn_graph.h's spelling for most kinds).
_SHORT_ROLES = frozenset({"x", "y", "dx", "dy"})


def _roles(prefix: str, *roles: str, **irregular: str) -> dict[str, str]:
    """Each role's attribute: ``prefix`` and the role's name in capitals, then ``DESC`` (after
    ``x``, ``y``, ``dx``, ``dy``) or ``_DESC``; ``irregular`` gives the suffix of the others."""
    regular = {r: f"{prefix}{r.upper()}{'' if r in _SHORT_ROLES else '_'}DESC" for r in roles}
    return {**regular, **{r: prefix + suffix for r, suffix in irregular.items()}}


def _values(prefix: str, *irregular: tuple[str, str, str], **types: str) -> tuple[Any, ...]:
    """Settings: each keyword of ``types`` goes to ``prefix`` and its name in capitals, with that
    attribute type; then the ``irregular`` rows, ``(key, attribute, type)`` as they are."""
    return (*((key, prefix + key.upper(), t) for key, t in types.items()), *irregular)


def _rope(direction: str, x: str, y: str) -> _Kind:
    """RoPE forward or backward: the same roles (X or dY, the angles, Y or dX) and settings."""
    p = f"OPERATION_ROPE_{direction}_"
    roles = _roles(p, x, y, freqs="FREQSDESC")
    return _Kind(p[:-1], roles, _values(p, rope_dim="INT64", output_scale="FLOAT"))


def _band(prefix: str, *irregular: tuple[str, str, str]) -> tuple[Any, ...]:
    """The settings expanding and contracting a band matrix share (then ``irregular``)."""
    widths = [(key, f"{prefix}{key.upper()}_BANDWIDTH", "INT64") for key in ("lower", "upper")]
    return (*widths, *_values(prefix, *irregular, axis="INT64", pad_value="DOUBLE"))


_BN_FIN = "OPERATION_BN_FINALIZE_"
_BN_BWD = "OPERATION_BN_BWD_WEIGHTS_"
_MOE = "OPERATION_MOE_GROUPED_MATMUL_"
_BAND = "OPERATION_DIAGONAL_BAND_MASK_"
_SOFTMAX = "OPERATION_SOFTMAX_"
_QUANT = "OPERATION_BLOCK_SCALE_QUANTIZE_"
_DEQUANT = "OPERATION_BLOCK_SCALE_DEQUANTIZE_"
_EXPAND = "OPERATION_EXPAND_BAND_MATRIX_"
_CONTRACT = "OPERATION_CONTRACT_BAND_MATRIX_"
_NORM_FWD = "OPERATION_NORM_FWD_"
_NORM_BWD = "OPERATION_NORM_BWD_"

EXTRA_KINDS: dict[str, _Kind] = {
    "softmax": _Kind(
        "OPERATION_SOFTMAX",
        _roles(_SOFTMAX, "x", "sink", "y", "stats", "max", "sum_exp"),
        _values(_SOFTMAX, stats_log2="BOOLEAN"),
    ),
    "genstats": _Kind(
        "OPERATION_GEN_STATS",
        _roles("OPERATION_GENSTATS_", "x", sum="SUMDESC", sq_sum="SQSUMDESC"),
        _values("OPERATION_GENSTATS_", mode="GENSTATS_MODE"),
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
        _roles("OPERATION_RESHAPE_", "x", "y"),
        _values("OPERATION_RESHAPE_", mode="RESHAPE_MODE"),
    ),
    "transpose": _Kind(
        "OPERATION_TRANSPOSE",
        _roles("OPERATION_TRANSPOSE_", "x", "y"),
        _values("OPERATION_TRANSPOSE_", permutation="INT64"),
    ),
    "slice": _Kind(
        "OPERATION_SLICE",
        _roles("OPERATION_SLICE_", "x", "y"),
        (
            ("start", "OPERATION_SLICE_START_INDICES", "INT64"),
            ("limit", "OPERATION_SLICE_LIMIT_INDICES", "INT64"),
            ("step", "OPERATION_SLICE_STRIDES", "INT64"),
        ),
    ),
    "concatenate": _Kind(
        "OPERATION_CONCAT",
        {"y": "OPERATION_CONCAT_OUTPUT_DESC"},
        _values(
            "OPERATION_CONCAT_",
            ("in_place_index", "OPERATION_CONCAT_INPLACE_INDEX", "INT64"),
            axis="INT64",
        ),
        None,
        _concat_inputs,
    ),
    "resample": _Kind(
        "OPERATION_RESAMPLE_FWD",
        _roles("OPERATION_RESAMPLE_FWD_", "x", "y", index="IDXDESC"),
        (),
        None,
        _resample_desc,
    ),
    "resample_backward": _Kind(
        "OPERATION_RESAMPLE_BWD",
        _roles("OPERATION_RESAMPLE_BWD_", "dy", "x", "y", "dx", index="IDXDESC"),
        (),
        None,
        _resample_desc,
    ),
    "rope": _rope("FWD", "x", "y"),
    "rope_backward": _rope("BWD", "dy", "dx"),
    "rng": _Kind(
        "OPERATION_RNG",
        _roles("OPERATION_RNG_", "offset", "y", seed="SEED"),
        (("seed_value", "OPERATION_RNG_SEED", "INT64"),),
        None,
        _rng_desc,
    ),
    "block_scale_quantize": _Kind(
        "OPERATION_BLOCK_SCALE_QUANTIZE",
        _roles(_QUANT, "x", "y", "scale"),
        _values(_QUANT, block_size="INT32"),
        _QUANT + "MATH_PREC",
    ),
    "block_scale_dequantize": _Kind(
        "OPERATION_BLOCK_SCALE_DEQUANTIZE",
        _roles(_DEQUANT, "x", "scale", "y"),
        _values(_DEQUANT, block_size="INT32", neg_scale="BOOLEAN"),
        _DEQUANT + "MATH_PREC",
    ),
    "moe_grouped_matmul": _Kind(
        "OPERATION_MOE_GROUPED_MATMUL",
        _roles(_MOE, "token", "weight", "first_token_offset", "token_index", "token_ks", "output"),
        _values(_MOE, mode="MOE_GROUPED_MATMUL_MODE", top_k="INT32"),
        _MOE + "MATH_PREC",
    ),
    "moe_grouped_matmul_backward": _Kind(
        "OPERATION_MOE_GROUPED_MATMUL_BWD",
        _roles(_MOE + "BWD_", "token", "doutput", "first_token_offset", "dweight"),
        (),
        _MOE + "BWD_MATH_PREC",
    ),
    "paged_cache_load": _Kind(
        "OPERATION_PAGED_CACHE_LOAD",
        _roles(
            "OPERATION_PAGED_CACHE_LOAD_", "container", "page_table", "y", seq_len="SEQUENCE_DESC"
        ),
    ),
    "expand_band_matrix": _Kind(
        "OPERATION_EXPAND_BAND_MATRIX",
        _roles(_EXPAND, "x", "kv_token_offset", "speculative_mask", "y"),
        _band(_EXPAND),
    ),
    "contract_band_matrix": _Kind(
        "OPERATION_CONTRACT_BAND_MATRIX",
        _roles(_CONTRACT, "x", "y"),
        _band(_CONTRACT, ("max_token", "OPERATION_CONTRACT_BAND_MAX_TOKEN_VALUE", "INT64")),
    ),
    "diagonal_band_mask": _Kind(
        "OPERATION_DIAGONAL_BAND_MASK",
        _roles(
            _BAND,
            "x",
            "left_bound",
            "y",
            fill="BDESC",
            seq_len_q="SEQ_LEN_QDESC",
            seq_len_kv="SEQ_LEN_KVDESC",
            right_bound="SHIFT_RIGHT_BOUND_DESC",
        ),
        (("comparison", _BAND + "COMPARISON_MODE", "POINTWISE_MODE"),),
    ),
    "adalayernorm": _Kind(
        "OPERATION_NORM_FORWARD",
        _roles(_NORM_FWD, "x", "scale", "bias", "epsilon", "y", "mean", "inv_variance"),
        _values(_NORM_FWD, mode="NORM_MODE", phase="NORM_FWD_PHASE"),
    ),
    "adalayernorm_backward": _Kind(
        "OPERATION_NORM_BACKWARD",
        _roles(_NORM_BWD, "x", "mean", "inv_variance", "dy", "scale", "dx", "dscale", "dbias"),
        _values(_NORM_BWD, mode="NORM_MODE"),
    ),
    "signal": _Kind(
        "OPERATION_SIGNAL",
        _roles("OPERATION_SIGNAL_", "x", "y", flag="FLAGDESC"),
        _values("OPERATION_SIGNAL_", mode="SIGNAL_MODE", value="INT64"),
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
