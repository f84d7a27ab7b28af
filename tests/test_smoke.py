"""The smoke demo's checks that plan without a GPU, and where they find their device properties."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import deviceprops_files

import pycudnn
from _nvbind.cuda import driver_status
from pycudnn.plan import smoke_checks
from pycudnn.plan.smoke import checkout_deviceprops_dir

ROOT = Path(__file__).resolve().parent.parent


def test_the_checkout_folder_is_found_from_the_package() -> None:
    assert checkout_deviceprops_dir() == ROOT / "tests" / "data" / "deviceprops"
    assert Path(pycudnn.__file__).resolve().parent.parent == ROOT  # this checkout's package


def test_an_installed_package_has_no_checkout_folder(tmp_path: Path) -> None:
    # site-packages: the package beside another distribution's stray tests/ folder, no pyproject
    site = tmp_path / "site-packages"
    (site / "pycudnn").mkdir(parents=True)
    (site / "tests" / "data" / "deviceprops").mkdir(parents=True)
    assert checkout_deviceprops_dir(site / "pycudnn") is None
    (site / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert checkout_deviceprops_dir(site / "pycudnn") == site / "tests" / "data" / "deviceprops"


def test_without_the_variable_the_smoke_plans_for_the_committed_properties(
    deviceprops_json: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default the docs promise (docs/environment.md): the first file of tests/data/deviceprops/.
    monkeypatch.delenv("PYCUDNN_DEVICEPROPS", raising=False)
    first = str(deviceprops_files()[0])
    names = dict(smoke_checks())
    deviceless = names["deviceless plans from device properties"]()
    assert deviceless["deviceprops"] == first
    assert first in deviceless["summary"]
    assert deviceless["conv_bias_relu"]["json_bytes"] > 0
    heuristics = names["graph heuristics (conv+bias+ReLU, matmul)"]()
    if not driver_status().usable:  # without a GPU the heuristics target those properties
        assert first in heuristics["target"]
    for graph in ("conv_bias_relu", "matmul"):
        assert any(returned > 0 for _, returned in heuristics[graph]["heuristics"].values())


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_cutensor_smoke_result_with_nan_or_inf_is_no_pass(
    monkeypatch: pytest.MonkeyPatch, bad: float
) -> None:
    """The cuTENSOR smoke checks compared ``err > tolerance``: a NaN in the GPU's result made the
    error NaN, the comparison false, and the check "ok" with "max relative error nan"."""
    import numpy as np

    from pycutensor import smoke

    class Output:
        dtype = np.dtype(np.float32)

        def to_numpy(self) -> np.ndarray:
            return np.array([[1.0, bad], [3.0, 4.0]], dtype=np.float32)

    monkeypatch.setattr(smoke, "synchronize_stream", lambda stream: None)
    want = np.array([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AssertionError, match="max relative error"):
        smoke._measured("check", lambda: None, Output(), want)  # type: ignore[arg-type]
