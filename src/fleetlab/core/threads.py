"""Stopping threads from outside, and joining them so the joiner stays stoppable.

The contract: ``stop_threads`` ends the threads it is given, and only those
(never a thread found by its ident alone), by raising ``ActorCancelled`` in
each through CPython's asynchronous exceptions until it ends or ``grace``
real seconds pass; it returns how many outlived the grace. ``join_in_slices``
joins threads in slices of ``WAIT_SLICE`` real seconds and raises Timeout at
its deadline. A thread blocked inside a C call (a lock, a socket) sees a stop
only when that call returns, which is why fleetlab's own waits block in
short slices.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable

from fleetlab.core.errors import Timeout

WAIT_SLICE = 0.05
"""Real seconds a waiting caller blocks at a time, so an asynchronous stop reaches it promptly."""

CANCEL_GRACE = 2.0
"""Real seconds ``cancel`` spends stopping a group's threads before it gives up on them."""


class ActorCancelled(BaseException):
    """Raised inside a task of a cancelled ``run_together`` group.

    A BaseException, like KeyboardInterrupt, so a learner's ``except
    Exception`` cannot swallow it and keep the task running.
    """


def raise_in_thread(thread: threading.Thread, exception: type[BaseException]) -> None:
    """Ask ``thread`` to raise ``exception`` at its next Python instruction (CPython); nothing if it has ended."""
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


def join_in_slices(threads: list[threading.Thread], deadline: float, monotonic: Callable[[], float], what: str) -> None:
    """Join ``threads`` in short slices (so the caller stays stoppable); Timeout saying ``what`` at ``deadline``."""
    for thread in threads:
        while running(thread):
            left = deadline - monotonic()
            if left <= 0:
                raise Timeout(what)
            _wait_for(thread, min(WAIT_SLICE, left))


def _wait_for(thread: threading.Thread, seconds: float) -> None:
    """Join ``thread`` for at most ``seconds``; a join that returns early on a running thread waits the slice out."""
    started = time.monotonic()
    thread.join(seconds)
    if running(thread):
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))
