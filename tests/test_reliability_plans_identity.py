"""A plan JSON loads for a graph only if it computes that graph (CPU tier, deviceless plans for the
committed H100 properties).

The graph key is a digest of the plan's operation graph recomputed from what is loaded, and every
operation of the graph is compared with the plan's nodes role by role and attribute by attribute,
for every operation kind; an integrity digest over the whole JSON catches damage anywhere. The
edits below are "resealed" (both digests recomputed, as a deliberate editor would) where the
check behind the digest is what is tested.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import H100_PROPS_FILE
from plan_kinds import (
    CATALOGUE,
    all_nodes,
    cudnn_only,
    reference_keys,
    require_engine,
    require_mapped,
    resealed,
)

from pycudnn.deviceprops import DeviceProperties
from pycudnn.errors import CudnnError
from pycudnn.graph import Graph
from pycudnn.plan import Plan, PlanCache, PlanVersionError, canonical

pytestmark = pytest.mark.usefixtures("libcuda")
NOT_THIS_GRAPH = "does not compute graph"


def _graph(build: Callable[[Graph], None], name: str = "g") -> Graph:
    g = Graph(name)
    build(g)
    return g


@functools.cache
def _saved(name: str) -> str:
    props = DeviceProperties.load(H100_PROPS_FILE)
    with _graph(CATALOGUE[name], name).build(device_properties=props, cache=False) as plan:
        return plan.to_json()


def _data(name: str) -> dict[str, Any]:
    return json.loads(_saved(name))


def _load(data: Any, name: str, props: DeviceProperties, build: Any = None) -> Plan:
    return Plan.from_json(
        data, graph=_graph(build or CATALOGUE[name], name), device_properties=props
    )


# -- the key: missing, copied, not a digest of the content ---------------------------------------


def test_a_plan_without_the_key_is_refused_for_a_graph(h100_props: DeviceProperties) -> None:
    data = cudnn_only(_data("conv_fprop"))  # as cuDNN and cudnn-frontend write plans
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH} 'conv_fprop'.*no pycudnnGraphKey"):
        _load(data, "conv_fprop", h100_props)
    Plan.from_json(data, device_properties=h100_props).close()  # without a graph: nothing to check


def test_a_key_copied_from_another_plan_is_refused(h100_props: DeviceProperties) -> None:
    data = _data("conv_fprop")
    data["pycudnnGraphKey"] = _data("conv_strided")["pycudnnGraphKey"]
    with pytest.raises(ValueError, match="damaged: its content does not match its pycudnnDigest"):
        _load(data, "conv_fprop", h100_props)
    data["pycudnnDigest"] = canonical.content_digest(data, "pycudnnDigest")  # redone, key kept
    with pytest.raises(ValueError, match="pycudnnGraphKey is not the digest of its own operation"):
        _load(data, "conv_fprop", h100_props)


def test_a_plan_loads_only_for_the_graph_it_computes(h100_props: DeviceProperties) -> None:
    # A key copied over and resealed is no help: the graph is compared with the content.
    # Whatever the key says, the graph is compared with the plan's content.
    data = _data("conv_strided")
    data["pycudnnGraphKey"] = _data("conv_fprop")["pycudnnGraphKey"]
    data["pycudnnDigest"] = canonical.content_digest(data, "pycudnnDigest")
    with pytest.raises(ValueError, match="built for another graph"):
        _load(data, "conv_fprop", h100_props)


def _conv(
    padding: int, dilation: int, stride: int, post_padding: int | None = None
) -> Callable[[Graph], None]:
    def build(g: Graph) -> None:
        x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
        w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
        g.conv_fprop(x, w, padding=padding, dilation=dilation, stride=stride, name="conv",
                     post_padding=post_padding)  # fmt: skip

    return build


def _pointwise(op: str, **settings: float) -> Callable[[Graph], None]:
    def build(g: Graph) -> None:
        x = g.tensor([1, 8, 16, 16], fmt="NHWC", dtype="float16", name="x")
        getattr(g, op)(x, name="act", **settings).set_output(True, dtype="float16")

    return build


def _pool(window: int, padding: int, mode: str = "maxpool") -> Callable[[Graph], None]:
    def build(g: Graph) -> None:
        x = g.tensor([2, 16, 32, 32], fmt="NHWC", dtype="float16", name="x")
        g.resample(x, mode=mode, window=[window, window], stride=[2, 2], padding=padding)

    return build


def _rope_sdpa(scale: float | None, rope_dim: int | None = None) -> Callable[[Graph], None]:
    def build(g: Graph) -> None:
        q, k, v = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkv")
        freqs = g.tensor([128, 1, 1, 64], name="freqs")
        q_rot = g.rope(q, freqs, output_scale=scale, rope_dim=rope_dim)
        k_rot = g.rope(k, freqs, output_scale=scale, rope_dim=rope_dim)
        q_rot.set_output(True)
        k_rot.set_output(True)
        g.sdpa(q_rot, k_rot, v)

    return build


def _conv_bias_relu(alpha2: float) -> Callable[[Graph], None]:
    def build(g: Graph) -> None:
        x = g.tensor([1, 32, 16, 16], fmt="NHWC", dtype="float16", name="x")
        w = g.tensor([32, 32, 3, 3], fmt="NHWC", dtype="float16", name="w")
        b = g.tensor([1, 32, 1, 1], fmt="NHWC", dtype="float16", name="b")
        g.relu(g.add(g.conv_fprop(x, w, padding=1), b, alpha2=alpha2), name="act")

    return build


@pytest.mark.parametrize(
    ("saved_for", "loaded_for", "named"),
    [
        # padding p with dilation p keeps a 3x3 convolution's output size: only settings differ
        (_conv(2, 2, 1), _conv(1, 1, 1), "'pad' is \\[2, 2\\] in the plan but \\[1, 1\\]"),
        (_conv(2, 2, 1), _conv(3, 3, 1), "'dilation' is \\[2, 2\\] in the plan but \\[3, 3\\]"),
        (_conv(1, 1, 1), _conv(1, 1, 2), "built for another graph"),  # other output dims
        (_pool(3, 1), _pool(2, 0), "'windowDim'"),  # both 16x16 outputs
        (_pool(3, 1), _pool(3, 1, "avgpool_include_padding"), "'mode'"),
        (_rope_sdpa(0.5), _rope_sdpa(None), "'output_scale' is 0.5 in the plan but"),
        (_conv_bias_relu(1.0), _conv_bias_relu(0.5), "'alpha2' is 1.0 in the plan but 0.5"),
        # Each of these loaded for the other graph (the same output dims) before it was checked:
        # asymmetric padding (cuDNN writes pad_lower/pad_upper), and "pad" against post-padding
        (_conv(2, 1, 1, post_padding=0), _conv(1, 1, 1), "'pad_lower' is \\[2, 2\\]"),
        (_conv(1, 1, 2), _conv(1, 1, 2, post_padding=0), "'pad' is \\[1, 1\\] .*postpadding"),
        # a pointwise alpha or beta the graph left at cuDNN's default, against a plan's other one
        (_pointwise("elu"), _pointwise("elu", alpha=0.5), "'alpha' is 1.0 in the plan but 0.5"),
        (_pointwise("swish", beta=2.0), _pointwise("swish"), "'beta' is 2.0 in the plan but .*1.0"),
        # RoPE over 32 of 64 dims against all of them (cuDNN's default, now set by the graph)
        (_rope_sdpa(None, 32), _rope_sdpa(None), "'rope_dim' is 32 in the plan but 64"),
    ],
    ids=[
        "padding",
        "dilation",
        "stride",
        "pool-window",
        "pool-mode",
        "rope-scale",
        "alpha",
        "padding-lower",
        "padding-post",
        "elu-alpha",
        "swish-beta",
        "rope-dim",
    ],
)
def test_a_plan_for_other_settings_is_refused(
    saved_for: Any, loaded_for: Any, named: str | None, h100_props: DeviceProperties
) -> None:
    if named is not None and ("output_scale" in named or "rope_dim" in named):  # RoPE
        require_engine("rope_sdpa")
    text = _graph(saved_for).build(device_properties=h100_props, cache=False).to_json()
    with pytest.raises(ValueError, match=NOT_THIS_GRAPH if named is None else named) as info:
        Plan.from_json(text, graph=_graph(loaded_for), device_properties=h100_props)
    assert "built for another graph" in str(info.value)
    Plan.from_json(text, graph=_graph(saved_for), device_properties=h100_props).close()


def test_a_sliding_window_is_the_graphs_own(h100_props: DeviceProperties) -> None:
    # The window is a by-value scalar cuDNN takes at execute: a plan for window 32 loaded for a
    # graph with window 16 computes window 16 (the graph's value goes into the variant pack).
    def sdpa(window: int) -> Callable[[Graph], None]:
        def build(g: Graph) -> None:
            q, k, v = (g.tensor([2, 4, 128, 64], dtype="bfloat16", name=n) for n in "qkv")
            g.sdpa(q, k, v, causal=True, sliding_window=window)

        return build

    text = _graph(sdpa(32)).build(device_properties=h100_props, cache=False).to_json()
    g = _graph(sdpa(16))
    with Plan.from_json(text, graph=g, device_properties=h100_props) as plan:
        window = g["sdpa0.left_bound"]  # the band mask's left bound: the window
        assert window.value == 16 and plan.graph is g


# -- edited nodes, every kind ---------------------------------------------------------------------


def _swaps(name: str) -> list[tuple[int, str, str]]:
    out = []
    for i, node in enumerate(all_nodes(_data(name)["operationGraph"])):
        refs = [k for k in reference_keys(node) if node[k] != node[reference_keys(node)[0]]]
        keys = reference_keys(node)
        if len(keys) >= 2 and refs:
            out.append((i, keys[0], refs[0]))
    return out


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_two_roles_swapped_are_refused_for_every_kind(
    name: str, h100_props: DeviceProperties
) -> None:
    require_engine(name)
    swaps = _swaps(name)
    assert swaps, f"{name}: no node with two tensor roles"
    for i, a, b in swaps:
        data = _data(name)
        node = all_nodes(data["operationGraph"])[i]
        node[a], node[b] = node[b], node[a]
        with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH} '{name}'.*role '({a}|{b})'"):
            _load(resealed(data), name, h100_props)


def _edited(value: Any) -> Any:
    """Another value of the same kind (None where the value has no other of its kind here)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 2 + 1
    if isinstance(value, list) and value:
        return [_edited(value[0]), *value[1:]]
    if isinstance(value, str) and value.startswith("CUDNN_"):
        swaps = {
            "CUDNN_LAYER_NORM": "CUDNN_RMS_NORM",
            "CUDNN_RMS_NORM": "CUDNN_LAYER_NORM",
            "CUDNN_BATCH_NORM": "CUDNN_INSTANCE_NORM",
            "CUDNN_INSTANCE_NORM": "CUDNN_BATCH_NORM",
            "CUDNN_ADA_LAYER_NORM": "CUDNN_LAYER_NORM",
            "CUDNN_NORM_FWD_TRAINING": "CUDNN_NORM_FWD_INFERENCE",
            "CUDNN_NORM_FWD_INFERENCE": "CUDNN_NORM_FWD_TRAINING",
            "CUDNN_DATA_FLOAT": "CUDNN_DATA_HALF",
            "CUDNN_CROSS_CORRELATION": "CUDNN_CONVOLUTION",
            "CUDNN_RESAMPLE_MAXPOOL": "CUDNN_RESAMPLE_AVGPOOL_EXCLUDE_PADDING",
            "CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING": "CUDNN_RESAMPLE_MAXPOOL",
            "CUDNN_POINTWISE_ADD": "CUDNN_POINTWISE_MUL",
            "CUDNN_POINTWISE_MUL": "CUDNN_POINTWISE_ADD",
            "CUDNN_POINTWISE_SUB": "CUDNN_POINTWISE_ADD",
            "CUDNN_POINTWISE_RELU_FWD": "CUDNN_POINTWISE_TANH_FWD",
            "CUDNN_POINTWISE_CMP_GE": "CUDNN_POINTWISE_CMP_LT",
            "CUDNN_NOT_PROPAGATE_NAN": "CUDNN_PROPAGATE_NAN",
            "CUDNN_NEG_INF_PAD": "CUDNN_ZERO_PAD",
            "CUDNN_ZERO_PAD": "CUDNN_NEG_INF_PAD",
        }
        return swaps.get(value)
    return None


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_an_edited_attribute_is_refused_for_every_kind(
    name: str, h100_props: DeviceProperties
) -> None:
    require_engine(name)
    # Every attribute of every node (mask subgraphs included) that has another value of its kind:
    # the plan is refused, naming what differs; none loads as the graph's.
    tried = 0
    for i, node in enumerate(all_nodes(_data(name)["operationGraph"])):
        for key, value in node.items():
            if key == "operation" or key in reference_keys(node):
                continue
            new = _edited(value)
            if new is None or new == value:
                continue
            data = _data(name)
            all_nodes(data["operationGraph"])[i][key] = new
            try:
                _load(resealed(data), name, h100_props).close()
            except CudnnError:
                continue  # cuDNN itself refused the edited plan
            except ValueError as exc:
                text = str(exc)
            else:
                pytest.fail(f"{name}: node {i} {key} {value!r} -> {new!r} loaded")
            assert NOT_THIS_GRAPH in text or "not a valid cuDNN" in text, (key, value, new, text)
            tried += 1
    # (a matmul node and an SDPA backward node have no attribute but their roles)
    assert tried or name in {"matmul", "sdpa_backward"}, f"{name}: no attribute edited"


