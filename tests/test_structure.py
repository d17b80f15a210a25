"""The harness's shape: no import cycles (imports inside functions included), no module over
600 lines, no function over 80 or class over 300, at most 5 modules at the top level, a docstring
for every folder, no command module importing another, and docs/DESIGN.md's module table naming
exactly the modules that exist."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "serverbench"
MAX_LINES = 600
MAX_FUNCTION, MAX_CLASS = 80, 300
MAX_TOP_LEVEL = 5  # besides __init__.py and __main__.py: model (with loadgen_json), store, paths (issue 50)


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


def _too_long(tree: ast.AST) -> list[str]:
    out = []
    for n in ast.walk(tree):
        limit = MAX_CLASS if isinstance(n, ast.ClassDef) else (
            MAX_FUNCTION if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
        if limit is not None and (lines := n.end_lineno - n.lineno + 1) > limit:
            out.append(f"{n.name} ({lines} lines)")
    return out


def test_the_length_check_sees_a_long_function() -> None:
    long = "def f():\n" + "    x = 1\n" * MAX_FUNCTION
    assert _too_long(ast.parse(long)) == [f"f ({MAX_FUNCTION + 1} lines)"]


def test_no_function_over_80_lines_no_class_over_300() -> None:
    long = {m: found for m, p in modules().items() if (found := _too_long(ast.parse(p.read_text())))}
    assert long == {}, f"split these: {long}"


def test_the_top_level_holds_at_most_5_modules() -> None:
    top = sorted(p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"{len(top)} modules at serverbench/'s top level: move some into a folder: {top}"


def test_every_folder_says_what_it_owns_and_may_import() -> None:
    for init in sorted(PKG.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert doc.count("\n") >= 2, f"{init.relative_to(ROOT)}: say what the folder owns in its docstring"
        assert "May import" in doc, f"{init.relative_to(ROOT)}: say what the folder may import (a 'May import:' line)"

# The folders in the order data flows (docs/DESIGN.md's table of folders): each imports only the
# shared vocabulary and the folders before it; the CLI's modules sit above them all.
FOLDERS = ["tls", "h2", "catalog", "rules", "processes", "database", "verify", "overtime", "cluster", "run", "crosscheck", "results", "seeds", "cost",
           "charts", "exporters", "cli"]
VOCABULARY = {"paths", "model", "loadgen_json", "store"}


def _place(mod: str) -> int | None:
    """A module's place in the flow: -1 for the vocabulary, its folder's index, None for the package's
    entry points (serverbench/__init__.py, __main__.py)."""
    part = mod.split(".")[1] if mod.count(".") else ""
    if part in VOCABULARY:
        return -1
    return FOLDERS.index(part) if part in FOLDERS else None


def test_the_folder_order_names_every_folder() -> None:
    assert sorted(FOLDERS) == sorted(p.parent.name for p in PKG.glob("*/__init__.py"))


def test_folders_import_only_the_vocabulary_and_folders_before_them() -> None:
    upward = []
    for mod, targets in import_graph().items():
        here = _place(mod)
        for t in targets:
            there = _place(t)
            if here is not None and (there is None or there > here):
                upward.append(f"{mod} → {t}")
    assert upward == [], "imports against the flow: " + ", ".join(sorted(upward))


MEASURING = ("run", "processes", "cluster", "crosscheck")


def test_reports_import_nothing_from_the_measuring_folders() -> None:
    """results/ and exporters/ read what a run stored and the pure rules (rules/), never the code that
    measures: a report must render on a machine that cannot run a load."""
    reaching = sorted(f"{mod} → {t}" for mod, targets in import_graph().items()
                      if mod.split(".")[1:2] in (["results"], ["exporters"])
                      for t in targets if t.split(".")[1:2] and t.split(".")[1] in MEASURING)
    assert reaching == [], "reports reach into measuring: " + ", ".join(reaching)


# cli/'s modules that are not commands: the app (which registers every command module) and the helpers
# the commands share. A command module imports only these, never another command module.
CLI_NOT_COMMANDS = {"serverbench.cli", "serverbench.cli.app", "serverbench.cli.common", "serverbench.cli.console",
                    "serverbench.cli.steps", "serverbench.cli.views"}


def _command_imports(graph: dict[str, set[str]]) -> list[str]:
    commands = {m for m in graph if m.startswith("serverbench.cli.") and m not in CLI_NOT_COMMANDS}
    return sorted(f"{m} → {t}" for m in commands for t in graph[m] if t in commands)


def test_no_command_module_imports_another() -> None:
    assert _command_imports(import_graph()) == [], "commands importing commands: " + ", ".join(_command_imports(import_graph()))


def test_the_command_rule_sees_a_command_importing_another() -> None:
    graph = {"serverbench.cli.run": {"serverbench.cli.verify", "serverbench.cli.common"}, "serverbench.cli.verify": set(),
             "serverbench.cli.common": set()}
    assert _command_imports(graph) == ["serverbench.cli.run → serverbench.cli.verify"]
