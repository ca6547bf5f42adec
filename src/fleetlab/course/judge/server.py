"""The judge: the verdict on a graded notebook's answers, computed where no learner code ever runs.

The grader (``fleetlab_instructor.grade.judging``) starts this module as a
process (``python -m fleetlab.course.judge.server``) in the kernels'
environment (no credentials), with the instructor's package refused on import
in its own process (the answers it calls run elsewhere, sealed, where that
package is absent). That server imports the library, boto3, moto and every
shipped check once, starts no thread, and forks one judge per request (a
notebook's checks; a check that waits on the real clock gets a request of its
own), so a judge starts in milliseconds and shares nothing with another's.

Each request is one packet on the server's stdin (a Unix socket):
``{"folder": ..., "seconds": ...}`` and the read end of a pipe. The server
never reads that pipe: the judge it forks does, after it has forked its
zygote, so no answer process inherits what comes through it: the checks to
judge, the modules that register them and the hidden cases, handed over by
the grader (no file holds them). The folder holds ``ANSWERS`` (what the
kernel's ``session.hand_in`` wrote: untrusted). The judge runs each check's
harness and cases itself; the learner's answers are rebuilt and called in a
process of their own (``answerhost``), reached through proxies that carry
data only (``peer``), so no answer can change the harness, a case or a
verdict. The judge writes one JSON line per event to a pipe only the server
holds: ``{"start": id}`` before a check runs, then ``{"check": id, "status",
"diagnosis", "cases"}`` (a hidden case's name left out), or
``{"unreadable": why}`` for answers it cannot read, or ``{"broken": kind}``
when the judge itself failed. When the judge ends the server answers
``{"folder", "exit", "timed_out", "events"}`` on stdout, ``events`` being
those lines; a judge past its ``seconds`` is killed with its process group.
The server, its judges and the grader keep their memory and open files from
other processes of their user (``keep_memory_private``); with ``--sealed``,
every answer process is sealed in a sandbox (``fleetlab.course.judge.sandbox``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import importlib.abc
import json
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from fleetlab.course.grading import learner, registry, shortcuts
from fleetlab.course.grading.registry import Case, Check
from fleetlab.course.judge import handover, sandbox
from fleetlab.course.judge.answerhost import AnswerHost
from fleetlab.course.judge.proxies import warm_clients
from fleetlab.course.grading.results import CaseResult, CheckResult, CheckStatus, not_yet, refused
from fleetlab.course.grading.runner import CheckBackend, run_check
from fleetlab.course.grading.session import refused_borrowed

ANSWERS = "answers.json"
HOME = "home"
"""The child's home and working folder, inside the request's folder."""


class InstructorRefused(importlib.abc.MetaPathFinder):
    """Refuses to import the instructor's package: an answer cannot take the answers from it."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        package = learner.INSTRUCTOR_PACKAGE
        if fullname == package or fullname.startswith(package + "."):
            raise ModuleNotFoundError(
                f"{fullname} is the instructor's side of fleetlab (hidden cases, reference answers): an answer "
                "cannot use it, and one that does scores nothing; write your own", name=fullname)


PR_SET_DUMPABLE = 4