def test_an_attention_node_with_a_role_deleted_or_aliased_is_refused(
    h100_props: DeviceProperties,
) -> None:
    require_mapped()
    data = _data("sdpa")
    node = data["operationGraph"]["nodes"][0]
    del node["stats"]
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH}.*role 'stat'.*missing from the plan"):
        _load(resealed(data), "sdpa", h100_props)
    data = _data("sdpa")
    node = data["operationGraph"]["nodes"][0]
    node["V"] = node["Q"]  # two roles naming one tensor
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH}.*role 'V'"):
        _load(resealed(data), "sdpa", h100_props)


def test_an_operation_kind_replaced_is_refused(h100_props: DeviceProperties) -> None:
    data = _data("layernorm")
    node = data["operationGraph"]["nodes"][0]
    node["operation"] = "CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR"
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH}.*OPERATION_NORM_BACKWARD instead of"):
        _load(resealed(data), "layernorm", h100_props)


# -- damage anywhere: the integrity digest ---------------------------------------------------------


@pytest.mark.parametrize("where", [0.1, 0.3, 0.5, 0.7, 0.9, 0.999])
def test_a_flipped_bit_anywhere_is_refused_as_damage(
    where: float, h100_props: DeviceProperties
) -> None:
    text = _saved("sdpa")  # a runtime-compiled plan: most of its bytes are kernels
    i = int(len(text) * where)
    # flip a bit of a letter or digit (so that the text still parses: damage JSON can carry)
    while not text[i].isalnum():
        i += 1
    flipped = chr(ord(text[i]) ^ 1)
    if not flipped.isalnum():
        flipped = "0" if text[i] != "0" else "1"
    damaged = text[:i] + flipped + text[i + 1 :]
    with pytest.raises(ValueError):
        Plan.from_json(
            damaged, graph=_graph(CATALOGUE["sdpa"], "sdpa"), device_properties=h100_props
        )
    try:
        Plan.from_json(damaged, device_properties=h100_props).close()
    except ValueError as exc:
        assert "damaged" in str(exc) or "not a valid" in str(exc) or "pycudnn" in str(exc), exc
    else:
        pytest.fail(f"a flipped byte at {i} ({text[i]!r} -> {flipped!r}) loaded")


