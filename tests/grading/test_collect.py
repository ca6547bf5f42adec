"""Hand out, collect, hand back through home folders (as on The Littlest JupyterHub), and the hub's refusals.

The whole day on a real hub is ``tests/test_hub_day.py`` (``make test-hub``); here the same steps run
on folders, where a learner's links and odd names can be made, and the hub's token and address
errors are met against a stand-in on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fleetlab.cli import main
from fleetlab.core.errors import BackendUnavailable, ConfigError, InvalidInput
from fleetlab_instructor.collect.exchange import collect, hand_out, return_feedback
from fleetlab_instructor.collect.manifest import MANIFEST, read_manifest
from fleetlab_instructor.collect.room import HomeFolders, Hub, choose
from fleetlab_instructor.grade.submissions import take_in

NOTEBOOK = "01_at_least_once.ipynb"
LEARNERS = ("alice", "h.o@example.org", ".dot")


def notebook(marker: str) -> bytes:
    return json.dumps({"cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": marker}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


@pytest.fixture
def homes(tmp_path) -> Path:
    """Three homes under ``jupyter-<name>``, each with lab 01 saved; alice also has an Untitled.ipynb."""
    for learner in LEARNERS:
        (tmp_path / f"jupyter-{learner}" / "labs").mkdir(parents=True)
        (tmp_path / f"jupyter-{learner}" / "labs" / NOTEBOOK).write_bytes(notebook(learner))
    (tmp_path / "jupyter-alice" / "labs" / "Untitled.ipynb").write_bytes(notebook("stray"))
    return tmp_path


def room_of(homes: Path) -> HomeFolders:
    return HomeFolders(str(homes / "jupyter-{username}"))


def test_collect_lays_out_one_escaped_folder_per_learner_that_grade_reads_and_names_what_it_left_out(homes, tmp_path):
    room = room_of(homes)
    manifest, report = collect(room, choose(room, ()), ["01"], tmp_path / "out", "deadline", None)
    folders = {entry.learner: entry.folder for entry in manifest.notebooks}
    assert folders == {"alice": "alice", "h.o@example.org": "h.o@example.org", ".dot": "%2Edot"}
    assert not any(entry.late for entry in manifest.notebooks)
    assert [(item.learner, item.path) for item in manifest.left_out] == [("alice", "labs/Untitled.ipynb")]
    assert report.problems == ["alice: labs/Untitled.ipynb: not collected, names no lab (NN_ at its start)"]
    intake = take_in([tmp_path / "out"])
    assert sorted(sub.learner for sub in intake.submissions) == sorted(folders.values()) and not intake.notes
    assert read_manifest(tmp_path / "out").learner_of("%2Edot") == ".dot"


def test_a_later_collect_marks_late_only_what_differs_from_the_deadlines_snapshot(homes, tmp_path):
    room = room_of(homes)
    collect(room, choose(room, ()), ["01"], tmp_path / "deadline", "deadline", None)
    (homes / "jupyter-alice" / "labs" / NOTEBOOK).write_bytes(notebook("alice, after the deadline"))
    (homes / "jupyter-h.o@example.org" / "labs" / NOTEBOOK).touch()  # a new file time, the same bytes
    manifest, _ = collect(room, choose(room, ()), ["01"], tmp_path / "final", "final", tmp_path / "deadline")
    assert {entry.learner: entry.late for entry in manifest.notebooks} == {
        "alice": True, "h.o@example.org": False, ".dot": False}
    assert manifest.on_time["run"] == "deadline"
    saved = read_manifest(tmp_path / "final")
    assert saved.late(f"alice/{NOTEBOOK}") and not saved.late(f"%2Edot/{NOTEBOOK}")
    assert saved.lateness() == {("alice", "01"): 1}  # collected within a day of the deadline's collect


def test_collect_follows_no_link_a_learner_made_and_refuses_a_used_folder(homes, tmp_path):
    secret = tmp_path / "secret.ipynb"
    secret.write_bytes(notebook("someone else's"))
    linked = homes / "jupyter-alice" / "labs" / NOTEBOOK
    linked.unlink()
    linked.symlink_to(secret)
    room = room_of(homes)
    manifest, _ = collect(room, ["alice"], ["01"], tmp_path / "out", "deadline", None)
    assert manifest.notebooks == [] and not (tmp_path / "out" / "alice").exists()
    assert ("alice", f"labs/{NOTEBOOK}") in [(item.learner, item.path) for item in manifest.left_out]
    with pytest.raises(InvalidInput, match="--out"):
        collect(room, ["alice"], ["01"], tmp_path / "out", "again", None)


def test_feedback_goes_to_each_learners_own_home_and_a_stray_file_to_no_one(homes, tmp_path):
    room = room_of(homes)
    manifest, _ = collect(room, choose(room, ()), ["01"], tmp_path / "out", "day1", None)
    feedback = tmp_path / "feedback"
    feedback.mkdir()
    for entry in manifest.notebooks:
        (feedback / f"{entry.folder.replace('%', '%25')}.md").write_text(f"for {entry.learner}")
    (feedback / "mallory.md").write_text("for mallory")
    report = return_feedback(room, tmp_path / "out", feedback, choose(room, ()))
    assert report.problems == ["mallory.md: returned to no one (no learner of collect 'day1' has it)"]
    for learner in LEARNERS:
        returned = homes / f"jupyter-{learner}" / "feedback"
        assert [path.name for path in returned.iterdir()] == ["day1.md"]
        assert (returned / "day1.md").read_text() == f"for {learner}"
    assert sorted(path.name for path in homes.glob("jupyter-*/**/*.md")) == ["day1.md"] * len(LEARNERS)


def test_feedback_is_not_written_through_a_link_in_the_learners_home(homes, tmp_path):
    room = room_of(homes)
    collect(room, ["alice"], ["01"], tmp_path / "out", "day1", None)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (homes / "jupyter-alice" / "feedback").symlink_to(elsewhere)
    (tmp_path / "feedback").mkdir()
    (tmp_path / "feedback" / "alice.md").write_text("for alice")
    report = return_feedback(room, tmp_path / "out", tmp_path / "feedback", ["alice"])
    assert report.done == [] and report.problems[0].startswith("alice: feedback not returned")
    assert list(elsewhere.iterdir()) == []


def test_handout_gives_the_releases_notebooks_and_keeps_a_learners_own(homes, tmp_path):
    release = tmp_path / "release"
    (release / "labs").mkdir(parents=True)
    for name in (NOTEBOOK, "02_idempotency_keys.ipynb"):
        (release / "labs" / name).write_bytes(notebook("release"))
    report = hand_out(room_of(homes), ["alice"], release)
    assert report.done == ["alice: 1 notebooks handed out, 1 kept as the learner has them"]
    labs = homes / "jupyter-alice" / "labs"
    assert (labs / NOTEBOOK).read_bytes() == notebook("alice")
    assert (labs / "02_idempotency_keys.ipynb").read_bytes() == notebook("release")
    (release / "labs" / "solutions").mkdir()
    with pytest.raises(InvalidInput, match="RELEASE"):
        hand_out(room_of(homes), ["alice"], release)


class StandIn(BaseHTTPRequestHandler):
    """A hub's ``/hub/api/user`` answering for a token that may only read users."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"name": "reader", "kind": "service", "scopes": ["read:users", "list:users"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        """Quiet."""


