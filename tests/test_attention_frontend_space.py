"""cudnn-frontend's ``test_mhas.py`` SDPA parameter space, translated line by line with the
frontend's keyword names (``scripts/check_frontend_attention.py`` holds the cases and also runs
the frontend's side), planned deviceless for the committed H100 properties.

Each axis of the frontend's forward and backward tests, one at a time on b=2, h=6, s=256, d=128,
bf16: every case pycudnn offers must plan (unified operation or composite graph, as the loaded
cuDNN allows: the backward is composite before cuDNN 9.28, as the frontend's always is; ALiBi is
composite; paged K/V caches, decode included, and ragged THD tensors too), with the cases of
``sink_token``/``dSink_token``, ``dropout=(mask, scale)``, ``block_mask`` (no Hopper engine:
refused by cuDNN), ``sdpa_fp8`` and ``sdpa_fp8_backward``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pycudnn

_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_frontend_attention.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_frontend_attention", _SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


space = _load()


@pytest.fixture(scope="module")
def props(deviceprops_json: dict[str, Any]) -> pycudnn.DeviceProperties:
    return pycudnn.DeviceProperties.from_json(deviceprops_json)


@pytest.mark.parametrize("case", space.CASES, ids=space.case_id)
def test_frontend_case(props: pycudnn.DeviceProperties, case: Any) -> None:
    result = space.pycudnn_result(case, props)
    assert result["status"] == space.expected(case, pycudnn.version_tuple()), result
    if result["status"] != "plan":
        return
    # where the unified operation is too old for a feature, the composite graph plans it
    if case.backward and pycudnn.version_tuple() < (9, 28, 0):
        assert result["lowering"] == "composite"
    if case.dropout and not case.infer and not case.backward:
        assert result["lowering"] == "composite"  # dropout with stats: composite only
    if case.bias and case.backward:
        assert result["lowering"] == "composite"  # dBias: composite only
    if case.alibi:
        assert result["lowering"] == "composite"
    if case.ragged and case.backward:
        assert result["lowering"] == "composite"  # stats not ragged: no unified engine
