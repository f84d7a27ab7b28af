"""The conveniences cudnn-frontend users reach for (CPU tier): ``Graph.tensor_like``, choosing a
plan by engine and knobs, excluding engines and notes, and the argument checks of
``Plan.populate_cuda_graph`` / ``update_cuda_graph`` that run before any GPU work."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pycudnn
from pycudnn.deviceprops import DeviceProperties
from pycudnn.errors import CudnnNotSupportedError
from pycudnn.graph import Graph, GraphError
from pycudnn.plan import GraphNotSupportedError, build_engine, engine_config, engine_configs
from pycudnn.plan.cuda_graph import cuda_graph_pointer


def conv_graph() -> Graph:
    g = Graph("conv")
    x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
    w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
    g.conv_fprop(x, w, padding=1, name="conv")
    return g


@pytest.fixture(scope="module")
def props(deviceprops_json: dict[str, Any]) -> DeviceProperties:
    return DeviceProperties.from_json(deviceprops_json)


# -- tensor_like ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("array", "dims", "strides", "dtype"),
    [
        (np.zeros((4, 8, 16), np.float16), (4, 8, 16), (128, 16, 1), "float16"),
        # a transposed view: strides follow the memory, not row-major
        (np.zeros((2, 3, 4, 5), np.float32).transpose(0, 2, 3, 1), (2, 4, 5, 3), (60, 5, 1, 20), "float32"),
        # rank 2 gets a leading 1; bf16 comes through (NumPy's own dtype table lacks it)
        (np.zeros((8, 16), ml_dtypes.bfloat16).T, (1, 16, 8), (128, 1, 16), "bfloat16"),
        # a size-1 dim's stride is the packed one whatever the array says
        (np.zeros((3, 1, 5), np.int32)[:, :, ::1], (3, 1, 5), (5, 5, 1), "int32"),
    ],
)  # fmt: skip
def test_tensor_like_copies_dims_strides_dtype(
    array: np.ndarray, dims: tuple[int, ...], strides: tuple[int, ...], dtype: str
) -> None:
    g = Graph()
    t = g.tensor_like(array, name="t")
    assert t.dims == dims and t.strides == strides
    assert t.dtype == np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    assert g["t"] is t


def test_tensor_like_alignment_follows_the_pointer() -> None:
    g = Graph()
    buf = np.zeros(64, np.float16)
    assert g.tensor_like(buf[1:33].reshape(2, 4, 4)).alignment == 2  # 2-byte offset
    assert g.tensor_like(buf[:32].reshape(2, 4, 4), alignment=8).alignment == 8


def test_tensor_like_refuses_what_a_graph_tensor_cannot_be() -> None:
    g = Graph()
    with pytest.raises(GraphError, match="negative strides"):
        g.tensor_like(np.zeros((2, 3, 4), np.float32)[:, :, ::-1])
    with pytest.raises(GraphError, match="at most 8"):
        g.tensor_like(np.zeros((1,) * 9, np.float32))
    with pytest.raises(GraphError, match="no data type"):
        g.tensor_like(np.zeros((2, 3, 4), np.uint16))
    with pytest.raises(TypeError):
        g.tensor_like([1, 2, 3])


# -- choosing engines ------------------------------------------------------------------------------


@pytest.mark.usefixtures("libcuda")
def test_build_engine_gives_the_engine_and_knobs_asked_for(props: DeviceProperties) -> None:
    g = conv_graph()
    heur = g.build(device_properties=props, cache=False)
    plan = build_engine(g, heur.engine_id, heur.knobs, device_properties=props)
    assert plan.engine_id == heur.engine_id and plan.source == "chosen"
    assert {k: plan.knobs.get(k) for k in heur.knobs} == heur.knobs
    cfg = engine_config(g, heur.engine_id, device_properties=props)
    assert cfg.engine_id == heur.engine_id and cfg.mode == "chosen"


@pytest.mark.usefixtures("libcuda")
def test_build_engine_refusals(props: DeviceProperties) -> None:
    g = conv_graph()
    count = g.engine_count
    with pytest.raises(ValueError, match=rf"has engines 0\.\.{count - 1}"):
        build_engine(g, count, device_properties=props)
    with pytest.raises(TypeError, match="non-negative int"):
        build_engine(g, -1, device_properties=props)
    with pytest.raises(ValueError, match="unknown knob 'NOPE'"):
        build_engine(g, 0, {"NOPE": 1}, device_properties=props)
    with pytest.raises(TypeError, match="must be an int"):
        build_engine(g, 0, {"TILE_K": 1.5}, device_properties=props)


@pytest.mark.usefixtures("libcuda")
def test_build_engine_refuses_a_known_bad_engine(props: DeviceProperties) -> None:
    # the shipped table's entry: engine 70, NCHW 16-bit weight gradients
    g = Graph("wgrad_nchw")
    x = g.tensor([2, 8, 16, 16], fmt="NCHW", dtype="float16", name="x")
    dy = g.tensor([2, 8, 16, 16], fmt="NCHW", dtype="float16", name="dy")
    g.conv_wgrad(x, dy, padding=1, dw_dims=[8, 8, 3, 3])
    with pytest.raises(ValueError, match="engine 70 of graph 'wgrad_nchw' is known to give wrong"):
        build_engine(g, 70, device_properties=props)
    if pycudnn.version_tuple() < (9, 28):
        # measured: deviceless, 9.10 and 9.12's engine 70 takes no NCHW dy and 9.19's cannot set
        # up its sm_90 grid ("No GPC available"): on request, cuDNN's own refusal comes through
        with pytest.raises(CudnnNotSupportedError, match="engine 70 of graph 'wgrad_nchw'"):
            build_engine(g, 70, device_properties=props, allow_known_bad=True)
        return
    plan = build_engine(g, 70, device_properties=props, allow_known_bad=True)  # on request
    assert plan.engine_id == 70


@pytest.mark.usefixtures("libcuda")
def test_exclusions_drop_what_they_name(props: DeviceProperties) -> None:
    g = conv_graph()
    modes = ["a", "b", "fallback"]
    every = engine_configs(g, heuristics=modes, device_properties=props)
    first = every[0].engine_id
    without = engine_configs(g, heuristics=modes, device_properties=props, exclude_engines=[first])
    assert [c.identity for c in without] == [c.identity for c in every if c.engine_id != first]
    no_tc = engine_configs(
        g, heuristics=modes, device_properties=props, exclude_notes=["tensor_core"]
    )
    assert [c.identity for c in no_tc] == [
        c.identity for c in every if "TENSOR_CORE" not in c.numerical_notes
    ]
    plan = g.build(device_properties=props, cache=False, exclude_engines=[first])
    assert plan.engine_id != first
    with pytest.raises(GraphNotSupportedError, match="exclude_engines"):
        g.build(
            device_properties=props,
            cache=False,
            heuristics=modes,
            exclude_engines={c.engine_id for c in every},
        )


def test_exclusion_arguments_are_checked() -> None:
    g = conv_graph()
    with pytest.raises(ValueError, match="unknown note 'fast'"):
        engine_configs(g, exclude_notes=["fast"])
    with pytest.raises(TypeError, match="engine ids"):
        engine_configs(g, exclude_engines=["3"])


def test_a_misspelt_note_or_mode_gets_the_nearest_name() -> None:
    g = conv_graph()
    with pytest.raises(ValueError, match="unknown note 'TENSOR_CORES'; did you mean 'TENSOR_CORE'"):
        engine_configs(g, exclude_notes=["TENSOR_CORES"])
    with pytest.raises(ValueError, match="did you mean 'RUNTIME_COMPILATION'"):
        engine_configs(g, exclude_notes=["runtime_compile"])
    with pytest.raises(
        ValueError, match="unknown heuristic mode 'fallbak'; did you mean 'fallback'"
    ):
        engine_configs(g, heuristics=["a", "fallbak"])
    # one name, not a list of them: not read letter by letter ("unknown note 'T'")
    with pytest.raises(
        TypeError, match=r"exclude_notes takes a list of note names.*\['TENSOR_CORE'\]"
    ):
        engine_configs(g, exclude_notes="TENSOR_CORE")  # type: ignore[arg-type]


@pytest.mark.usefixtures("libcuda")
def test_exclusions_are_part_of_the_cache_key(props: DeviceProperties) -> None:
    pc = pycudnn.plan.PlanCache()
    g = conv_graph()
    p1 = g.build(device_properties=props, cache=pc)
    p2 = g.build(device_properties=props, cache=pc, exclude_engines=[p1.engine_id])
    assert p2.engine_id != p1.engine_id
    assert g.build(device_properties=props, cache=pc) is p1


# -- CUDA graphs: what is checked before any GPU work ------------------------------------------------


def test_cuda_graph_pointer() -> None:
    assert cuda_graph_pointer(0x1000) == 0x1000
    from cuda.bindings import runtime

    assert cuda_graph_pointer(runtime.cudaGraph_t(0x2000)) == 0x2000  # the handle, not getPtr()
    for bad, exc in (
        (0, ValueError),
        (True, TypeError),
        ("4096", TypeError),
        (4096.0, TypeError),
        (None, TypeError),
    ):
        with pytest.raises(exc):
            cuda_graph_pointer(bad)


@pytest.mark.usefixtures("libcuda")
def test_cuda_graph_calls_check_arguments_first(props: DeviceProperties) -> None:
    g = conv_graph()
    plan = g.build(device_properties=props, cache=False)
    host = {t: np.zeros(t.dims, dtype=t.dtype) for t in (g["x"], g["w"], g["conv.y"])}
    for call in (plan.populate_cuda_graph, plan.update_cuda_graph):
        with pytest.raises(ValueError, match="null"):
            call(host, 0)
        with pytest.raises(TypeError, match="mapping"):
            call([1], 0x1000)
        if plan.workspace_size:
            with pytest.raises(ValueError, match="pass workspace="):
                call(host, 0x1000)
        with pytest.raises(KeyError, match="missing for tensor"):
            call({g["x"]: host[g["x"]]}, 0x1000, workspace=None if not plan.workspace_size else 1)
    plan.close()
    with pytest.raises(pycudnn.ClosedError):
        plan.populate_cuda_graph(host, 0x1000)


@pytest.mark.usefixtures("libcuda")
def test_slice_matmul_plans_can_populate_cuda_graphs(props: DeviceProperties) -> None:
    # the GPU test of populate/update uses this graph: its engines advertise the native API
    g = Graph("slice_gemm_graph")
    a = g.tensor([4, 24, 32], dtype="float16", name="a")
    b = g.tensor([4, 32, 16], dtype="float16", name="b")
    window = [(0, 4), (0, 16), (0, 32)]
    if pycudnn.version_tuple() < (9, 22):  # OPERATION_SLICE is new in 9.22: refused, naming it
        with pytest.raises(pycudnn.UnsupportedByLibraryError, match=r"needs cuDNN >= 9\.22\.0"):
            g.slice(a, window)
        return
    g.relu(g.matmul(g.slice(a, window), b))
    plan = g.build(device_properties=props, cache=False)
    assert "SUPPORTS_CUDA_GRAPH_NATIVE_API" in plan.behavior_notes
