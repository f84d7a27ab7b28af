"""The planning benchmark's table tells a graph the frontend cannot express (absent, with the
reason) from one it fails to plan (cannot plan). No library is run: the figures are made up."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import bench_planning


def test_absent_and_cannot_plan_are_told_apart() -> None:
    ours = {"build_ms": 3.0, "heuristics_ms": 2.0, "engine": 3}
    result = {
        "frontend": {
            "version": "1.32.0",
            "graphs": {
                "maxpool": {"absent": "no resample method"},
                "conv_dgrad": {"error": "RuntimeError: no engine"},
                "layernorm_fwd": {"build_ms": 2.0, "heuristics_ms": 1.0, "engine": 3},
            },
        },
        "pycudnn": {"maxpool": ours, "conv_dgrad": ours, "layernorm_fwd": ours},
    }
    text = bench_planning.table(result)
    assert "| maxpool | absent | 3 | - | - | 2 | - | 3 |" in text
    assert "| conv_dgrad | cannot plan | 3 | - | - | 2 | - | 3 |" in text
    assert "| layernorm_fwd | 2 | 3 | 1.50x | 1 | 2 | 3 | 3 |" in text
    assert "- maxpool, absent from the frontend: no resample method" in text
    assert "conv_dgrad, absent" not in text


def test_frontend_absent_altogether() -> None:
    result = {
        "frontend": {"absent": "cudnn-frontend is not installed here"},
        "pycudnn": {"layernorm_fwd": {"build_ms": 3.0, "heuristics_ms": 2.0, "engine": 3}},
    }
    assert "| layernorm_fwd | absent | 3 | - | - | 2 | - | 3 |" in bench_planning.table(result)


def test_first_plan_from_disk_beside_the_frontend_only_when_it_has_a_figure() -> None:
    ours = {"build_ms": 3.0, "heuristics_ms": 2.0, "engine": 3}
    disk = {"graph": "conv_fprop_bias_relu", "first_plan_ms": 180.0, "import_ms": 50.0,
            "libcudnn_load_ms": 10.0, "second_disk_hit_ms": 3.5, "disk_hits": 2}  # fmt: skip
    result = {
        "frontend": {
            "version": "1.32.0",
            "graphs": {},
            "cold": {"from_disk": {"first_plan_ms": 120.0}},
        },
        "pycudnn": {"layernorm_fwd": ours},
        "cold": {"from_disk": disk},
    }
    text = " ".join(bench_planning.table(result).split())  # the lines are wrapped
    assert "first plan from a cache directory (conv_fprop_bias_relu" in text
    assert "its own serialized plan into a new graph (import included): 120 ms (1.50x)" in text
    result["frontend"] = {"absent": "cudnn-frontend is not installed here"}
    text = " ".join(bench_planning.table(result).split())
    assert "first plan from a cache directory" in text
    assert "its own serialized plan" not in text
