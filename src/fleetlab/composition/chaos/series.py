"""A chaos day's time series: the fleet sampled after every round of receives, for the day's dashboard.

Each ``DaySample`` is read from what the day already records in process
(what it published, what finished, the autoscaler's count, how each
handling ended), so sampling makes no AWS call and leaves the call budgets
as they were.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fleetlab.services.sqs.worker import HandleOutcome, Outcome

BUSY_CLASS = "lease held elsewhere"
PARKED_CLASS = "parked"


@dataclass(frozen=True)
class DaySample:
    """The fleet ``at`` seconds into the day: steps ``waiting`` (published, not yet finished), the
    ``replicas`` the autoscaler gave each queue, the ``oldest_age`` in seconds of the oldest unfinished step,
    and the ``errors`` by class among the handlings since the previous sample."""

    at: float
    waiting: int
    replicas: int
    oldest_age: float
    errors: Mapping[str, int] = field(default_factory=dict)


def error_class(outcome: HandleOutcome) -> str | None:
    """The class of a handling that did not finish well (None for a step done).

    A crash is named by its crash point, a failure by its error code, a lease
    conflict and a parked step by what happened.
    """
    if outcome.status is Outcome.DONE:
        return None
    if outcome.status is Outcome.CRASHED:
        return f"crash {outcome.error}"
    if outcome.status is Outcome.BUSY:
        return BUSY_CLASS
    if outcome.status is Outcome.PARKED:
        return PARKED_CLASS
    return outcome.error.split(":", 1)[0] or "failed"


class SeriesRecorder:
    """Keeps the unfinished steps' publish times and appends one ``DaySample`` per call to ``sample``."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.samples: list[DaySample] = []
        self._open_since: dict[str, float] = {}

    def published(self, trace_ids: Iterable[str], at: float) -> None:
        """Steps put on the bus at ``at`` (a step already waiting keeps its first time)."""
        for trace in trace_ids:
            self._open_since.setdefault(trace, at)

    def sample(self, outcomes: Iterable[HandleOutcome], *, at: float, replicas: int) -> DaySample:
        """Close the steps ``outcomes`` finished, count their errors by class, and record the fleet at ``at``."""
        errors: Counter[str] = Counter()
        for outcome in outcomes:
            if outcome.status in (Outcome.DONE, Outcome.PARKED):
                self._open_since.pop(outcome.trace_id, None)
            kind = error_class(outcome)
            if kind is not None:
                errors[kind] += 1
        oldest = min(self._open_since.values(), default=at)
        taken = DaySample(at=at - self.start, waiting=len(self._open_since), replicas=replicas,
                          oldest_age=at - oldest, errors=dict(errors))
        self.samples.append(taken)
        return taken
