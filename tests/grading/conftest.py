"""Shared set-up for the grading toolchain's tests.

The fixture lab (``fixtures/``: lab 99, its checks, its instructor and student
notebooks, six submissions) is data for these tests, never collected itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetlab.grading import session

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


@pytest.fixture
def fixture_lab(monkeypatch):
    """The fixture lab's checks (99.visibility, 99.dedupe), importable here and in kernels."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES))
    import fixture_checks

    return fixture_checks
