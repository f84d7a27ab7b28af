"""Every cuTENSOR plan gets a preference object: the handle's default one when none is given.

cuTENSOR 2.8's ``cutensorCreatePlan`` refuses a NULL preference ("7 INVALID_VALUE: pref must not be
nullptr", measured on an H100; ``cutensor.h`` still says it may be NULL). That refusal failed every
plan of the first GPU run. Without a GPU no handle, and so no plan, can exist: the CPU tier reads the
planning code against the real C prototypes instead, and checks the guards that run before C. The
GPU tier plans without a preference and compares with NumPy.
"""

from __future__ import annotations

import ast
import gc
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pycutensor
from pycutensor import _bindings, plan
from pycutensor.errors import CutensorInvalidValueError, CutensorNotSupportedError
from pycutensor.preference import ALGORITHMS, PlanPreference, algorithm_note, check_planning

ROOT = Path(__file__).resolve().parent.parent / "pycutensor"


# -- CPU tier: the planning code read against the real prototypes ---------------------------------
def _preference_parameters() -> dict[str, int]:
    """Function name -> position of its ``cutensorPlanPreference_t`` argument (by value), from the
    generated prototypes of the headers."""
    out = {}
    for name, spec in _bindings.FUNCTIONS.items():
        for i, argtype in enumerate(spec.argtypes):
            if argtype is _bindings.cutensorPlanPreference_t:
                out[name] = i
    return out


def _library_function(node: ast.AST) -> str | None:
    """``name`` for the expression ``LIB.function("name")``, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "function"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return str(node.args[0].value)
    return None


def _through_run(call: ast.Call) -> bool:
    """Whether ``call`` is ``<library_call>.run(LIB.function("name"), *C arguments)``."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "run"
        and bool(call.args)
        and _library_function(call.args[0]) is not None
    )


def _c_arguments(call: ast.Call) -> list[ast.expr]:
    """The arguments the C function of :func:`_c_function_called` receives."""
    return call.args[1:] if _through_run(call) else call.args


def _c_function_called(call: ast.Call) -> str | None:
    """The C function a call reaches: ``LIB.function("name")(...)``, ``<call>.run(
    LIB.function("name"), ...)``, ``raw.name(...)`` or ``name(...)``."""
    func = call.func
    name = _library_function(func)
    if name is not None:
        return name
    if _through_run(call):
        return _library_function(call.args[0])
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _call_sites(functions: dict[str, int]) -> list[tuple[str, ast.FunctionDef, ast.Call]]:
    sites = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "_bindings.py":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and _c_function_called(node) in functions:
                    sites.append((str(path.relative_to(ROOT.parent)), fn, node))
    return sites