def test_unknown_pycudnn_keys_and_layouts_are_refused(h100_props: DeviceProperties) -> None:
    data = _data("matmul")
    data["pycudnnSomethingNew"] = 1
    with pytest.raises(ValueError, match="keys this version of pycudnn does not know"):
        Plan.from_json(resealed(data), device_properties=h100_props)
    data = _data("matmul")
    data["pycudnnPlanFormat"] = 3
    with pytest.raises(PlanVersionError, match="pycudnnPlanFormat 3"):
        Plan.from_json(resealed(data), device_properties=h100_props)


# -- plans saved by an older version --------------------------------------------------------------


def _older(name: str) -> dict[str, Any]:
    """The layout the previous version wrote: cuDNN's JSON and the graph's own key, nothing else."""
    data = cudnn_only(_data(name))
    data["pycudnnGraphKey"] = _graph(CATALOGUE[name], name).key()
    return data


def test_an_older_plan_is_refused_for_a_graph_with_a_replan_message(
    h100_props: DeviceProperties,
) -> None:
    with pytest.raises(PlanVersionError, match=r"older version of pycudnn.*re-plan"):
        _load(_older("conv_fprop"), "conv_fprop", h100_props)
    Plan.from_json(_older("conv_fprop"), device_properties=h100_props).close()


