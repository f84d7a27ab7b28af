"""A plan JSON naming a tensor with anything but the unique id of one of its tensors is refused
before cuDNN reads it, for every role of every node of every operation kind (cuDNN 9.28 aborted
the process on a reference spelled ``CUDNN_...`` in SDPA, RoPE, norm, genstats, BN-finalize and
pooling-index nodes: ``std::stoll`` threw through C). Each path a plan JSON takes to cuDNN is
tried: ``Plan.from_json``, the typed backend layer, and a damaged plan-cache file (rebuilt).

The attempts run in a child process, so that a regression fails with the child's signal instead
of ending the test session.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from children import run_python
from plan_kinds import planned_kinds

pytestmark = pytest.mark.usefixtures("libcuda")
TESTS = Path(__file__).resolve().parent
run_child = functools.partial(run_python, timeout=600)

CHILD = """
import json, sys, tempfile, pathlib
sys.path.insert(0, sys.argv[1])
import conftest, plan_kinds
import pycudnn
from pycudnn.backend import BackendDescriptor
from pycudnn.graph import Graph
from pycudnn.plan import Plan, PlanCache

props = pycudnn.DeviceProperties.load(conftest.H100_PROPS_FILE)
BAD = ["CUDNN_DATA_FLOAT", "CUDNN_", "zz", "", " 1", "99999", "-1", "1.0", "0x1"]
counts = {"refused": 0, "accepted": 0}
for name in sys.argv[2].split(","):
    g = Graph(name)
    plan_kinds.CATALOGUE[name](g)
    base = json.loads(g.build(device_properties=props, cache=False).to_json())
    nodes = plan_kinds.all_nodes(base["operationGraph"])
    for i, node in enumerate(nodes):
        for key in plan_kinds.reference_keys(node):
            for j, bad in enumerate(BAD if key == plan_kinds.reference_keys(node)[0] else BAD[:1]):
                data = json.loads(json.dumps(base))
                plan_kinds.all_nodes(data["operationGraph"])[i][key] = bad
                try:
                    if j % 2 == 0:
                        Plan.from_json(data, device_properties=props).close()
                    else:
                        d = BackendDescriptor("EXECUTION_PLAN")
                        d.set("EXECUTION_PLAN_JSON_REPRESENTATION", json.dumps(plan_kinds.cudnn_only(data)), attr_type="CHAR")
                    counts["accepted"] += 1
                    print("ACCEPTED", name, i, key, repr(bad))
                except ValueError as exc:
                    ok = f".{key} must name a tensor" in str(exc)
                    counts["refused" if ok else "accepted"] += 1
                    if not ok:
                        print("OTHER", name, i, key, repr(bad), exc)
# a damaged plan-cache file: refused, logged and rebuilt
with tempfile.TemporaryDirectory() as tmp:
    g = Graph("sdpa"); plan_kinds.CATALOGUE["sdpa"](g)
    g.build(device_properties=props, cache=PlanCache(tmp))
    (path,) = pathlib.Path(tmp).glob("*.json")
    data = json.loads(path.read_text())
    data["operationGraph"]["nodes"][0]["Q"] = "CUDNN_DATA_FLOAT"
    path.write_text(json.dumps(data))
    cache = PlanCache(tmp)
    g = Graph("sdpa"); plan_kinds.CATALOGUE["sdpa"](g)
    with g.build(device_properties=props, cache=cache) as plan:
        print("CACHE", cache.stats["disk_errors"], cache.stats["disk_hits"], plan.engine_id is not None)
print("COUNTS", counts["refused"], counts["accepted"])
"""


def test_every_reference_of_every_kind_is_checked_in_a_child(h100_props: object) -> None:
    out = run_child(CHILD, str(TESTS), ",".join(planned_kinds()))
    assert out.returncode == 0, (out.returncode, out.stdout[-3000:], out.stderr[-3000:])
    lines = out.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("ACCEPTED", "OTHER"))], lines[:20]
    counts = next(line for line in lines if line.startswith("COUNTS")).split()
    assert int(counts[1]) > 200 and counts[2] == "0", counts
    assert "CACHE 1 0 True" in lines, lines[-5:]
