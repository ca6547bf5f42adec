"""The one clock every store and worker takes as a parameter.

``VirtualClock`` moves the whole process's idea of wall time with
time-machine, so a 900 s visibility timeout or a 10-minute step passes in
microseconds on an emulator that lives in this process. It ticks (never
frozen), so long polls and background threads keep working. ``RealClock`` is
plain wall time, for emulators in other processes and for real AWS.

Both support ``every(interval, fn)``: a periodic callback (a heartbeat) that
fires while the caller sleeps on this clock, and ``run_together(*tasks)``:
tasks that run concurrently (several workers on one queue). On the virtual
clock they are *actors*: exactly one runs at a time, and time jumps to the
earliest wake-up once all of them sleep, so a two-worker race over a
15-minute visibility window is replayed exactly, every run, in milliseconds.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import time_machine

from .errors import ConfigError, FleetlabError


class Clock(Protocol):
    """What fleetlab needs from a clock."""

    virtual: bool

    def now(self) -> float:
        """Seconds since the epoch, as the emulated services see them."""

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass, firing any ``every`` callbacks that fall due."""

    def every(self, interval: float, fn: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """Call ``fn`` every ``interval`` seconds of this clock while the block runs."""

    def run_together(self, *tasks: Callable[[], Any], timeout: float = 300.0) -> list[Any]:
        """Run ``tasks`` concurrently; return their results in order, or raise the first error."""

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

    def run_together(self, *tasks: Callable[[], Any], timeout: float = 300.0) -> list[Any]:
        """Run ``tasks`` on real threads; wall time decides the interleaving."""
        results: list[Any] = [None] * len(tasks)
        errors: list[BaseException] = []

        def run(index: int, task: Callable[[], Any]) -> None:
            try:
                results[index] = task()
            except BaseException as exc:  # handed to the caller below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i, t), daemon=True) for i, t in enumerate(tasks)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0))
        if any(thread.is_alive() for thread in threads):
            raise FleetlabError(f"run_together: tasks still running after {timeout} s")
        if errors:
            raise errors[0]
        return results

    def close(self) -> None:
        return None


_active_virtual: list[VirtualClock] = []


@dataclass(order=True)
class _Timer:
    when: float
    order: int
    interval: float = field(compare=False)
    fn: Callable[[], None] = field(compare=False)


@dataclass
class _Actor:
    index: int
    wake: float = float("-inf")
    running: bool = False
    done: bool = False
    result: Any = None
    error: BaseException | None = None


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
        self._timers: dict[int, list[_Timer]] = {}
        self._order = itertools.count()
        self._turn = threading.Condition()
        self._actors: dict[int, _Actor] = {}
        self._group: list[_Actor] = []
        _active_virtual.append(self)

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass, firing this thread's due ``every`` callbacks in order.

        Outside ``run_together`` the clock simply jumps. Inside, the calling
        actor waits while the others run, and time jumps only when all wait.
        """
        target = self.now() + max(seconds, 0.0)
        while True:
            timer = self._next_timer(before=target)
            if timer is None:
                break
            self._pass_until(timer.when)
            timer.fn()
        self._pass_until(target)

    @contextlib.contextmanager
    def every(self, interval: float, fn: Callable[[], None]) -> Iterator[None]:
        if interval <= 0:
            raise ConfigError(f"interval must be positive, got {interval}")
        timer = _Timer(self.now() + interval, next(self._order), interval, fn)
        timers = self._timers.setdefault(threading.get_ident(), [])
        heapq.heappush(timers, timer)
        try:
            yield
        finally:
            timers.remove(timer)
            heapq.heapify(timers)

    def run_together(self, *tasks: Callable[[], Any], timeout: float = 300.0) -> list[Any]:
        """Run ``tasks`` as actors on virtual time; results in order, or the first error.

        One actor runs at a time, in index order at each instant; an actor
        gives way only when it sleeps on this clock or finishes. Raises
        FleetlabError if the group has not finished after ``timeout`` real
        seconds (an actor blocked on something other than this clock).
        """
        if self._group:
            raise ConfigError("run_together cannot be nested; run every actor in one call")
        self._group = [_Actor(index) for index in range(len(tasks))]
        threads = [
            threading.Thread(target=self._act, args=(actor, task), name=f"actor-{actor.index}", daemon=True)
            for actor, task in zip(self._group, tasks)
        ]
        try:
            with self._turn:
                for thread in threads:
                    thread.start()
                self._give_turn()
                finished = self._turn.wait_for(lambda: all(a.done for a in self._group), timeout)
            if not finished:
                raise FleetlabError(f"run_together: actors still running after {timeout} s of real time")
            for thread in threads:
                thread.join()
            failed = next((a for a in self._group if a.error is not None), None)
            if failed is not None:
                raise failed.error
            return [actor.result for actor in self._group]
        finally:
            self._group = []

    def close(self) -> None:
        if self in _active_virtual:
            self._traveller.stop()
            _active_virtual.remove(self)

    def _act(self, actor: _Actor, task: Callable[[], Any]) -> None:
        ident = threading.get_ident()
        with self._turn:
            self._actors[ident] = actor
            self._turn.wait_for(lambda: actor.running)
        try:
            actor.result = task()
        except BaseException as exc:  # kept for run_together to raise
            actor.error = exc
        finally:
            with self._turn:
                actor.done = True
                actor.running = False
                del self._actors[ident]
                self._give_turn()

    def _pass_until(self, when: float) -> None:
        actor = self._actors.get(threading.get_ident())
        if actor is None:
            self._jump_to(when)
            return
        with self._turn:
            actor.wake = when
            actor.running = False
            self._give_turn()
            self._turn.wait_for(lambda: actor.running)

    def _give_turn(self) -> None:
        """Wake the actor due first (ties: lowest index), jumping time to its wake-up."""
        waiting = [a for a in self._group if not a.done]
        if waiting:
            chosen = min(waiting, key=lambda a: (a.wake, a.index))
            self._jump_to(chosen.wake)
            chosen.running = True
        self._turn.notify_all()

    def _next_timer(self, *, before: float) -> _Timer | None:
        timers = self._timers.get(threading.get_ident())
        if not timers or timers[0].when > before:
            return None
        timer = heapq.heappop(timers)
        due = _Timer(timer.when, timer.order, timer.interval, timer.fn)
        timer.when += timer.interval
        heapq.heappush(timers, timer)
        return due

    def _jump_to(self, when: float) -> None:
        ahead = when - self.now()
        if ahead > 0:
            self._coordinates.shift(ahead)


class OffsetClock:
    """Wall time plus an offset that ``sleep`` moves forward at once: the library's own time on a real-clock backend.

    Only for what fleetlab itself judges against a clock, never for what a
    service enforces: an idempotency record's expiry and a lease are checked
    by the store (``IdempotencyStore``), so a week can pass for them in no
    time while LocalStack or AWS keep real time. It has no ``every`` or
    ``run_together``: workers and heartbeats run on the backend's clock.
    """

    virtual = True

    def __init__(self) -> None:
        self._offset = 0.0

    def now(self) -> float:
        return time.time() + self._offset

    def sleep(self, seconds: float) -> None:
        self._offset += max(seconds, 0.0)

    def close(self) -> None:
        return None


def library_clock(clock: Clock) -> Clock | OffsetClock:
    """The clock for the library's own time: ``clock`` itself when virtual, else a fresh OffsetClock."""
    return clock if clock.virtual else OffsetClock()
