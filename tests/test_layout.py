"""The library's layout: the README's module map matches the tree, and no import cycle (not even a deferred one)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "fleetlab"


def module_map() -> dict[str, str]:
    """The README's layout table: first cell (names in backticks) -> second cell."""
    section = REPO.joinpath("README.md").read_text().split("### The library's layout", 1)[1].split("\n## ", 1)[0]
    table = section.split("\n\n")[1]  # the library's table; the distributions' table follows it
    rows = [line.split("|")[1:3] for line in table.splitlines() if line.startswith("| `")]
    return {name: what for names, what in rows for name in re.findall(r"`([^`]+)`", names)}


def modules_of(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}


def packages() -> set[str]:
    """Every package of the library as ``layer/`` or ``layer/package/``, but a check's lab and a probe's folder."""
    found = {f"{p.parent.relative_to(PACKAGE)}/" for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE}
    return {name for name in found if not name.startswith(("course/checks/lab", "backends/fidelity/probes/"))}


def test_every_package_is_in_the_module_map_and_the_top_holds_no_module():
    listed = set(module_map())
    assert packages() - listed == set(), "in the tree, missing from the README's module map"
    assert listed - packages() == set(), "in the README's module map, missing from the tree"
    assert modules_of(PACKAGE) == set(), "a module at the top of the library belongs in a layer"


def test_a_package_whose_row_names_its_modules_names_each_one_that_exists():
    for name, what in module_map().items():
        named = set(re.findall(r"`([a-z_]+)`(?= \(|,|:)", what))
        on_disk = modules_of(PACKAGE / name)
        if named & on_disk:  # the row names its modules
            assert named - on_disk == set(), f"{name}: named in the README, missing from the tree"
            assert on_disk - named == set(), f"{name}: in the tree, not named in the README"


def fleetlab_imports(path: Path, name: str) -> set[str]:
    """Every fleetlab module ``name`` imports anywhere: at module level, under TYPE_CHECKING, inside functions."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("fleetlab")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.startswith("fleetlab"):
                found.add(base)
                found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def import_graph() -> dict[str, set[str]]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return {name: fleetlab_imports(path, name) & names.keys() - {name} for name, path in names.items()}


def test_no_import_cycle():
    graph = import_graph()
    for name in graph:  # a module's package __init__ runs first: an edge from package to module is not a cycle
        graph[name] = {d for d in graph[name] if not name.startswith(d + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_the_layers_contract_fails_on_an_upward_import(tmp_path):
    """A copy of the library whose core imports the course layer breaks the contract make test runs."""
    import os
    import shutil
    import subprocess
    import sys

    for tree in ("src", "tools/src", "instructor/src"):
        shutil.copytree(REPO / tree, tmp_path / tree, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    units = tmp_path / "src" / "fleetlab" / "core" / "units.py"
    units.write_text(units.read_text().replace(
        "from __future__ import annotations\n", "from __future__ import annotations\n\nfrom fleetlab.course import lab\n", 1))
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(str(tmp_path / tree)
                                                               for tree in ("src", "tools/src", "instructor/src"))}
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(linter), "--no-cache"], cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stdout
    assert "fleetlab.core is not allowed to import fleetlab.course" in done.stdout
    assert "fleetlab.core.units -> fleetlab.course.lab" in done.stdout
