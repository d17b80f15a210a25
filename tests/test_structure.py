"""The harness's shape: no import cycles (imports inside functions included), no module over
600 lines, and docs/DESIGN.md's module table naming exactly the modules that exist."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "serverbench"
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """module -> the serverbench modules it imports anywhere in its body."""
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node)
                # `from pkg import sub` imports the submodule sub; `from mod import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:  # `import serverbench.x.y` names y's module
                    t = t.rpartition(".")[0]
                if t and t != mod and t != "serverbench":
                    graph[mod].add(t)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    assert "serverbench.exporters.to_html" in graph["serverbench.exporters"]  # imported inside _html()


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_no_module_over_600_lines() -> None:
    long = {m: n for m, p in modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these modules: {long}"


def test_design_doc_names_exactly_the_modules() -> None:
    text = (ROOT / "docs" / "DESIGN.md").read_text()
    table = text.split("## Python package `serverbench`", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `([\w/]+\.py)` \|", table, re.M))
    existing = {str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if p.name not in ("__main__.py",)
                and not (p.name == "__init__.py" and p.parent == PKG)}
    assert existing - named == set(), f"modules missing from docs/DESIGN.md's table: {sorted(existing - named)}"
    assert named - existing == set(), f"docs/DESIGN.md's table names modules that do not exist: {sorted(named - existing)}"
