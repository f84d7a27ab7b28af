#!/usr/bin/env python3
"""Multi-GPU batch norm (``peer_stats``) planned by pycudnn and (optionally) by cudnn-frontend.

The graphs of the frontend's samples ("SGBN Add Relu" without the epilogue, "DBN Add Relu"
without the prologue): x ``[8, 64, 56, 56]`` float16 NHWC, per-channel float32 parameters,
1 to 32 peer buffers of float32 ``[2, 4 * C, 1, 1]``, forward (with running statistics) and
backward, planned deviceless for the committed H100 properties::

    python scripts/check_frontend_batchnorm_peers.py                       # pycudnn only
    python scripts/check_frontend_batchnorm_peers.py --frontend-python PY  # and the frontend

The frontend runs in a child process of PY (its own cuDNN). Each line: the case, pycudnn's
engine (or its refusal), the frontend's first plan (or its error). Exit status 1 when pycudnn
does not plan a case the measurement says it plans (every case but the backward with one buffer,
which cuDNN 9.28 refuses: "num_peers == 1"). ``tests/test_norm_peer_stats.py`` tests the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from check_frontend_attention import DEVICEPROPS, frontend_arguments

N, C, H, W = 8, 64, 56, 56
CASES = [(side, k) for side in ("forward", "backward") for k in (1, 2, 4, 8, 32)]


def pycudnn_result(side: str, count: int) -> str:
    """The engine pycudnn plans for one case, or its refusal."""
    import pycudnn  # here, not at the top: the frontend's child never loads pycudnn

    props = pycudnn.DeviceProperties.from_json(json.loads(DEVICEPROPS.read_text()))
    g = pycudnn.Graph(f"bn_{side}_{count}")
    x = g.tensor([N, C, H, W], fmt="NHWC", dtype="float16", name="x")
    pc = [1, C, 1, 1]
    peers = [g.tensor([2, 4 * C, 1, 1], name=f"peer{i}") for i in range(count)]
    try:
        if side == "forward":
            s, b, rm, rv = (g.tensor(pc, fmt="NHWC", name=n) for n in ("s", "b", "rm", "rv"))
            g.batchnorm(x, s, b, running_mean=rm, running_var=rv, momentum=0.1, peer_stats=peers)
        else:
            dy = g.tensor([N, C, H, W], fmt="NHWC", dtype="float16", name="dy")
            s, m, iv = (g.tensor(pc, fmt="NHWC", name=n) for n in ("s", "m", "iv"))
            g.batchnorm_backward(dy, x, s, m, iv, peer_stats=peers)
        return f"engine {g.build(device_properties=props, cache=False).engine_id}"
    except (ValueError, RuntimeError) as exc:
        return f"refused: {exc}"


def frontend_result(side: str, count: int) -> str:  # pragma: no cover - runs in the child
    """The frontend's first plan for one case, or its error."""
    import cudnn  # type: ignore[import-not-found,unused-ignore]

    dt = cudnn.data_type
    g = cudnn.pygraph(
        io_data_type=dt.HALF,
        intermediate_data_type=dt.FLOAT,
        compute_data_type=dt.FLOAT,
        device_property=cudnn.create_device_properties(DEVICEPROPS.read_text()),
        sm_version=90,
    )

    def nhwc(dims: list[int], dtype: Any = dt.FLOAT) -> Any:
        _, c, h, w = dims
        return g.tensor(dim=dims, stride=[c * h * w, 1, c * w, c], data_type=dtype)

    peers = [nhwc([2, 4 * C, 1, 1]) for _ in range(count)]
    x = nhwc([N, C, H, W], dt.HALF)
    if side == "forward":
        s, b, rm, rv = (nhwc([1, C, 1, 1]) for _ in range(4))
        # cuDNN takes epsilon and momentum by value only (as pycudnn's Graph.scalar)
        eps, mom = (nhwc([1, 1, 1, 1]).set_is_pass_by_value(True) for _ in range(2))
        outs = g.batchnorm(
            input=x, scale=s, bias=b, in_running_mean=rm, in_running_var=rv,
            epsilon=eps, momentum=mom, peer_stats=peers,
        )  # fmt: skip
    else:
        s, m, iv = (nhwc([1, C, 1, 1]) for _ in range(3))
        dy = nhwc([N, C, H, W], dt.HALF)
        outs = g.batchnorm_backward(
            grad=dy, input=x, scale=s, mean=m, inv_variance=iv, peer_stats=peers
        )
    outs[0].set_output(True)
    for t in outs[1:]:
        t.set_output(True).set_data_type(dt.FLOAT)
    try:
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        return f"plans, first {g.get_plan_name_at_index(0)}"
    except Exception as exc:  # the frontend's error is the result
        return f"error: {str(exc).splitlines()[0][:160]}"


def main(argv: list[str] | None = None) -> int:
    args = frontend_arguments(__doc__, argv)
    if args.child:  # pragma: no cover - in the frontend's Python
        print(json.dumps([frontend_result(side, k) for side, k in CASES]))
        return 0
    theirs = [""] * len(CASES)
    if args.frontend_python:
        code = [args.frontend_python, str(Path(__file__).resolve()), "--child"]
        theirs = json.loads(subprocess.run(code, capture_output=True, check=True).stdout)
    status = 0
    for (side, k), fe in zip(CASES, theirs, strict=True):
        ours = pycudnn_result(side, k)
        if ours.startswith("refused") != (side == "backward" and k == 1):
            status = 1
        print(f"{side:8} peers={k:<2} pycudnn: {ours[:120]}" + (f" | frontend: {fe}" if fe else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
