"""The troubleshooting page and the messages that point to it: each message is printed for real."""

import re
import socket
import stat
import subprocess
import warnings
from pathlib import Path

import pytest

import fleetlab
from fleetlab import Envelope
from fleetlab.backends.backend import open_backend
from fleetlab.composition.pipeline import DEEP_QUEUE, DeepQueueWarning
from fleetlab.core.errors import BackendUnavailable, InvalidInput
from fleetlab.course.grading.registry import get_check

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "troubleshooting.md"
LINK = re.compile(r"docs/troubleshooting\.md#([a-z0-9-]+)")


def slug(heading: str) -> str:
    """The anchor a markdown renderer (GitHub's rules) gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def page_anchors() -> set[str]:
    return {slug(line[3:]) for line in PAGE.read_text().splitlines() if line.startswith("## ")}


def linking_files() -> list[Path]:
    return [REPO / "Makefile", REPO / "README.md", *sorted((REPO / "src").rglob("*.py"))]


def test_every_link_to_the_page_names_an_entry_it_has():
    anchors = page_anchors()
    links = {(path.relative_to(REPO), anchor) for path in linking_files() for anchor in LINK.findall(path.read_text())}
    assert len(links) >= 5
    broken = sorted((str(path), anchor) for path, anchor in links if anchor not in anchors)
    assert not broken, f"links to entries docs/troubleshooting.md lacks: {broken}"


def test_the_readme_links_the_page():
    assert "docs/troubleshooting.md" in (REPO / "README.md").read_text()


def test_make_lab_on_a_busy_port_says_what_to_do():
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = subprocess.run(["make", "-s", "lab", f"LAB_PORT={port}", "LAB_FLAGS=--no-browser"], cwd=REPO,
                              capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert f"port {port} is already in use" in done.stdout
    assert "#port-already-in-use" in done.stdout


def test_make_with_an_old_python_says_what_to_do(tmp_path):
    old_python = tmp_path / "python3.9"
    old_python.write_text("#!/bin/sh\nexit 1\n")  # answers the version check like Python 3.9 does
    old_python.chmod(old_python.stat().st_mode | stat.S_IXUSR)
    done = subprocess.run(["make", "-s", "-B", ".venv/.installed", f"PYTHON={old_python}"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "fleetlab needs Python >= 3.11" in done.stdout and "#python-too-old" in done.stdout


def test_an_unreachable_localstack_is_named_with_its_fix(monkeypatch):
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    monkeypatch.setenv("LOCALSTACK_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(BackendUnavailable, match="LOCALSTACK_AUTH_TOKEN") as raised:
        open_backend("localstack")
    assert f"not reachable at http://127.0.0.1:{port}" in str(raised.value)


def test_a_check_id_a_stale_notebook_names_points_to_the_page():
    with pytest.raises(InvalidInput, match="#stale-student-notebook"):
        get_check("01.visibilty")


def steps(count: int) -> list[Envelope]:
    return [Envelope(trace_id=f"deep-{n}", conversation_id=str(n), step=1, agent_class="researcher")
            for n in range(count)]


def test_a_run_over_a_deep_queue_says_why_it_is_slow():
    lab = fleetlab.start("00", quiet=True)
    try:
        lab.fleet.enqueue(*steps(DEEP_QUEUE))
        with pytest.warns(DeepQueueWarning, match=f"{DEEP_QUEUE:,} steps are waiting") as caught:
            lab.fleet.run(max_polls=1)
        assert Path(caught[0].filename) == Path(__file__)  # it points at the caller's line
    finally:
        lab.close()


def test_a_shallow_queue_runs_without_the_warning():
    lab = fleetlab.start("00", quiet=True)
    try:
        lab.fleet.enqueue(*steps(10))
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeepQueueWarning)
            lab.fleet.run()
    finally:
        lab.close()
