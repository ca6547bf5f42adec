"""How long threads waited for a CPU: the part of a check's time that a busy machine took, not the learner.

On a loaded machine (a CI run, a room's graders on two cores) a thread that
could run spends much of its time on the run queue, waiting for a core.
Linux counts that time per thread (``/proc/self/task/<tid>/schedstat``, its
second field, in nanoseconds); ``RunQueueMeter`` adds it up for the threads
it watches, so the runner can take it off a case's time and judge the
learner's code by what it did, not by how busy the machine was. Where the
kernel does not count it (not Linux), the meter reads 0 and nothing changes.
"""

from __future__ import annotations

import threading


def runqueue_seconds(native_id: int) -> float | None:
    """Seconds thread ``native_id`` of this process has waited for a CPU so far; None where unknown."""
    try:
        with open(f"/proc/self/task/{native_id}/schedstat", encoding="ascii") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class RunQueueMeter:
    """Seconds the watched threads spent runnable but waiting for a CPU, since each was first watched."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._since: dict[int, float] = {}  # native id -> its run-queue seconds when watched
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

    def seconds(self) -> float:
        """Run-queue seconds of every thread watched so far, the live ones up to now."""
        with self._guard:
            watched = dict(self._since)
            total = self._done
        for native_id, start in watched.items():
            now = runqueue_seconds(native_id)
            total += max(0.0, now - start) if now is not None else 0.0
        return total
