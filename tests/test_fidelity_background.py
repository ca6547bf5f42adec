"""A lab's set-up cell never measures the fidelity table: with none cached, another process measures it, once.

One real measurement (moto, in a child process) for the module; the second start and everything after it
must read that table, so measuring again here fails the test.
"""

from __future__ import annotations

import os

import pytest

import fleetlab
from fleetlab.backends.fidelity import background, cache
from fleetlab.backends.fidelity.cache import cache_path


def _no_measuring(backend):
    raise AssertionError("measured in the lab's own process")


@pytest.fixture
def cold_home(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETLAB_HOME", str(tmp_path))
    monkeypatch.delenv("FLEETLAB_FIDELITY_CACHE", raising=False)
    monkeypatch.delenv("FLEETLAB_GRADED", raising=False)
    monkeypatch.setenv("FLEETLAB_BACKEND", "moto")
    monkeypatch.setattr(cache.probes, "measure", _no_measuring)
    return tmp_path


def test_a_cold_start_measures_in_another_process_once_and_the_next_start_reads_the_cache(cold_home, capsys):
    lab = fleetlab.start("06")
    try:
        banner = capsys.readouterr().out
        assert "where moto differs from AWS: being measured once for this version, in the background" in banner
        path = cache_path(lab.backend)
        assert background.marker(path).exists()
        running = list(background._children)
        assert background.start(lab.backend, path) is True  # a second start while one runs starts nothing
        assert background._children == running
        table = lab.fidelity()  # waits for the other process; measures nothing here
        assert path.exists() and not background.marker(path).exists()
        assert table.divergences()
    finally:
        lab.close()
    again = fleetlab.start("06")
    try:
        banner = capsys.readouterr().out
        assert f"where moto differs from AWS ({len(table.divergences())}):" in banner
        assert "in the background" not in banner
    finally:
        again.close()


def test_a_graded_kernel_measures_in_its_own_process(cold_home, monkeypatch, capsys):
    monkeypatch.setenv("FLEETLAB_GRADED", "1")
    measured = []
    monkeypatch.setattr(cache.probes, "measure", lambda backend: measured.append(backend.name) or ())
    monkeypatch.setattr(background, "start", lambda *a: pytest.fail("a graded kernel started a measurement"))
    lab = fleetlab.start("06")
    lab.close()
    assert measured == ["moto"]
    assert "in the background" not in capsys.readouterr().out


def test_a_marker_whose_process_is_gone_is_taken_over(tmp_path):
    held = background.marker(tmp_path / "fidelity-moto-0.json")
    held.write_text(str(os.getpid()))
    assert background._running(held)
    held.write_text("999999999")  # no such process
    assert not background._running(held)