def keep_memory_private() -> bool:
    """Make this process non-dumpable (Linux): other processes of its user can no longer read or write its
    memory, or open its files and pipes through ``/proc``. Inherited by a fork. False where it cannot be set."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        return False


# --- one notebook's verdict --------------------------------------------------------------------------------------


def judge_folder(folder: Path, request_pipe: int, results: TextIO, *, sealed: bool = False) -> None:
    """Judge the answers in ``folder`` as the request read from ``request_pipe`` (a file descriptor, closed
    here) says; write each check's verdict to ``results`` as soon as it is known. With ``sealed``, each answer
    process is sealed in a sandbox (``AnswerHost``)."""
    with AnswerHost(sealed=sealed) as answers:  # first: it forks, and this process runs one thread only until now
        with os.fdopen(request_pipe, "rb") as pipe:
            request = json.loads(pipe.read().decode("utf-8"))
        for module in request["modules"]:
            importlib.import_module(module)
        hidden = handover.decode(request["hidden"])
        try:
            handed_in = read_answers((folder / ANSWERS).read_bytes())
        except (OSError, ValueError) as exc:
            _write(results, {"unreadable": str(exc)})
            return
        with CheckBackend() as backends:
            for check_id in request["checks"]:
                _write(results, {"start": check_id})
                verdict = judge_one(registry.get_check(check_id), hidden.get(check_id, ()), handed_in.get(check_id),
                                    backends, answers)
                _write(results, {"check": check_id, **verdict})


def read_answers(data: bytes) -> dict[str, dict[str, str]]:
    """The answers ``session.hand_in`` wrote, by check id; ValueError when ``data`` is not such a file."""
    try:
        answers = json.loads(data.decode("utf-8"))["answers"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"the answers handed over are not the grader's format ({type(exc).__name__})") from None
    if not isinstance(answers, dict) or not all(
        isinstance(entry, dict) and all(isinstance(value, str) for value in entry.values()) for entry in answers.values()
    ):
        raise ValueError("the answers handed over are not the grader's format (an entry is not text)")
    return answers


def judge_one(check: Check, hidden: Iterable[Case], entry: Mapping[str, str] | None,
              backends: CheckBackend, answers: AnswerHost) -> dict[str, Any]:
    """The verdict on one handed-over answer (``entry``), hidden cases included, as plain data. The answer is
    rebuilt and called in ``answers``' process; the cases run and are judged here."""
    if entry is None:
        missing = f"no `{check.answer_name}` defined" if check.answer_name else "its check() cell never ran"
        return {"status": str(CheckStatus.NOT_YET), "diagnosis": f"not attempted: {missing}", "cases": []}
    if "pickle" not in entry:
        return _plain(refused(check, entry.get("unpicklable", "the answer was not handed over"), graded=True))
    loaded = answers.load(check.id, entry["pickle"], check.implemented_by)
    if loaded.kind == "unfinished":
        return _plain(not_yet(check, graded=True))
    if loaded.kind == "borrowed":
        return _plain(refused_borrowed(check, loaded.detail, graded=True))
    if loaded.kind != "ok":
        return _plain(refused(check, loaded.detail, graded=True))
    if built_by := [name for name in entry.get("shortcut", "").split(", ") if name in check.implemented_by]:
        return _plain(shortcuts.refused_shortcut(check, built_by, graded=True))  # data its cells built so
    result = run_check(check.with_hidden(tuple(hidden)), loaded.value, include_hidden=True, backends=backends,
                       reload=lambda: answers.load(check.id, entry["pickle"], check.implemented_by).value)
    if taken := [name for name in answers.shortcuts() if name in check.implemented_by]:
        return _plain(shortcuts.refused_shortcut(check, taken, graded=True))
    return _plain(result)


def _plain(result: CheckResult) -> dict[str, Any]:
    return {"status": str(result.status), "diagnosis": result.diagnosis,
            "cases": [_plain_case(case) for case in result.cases]}


def _plain_case(case: CaseResult) -> dict[str, Any]:
    """One case's verdict; a hidden case's name (it may state its input) is left out."""
    return {"name": "" if case.hidden else case.name, "hidden": case.hidden, "status": str(case.status),
            "diagnosis": case.diagnosis, "mistake": case.mistake}


def _write(results: Any, event: dict[str, Any]) -> None:
    results.write(json.dumps(event) + "\n")
    results.flush()


# --- the fork server ------------------------------------------------------------------------------------------------


@dataclass
class _Child:
    folder: str
    deadline: float
    results: int  # the read end of the pipe the judge writes its verdicts to
    said: bytearray = field(default_factory=bytearray)
    timed_out: bool = False


WARM_CALLS = {"sqs": "list_queues", "dynamodb": "list_tables", "stepfunctions": "list_state_machines",
              "events": "list_event_buses", "s3": "list_buckets", "iam": "list_roles",
              "sts": "get_caller_identity"}
"""One call per service the library uses: moto imports a service's emulation on its first call (Step Functions'
takes seconds), so the server makes it once and every judge it forks starts with it imported."""


def preload() -> None:
    """Import what every judge needs once, in the server: the runner, boto3, moto and its emulation of each
    service, jsonschema (the envelopes' validator imports it on first use) and every shipped check. Leaves no
    backend open and no thread running, and what it made frozen out of the collector's reach (``gc.freeze``)."""
    import cloudpickle  # noqa: F401
    import jsonschema  # noqa: F401  # with its format extras, about 2 s of CPU each judge would pay again

    from fleetlab.backends.backend import open_backend

    for lab in registry.shipped_labs():
        registry.checks_of(lab)
    backend = open_backend("moto")
    try:
        for service, call in WARM_CALLS.items():
            getattr(backend.client(service), call)()
    finally:
        backend.close()
    warm_clients()  # the answer processes' clients, built from loaded models
    gc.freeze()  # a forked judge's collector never walks the server's objects, so it never copies their pages


