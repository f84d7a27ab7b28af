"""The keywords pycutensor's operations share have one home each (OperationKeywords,
LaunchKeywords, WorkspaceLaunchKeywords): every function on arrays and every operation class shows
them in its signature with default None, refuses any other keyword as Python does (with a
did-you-mean), and type checkers check callers' keywords against the lists."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pycutensor
from pycutensor import operations as ops
from pycutensor.distributed import mp

ROOT = Path(__file__).resolve().parent.parent

OPERATION = {"compute_type", "handle"}
LAUNCH = {*OPERATION, "stream"}
WORKSPACE_LAUNCH = {*LAUNCH, "preference", "workspace"}

FUNCTIONS: dict[str, set[str]] = {
    "contract": WORKSPACE_LAUNCH,
    "contract_trinary": WORKSPACE_LAUNCH,
    "reduce": WORKSPACE_LAUNCH,
    "elementwise_binary": LAUNCH,
    "elementwise_trinary": LAUNCH,
    "permute": LAUNCH,
}
CLASSES = ["Contraction", "ContractionTrinary", "Reduction", "ElementwiseBinary",
           "ElementwiseTrinary", "Permutation"]  # fmt: skip


def _keyword_only(fn: Callable[..., Any]) -> dict[str, Any]:
    params = inspect.signature(fn).parameters.values()
    assert inspect.Parameter.VAR_KEYWORD not in {p.kind for p in params}
    return {p.name: p.default for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_the_lists_nest() -> None:
    assert set(ops.OperationKeywords.__annotations__) == OPERATION
    assert set(ops.LaunchKeywords.__annotations__) == LAUNCH
    assert set(ops.WorkspaceLaunchKeywords.__annotations__) == WORKSPACE_LAUNCH


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_signature_shows_its_list(name: str) -> None:
    shown = _keyword_only(getattr(pycutensor, name))
    for key in FUNCTIONS[name]:
        assert shown[key] is None, (name, key)
    # the operators and scalars stay the function's own, before the shared list
    assert "alpha" in shown
    assert not (WORKSPACE_LAUNCH - FUNCTIONS[name]) & set(shown)


@pytest.mark.parametrize("name", CLASSES)
def test_operation_signature_shows_its_list(name: str) -> None:
    shown = _keyword_only(getattr(pycutensor, name))
    assert {k: shown[k] for k in OPERATION} == dict.fromkeys(OPERATION)
    assert not (WORKSPACE_LAUNCH - OPERATION) & set(shown)
    assert "op_a" in shown


def _arrays(n: int) -> list[np.ndarray]:
    return [np.zeros((2, 2), np.float32) for _ in range(n)]


def test_unknown_keyword_is_refused_with_a_suggestion() -> None:
    a, b, c = _arrays(3)
    with pytest.raises(TypeError, match=r"contract\(\) got an unexpected keyword argument "
                       r"'workspce'.*'workspace'"):  # fmt: skip
        pycutensor.contract(a, "ik", b, "kj", c, "ij", workspce=None)  # type: ignore[call-arg]


def test_a_keyword_of_the_wider_list_is_refused() -> None:
    # permute's execute takes no workspace, and it plans with the handle's default preference
    a, b = _arrays(2)
    with pytest.raises(TypeError, match=r"permute\(\) got an unexpected keyword argument "
                       r"'preference'"):  # fmt: skip
        pycutensor.permute(a, "ij", b, "ji", preference=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"elementwise_binary\(\) .* 'workspace'"):
        pycutensor.elementwise_binary(a, "ij", b, "ij", workspace=None)  # type: ignore[call-arg]


def test_operation_refuses_an_unknown_keyword() -> None:
    # refused before the descriptors are looked at, as Python refuses a keyword
    with pytest.raises(TypeError, match=r"Permutation.__init__\(\) got an unexpected keyword "
                       r"argument 'stream'"):  # fmt: skip
        pycutensor.Permutation(None, "ij", None, "ji", stream=0)  # type: ignore[arg-type, call-arg]


def test_distributed_einsum_takes_the_contraction_plans_keywords() -> None:
    plan = _keyword_only(mp.ContractionPlan)
    shown = _keyword_only(mp.einsum)
    assert set(mp.MpContractionKeywords.__annotations__) == {"compute_type", "preference"}
    for key in mp.MpContractionKeywords.__annotations__:
        assert shown[key] == plan[key] is None, key
    # refused as Python refuses a keyword: before the subscripts or the tensors are looked at
    with pytest.raises(TypeError, match=r"einsum\(\) got an unexpected keyword argument "
                       r"'compute'.*'compute_type'"):  # fmt: skip
        mp.einsum("not subscripts", None, None, out=None, compute=1)  # type: ignore[arg-type, call-arg]


def test_distributed_einsum_takes_executes_scalars() -> None:
    # alpha and beta are ContractionPlan.execute's, shown where einsum always had them
    execute = inspect.signature(mp.ContractionPlan.execute).parameters
    shown = _keyword_only(mp.einsum)
    assert list(shown) == ["out", "alpha", "beta", "compute_type", "preference"]
    for key in mp.MpScalarKeywords.__annotations__:
        assert shown[key] == execute[key].default, key
    with pytest.raises(TypeError, match=r"einsum\(\) .* 'alpah'.*'alpha'"):
        mp.einsum("ab,bc->ac", None, None, out=None, alpah=2.0)  # type: ignore[arg-type, call-arg]


def test_mypy_checks_the_shared_keywords(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    source = tmp_path / "use_keywords.py"
    source.write_text(
        textwrap.dedent(
            """\
            import numpy as np
            import pycutensor
            from pycutensor.distributed import mp
            a = np.zeros((2, 2), np.float32)
            t: mp.DistributedTensor
            pycutensor.contract(a, "ik", a, "kj", a, "ij", stream=0, workspace=None, handle=None)
            pycutensor.permute(a, "ij", a, "ji", compute_type="32F", stream=0)
            pycutensor.contract(a, "ik", a, "kj", a, "ij", workspce=None)
            pycutensor.permute(a, "ij", a, "ji", preference=None)
            pycutensor.reduce(a, "ij", a, "i", handle="not a handle")
            pycutensor.Contraction(None, "ik", None, "kj", None, "ij", stream=0)
            mp.einsum("ab,bc->ac", t, t, out=t, compute_type="32F", preference=None)
            mp.einsum("ab,bc->ac", t, t, out=t, stream=0)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
         "--ignore-missing-imports", "--no-error-summary", "--strict", str(source)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    errors = sorted(
        (int(line.split(":")[1]), line.split(": error: ")[1].split("  [")[0])
        for line in done.stdout.splitlines()
        if ": error: " in line
    )
    lines = [line for line, _ in errors]
    # the clean calls pass; each of the others is refused for its keyword
    assert not {6, 7, 12} & set(lines), done.stdout + done.stderr

    def said(line: int) -> str:
        return " ".join(m for n, m in errors if n == line)

    assert 'Unexpected keyword argument "workspce"' in said(8)
    assert 'Unexpected keyword argument "preference"' in said(9)
    assert 'Argument "handle" to "reduce" has incompatible type "str"' in said(10)
    assert 'Unexpected keyword argument "stream"' in said(11)
    assert 'Unexpected keyword argument "stream" for "einsum"' in said(13)
