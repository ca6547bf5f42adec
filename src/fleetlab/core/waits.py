"""How long a task's threads all spent waiting: the part of a check's time that is not the learner's.

On a real clock a graded case spends most of its time waiting: on the clock
(a visibility timeout running out) and on the backend (an API call, a long
poll). ``WaitMeter`` measures the wall time during which *every* thread of one
task waited at once, so the runner can measure a case's time limit on the
learner's code alone: one thread spinning in a loop while the others sleep
stops the meter, and the loop still times out.

Threads take part with ``join``/``leave`` (the case's thread, the actors of
its ``run_together``); the clock and the backend's clients mark their waits
with ``waiting`` (or ``enter``/``exit`` from two hooks). Waits of threads
that never joined (a timer thread, another kernel thread) are not counted.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator


class WaitMeter:
    """Wall time during which all of one task's threads waited on the clock or the backend."""

    def __init__(self, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._guard = threading.Lock()
        self._joined: set[int] = set()
        self._depth: dict[int, int] = {}  # joined threads inside a wait, and how deeply nested
        self._idle_since: float | None = None
        self._idle = 0.0

    def join(self) -> None:
        """The calling thread takes part in the task (it counts as busy until it waits)."""
        with self._guard:
            self._joined.add(threading.get_ident())
            self._update()

    def leave(self) -> None:
        """The calling thread is done with the task."""
        with self._guard:
            ident = threading.get_ident()
            self._joined.discard(ident)
            self._depth.pop(ident, None)
            self._update()

    def enter(self) -> None:
        """The calling thread starts waiting (a no-op for a thread that never joined)."""
        with self._guard:
            ident = threading.get_ident()
            if ident in self._joined:
                self._depth[ident] = self._depth.get(ident, 0) + 1
                self._update()

    def exit(self) -> None:
        """The calling thread's wait ended."""
        with self._guard:
            ident = threading.get_ident()
            depth = self._depth.get(ident, 0)
            if depth <= 1:
                self._depth.pop(ident, None)
            else:
                self._depth[ident] = depth - 1
            self._update()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """The calling thread waits for the block."""
        self.enter()
        try:
            yield
        finally:
            self.exit()

    def idle(self) -> float:
        """Seconds so far during which every joined thread was waiting."""
        with self._guard:
            current = self._monotonic() - self._idle_since if self._idle_since is not None else 0.0
            return self._idle + current

    @property
    def threads(self) -> tuple[int, ...]:
        """The idents of the threads taking part now."""
        with self._guard:
            return tuple(self._joined)

    @property
    def all_waiting(self) -> bool:
        """True while every joined thread waits (and at least one has joined)."""
        with self._guard:
            return self._idle_since is not None

    def _update(self) -> None:
        """Start or stop the idle stretch as the set of waiting threads changes (under the guard)."""
        idle_now = bool(self._joined) and self._joined <= self._depth.keys()
        if idle_now and self._idle_since is None:
            self._idle_since = self._monotonic()
        elif not idle_now and self._idle_since is not None:
            self._idle += self._monotonic() - self._idle_since
            self._idle_since = None
