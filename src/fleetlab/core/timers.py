"""``every`` callbacks on a clock whose sleeps fire them: each thread's timers, earliest first.

The contract: a timer belongs to the thread that registered it and fires
only while that thread sleeps on its clock, at its due instants in order;
``Timers.every`` refuses an interval that is not positive with ConfigError.
The virtual clock and the scaled clock keep one ``Timers`` each.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from fleetlab.core.errors import ConfigError


@dataclass(order=True)
class Timer:
    """One ``every`` callback: due at ``when``, then every ``interval`` (ties fire in registration order)."""

    when: float
    order: int
    interval: float = field(compare=False)
    fn: Callable[[], None] = field(compare=False)


def require_positive(interval: float) -> None:
    """ConfigError unless ``interval`` (of an ``every``) is positive."""
    if interval <= 0:
        raise ConfigError(f"interval must be positive, got {interval}")


class Timers:
    """Each thread's ``every`` callbacks, earliest first, fired by that thread while it sleeps.

    ``every`` registers a timer for the block, ``next_due`` hands the
    sleeping thread its next one (and reschedules it), and ``drop`` forgets
    a finished thread's timers.
    """

    def __init__(self) -> None:
        self._by_thread: dict[int, list[Timer]] = {}
        self._order = itertools.count()

    @contextlib.contextmanager
    def every(self, interval: float, fn: Callable[[], None], *, now: float) -> Iterator[None]:
        """Register ``fn`` for this thread, first due at ``now + interval``; ConfigError for a bad interval."""
        require_positive(interval)
        timer = Timer(now + interval, next(self._order), interval, fn)
        timers = self._by_thread.setdefault(threading.get_ident(), [])
        heapq.heappush(timers, timer)
        try:
            yield
        finally:
            timers.remove(timer)
            heapq.heapify(timers)

    def next_due(self, *, before: float) -> Timer | None:
        """This thread's timer due first if it is due by ``before`` (a copy; the timer moves on), else None."""
        timers = self._by_thread.get(threading.get_ident())
        if not timers or timers[0].when > before:
            return None
        timer = heapq.heappop(timers)
        due = Timer(timer.when, timer.order, timer.interval, timer.fn)
        timer.when += timer.interval
        heapq.heappush(timers, timer)
        return due

    def drop(self, ident: int) -> None:
        """Forget the timers of thread ``ident`` (a finished actor: a timer it leaked dies with it)."""
        self._by_thread.pop(ident, None)
