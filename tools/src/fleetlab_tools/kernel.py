"""Run a notebook's cells in a fresh kernel, polling its channels in short slices.

nbclient's own wait sometimes misses a finished cell's reply and stalls for
the whole timeout (jupyter/nbclient#312). Here every wait is a series of
``POLL``-second polls of the iopub and shell channels with a liveness check
between them, so a finished cell is seen within one slice and a dead kernel
within two. nbclient still keeps the outputs (``process_message``: streams,
display updates, ``clear_output``, widget state), exactly as it would.

A cell that overruns is interrupted; a kernel that does not answer the
interrupt within ``grace`` seconds is killed with its process group.

What a notebook prints stays small in the grader's memory: a cell keeps at
most ``MAX_CELL_OUTPUT`` characters of outputs and a notebook
``MAX_NOTEBOOK_OUTPUT`` (the rest is left out, with a line in the cell
saying so, and ``CellRun.output_cut`` set); the client's sockets refuse a
message over ``MAX_OUTPUT_MESSAGE`` (an output) or ``MAX_REPLY_MESSAGE`` (a
reply) and queue few outputs, so a cell whose "idle" was dropped ends
``IDLE_WAIT`` after its reply. A cell's error text is cut, and only the
tail of the kernel's standard error is kept.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any

import zmq
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete
from nbformat import NotebookNode
from nbformat.v4 import new_output
from zmq.utils.monitor import recv_monitor_message

from fleetlab.core.errors import FleetlabError
from fleetlab.core.status import Status
from fleetlab_tools.warm_kernels import SPEC_NAME, kernel_name

POLL = 0.25
START_ATTEMPTS = 2
"""Kernels started for one notebook before giving up: on a busy machine one can die before it answers."""
_LAUNCH = threading.Lock()  # one launch at a time: jupyter_client's connection-file set-up is not thread-safe

MAX_CELL_OUTPUT = 1_000_000
"""Characters of outputs (streams, displayed data, tracebacks) one cell keeps; the rest is left out."""
MAX_NOTEBOOK_OUTPUT = 8_000_000
"""Characters of outputs all of a notebook's cells keep together."""
MAX_OUTPUT_MESSAGE = 4 * 2**20
"""Bytes of the largest output message the grader reads; a larger one is dropped unread (counted as cut)."""
MAX_REPLY_MESSAGE = 64 * 2**20
"""Bytes of the largest reply the grader reads (a cell's reply carries its error's text and traceback)."""
OUTPUT_QUEUE = 16
"""Output messages the grader's socket holds unread; the kernel drops what comes beyond."""
DEFAULT_QUEUE = 1000
"""zmq's own limit of messages held, for the other channels."""
MAX_ERROR = 2000
"""Characters of a cell's error text a ``CellRun`` keeps."""
STDERR_TAIL = 4096
"""Bytes of the kernel's standard error kept, its last ones (for why it did not start)."""
IDLE_WAIT = 2.0
"""Seconds after a cell's reply the grader waits for the kernel's "idle" (sent right after it, unless dropped)."""
OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error", "update_display_data")
CUT_NOTE = ("[fleetlab: output cut: this cell's outputs passed what the grader keeps ({cell:,} characters a cell, "
            "{notebook:,} a notebook); print less, or a summary]\n")


class CellStatus(Status):
    """How running one cell ended."""

    OK = "ok"
    ERROR = "error"
    """The cell raised."""
    TIMEOUT = "timeout"
    """The cell overran its time and was interrupted (or its kernel killed)."""
    DEAD = "dead"
    """The kernel died."""


class KernelStartFailed(FleetlabError):
    """The kernel for a notebook did not start or answer; no cell ran."""


@dataclass(frozen=True)
class CellRun:
    """How one cell ended (see CellStatus)."""

    index: int
    status: CellStatus
    seconds: float
    error: str = ""
    output_cut: bool = False
    """Outputs of the cell were left out (``MAX_CELL_OUTPUT``, ``MAX_NOTEBOOK_OUTPUT``, ``MAX_OUTPUT_MESSAGE``)."""


