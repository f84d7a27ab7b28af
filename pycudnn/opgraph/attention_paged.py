"""Paged K/V caches for :meth:`Graph.sdpa`, in NVIDIA cudnn-frontend's terms.

A serving engine keeps each sequence's keys and values in fixed-size blocks of one big cache:
K (and V) is a *container* ``[num_blocks, h_k, block_size, d]`` and a *page table*
``[b, 1, ceil(s_kv / block_size), 1]`` (int32) lists, for each batch entry, which block holds its
keys ``j * block_size ...`` (the vLLM layout). ``paged_attention_k_table`` / ``_v_table`` give the
tables (each side may be paged on its own), ``paged_attention_max_seq_len_kv`` the logical
``s_kv`` of the score matrix; the real lengths come from ``seq_len_kv`` (and ``seq_len_q``: the
padding mask is required, as in the frontend).

cuDNN lowers it two ways, both built here as the frontend builds them:

* the unified ``OPERATION_SDPA_FWD`` takes the containers as K and V with
  ``SDPA_FWD_PAGE_TABLE_KDESC`` / ``_VDESC`` (cuDNN 9.15);
* the composite graph gathers each paged cache with ``OPERATION_PAGED_CACHE_LOAD`` into a virtual
  ``[b, h, d, s_kv]`` K^T (``[b, h, s_kv, d]`` V) that the matmuls read (the frontend needs cuDNN
  9.5 for it).

When ``max_seq_len_kv`` is not given it is inferred as the frontend infers it: from a K or V that
is not paged, else the bias or ``rng_dump``'s last dim, else the smaller ``pages * block_size``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from _nvbind.dtypes import dtype_name

from .. import _attention_rules as rules
from .attention_args import optional_int
from .common import GraphError
from .tensors import Tensor

__all__ = ["PagedKV", "paged_kv"]

#: The roles of the page tables among an SDPA's inputs.
TABLE_ROLES = {"k": "page_table_k", "v": "page_table_v"}


class PagedKV(NamedTuple):
    """What :func:`paged_kv` found: the paged sides (``"k"``, ``"v"``) and the logical ``s_kv``."""

    sides: tuple[str, ...]
    s_kv: int

    def logical(self, specs: dict[str, rules.TensorSpec]) -> dict[str, rules.TensorSpec]:
        """``specs`` with each paged container replaced by the ``[b, h, s_kv, d]`` tensor it holds
        (packed, ``bhsd``), so that the SDPA rules check the attention it describes."""
        out = dict(specs)
        b = specs["q"].dims[0]
        for side in self.sides:
            c = specs[side]
            dims = (b, c.dims[1], self.s_kv, c.dims[3])
            strides = (dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1)
            out[side] = rules.TensorSpec(c.name, dims, strides, c.dtype)
        return out


def paged_kv(
    label: str,
    k: Tensor,
    v: Tensor,
    *,
    batch: int,
    tables: dict[str, Tensor | None],
    max_seq_len_kv: Any,
    padded: bool,
    score_tensors: tuple[Tensor | None, ...],
) -> PagedKV | None:
    """Check the paged-cache arguments of an SDPA forward; None when no side is paged.

    ``tables`` maps ``"k"``/``"v"`` to the page tables given; ``score_tensors`` are the bias and
    ``rng_dump`` (either may be None), whose last dim is ``s_kv``. Refused, naming the argument:
    a ``max_seq_len_kv`` without a table, a table that is not int32 ``[b, 1, pages, 1]``, a
    container that is not rank 4, a missing padding mask, and an ``s_kv`` the pages cannot hold.
    """
    sides = tuple(side for side, t in tables.items() if t is not None)
    if not sides:
        if max_seq_len_kv is not None:
            raise GraphError(
                f"{label}: paged_attention_max_seq_len_kv is the logical key length of paged "
                "K/V caches; give paged_attention_k_table/v_table too, or leave it out"
            )
        return None
    if not padded:
        raise GraphError(
            f"{label}: paged K/V caches need the padding mask (each sequence's real length): "
            "give seq_len_q and seq_len_kv (int32 [b, 1, 1, 1]), as cuDNN and NVIDIA's "
            "frontend require"
        )
    containers = {"k": k, "v": v}
    fits: list[int] = []
    for side in sides:
        table = tables[side]
        what = f"{label}: paged_attention_{side}_table"
        assert table is not None
        dt = dtype_name(table.dtype) if table.dtype is not None else None
        if (
            dt != "int32"
            or len(table.dims) != 4
            or (table.dims[0], table.dims[1], table.dims[3])
            != (
                batch,
                1,
                1,
            )
        ):
            raise GraphError(
                f"{what} ('{table.name}') must be int32 [b, 1, pages, 1] with b = {batch}, got "
                f"{dt} {list(table.dims)}"
            )
        c = containers[side]
        if len(c.dims) != 4:
            raise GraphError(
                f"{label}: {side} ('{c.name}') is a paged cache container [num_blocks, h, "
                f"block_size, d] (rank 4), got dims {list(c.dims)}"
            )
        fits.append(table.dims[2] * c.dims[2])
    if max_seq_len_kv is not None:
        s_kv = optional_int(max_seq_len_kv, f"{label}: paged_attention_max_seq_len_kv", 1)
        assert s_kv is not None
    elif len(sides) < 2:
        s_kv = containers["v" if sides == ("k",) else "k"].dims[2]
    else:
        given = [t for t in score_tensors if t is not None]
        s_kv = given[0].dims[-1] if given else min(fits)
    for side, fit in zip(sides, fits, strict=True):
        if s_kv > fit:
            t = tables[side]
            assert t is not None
            raise GraphError(
                f"{label}: the {side} pages hold {fit} keys ({t.dims[2]} pages of "
                f"{containers[side].dims[2]}), fewer than s_kv = {s_kv}; give a larger "
                f"paged_attention_{side}_table or a smaller paged_attention_max_seq_len_kv"
            )
    for t in score_tensors:
        if t is not None and t.dims[-1] != s_kv:
            raise GraphError(
                f"{label}: '{t.name}' has {t.dims[-1]} keys in its last dim, but the paged "
                f"caches give s_kv = {s_kv} (paged_attention_max_seq_len_kv)"
            )
    return PagedKV(sides, s_kv)
