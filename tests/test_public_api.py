"""The declared public API: lab notebooks import only what a few documented modules export in ``__all__``."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

import fleetlab

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(path for path in REPO.glob("labs/**/*.ipynb") if ".ipynb_checkpoints" not in path.parts)


def code_of(notebook: Path) -> list[tuple[int, ast.Module]]:
    """Each code cell's parsed source (IPython's % and ! lines left out), numbered from 1 at the top."""
    cells = json.loads(notebook.read_text())["cells"]
    parsed = []
    for number, cell in enumerate(cells, start=1):
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).splitlines()
            parsed.append((number, ast.parse("\n".join(l for l in lines if not l.lstrip().startswith(("%", "!"))))))
    return parsed


def exported(module: str) -> set[str]:
    return set(importlib.import_module(module).__all__)


def outside_the_public_api(tree: ast.Module) -> list[str]:
    """Every import from, or attribute reached through, a fleetlab module that is not public."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fleetlab"):
            if node.module not in fleetlab.PUBLIC_MODULES:
                found.append(f"from {node.module} import ...")
            else:
                found += [f"{node.module}.{a.name}" for a in node.names if a.name not in exported(node.module)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names
                      if alias.name.startswith("fleetlab") and alias.name not in fleetlab.PUBLIC_MODULES]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "fleetlab":
            reached = _attribute_chain(node, tree)
            if reached:
                found.append(reached)
    return found


def _attribute_chain(node: ast.Attribute, tree: ast.Module) -> str | None:
    """``fleetlab.X`` or ``fleetlab.<public module>.X`` is fine; anything else is named."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    chain = ["fleetlab", node.attr]
    while isinstance(parents.get(node), ast.Attribute):
        node = parents[node]
        chain.append(node.attr)
    for length in range(len(chain) - 1, 0, -1):
        module = ".".join(chain[:length])
        if module in fleetlab.PUBLIC_MODULES:
            return None if chain[length] in exported(module) else ".".join(chain[: length + 1])
    return ".".join(chain)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: str(path.relative_to(REPO)))
def test_a_lab_notebook_imports_only_from_the_public_modules(notebook):
    for number, tree in code_of(notebook):
        assert outside_the_public_api(tree) == [], f"cell {number} reaches past the public API"


def test_a_notebook_reaching_past_the_public_api_is_caught():
    tree = ast.parse("import fleetlab\nfrom fleetlab.services.sqs.worker import QueueWorker\n"
                     "from fleetlab.display import no_such_name\nfleetlab.core.errors.Timeout\nfleetlab.Timeout")
    assert outside_the_public_api(tree) == [
        "from fleetlab.services.sqs.worker import ...", "fleetlab.display.no_such_name", "fleetlab.core",
    ]


@pytest.mark.parametrize("module", fleetlab.PUBLIC_MODULES)
def test_every_public_name_resolves(module):
    imported = importlib.import_module(module)
    missing = [name for name in imported.__all__ if not hasattr(imported, name)]
    assert missing == []


def test_the_readme_lists_the_public_modules_in_one_screen():
    screen = REPO.joinpath("README.md").read_text().split("## The library in one screen", 1)[1].split("\n## ", 1)[0]
    assert [module for module in fleetlab.PUBLIC_MODULES if f"`{module}`" not in screen] == []
