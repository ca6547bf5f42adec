"""The sandbox that seals learner code (``fleetlab.course.judge.sandbox``), on its own."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest

from fleetlab.course.judge import sandbox

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(bool(sandbox.probe()), reason="no sandbox can be made on this machine")


def sealed(probe, view: sandbox.View, limits: sandbox.Limits = sandbox.Limits()) -> dict:
    """What ``probe()`` returns (JSON data) when run in a child sealed in ``view``; the child's exit code too."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            sandbox.seal(view, limits)
            os.write(write, json.dumps(probe()).encode())
        finally:
            os._exit(7)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        data = said.read()
    _, status = os.waitpid(pid, 0)
    return {"said": json.loads(data) if data else None, "exit": os.waitstatus_to_exitcode(status)}


def test_a_sealed_process_sees_its_view_and_nothing_else(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("hidden cases")

    def look():
        def writes(path):
            try:
                Path(path).write_text("x")
                return True
            except OSError:
                return False

        return {"pid": os.getpid(), "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                "secret": os.path.exists(str(secret)), "instructor": os.path.exists(str(REPO / "instructor")),
                "own": writes(own / "x"), "library": writes(REPO / "src" / "x"), "tmp": writes("/tmp/x"),
                "networks": [name for _, name in __import__("socket").if_nameindex()], "uid": os.getuid(),
                "processes_limit": resource.getrlimit(resource.RLIMIT_NPROC)[0]}

    result = sealed(look, sandbox.learner_view(writable=[str(own)]), sandbox.Limits(processes=64))
    said = result["said"]
    assert result["exit"] == 7
    assert said["pid"] == 2 and said["processes"] == [1, 2]
    assert (said["secret"], said["instructor"]) == (False, False)
    assert (said["own"], said["library"], said["tmp"]) == (True, False, True)
    assert said["networks"] == ["lo"] and said["processes_limit"] == 64
    assert said["uid"] != 0 and (own / "x").read_text() == "x"
    assert not (REPO / "src" / "x").exists()


def test_what_a_sealed_process_starts_ends_with_it():
    marker = f"stray-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        sandbox.seal(sandbox.learner_view())
        stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker],
                                 start_new_session=True)
        os.write(write, b"%d" % stray.pid)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        assert said.read() == b"3"  # init, the sealed process, then its stray: in a PID namespace of their own
    os.waitpid(pid, 0)  # the warden exits once init has, and init's end killed the stray in its own session
    assert not [process for process in psutil.process_iter(["cmdline"])
                if marker in (process.info["cmdline"] or ())]


def test_the_learners_view_holds_no_search_path_that_reaches_the_instructor_or_the_batches():
    python_path = os.pathsep.join(["/", tempfile.gettempdir(), str(REPO), str(REPO / "instructor" / "src"),
                                   str(REPO / "src"), str(REPO / "tests" / "grading")])
    view = sandbox.learner_view(python_path=python_path)
    assert str(REPO / "tests" / "grading") in view.read_only and str(REPO / "src") in view.read_only
    for refused in ("/", tempfile.gettempdir(), str(REPO), str(REPO / "instructor" / "src")):
        assert refused not in view.read_only
    assert any(path.endswith(".dist-info") and "instructor" in path for path in view.hidden)


def test_a_sandbox_that_forks_to_its_limit_leaves_another_its_own():
    """Processes are counted per sandbox (a uid of its own under a root caller, a user namespace of its own
    under an ordinary one): one learner's fork bomb never starves another's kernel."""
    def forks(count):
        made = 0
        for _ in range(count):
            try:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
            except OSError:
                break
            made += 1
        return made

    limits = sandbox.Limits(processes=20)
    read, write = os.pipe()
    bomb = os.fork()
    if bomb == 0:  # a sandbox that forks past its limit and holds its children while the other forks
        os.close(read)
        sandbox.seal(sandbox.learner_view(), limits)
        os.write(write, json.dumps(forks(100)).encode() + b"\n")  # its children hold the pipe: a line, not EOF
        os.close(write)
        time.sleep(30)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        bombed = json.loads(said.readline() or b"null")
    try:
        other = sealed(lambda: forks(15), sandbox.learner_view(), limits)
    finally:
        os.kill(bomb, 15)  # the warden passes it on: the bomb's namespace ends, its children with it
        os.waitpid(bomb, 0)
    assert bombed is not None and bombed < 20  # its limit stopped it
    assert other["said"] == 15  # and the other sandbox forked all it asked for meanwhile
