"""Shared set-up for the grading toolchain's tests.

The fixture lab (``fixtures/``: lab 99, its checks, its instructor and student
notebooks, six submissions) is data for these tests, never collected itself.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from fleetlab.grading import registry, session

FIXTURES = Path(__file__).parent / "fixtures"
collect_ignore = ["fixtures"]


@pytest.fixture(autouse=True)
def fleetlab_home(tmp_path, monkeypatch):
    """Every test records progress in its own folder, never in ~/.fleetlab."""
    home = tmp_path / "fleetlab-home"
    monkeypatch.setenv("FLEETLAB_HOME", str(home))
    monkeypatch.delenv("FLEETLAB_EXPECT_CHECKS", raising=False)
    session.forget()
    yield home
    session.forget()


@pytest.fixture(autouse=True)
def checks_registered_here_stay_here(monkeypatch):
    """Checks a test registers (its own, or the fixture lab's) are forgotten after it.

    The shipped labs' checks are registered first: their modules register only when first imported.
    """
    for lab in registry.shipped_labs():
        registry.checks_of(lab)
    monkeypatch.setattr(registry, "_CHECKS", dict(registry._CHECKS))


@pytest.fixture
def fixture_lab(monkeypatch):
    """The fixture lab's checks (99.visibility, 99.dedupe), importable here and in kernels.

    Imported afresh for the test (so they register in its registry) and forgotten afterwards.
    """
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES))
    imported_before = sys.modules.pop("fixture_checks", None)
    try:
        yield importlib.import_module("fixture_checks")
    finally:
        sys.modules.pop("fixture_checks", None)
        if imported_before is not None:
            sys.modules["fixture_checks"] = imported_before