def test_a_plan_cache_rebuilds_older_and_foreign_files(
    h100_props: DeviceProperties, tmp_path: Path
) -> None:
    build = CATALOGUE["conv_fprop"]
    cache = PlanCache(tmp_path)
    _graph(build, "conv_fprop").build(device_properties=h100_props, cache=cache)
    (path,) = tmp_path.glob("*.json")
    for content, stat in [
        (_older("conv_fprop"), "version_mismatches"),
        (cudnn_only(_data("conv_fprop")), "disk_errors"),
    ]:
        path.write_text(json.dumps(content))
        fresh = PlanCache(tmp_path)
        with _graph(build, "conv_fprop").build(device_properties=h100_props, cache=fresh) as plan:
            assert plan.engine_id is not None
        assert fresh.stats[stat] == 1 and fresh.stats["disk_hits"] == 0, fresh.stats
        assert json.loads(path.read_text())["pycudnnPlanFormat"] == 2  # rewritten


@pytest.mark.parametrize(
    ("name", "a", "b"),
    [
        ("sdpa", "Q", "V"),
        ("sdpa", "O", "Q"),
        ("layernorm", "X", "Y"),
        ("layernorm", "Scale", "Bias"),
    ],
)
def test_the_reported_role_swaps_are_refused(
    name: str, a: str, b: str, h100_props: DeviceProperties
) -> None:
    if name == "sdpa":
        require_mapped()
    data = _data(name)
    node = data["operationGraph"]["nodes"][0]
    node[a], node[b] = node[b], node[a]
    with pytest.raises(ValueError, match=f"{NOT_THIS_GRAPH} '{name}'.*role '({a}|{b})' is tensor"):
        _load(resealed(data), name, h100_props)


