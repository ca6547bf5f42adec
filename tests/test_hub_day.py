"""The facilitator's day on a real JupyterHub (deploy/jupyterhub/): hand out, collect, grade, hand back, export.

The hub is the room of ``test_jupyterhub`` (its configuration, the dummy authenticator, one local
process per learner, everything on 127.0.0.1), with three learners whose homes start empty. The
facilitator's steps are the ``fleetlab`` commands, run as a facilitator runs them, with the hub's
API token in the environment; the learners' own steps (saving a notebook, an ``Untitled.ipynb``
made from JupyterLab's launcher) are the requests JupyterLab makes to their server's Contents API.
The learners' servers run as one system user here, so what each finds in their home is checked
through their own server's API, as they would see it. The day ends with the exports: the gradebook
adjusted for the late learner (a tenth of the lab's points per day begun), Canvas's import and each
learner's Gradescope results.json.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from test_jupyterhub import NOTEBOOK, SERVER_START, TOKEN, call, reference_answer, running_hub, until

pytestmark = pytest.mark.hub  # only with -m hub: `make test-hub`, which .ci/run runs

RIGHT, WRONG, LATE = "ada_k", "bo-x9", "h.o@example.org"
"""Three hub users: one answers lab 01 right, one wrong, one right but only after the deadline's collect."""
LEARNERS = (RIGHT, WRONG, LATE)
FLEETLAB = Path(sys.executable).with_name("fleetlab")
EXERCISE_STUB = "    # YOUR CODE HERE\n    raise NotImplementedError\n"
WRONG_VISIBILITY = "    return max(step_times)\n"
"""A wrong answer to 01.visibility: the slowest step, with no margin over it."""
COMMAND_TIME = 600
"""Seconds a facilitator's command may take (grading three notebooks is the longest)."""
LATE_PENALTY = 0.1
"""The facilitator's penalty: a tenth of a late lab's points per day begun."""
ROSTER = ("Student,ID,SIS User ID,SIS Login ID,Section,Lab 01 (4401)\n"
          "Points Possible,,,,,4.00\n"
          f"\"Kay, Ada\",101,u-101,{RIGHT},Tue,\n"
          f"\"Xu, Bo\",102,u-102,{WRONG},Tue,\n"
          f"\"Ortiz, Hana\",103,u-103,{LATE},Wed,\n")
"""The gradebook a facilitator exports from Canvas: the three learners, matched by their SIS Login ID."""


def fleetlab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``fleetlab ARGS`` as a facilitator runs it, the hub's API token in its environment."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("FLEETLAB_", "JUPYTER"))}
    began = time.monotonic()
    done = subprocess.run([str(FLEETLAB), *args], cwd=cwd, env={**environ, "JUPYTERHUB_API_TOKEN": TOKEN},
                          capture_output=True, text=True, timeout=COMMAND_TIME)
    print(f"fleetlab {' '.join(args[:2])}: {time.monotonic() - began:.1f} s")  # shown with -s: where the day's time goes
    return done


