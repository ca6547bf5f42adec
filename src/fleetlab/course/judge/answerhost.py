"""The learner's answers run in a process of their own, never in the judge's (``AnswerHost``).

A judge starts an ``AnswerHost`` first thing, while it runs one thread: that
forks a *zygote*, a copy of the judge before any check ran. Each answer
process is forked from the zygote on demand (a fork copies only the thread
that forks, so it is made from a process that runs one). An answer process
closes every file the judge had open; in a graded batch it seals itself
(``sandbox``: it sees the interpreter and the library, works in a private
``/tmp``, sees no other process), else it works in a folder of the host's
that goes when the host closes. It rebuilds the learner's answers from what the kernel handed in and serves
the judge's calls through a ``peer.Peer``. The judge gets each answer as
a value (plain data) or a proxy, and hands it to the check's harness as if
it were the learner's function: the harness, the hidden cases and the
verdict stay in the judge, which the learner's code cannot change.

When an answer process ends (the learner's code exited or killed it, or a
case ran past its deadline and it was stopped), the calls waiting on it
raise ``codec.RemoteFailed`` and the next answer comes from a fresh one.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from fleetlab.core.errors import InvalidInput
from fleetlab.course.grading import learner, registry, shortcuts
from fleetlab.course.grading.elsewhere import ENDED
from fleetlab.course.judge.codec import RemoteFailed
from fleetlab.course.judge.peer import Peer
from fleetlab.course.judge import sandbox


@dataclass(frozen=True)
class Loaded:
    """One answer as the judge gets it: ``kind`` is ``ok`` (``value`` is the answer), ``unfinished``,
    ``borrowed`` (``detail`` names what it took), ``misfit`` (it cannot take the exercise's parameters:
    ``detail`` names them) or ``unbuildable`` (``detail`` says why)."""

    kind: str
    value: Any = None
    detail: str = ""


class AnswerHost:
    """The judge's handle on the processes that run one notebook's answers. A context manager.

    Made in a process that runs one thread, the zygote is a fork of it (a
    judge's case, milliseconds); in one that runs more (a test session), a
    fresh interpreter (``python -m fleetlab.course.judge.answerhost``, a
    second or two). ``load(check_id, pickled)`` rebuilds one answer there;
    ``pid`` is the answer process's, or None before the first load; each check's answers get a process of
    their own.
    ``refuse_borrowed`` refuses an answer taken from the instructor's package
    (the catalogues' own tests turn it off: their answers live there).
    ``sealed`` seals each answer process in a sandbox (``judge.sandbox``).
    """

    def __init__(self, *, refuse_borrowed: bool = True, sealed: bool = False) -> None:
        self._control, zygote_end = socket.socketpair()
        self._scratch = None if sealed else tempfile.TemporaryDirectory(prefix="fleetlab-answers-")
        scratch = "" if self._scratch is None else self._scratch.name
        self._spawned: subprocess.Popen[bytes] | None = None
        if threading.active_count() == 1:
            self._zygote = os.fork()
            if self._zygote == 0:
                self._control.close()
                _run_zygote(zygote_end, scratch)
        else:
            path = os.pathsep.join(entry for entry in sys.path if entry)  # it imports what this process would
            self._spawned = subprocess.Popen([sys.executable, "-m", __name__, str(zygote_end.fileno()),
                                              scratch],
                                             pass_fds=[zygote_end.fileno()], stdin=subprocess.DEVNULL,
                                             env={**os.environ, "PYTHONPATH": path})
            self._zygote = self._spawned.pid
        zygote_end.close()
        self._refuse_borrowed = refuse_borrowed
        self._peer: Peer | None = None
        self.pid: int | None = None
        self._check = ""
        self._guard = threading.Lock()

    def __enter__(self) -> AnswerHost:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def load(self, check_id: str, pickled: str, implemented_by: tuple[str, ...] = ()) -> Loaded:
        """The answer to ``check_id`` rebuilt from ``pickled`` (cloudpickle, base64) in the answer process, which
        from then on notes the calls of the ``implemented_by`` functions (``shortcuts``)."""
        try:
            reply = self._started(check_id).request("answer", check_id, pickled, self._refuse_borrowed,
                                                    list(implemented_by))
        except RemoteFailed as failed:
            return Loaded("unbuildable", detail=ENDED.format(why=failed))
        if not (isinstance(reply, tuple) and len(reply) == 3 and reply[0] in ("ok", "unfinished", "borrowed",
                                                                                "misfit", "unbuildable")):
            return Loaded("unbuildable", detail="the process that rebuilt your answer answered out of turn")
        return Loaded(reply[0], reply[1] if reply[0] == "ok" else None, str(reply[2]))

    def shortcuts(self) -> list[str]:
        """The library functions implementing its exercise that the last loaded answer called (``shortcuts``);
        none when its process is gone."""
        peer = self._peer
        try:
            taken = peer.request("shortcuts") if peer is not None and not peer.broken else []
        except RemoteFailed:
            return []
        return [str(name) for name in taken] if isinstance(taken, list) else []

    def close(self) -> None:
        """Stop the answer process and the zygote. Idempotent."""
        self._stop_answers()
        with contextlib.suppress(OSError):
            self._control.close()
        if self._zygote:
            with contextlib.suppress(OSError):
                os.kill(self._zygote, signal.SIGKILL)
            if self._spawned is not None:
                self._spawned.wait()
            else:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self._zygote, 0)
            self._zygote = 0
        if self._scratch is not None:
            self._scratch.cleanup()

    def _started(self, check_id: str) -> Peer:
        """The answer process for ``check_id``'s answers: a fresh one for each check (it disarms that check's
        implementing functions for good, ``shortcuts.expect``), or after the last one ended."""
        with self._guard:
            if self._peer is None or self._peer.broken or check_id != self._check:
                self._check = check_id
                self._stop_answers()
                self._peer = self._spawn()
            return self._peer

    def _spawn(self) -> Peer:
        judge_end, answer_end = socket.socketpair()
        try:
            socket.send_fds(self._control, [b"+"], [answer_end.fileno()])
            reply = self._control.recv(8)
        finally:
            answer_end.close()
        if len(reply) != 8:
            judge_end.close()
            raise RemoteFailed("the zygote that forks answer processes is gone")
        self.pid = struct.unpack("!q", reply)[0]
        return Peer(judge_end, trusted=False, name="judge", on_broken=self._stop_answers, process=self.pid).start()

    def _stop_answers(self) -> None:
        pid, self.pid = self.pid, None
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        peer, self._peer = self._peer, None
        if peer is not None:
            peer.close()


# --- the zygote and the answer process ---------------------------------------------------------------------------


def _run_zygote(control: socket.socket, scratch: str) -> None:
    """Fork an answer process for each socket the judge sends; end when the judge closes ``control``."""
    code = 0
    try:
        os.closerange(3, control.fileno())  # the judge's files (its verdicts' pipe among them) stay with the judge
        os.closerange(control.fileno() + 1, _open_file_limit())
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # answer processes are reaped by the kernel
        while True:
            message, fds, _, _ = socket.recv_fds(control, 1, 1)
            if not message or not fds:
                break
            pid = os.fork()
            if pid == 0:
                control.close()
                _run_answers(fds[0], scratch)
            os.close(fds[0])
            control.sendall(struct.pack("!q", pid))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _run_answers(fd: int, scratch: str) -> None:
    """The answer process: only ``fd`` open, the judge's calls served until it hangs up. It works in a fresh
    folder under ``scratch``, or, when there is none, sealed in a sandbox, with a private ``/tmp``."""
    code = 0
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.closerange(3, fd)
        os.closerange(fd + 1, _open_file_limit())
        if scratch:
            folder = tempfile.mkdtemp(dir=scratch)
        else:
            sandbox.seal(sandbox.learner_view(python_path=os.environ.get("PYTHONPATH", "")))
            os.setsid()
            folder = "/tmp"
        os.chdir(folder)
        os.environ["HOME"] = folder
        done = threading.Event()
        shortcuts.watch_answer_process()  # before the first thread that serves a call starts
        Peer(socket.socket(fileno=fd), trusted=True, name="answer",
             operations={"answer": _rebuilt_answer, "shortcuts": shortcuts.taken}, on_broken=done.set).start()
        done.wait()
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _open_file_limit() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 4096


def _rebuilt_answer(check_id: str, pickled: str, refuse_borrowed: bool,
                    implemented_by: list[str]) -> tuple[str, Any, str]:
    """``(kind, answer, detail)`` for ``Loaded``: the answer unpickled and looked at here, where it runs."""
    shortcuts.expect(tuple(implemented_by))  # before unpickling: that runs the answer's own code too
    try:
        answer = pickle.loads(base64.b64decode(pickled.encode("ascii"), validate=True))
    except BaseException as exc:  # rebuilding runs the answer's own code: whatever it raises is the answer's
        return "unbuildable", None, (f"your answer could not be rebuilt outside your notebook "
                                     f"({type(exc).__name__}: {exc}); define everything it uses in the notebook itself")
    if learner.is_unfinished(answer):
        return "unfinished", None, ""
    if refuse_borrowed and (borrowed := learner.borrowed_answer(answer, check_id)):
        return "borrowed", None, borrowed
    if misfit := _misfit(answer, check_id):
        return "misfit", None, misfit
    return "ok", answer, ""


def _misfit(answer: Any, check_id: str) -> str:
    """``learner.misfit`` for the check ``check_id`` (answers are rebuilt here, where the learner's code may run)."""
    try:
        check = registry.get_check(check_id)
    except InvalidInput:  # no such check: the judge says so itself
        return ""
    return learner.misfit(answer, check.function, check.parameters)


if __name__ == "__main__":  # a zygote of its own, for an AnswerHost made where threads run
    import gc

    import cloudpickle  # noqa: F401  # every answer process forked from here starts with these imported

    from fleetlab.course.grading import registry
    from fleetlab.course.judge.proxies import warm_clients

    for lab in registry.shipped_labs():
        registry.checks_of(lab)
    warm_clients()
    gc.freeze()  # an answer process's collector never walks (so never copies) what the zygote imported
    _run_zygote(socket.socket(fileno=int(sys.argv[1])), sys.argv[2])