def _kernel_manager(env: Mapping[str, str], sockets: Path) -> KernelManager:
    """A manager whose kernel talks over Unix sockets in ``sockets``: no TCP port to pick, so none that another
    process can take between the pick and the kernel's bind (jupyter_client#487)."""
    ipc = {"transport": "ipc", "ip": str(sockets / "kernel")}
    if kernel_name(env) != SPEC_NAME:
        return KernelManager(kernel_name="python3", **ipc)
    folders = [str(Path(folder, "kernels")) for folder in env.get("JUPYTER_PATH", "").split(os.pathsep) if folder]
    return KernelManager(kernel_name=SPEC_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=folders), **ipc)


@dataclass
class _Waiting:
    msg_id: str
    reply: dict[str, Any] | None = None
    idle: bool = False
    replied: float | None = None  # when the reply came
    kept: int = 0  # characters of outputs the cell keeps
    cut: bool = False
    dropped: bool = False  # the output socket dropped a connection: a cut, unless the kernel died

    @property
    def finished(self) -> bool:
        return self.reply is not None and self.idle


class NotebookKernel:
    """A fresh kernel that runs the cells of one notebook, in place, one at a time.

    Use as a context manager; the kernel is killed on exit. ``env`` replaces
    the kernel's environment entirely; ``cwd`` is its working directory. With
    a warm template's variables in ``env`` (``WarmKernels.environment``), the
    kernel is forked from that template; otherwise it is a plain ``python3`` one.
    """

    def __init__(
        self,
        nb: NotebookNode,
        *,
        env: Mapping[str, str],
        cwd: Path,
        startup_timeout: float = 60,
        grace: float = 3,
    ) -> None:
        self.nb = nb
        self.grace = grace
        self._env = dict(env)
        self._cwd = cwd
        self._startup_timeout = startup_timeout
        self._sockets: Path | None = None
        self._manager: KernelManager | None = None
        self._outputs = NotebookClient(nb, record_timing=False)
        self._client: Any = None
        self._stderr = _Tail(STDERR_TAIL)
        self._monitor: Any = None
        self._kept = 0  # characters of outputs the notebook's cells keep

    def __enter__(self) -> NotebookKernel:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def start(self) -> NotebookKernel:
        """Start the kernel and wait until it answers; returns self.

        A kernel that dies before answering is started once more, afresh (nothing of the notebook ran in
        it). Raises KernelStartFailed, with the kernel's last words, when the second one fails too.
        """
        for _ in range(START_ATTEMPTS - 1):
            with contextlib.suppress(KernelStartFailed):
                return self._start_once()
        return self._start_once()

    def _start_once(self) -> NotebookKernel:
        self._sockets = Path(tempfile.mkdtemp(prefix="fleetlab-kernel-"))
        self._manager = _kernel_manager(self._env, self._sockets)
        self._stderr = _Tail(STDERR_TAIL)
        try:
            with _LAUNCH:
                try:
                    self._manager.start_kernel(env=self._env, cwd=str(self._cwd), stdout=subprocess.DEVNULL,
                                               stderr=self._stderr.start())
                finally:
                    self._stderr.release()
            self._client = self._manager.blocking_client()
            self._connect_bounded()
            self._outputs.kc = self._client  # nbclient's widget handling reads the client's session
            self._client.wait_for_ready(timeout=self._startup_timeout)
        except (RuntimeError, OSError) as exc:
            said = self._last_words()
            self.shutdown()
            hint = f": it said {said!r}" if said else "; check that ipykernel is installed"
            raise KernelStartFailed(f"the kernel did not start ({exc}){hint}") from exc
        return self

    def _connect_bounded(self) -> None:
        """Open the client's channels, the output channel on a socket under the output limits."""
        channel = self._client.iopub_channel
        channel.socket.close(linger=0)
        channel.socket = self._bounded_outputs()
        self._client.start_channels()

    def _bounded_outputs(self) -> Any:
        """A new output socket: messages up to ``MAX_OUTPUT_MESSAGE``, ``OUTPUT_QUEUE`` held, its dropped
        connections watched (zmq drops the connection of a larger message and never restores it)."""
        context = self._client.context
        context.setsockopt(zmq.MAXMSGSIZE, MAX_OUTPUT_MESSAGE)
        context.setsockopt(zmq.RCVHWM, OUTPUT_QUEUE)
        try:
            socket = self._client.connect_iopub()
        finally:
            context.setsockopt(zmq.MAXMSGSIZE, MAX_REPLY_MESSAGE)
            context.setsockopt(zmq.RCVHWM, DEFAULT_QUEUE)
        if self._monitor is not None:
            self._monitor.close(linger=0)
        self._monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        return socket

    def _last_words(self) -> str:
        """The last line the kernel wrote to its standard error ('' when it wrote nothing)."""
        lines = self._stderr.text().strip().splitlines()
        return lines[-1][:300] if lines else ""

    @property
    def alive(self) -> bool:
        return self._client is not None and self._manager.is_alive()

    def run_cell(self, index: int, timeout: float) -> CellRun:
        """Run cell ``index`` for at most ``timeout`` seconds; its outputs replace the old ones."""
        cell = self.nb.cells[index]
        cell.outputs = []
        cell.execution_count = None
        self._outputs.clear_before_next_output = False  # nbclient's per-cell state, as its own loop sets it
        started = time.monotonic()
        if not self.alive:
            return CellRun(index, CellStatus.DEAD, 0.0, "the kernel was already dead")
        waiting = _Waiting(self._client.execute(cell.source, allow_stdin=False, stop_on_error=False))
        status = self._wait(waiting, index, started + timeout)
        if waiting.dropped and status != CellStatus.DEAD:  # a dying kernel's connection drops too: no cut then
            self._cut(waiting, index)
        if status == CellStatus.TIMEOUT:
            self._manager.interrupt_kernel()
            if self._wait(waiting, index, time.monotonic() + self.grace) != CellStatus.OK:
                self._kill()
            return CellRun(index, CellStatus.TIMEOUT, time.monotonic() - started, f"timed out after {timeout:g} s",
                           waiting.cut)
        seconds = time.monotonic() - started
        if status == CellStatus.DEAD:
            return CellRun(index, CellStatus.DEAD, seconds, "the kernel died", waiting.cut)
        content = waiting.reply["content"] if waiting.reply else {}
        if content.get("status") == "ok":
            return CellRun(index, CellStatus.OK, seconds, output_cut=waiting.cut)
        error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
        if len(error) > MAX_ERROR:
            error = f"{error[:MAX_ERROR]} [... {len(error) - MAX_ERROR:,} characters cut]"
        return CellRun(index, CellStatus.ERROR, seconds, error, waiting.cut)

    def run_code_cells(self, timeout: float) -> list[CellRun]:
        """Run the code cells in order, each for at most ``timeout`` seconds; stop after the first that is not OK."""
        runs: list[CellRun] = []
        for index, cell in enumerate(self.nb.cells):
            if cell.cell_type != "code":
                continue
            runs.append(self.run_cell(index, timeout))
            if runs[-1].status != CellStatus.OK:
                break
        return runs

    def shutdown(self) -> None:
        """Stop the channels and kill the kernel with its process group. Idempotent."""
        if self._client is not None:
            self._client.stop_channels()
            self._client = None
        if self._manager is not None and self._manager.has_kernel:
            self._kill()
        self._stderr.release()
        if self._monitor is not None:
            self._monitor.close(linger=0)
            self._monitor = None
        if self._sockets is not None:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._sockets = None

    def _wait(self, waiting: _Waiting, index: int, deadline: float) -> CellStatus:
        while not waiting.finished:
            if time.monotonic() >= deadline:
                return CellStatus.TIMEOUT
            if waiting.idle:  # only the reply is missing
                heard = self._poll_shell(waiting, POLL)
            else:
                heard = self._poll_iopub(waiting, index) | self._poll_shell(waiting, 0)
            if self._dropped():
                waiting.dropped = True
                dropped, self._client.iopub_channel.socket = self._client.iopub_channel.socket, self._bounded_outputs()
                dropped.close(linger=0)
            if waiting.replied is not None and time.monotonic() - waiting.replied >= IDLE_WAIT:
                break  # "idle" went with messages the socket dropped: the reply says the cell is done
            if not heard and not self._manager.is_alive():
                return CellStatus.DEAD
        return CellStatus.OK

    def _poll_iopub(self, waiting: _Waiting, index: int) -> bool:
        """Handle iopub messages for at most one slice (a flood of output cannot hold it); True when any arrived."""
        seen, end = False, time.monotonic() + POLL
        while not waiting.idle and (left := end - time.monotonic()) > 0:
            try:
                message = self._client.get_iopub_msg(timeout=0 if seen else left)
            except Empty:
                break
            seen = True
            if message["parent_header"].get("msg_id") != waiting.msg_id:
                continue
            kept, cut = self._fit(message, waiting) if message["msg_type"] in OUTPUT_TYPES else (message, False)
            try:
                if kept is not None:
                    self._outputs.process_message(kept, self.nb.cells[index], index)
            except CellExecutionComplete:
                waiting.idle = True
            if cut:
                self._cut(waiting, index)
        return seen

    def _fit(self, message: dict[str, Any], waiting: _Waiting) -> tuple[dict[str, Any] | None, bool]:
        """What of an output message the cell keeps (the message, a stream's head that fits, or None) and whether
        any of it was left out."""
        size = sum(len(text) for text in _texts(message["content"]))
        room = min(MAX_CELL_OUTPUT - waiting.kept, MAX_NOTEBOOK_OUTPUT - self._kept)
        if size <= room:
            waiting.kept, self._kept = waiting.kept + size, self._kept + size
            return message, False
        if message["msg_type"] == "stream" and room > 0:
            message["content"]["text"] = str(message["content"].get("text", ""))[:room]
            waiting.kept, self._kept = waiting.kept + room, self._kept + room
            return message, True
        return None, True

    def _cut(self, waiting: _Waiting, index: int) -> None:
        """Say in the cell, once, that its outputs were cut."""
        if not waiting.cut:
            note = CUT_NOTE.format(cell=MAX_CELL_OUTPUT, notebook=MAX_NOTEBOOK_OUTPUT)
            self.nb.cells[index].outputs.append(new_output("stream", name="stderr", text=note))
        waiting.cut = True

    def _dropped(self) -> bool:
        """True when the output socket dropped a connection since last asked (a message over the limit went with
        it, unread)."""
        dropped = False
        while self._monitor is not None:
            try:
                recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except zmq.Again:
                break
            dropped = True
        return dropped

    def _poll_shell(self, waiting: _Waiting, timeout: float) -> bool:
        """Look for the cell's reply, waiting up to ``timeout``; True when any message arrived."""
        seen = False
        while waiting.reply is None:
            try:
                message = self._client.get_shell_msg(timeout=timeout)
            except Empty:
                return seen
            seen, timeout = True, 0
            if message["parent_header"].get("msg_id") == waiting.msg_id:
                waiting.reply, waiting.replied = message, time.monotonic()
        return seen

    def _kill(self) -> None:
        with contextlib.suppress(RuntimeError):  # already gone: nothing left to stop
            self._manager.shutdown_kernel(now=True)


