"""The import structure of rfbench, read from the source (AST, nothing imported): the library never imports the
command layer, and no two modules import each other, directly or through others.

What counts as an import: every ``import`` / ``from ... import`` statement that can run, at module level or
inside a function. A function-level import still makes the two modules depend on each other; it only hides the
cycle from the interpreter until the function runs (both cycles this test was written for,
``settings`` ↔ ``commands._common`` and ``datasets.manifest`` ↔ ``datasets.tree``, were function-level).
Imports under ``if TYPE_CHECKING:`` never run and do not count. ``from package import name`` counts as an
import of ``package.name`` when that is a module, else of ``package``; the root package ``rfbench`` (whose
``__init__`` maps public names to their modules lazily) is not a node.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rfbench"
#: The command layer and the modules allowed to import it.
COMMANDS = "rfbench.commands"
MAY_IMPORT_COMMANDS = ("rfbench.commands", "rfbench.cli", "rfbench.__main__")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(source: str, name: str, is_package: bool, modules) -> list[tuple[str, int, bool]]:
    """``(imported module, line, inside a function)`` for every import statement of one module that can run."""
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for sub in child.orelse:
                    visit_one(sub, in_function)
                continue
            visit_one(child, in_function)

    def visit_one(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno, in_function) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((full if full in modules else base, node.lineno, in_function))
        visit(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), False)
    return out


def import_graph(root: Path) -> dict[str, dict[str, list[tuple[int, bool]]]]:
    """``{module: {imported rfbench module: [(line, inside a function), ...]}}`` for the package under root."""
    paths = {module_name(p, root): p for p in sorted((root / "rfbench").rglob("*.py"))}
    graph: dict[str, dict[str, list[tuple[int, bool]]]] = {name: {} for name in paths}
    for name, path in paths.items():
        for target, line, in_function in imports_of(path.read_text(encoding="utf-8"), name,
                                                    path.name == "__init__.py", paths):
            while target and target not in paths:
                target = target.rpartition(".")[0]
            if target and target not in (name, "rfbench"):
                graph[name].setdefault(target, []).append((line, in_function))
    return graph


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(found)


def describe(graph, component: list[str]) -> str:
    edges = []
    for a in component:
        for b, where in sorted(graph[a].items()):
            if b in component:
                line, in_function = where[0]
                edges.append(f"{a} -> {b} (line {line}{', in a function' if in_function else ''})")
    return "; ".join(edges)


def command_layer_importers(graph) -> list[str]:
    """Each import of the command layer by a module outside it (and outside cli.py and __main__.py)."""
    return [f"{name} imports {target} (line {where[0][0]})"
            for name, targets in sorted(graph.items()) for target, where in sorted(targets.items())
            if (target == COMMANDS or target.startswith(COMMANDS + "."))
            and not any(name == m or name.startswith(m + ".") for m in MAY_IMPORT_COMMANDS)]


@functools.lru_cache(maxsize=1)
def rfbench_graph():
    """The import graph of this checkout, read once for the module's tests."""
    return import_graph(ROOT)


def test_no_library_module_imports_the_command_layer():
    offenders = command_layer_importers(rfbench_graph())
    assert offenders == [], ("the library must not import the command layer (ARCHITECTURE.md); move what it "
                             "needs out of rfbench/commands/: " + "; ".join(offenders))


def test_the_import_graph_has_no_cycle():
    graph = rfbench_graph()
    found = cycles(graph)
    assert found == [], "import cycles (module-level or in a function): " + " | ".join(
        describe(graph, c) for c in found)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("files, expected", [
    # the two cycles this test was written for, as they were: each through an import inside a function
    ({"rfbench/__init__.py": "", "rfbench/commands/__init__.py": "",
      "rfbench/settings.py": "def f():\n    from rfbench.commands._common import finite_float\n",
      "rfbench/commands/_common.py": "def g():\n    from rfbench.settings import declared_flags\n"},
     [["rfbench.commands._common", "rfbench.settings"]]),
    ({"rfbench/__init__.py": "", "rfbench/datasets/__init__.py": "",
      "rfbench/datasets/manifest.py": "def f():\n    from rfbench.datasets.tree import display_path\n",
      "rfbench/datasets/tree.py": "def g():\n    from rfbench.datasets.manifest import value_sort_key\n"},
     [["rfbench.datasets.manifest", "rfbench.datasets.tree"]]),
    # through a third module, relative imports, `from package import module`
    ({"rfbench/__init__.py": "", "rfbench/a/__init__.py": "",
      "rfbench/a/x.py": "from . import y\n", "rfbench/a/y.py": "from .z import thing\n",
      "rfbench/a/z.py": "import rfbench.a.x\n"},
     [["rfbench.a.x", "rfbench.a.y", "rfbench.a.z"]]),
    # not cycles: an import only for type checkers, and imports of the root package
    ({"rfbench/__init__.py": "from rfbench.a import b\n", "rfbench/a/__init__.py": "",
      "rfbench/a/b.py": "from typing import TYPE_CHECKING\nfrom rfbench import __version__\n"
                        "if TYPE_CHECKING:\n    from rfbench.a.c import C\n",
      "rfbench/a/c.py": "from rfbench.a.b import B\n"},
     []),
])
def test_the_walk_finds_cycles_the_interpreter_would_not(tmp_path, files, expected):
    assert cycles(import_graph(_write(tmp_path, files))) == expected


def test_the_walk_finds_a_library_module_importing_a_command(tmp_path):
    root = _write(tmp_path, {"rfbench/__init__.py": "", "rfbench/commands/__init__.py": "",
                             "rfbench/commands/_common.py": "", "rfbench/report/__init__.py": "",
                             "rfbench/report/x.py": "def f():\n    from rfbench.commands import _common\n",
                             "rfbench/cli.py": "from rfbench.commands import _common\n",
                             "rfbench/commands/parse.py": "from rfbench.commands._common import guard\n"})
    assert command_layer_importers(import_graph(root)) == ["rfbench.report.x imports rfbench.commands._common (line 2)"]