def test_the_hub_names_a_missing_token_one_without_the_scopes_and_an_address_that_is_none_or_unreachable():
    with pytest.raises(ConfigError, match="--token: missing"):
        Hub("http://127.0.0.1:9", "")
    with pytest.raises(InvalidInput, match="--hub: is '127.0.0.1:8000', not an http"):
        Hub("127.0.0.1:8000", "a-token")
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        with pytest.raises(ConfigError, match=r"--token: the token of 'reader' lacks the scopes servers .*access:servers"):
            Hub(f"http://127.0.0.1:{server.server_port}", "a-token")
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    with pytest.raises(BackendUnavailable, match=r"--hub: http://127.0.0.1:\d+ is unreachable"):
        Hub(f"http://127.0.0.1:{server.server_port}", "a-token")


def test_the_commands_name_the_room_option_and_an_unknown_learner(homes, tmp_path, capsys):
    assert main(["collect", "--labs", "01", "--out", str(tmp_path / "out")]) == 2
    assert "--hub" in capsys.readouterr().err
    template = str(homes / "jupyter-{username}")
    assert main(["collect", "--labs", "01", "--out", str(tmp_path / "out"), "--homes", template,
                 "--learner", "zed"]) == 2
    assert "'zed' is not a learner" in capsys.readouterr().err
    assert main(["collect", "--labs", "01", "--out", str(tmp_path / "out"), "--homes", template]) == 0
    assert (tmp_path / "out" / MANIFEST).is_file()
