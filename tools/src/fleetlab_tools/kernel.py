"""Run a notebook's cells in a fresh kernel, polling its channels in short slices.

nbclient's own wait sometimes misses a finished cell's reply and stalls for
the whole timeout (jupyter/nbclient#312). Here every wait is a series of
``POLL``-second polls of the iopub and shell channels with a liveness check
between them, so a finished cell is seen within one slice and a dead kernel
within two. nbclient still keeps the outputs (``process_message``: streams,
display updates, ``clear_output``, widget state), exactly as it would.

A cell that overruns is interrupted; a kernel that does not answer the
interrupt within ``grace`` seconds is killed with its process group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import IO, Any

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete
from nbformat import NotebookNode

from fleetlab.core.errors import FleetlabError
from fleetlab.core.status import Status
from fleetlab_tools.warm_kernels import SPEC_NAME, kernel_name

POLL = 0.25
START_ATTEMPTS = 2
"""Kernels started for one notebook before giving up: on a busy machine one can die before it answers."""
_LAUNCH = threading.Lock()  # one launch at a time: jupyter_client's connection-file set-up is not thread-safe


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
        self._stderr: IO[bytes] | None = None

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
        self._stderr = tempfile.TemporaryFile()
        try:
            with _LAUNCH:
                self._manager.start_kernel(env=self._env, cwd=str(self._cwd), stdout=subprocess.DEVNULL,
                                           stderr=self._stderr)
            self._client = self._manager.blocking_client()
            self._client.start_channels()
            self._outputs.kc = self._client  # nbclient's widget handling reads the client's session
            self._client.wait_for_ready(timeout=self._startup_timeout)
        except (RuntimeError, OSError) as exc:
            said = self._last_words()
            self.shutdown()
            hint = f": it said {said!r}" if said else "; check that ipykernel is installed"
            raise KernelStartFailed(f"the kernel did not start ({exc}){hint}") from exc
        return self

    def _last_words(self) -> str:
        """The last line the kernel wrote to its standard error ('' when it wrote nothing)."""
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
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
        if status == CellStatus.TIMEOUT:
            self._manager.interrupt_kernel()
            if self._wait(waiting, index, time.monotonic() + self.grace) != CellStatus.OK:
                self._kill()
            return CellRun(index, CellStatus.TIMEOUT, time.monotonic() - started, f"timed out after {timeout:g} s")
        seconds = time.monotonic() - started
        if status == CellStatus.DEAD:
            return CellRun(index, CellStatus.DEAD, seconds, "the kernel died")
        content = waiting.reply["content"] if waiting.reply else {}
        if content.get("status") == "ok":
            return CellRun(index, CellStatus.OK, seconds)
        return CellRun(index, CellStatus.ERROR, seconds, f"{content.get('ename', 'Error')}: {content.get('evalue', '')}")

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
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
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
            try:
                self._outputs.process_message(message, self.nb.cells[index], index)
            except CellExecutionComplete:
                waiting.idle = True
        return seen

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
                waiting.reply = message
        return seen

    def _kill(self) -> None:
        with contextlib.suppress(RuntimeError):  # already gone: nothing left to stop
            self._manager.shutdown_kernel(now=True)
