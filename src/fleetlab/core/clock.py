"""The one clock every store and worker takes as a parameter.

``VirtualClock`` moves the whole process's idea of wall time with
time-machine, so a 900 s visibility timeout or a 10-minute step passes in
microseconds on an emulator that lives in this process. It ticks (never
frozen), so long polls and background threads keep working. ``RealClock`` is
plain wall time (the fidelity probes measure services with it);
``timescale.ScaledClock``, a real clock whose lab time runs faster, is the
clock of LocalStack and real AWS. ``library_clock`` gives the library's own
time (leases, idempotency windows, a loop's grid): the virtual clock itself on
moto, and on a real clock an ``OffsetClock`` that follows the backend's lab
time and jumps alone, so a week passes for a store in no real time while the
services, and the backend's clock, keep their own.

Every clock offers:

* ``every(interval, fn)``: a periodic callback (a heartbeat) that fires while
  the caller sleeps on this clock;
* ``run_together(*tasks)``: tasks that run concurrently (several workers on
  one queue). On the virtual clock they are *actors*: exactly one runs at a
  time, and time jumps to the earliest wake-up once all of them sleep, so a
  two-worker race over a 15-minute visibility window is replayed exactly,
  every run, in milliseconds. ``cancel()`` stops a running group;
* ``wait_until(predicate, ...)``: polls a predicate on *real* time, because an
  emulator's own timers (Step Functions) and background threads run in real
  time even under the virtual clock; it raises ``Timeout`` when it gives up;
* ``excursion()``: a block whose passing of time is taken back afterwards
  (the capability probe jumps days ahead and must leave the clock as it was).

``side_by_side(clock, *experiments)`` runs independent experiments: in turn
on a virtual clock, at once on a real one, where their waits overlap.

Real-time waits go through an injectable ``monotonic``/``pause`` pair, so a
test proves a bound without sleeping.
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import time_machine

from fleetlab.core.errors import ConfigError, Timeout
from fleetlab.core.waits import WaitMeter

T = TypeVar("T")

WAIT_SLICE = 0.05
"""Real seconds a waiting caller blocks at a time, so an asynchronous stop reaches it promptly."""

CANCEL_GRACE = 2.0
"""Real seconds ``cancel`` spends stopping a group's threads before it gives up on them."""


class ActorCancelled(BaseException):
    """Raised inside a task of a cancelled ``run_together`` group.

    A BaseException, like KeyboardInterrupt, so a learner's ``except
    Exception`` cannot swallow it and keep the task running.
    """


