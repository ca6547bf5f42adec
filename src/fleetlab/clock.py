"""The one clock every store and worker takes as a parameter.

``VirtualClock`` moves the whole process's idea of wall time with
time-machine, so a 900 s visibility timeout or a 10-minute step passes in
microseconds on an emulator that lives in this process. It ticks (never
frozen), so long polls and background threads keep working. ``RealClock`` is
plain wall time, for emulators in other processes and for real AWS.

Both support ``every(interval, fn)``: a periodic callback (a heartbeat) that
fires while the caller sleeps on this clock.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import time_machine

from .errors import ConfigError


class Clock(Protocol):
    """What fleetlab needs from a clock."""

    virtual: bool

    def now(self) -> float:
        """Seconds since the epoch, as the emulated services see them."""

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass, firing any ``every`` callbacks that fall due."""

    def every(self, interval: float, fn: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """Call ``fn`` every ``interval`` seconds of this clock while the block runs."""

    def close(self) -> None:
        """Release the clock (a virtual clock stops moving the process's time)."""


class RealClock:
    """Wall time. ``every`` runs its callback on a daemon thread."""

    virtual = False

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    @contextlib.contextmanager
    def every(self, interval: float, fn: Callable[[], None]) -> Iterator[None]:
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(interval):
                try:
                    fn()
                except Exception:  # a failed beat ends the heartbeat, like a dead thread
                    return

        thread = threading.Thread(target=beat, name="fleetlab-every", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def close(self) -> None:
        return None


_active_virtual: list[VirtualClock] = []


class VirtualClock:
    """Process-wide virtual wall time that ticks and can be jumped forward.

    Only one may be active per process, because time-machine patches the
    process's clock; opening a second raises ConfigError.
    """

    virtual = True

    def __init__(self, start: float | None = None) -> None:
        if _active_virtual:
            raise ConfigError(
                "a virtual clock is already running in this process; close the open backend "
                "(lab.close() or backend.close()) before opening another"
            )
        self._traveller = time_machine.travel(start if start is not None else time.time(), tick=True)
        self._coordinates = self._traveller.start()
        self._timers: list[tuple[float, int, float, Callable[[], None]]] = []
        self._order = itertools.count()
        self._lock = threading.RLock()
        _active_virtual.append(self)

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Jump ``seconds`` ahead, stopping at each due ``every`` callback in order."""
        target = self.now() + max(seconds, 0.0)
        while True:
            with self._lock:
                due = self._timers[0] if self._timers and self._timers[0][0] <= target else None
                if due is not None:
                    heapq.heappop(self._timers)
            if due is None:
                break
            when, order, interval, fn = due
            self._jump_to(when)
            with self._lock:
                heapq.heappush(self._timers, (when + interval, order, interval, fn))
            fn()
        self._jump_to(target)

    @contextlib.contextmanager
    def every(self, interval: float, fn: Callable[[], None]) -> Iterator[None]:
        if interval <= 0:
            raise ConfigError(f"interval must be positive, got {interval}")
        order = next(self._order)
        with self._lock:
            heapq.heappush(self._timers, (self.now() + interval, order, interval, fn))
        try:
            yield
        finally:
            with self._lock:
                self._timers = [t for t in self._timers if t[1] != order]
                heapq.heapify(self._timers)

    def close(self) -> None:
        if self in _active_virtual:
            self._traveller.stop()
            _active_virtual.remove(self)

    def _jump_to(self, when: float) -> None:
        ahead = when - self.now()
        if ahead > 0:
            self._coordinates.shift(ahead)
