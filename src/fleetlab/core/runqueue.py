"""How long threads waited for a CPU: the part of a check's time that a busy machine took, not the learner.

On a loaded machine (a CI run, a room's graders on two cores) a thread that
could run spends much of its time on the run queue, waiting for a core.
Linux counts that time per thread (``/proc/<pid>/task/<tid>/schedstat``,
its second field, in nanoseconds); ``RunQueueMeter`` adds it up for the
threads it watches, and for every thread of a process it watches (the one
that runs a learner's answer, for the judge), so the runner can take it off
a case's time and judge the learner's code by what it did, not by how busy
the machine was. Where the kernel does not count it (not Linux), the meter
reads 0 and nothing changes.
"""

from __future__ import annotations

import os
import threading


def runqueue_seconds(native_id: int, process: int | str = "self") -> float | None:
    """Seconds thread ``native_id`` of ``process`` (this one by default) has waited for a CPU so far; None where
    unknown."""
    try:
        with open(f"/proc/{process}/task/{native_id}/schedstat", encoding="ascii") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def process_runqueue(pid: int) -> dict[int, float]:
    """Each live thread of process ``pid`` and the seconds it has waited for a CPU so far (empty where unknown)."""
    try:
        threads = [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return {}
    waited = {thread: runqueue_seconds(thread, pid) for thread in threads}
    return {thread: seconds for thread, seconds in waited.items() if seconds is not None}


class RunQueueMeter:
    """Seconds the watched threads spent runnable but waiting for a CPU, since each was first watched."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._since: dict[int, float] = {}  # native id -> its run-queue seconds when watched
        self._processes: dict[int, dict[int, float]] = {}  # pid -> its threads' run-queue seconds when watched
        self._done = 0.0

    def watch(self) -> None:
        """Count the calling thread from now on (until it calls ``unwatch``)."""
        native_id = threading.get_native_id()
        start = runqueue_seconds(native_id)
        if start is not None:
            with self._guard:
                self._since[native_id] = start

    def unwatch(self) -> None:
        """Stop counting the calling thread, keeping what it waited so far."""
        native_id = threading.get_native_id()
        now = runqueue_seconds(native_id)
        with self._guard:
            start = self._since.pop(native_id, None)
            if start is not None and now is not None:
                self._done += max(0.0, now - start)

    def watch_process(self, pid: int) -> None:
        """Count every thread of process ``pid`` from now on (one started later, from its start), until
        ``unwatch_process``: another process that runs the code being timed."""
        with self._guard:
            self._processes[pid] = process_runqueue(pid)

    def unwatch_process(self, pid: int) -> None:
        """Stop counting process ``pid``, keeping what its live threads waited so far."""
        with self._guard:
            since = self._processes.pop(pid, None)
            if since is not None:
                self._done += _waited_since(pid, since)

    def seconds(self) -> float:
        """Run-queue seconds of every thread and process watched so far, the live ones up to now."""
        with self._guard:
            watched, processes = dict(self._since), dict(self._processes)
            total = self._done
        for native_id, start in watched.items():
            now = runqueue_seconds(native_id)
            total += max(0.0, now - start) if now is not None else 0.0
        return total + sum(_waited_since(pid, since) for pid, since in processes.items())


def _waited_since(pid: int, since: dict[int, float]) -> float:
    """What the live threads of ``pid`` waited for a CPU after ``since`` (a thread not in it: all its life)."""
    return sum(max(0.0, now - since.get(thread, 0.0)) for thread, now in process_runqueue(pid).items())
