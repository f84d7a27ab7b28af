"""Ragged (THD) tensors for :meth:`Graph.sdpa` and :meth:`Graph.sdpa_backward`, in NVIDIA
cudnn-frontend's terms.

A ragged tensor keeps the sequences of a batch back to back, without padding: it is described
as ``[b, h, s, d]`` (``s`` the longest sequence) and :meth:`Tensor.set_ragged_offset` gives an
integer ``[b + 1, 1, 1, 1]`` tensor whose entry ``i`` is where batch entry ``i`` starts, in
elements (``TENSOR_RAGGED_OFFSET_DESC`` of the tensor's descriptor). The lengths come from
``seq_len_q`` / ``seq_len_kv``, which are then required (the padding mask), as in the frontend.
``max_total_seq_len_q`` / ``_kv`` bound the tokens of all sequences together: the unified
backward takes them as ``SDPA_BWD_MAX_TOTAL_SEQ_LEN_Q/KV``; the forward records them only (cuDNN's
forward has no such setting; the frontend sizes its workspace with them).

Measured with cuDNN 9.28 and the H100 properties (deviceless): the forward plans unified (engine
9, decode engine 8) and composite (engine 2, decode 1); the unified backward plans (engine 13)
only when the saved stats are ragged too, the composite backward (engine 6) either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .attention_args import optional_int
from .common import GraphError
from .tensors import Tensor

__all__ = ["Ragged", "offsets_only", "ragged_args"]


class Ragged(NamedTuple):
    """The ragged tensors of an SDPA and the bounds given on their total tokens."""

    roles: tuple[str, ...]
    max_total_seq_len_q: int | None
    max_total_seq_len_kv: int | None


def ragged_args(label: str, tensors: dict[str, Tensor], keywords: Mapping[str, Any]) -> Ragged:
    """Which of ``tensors`` (by role) are ragged, checked against the rules of cuDNN and the
    frontend, with the call's :class:`~pycudnn.opgraph.attention_args.SdpaKeywords` (defaults
    filled): ragged tensors need the padding mask (``seq_len_q`` and ``seq_len_kv``), and
    ``max_total_seq_len_q`` (``_kv``) a ragged Q (K or V) -- cuDNN refuses it otherwise. The totals
    must hold the longest sequence."""
    padded = keywords["seq_len_q"] is not None and keywords["seq_len_kv"] is not None
    roles = tuple(r for r, t in tensors.items() if t.ragged_offset is not None)
    types = {r: str(o.dtype) for r, t in tensors.items() if (o := t.ragged_offset) is not None}
    if len(set(types.values())) > 1:
        shown = ", ".join(f"{r} {t}" for r, t in types.items())
        raise GraphError(
            f"{label}: the ragged offsets mix integer types ({shown}); give them one type, "
            "int32 or int64 (cuDNN 9.28 has no engine for a mix, measured)"
        )
    if roles and not padded:
        raise GraphError(
            f"{label}: {', '.join(roles)} are ragged (THD): give seq_len_q and seq_len_kv "
            "(int32 [b, 1, 1, 1]), each sequence's real length, as cuDNN and NVIDIA's frontend "
            "require"
        )
    totals: list[int | None] = []
    for side, value, owners in (
        ("q", keywords["max_total_seq_len_q"], ("q",)),
        ("kv", keywords["max_total_seq_len_kv"], ("k", "v")),
    ):
        total = optional_int(value, f"{label}: max_total_seq_len_{side}", 1)
        if total is not None:
            if not any(r in roles for r in owners):
                raise GraphError(
                    f"{label}: max_total_seq_len_{side} bounds the tokens of ragged (THD) "
                    f"{'/'.join(owners)}: give {' or '.join(owners)} a ragged offset "
                    "(Tensor.set_ragged_offset), or leave it out"
                )
            longest = tensors[owners[0]].dims[2]
            if total < longest:
                raise GraphError(
                    f"{label}: max_total_seq_len_{side} = {total} is less than the longest "
                    f"sequence ({longest}, the tensors' s)"
                )
        totals.append(total)
    return Ragged(roles, totals[0], totals[1])


def offsets_only(t: Tensor) -> bool:
    """True for a tensor read only as the ragged offsets of others: cuDNN's plan JSON lists it
    inside the entry of each tensor it describes (``"isRagged"``), not among the graph's tensors
    (measured with cuDNN 9.28)."""
    return bool(t.consumers) and all(
        any(r.startswith("ragged_offset_") and x is t for r, x in op.inputs.items())
        and not any(not r.startswith("ragged_offset_") and x is t for r, x in op.inputs.items())
        for op in t.consumers
    )
