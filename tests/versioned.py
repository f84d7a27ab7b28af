"""Version-dependent test helpers: what the loaded cuDNN lacks is skipped here only where
``tests/test_versions.py`` asserts that version's refusal, so no skip hides a failure."""

from __future__ import annotations

import pytest


def skip_unless_cudnn(version: tuple[int, int], feature: str) -> None:
    """Skip a test of ``feature`` when the loaded cuDNN is older than ``version``. Only for
    features whose refusal on older versions ``tests/test_versions.py`` asserts (so the skip
    hides no failure: that version's behaviour is tested there)."""
    import pycudnn

    loaded = pycudnn.version_tuple()
    if loaded < version:
        pytest.skip(
            f"cuDNN {'.'.join(map(str, loaded))} lacks {feature} (needs "
            f"{'.'.join(map(str, version))}; tests/test_versions.py asserts the refusal)"
        )


def skip_unless_cudnn_has(*c_names: str) -> None:
    """Skip unless the loaded cuDNN has every enumerator named (``CUDNN_ATTR_...``,
    ``CUDNN_BACKEND_..._DESCRIPTOR``), dated by the generated ``@since`` table. Test code that uses
    a newer one is refused before C (``tests/test_versions.py`` asserts that for every symbol)."""
    from pycudnn import _bindings

    for name in c_names:
        since = _bindings.ENUMERATOR_SINCE.get(name)
        if since is not None:
            skip_unless_cudnn(since[:2], name)


def heuristics_run_here() -> bool:
    """Whether planning runs cuDNN's heuristics on this machine without device properties: on a
    GPU, or on cuDNN 9.9 and newer without one (which count configs and return none). cuDNN
    before 9.9 runs them on uninitialized device properties when there is no GPU (9.0: counts
    change from call to call, finalize fails at random), so pycudnn does not run them there and
    ``tests/test_plan.py`` asserts that; raw descriptor tests of heuristics skip there."""
    import pycudnn
    from _nvbind.cuda import driver_status

    return driver_status().usable or pycudnn.version_tuple() >= (9, 9)


def skip_unless_heuristics_run_here() -> None:
    """Skip a raw ENGINEHEUR test where cuDNN's heuristics without a target are unreliable."""
    if not heuristics_run_here():
        pytest.skip(
            "cuDNN before 9.9 runs heuristics on uninitialized device properties without a GPU "
            "(tests/test_plan.py asserts that pycudnn does not run them there)"
        )
