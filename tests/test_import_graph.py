"""The packages' module-level imports point one way: no module imports, directly or through
others, a module that imports it back.

Module level means what runs when a module is imported (``if TYPE_CHECKING:`` blocks excluded).
Imports inside functions are how a lower layer offers a convenience that lives higher up (for
example ``Graph.build`` calls :mod:`pycudnn.plan`, which imports the graph): they are allowed only
where listed in ``DEFERRED_UPWARD`` below, so that a new one is a decision, not an accident.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: (importing module, imported module) pairs allowed as function-level imports pointing back up.
DEFERRED_UPWARD = {
    ("pycudnn.graph.graph", "pycudnn.plan"),  # Graph.build, build_all, autotune, heuristics, ...
    ("pycudnn.graph.descriptors", "pycudnn.graph.lowering"),  # Graph.finalize builds them
    # verification plans a reference from another engine (planning imports verification to
    # check the plans it builds)
    ("pycudnn.verification.run", "pycudnn.plan"),
}


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


def imports(package: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Module-level and function-level imports between the modules of ``package``."""
    files = sorted((ROOT / package).rglob("*.py"))
    modules = {_module_name(p): p for p in files}
    top: dict[str, set[str]] = {m: set() for m in modules}
    deferred: dict[str, set[str]] = {m: set() for m in modules}

    def visit(
        module: str, is_package: bool, body: list[ast.stmt], level: dict[str, set[str]]
    ) -> None:
        for node in body:
            if isinstance(node, ast.If) and _is_type_checking(node):
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
    return top, deferred


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


@pytest.mark.parametrize("package", ["_nvbind", "pycudnn", "pycutensor"])
def test_module_level_imports_have_no_cycle(package: str) -> None:
    top, _ = imports(package)
    assert cycles(top) == []


@pytest.mark.parametrize("package", ["_nvbind", "pycudnn", "pycutensor"])
def test_function_level_imports_point_back_up_only_where_listed(package: str) -> None:
    top, deferred = imports(package)
    unlisted = []
    for module, targets in deferred.items():
        for target in targets:
            graph = {m: set(t) for m, t in top.items()}
            graph[module].add(target)
            closes_a_cycle = any(module in c and target in c for c in cycles(graph))
            if closes_a_cycle and (module, target) not in DEFERRED_UPWARD:
                unlisted.append((module, target))
    assert unlisted == []


def test_the_checker_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    # the old pycutensor layout: operations imported plan inside functions, plan imported
    # operations at module level; a deferred import closing a cycle is reported
    top = {"operations": {"tensor"}, "plan": {"operations"}, "tensor": set()}
    assert cycles({**top, "operations": {"tensor", "plan"}}) == [["operations", "plan"]]


def test_the_reader_sees_the_packages() -> None:
    top, deferred = imports("pycutensor")
    assert "pycutensor.operation" in top["pycutensor.plan"]
    assert "pycutensor.plan" in top["pycutensor.operations._common"]
    assert "pycutensor.operations" in deferred["pycutensor.smoke"]  # a function-level import
    top, deferred = imports("pycudnn")
    assert "pycudnn.plan" in deferred["pycudnn.graph.graph"]  # Graph.build
    assert "pycudnn.graph" in top["pycudnn.plan.building"]


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
        # pycudnn (docs/design.md): planning imports the graph; deviceprops builds on backend
        ("pycudnn.graph", "pycudnn.plan.building"),
        ("pycudnn.graph.core", "pycudnn.graph.convolution"),
        ("pycudnn.backend", "pycudnn.deviceprops"),
        ("pycudnn._lib", "pycudnn.backend"),
    ],
)
def test_layers_point_one_way(lower: str, upper: str) -> None:
    top, deferred = imports(upper.split(".")[0])
    assert lower in _reachable({m: top[m] | deferred[m] for m in top}, upper)
    assert upper not in _reachable(top, lower)
