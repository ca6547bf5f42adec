"""Virtual time: ``VirtualClock``, process-wide wall time that ticks and jumps, with actors.

The contract: ``VirtualClock`` moves the whole process's idea of wall time
with time-machine, so a 900 s visibility timeout or a 10-minute step passes
in microseconds on an emulator that lives in this process. It ticks (never
frozen), so long polls and background threads keep working. Only one may be
open per process (a second raises ConfigError). ``sleep`` fires the caller's
``every`` timers at their instants and jumps. ``run_together`` runs its tasks
as *actors*: exactly one runs at a time, and time jumps to the earliest
wake-up once all of them sleep, so a two-worker race over a 15-minute
visibility window is replayed exactly, every run, in milliseconds; however
the call ends, no actor of it is left running. ``wait_until`` polls on *real*
time, because an emulator's own timers run in real time even here;
``excursion`` takes back every jump and tick of its block; ``still`` stops
the ticking for its block.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import time_machine

from fleetlab.core.errors import ConfigError, Timeout
from fleetlab.core.realclock import wait_until
from fleetlab.core.threads import CANCEL_GRACE, WAIT_SLICE, ActorCancelled, join_in_slices, stop_threads
from fleetlab.core.timers import Every, Timers

T = TypeVar("T")

_active_virtual: list[VirtualClock] = []


@dataclass
class _Actor:
    index: int
    group: _Group = field(repr=False)
    wake: float = float("-inf")
    running: bool = False
    done: bool = False
    result: Any = None
    error: BaseException | None = None


@dataclass
class _Group:
    """One ``run_together`` call: its actors, their threads, and whether it was cancelled."""

    actors: list[_Actor] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    cancelled: bool = False

    @property
    def finished(self) -> bool:
        return all(actor.done for actor in self.actors)


class VirtualClock:
    """Process-wide virtual wall time that ticks and can be jumped forward.

    Only one may be active per process, because time-machine patches the
    process's clock; opening a second raises ConfigError.
    """

    virtual = True
    scale = 1
    tolerance = 0.0

    def __init__(
        self,
        start: float | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        if _active_virtual:
            raise ConfigError(
                "a virtual clock is already running in this process; close the open backend "
                "(lab.close() or backend.close()) before opening another"
            )
        self._monotonic = monotonic
        self._pause = pause
        self._traveller = time_machine.travel(start if start is not None else time.time(), tick=True)
        self._coordinates = self._traveller.start()
        self._timers = Timers()
        self._turn = threading.Condition()
        self._actors: dict[int, _Actor] = {}
        self._group: _Group | None = None
        self._still = 0
        _active_virtual.append(self)

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass, firing this thread's due ``every`` callbacks in order.

        Outside ``run_together`` the clock simply jumps. Inside, the calling
        actor waits while the others run, and time jumps only when all wait.
        An actor of a cancelled group raises ActorCancelled here.
        """
        target = self.now() + max(seconds, 0.0)
        while (timer := self._timers.next_due(before=target)) is not None:
            self._pass_until(timer.when)
            timer.fn()
        self._pass_until(target)

    def skip(self, seconds: float) -> None:
        """Virtual time always jumps: the same as ``sleep``."""
        self.sleep(seconds)

    def every(self, interval: float, fn: Callable[[], None]) -> Every:
        return self._timers.every(interval, fn, now=self.now())

    def run_together(self, *tasks: Callable[[], Any], timeout: float = 300.0) -> list[Any]:
        """Run ``tasks`` as actors on virtual time; results in order, or the first error.

        One actor runs at a time, in index order at each instant; an actor
        gives way only when it sleeps on this clock or finishes. Raises
        ConfigError when a group is already running, and Timeout if this
        group has not finished after ``timeout`` real seconds (an actor
        blocked on something other than this clock, or spinning). However
        the call ends, no actor of it is left running: unfinished actors are
        cancelled (ActorCancelled inside each).
        """
        group = _Group()
        with self._turn:
            if self._group is not None:
                raise ConfigError("run_together cannot be nested; run every actor in one call")
            self._group = group
        try:
            group.actors = [_Actor(index, group) for index in range(len(tasks))]
            group.threads = [
                threading.Thread(target=self._act, args=(actor, task), name=f"actor-{actor.index}", daemon=True)
                for actor, task in zip(group.actors, tasks)
            ]
            self._await(group, timeout)
            failed = next((a for a in group.actors if a.error is not None), None)
            if failed is not None:
                raise failed.error
            return [actor.result for actor in group.actors]
        finally:
            self._end(group)

    def cancel(self) -> int:
        """Stop the running ``run_together`` group: waiting actors wake and raise ActorCancelled,
        running ones get it at their next Python instruction. Returns how many threads outlived
        the grace; the clock is free for the next group either way."""
        with self._turn:
            group = self._group
        return 0 if group is None else self._end(group)

    def wait_until(self, predicate: Callable[[], T], *, timeout: float, what: str, interval: float = 0.05) -> T:
        """Poll ``predicate`` on real time (emulator timers run in real time) until truthy; Timeout after."""
        return wait_until(
            predicate, timeout=timeout, what=what, interval=interval, monotonic=self._monotonic, pause=self._pause
        )

    @contextlib.contextmanager
    def excursion(self) -> Iterator[None]:
        """Take back every jump and tick of the block: afterwards ``now()`` is where it was before."""
        start = self.now()
        try:
            yield
        finally:
            self._coordinates.shift(start - self.now())

    @contextlib.contextmanager
    def still(self) -> Iterator[None]:
        """Hold time still for the block: it moves only by ``sleep`` and ``skip``, never with real time.

        What the block does between two waits then happens at one instant, however
        long it takes on this machine, so a seeded run of it is the same on every
        machine. Time ticks again when the outermost ``still`` block ends.
        """
        self._still += 1
        if self._still == 1:
            self._coordinates.move_to(self.now(), tick=False)
        try:
            yield
        finally:
            self._still -= 1
            if self._still == 0:
                self._coordinates.move_to(self.now(), tick=True)

    def close(self) -> None:
        if self in _active_virtual:
            self.cancel()
            self._traveller.stop()
            _active_virtual.remove(self)

    def _await(self, group: _Group, timeout: float) -> None:
        deadline = self._monotonic() + timeout
        with self._turn:
            for thread in group.threads:
                thread.start()
            self._give_turn()
            while not group.finished:
                left = deadline - self._monotonic()
                if left <= 0:
                    raise Timeout(
                        f"run_together: actors still running after {timeout:g} s of real time; they were cancelled"
                    )
                self._turn.wait(min(WAIT_SLICE, left))
        join_in_slices(group.threads, self._monotonic() + CANCEL_GRACE, self._monotonic, "run_together: an actor did not end")

    def _end(self, group: _Group) -> int:
        """Cancel ``group`` if unfinished, free the clock of it; how many threads outlived the stop."""
        with self._turn:
            if not group.finished:
                group.cancelled = True
                self._turn.notify_all()
        survivors = stop_threads(group.threads, grace=CANCEL_GRACE, monotonic=self._monotonic)
        with self._turn:
            for ident in [ident for ident, actor in self._actors.items() if actor.group is group]:
                del self._actors[ident]
            if self._group is group:
                self._group = None
        return survivors

    def _act(self, actor: _Actor, task: Callable[[], Any]) -> None:
        ident = threading.get_ident()
        try:
            with self._turn:
                self._actors[ident] = actor
                self._turn.wait_for(lambda: actor.running or actor.group.cancelled)
                if actor.group.cancelled:
                    raise ActorCancelled(f"actor {actor.index} was cancelled before it ran")
            actor.result = task()
        except BaseException as exc:  # kept for run_together to raise
            actor.error = exc
        finally:
            with contextlib.suppress(ActorCancelled):  # a stop landing while it finishes changes nothing
                with self._turn:
                    actor.done = True
                    actor.running = False
                    self._actors.pop(ident, None)
                    self._timers.drop(ident)  # a timer the task leaked dies with its actor
                    self._give_turn()

    def _pass_until(self, when: float) -> None:
        actor = self._actors.get(threading.get_ident())
        if actor is None:
            self._jump_to(when)
            return
        with self._turn:
            self._raise_if_cancelled(actor)
            actor.wake = when
            actor.running = False
            self._give_turn()
            self._turn.wait_for(lambda: actor.running or actor.group.cancelled)
            self._raise_if_cancelled(actor)

    @staticmethod
    def _raise_if_cancelled(actor: _Actor) -> None:
        if actor.group.cancelled:
            raise ActorCancelled(f"actor {actor.index} was cancelled while it waited on the clock")

    def _give_turn(self) -> None:
        """Wake the actor due first (ties: lowest index), jumping time to its wake-up."""
        group = self._group
        waiting = [a for a in group.actors if not a.done] if group is not None and not group.cancelled else []
        if waiting and not any(a.running for a in waiting):
            chosen = min(waiting, key=lambda a: (a.wake, a.index))
            self._jump_to(chosen.wake)
            chosen.running = True
        self._turn.notify_all()

    def _jump_to(self, when: float) -> None:
        ahead = when - self.now()
        if ahead > 0:
            self._coordinates.shift(ahead)