def serve(requests: socket.socket | None, replies: BinaryIO, *, sealed: bool = False) -> None:
    """Fork a judge for every request packet read from ``requests``; answer on ``replies`` as each one ends.

    Runs until ``requests`` closes, then kills the judges still running.
    Raises RuntimeError when a thread runs here (a fork would copy its locks).
    """
    if threading.active_count() != 1:
        raise RuntimeError(f"the judge server runs {threading.active_count()} threads; it must fork with one")
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so a child's end writes to the wakeup pipe
    children: dict[int, _Child] = {}
    _reply(replies, {"ready": os.getpid()})
    try:
        while True:
            listening = [requests, wake_read, *(child.results for child in children.values() if child.results >= 0)]
            readable, _, _ = select.select(listening, [], [], _next_wait(children))
            if wake_read in readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
            for child in children.values():
                if child.results in readable:
                    _take_results(child)
            if requests in readable:
                packet, pipes, _, _ = socket.recv_fds(requests, 65536, 1)
                if not packet:
                    return
                request = json.loads(packet)
                try:
                    pid, results = _fork(Path(request["folder"]), pipes[0], (wake_read, wake_write), sealed)
                finally:
                    for pipe in pipes:
                        os.close(pipe)
                children[pid] = _Child(request["folder"], time.monotonic() + float(request["seconds"]), results)
            _kill_overdue(children)
            _reap(children, replies)
    finally:
        for pid, child in children.items():
            _kill(pid)
            if child.results >= 0:
                os.close(child.results)


def _take_results(child: _Child) -> bool:
    """Read what the judge wrote so far; at its end of file, close the pipe. False once nothing more is there."""
    try:
        chunk = os.read(child.results, 65536)
    except BlockingIOError:
        return False
    if chunk:
        child.said += chunk
        return True
    os.close(child.results)
    child.results = -1
    return False


def _next_wait(children: Mapping[int, _Child]) -> float | None:
    deadlines = [child.deadline for child in children.values() if not child.timed_out]
    return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None


def _fork(folder: Path, request_pipe: int, wake: tuple[int, int], sealed: bool) -> tuple[int, int]:
    """Fork a judge for ``folder``: its pid, and the read end of the pipe it writes its verdicts to (only the
    server holds that pipe: no file a learner's code could find carries a verdict)."""
    results_read, results_write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(results_write)
        os.set_blocking(results_read, False)
        with contextlib.suppress(OSError):  # the child may have set its group already
            os.setpgid(pid, pid)
        return pid, results_read
    code = 1
    os.close(results_read)
    results = os.fdopen(results_write, "w", encoding="utf-8")
    try:
        _become_judge(folder, wake)
        judge_folder(folder, request_pipe, results, sealed=sealed)
        code = 0
    except BaseException as exc:  # the judge's own failure: its kind only, a message may quote a hidden input
        with contextlib.suppress(BaseException):
            _write(results, {"broken": type(exc).__name__})
    finally:
        with contextlib.suppress(BaseException):
            results.flush()
        os._exit(code)  # never back into the server's loop, whatever happened


def _become_judge(folder: Path, wake: tuple[int, int]) -> None:
    """In the forked child: its own process group, no server pipes, output discarded, home in ``folder``."""
    os.setpgid(0, 0)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in wake:
        os.close(fd)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    home = folder / HOME
    home.mkdir(exist_ok=True)
    os.chdir(home)
    os.environ["HOME"] = str(home)


def _kill_overdue(children: Mapping[int, _Child]) -> None:
    now = time.monotonic()
    for pid, child in children.items():
        if not child.timed_out and now >= child.deadline:
            child.timed_out = True
            _kill(pid)


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _reap(children: dict[int, _Child], replies: BinaryIO) -> None:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            child = children.pop(pid)
            with contextlib.suppress(OSError):  # whatever the judge started in its group goes with it
                os.killpg(pid, signal.SIGKILL)
            while child.results >= 0 and _take_results(child):  # what it wrote before it ended
                pass
            events = child.said.decode("utf-8", errors="replace").splitlines()
            _reply(replies, {"folder": child.folder, "exit": os.waitstatus_to_exitcode(status),
                             "timed_out": child.timed_out, "events": events})


def _reply(replies: BinaryIO, message: dict[str, Any]) -> None:
    replies.write(json.dumps(message).encode("utf-8") + b"\n")
    replies.flush()


def main(argv: list[str]) -> None:
    """The judge server on this process's stdin and stdout; ``--sealed`` seals every answer process."""
    if argv not in ([], ["--sealed"]):
        raise SystemExit(f"usage: python -m {__name__} [--sealed]")
    keep_memory_private()
    sandbox.die_with_parent()  # a killed grader leaves no judge behind
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever an import prints goes to stderr, never into the replies
    sys.meta_path.insert(0, InstructorRefused())
    preload()
    serve(socket.socket(fileno=0), replies, sealed=argv == ["--sealed"])


if __name__ == "__main__":
    main(sys.argv[1:])
