"""The raw layers' type stubs (``raw.pyi``) are generated, match the bindings, and type-check calls.

The stubs are made from the generated ``_bindings.py`` text, so they are checked here without
libclang or the headers (``tests/test_bindings_drift.py`` also regenerates them from the headers).
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from pycudnn import _bindings as cudnn_bindings
from pycutensor import _bindings as cutensor_bindings

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = {"cudnn": ("pycudnn", cudnn_bindings), "cutensor": ("pycutensor", cutensor_bindings)}


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_bindings", ROOT / "scripts" / "generate_bindings.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_checked_in_stub_is_what_the_generator_makes(generator: ModuleType, library: str) -> None:
    package, _ = LIBRARIES[library]
    bindings = (ROOT / package / "_bindings.py").read_text(encoding="utf-8")
    stub = (ROOT / package / "raw.pyi").read_text(encoding="utf-8")
    assert generator.generate_raw_stub(library, bindings) == stub, (
        f"{package}/raw.pyi is stale; run `python scripts/generate_bindings.py`"
    )


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_stub_declares_every_function_with_its_c_parameters(library: str) -> None:
    package, bindings = LIBRARIES[library]
    tree = ast.parse((ROOT / package / "raw.pyi").read_text(encoding="utf-8"))
    defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert set(bindings.FUNCTIONS) <= set(defs)
    assert set(defs) - set(bindings.FUNCTIONS) <= {"__getattr__", "__dir__", "compute_descriptor"}
    for name, spec in bindings.FUNCTIONS.items():
        params = [a.arg.rstrip("_") for a in defs[name].args.posonlyargs]
        assert params == [n or f"arg{i}" for i, n in enumerate(spec.argnames)], name
        assert not defs[name].args.args, f"{name}: C arguments are positional only"
        returns = ast.unparse(defs[name].returns) if defs[name].returns else ""
        if spec.returns_status:
            assert returns == "None", f"{name} raises on a failing status and returns None"


def test_stub_types_follow_the_ctypes_declarations() -> None:
    tree = ast.parse((ROOT / "pycudnn" / "raw.pyi").read_text(encoding="utf-8"))
    fn = next(
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == "cudnnSetTensorNdDescriptor"
    )
    # cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t, cudnnDataType_t, int,
    # const int[], const int[])
    assert [ast.unparse(a.annotation) for a in fn.args.posonlyargs if a.annotation] == [
        "_Pointer",
        "int",
        "int",
        "_Pointer",
        "_Pointer",
    ]


def test_mypy_reads_the_stubs(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    source = tmp_path / "use_raw.py"
    source.write_text(
        textwrap.dedent(
            """\
            import ctypes
            from pycudnn import raw
            from pycutensor import raw as traw
            handle = ctypes.c_void_p()
            raw.cudnnCreate(ctypes.byref(handle))
            version: int = raw.cudnnGetVersion()
            raw.cudnnSetStream(handle)
            text: str = traw.cutensorGetErrorString(1)
            """
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--no-error-summary",
            str(source),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    errors = sorted(
        line.split(": error: ")[1] for line in done.stdout.splitlines() if ": error: " in line
    )
    assert errors == [
        'Incompatible types in assignment (expression has type "bytes | None", variable has type "str")  [assignment]',
        'Too few arguments for "cudnnSetStream"  [call-arg]',
    ], done.stdout + done.stderr
