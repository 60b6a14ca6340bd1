"""The architecture, checked: imports point one way, pedro_env <- agents <- arena <- train and table
(function-level imports included), and nothing in the repository links outside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT

# package -> the project packages it may import (besides itself)
LAYERS = {
    "pedro_env": set(),
    "agents": {"pedro_env"},
    "arena": {"pedro_env", "agents"},
    "train": {"pedro_env", "agents", "arena"},
    "table": {"pedro_env", "agents", "arena"},
}
PROJECT = set(LAYERS) | {"tools"}


def imported_packages(path: Path) -> set[tuple[str, int]]:
    """(top-level project package, line) of every import in ``path``, wherever it sits."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update((name.split(".")[0], node.lineno) for name in names if name.split(".")[0] in PROJECT)
    return found


@pytest.mark.parametrize("package", list(LAYERS))
def test_imports_point_one_way(package: str) -> None:
    allowed = LAYERS[package] | {package}
    wrong = [
        f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
        for path in sorted((REPO_ROOT / package).rglob("*.py"))
        for name, line in sorted(imported_packages(path))
        if name not in allowed
    ]
    assert not wrong, f"{package} may import only {sorted(allowed)}: " + "; ".join(wrong)


def test_the_layer_check_catches_a_wrong_arrow(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text("def late():\n    from train.ppo import Trainer\n    return Trainer\n")
    assert imported_packages(module) == {("train", 2)}


def test_nothing_in_the_repository_links_outside_it() -> None:
    outside = re.compile(r"\.\./shared|shared/RULES\.md")
    relative_link = re.compile(r"\]\((\.\./[^)\s]*)\)")
    tracked = [
        path
        for pattern in ("*.md", "*.py", "*.ipynb", "*.yaml", "*.toml")
        for path in REPO_ROOT.rglob(pattern)
        if ".venv" not in path.parts and path.name != "test_layout.py"
    ]
    wrong = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for path in tracked
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if outside.search(line)
        or any(REPO_ROOT not in (path.parent / target).resolve().parents for target in relative_link.findall(line))
    ]
    assert not wrong, "links outside the repository: " + ", ".join(wrong)


def module_graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports (function-level imports included)."""
    graph: dict[str, set[str]] = {}
    for package in LAYERS:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
            imported = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    imported.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    for alias in node.names:  # "from pedro_env import exchange" imports the submodule
                        submodule = f"{node.module}.{alias.name}"
                        is_module = (REPO_ROOT / submodule.replace(".", "/")).with_suffix(".py").is_file()
                        imported.add(submodule if is_module else node.module)
            graph[name] = {module for module in imported if module.split(".")[0] in LAYERS and module != name}
    return graph


def test_no_module_imports_itself_round_a_cycle() -> None:
    graph = module_graph()
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycle = path[path.index(module) :] + [module]
            pytest.fail("an import cycle: " + " -> ".join(cycle))
        if module in done or module not in graph:
            return
        for imported in sorted(graph[module]):
            visit(imported, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
