"""C numbers the package uses come from the generated bindings, not from hand-typed literals."""

from __future__ import annotations

import logging

from pycudnn import _bindings, _info, log, version_tuple


def test_every_cudnn_severity_has_a_logging_level() -> None:
    # A severity added by a later header must be mapped on purpose, not fall through to DEBUG.
    assert set(log._LEVELS) == {int(s) for s in _bindings.cudnnSeverity_t}
    assert log._LEVELS[int(_bindings.cudnnSeverity_t.FATAL)] == logging.CRITICAL
    assert log._LEVELS[int(_bindings.cudnnSeverity_t.INFO)] == logging.DEBUG


def test_property_version_agrees_with_get_version() -> None:
    # cudnnGetProperty(MAJOR_VERSION / MINOR_VERSION / PATCH_LEVEL) against cudnnGetVersion().
    assert _info.property_version() == version_tuple()
