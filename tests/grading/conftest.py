"""Shared set-up for the grading toolchain's tests.

The fixture lab (``fixtures/``: lab 99, its checks, its instructor and student
notebooks, six submissions) is data for these tests, never collected itself.
Every test runs with a registry of its own: checks a test registers (and the
fixture lab's) are gone after it, and no test edits ``sys.path``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fleetlab.course.grading import registry, session

FIXTURES = Path(__file__).parent / "fixtures"
collect_ignore = ["fixtures"]


def load_fixture_checks() -> ModuleType:
    """Run ``fixtures/fixture_checks.py`` afresh, then its instructor's side ``fixture_sides.py``.

    Lab 99 is registered in the current registry, its sides with the
    instructor's package. ``fixture_checks`` stays in ``sys.modules`` (its
    cases are handed over by module name, as a kernel imports them);
    ``fixture_sides`` only while it runs.
    """
    checks = _run_fixture("fixture_checks")
    try:
        _run_fixture("fixture_sides")
    finally:
        sys.modules.pop("fixture_sides", None)
    return checks


def _run_fixture(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def own_registry():
    """Checks registered during a test are forgotten after it."""
    with registry.isolated():
        yield


@pytest.fixture(autouse=True)
def fleetlab_home(tmp_path, monkeypatch):
    """Every test records progress in its own folder, never in ~/.fleetlab."""
    home = tmp_path / "fleetlab-home"
    monkeypatch.setenv("FLEETLAB_HOME", str(home))
    monkeypatch.delenv("FLEETLAB_EXPECT_CHECKS", raising=False)
    session.forget()
    yield home
    session.forget()


@pytest.fixture
def fixture_lab(monkeypatch):
    """The fixture lab's checks (99.visibility, 99.dedupe), registered here and importable in kernels.

    The kernels' path keeps the tests' own (a checkout run with PYTHONPATH set grades with its own library).
    """
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FIXTURES), os.environ.get("PYTHONPATH")])))
    return load_fixture_checks()
