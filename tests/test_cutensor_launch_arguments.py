"""Arguments of the functions on arrays and of :meth:`Plan.execute` that no descriptor describes
(the preference, the caller's workspace), run through the CPU interpreter of cuTENSOR's calls
(``tests/cutensor_interpreter.py``): each is refused with an exception naming it, before any
execute."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import pycutensor
from pycutensor import _lib
from pycutensor.plan import PlanPreference
from tests.cutensor_interpreter import (
    COMPUTE_PTR,
    Interpreter,
    _through_ctypes,
    make,
    stand_in_handle,
)


@pytest.fixture
def cu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Interpreter]:
    interp = Interpreter("output")
    for name, impl in interp.functions().items():
        monkeypatch.setitem(_lib.LIB._bound, name, _through_ctypes(name, impl, interp))
    for name, ptr in COMPUTE_PTR.items():
        monkeypatch.setitem(_lib._compute_descriptors, name, ptr)
    interp.handle = stand_in_handle()
    yield interp
    interp.handle.clear_cached_operations()
    gc.collect()
    assert not interp.errors, interp.errors


def _contraction(cu: Interpreter) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    a, da = make(cu, rng, (2, 3), np.float32)
    b, db = make(cu, rng, (3, 4), np.float32)
    c, dc = make(cu, rng, (2, 4), np.float32)
    return a, b, c, da, db, dc


@pytest.mark.parametrize("preference", ["default", 5, "PlanPreferenceObject"])
def test_array_functions_refuse_a_preference_of_another_type(
    cu: Interpreter, preference: object
) -> None:
    # planning read preference.autotune: an AttributeError naming no argument
    if preference == "PlanPreferenceObject":
        preference = PlanPreference().create(cu.handle)
    *_, da, db, dc = _contraction(cu)
    with pytest.raises(TypeError, match="preference must be a PlanPreference or None"):
        pycutensor.contract(da, "ik", db, "kj", dc, "ij", preference=preference,
                            handle=cu.handle)  # fmt: skip
    assert not cu.executes
