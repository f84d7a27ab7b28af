"""NumPy references (float64) for SDPA with variable lengths: padding, ragged (THD) tensors and
paged K/V caches, forward and backward.

Each batch entry ``i`` is an attention of its own: its ``seq_len_q[i]`` queries and
``seq_len_kv[i]`` keys, read from

- the padded tensor's rows ``[i, :, :len]`` (padding),
- the tensor's memory from element ``ragged_offset[i]`` on, with the tensor's strides of one
  sequence (ragged THD: the offsets count elements, as cuDNN's),
- the container's blocks named by the page table ``[i, 0, :, 0]``, block ``p`` holding keys
  ``p * block_size ...`` (paged K/V, the vLLM layout),

and the dense reference (the caller's function) runs on it; a bottom-right aligned mask is
aligned per entry (``seq_len_kv[i] - seq_len_q[i]``), as cuDNN aligns it with padding.

What cuDNN writes beyond each entry's lengths (rows of O, stats and dQ past ``seq_len_q``, of dK
and dV past ``seq_len_kv``, memory of a ragged output no sequence covers) is not defined: the
frontend's tests compare the valid region only. The reference holds NaN there, and
:func:`undefined_where_nan` names those outputs, so that verification compares the valid region
only (:func:`pycudnn.verification.run.verify_plan`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .common import NoReferenceError

__all__ = ["is_varlen", "sdpa_varlen", "undefined_where_nan", "valid_only"]

# The roles indexed by query (rows s_q), by key (rows s_kv); the rest are per graph.
_Q_ROLES = frozenset({"q", "o", "do", "stats", "dq"})
_KV_ROLES = frozenset({"k", "v", "dk", "dv"})
# Score-shaped inputs [b or 1, h or 1, s_q, s_kv]: cut to each entry's lengths.
_SCORE_ROLES = frozenset({"bias", "dropout_mask"})
# Inputs that only describe the layout: the dense reference never reads them.
_INDEX_PREFIXES = ("seq_len_", "page_table_", "ragged_offset_")

Dense = Callable[[Any, Mapping[str, np.ndarray]], dict[str, np.ndarray]]


def is_varlen(op: Any) -> bool:
    """Has this SDPA (forward or backward) sequence lengths, ragged offsets or paged caches?"""
    return any(r.startswith(_INDEX_PREFIXES) for r in op.inputs)


def undefined_where_nan(graph: Any) -> set[int]:
    """The uids of outputs of variable-length SDPA operations of ``graph``: where their reference
    is NaN, what cuDNN writes is not defined (past a sequence's length) and is not compared."""
    return {
        t.uid
        for op in graph.operations
        if op.kind in ("sdpa", "sdpa_backward") and is_varlen(op)
        for t in op.outputs.values()
    }


def valid_only(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``got`` (a copy, its dtype kept) with NaN where the reference ``ref`` is NaN: the
    comparison then leaves those elements out (NaN matches NaN; ``compared`` counts the rest),
    while a NaN or wrong value where ``ref`` is defined still fails."""
    out = np.array(got, copy=True)
    out[np.isnan(ref)] = np.nan
    return out


class _Entry:
    """The operation one batch entry is: the same settings without the index inputs, bounds of
    a bottom-right aligned mask shifted by this entry's ``len_kv - len_q``."""

    def __init__(self, op: Any, shift: int) -> None:
        self.label = op.label
        self.attrs = dict(op.attrs, paged=())
        if op.attrs.get("shift_from_lengths"):
            right, left = op.attrs["right_bound"], op.attrs["left_bound"]
            self.attrs["right_bound"] = None if right is None else right + shift
            self.attrs["left_bound"] = None if left is None else left - shift
        self.inputs = {r: t for r, t in op.inputs.items() if not r.startswith(_INDEX_PREFIXES)}
        self.outputs = op.outputs


def _ints(x: np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(x, dtype=np.float64)).astype(np.int64).reshape(-1)


def _positions(dims: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """The element offset of every logical element of a strided tensor."""
    pos = np.zeros(dims, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * len(dims)
        shape[axis] = n
        pos = pos + (np.arange(n) * s).reshape(shape)
    return pos


class _Ragged:
    """A ragged tensor's memory: the logical values placed at their element offsets."""

    def __init__(self, op: Any, role: str, offsets: np.ndarray, values: np.ndarray | None):
        t = op.inputs[role] if role in op.inputs else op.outputs[role]
        self.op, self.role, self.offsets = op, role, _ints(offsets)
        self.dims, self.strides = tuple(values.shape if values is not None else t.dims), t.strides
        self.logical = _positions(self.dims, self.strides)
        self.memory = np.full(int(self.logical.max()) + 1, np.nan)
        if values is not None:
            self.memory[self.logical] = values

    def _at(self, i: int, length: int) -> np.ndarray:
        if i + 1 >= self.offsets.size:
            raise NoReferenceError(
                f"{self.op.label}: ragged_offset_{self.role} has {self.offsets.size} elements "
                f"for batch entry {i} (a batch slice has no reference)"
            )
        pos = self.offsets[i] + _positions(self.dims[1:], self.strides[1:])[:, :length]
        if pos.size and (pos.min() < 0 or pos.max() >= self.memory.size):
            raise NoReferenceError(
                f"{self.op.label}: ragged_offset_{self.role}[{i}] = {self.offsets[i]} puts "
                f"sequence {i} outside the tensor's memory"
            )
        return np.asarray(pos)

    def read(self, i: int, length: int) -> np.ndarray:
        values = self.memory[self._at(i, length)][None]
        if np.isnan(values).any():  # a gap between the tensor's rows: unknown to the reference
            raise NoReferenceError(
                f"{self.op.label}: ragged_offset_{self.role}[{i}] = {self.offsets[i]} reads "
                "memory that the tensor's dims and strides do not cover"
            )
        return np.asarray(values)

    def write(self, i: int, length: int, values: np.ndarray) -> None:
        self.memory[self._at(i, length)] = values[0]

    def view(self) -> np.ndarray:
        return np.asarray(self.memory[self.logical])


def _gather(op: Any, side: str, container: np.ndarray, table: np.ndarray, i: int) -> np.ndarray:
    """Keys (values) of batch entry ``i`` of a paged cache: ``[1, h, s_kv, d]``."""
    blocks = _ints(table.reshape(table.shape[0], -1)[i])
    if blocks.size and (blocks.min() < 0 or blocks.max() >= container.shape[0]):
        raise NoReferenceError(
            f"{op.label}: page_table_{side}[{i}] names a block outside the {container.shape[0]} "
            "of the container"
        )
    h, d = container.shape[1], container.shape[3]
    pages = np.swapaxes(container[blocks], 0, 1).reshape(h, -1, d)
    return np.asarray(pages[None, :, : op.attrs["scores_dims"][3]])


def _entry_value(
    op: Any, vals: Mapping[str, np.ndarray], role: str, readers: Mapping[str, _Ragged], entry: Any
) -> np.ndarray:
    """Input ``role`` of batch entry ``entry = (i, len_q, len_kv)``, cut to its lengths."""
    i, lq, lk = entry
    x = vals[role]
    length = lq if role in _Q_ROLES else lk
    if role in op.attrs.get("paged", ()):
        x = _gather(op, role, x, vals["page_table_" + role], i)
    elif role in readers:
        x = readers[role].read(i, length)
    elif role in _Q_ROLES | _KV_ROLES | _SCORE_ROLES and x.ndim == 4 and x.shape[0] != 1:
        x = x[i : i + 1]
    if role in _Q_ROLES | _KV_ROLES:
        return x[:, :, :length]
    if role in _SCORE_ROLES and x.ndim == 4:  # broadcast dims (1) stay
        x = x[:, :, :lq] if x.shape[2] != 1 else x
        x = x[:, :, :, :lk] if x.shape[3] != 1 else x
    return x


def sdpa_varlen(op: Any, vals: Mapping[str, np.ndarray], dense: Dense) -> dict[str, np.ndarray]:
    """The outputs of a variable-length ``sdpa`` or ``sdpa_backward``: ``dense`` (the fixed-length
    reference of the same kind) on each batch entry's sequences, put back in the outputs' layout
    (ragged outputs at their offsets); NaN where an output is not defined. ``amax_*`` outputs are
    the largest over the entries, ``dsink`` their sum; a ``dbias`` has no reference here."""
    if "dbias" in op.outputs:
        raise NoReferenceError(f"{op.label}: no NumPy reference for dBias with sequence lengths")
    _, _, s_q, s_kv = op.attrs["scores_dims"]
    b = vals["q"].shape[0]  # the batch elements checked when verification slices the graph
    lens_q = _ints(vals["seq_len_q"]) if "seq_len_q" in vals else np.full(b, s_q)
    lens_kv = _ints(vals["seq_len_kv"]) if "seq_len_kv" in vals else np.full(b, s_kv)
    if lens_q.size < b or lens_kv.size < b:
        raise NoReferenceError(f"{op.label}: fewer sequence lengths than batch entries")
    offsets = {
        r.removeprefix("ragged_offset_"): x
        for r, x in vals.items()
        if r.startswith("ragged_offset_")
    }
    readers = {r: _Ragged(op, r, off, vals[r]) for r, off in offsets.items() if r in vals}
    writers: dict[str, _Ragged] = {}
    out: dict[str, np.ndarray] = {}
    for i in range(b):
        lq, lk = min(int(lens_q[i]), s_q), min(int(lens_kv[i]), s_kv)
        if lq < 1 or lk < 1:
            continue  # an empty sequence: nothing of it is defined
        ins = {
            r: _entry_value(op, vals, r, readers, (i, lq, lk))
            for r in vals
            if not r.startswith(_INDEX_PREFIXES)
        }
        got = dense(_Entry(op, lk - lq), ins)
        for role, x in got.items():
            if role.startswith("amax_"):
                out[role] = np.maximum(out[role], x) if role in out else x
            elif role == "dsink":
                out[role] = out[role] + x if role in out else x
            elif role in offsets:  # a ragged output: the sequence at its offset
                if role not in writers:
                    writers[role] = _Ragged(op, role, offsets[role], None)
                writers[role].write(i, x.shape[2], x)
            else:  # the padded layout: rows past the length stay NaN
                rows = s_q if role in _Q_ROLES else s_kv
                dest = out.setdefault(role, np.full((b, x.shape[1], rows, x.shape[3]), np.nan))
                dest[i : i + 1, :, : x.shape[2]] = x
    out.update({r: w.view() for r, w in writers.items()})
    return out