def succeeded(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, f"{done.args[1:3]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def answered(notebook: dict, answers: dict[str, str]) -> dict:
    """``notebook`` with the stub of each exercise cell whose check is a key of ``answers`` replaced by its value."""
    changed = copy.deepcopy(notebook)
    for cell in changed["cells"]:
        source = "".join(cell["source"])
        for check_id, body in answers.items():
            if cell["cell_type"] == "code" and f'check("{check_id}"' in source:
                assert EXERCISE_STUB in source, f"lab 01's exercise cell of {check_id} has no stub to replace"
                cell["source"] = source.replace(EXERCISE_STUB, body)
    return changed


def reference_body(check_id: str) -> str:
    """The reference answer's lines between its solution markers."""
    source = reference_answer(check_id)
    return source.split("### BEGIN SOLUTION\n", 1)[1].split("    ### END SOLUTION\n", 1)[0]


class Learner:
    """A learner at their JupyterLab: requests to their own server only."""

    def __init__(self, hub, name: str) -> None:
        self.hub, self.name = hub, name
        self.server = f"{hub.public}/user/{quote(name, safe='@')}/api/contents"

    async def save(self, notebook: dict) -> None:
        await call(f"{self.server}/labs/{NOTEBOOK}", "PUT", {"type": "notebook", "content": notebook})

    async def listing(self, folder: str) -> list[str]:
        return sorted(item["name"] for item in (await call(f"{self.server}/{folder}"))["content"])

    async def text(self, path: str) -> str:
        return (await call(f"{self.server}/{path}?type=file&format=text"))["content"]


async def server_of(hub, name: str) -> dict | None:
    return (await call(f"{hub.api}/users/{quote(name, safe='')}"))["servers"].get("")


async def log_in(hub, names) -> None:
    """Start these learners' servers (as logging in does) and wait until each is ready; remember their PIDs."""
    await asyncio.gather(*(call(f"{hub.api}/users/{quote(name, safe='')}/server", "POST", {}) for name in names))

    async def ready(name: str):
        server = await server_of(hub, name)
        if server and server.get("state", {}).get("pid"):
            hub.started(server["state"]["pid"])
        return server and server.get("ready")

    deadline = time.monotonic() + SERVER_START
    for name in names:
        await until(f"{name}'s server", deadline, lambda name=name: ready(name))


async def log_out(hub, names) -> None:
    """Stop these learners' servers and wait until the hub says each is stopped."""
    await asyncio.gather(*(call(f"{hub.api}/users/{quote(name, safe='')}/server", "DELETE") for name in names))
    deadline = time.monotonic() + SERVER_START
    for name in names:
        await until(f"{name}'s server to stop", deadline, lambda name=name: _stopped(hub, name))


async def _stopped(hub, name: str) -> bool:
    return await server_of(hub, name) is None


def run(coroutine):
    """Run ``coroutine`` to its end in a thread of its own (see test_jupyterhub's ``room``)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def test_the_facilitators_day_hand_out_collect_grade_and_hand_back(tmp_path):
    began = time.monotonic()
    with running_hub(tmp_path / "hub", handed_out=()) as hub:
        desk = tmp_path / "desk"
        desk.mkdir()

        async def hub_answers():
            return await call(f"{hub.api}/")

        run(until("the hub's API", time.monotonic() + 60, hub_answers))
        run(call(f"{hub.api}/users", "POST", {"usernames": list(LEARNERS)}))

        # The week before: the release, handed to every learner's (stopped) server, left stopped.
        succeeded(fleetlab("release", str(desk / "release"), "--course", str(Path(__file__).parents[1]), cwd=desk))
        handed = succeeded(fleetlab("handout", str(desk / "release"), "--hub", hub.public, cwd=desk))
        assert all(f"{name}: 8 notebooks handed out" in handed for name in LEARNERS), handed
        assert all(run(server_of(hub, name)) is None for name in LEARNERS), "handout left a server running"

        # The day: each learner logs in, finds the release, and saves their own lab 01.
        room = {name: Learner(hub, name) for name in LEARNERS}
        run(log_in(hub, LEARNERS))
        release_text = (desk / "release" / "labs" / NOTEBOOK).read_text(encoding="utf-8")
        assert all(run(learner.text(f"labs/{NOTEBOOK}")) == release_text for learner in room.values())
        handed_out = json.loads(release_text)
        right = answered(handed_out, {"01.visibility": reference_body("01.visibility"),
                                      "01.heartbeat": reference_body("01.heartbeat")})
        run(room[RIGHT].save(right))
        run(room[WRONG].save(answered(handed_out, {"01.visibility": WRONG_VISIBILITY})))
        run(room[LATE].save(answered(handed_out, {"01.visibility": WRONG_VISIBILITY})))
        run(call(f"{room[WRONG].server}/labs", "POST", {"type": "notebook"}))  # JupyterLab's launcher: Untitled
        assert "Untitled.ipynb" in run(room[WRONG].listing("labs"))
        run(log_out(hub, [RIGHT]))  # gone home before the deadline: collect starts the server

        # The deadline: the on-time snapshot. Then one learner finishes after it, and a later collect.
        succeeded(fleetlab("collect", "--hub", hub.public, "--labs", "01", "--run", "deadline",
                           "--out", str(desk / "deadline"), cwd=desk))
        assert run(server_of(hub, RIGHT)) is None, "collect left the server it started running"
        run(room[LATE].save(right))
        final = succeeded(fleetlab("collect", "--hub", hub.public, "--labs", "01", "--run", "final",
                                   "--on-time", str(desk / "deadline"), "--out", str(desk / "final"), cwd=desk))
        assert "1 late" in final, final

        manifest = json.loads((desk / "final" / "fleetlab-collect.json").read_text(encoding="utf-8"))
        assert manifest["on_time"]["run"] == "deadline"
        assert {(entry["learner"], entry["path"], entry["lab"], entry["run"], entry["late"])
                for entry in manifest["notebooks"]} == {
            (name, f"{name}/{NOTEBOOK}", "01", "final", name == LATE) for name in LEARNERS}
        for entry in manifest["notebooks"]:
            assert (desk / "final" / entry["path"]).is_file() and len(entry["sha256"]) == 64
        assert [(item["learner"], item["path"]) for item in manifest["left_out"]] == [(WRONG, "labs/Untitled.ipynb")]

        # Grading the later collect: the late learner's right answer, the wrong one's points.
        succeeded(fleetlab("grade", str(desk / "final"), "--out", str(desk / "grades.csv"), "--run", "final",
                           cwd=desk))
        with open(desk / "grades.csv", encoding="utf-8", newline="") as book:
            totals = {row["learner"]: float(row["total"]) for row in csv.DictReader(book)}
        most = totals.pop("Points Possible")
        assert totals[RIGHT] == totals[LATE] == most and totals[WRONG] < most, totals

        # Hand back: each learner finds their own feedback in their own home, and nobody else's.
        succeeded(fleetlab("feedback", "return", str(desk / "feedback"), "--collected", str(desk / "final"),
                           "--hub", hub.public, cwd=desk))
        assert run(server_of(hub, RIGHT)) is None, "feedback return left the server it started running"
        run(log_in(hub, [RIGHT]))
        for name, learner in room.items():
            assert run(learner.listing("feedback")) == ["final.md"]
            feedback = run(learner.text("feedback/final.md"))
            assert feedback.startswith(f"# Feedback for {name}\n"), feedback[:200]
            assert not [other for other in LEARNERS if other != name and other in feedback], feedback
        run(log_out(hub, LEARNERS))

        # Export: the late lab loses a tenth of its points (one day begun since the deadline's collect).
        expected = {RIGHT: most, WRONG: totals[WRONG], LATE: round(most * (1 - LATE_PENALTY), 2)}
        succeeded(fleetlab("gradebook", "adjust", str(desk / "grades.csv"), "--collected", str(desk / "final"),
                           "--late-penalty", str(LATE_PENALTY), "--out", str(desk / "adjusted.csv"), cwd=desk))
        with open(desk / "adjusted.csv", encoding="utf-8", newline="") as book:
            adjusted = {row["learner"]: (float(row["total"]), row["late"]) for row in csv.DictReader(book)}
        assert adjusted == {"Points Possible": (most, ""), RIGHT: (most, ""), WRONG: (totals[WRONG], ""),
                            LATE: (expected[LATE], "01: 1 d")}, adjusted
        (desk / "roster.csv").write_text(ROSTER, encoding="utf-8")
        succeeded(fleetlab("gradebook", "canvas", str(desk / "adjusted.csv"), "--roster", str(desk / "roster.csv"),
                           "--out", str(desk / "canvas.csv"), cwd=desk))
        with open(desk / "canvas.csv", encoding="utf-8", newline="") as imported:
            header, maxima, *students = list(csv.reader(imported))
        assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 01 (4401)"]
        assert maxima[0] == "Points Possible" and float(maxima[-1]) == most
        assert {row[3]: float(row[-1]) for row in students} == expected
        for name in LEARNERS:
            results_file = desk / f"results-{name}.json"
            succeeded(fleetlab("gradebook", "gradescope", str(desk / "final.shard-1-of-1.json"), "--learner", name,
                               "--collected", str(desk / "final"), "--late-penalty", str(LATE_PENALTY),
                               "--out", str(results_file), cwd=desk))
            results = json.loads(results_file.read_text(encoding="utf-8"))
            assert results["score"] == expected[name], (name, results["score"])
            assert ("late: 01: 1 d" in results["output"]) == (name == LATE), results["output"]
            assert sum(test["score"] for test in results["tests"]) == (most if name != WRONG else totals[WRONG])
    print(f"the facilitator's day on a real hub took {time.monotonic() - began:.0f} s")
