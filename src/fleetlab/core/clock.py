"""The one clock every store and worker takes as a parameter, and what ties its kinds together.

Each kind of clock lives in its own module:

* ``virtualclock.VirtualClock``: process-wide virtual time on in-process moto,
  that ticks and jumps, with actors;
* ``realclock.RealClock``: plain wall time (the fidelity probes measure
  services with it), and ``wait_until``, a poll on real time;
* ``timescale.ScaledClock``: a real clock whose lab time runs faster, the
  clock of LocalStack and real AWS;
* ``timers``: the ``every`` callbacks a sleeping thread fires;
* ``threads``: stopping a group's threads (``ActorCancelled``) and joining
  them in slices.

This module holds the contract they share (``Clock``), ``side_by_side``, and
``library_clock``, the library's own time (leases, idempotency windows, a
loop's grid): the virtual clock itself on moto, and on a real clock an
``OffsetClock`` that follows the backend's lab time and jumps alone, so a week
passes for a store in no real time while the services, and the backend's
clock, keep their own. Other modules import the clock's names from here.

Every clock offers:

* ``every(interval, fn)``: a periodic callback (a heartbeat) that fires while
  the caller sleeps on this clock; a ``with`` block (or ``stop()``) ends it, and
  one dropped while running warns ``TimerDropped`` (a ResourceWarning);
* ``run_together(*tasks)``: tasks that run concurrently (several workers on
  one queue); on the virtual clock they are *actors*, one running at a time.
  ``cancel()`` stops a running group;
* ``wait_until(predicate, ...)``: polls a predicate on *real* time, because an
  emulator's own timers (Step Functions) and background threads run in real
  time even under the virtual clock; it raises ``Timeout`` when it gives up;
* ``excursion()``: a block whose passing of time is taken back afterwards
  (the capability probe jumps days ahead and must leave the clock as it was).
* ``still()``: a block in which time moves only by ``sleep`` and ``skip``, not
  with real time (a seeded chaos day is then the same on a busy machine).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from fleetlab.core import realclock, threads, timers, virtualclock
from fleetlab.core.realclock import REAL_TOLERANCE, RealClock, wait_until
from fleetlab.core.threads import (
    CANCEL_GRACE,
    WAIT_SLICE,
    ActorCancelled,
    raise_in_thread,
    running,
    stop_threads,
)
from fleetlab.core.timers import Every, TimerDropped, Timers
from fleetlab.core.virtualclock import VirtualClock

__all__ = [
    "CANCEL_GRACE",
    "CLOCK_FILES",
    "REAL_TOLERANCE",
    "WAIT_SLICE",
    "ActorCancelled",
    "Clock",
    "Every",
    "OffsetClock",
    "RealClock",
    "TimerDropped",
    "Timers",
    "VirtualClock",
    "library_clock",
    "raise_in_thread",
    "running",
    "side_by_side",
    "stop_threads",
    "wait_until",
]

T = TypeVar("T")

CLOCK_FILES = tuple(module.__file__ for module in (sys.modules[__name__], realclock, virtualclock, timers, threads))
"""The clock's source files: a frame in one of them is a wait on the clock (the check runner looks for them)."""


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

    def every(self, interval: float, fn: Callable[[], None]) -> Every:
        """Call ``fn`` every ``interval`` seconds of this clock while the block runs (or until ``stop()``)."""

    def run_together(self, *tasks: Callable[[], Any], timeout: float = 300.0) -> list[Any]:
        """Run ``tasks`` concurrently; return their results in order, or raise the first error."""

    def cancel(self) -> int:
        """Stop the running ``run_together`` group, if any; how many of its threads outlived the stop."""

    def wait_until(self, predicate: Callable[[], T], *, timeout: float, what: str, interval: float = 0.05) -> T:
        """Poll ``predicate`` on real time until it returns something truthy, and return that."""

    def excursion(self) -> contextlib.AbstractContextManager[None]:
        """A block whose passing of time is taken back when it ends (where time can be)."""

    def still(self) -> contextlib.AbstractContextManager[None]:
        """A block in which time moves only by ``sleep`` and ``skip`` (where time can be held: the virtual clock)."""

    def close(self) -> None:
        """Release the clock (a virtual clock stops moving the process's time)."""


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
