"""The map in CONTRIBUTING.md is true: every module of the package is on it, and imports go down it.

The table under "Where things are" lists the modules in order, one row a layer (a file, several
files, or a folder); a module imports only from rows above its own, or from its own row without a
circle. Every import counts, lazy or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "envsolve"


def _rows() -> list[list[str]]:
    """CONTRIBUTING's map: each row's module names (``lock/`` for a folder, ``cli.py`` for a file)."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    table = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and "`" in cells[1]:
            rows.append(re.findall(r"`([\w/.]+)`", cells[1]))
    return rows


def _modules() -> dict[str, Path]:
    """Dotted names relative to the package (``lock.job``) -> file, packages' ``__init__`` as the folder."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out[".".join(parts)] = path
    return out


def _row_of(module: str, rows: list[list[str]]) -> int:
    """The row that holds ``module``: its file's row, else its folder's."""
    as_file = module.replace(".", "/") + ".py"
    top = module.split(".")[0] + "/"
    for i, names in enumerate(rows):
        if as_file in names or top in names:
            return i
    return -1


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports, lazy and ``TYPE_CHECKING`` imports included."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("envsolve"):
                source = (node.module or "").removeprefix("envsolve").lstrip(".")
            else:
                continue
            for alias in node.names:
                name = f"{source}.{alias.name}".lstrip(".")
                found.add(name if name in modules else source)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("envsolve.") for a in node.names if a.name.startswith("envsolve."))
    return {m for m in found if m in modules and m != module}


def test_every_module_is_on_the_map() -> None:
    rows = _rows()
    missing = [m for m in _modules() if _row_of(m, rows) < 0 and m != "__main__"]
    assert not missing, f"CONTRIBUTING.md's map does not name: {missing}"
    named = {n for names in rows for n in names}
    gone = [n for n in named if not (PACKAGE / n).exists()]
    assert not gone, f"CONTRIBUTING.md's map names what is not in the tree: {gone}"


def test_imports_go_down_the_map() -> None:
    rows, modules = _rows(), _modules()
    up = []
    for module, path in modules.items():
        if module == "__main__":
            continue
        mine = _row_of(module, rows)
        up += [f"{module} -> {other}" for other in _imports(module, path, modules)
               if _row_of(other, rows) > mine and other.split(".")[0] != module.split(".")[0]]
    assert not up, "imports up the map: " + ", ".join(sorted(up))


def test_no_import_circle() -> None:
    modules = _modules()
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    # a package's __init__ re-exports its modules: an edge to the package is an edge to them
    state: dict[str, int] = {}
    circle: list[str] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1 and not circle:
                circle.extend(trail[trail.index(nxt):] + [node, nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not circle, "import circle: " + " -> ".join(circle)


def test_nothing_imports_the_command_line() -> None:
    modules = _modules()
    users = [m for m, p in modules.items() if "cli" in _imports(m, p, modules) and m != "__main__"]
    assert not users


@pytest.mark.parametrize("module", ["lock.job", "solve.search", "host.doctor"])
def test_the_map_reader_sees_imports(module: str) -> None:
    # a guard on the reader itself: these modules import from other rows
    modules = _modules()
    assert _imports(module, modules[module], modules)