@pytest.mark.parametrize("op", ["swish", "softplus", "elu"])
def test_a_pointwise_plan_with_its_own_alpha_or_beta_loads_for_its_graph(
    op: str, h100_props: DeviceProperties, tmp_path: Path
) -> None:
    """cuDNN writes swish's and softplus's beta (1.0 by default) and ELU's alpha; they were taken
    for the convolution's beta (default 0.0) and refused for the very graph they came from, so a
    cache directory never served them."""
    for settings in ({}, {"alpha" if op == "elu" else "beta": 0.5}):
        build = _pointwise(op, **settings)
        cache = PlanCache(tmp_path / f"{op}{len(settings)}")
        _graph(build).build(device_properties=h100_props, cache=cache)
        again = PlanCache(cache.directory)
        _graph(build).build(device_properties=h100_props, cache=again)
        assert again.stats["disk_hits"] == 1 and again.stats["disk_errors"] == 0


def _ragged_sdpa(
    swap: bool = False, o_ragged: bool = True, offsets: str = "int32"
) -> Callable[[Graph], None]:
    def build(g: Graph) -> None:
        q, k, v = (
            g.tensor([2, 4, 256, 64], [256 * 4 * 64, 64, 4 * 64, 1], dtype="bfloat16", name=n)
            for n in "qkv"
        )
        off_q, off_kv = (g.tensor([3, 1, 1, 1], dtype=offsets, name=n) for n in ("oq", "okv"))
        a, b = (off_kv, off_q) if swap else (off_q, off_kv)
        q.set_ragged_offset(a)
        k.set_ragged_offset(b)
        v.set_ragged_offset(b)
        lens = {
            n: g.tensor([2, 1, 1, 1], dtype="int32", name=n) for n in ("seq_len_q", "seq_len_kv")
        }
        o, _ = g.sdpa(q, k, v, name="sdpa", **lens)
        if o_ragged:
            o.set_ragged_offset(a)

    return build


@pytest.mark.parametrize(
    ("loaded_for", "named"),
    [
        (_ragged_sdpa(swap=True), "'q'.* ragged offsets of name '4' in the plan but '5'"),
        (_ragged_sdpa(o_ragged=False), "'sdpa.o'.* is ragged in the plan but not in the graph"),
        (_ragged_sdpa(offsets="int64"), "ragged offsets of dataType 'CUDNN_DATA_INT32'"),
    ],
    ids=["offsets-swapped", "output-padded", "offsets-int64"],
)
def test_a_plan_for_other_ragged_offsets_is_refused(
    loaded_for: Any, named: str, h100_props: DeviceProperties
) -> None:
    """Which offsets make which tensor ragged, and their type, were not compared: a plan for
    packed output loaded for a padded one, or one reading int32 offsets for int64 ones."""
    from _nvbind.ffi import UnsupportedByLibraryError

    try:
        text = _graph(_ragged_sdpa()).build(device_properties=h100_props, cache=False).to_json()
    except UnsupportedByLibraryError as exc:  # ragged attention is newer than this cuDNN
        pytest.skip(str(exc))
    with pytest.raises(ValueError, match=named):
        Plan.from_json(text, graph=_graph(loaded_for), device_properties=h100_props)
    Plan.from_json(text, graph=_graph(_ragged_sdpa()), device_properties=h100_props).close()
