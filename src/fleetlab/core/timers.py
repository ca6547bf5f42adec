"""``every`` callbacks on a clock whose sleeps fire them: each thread's timers, earliest first.

The contract: a timer belongs to the thread that registered it and fires
only while that thread sleeps on its clock, at its due instants in order;
``Timers.every`` refuses an interval that is not positive with ConfigError.
The virtual clock and the scaled clock keep one ``Timers`` each.

Every clock's ``every`` hands back an ``Every``: a context manager that runs
the timer while its block runs, or until ``stop()``. One dropped while its
timer still runs warns with ``TimerDropped`` (a ResourceWarning, as Python
warns of a file it closes for you) and stops the timer then.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleetlab.core.errors import ConfigError


class TimerDropped(ResourceWarning):
    """An ``every`` timer was dropped (garbage-collected) while it was still running."""


class Every:
    """A periodic callback's handle: it runs from ``__enter__`` until ``__exit__`` or ``stop()``.

    ``start`` begins the timer and returns what stops it. ``__enter__`` returns
    the handle and raises ConfigError when the timer was started before;
    ``__exit__`` stops it and lets any exception through. A handle dropped
    while its timer runs warns with TimerDropped, then stops the timer.
    """

    _stop: Callable[[], None] | None = None

    def __init__(self, interval: float, fn: Callable[[], None], start: Callable[[], Callable[[], None]]) -> None:
        self.interval = interval
        self.fn = fn
        self._start: Callable[[], Callable[[], None]] | None = start

    @property
    def running(self) -> bool:
        """Whether the timer has started and not been stopped."""
        return self._stop is not None

    def __enter__(self) -> Every:
        if self._start is None:
            raise ConfigError(f"this every({self.interval:g} s) timer was started already; "
                              "call clock.every again for another block")
        start, self._start = self._start, None
        self._stop = start()
        return self

    def __exit__(self, *error: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the timer (nothing happens if it is not running)."""
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    def __del__(self) -> None:
        if self._stop is None:
            return
        warnings.warn(f"a clock.every timer (every {self.interval:g} s, calling {_name(self.fn)}) was dropped while "
                      "still running; use it as a `with` block, or call its stop()", TimerDropped, source=self)
        self.stop()


def _name(fn: Callable[[], None]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


@dataclass(order=True)
class Timer:
    """One ``every`` callback: due at ``when``, then every ``interval`` (ties fire in registration order)."""

    when: float
    order: int
    interval: float = field(compare=False)
    fn: Callable[[], None] = field(compare=False)


def require_positive(interval: float, fn: Callable[[], None]) -> None:
    """ConfigError unless ``interval`` (of an ``every``) is positive and ``fn`` can be called."""
    if interval <= 0:
        raise ConfigError(f"interval must be positive, got {interval}")
    if not callable(fn):
        raise ConfigError(f"every({interval:g}, ...) takes the function to call each interval, and was handed "
                          f"{fn!r}: pass the function itself (beat, not beat(), which calls it once and hands "
                          "over what it returned)")


class Timers:
    """Each thread's ``every`` callbacks, earliest first, fired by that thread while it sleeps.

    ``every`` hands back a timer for a block, ``next_due`` hands the
    sleeping thread its next one (and reschedules it), and ``drop`` forgets
    a finished thread's timers.
    """

    def __init__(self) -> None:
        self._by_thread: dict[int, list[Timer]] = {}
        self._order = itertools.count()

    def every(self, interval: float, fn: Callable[[], None], *, now: float) -> Every:
        """``fn`` for the thread that starts the timer, first due at ``now + interval``; ConfigError for a bad
        interval or an ``fn`` that is not a function."""
        require_positive(interval, fn)

        def start() -> Callable[[], None]:
            timer = Timer(now + interval, next(self._order), interval, fn)
            timers = self._by_thread.setdefault(threading.get_ident(), [])
            heapq.heappush(timers, timer)

            def stop() -> None:
                timers.remove(timer)
                heapq.heapify(timers)
            return stop

        return Every(interval, fn, start)

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
