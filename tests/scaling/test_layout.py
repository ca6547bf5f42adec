"""The model and the simulator stay free of AWS and of the virtual clock: a fleet day must run in seconds."""

from __future__ import annotations

import ast
from pathlib import Path

import fleetlab.composition.scaling

PACKAGE = Path(fleetlab.composition.scaling.__file__).parent
HEAVY = ("boto3", "botocore", "moto", "time_machine")
TALKS_TO_A_BACKEND = {"realloop.py"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_only_the_real_loop_reaches_a_backend():
    for path in sorted(PACKAGE.glob("*.py")):
        imported = imported_modules(path)
        heavy = {name for name in imported if name.split(".")[0] in HEAVY}
        backend = {name for name in imported if name.startswith(("fleetlab.backends", "fleetlab.services"))}
        if path.name in TALKS_TO_A_BACKEND:
            assert backend, f"{path.name} should use the backend through fleetlab.backends"
            continue
        assert not heavy and not backend, f"{path.name} imports {sorted(heavy | backend)}"