def _assigned_none(fn: ast.FunctionDef, name: str) -> bool:
    """Whether ``name`` is ever bound to ``None`` in ``fn`` (plainly, in a tuple or as a default)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = (
                    zip(target.elts, node.value.elts, strict=False)
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                    else [(target, node.value)]
                )
                for t, v in pairs:
                    is_none = isinstance(v, ast.Constant) and v.value is None
                    if isinstance(t, ast.Name) and t.id == name and is_none:
                        return True
    args = fn.args
    positional = [a.arg for a in args.args]
    defaults = dict(
        zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
    )
    default = defaults.get(name)
    return isinstance(default, ast.Constant) and default.value is None


def _only_from_default_preference(fn: ast.FunctionDef, name: str) -> bool:
    """Whether every binding of ``name`` in ``fn`` is ``name = default_preference(...)`` (the
    handle's C object, never NULL), and there is at least one."""
    bindings = [
        node
        for node in ast.walk(fn)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
        and any(
            isinstance(t, ast.Name) and t.id == name
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    ]
    if name in {a.arg for a in fn.args.args + fn.args.kwonlyargs} or not bindings:
        return False
    return all(
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and _c_function_called(node.value) == "default_preference"
        for node in bindings
    )


def test_the_prototypes_take_the_preference_by_value() -> None:
    positions = _preference_parameters()
    assert positions["cutensorCreatePlan"] == 3
    assert _bindings.FUNCTIONS["cutensorCreatePlan"].argnames[3] == "pref"
    assert positions["cutensorEstimateWorkspaceSize"] == 2


def test_no_planning_call_can_pass_a_null_preference() -> None:
    positions = _preference_parameters()
    planning = {n: positions[n] for n in ("cutensorCreatePlan", "cutensorEstimateWorkspaceSize")}
    sites = _call_sites(planning)
    where = {(path, fn.name, _c_function_called(call)) for path, fn, call in sites}
    # One call site each: Plan, the array functions, einsum and autotune all plan through them.
    # Block-sparse contractions plan their own operation kind (not an Operation of plan.py), with
    # the handle's default preference.
    own = {
        ("pycutensor/plan.py", "_create_plan", "cutensorCreatePlan"),
        ("pycutensor/plan.py", "estimate_workspace", "cutensorEstimateWorkspaceSize"),
    }
    block_sparse = {
        ("pycutensor/distributed/blocksparse.py", "__init__", "cutensorCreatePlan"),
        ("pycutensor/distributed/blocksparse.py", "__init__", "cutensorEstimateWorkspaceSize"),
    }
    assert where == own | block_sparse
    for path, fn, call in sites:
        arg = _c_arguments(call)[planning[str(_c_function_called(call))]]
        assert not (isinstance(arg, ast.Constant) and arg.value is None)
        assert isinstance(arg, ast.Name), ast.dump(arg)
        assert not _assigned_none(fn, arg.id), f"{fn.name} may pass {arg.id}=None as the preference"
        if path == "pycutensor/distributed/blocksparse.py":
            assert _only_from_default_preference(fn, arg.id), f"{path}: {arg.id}"
    create = next(fn for _, fn, call in sites if fn.name == "_create_plan")
    annotation = next(a.annotation for a in create.args.args if a.arg == "preference")
    assert annotation is not None and ast.unparse(annotation) == "PlanPreferenceObject"


def test_the_old_planning_code_is_caught() -> None:
    # What Plan.__init__ did before: `pref_obj = None` when no preference was given.
    old = ast.parse(
        "def __init__(self, operation, preference=None):\n"
        "    if preference is None:\n"
        "        pref_obj = None\n"
        "    else:\n"
        "        pref_obj = preference.create(handle)\n"
        "    LIB.function('cutensorCreatePlan')(handle, ctypes.byref(out), operation, pref_obj, 0)\n"
    ).body[0]
    assert isinstance(old, ast.FunctionDef)
    assert _assigned_none(old, "pref_obj")


def test_a_preference_made_any_other_way_is_caught() -> None:
    # What BlockSparseContractionPlan did before: a bare cutensorPlanPreference_t, NULL until a
    # create call fills it (the check accepts only the handle's default preference).
    old = ast.parse(
        "def __init__(self, a, b, c):\n"
        "    pref = cb.cutensorPlanPreference_t()\n"
        "    raw.cutensorCreatePlanPreference(self.handle, ctypes.byref(pref), 0, 0)\n"
        "    raw.cutensorCreatePlan(self.handle, ctypes.byref(plan), op, pref, 0)\n"
    ).body[0]
    assert isinstance(old, ast.FunctionDef)
    assert not _only_from_default_preference(old, "pref")
    new = ast.parse("def f(self):\n    pref = default_preference(self.handle)\n").body[0]
    assert isinstance(new, ast.FunctionDef)
    assert _only_from_default_preference(new, "pref")
    given = ast.parse("def f(self, pref=None):\n    pref = default_preference(h)\n").body[0]
    assert isinstance(given, ast.FunctionDef)
    assert not _only_from_default_preference(given, "pref")  # an argument may be anything


def test_create_plan_refuses_a_missing_preference_before_c() -> None:
    # The guard runs before the handle or operation is touched (these are not even handles).
    with pytest.raises(TypeError, match=r"pref must not be nullptr"):
        plan._create_plan(object(), object(), None, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"PlanPreferenceObject, not PlanPreference"):
        plan._create_plan(object(), object(), PlanPreference(), 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("algo", [0, 1, 3])
def test_explicit_algorithm_numbers_that_fail_say_what_works(algo: int) -> None:
    note = algorithm_note(PlanPreference(algo=algo))
    assert f"algo={algo}" in note and "0-3" in note
    assert all(repr(name) in note for name in ALGORITHMS)
    status = int(_bindings.CUTENSOR_STATUS_NOT_SUPPORTED)
    with pytest.raises(CutensorNotSupportedError) as info:
        check_planning(status, "cutensorCreatePlan", PlanPreference(algo=algo))
    assert info.value.function == "cutensorCreatePlan" and "named algorithms" in info.value.message
    # other statuses, and the named algorithms, get cuTENSOR's message alone
    invalid = int(_bindings.CUTENSOR_STATUS_INVALID_VALUE)
    with pytest.raises(CutensorInvalidValueError) as other:
        check_planning(invalid, "cutensorCreatePlan", PlanPreference(algo=algo))
    assert "named algorithms" not in other.value.message
    with pytest.raises(CutensorNotSupportedError) as named:
        check_planning(status, "cutensorCreatePlan", PlanPreference(algo="gett"))
    assert "named algorithms" not in named.value.message
    check_planning(0, "cutensorCreatePlan", PlanPreference(algo=algo))  # success: no error


# -- GPU tier ------------------------------------------------------------------------------------------
def _device(host: np.ndarray) -> Any:
    from _nvbind.device_array import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(host))


def _contraction(handle: pycutensor.Handle, rng: np.random.Generator) -> tuple[Any, ...]:
    from pycutensor.operations import Contraction
    from pycutensor.tensor import TensorDescriptor

    a = rng.uniform(-1, 1, (24, 16, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (16, 20, 4)).astype(np.float32)
    da, db, dc = _device(a), _device(b), _device(np.zeros((24, 20, 4), np.float32))
    op = Contraction(TensorDescriptor.from_array(handle, da), "ikb",
                     TensorDescriptor.from_array(handle, db), "kjb",
                     TensorDescriptor.from_array(handle, dc), "ijb")  # fmt: skip
    want = np.einsum("ikb,kjb->ijb", a.astype(np.float64), b.astype(np.float64))
    return op, (da, db, dc), want


@pytest.mark.gpu
def test_a_plan_made_without_a_preference_executes_and_matches_numpy(gpu_device: int) -> None:
    from pycutensor.plan import Plan

    handle = pycutensor.get_handle(gpu_device)
    op, (da, db, dc), want = _contraction(handle, np.random.default_rng(1))
    p = Plan(op)  # no preference: what failed on cuTENSOR 2.8 with a NULL one
    p.execute(da, db, dc)
    np.testing.assert_allclose(dc.to_numpy(), want, rtol=2e-5, atol=2e-5)
    assert p.preference == PlanPreference()


@pytest.mark.gpu
def test_each_kind_plans_without_a_preference(gpu_device: int) -> None:
    from pycutensor import operations

    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (6, 5, 4)).astype(np.float32)
    y = _device(np.zeros((4, 6, 5), np.float32))
    operations.permute(_device(x), "ijk", y, "kij", alpha=2.0)
    np.testing.assert_allclose(y.to_numpy(), 2 * x.transpose(2, 0, 1), rtol=1e-6)
    r = _device(np.zeros((6,), np.float32))
    operations.reduce(_device(x), "ijk", r, "i")
    np.testing.assert_allclose(r.to_numpy(), x.sum(axis=(1, 2)), rtol=1e-5, atol=1e-5)
    c = _device(x)
    operations.elementwise_binary(_device(x), "ijk", c, "ijk", alpha=1.0, gamma=1.0)
    np.testing.assert_allclose(c.to_numpy(), 2 * x, rtol=1e-6)
    got = pycutensor.einsum("ijk,kl->ijl", _device(x), _device(np.eye(4, dtype=np.float32)))
    np.testing.assert_allclose(got.to_numpy(), x, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_the_default_preference_is_made_once_per_handle_and_closed_with_it(gpu_device: int) -> None:
    from pycutensor.preference import default_preference

    handle = pycutensor.Handle(gpu_device)  # a fresh one: nothing made for it yet
    assert handle._default_preference is None and handle._owned == []
    op, arrays, want = _contraction(handle, np.random.default_rng(3))
    plans = [op.plan() for _ in range(3)]
    op.estimate_workspace()
    pref = default_preference(handle)
    assert all(p._parents[2] is pref for p in plans)  # every plan keeps it alive
    assert len(handle._owned) == 1  # one cutensorCreatePlanPreference for them all
    plans[0].execute(*arrays)
    np.testing.assert_allclose(arrays[2].to_numpy(), want, rtol=2e-5, atol=2e-5)
    for p in plans:
        p.close()
    op.close()
    handle.close()
    assert pref.closed and handle._owned == []


@pytest.mark.gpu
def test_repeated_einsum_calls_reuse_one_preference(gpu_device: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    a = _device(np.ones((8, 8), np.float32))
    for n in (8, 9, 10):  # new problems: new plans, same preference
        pycutensor.einsum("ij,jk->ik", a, _device(np.ones((8, n), np.float32)))
    owned = list(handle._owned)
    pycutensor.einsum("ij,jk->ik", a, _device(np.ones((8, 11), np.float32)))
    assert handle._owned == owned and len(owned) == 1


@pytest.mark.gpu
def test_a_handle_with_a_default_preference_is_still_collected(gpu_device: int) -> None:
    handle = pycutensor.Handle(gpu_device)
    op, arrays, _ = _contraction(handle, np.random.default_rng(4))
    op.plan().execute(*arrays)
    ref = weakref.ref(handle)
    del handle, op
    gc.collect()
    assert ref() is None  # the preference it owns does not keep it alive


@pytest.mark.gpu
@pytest.mark.parametrize("algo", [0, 1, 2, 3])
def test_explicit_algorithm_numbers_run_or_say_what_works(gpu_device: int, algo: int) -> None:
    handle = pycutensor.get_handle(gpu_device)
    op, arrays, want = _contraction(handle, np.random.default_rng(5))
    try:
        p = op.plan(PlanPreference(algo=algo))
    except CutensorNotSupportedError as exc:  # cuTENSOR 2.8 on an H100: every number 0-3
        assert "only the named algorithms" in exc.message
        return
    p.execute(*arrays)
    np.testing.assert_allclose(arrays[2].to_numpy(), want, rtol=2e-5, atol=2e-5)
