"""Real time: ``RealClock``, and ``wait_until``, the poll on real time every clock offers.

The contract: ``RealClock`` is plain wall time (the fidelity probes measure
services with it, and ``timescale.ScaledClock`` builds lab time on it). Its
waits block in slices of ``WAIT_SLICE`` real seconds so a stop reaches them;
``every`` runs its callback on a daemon thread; ``run_together`` runs real
threads, and cancels what is left of them when it ends. ``wait_until`` polls
a predicate on real time and raises Timeout when it gives up. Real-time waits
go through an injectable ``monotonic``/``pause`` pair, so a test proves a
bound without sleeping. With a ``meter`` attached (the check runner's), the
actors take part and every wait is counted.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from fleetlab.core.errors import Timeout
from fleetlab.core.threads import CANCEL_GRACE, WAIT_SLICE, join_in_slices, stop_threads
from fleetlab.core.timers import Every, require_positive
from fleetlab.core.waits import WaitMeter

T = TypeVar("T")

REAL_TOLERANCE = 0.1
"""Real seconds a thread on a busy machine can wake up after it was due."""


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

    def every(self, interval: float, fn: Callable[[], None]) -> Every:
        """Call ``fn`` every ``interval`` real seconds on a daemon thread while the block runs; ConfigError
        for an interval that is not positive or an ``fn`` that is not a function. A callback that raises
        ends the heartbeat, like a dead thread.

        The beats keep a fixed rate: each is due ``interval`` after the one before was due, however long that
        one took (a slow beat does not push the rest back), and one already overdue runs at once."""
        require_positive(interval, fn)

        def start() -> Callable[[], None]:
            stopped = threading.Event()

            def beat() -> None:
                due = self._monotonic() + interval
                while not stopped.wait(max(0.0, due - self._monotonic())):
                    try:
                        fn()
                    except Exception:  # a failed beat ends the heartbeat, like a dead thread
                        return
                    due = max(due + interval, self._monotonic())

            thread = threading.Thread(target=beat, name="fleetlab-every", daemon=True)
            thread.start()

            def stop() -> None:
                stopped.set()
                if thread is not threading.current_thread():  # a beat that stops its own timer cannot wait for itself
                    thread.join()
            return stop

        return Every(interval, fn, start)

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
                join_in_slices(threads, self._monotonic() + timeout, self._monotonic, what)
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

    @contextlib.contextmanager
    def still(self) -> Iterator[None]:
        """Real time cannot be held still: the block simply runs."""
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
