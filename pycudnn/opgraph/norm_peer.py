"""The ``peer_stats`` of a multi-GPU batch norm (``NORM_FWD_PEER_STAT_DESCS`` /
``NORM_BWD_PEER_STAT_DESCS``, cuDNN 9.0 and newer).

Each GPU of a node computes partial per-channel statistics and exchanges them through these
communication buffers, typically one per GPU of the node (the caller's own included), as
NVIDIA's cudnn-frontend takes them in ``batchnorm(..., peer_stats=[...])`` and
``batchnorm_backward(..., peer_stats=[...])``. Their layout is the one of the frontend's samples:
float32 ``[2, 4 * C, 1, ...]`` (rank of ``x``), packed with the channels innermost.

cuDNN 9.28 does not check a buffer's dims when it plans (any dims plan on the H100), yet its
kernels read and write that many floats: a smaller buffer would be overrun on the device, so the
layout is checked here. Measured with deviceless H100 plans on cuDNN 9.28: the forward plans
with 1 to 32 buffers (engine 0, as the frontend's), the backward with 2 to 32 and none with one
buffer ("num_peers == 1"), which is refused here with that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .common import GraphError
from .tensors import Tensor

__all__ = ["PEER_ROLE", "peer_descriptors", "peer_stats_inputs"]

#: Role prefix of a peer stats buffer among an operation's inputs: ``peer_stats_0``, ...
PEER_ROLE = "peer_stats_"


def peer_stats_inputs(
    label: str,
    peer_stats: Sequence[Tensor] | None,
    x: Tensor,
    own: Callable[[Any, str, str], Tensor],
    *,
    backward: bool,
) -> dict[str, Tensor]:
    """The peer stats buffers by role (``peer_stats_<i>``), each checked against the rules of
    the module docstring; ``{}`` for None or an empty list (a single-GPU batch norm, as the
    frontend treats an empty list). ``own`` checks that a tensor is of the graph."""
    if peer_stats is None:
        return {}
    if isinstance(peer_stats, Tensor) or not isinstance(peer_stats, (list, tuple)):
        raise TypeError(
            f"{label}: peer_stats must be a list of Tensors (one buffer per GPU of the node), "
            f"not {type(peer_stats).__name__}"
        )
    channels = x.dims[1] if len(x.dims) > 1 else 0
    want = (2, 4 * channels, *([1] * (len(x.dims) - 2)))
    out: dict[str, Tensor] = {}
    for i, given in enumerate(peer_stats):
        role = f"peer_stats[{i}]"
        t = own(given, label, role)
        if any(t is seen for seen in out.values()):
            raise GraphError(f"{label}: {role} ('{t.name}') is given twice; each GPU has its own")
        if t.producer is not None or t.by_value:
            raise GraphError(
                f"{label}: {role} ('{t.name}') must be a device buffer given at execution, not "
                f"{'a by-value scalar' if t.by_value else 'the output of an operation'}"
            )
        if t.element_type is None or t.element_type.name != "float32":
            dtype = t.element_type.name if t.element_type is not None else "unresolved"
            raise GraphError(f"{label}: {role} ('{t.name}') must be float32, not {dtype}")
        if t.dims != want:
            raise GraphError(
                f"{label}: {role} ('{t.name}') must have dims {list(want)} ([2, 4 * C, 1, ...] "
                f"for x {list(x.dims)}), not {list(t.dims)}"
            )
        # packed with the channels innermost: dims 2.. are ones, so only dims 0 and 1 matter
        if t.strides[0] != want[1] or (want[1] > 1 and t.strides[1] != 1):
            raise GraphError(
                f"{label}: {role} ('{t.name}') must be packed (strides [{want[1]}, 1, ...]), "
                f"not {list(t.strides)}"
            )
        out[f"{PEER_ROLE}{i}"] = t
    if backward and len(peer_stats) == 1:
        # cuDNN 9.28 on the H100: no engine ("num_peers > MAX_GPUS_PER_NODE_BWD || num_peers == 1")
        raise GraphError(
            f"{label}: peer_stats needs 2 or more buffers in the backward (one per GPU of the "
            f"node); cuDNN has no engine for a single one. On one GPU leave peer_stats out"
        )
    return out


def peer_descriptors(op_inputs: dict[str, Tensor], tensors: dict[int, Any]) -> list[Any]:
    """The tensor descriptors of an operation's peer stats buffers, in the caller's order."""
    roles = sorted(
        (r for r in op_inputs if r.startswith(PEER_ROLE)), key=lambda r: int(r[len(PEER_ROLE) :])
    )
    return [tensors[op_inputs[r].uid] for r in roles]
