"""What a learner's code left running: ``clock.every`` timers dropped while they still ran.

A timer the learner started and never stopped dies only when Python
collects its handle, which warns ``TimerDropped`` (``fleetlab.core.timers``).
``watching_timers(run)`` runs ``run()`` with those warnings recorded, from
every thread, and hands back what each said; every other warning is shown
as it would have been. Python's warning filters are process-wide, so a check
that uses it must run its cases in turn, never side by side.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from typing import TypeVar

from fleetlab.core.clock import TimerDropped
from fleetlab.course.grading.elsewhere import settle

T = TypeVar("T")


def watching_timers(run: Callable[[], T]) -> tuple[T, list[str]]:
    """``run()``'s result, and the message of every timer dropped while it ran (collected at its end too)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TimerDropped)
        result = run()
        gc.collect()  # a timer held in a reference cycle is dropped only when the collector runs
        settle()  # and one held by the learner's own process only when that process lets it go
    dropped = [str(warning.message) for warning in caught if issubclass(warning.category, TimerDropped)]
    for warning in caught:
        if not issubclass(warning.category, TimerDropped):
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno,
                                 warning.file, warning.line)
    return result, dropped