def _texts(value: Any) -> Iterator[str]:
    """Every text inside an output message's content."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


class _Tail:
    """The last ``size`` bytes a process writes to the pipe it is given (``start``), read by a thread of its own."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._chunks: deque[bytes] = deque()
        self._held = 0
        self._write_end = -1
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def start(self) -> int:
        """The pipe's write end, for the process; reading starts now."""
        read_end, self._write_end = os.pipe()
        self._reader = threading.Thread(target=self._drain, args=(read_end,), name="fleetlab-kernel-stderr",
                                        daemon=True)
        self._reader.start()
        return self._write_end

    def release(self) -> None:
        """Close this side's write end (the process holds its own), so the reader sees the end once it exits."""
        if self._write_end >= 0:
            os.close(self._write_end)
            self._write_end = -1

    def text(self, wait: float = 1.0) -> str:
        """What was kept, once the writer has ended (waiting up to ``wait`` seconds for it)."""
        if self._reader is not None:
            self._reader.join(wait)
        with self._lock:
            return b"".join(self._chunks)[-self._size:].decode("utf-8", "replace")

    def _drain(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                with self._lock:
                    self._chunks.append(chunk[-self._size:])
                    self._held += len(self._chunks[-1])
                    while self._held - len(self._chunks[0]) >= self._size:
                        self._held -= len(self._chunks.popleft())
