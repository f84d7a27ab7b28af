"""Descriptors created together for one read (heuristics results, knob choices) are owned by one
batch: none is destroyed while a member is referenced, each is destroyed exactly once, and those
cuDNN did not fill are destroyed at once. Counted from cuDNN's own log (the real library)."""

from __future__ import annotations

import gc
import logging
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import pycudnn
from pycudnn import log
from pycudnn.backend import BackendDescriptor
from pycudnn.graph import GraphError

# cuDNN logs each call twice (its arguments, then its status): the arguments' entries count.
_CALL = re.compile(
    r"function cudnnBackend(Create|Destroy)Descriptor\(\) called:\s+descriptor(?:Type)?: "
)


@contextmanager
def _calls() -> Iterator[Counter[str]]:
    """Creates and destroys cuDNN logs inside the block (the collector paused: nothing left by
    earlier tests is counted)."""
    counts: Counter[str] = Counter()
    gc.collect()
    gc.disable()
    try:
        with log.capture(logging.DEBUG) as records:
            yield counts
    finally:
        gc.enable()
    for rec in records:
        if m := _CALL.search(str(rec.message)):
            counts[m.group(1)] += 1


def test_members_are_destroyed_together_once_none_is_referenced() -> None:
    with _calls() as made:
        members, batch = BackendDescriptor._many("ENGINECFG", 5)
        del batch
    assert made == {"Create": 5}
    with _calls() as closing:
        for d in members[:4]:
            d.close()
        last = members[4]
        del members, d
    assert closing == {}  # the fifth member still holds the batch
    assert not last.closed
    with _calls() as dropping:
        del last
    assert dropping == {"Destroy": 5}


def test_unused_members_are_destroyed_at_once_and_only_once() -> None:
    with _calls() as counts:
        members, batch = BackendDescriptor._many("ENGINECFG", 4)
        batch.release_unused([members[2].ptr, members[3].ptr])
        for d in members[2:]:
            d.close()
    assert counts == {"Create": 4, "Destroy": 2}
    with _calls() as rest:
        del members, batch, d
    assert rest == {"Destroy": 2}


def test_a_build_destroys_what_it_created(h100_props: pycudnn.DeviceProperties) -> None:
    def build() -> None:
        g = pycudnn.Graph("conv")
        x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
        w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
        g.conv_fprop(x, w, padding=1).set_output(True, dtype="float16")
        plan = g.build(device_properties=h100_props, cache=False)
        assert plan.knobs  # knob choices: another batch
        assert plan.report is not None and plan.report.heuristics[0].returned > 30
        plan.close()

    build()  # bindings, tables
    with _calls() as counts:
        build()
        gc.collect()
    assert counts["Create"] > 40
    assert counts["Create"] == counts["Destroy"], counts


def _conv_graph() -> pycudnn.Graph:
    g = pycudnn.Graph("conv")
    x = g.tensor([8, 64, 56, 56], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([64, 64, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1).set_output(True, dtype="float16")
    return g


def test_a_lowering_lives_until_none_of_its_descriptors_is_referenced() -> None:
    # a graph's tensors, operations and operation graph: one batch, destroyed together
    _conv_graph().finalize(None)  # bindings, tables
    with _calls() as made:
        g = _conv_graph()
        g.finalize(None)
        kept = g._descriptors_for(None)["tensors"][1]
        g.close()
        del g
    assert made == {"Create": 6}  # 3 tensors, the convolution settings, its operation, the graph
    assert not kept.closed
    with _calls() as dropped:
        del kept
    assert dropped == {"Destroy": 6}


def test_a_failed_lowering_destroys_what_it_made_at_once() -> None:
    from pycudnn.opgraph.lowering import build_descriptors

    g = _conv_graph()
    g._resolve()
    second = g._tensors[1]
    # cuDNN refuses a tensor whose strides are one fewer than its dims, at its finalize
    views = {second.uid: (tuple(second.dims), tuple(second.strides)[:3])}
    with _calls() as counts:
        try:
            build_descriptors(g, views=views)
        except pycudnn.CudnnError as exc:
            refused = exc
        else:  # pragma: no cover - cuDNN accepted it
            raise AssertionError("cuDNN finalized a tensor with 3 strides for 4 dims")
    assert "tensor 'w'" in str(refused)
    # The graph's three tensors are created together, before the first is set; all are destroyed.
    assert len(g._tensors) == 3
    assert counts == {"Create": 3, "Destroy": 3}


def test_a_dropped_graph_frees_its_descriptors_without_the_collector() -> None:
    # A graph's tensors refer to it weakly, so the graph is in no reference cycle: dropping it
    # destroys its descriptors at once (the collector is paused inside _calls).
    _conv_graph().finalize(None)  # bindings, tables
    with _calls() as counts:
        g = _conv_graph()
        x = g["x"]
        g.finalize(None)
        del g
    assert counts == {"Create": 6, "Destroy": 6}
    with pytest.raises(GraphError, match="'x' belongs to a graph that no longer exists"):
        x.set_output(True)
    assert "'x'" in repr(x)  # still readable