class Clock(Protocol):
    """What fleetlab needs from a clock."""

    virtual: bool
    scale: int
    """How many seconds of this clock pass per real second (1 unless the clock is scaled)."""
    tolerance: float
    """Seconds of this clock within which a callback can land after it was due (0 when virtual)."""

    def now(self) -> float:
        """Seconds since the epoch, as the emulated services see them."""

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` pass, firing any ``every`` callbacks that fall due."""

    def skip(self, seconds: float) -> None:
        """Let ``seconds`` pass for the library's own time only (a lease, a window): the services need not
        see it, so a scaled clock jumps at once. Fires due ``every`` callbacks like ``sleep``."""

    def every(self, interval: float, fn: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
        """Call ``fn`` every ``interval`` seconds of this clock while the block runs."""

    def run_together(self, *tasks: Callable[[], Any], timeout: float = 300.0) -> list[Any]:
        """Run ``tasks`` concurrently; return their results in order, or raise the first error."""

    def cancel(self) -> int:
        """Stop the running ``run_together`` group, if any; how many of its threads outlived the stop."""

    def wait_until(self, predicate: Callable[[], T], *, timeout: float, what: str, interval: float = 0.05) -> T:
        """Poll ``predicate`` on real time until it returns something truthy, and return that."""

    def excursion(self) -> contextlib.AbstractContextManager[None]:
        """A block whose passing of time is taken back when it ends (where time can be)."""

    def close(self) -> None:
        """Release the clock (a virtual clock stops moving the process's time)."""


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
    monotonic: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``predicate`` every ``interval`` real seconds until it returns something truthy.

    Returns that value. Raises Timeout naming ``what`` once ``timeout`` real
    seconds have passed without it (the awaited thing may still happen).
    """
    deadline = monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        left = deadline - monotonic()
        if left <= 0:
            raise Timeout(f"{what}: still not done after {timeout:g} s of real time; it may yet happen")
        pause(min(interval, left))


def side_by_side(clock: Clock, *experiments: Callable[[], T], timeout: float = 300.0) -> list[T]:
    """Run independent ``experiments`` and return their results in order.

    On a virtual clock they run one after another (they cost no real time,
    and each may race actors of its own); on a real clock they run at once
    with ``run_together``, so their waits on the services overlap. Each must
    make its own resources and take no jump (``skip``, a sleep long enough to
    jump). Raises the first error, or Timeout after ``timeout`` real seconds.
    """
    if clock.virtual:
        return [experiment() for experiment in experiments]
    return clock.run_together(*experiments, timeout=timeout)


def raise_in_thread(thread: threading.Thread, exception: type[BaseException]) -> None:
    """Ask ``thread`` to raise ``exception`` at its next Python instruction (CPython).

    A thread blocked inside a C call (a lock, a socket) raises it only when
    that call returns, which is why fleetlab's own waits block in short slices.
    """
    if running(thread):
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exception))


def running(thread: threading.Thread) -> bool:
    """True while ``thread`` runs Python code.

    Not ``thread.is_alive()`` alone: an exception raised into a thread while
    it waits in ``join`` can leave CPython marking the *joined* thread stopped
    while it still runs (``_wait_for_tstate_lock``); threading's table of
    running threads still lists it. Never its ident alone: an ended thread's
    ident is soon another thread's (a backend's own worker), which a stop
    must not reach.
    """
    return thread.is_alive() or any(other is thread for other in threading.enumerate())


def _wait_for(thread: threading.Thread, seconds: float) -> None:
    """Join ``thread`` for at most ``seconds``; a join that returns early on a running thread waits the slice out."""
    started = time.monotonic()
    thread.join(seconds)
    if running(thread):
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))


def stop_threads(threads: list[threading.Thread], *, grace: float, monotonic: Callable[[], float]) -> int:
    """Give ``threads`` a slice to end on their own, then raise ActorCancelled in them until they do.

    Returns how many are still alive after ``grace`` real seconds (stuck in a
    C call that never returns, or swallowing every stop).
    """
    deadline = monotonic() + grace
    alive = [thread for thread in threads if running(thread)]
    while alive and monotonic() < deadline:
        for thread in alive:
            _wait_for(thread, WAIT_SLICE / len(alive))
        alive = [thread for thread in alive if running(thread)]
        for thread in alive:
            raise_in_thread(thread, ActorCancelled)
    return len(alive)


def _join(threads: list[threading.Thread], deadline: float, monotonic: Callable[[], float], what: str) -> None:
    """Join ``threads`` in short slices (so the caller stays stoppable); Timeout at ``deadline``."""
    for thread in threads:
        while running(thread):
            left = deadline - monotonic()
            if left <= 0:
                raise Timeout(what)
            _wait_for(thread, min(WAIT_SLICE, left))


REAL_TOLERANCE = 0.1
"""Real seconds a thread on a busy machine can wake up after it was due."""


class RealClock:
    """Wall time. ``every`` runs its callback on a daemon thread; ``run_together`` on real threads."""

    virtual = False
    scale = 1
    tolerance = REAL_TOLERANCE

    def __init__(
        self, *, monotonic: Callable[[], float] = time.monotonic, pause: Callable[[float], None] = time.sleep
    ) -> None:
        self._monotonic = monotonic
        self._pause = pause
        self._running: list[threading.Thread] = []
        self._guard = threading.Lock()
        self.meter: WaitMeter | None = None

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of real time, in short slices so a stop can reach the sleeper."""
        end = self._monotonic() + max(seconds, 0.0)
        with self._waiting():
            while (left := end - self._monotonic()) > 0:
                self._pause(min(WAIT_SLICE, left))

    def skip(self, seconds: float) -> None:
        """Plain real time cannot jump: the same as ``sleep``."""
        self.sleep(seconds)

    @contextlib.contextmanager
    def every(self, interval: float, fn: Callable[[], None]) -> Iterator[None]:
        if interval <= 0:
            raise ConfigError(f"interval must be positive, got {interval}")
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
        """Run ``tasks`` on real threads; wall time decides the interleaving.

        Returns their results in order, or raises the first task's error.
        Raises Timeout after ``timeout`` real seconds; the tasks still
        running are then cancelled (ActorCancelled inside each).
        """
        results: list[Any] = [None] * len(tasks)
        errors: list[BaseException] = []

        def run(index: int, task: Callable[[], Any]) -> None:
            self._actor_started()
            try:
                results[index] = task()
            except BaseException as exc:  # handed to the caller below
                errors.append(exc)
            finally:
                self._actor_ended()

        threads = [
            threading.Thread(target=run, args=(i, t), name=f"actor-{i}", daemon=True) for i, t in enumerate(tasks)
        ]
        with self._guard:
            self._running += threads
        try:
            for thread in threads:
                thread.start()
            what = f"run_together: tasks still running after {timeout:g} s; they were cancelled"
            with self._waiting():
                _join(threads, self._monotonic() + timeout, self._monotonic, what)
        finally:
            stop_threads(threads, grace=CANCEL_GRACE, monotonic=self._monotonic)
            with self._guard:
                self._running = [t for t in self._running if t not in threads]
        if errors:
            raise errors[0]
        return results

    def cancel(self) -> int:
        """Raise ActorCancelled in every running ``run_together`` task; how many outlived the grace."""
        with self._guard:
            running = list(self._running)
        return stop_threads(running, grace=CANCEL_GRACE, monotonic=self._monotonic)

    def wait_until(self, predicate: Callable[[], T], *, timeout: float, what: str, interval: float = 0.05) -> T:
        """Poll ``predicate`` until truthy (returned) or ``timeout`` real seconds pass (Timeout)."""

        def pause(seconds: float) -> None:
            with self._waiting():
                self._pause(seconds)

        return wait_until(predicate, timeout=timeout, what=what, interval=interval, monotonic=self._monotonic,
                          pause=pause)

    @contextlib.contextmanager
    def excursion(self) -> Iterator[None]:
        """Real time cannot be taken back: the block simply runs."""
        yield

    def close(self) -> None:
        self.cancel()

    # With a meter attached (the check runner's), the actors take part and every wait is counted.

    def _actor_started(self) -> None:
        """Called in each ``run_together`` thread before its task."""
        if self.meter is not None:
            self.meter.join()

    def _actor_ended(self) -> None:
        """Called in each ``run_together`` thread after its task, however it ended."""
        if self.meter is not None:
            self.meter.leave()

    def _waiting(self) -> contextlib.AbstractContextManager[None]:
        """The calling thread waits (on real time, for other threads) for the block."""
        meter = self.meter
        return meter.waiting() if meter is not None else contextlib.nullcontext()


_active_virtual: list[VirtualClock] = []


@dataclass(order=True)
class _Timer:
    when: float
    order: int
    interval: float = field(compare=False)
    fn: Callable[[], None] = field(compare=False)


class Timers:
    """Each thread's ``every`` callbacks, earliest first, fired by that thread while it sleeps.

    A clock whose sleeps fire their caller's timers (the virtual and the
    scaled clock) keeps one of these: ``every`` registers a timer for the
    block, ``next_due`` hands the sleeping thread its next one (and
    reschedules it), and ``drop`` forgets a finished thread's timers.
    """

    def __init__(self) -> None:
        self._by_thread: dict[int, list[_Timer]] = {}
        self._order = itertools.count()

    @contextlib.contextmanager
    def every(self, interval: float, fn: Callable[[], None], *, now: float) -> Iterator[None]:
        """Register ``fn`` for this thread, first due at ``now + interval``; ConfigError for a bad interval."""
        if interval <= 0:
            raise ConfigError(f"interval must be positive, got {interval}")
        timer = _Timer(now + interval, next(self._order), interval, fn)
        timers = self._by_thread.setdefault(threading.get_ident(), [])
        heapq.heappush(timers, timer)
        try:
            yield
        finally:
            timers.remove(timer)
            heapq.heapify(timers)

    def next_due(self, *, before: float) -> _Timer | None:
        """This thread's timer due first if it is due by ``before`` (a copy; the timer moves on), else None."""
        timers = self._by_thread.get(threading.get_ident())
        if not timers or timers[0].when > before:
            return None
        timer = heapq.heappop(timers)
        due = _Timer(timer.when, timer.order, timer.interval, timer.fn)
        timer.when += timer.interval
        heapq.heappush(timers, timer)
        return due

    def drop(self, ident: int) -> None:
        """Forget the timers of thread ``ident`` (a finished actor: a timer it leaked dies with it)."""
        self._by_thread.pop(ident, None)


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

    def every(self, interval: float, fn: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
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
        _join(group.threads, self._monotonic() + CANCEL_GRACE, self._monotonic, "run_together: an actor did not end")

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


class OffsetClock:
    """The library's own time on a real-clock backend: the backend's lab time plus an offset ``sleep`` jumps.

    Only for what fleetlab itself judges against a clock, never for what a
    service enforces: an idempotency record's expiry, a lease, a loop's own
    grid are checked by the library, so a week can pass for them in no time
    while LocalStack or AWS keep real time. It follows ``base`` (the
    backend's clock: lab time, x60 on a scaled clock; wall time without one)
    and jumps alone: the backend's clock, and so every worker, heartbeat and
    service timestamp, never sees its jumps. It has no ``every`` or
    ``run_together``: those run on the backend's clock.
    """

    virtual = True

    def __init__(self, base: Clock | None = None) -> None:
        self._base_now = base.now if base is not None else time.time
        self.scale = base.scale if base is not None else 1
        self._offset = 0.0

    def now(self) -> float:
        return self._base_now() + self._offset

    def sleep(self, seconds: float) -> None:
        """Jump ``seconds`` at once."""
        self._offset += max(seconds, 0.0)

    def close(self) -> None:
        return None


def library_clock(clock: Clock) -> Clock | OffsetClock:
    """The clock for the library's own time: ``clock`` itself when virtual, else an OffsetClock over it."""
    return clock if clock.virtual else OffsetClock(clock)
