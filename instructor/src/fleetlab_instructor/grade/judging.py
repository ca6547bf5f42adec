"""The grader's side of the judge (``fleetlab.course.judge.server``): hand it a notebook's answers, read its verdicts.

``JudgeServer`` runs one judge server for a batch and lets the grader's
threads share it. ``judge_answers`` hands one notebook's answers (the bytes
its kernel wrote, never opened here) and, through a pipe of their own, the
hidden cases to a fresh judge (no file holds them), reads the verdicts back
as JSON (from the server, never from a file), and when the judge was killed
in the middle of a check, judges the checks after it in another one; checks
that wait on the real clock are judged side by side.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from fleetlab.core.errors import FleetlabError
from fleetlab.course.judge import handover
from fleetlab.course.judge.server import ANSWERS
from fleetlab.course.grading.registry import Check

JUDGE_MODULE = "fleetlab.course.judge.server"
SERVER_RESTARTS = 1
"""Times a notebook is judged afresh when the judge server dies while judging it (the server is started again)."""
REPLY_GRACE = 30.0
"""Seconds past a judge's own limit the server has to say it ended (it kills the judge at the limit)."""
MAX_EVENT = 2**20
"""The longest verdict line the grader reads (characters); a verdict's diagnoses are capped far below it."""
MAX_REPLY = 16 * 2**20
"""The longest reply line the grader reads from the server (bytes): all of one judge's verdict lines."""


class JudgeStopped(FleetlabError):
    """The judge server did not start, or stopped: no verdict can come from it."""


@dataclass(frozen=True)
class Ended:
    """How one judge ended: its exit code, whether it was killed for running past its time, and the lines it
    wrote to its verdicts' pipe (JSON events, see ``fleetlab.course.judge.server``)."""

    exit: int
    timed_out: bool
    events: tuple[str, ...] = ()


class JudgeServer:
    """One judge server (``python -m fleetlab.course.judge.server``) in ``env``, shared by the grader's threads.

    A context manager: the block's end stops it. With ``sealed`` its judges
    seal every answer process in a sandbox. ``run(folder, seconds, request)``
    judges the answers in ``folder`` in a fresh judge, handing it ``request``
    through a pipe, and waits for that judge to end.
    """

    def __init__(self, env: Mapping[str, str], cwd: Path, *, startup: float = 60, sealed: bool = False) -> None:
        self._env, self._cwd, self._startup = dict(env), cwd, startup
        self._sealed = sealed
        self._process: subprocess.Popen[bytes] | None = None
        self._requests: socket.socket | None = None
        self._guard = threading.Lock()
        self._waiting: dict[str, tuple[threading.Event, dict[str, Any], subprocess.Popen[bytes]]] = {}
        self._ready = threading.Event()

    def __enter__(self) -> JudgeServer:
        with self._guard:
            self._launch()  # its imports overlap the first kernels' cells
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, folder: Path, seconds: float, request: bytes) -> Ended:
        """Judge the answers in ``folder`` as ``request`` says, in a fresh judge, for at most ``seconds``.
        Raises JudgeStopped."""
        done, reply = threading.Event(), {}
        with self._guard:
            process = self._started()
            self._waiting[str(folder)] = (done, reply, process)
            pipe_read, pipe_write = os.pipe()
            try:
                socket.send_fds(self._requests, [json.dumps({"folder": str(folder), "seconds": seconds}).encode()],
                                [pipe_read])
            except OSError as exc:
                del self._waiting[str(folder)]
                os.close(pipe_write)
                raise JudgeStopped(f"the judge server stopped ({exc})") from None
            finally:
                os.close(pipe_read)
        threading.Thread(target=_hand_over, args=(pipe_write, request), name="fleetlab-judge-request",
                         daemon=True).start()
        if not done.wait(seconds + REPLY_GRACE):
            process.kill()  # a server that no longer answers is replaced at the next request
            raise JudgeStopped(f"the judge server did not answer within {seconds + REPLY_GRACE:g} s")
        if "exit" not in reply:
            raise JudgeStopped("the judge server stopped while judging")
        return Ended(int(reply["exit"]), bool(reply["timed_out"]), tuple(map(str, reply.get("events", ()))))

    def close(self) -> None:
        """Stop the server (its judges still running are killed). Idempotent."""
        with self._guard:
            process, self._process = self._process, None
            requests, self._requests = self._requests, None
        if requests is not None:
            requests.close()
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _started(self) -> subprocess.Popen[bytes]:
        """The running server, ready; started now if there is none or it died (an answer may kill it)."""
        if self._process is None or self._process.poll() is not None:
            self._launch()
        if not self._ready.wait(self._startup) or self._process.poll() is not None:
            self._process.kill()
            raise JudgeStopped(f"the judge server did not start within {self._startup:g} s")
        return self._process

    def _launch(self) -> None:
        """Start a server process and the thread that reads its replies; it says "ready" once it has imported."""
        self._ready.clear()
        if self._requests is not None:
            self._requests.close()
        self._requests, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self._process = subprocess.Popen(
                [sys.executable, "-m", JUDGE_MODULE, *(["--sealed"] if self._sealed else [])], stdin=theirs,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self._env, cwd=self._cwd,
            )
        threading.Thread(target=self._read, args=(self._process,), name="fleetlab-judge-replies", daemon=True).start()

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        """Hand each reply to the thread waiting for it; when the server ends, wake every waiter empty-handed."""
        for line in _lines(process.stdout, MAX_REPLY):
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(message, dict):
                continue
            if "ready" in message:
                self._ready.set()
                continue
            with self._guard:
                done, reply, _ = self._waiting.pop(message["folder"], (None, None, None))
            if done is not None:
                reply.update(message)
                done.set()
        with self._guard:
            orphans = [folder for folder, (_, _, server) in self._waiting.items() if server is process]
            waiting = [self._waiting.pop(folder)[0] for folder in orphans]
        for done in waiting:
            done.set()


