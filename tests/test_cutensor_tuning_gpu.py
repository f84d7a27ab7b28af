"""GPU tier: incremental autotuning through the functions on arrays, one handle shared by threads,
and CUDA graph capture around planning (``pytest -m gpu``; skipped here without a GPU).

The pure-Python halves are tested on CPU in test_cutensor_tuning.py and test_cutensor_sharing.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from children import run_python

import pycutensor
from pycutensor.errors import GraphCaptureError
from pycutensor.plan import PlanPreference

pytestmark = pytest.mark.gpu


def device(host: np.ndarray) -> Any:
    from _nvbind.device_array import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(host))


def operands(rng: np.random.Generator, m: int = 64, k: int = 48, n: int = 32) -> tuple[Any, ...]:
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    return a, b, device(a), device(b), device(np.zeros((m, n), np.float32))


def only_entry(handle: pycutensor.Handle) -> Any:
    entries = handle._operations._entries  # the handle's one cached operation
    assert len(entries) == 1
    return next(iter(entries.values()))


def close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


# -- incremental autotuning across calls ------------------------------------------------------------
def test_contract_plans_each_candidate_then_keeps_the_winner(gpu_device: int) -> None:
    rng = np.random.default_rng(0)
    a, b, da, db, dc = operands(rng)
    count = 3
    pref = PlanPreference(autotune="incremental", incremental_count=count)
    with pycutensor.Handle(gpu_device) as handle:
        if handle.plan_cache_unavailable:
            pytest.skip("this environment disables cuTENSOR's plan cache")
        plans = []
        for _ in range(count + 4):
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", preference=pref, handle=handle)
            close(dc.to_numpy(), a @ b)
            entry = only_entry(handle)
            plans.append(entry.plan if entry.tuning is None else entry.tuning.plan)
        # calls 1 .. count+1 each used a new plan (candidates, then the winner); later ones keep it
        assert len({id(p) for p in plans[: count + 1]}) == count + 1
        assert all(p is plans[count] for p in plans[count:])
        assert only_entry(handle).tuning is None


def test_a_preference_without_autotuning_plans_once(gpu_device: int) -> None:
    rng = np.random.default_rng(1)
    _, _, da, db, dc = operands(rng)
    with pycutensor.Handle(gpu_device) as handle:
        pycutensor.contract(da, "ik", db, "kj", dc, "ij", handle=handle)
        first = only_entry(handle).plan
        for _ in range(3):
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", handle=handle)
        assert only_entry(handle).plan is first and only_entry(handle).tuning is None


def test_autotune_refuses_a_handle_created_without_plan_cache(gpu_device: int) -> None:
    code = f"""
        import numpy as np, pycutensor
        from _nvbind.device_array import DeviceArray
        from pycutensor import Contraction, TensorDescriptor
        from pycutensor.plan import PlanPreference, autotune
        h = pycutensor.Handle({gpu_device})
        assert h.plan_cache_unavailable, h.plan_cache_unavailable
        a = DeviceArray.from_numpy(np.ones((8, 8), np.float32))
        b = DeviceArray.from_numpy(np.ones((8, 8), np.float32))
        c = DeviceArray.from_numpy(np.zeros((8, 8), np.float32))
        op = Contraction(TensorDescriptor.from_array(h, a), "ik", TensorDescriptor.from_array(h, b),
                         "kj", TensorDescriptor.from_array(h, c), "ij")
        for call in (lambda: autotune(op, a, b, c),
                     lambda: pycutensor.contract(a, "ik", b, "kj", c, "ij", handle=h,
                         preference=PlanPreference(autotune="incremental", incremental_count=2))):
            try:
                call()
            except ValueError as exc:
                assert "CUTENSOR_DISABLE_PLAN_CACHE=1" in str(exc), exc
            else:
                raise SystemExit("not refused")
        print("refused")
    """
    done = run_python(code, CUTENSOR_DISABLE_PLAN_CACHE="1")
    assert done.returncode == 0, done.stderr
    assert "refused" in done.stdout


def test_autotune_refuses_a_plan_cache_resized_to_zero(gpu_device: int) -> None:
    from pycutensor import Contraction, TensorDescriptor
    from pycutensor.plan import autotune

    rng = np.random.default_rng(2)
    _, _, da, db, dc = operands(rng, 8, 8, 8)
    with pycutensor.Handle(gpu_device) as handle:
        handle.resize_plan_cache(0)
        op = Contraction(TensorDescriptor.from_array(handle, da), "ik",
                         TensorDescriptor.from_array(handle, db), "kj",
                         TensorDescriptor.from_array(handle, dc), "ij")  # fmt: skip
        with pytest.raises(ValueError, match="resized to 0 entries"):
            autotune(op, da, db, dc)


# -- one handle shared by threads -------------------------------------------------------------------
def test_threads_share_one_handle_and_its_cached_plan(gpu_device: int) -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (64, 48)).astype(np.float32)
    b = rng.uniform(-1, 1, (48, 32)).astype(np.float32)
    da, db = device(a), device(b)
    errors: list[BaseException] = []
    with pycutensor.Handle(gpu_device) as handle:

        def worker(alpha: float) -> None:
            try:
                out = device(np.zeros((64, 32), np.float32))
                for _ in range(40):
                    # each thread its own alpha through the one cached plan: a shared scalar
                    # buffer without the plan's lock would mix them up
                    pycutensor.contract(da, "ik", db, "kj", out, "ij", alpha=alpha, handle=handle)
                    close(out.to_numpy(), alpha * (a @ b))
                    got = pycutensor.einsum("ik,kj->ij", da, db, alpha=alpha, handle=handle)
                    close(got.to_numpy(), alpha * (a @ b))
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(float(i + 1),)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:2]
        assert len(handle._operations) == 2  # one contraction entry, one einsum program
        assert pycutensor.get_handle(gpu_device) is not handle  # the default stays per thread


def test_handle_of_another_device_or_closed_is_refused(gpu_device: int) -> None:
    rng = np.random.default_rng(4)
    _, _, da, db, dc = operands(rng, 8, 8, 8)
    handle = pycutensor.Handle(gpu_device)
    handle.close()
    with pytest.raises(ValueError, match="handle is closed"):
        pycutensor.contract(da, "ik", db, "kj", dc, "ij", handle=handle)
    from _nvbind.cuda import driver_status

    if len(driver_status().devices) < 2:
        return
    other = pycutensor.Handle(1 - gpu_device if gpu_device < 2 else 0)
    with pytest.raises(ValueError, match="handle is bound to device"):
        pycutensor.einsum("ik,kj->ij", da, db, handle=other)


# -- CUDA graph capture -------------------------------------------------------------------------
@contextmanager
def captured(stream: int) -> Iterator[list[Any]]:
    """Capture ``stream`` (relaxed mode); yields a list that holds the graph once capture ended."""
    from cuda.bindings import driver

    (err,) = driver.cuStreamBeginCapture(
        stream, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
    )
    assert int(err) == 0, err
    out: list[Any] = []
    try:
        yield out
    finally:
        err, graph = driver.cuStreamEndCapture(stream)
        out.append((int(err), graph))


def new_stream(non_blocking: bool) -> int:
    from cuda.bindings import driver

    flags = driver.CUstream_flags.CU_STREAM_NON_BLOCKING if non_blocking else 0
    err, stream = driver.cuStreamCreate(int(flags))
    assert int(err) == 0, err
    return int(stream)


def replay(graph: Any, stream: int) -> None:
    from cuda.bindings import driver

    err, exe = driver.cuGraphInstantiate(graph, 0)
    assert int(err) == 0, err
    assert int(driver.cuGraphLaunch(exe, stream)[0]) == 0
    assert int(driver.cuStreamSynchronize(stream)[0]) == 0
    driver.cuGraphExecDestroy(exe)
    driver.cuGraphDestroy(graph)


def needs_jit(gpu_device: int) -> None:
    if pycutensor.get_handle(gpu_device).compute_capability < (8, 0):
        pytest.skip("just-in-time compilation needs compute capability 8.0")


def test_jit_planning_inside_a_blocking_capture_is_refused(gpu_device: int) -> None:
    needs_jit(gpu_device)
    rng = np.random.default_rng(5)
    _, _, da, db, dc = operands(rng, 16, 16, 16)
    handle = pycutensor.get_handle(gpu_device)
    previous = handle.activate()
    try:
        stream = new_stream(non_blocking=False)
        with captured(stream) as graph, pytest.raises(GraphCaptureError, match="non-blocking"):
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream,
                                preference=PlanPreference(jit=True))  # fmt: skip
        err, g = graph[0]
        assert err == 0  # the refusal came before anything reached the capture
        from cuda.bindings import driver

        driver.cuGraphDestroy(g)
    finally:
        handle.restore(previous)


def test_jit_planning_inside_a_non_blocking_capture_runs(gpu_device: int) -> None:
    # cuTENSOR's documented workaround: the capture stream created non-blocking.
    needs_jit(gpu_device)
    rng = np.random.default_rng(6)
    a, b, da, db, dc = operands(rng, 32, 16, 8)
    handle = pycutensor.get_handle(gpu_device)
    previous = handle.activate()
    try:
        from _nvbind.device_array import DeviceArray

        stream = new_stream(non_blocking=True)
        # a workspace allocated before the capture (the pool would allocate inside it)
        workspace = DeviceArray.empty((1 << 22,), np.uint8)
        with captured(stream) as graph:
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream, workspace=workspace,
                                preference=PlanPreference(jit=True, tag=61))  # fmt: skip
        err, g = graph[0]
        assert err == 0
        replay(g, stream)
        close(dc.to_numpy(), a @ b)
    finally:
        handle.restore(previous)


def test_a_plan_made_before_the_capture_is_captured_and_replayed(gpu_device: int) -> None:
    rng = np.random.default_rng(7)
    a, b, da, db, dc = operands(rng, 32, 16, 8)
    handle = pycutensor.get_handle(gpu_device)
    previous = handle.activate()
    try:
        from _nvbind.device_array import DeviceArray

        stream = new_stream(non_blocking=False)
        pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream, alpha=0.0)  # plans
        workspace = DeviceArray.empty((1 << 22,), np.uint8)  # the graph keeps its address
        with captured(stream) as graph:
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream, alpha=1.0,
                                workspace=workspace)  # fmt: skip
        err, g = graph[0]
        assert err == 0
        replay(g, stream)
        close(dc.to_numpy(), a @ b)
    finally:
        handle.restore(previous)


def test_the_pools_workspace_is_refused_inside_a_capture(gpu_device: int) -> None:
    # The pool would hand the graph a workspace it reuses for later launches and frees when a
    # larger one is asked for; the replay would write memory something else owns.
    from _nvbind.capture import capture_state

    rng = np.random.default_rng(9)
    _, _, da, db, dc = operands(rng, 64, 64, 64)
    handle = pycutensor.get_handle(gpu_device)
    previous = handle.activate()
    try:
        stream = new_stream(non_blocking=True)
        plan = pycutensor.Contraction(
            pycutensor.TensorDescriptor.from_array(handle, da), "ik",
            pycutensor.TensorDescriptor.from_array(handle, db), "kj",
            pycutensor.TensorDescriptor.from_array(handle, dc), "ij",
        ).plan()  # fmt: skip
        if not plan.required_workspace:
            pytest.skip("cuTENSOR asks no workspace for this contraction here")
        assert capture_state(stream) == "none"
        with captured(stream) as graph, pytest.raises(GraphCaptureError, match="workspace="):
            assert capture_state(stream) == "active"
            plan.execute(da, db, dc, stream=stream)
        err, g = graph[0]
        assert err == 0  # refused before anything was recorded
        from cuda.bindings import driver

        driver.cuGraphDestroy(g)
    finally:
        handle.restore(previous)


def test_a_problem_still_tuning_is_not_captured(gpu_device: int) -> None:
    rng = np.random.default_rng(8)
    a, b, da, db, dc = operands(rng, 32, 16, 8)
    pref = PlanPreference(autotune="incremental", incremental_count=2, tag=62)
    with pycutensor.Handle(gpu_device) as handle:
        if handle.plan_cache_unavailable:
            pytest.skip("this environment disables cuTENSOR's plan cache")
        previous = handle.activate()
        try:
            stream = new_stream(non_blocking=True)
            pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream, preference=pref,
                                handle=handle)  # fmt: skip
            with captured(stream) as graph, pytest.raises(GraphCaptureError, match="2 more times"):
                pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream, preference=pref,
                                    handle=handle)  # fmt: skip
            from cuda.bindings import driver

            driver.cuGraphDestroy(graph[0][1])
            for _ in range(2):  # finish tuning outside the capture
                pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream, preference=pref,
                                    handle=handle)  # fmt: skip
            with captured(stream) as graph:
                pycutensor.contract(da, "ik", db, "kj", dc, "ij", stream=stream, preference=pref,
                                    handle=handle)  # fmt: skip
            err, g = graph[0]
            assert err == 0
            replay(g, stream)
            close(dc.to_numpy(), a @ b)
        finally:
            handle.restore(previous)
