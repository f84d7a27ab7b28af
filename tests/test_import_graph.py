"""The packages' imports point one way: no module imports, directly or through others, a module
that imports it back, counting every import: at module level, inside functions, and under
``if TYPE_CHECKING:`` (a type-only import is still a dependency a reader has to follow).

pycudnn's layers, lowest first: ``opgraph`` describes a graph, ``verification``'s checks take the
plans they are given, ``plan`` plans and executes a described graph, ``graph.Graph`` joins a
description and its planning entry points, and the suite, the CLIs and the smoke demo sit on top.
Where a lower module needs a higher one's object it names what it reads as a ``Protocol``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep] + ([node.module] if node.module else []))
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def imports(
    package: str,
) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[str]]]:
    """Module-level, function-level and type-only imports between the modules of ``package``."""
    files = sorted((ROOT / package).rglob("*.py"))
    modules = {_module_name(p): p for p in files}
    top: dict[str, set[str]] = {m: set() for m in modules}
    deferred: dict[str, set[str]] = {m: set() for m in modules}
    typing: dict[str, set[str]] = {m: set() for m in modules}

    def visit(
        module: str, is_package: bool, body: list[ast.stmt], level: dict[str, set[str]]
    ) -> None:
        for node in body:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(module, is_package, node.body, typing)
                visit(module, is_package, node.orelse, level)
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(module, is_package, list(ast.walk(node))[1:], deferred)  # type: ignore[arg-type]
                continue
            if isinstance(node, ast.ClassDef):
                visit(module, is_package, node.body, level)
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base, *members = _resolve(module, is_package, node)
                # "from . import x" names submodule x, not the package's own __init__
                names = [m for m in members if m in modules] or [base]
            else:
                if isinstance(node, (ast.If, ast.Try, ast.With)):
                    visit(module, is_package, [*ast.iter_child_nodes(node)], level)  # type: ignore[list-item]
                continue
            for name in names:
                # importing a.b.c runs the __init__ of a and a.b first (but not this module's own
                # packages: they are being imported already)
                parts = name.split(".")
                for i in range(1, len(parts) + 1):
                    target = ".".join(parts[:i])
                    if target in modules and target != module and target not in own:
                        level[module].add(target)

    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
        visit(module, path.name == "__init__.py", tree.body, top)
    return top, deferred, typing


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return out


def _union(*graphs: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: set().union(*(g[m] for g in graphs)) for m in graphs[0]}


@pytest.mark.parametrize("package", ["_nvbind", "pycudnn", "pycutensor"])
def test_module_level_imports_have_no_cycle(package: str) -> None:
    top, _, _ = imports(package)
    assert cycles(top) == []


@pytest.mark.parametrize("package", ["_nvbind", "pycudnn", "pycutensor"])
def test_no_cycle_counting_function_level_and_type_only_imports(package: str) -> None:
    assert cycles(_union(*imports(package))) == []


def test_the_checker_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # the old pycutensor layout: operations imported plan inside functions, plan imported
    # operations at module level; a deferred import closing a cycle is reported
    top = {"operations": {"tensor"}, "plan": {"operations"}, "tensor": set()}
    assert cycles({**top, "operations": {"tensor", "plan"}}) == [["operations", "plan"]]


def test_the_reader_sees_the_packages() -> None:
    top, deferred, typing = imports("pycutensor")
    assert "pycutensor.operation" in top["pycutensor.plan"]
    assert "pycutensor.plan" in top["pycutensor.operations._common"]
    assert (
        "pycutensor._lib" in deferred["pycutensor.smoke"]
    )  # a function-level import (lazy loader)
    top, deferred, typing = imports("pycudnn")
    assert "pycudnn.plan" in top["pycudnn.graph.graph"]  # Graph.build
    assert "pycudnn.opgraph" in top["pycudnn.plan.building"]
    assert "pycudnn.plan.autotuning" in typing["pycudnn.graph.graph"]  # Graph.autotune's type


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        # pycutensor (docs/cutensor.md): planning imports operation descriptors, kinds import planning
        ("pycutensor.tables", "pycutensor.checks"),
        ("pycutensor.checks", "pycutensor.operation"),
        ("pycutensor.operation", "pycutensor.plan"),
        ("pycutensor.preference", "pycutensor.plan"),
        ("pycutensor.plan", "pycutensor.operations"),
        ("pycutensor.handle", "pycutensor.preference"),
        # pycudnn (docs/design.md): planning imports the described graph, the public Graph
        # imports planning, planning calls verification; deviceprops builds on backend
        ("pycudnn.opgraph", "pycudnn.plan.building"),
        ("pycudnn.plan", "pycudnn.graph.graph"),
        ("pycudnn.verification.run", "pycudnn.plan.execution"),
        ("pycudnn.plan", "pycudnn.verification.suite"),
        ("pycudnn.opgraph.core", "pycudnn.opgraph.convolution"),
        ("pycudnn.backend", "pycudnn.deviceprops"),
        ("pycudnn._lib", "pycudnn.backend"),
    ],
)
def test_layers_point_one_way(lower: str, upper: str) -> None:
    every = _union(*imports(upper.split(".")[0]))
    assert lower in _reachable(every, upper)
    assert upper not in _reachable(every, lower)


#: What a function may import of the packages' own modules: the generated bindings (a module of
#: 500 KB that ``import pycudnn`` must not pay for), the library loaders and the raw layers built
#: on them. Everything else is imported at module level, where the reader sees it.
LAZY_MODULES = frozenset(
    {"_bindings", "_bindings_mp", "_bindings_mg", "_lib", "_lib_ext", "raw", "raw_mp", "raw_mg"}
)
#: Modules whose functions import the rest on use: the command lines say which Python lacks the
#: package's dependencies (NumPy, cuda-pathfinder) before they import the code that needs them.
LAZY_MODULES_OF = frozenset({"pycudnn.cli", "pycutensor.cli"})
#: (module, imported name) pairs a function imports for another reason, each with it.
LAZY_EXCEPTIONS = {
    # the runtime names format strings through pycudnn.layout only when a fmt is given, so that
    # pycutensor never loads a pycudnn module (_nvbind/formats.py resolves it on access)
    ("_nvbind.array_checks", "layout"),
}


@pytest.mark.parametrize("package", ["_nvbind", "pycudnn", "pycutensor"])
def test_functions_import_only_the_lazy_modules(package: str) -> None:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        module = _module_name(path)
        if module in LAZY_MODULES_OF:
            continue
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.ImportFrom):
                    continue
                top = (node.module or "").split(".")[0]
                if not node.level and top not in ("_nvbind", "pycudnn", "pycutensor"):
                    continue  # another package: optional (torch, cupy, tqdm) or heavy (cuda)
                last = (node.module or "").split(".")[-1]
                for alias in node.names:
                    if last in LAZY_MODULES or alias.name in LAZY_MODULES:
                        continue
                    if (module, alias.name) not in LAZY_EXCEPTIONS:
                        found.append(f"{module}:{node.lineno} imports {alias.name}")
    assert found == []