@dataclass
class Verdicts:
    """What the judge said of one notebook: per check id its verdict (plain JSON data), and what went wrong."""

    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    withheld: bool = False


def judge_answers(server: JudgeServer, folder: Path, checks: Sequence[Check], answers: bytes,
                  seconds: float) -> Verdicts:
    """Judge ``answers`` (a kernel's ``hand_in`` file, as bytes) on ``checks`` (with their hidden cases).

    ``folder`` is this notebook's own. A check whose cases wait on the real
    clock (``Check.real_time``) is judged by a judge of its own, the others
    together by one more, all side by side within ``seconds``
    (``judge_in_turn``); their verdicts are joined.
    """
    groups = [[check] for check in checks if check.real_time]
    groups += [rest] if (rest := [check for check in checks if not check.real_time]) else []
    if len(groups) <= 1:
        return judge_in_turn(server, folder, checks, answers, seconds)
    with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="fleetlab-judge-group") as pool:
        apart = list(pool.map(lambda n: judge_in_turn(server, folder / f"group-{n}", groups[n], answers, seconds),
                              range(len(groups))))
    verdicts = Verdicts()
    for one in apart:
        verdicts.checks.update(one.checks)
        verdicts.errors.extend(one.errors)
        verdicts.withheld = verdicts.withheld or one.withheld
    return verdicts


def judge_in_turn(server: JudgeServer, folder: Path, checks: Sequence[Check], answers: bytes,
                  seconds: float) -> Verdicts:
    """Judge ``checks`` one after another, starting in one judge.

    ``folder`` is this judge's own; the answers go there, its verdicts come
    back through the server. A judge killed in the middle of a check leaves
    that check failed and the next judge takes the checks after it, within
    ``seconds`` in all. When the server itself dies, the checks are judged
    again from the start by a new one (``SERVER_RESTARTS`` times).
    """
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + seconds
    verdicts = Verdicts()
    remaining = [check for check in checks]
    restarts = SERVER_RESTARTS
    while remaining:
        (folder / ANSWERS).write_bytes(answers)  # anew for each judge: a killed one's answer may have written there
        try:
            ended = server.run(folder, max(0.0, deadline - time.monotonic()), request_for(remaining))
        except JudgeStopped:
            if not restarts:
                raise
            restarts -= 1  # the server died under this notebook, through no fault of its: judged again, afresh
            verdicts, remaining, deadline = Verdicts(), list(checks), time.monotonic() + seconds
            continue
        started = _read_results(ended.events, verdicts)
        if verdicts.withheld or verdicts.errors:
            return verdicts
        if ended.timed_out:
            verdicts.errors.append(f"grading timed out after {seconds:g} s")
            return verdicts
        if started is not None:
            verdicts.checks[started] = _stopped(ended.exit)
        left = [check for check in remaining if check.id not in verdicts.checks]
        if left and started is None and (ended.exit != 0 or len(left) == len(remaining)):
            verdicts.errors.append(f"the judge ended (exit code {ended.exit}) without judging {left[0].id}")
            return verdicts
        remaining = left
    return verdicts


def request_for(checks: Sequence[Check]) -> bytes:
    """What a judge needs to judge ``checks``: their ids, the modules that register them, their hidden cases."""
    modules = sorted({check.harness.__module__ for check in checks})
    request = {"checks": [check.id for check in checks], "modules": modules,
               "hidden": handover.encode({check.id: check.hidden for check in checks})}
    return json.dumps(request).encode("utf-8")


def _hand_over(pipe: int, request: bytes) -> None:
    """Write ``request`` into the judge's pipe and close it (the judge reads it once it has forked its zygote)."""
    try:
        with open(pipe, "wb") as written:
            written.write(request)
    except OSError:
        pass  # the judge is gone: its server says so


def _read_results(events: Sequence[str], verdicts: Verdicts) -> str | None:
    """Add the judge's verdicts (``events``, one JSON line each) to ``verdicts``; the check it started and never
    finished, if any."""
    started = None
    for line in events:
        if len(line) > MAX_EVENT:
            continue  # no verdict is this long: read as a line cut short
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a killed judge
        if not isinstance(event, dict):
            continue
        if "start" in event:
            started = str(event["start"])
        elif "check" in event:
            check_id = str(event["check"])
            if check_id in verdicts.checks:
                verdicts.withheld = True
                verdicts.errors.append(f"the judge reported {check_id} twice; scores withheld")
                return None
            verdicts.checks[check_id] = event
            started = None
        elif "unreadable" in event:
            verdicts.errors.append(f"the answers could not be read ({event['unreadable']})")
            return None
        elif "broken" in event:
            verdicts.errors.append(f"grading failed ({event['broken']})")
            return None
    return started


def _lines(stream: BinaryIO, limit: int) -> Iterator[bytes]:
    """The lines of ``stream`` up to ``limit`` bytes each; a longer line is read past and left out."""
    while line := stream.readline(limit):
        if line.endswith(b"\n"):
            yield line
            continue
        while (rest := stream.readline(limit)) and not rest.endswith(b"\n"):
            pass


def _stopped(exit_code: int) -> dict[str, Any]:
    how = f"killed by signal {-exit_code}" if exit_code < 0 else f"exit code {exit_code}"
    return {"status": "fail", "cases": [],
            "diagnosis": f"your code stopped the process that ran it ({how}); a check calls your code, "
                         "so it must return (or raise), never exit or kill its process"}
